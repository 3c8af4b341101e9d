#include "replay/tensor_lists.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "replay/recipe.h"

namespace replay {
namespace {

bool is_empty_tensor_list(const Trace& trace, const OpArgument& arg) {
    const std::string_view type = trace.names.view(arg.type);
    return (type == "TensorList" || type.starts_with("GenericList")) && arg.dims.empty() &&
           arg.list_ranks.empty();
}

std::int64_t blocks_of(const GpuActivity& a) {
    return static_cast<std::int64_t>(std::max(a.grid[0], 1)) * std::max(a.grid[1], 1) *
           std::max(a.grid[2], 1);
}

// One tensor's share of multi_tensor_blocks.
std::int64_t tensor_blocks(const std::vector<std::int64_t>& dims) {
    std::int64_t n = 1;
    for (auto d : dims) n *= std::max<std::int64_t>(d, 0);
    return (n + kMultiTensorChunk - 1) / kMultiTensorChunk;
}

// The parameter lists a _foreach op's launches may have covered: all the parameters, then the
// list without each repeated shape (tied weights: one parameter used twice), dropped from the
// end one after the other.
class ParameterLists {
  public:
    explicit ParameterLists(const std::vector<ParameterShape>& params) : params_(params) {
        for (std::size_t i = params.size(); i-- > 1;)
            for (std::size_t j = 0; j < i; ++j)
                if (params[j].dims == params[i].dims && params[j].dtype == params[i].dtype) {
                    repeats_.push_back(i);
                    break;
                }
    }
    // The first of these lists whose blocks are `blocks`; `dropped`: how many repeats it lacks.
    std::optional<std::vector<ParameterShape>> find(std::int64_t blocks, std::size_t& dropped) const {
        dropped = 0;
        if (params_.empty()) return std::nullopt;
        std::int64_t total = multi_tensor_blocks(params_);
        while (total != blocks) {
            if (dropped == repeats_.size()) return std::nullopt;
            total -= tensor_blocks(params_[repeats_[dropped]].dims);
            ++dropped;
        }
        std::vector<ParameterShape> list = params_;
        for (std::size_t k = 0; k < dropped; ++k)  // descending: each erase leaves the next in place
            list.erase(list.begin() + static_cast<std::ptrdiff_t>(repeats_[k]));
        return list;
    }

  private:
    const std::vector<ParameterShape>& params_;
    std::vector<std::size_t> repeats_;  // indices of repeated shapes, last first
};

}  // namespace

std::int64_t multi_tensor_blocks(const std::vector<ParameterShape>& tensors) {
    std::int64_t blocks = 0;
    for (const auto& t : tensors) blocks += tensor_blocks(t.dims);
    return blocks;
}

MultiTensorLaunches multi_tensor_launches(const KernelGraph& graph) {
    const Trace& trace = graph.trace();
    MultiTensorLaunches out;
    std::vector<std::int8_t> multi_tensor(trace.names.size(), -1);  // per kernel name, once
    for (const GraphNode& node : graph.nodes()) {
        if (node.op == kNoIndex) continue;
        const GpuActivity& a = graph.activity(node);
        if (a.kind != ActivityKind::Kernel) continue;
        std::int8_t& named = multi_tensor[a.name];
        if (named < 0)
            named = trace.names.view(a.name).find("multi_tensor_apply") != std::string_view::npos;
        if (named == 0) continue;
        auto& [blocks, launches] = out.by_op[node.op];
        blocks += blocks_of(a);
        ++launches;
    }
    return out;
}

TensorListSummary recover_tensor_lists(const MultiTensorLaunches& launches, Trace& trace,
                                       const std::vector<ParameterShape>& parameters) {
    TensorListSummary summary;
    const auto& launched = launches.by_op;
    const ParameterLists lists(parameters);
    for (const auto& [op, figures] : launched) {
        CpuOp& cpu = trace.cpu_ops[op];
        if (!trace.names.view(cpu.name).starts_with("aten::_foreach_") || cpu.shapes == kNoIndex)
            continue;
        const auto& inputs = trace.op_shapes[cpu.shapes].inputs;
        if (std::none_of(inputs.begin(), inputs.end(),
                         [&](const OpArgument& a) { return is_empty_tensor_list(trace, a); }))
            continue;
        std::size_t dropped = 0;
        const auto list = lists.find(figures.first, dropped);
        if (!list) {
            ++summary.unrecovered;
            continue;
        }
        OpShapes shapes = trace.shapes_of(cpu);
        for (OpArgument& arg : shapes.inputs) {
            if (!is_empty_tensor_list(trace, arg)) continue;
            for (const auto& p : *list) {
                arg.dims.insert(arg.dims.end(), p.dims.begin(), p.dims.end());
                arg.list_ranks.push_back(static_cast<std::uint8_t>(p.dims.size()));
            }
            arg.element_type = list->front().dtype;
        }
        trace.set_shapes(cpu, std::move(shapes));
        std::string how = "tensor lists recovered (Kineto recorded []): the " +
                          std::to_string(list->size()) +
                          " parameters seen as weight-like inputs of the step";
        if (dropped > 0) how += ", " + std::to_string(dropped) + " repeated shape(s) taken as tied";
        how += "; their " + std::to_string(figures.first) +
               " multi_tensor_apply blocks match the recorded " +
               std::to_string(figures.second) + " launch(es)";
        summary.ops.push_back(op);
        summary.how.push_back(std::move(how));
    }
    return summary;
}

void explain_recovered_lists(const KernelGraph& graph, const TensorListSummary& lists,
                             NodeRecipes& recipes) {
    if (lists.ops.empty()) return;
    // Nodes of one entry share the decision's inputs (op, recovered shapes): explained once.
    std::vector<bool> explained(recipes.table().size(), false);
    std::unordered_map<std::uint32_t, const std::string*> how;
    for (std::size_t i = 0; i < lists.ops.size(); ++i) how[lists.ops[i]] = &lists.how[i];
    const auto& nodes = graph.nodes();
    for (std::size_t n = 0; n < nodes.size() && n < recipes.size(); ++n) {
        auto it = how.find(nodes[n].op);
        if (it == how.end()) continue;
        const std::uint32_t entry = recipes.entry(n);
        if (explained[entry]) continue;
        explained[entry] = true;
        const std::string& reason = recipes.table()[entry].reason;
        recipes.set_reason(entry, reason.empty() ? *it->second : *it->second + "; " + reason);
    }
}

}  // namespace replay
