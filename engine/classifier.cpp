#include "replay/classifier.h"

#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "classifier_facts.h"

namespace replay {

namespace {

using namespace classifier_detail;

// The facts of an activity itself and of how the graph linked it; the op chain's come apart.
Facts activity_facts(const KernelGraph& graph, const GraphNode& node) {
    const GpuActivity& a = graph.activity(node);
    Facts f;
    f.kind = a.kind;
    f.link = node.link;
    f.launched = node.launch != kNoIndex;
    f.activity_name = a.name;
    f.bytes = a.bytes;
    f.collective = a.collective;
    f.collective_dtype = a.collective_dtype;
    f.in_nelems = a.in_nelems;
    f.out_nelems = a.out_nelems;
    f.group_size = a.group_size;
    return f;
}

// Facts of nodes one after the other: what the chain walk asks about a name or a shapes entry is
// worked out once, and a node launched inside the same op as the one before reuses its chain.
class FactsOf {
  public:
    explicit FactsOf(const KernelGraph& graph)
        : graph_(graph),
          trace_(graph.trace()),
          name_kinds_(trace_.names.size(), 0),
          shaped_(trace_.op_shapes.size(), -1) {}

    Facts operator()(const GraphNode& node) {
        Facts f = activity_facts(graph_, node);
        if (node.op != last_op_) {
            last_op_ = node.op;
            chain_ = Chain{};
            graph_.visit_op_chain(node, [&](std::uint32_t i) { return add_to_chain(i); });
        }
        f.in_op = chain_.in_op;
        f.innermost_op = chain_.innermost_op;
        f.gemm_op = chain_.gemm_op;
        f.aten_op = chain_.aten_op;
        f.aten_children = chain_.aten_children;
        return f;
    }

  private:
    enum : std::uint8_t { kKnown = 1, kDispatcher = 2, kGemm = 4 };
    // The op chain's part of the facts.
    struct Chain {
        bool in_op = false;
        NameId innermost_op = 0;
        std::optional<OpRef> gemm_op, aten_op;
        std::vector<OpRef> aten_children;
    };
    std::uint8_t name_kind(NameId name) {
        std::uint8_t& k = name_kinds_[name];
        if (k == 0) {
            const std::string_view n = trace_.names.view(name);
            k = kKnown | (is_dispatcher_op(n) ? kDispatcher : 0) | (is_gemm_op(n) ? kGemm : 0);
        }
        return k;
    }
    bool shaped(std::uint32_t shapes) {
        if (shapes == kNoIndex) return false;
        if (shaped_[shapes] < 0) shaped_[shapes] = has_shapes(trace_, shapes) ? 1 : 0;
        return shaped_[shapes] == 1;
    }
    // Takes one more op of the chain, innermost first; false once nothing further can change.
    bool add_to_chain(std::uint32_t i) {
        const CpuOp& op = trace_.cpu_ops[i];
        Chain& c = chain_;
        if (!c.in_op) c.in_op = true, c.innermost_op = op.name;
        const std::uint8_t kind = name_kind(op.name);
        if (!c.aten_op && op.category == 0 && (kind & kDispatcher)) {
            c.aten_op = {op.name, op.shapes};
            c.aten_children = aten_children_facts(trace_, i);
        }
        if (!c.gemm_op && (kind & kGemm) && shaped(op.shapes)) c.gemm_op = {op.name, op.shapes};
        return !(c.aten_op && c.gemm_op);
    }

    const KernelGraph& graph_;
    const Trace& trace_;
    std::vector<std::uint8_t> name_kinds_;  // per NameId
    std::vector<std::int8_t> shaped_;       // per op_shapes entry: -1 not yet known
    std::uint32_t last_op_ = kNoIndex;      // the op whose chain chain_ holds
    Chain chain_;
};

// The facts of one node the straightforward way: the whole op chain as the graph lists it.
Facts facts_one_by_one(const KernelGraph& graph, const GraphNode& node) {
    const Trace& trace = graph.trace();
    Facts f = activity_facts(graph, node);
    const std::vector<std::uint32_t> chain = graph.op_chain(node);
    f.in_op = !chain.empty();
    if (f.in_op) f.innermost_op = trace.cpu_ops[chain.front()].name;
    for (std::uint32_t i : chain) {
        const CpuOp& op = trace.cpu_ops[i];
        const std::string_view name = trace.names.view(op.name);
        if (!f.aten_op && op.category == 0 && is_dispatcher_op(name)) {
            f.aten_op = OpRef{op.name, op.shapes};
            f.aten_children = aten_children_facts(trace, i);
        }
        if (!f.gemm_op && is_gemm_op(name) && has_shapes(trace, op.shapes))
            f.gemm_op = OpRef{op.name, op.shapes};
    }
    return f;
}

void check_one_by_one(const KernelGraph& graph, const NodeRecipes& recipes) {
    for (std::size_t n = 0; n < graph.nodes().size(); ++n) {
        const Recipe alone = decide(graph.trace(), facts_one_by_one(graph, graph.nodes()[n]));
        const Recipe shared = recipes.recipe(n);
        if (alone == shared) continue;
        throw std::logic_error(
            "classifier: node " + std::to_string(n) + " (" +
            std::string(graph.trace().names.view(graph.activity(graph.nodes()[n]).name)) +
            ") classified alone gives rule " + alone.rule + " \"" + alone.reason + "\" (key " +
            alone.instance_key() + "), its shared decision rule " + shared.rule + " \"" +
            shared.reason + "\" (key " + shared.instance_key() + ")");
    }
}

}  // namespace

NodeRecipes classify(const KernelGraph& graph, ClassifyCheck check) {
    const Trace& trace = graph.trace();
    NodeRecipes recipes;
    recipes.resize_nodes(graph.nodes().size());
    // Facts name op_shapes entries, which dataflow makes per op instance: a node decided alike
    // shares the first such node's decision and storage ids; NodeRecipes::set() keeps the
    // decision once for all instances whose recipes differ only in storage ids.
    std::unordered_map<Facts, std::uint32_t, FactsHash> decided;  // facts -> first node
    FactsOf facts_of(graph);
    Facts previous;
    std::uint32_t first = kNoIndex;
    const auto& nodes = graph.nodes();
    for (std::uint32_t n = 0; n < nodes.size(); ++n) {
        // Launch order is not activity order: ask for an activity a few nodes ahead.
        if (n + 8 < nodes.size()) __builtin_prefetch(&graph.activity(nodes[n + 8]));
        Facts facts = facts_of(nodes[n]);
        // Neighbours in launch order are often alike (the kernels of one op, a loop's steps).
        if (first == kNoIndex || !(facts == previous)) {
            auto [it, inserted] = decided.try_emplace(facts, n);
            if (inserted) recipes.set(n, decide(trace, facts));
            first = it->second;
            previous = std::move(facts);
        }
        if (first != n) recipes.share(n, first);
    }
    if (check == ClassifyCheck::EveryActivity) check_one_by_one(graph, recipes);
    return recipes;
}
double kernel_time_coverage(const KernelGraph& graph, const NodeRecipes& recipes) {
    double total = 0, covered = 0;
    for (std::size_t i = 0; i < graph.nodes().size(); ++i) {
        const GpuActivity& a = graph.activity(graph.nodes()[i]);
        if (a.kind != ActivityKind::Kernel) continue;
        total += static_cast<double>(a.dur);
        if (recipes.decision(i).replayable()) covered += static_cast<double>(a.dur);
    }
    return total > 0 ? covered / total : 0.0;
}

}  // namespace replay
