#include "replay/reuse.h"

#include <algorithm>

#include "replay/id_map.h"

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

// The storages ops read and write, with their sizes. What an argument's type name says of its
// element size is worked out once per name (the sweep meets the same few types over and over).
class Touches {
  public:
    explicit Touches(const Trace& trace) : trace_(trace), elements_(trace.names.size()) {}

    // Op `op`'s touches, into `out` (cleared first).
    void of(std::uint32_t op, std::vector<Touch>& out) {
        out.clear();
        const OpShapes& shapes = trace_.op_shapes[trace_.cpu_ops[op].shapes];
        const OpStorages& ids = trace_.storages;
        std::size_t element = 4;  // outputs carry no dtype: take the first typed input's
        bool element_known = false;
        for (std::size_t k = 0; k < shapes.inputs.size(); ++k) {
            const OpArgument& arg = shapes.inputs[k];
            const Element& type =
                element_of(arg.element_type != StringPool::kEmpty ? arg.element_type : arg.type);
            const std::size_t size = type.size;
            if (!element_known && type.known) element = size, element_known = true;
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
    }

  private:
    struct Element {
        std::uint8_t size = 4;  // bytes; 4 for an unknown dtype
        bool known = false;     // the name is a dtype's
        bool ready = false;
    };
    const Element& element_of(NameId type) {
        Element& e = elements_[type];
        if (!e.ready) {
            const DType dtype = dtype_from_kineto(trace_.names.view(type));
            e.known = dtype != DType::Unknown;
            e.size = static_cast<std::uint8_t>(e.known ? element_size(dtype) : 4);
            e.ready = true;
        }
        return e;
    }

    const Trace& trace_;
    std::vector<Element> elements_;  // per NameId
};

}  // namespace

void annotate_reuse(const KernelGraph& graph, NodeRecipes& recipes,
                    std::span<const std::uint32_t> shaped_ops) {
    // Without recorded storage ids (no Execution Trace, no dataflow) every distance stays unknown.
    bool any_storage = false;
    for (std::size_t n = 0; n < recipes.size() && !any_storage; ++n)
        for (std::int64_t s : recipes.storages(n)) any_storage = any_storage || s >= 0;
    if (!any_storage) return;
    const Trace& trace = graph.trace();
    const auto& nodes = graph.nodes();
    IdMap<std::int64_t> last_touch(1024);  // storage -> clock of last touch
    std::int64_t clock = 0;                // bytes touched so far
    std::vector<bool> swept(trace.cpu_ops.size(), false);  // ops already accounted
    Touches touches_of(trace);
    auto distance = [&](std::int64_t storage) {
        if (storage < 0) return kReuseUnknown;
        const std::int64_t* last = last_touch.find(storage);
        return last == nullptr ? kReuseFirstTouch : clock - *last;
    };
    auto apply = [&](const std::vector<Touch>& touches) {
        for (const Touch& t : touches) {
            clock = saturating_add(clock, t.bytes);
            last_touch.at(t.storage, 0) = clock;
        }
    };
    // Nodes sharing storages may sit at different distances: each node keeps its own.
    std::vector<std::int64_t> found;
    std::vector<Touch> pending;
    std::uint32_t pending_op = kNoIndex;
    // The classifier's walk names the op where a node's op differs from the node before's.
    const bool from_walk = shaped_ops.size() == nodes.size();
    std::uint32_t walked_op = kNoIndex, walked_recorded = kNoIndex;
    for (std::uint32_t n = 0; n < nodes.size() && n < recipes.size(); ++n) {
        // The innermost op with recorded shapes is the one whose arguments the recipe holds.
        std::uint32_t op = kNoIndex;
        if (from_walk) {
            if (nodes[n].op != walked_op) {
                walked_op = nodes[n].op;
                walked_recorded = walked_op == kNoIndex ? kNoIndex : shaped_ops[n];
            }
            op = walked_recorded;
        } else {
            graph.visit_op_chain(nodes[n], [&](std::uint32_t o) {
                if (trace.cpu_ops[o].shapes == kNoIndex) return true;
                op = o;
                return false;
            });
        }
        if (op == kNoIndex) continue;
        // The kernels of one op (launched one after the other) all see the memory state from
        // before the op: its touches count from the next op on.
        if (op != pending_op) {
            apply(pending);
            pending.clear();
            if (!swept[op]) {
                swept[op] = true;
                touches_of.of(op, pending);
            }
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
