#include "replay/tensor_lists.h"

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "replay/int_list.h"
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

// A list recovered for a _foreach op, and where it came from (for the recipe's reason).
struct RecoveredList {
    std::vector<ParameterShape> tensors;
    std::string source;
};

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
    // The first of these lists whose blocks are `blocks`.
    std::optional<RecoveredList> find(std::int64_t blocks) const {
        if (params_.empty()) return std::nullopt;
        std::int64_t total = multi_tensor_blocks(params_);
        std::size_t dropped = 0;
        while (total != blocks) {
            if (dropped == repeats_.size()) return std::nullopt;
            total -= tensor_blocks(params_[repeats_[dropped]].dims);
            ++dropped;
        }
        RecoveredList list{params_, "the " + std::to_string(params_.size() - dropped) +
                                        " parameters seen as weight-like inputs of the step"};
        for (std::size_t k = 0; k < dropped; ++k)  // descending: each erase leaves the next in place
            list.tensors.erase(list.tensors.begin() + static_cast<std::ptrdiff_t>(repeats_[k]));
        if (dropped > 0)
            list.source += ", " + std::to_string(dropped) + " repeated shape(s) taken as tied";
        return list;
    }

  private:
    const std::vector<ParameterShape>& params_;
    std::vector<std::size_t> repeats_;  // indices of repeated shapes, last first
};

// The gradients of each backward pass as the autograd engine's AccumulateGrad ops received them.
// Kineto records their one input, the gradient: the parameter's shape and dtype. A pass holds
// exactly the parameters the optimizer step after it updates: tied weights once, frozen ones not
// at all. The engine runs AccumulateGrad on threads of its own, so ops of every thread are taken
// in time order: each run of AccumulateGrad ops ends at the next _foreach op.
class GradientRuns {
  public:
    GradientRuns(const Trace& trace, const std::vector<std::uint32_t>& foreach_ops) {
        const NameId accumulate = trace.names.find("torch::autograd::AccumulateGrad");
        if (accumulate == kNoIndex) return;
        struct Event {
            Nanos ts;
            std::uint32_t op;
            bool gradient;
        };
        std::vector<Event> events;
        for (std::uint32_t op = 0; op < trace.cpu_ops.size(); ++op) {
            const CpuOp& cpu = trace.cpu_ops[op];
            if (cpu.name == accumulate && cpu.shapes != kNoIndex)
                events.push_back({cpu.ts, op, true});
        }
        if (events.empty()) return;
        for (std::uint32_t op : foreach_ops) events.push_back({trace.cpu_ops[op].ts, op, false});
        std::stable_sort(events.begin(), events.end(),
                         [](const Event& a, const Event& b) { return a.ts < b.ts; });
        bool in_run = false;
        for (const Event& e : events) {
            if (!e.gradient) {
                if (!runs_.empty()) run_of_[e.op] = runs_.size() - 1;
                in_run = false;
                continue;
            }
            const auto& inputs = trace.op_shapes[trace.cpu_ops[e.op].shapes].inputs;
            // A 0-dim gradient (a scalar parameter, CLIP's logit scale) has dims [] and a dtype.
            if (inputs.empty() || !inputs[0].list_ranks.empty() ||
                trace.names.view(inputs[0].type).empty())
                continue;
            if (!in_run) runs_.emplace_back();
            in_run = true;
            runs_.back().push_back({inputs[0].dims, inputs[0].type, kNoId});
        }
        // Backward visits the layers last first; the optimizer takes the parameters in the
        // order the model registered them, which is mostly the order of first use.
        for (auto& run : runs_) std::reverse(run.begin(), run.end());
    }

    // The gradient run that the op's optimizer step follows, or null.
    const std::vector<ParameterShape>* before(std::uint32_t op) const {
        const auto it = run_of_.find(op);
        return it == run_of_.end() ? nullptr : &runs_[it->second];
    }

  private:
    std::vector<std::vector<ParameterShape>> runs_;
    std::unordered_map<std::uint32_t, std::size_t> run_of_;
};

// The list of a run of gradients whose blocks are `blocks`: the whole run; one of k equal parts
// (k micro-batches' passes accumulated before one step); or the gradients of rank >= 2 or of
// rank < 2 alone (two parameter groups, weight decay on the matrices only, as Hugging Face's
// Trainer makes them).
std::optional<RecoveredList> from_gradients(const std::vector<ParameterShape>& run,
                                            std::int64_t blocks) {
    const std::string pass =
        std::to_string(run.size()) + " gradients the backward pass's AccumulateGrad ops received";
    const std::int64_t total = multi_tensor_blocks(run);
    if (total == blocks) return RecoveredList{run, "the " + pass};
    if (blocks > 0 && total > blocks && total % blocks == 0) {
        const auto k = static_cast<std::size_t>(total / blocks);
        if (run.size() % k == 0) {
            const std::size_t part = run.size() / k;
            bool equal = true;
            for (std::size_t i = part; i < run.size() && equal; ++i)
                equal = run[i].dims == run[i % part].dims && run[i].dtype == run[i % part].dtype;
            if (equal)
                return RecoveredList{{run.begin(), run.begin() + static_cast<std::ptrdiff_t>(part)},
                                     "one of " + std::to_string(k) + " equal parts of the " + pass +
                                         " (accumulated micro-batches)"};
        }
    }
    for (const bool matrices : {true, false}) {
        std::vector<ParameterShape> group;
        for (const auto& g : run)
            if ((g.dims.size() >= 2) == matrices) group.push_back(g);
        if (!group.empty() && group.size() < run.size() && multi_tensor_blocks(group) == blocks)
            return RecoveredList{
                std::move(group),
                std::string(matrices ? "those of rank >= 2" : "those of rank < 2") + " of the " +
                    pass + " (a parameter group of their own)"};
    }
    return std::nullopt;
}

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
    std::vector<std::uint32_t> pending;  // _foreach ops with kernels and an empty list
    for (const auto& [op, figures] : launches.by_op) {
        const CpuOp& cpu = trace.cpu_ops[op];
        if (!trace.names.view(cpu.name).starts_with("aten::_foreach_") || cpu.shapes == kNoIndex)
            continue;
        const auto& inputs = trace.op_shapes[cpu.shapes].inputs;
        if (std::any_of(inputs.begin(), inputs.end(),
                        [&](const OpArgument& a) { return is_empty_tensor_list(trace, a); }))
            pending.push_back(op);
    }
    if (pending.empty()) return summary;
    std::sort(pending.begin(), pending.end());  // the map's order is not the trace's
    const GradientRuns gradients(trace, pending);
    const ParameterLists lists(parameters);
    for (std::uint32_t op : pending) {
        const auto& [blocks, launch_count] = launches.by_op.at(op);
        std::optional<RecoveredList> list;
        if (const auto* run = gradients.before(op)) list = from_gradients(*run, blocks);
        if (!list) list = lists.find(blocks);
        if (!list) {
            ++summary.unrecovered;
            continue;
        }
        CpuOp& cpu = trace.cpu_ops[op];
        OpShapes shapes = trace.shapes_of(cpu);
        for (OpArgument& arg : shapes.inputs) {
            if (!is_empty_tensor_list(trace, arg)) continue;
            for (const auto& p : list->tensors) {
                arg.dims.insert(arg.dims.end(), p.dims.begin(), p.dims.end());
                arg.list_ranks.push_back(static_cast<std::uint8_t>(p.dims.size()));
            }
            arg.element_type = list->tensors.front().dtype;
        }
        trace.set_shapes(cpu, std::move(shapes));
        summary.ops.push_back(op);
        summary.how.push_back("tensor lists recovered (Kineto recorded []): " + list->source +
                              "; their " + std::to_string(blocks) +
                              " multi_tensor_apply blocks match the recorded " +
                              std::to_string(launch_count) + " launch(es)");
    }
    return summary;
}

namespace {

// One recovered list element.
struct Element {
    std::vector<std::int64_t> dims, strides;
};

void fill_list(OpArgument& arg, const std::vector<Element>& elements, NameId dtype) {
    arg.dims.clear();
    arg.strides.clear();
    arg.list_ranks.clear();
    for (const Element& e : elements) {
        arg.dims.insert(arg.dims.end(), e.dims.begin(), e.dims.end());
        arg.strides.insert(arg.strides.end(), e.strides.begin(), e.strides.end());
        arg.list_ranks.push_back(static_cast<std::uint8_t>(e.dims.size()));
    }
    arg.has_strides = true;
    arg.element_type = dtype;
}

// `e` unsqueezed at `dim` (negative counts from the end of the result), by PyTorch's rule: the
// new dim's stride is the size times the stride of the dim it goes in front of, 1 at the end.
std::optional<Element> unsqueezed(Element e, std::int64_t dim) {
    const auto rank = static_cast<std::int64_t>(e.dims.size());
    if (dim < 0) dim += rank + 1;
    if (dim < 0 || dim > rank || rank >= 255) return std::nullopt;
    if (dim < rank && (e.dims[dim] < 0 || e.strides[dim] < 0)) return std::nullopt;
    // Saturating: a hostile trace's sizes must not overflow.
    const std::int64_t stride =
        dim == rank ? 1 : saturating_product(std::array{e.dims[dim], e.strides[dim]});
    e.dims.insert(e.dims.begin() + dim, 1);
    e.strides.insert(e.strides.begin() + dim, stride);
    return e;
}

}  // namespace

TensorListSummary recover_stack_lists(Trace& trace) {
    TensorListSummary summary;
    const auto empty_list = [&](const CpuOp& op) {
        if (op.shapes == kNoIndex) return false;
        const auto& inputs = trace.op_shapes[op.shapes].inputs;
        return !inputs.empty() && is_empty_tensor_list(trace, inputs.front());
    };
    const NameId stack_name = trace.names.find("aten::stack");
    if (stack_name == kNoIndex) return summary;  // most traces: no pass over their ops
    const NameId unsqueeze_name = trace.names.find("aten::unsqueeze");
    const NameId cat_name = trace.names.find("aten::cat");
    std::unordered_set<std::uint32_t> stacks;
    for (std::uint32_t op = 0; op < trace.cpu_ops.size(); ++op)
        if (trace.cpu_ops[op].name == stack_name && empty_list(trace.cpu_ops[op]))
            stacks.insert(op);
    if (stacks.empty()) return summary;
    // torch.stack unsqueezes each tensor and concatenates them: its children, in order.
    std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> unsqueezes;
    std::unordered_map<std::uint32_t, std::uint32_t> cat_of;
    for (std::uint32_t op = 0; op < trace.cpu_ops.size(); ++op) {
        const CpuOp& cpu = trace.cpu_ops[op];
        if (cpu.parent == kNoIndex || !stacks.count(cpu.parent)) continue;
        if (cpu.name == unsqueeze_name) unsqueezes[cpu.parent].push_back(op);
        if (cpu.name == cat_name && empty_list(cpu)) cat_of[cpu.parent] = op;
    }
    std::vector<std::uint32_t> order(stacks.begin(), stacks.end());
    std::sort(order.begin(), order.end());
    for (const std::uint32_t stack : order) {
        auto& kids = unsqueezes[stack];
        std::sort(kids.begin(), kids.end(), [&](std::uint32_t a, std::uint32_t b) {
            return trace.cpu_ops[a].ts < trace.cpu_ops[b].ts;
        });
        // The stack's own dim, for unsqueezes recorded without theirs (traces before 2.x).
        const CpuOp& stack_op = trace.cpu_ops[stack];
        const auto& stack_inputs = trace.op_shapes[stack_op.shapes].inputs;
        const std::optional<std::int64_t> stack_dim =
            stack_inputs.size() > 1 ? parse_int(trace.names.view(stack_inputs[1].concrete))
                                    : std::nullopt;
        std::vector<Element> inputs, outputs;
        NameId dtype = StringPool::kEmpty;
        // A list's recipe holds every element: a bound keeps a hostile trace's small.
        bool complete = !kids.empty() && kids.size() < 65536, unsqueezed_all = true;
        for (const std::uint32_t kid : kids) {
            const CpuOp& cpu = trace.cpu_ops[kid];
            const OpShapes* shapes =
                cpu.shapes == kNoIndex ? nullptr : &trace.op_shapes[cpu.shapes];
            if (shapes == nullptr || shapes->inputs.empty() ||
                !shapes->inputs[0].list_ranks.empty() || shapes->inputs[0].dims.size() >= 255 ||
                (dtype != StringPool::kEmpty && shapes->inputs[0].type != dtype)) {
                complete = false;
                break;
            }
            const OpArgument& in = shapes->inputs[0];
            dtype = in.type;
            // Without recorded strides the engine takes every tensor as contiguous.
            Element e{in.dims, in.has_strides && in.strides.size() == in.dims.size()
                                   ? in.strides
                                   : contiguous_strides(in.dims)};
            std::optional<std::int64_t> dim =
                shapes->inputs.size() > 1 ? parse_int(trace.names.view(shapes->inputs[1].concrete))
                                          : std::nullopt;
            if (!dim) dim = stack_dim;
            const std::optional<Element> out = dim ? unsqueezed(e, *dim) : std::nullopt;
            if (out) outputs.push_back(*out);
            unsqueezed_all = unsqueezed_all && out.has_value();
            inputs.push_back(std::move(e));
        }
        if (!complete) {
            ++summary.unrecovered;
            continue;
        }
        const std::string how = "tensor list recovered (Kineto recorded [] for a list of " +
                                std::to_string(kids.size()) + "): ";
        CpuOp& cpu = trace.cpu_ops[stack];
        OpShapes shapes = trace.shapes_of(cpu);
        fill_list(shapes.inputs.front(), inputs, dtype);
        trace.set_shapes(cpu, std::move(shapes));
        summary.ops.push_back(stack);
        summary.how.push_back(how + "the inputs of its " + std::to_string(kids.size()) +
                              " aten::unsqueeze ops");
        auto cat = cat_of.find(stack);
        if (cat == cat_of.end()) continue;
        if (!unsqueezed_all) {  // the stack's list, but not where each element went
            ++summary.unrecovered;
            continue;
        }
        CpuOp& child = trace.cpu_ops[cat->second];
        OpShapes cat_shapes = trace.shapes_of(child);
        fill_list(cat_shapes.inputs.front(), outputs, dtype);
        trace.set_shapes(child, std::move(cat_shapes));
        summary.ops.push_back(cat->second);
        summary.how.push_back(how + "the outputs of the " + std::to_string(kids.size()) +
                              " aten::unsqueeze ops of its aten::stack");
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
