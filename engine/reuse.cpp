#include "replay/reuse.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace replay {
namespace {

std::int64_t span_bytes(std::span<const std::int64_t> dims, std::span<const std::int64_t> strides,
                        std::size_t element) {
    return view_extent(dims, strides) * static_cast<std::int64_t>(element);
}

struct Touch {
    std::int64_t storage = kNoId;
    std::int64_t bytes = 0;
};

// The storages op `op` reads and writes, with their sizes.
std::vector<Touch> touches_of(const Trace& trace, std::uint32_t op) {
    const OpShapes& shapes = trace.op_shapes[trace.cpu_ops[op].shapes];
    const OpStorages& ids = trace.storages;
    std::vector<Touch> out;
    std::size_t element = 4;  // outputs carry no dtype: take the first typed input's
    bool element_known = false;
    for (std::size_t k = 0; k < shapes.inputs.size(); ++k) {
        const OpArgument& arg = shapes.inputs[k];
        const DType type = dtype_from_kineto(
            trace.names.view(arg.element_type != StringPool::kEmpty ? arg.element_type : arg.type));
        const std::size_t size = type == DType::Unknown ? 4 : element_size(type);
        if (!element_known && type != DType::Unknown) element = size, element_known = true;
        const std::int64_t storage = ids.input(op, k);
        const OpStorages::Ids list = ids.list(op, k);
        if (storage != kNoId) {
            out.push_back({storage, span_bytes(arg.dims, arg.strides, size)});
        } else if (!list.empty()) {
            // A TensorList: dims flattened, one rank per element.
            std::size_t at = 0;
            for (std::size_t i = 0; i < list.size() && i < arg.list_ranks.size(); ++i) {
                const std::size_t rank = arg.list_ranks[i];
                if (at + rank > arg.dims.size()) break;
                const auto dims = std::span<const std::int64_t>(arg.dims).subspan(at, rank);
                at += rank;
                if (list[i] != kNoId) out.push_back({list[i], span_bytes(dims, {}, size)});
            }
        }
    }
    for (std::size_t i = 0; i < ids.outputs(op); ++i) {
        const OpStorages::Output output = ids.output(op, i);
        if (output.storage == kNoId) continue;
        out.push_back({output.storage, span_bytes(output.dims, {}, element)});
    }
    return out;
}

}  // namespace

void annotate_reuse(const KernelGraph& graph, NodeRecipes& recipes) {
    // Without recorded storage ids (no Execution Trace, no dataflow) every distance stays unknown.
    bool any_storage = false;
    for (std::size_t n = 0; n < recipes.size() && !any_storage; ++n)
        for (std::int64_t s : recipes.storages(n)) any_storage = any_storage || s >= 0;
    if (!any_storage) return;
    const Trace& trace = graph.trace();
    const auto& nodes = graph.nodes();
    std::unordered_map<std::int64_t, std::int64_t> last_touch;  // storage -> clock of last touch
    std::int64_t clock = 0;                                     // bytes touched so far
    std::unordered_set<std::uint32_t> swept;                    // ops already accounted
    auto distance = [&](std::int64_t storage) {
        if (storage < 0) return kReuseUnknown;
        auto it = last_touch.find(storage);
        return it == last_touch.end() ? kReuseFirstTouch : clock - it->second;
    };
    auto apply = [&](const std::vector<Touch>& touches) {
        for (const Touch& t : touches) {
            clock += t.bytes;
            last_touch[t.storage] = clock;
        }
    };
    // Nodes sharing storages may sit at different distances: each node keeps its own.
    std::vector<std::int64_t> found;
    std::vector<Touch> pending;
    std::uint32_t pending_op = kNoIndex;
    for (std::uint32_t n = 0; n < nodes.size() && n < recipes.size(); ++n) {
        // The innermost op with recorded shapes is the one whose arguments the recipe holds.
        std::uint32_t op = kNoIndex;
        graph.visit_op_chain(nodes[n], [&](std::uint32_t o) {
            if (trace.cpu_ops[o].shapes == kNoIndex) return true;
            op = o;
            return false;
        });
        if (op == kNoIndex) continue;
        // The kernels of one op (launched one after the other) all see the memory state from
        // before the op: its touches count from the next op on.
        if (op != pending_op) {
            apply(pending);
            pending.clear();
            if (swept.insert(op).second)
                pending = touches_of(trace, op);
            pending_op = op;
        }
        found.clear();
        bool known = false;
        for (std::int64_t storage : recipes.storages(n)) {
            found.push_back(distance(storage));
            known = known || found.back() != kReuseUnknown;
        }
        if (known) recipes.set_reuse(n, found);
    }
}

}  // namespace replay
