#include "replay/classifier.h"

#include <algorithm>
#include <atomic>
#include <future>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "classifier_facts.h"
#include "op_chain.h"

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

// The ops of a node's chain the classifier's facts name: the nearest dispatcher op and the
// nearest GEMM op with shapes within the KernelGraph::kMaxOpChain ops of the chain, and the
// nearest op with a shapes entry (for annotate_reuse) (kNoIndex: none). With the names and shapes
// entries of the chain's first op and of `aten` and `gemm`, read while walking: the decisions
// need not touch the ops again (a cache miss each on a large trace).
struct ChainEnds {
    std::uint32_t aten = kNoIndex, gemm = kNoIndex, recorded = kNoIndex;
    NameId innermost_name = 0, aten_name = 0, gemm_name = 0;
    std::uint32_t aten_shapes = kNoIndex, gemm_shapes = kNoIndex;
};

// The op chain walk of nodes one after the other: the chain is kept from one node's op to the
// next (OpChain), with the nearest dispatcher and GEMM op at each level, so that a node's chain
// costs only its ops that the op before did not share; what it asks about a name or a shapes
// entry is worked out once. Its loads are the classifier's cache misses (each op's first touch):
// it runs ahead of the rest on a thread of its own (classify()).
class ChainWalker {
  public:
    explicit ChainWalker(const Trace& trace)
        : trace_(trace),
          name_kinds_(trace.names.size(), 0),
          shaped_(trace.op_shapes.size(), -1),
          chain_ops_(trace.cpu_ops) {}

    ChainEnds operator()(std::uint32_t op) {
        chain_ops_.enter(
            op,
            [&] {
                nearest_.pop_back();
                refs_.pop_back();
            },
            [&](std::uint32_t q) {
                const CpuOp& cpu = trace_.cpu_ops[q];
                const std::uint8_t kind = name_kind(cpu.name);
                const std::uint32_t level = static_cast<std::uint32_t>(nearest_.size());
                Nearest n = nearest_.empty() ? Nearest{} : nearest_.back();
                if (cpu.category == 0 && (kind & kDispatcher)) n.aten = level;
                if ((kind & kGemm) && shaped(cpu.shapes)) n.gemm = level;
                if (cpu.shapes != kNoIndex) n.recorded = level;
                nearest_.push_back(n);
                refs_.push_back({cpu.name, cpu.shapes});
            });
        const std::size_t top = nearest_.size() - 1;
        const auto within = [&](std::uint32_t level) {
            return level != kNoIndex && top - level < KernelGraph::kMaxOpChain;
        };
        const auto op_at = [&](std::uint32_t level) {
            return within(level) ? chain_ops_.ops()[level] : kNoIndex;
        };
        const Nearest& n = nearest_.back();
        ChainEnds ends{op_at(n.aten), op_at(n.gemm), op_at(n.recorded)};
        ends.innermost_name = refs_.back().name;
        if (within(n.aten)) {
            ends.aten_name = refs_[n.aten].name;
            ends.aten_shapes = refs_[n.aten].shapes;
        }
        if (within(n.gemm)) {
            ends.gemm_name = refs_[n.gemm].name;
            ends.gemm_shapes = refs_[n.gemm].shapes;
        }
        return ends;
    }

  private:
    enum : std::uint8_t { kKnown = 1, kDispatcher = 2, kGemm = 4 };
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

    const Trace& trace_;
    std::vector<std::uint8_t> name_kinds_;  // per NameId
    std::vector<std::int8_t> shaped_;       // per op_shapes entry: -1 not yet known
    // The levels of chain_ops_ (outermost 0) of the nearest dispatcher op, GEMM op with shapes
    // and op with a shapes entry at or above each level; kNoIndex for none.
    struct Nearest {
        std::uint32_t aten = kNoIndex, gemm = kNoIndex, recorded = kNoIndex;
    };
    OpChain chain_ops_;
    std::vector<Nearest> nearest_;                // beside chain_ops_
    std::vector<classifier_detail::OpRef> refs_;  // each level's op: name, shapes entry
};

// The chain ends of the graph's nodes, walked in node order on a thread of their own (or all at
// once first, with one thread), read by the classifier as they become ready. Only the nodes
// whose op differs from the node before's have theirs.
class ChainEndsAhead {
  public:
    ChainEndsAhead(const KernelGraph& graph, bool beside) : graph_(graph) {
        ends_.resize(graph.nodes().size());
        if (!beside) {
            walk();
            return;
        }
        walking_ = std::async(std::launch::async, [this] {
            try {
                walk();
            } catch (...) {
                failed_.store(true, std::memory_order_release);
                publish(static_cast<std::uint32_t>(ends_.size()));
                throw;
            }
        });
    }
    ChainEndsAhead(const ChainEndsAhead&) = delete;
    ChainEndsAhead& operator=(const ChainEndsAhead&) = delete;
    ~ChainEndsAhead() {
        if (walking_.valid()) walking_.wait();
    }

    // Node `n`'s chain ends (its op differs from node n-1's), waiting for the walk to pass it.
    const ChainEnds& at(std::uint32_t n) {
        while (n >= ready_) {
            const std::uint32_t now = walked_.load(std::memory_order_acquire);
            if (failed_.load(std::memory_order_acquire)) walking_.get();  // rethrows
            if (now > n) {
                ready_ = now;
                break;
            }
            walked_.wait(now, std::memory_order_acquire);
        }
        return ends_[n];
    }
    // Every node's innermost op with a shapes entry, once the walk is done.
    std::vector<std::uint32_t> shaped_ops() {
        if (walking_.valid()) walking_.get();
        std::vector<std::uint32_t> ops(ends_.size());
        for (std::size_t n = 0; n < ends_.size(); ++n) ops[n] = ends_[n].recorded;
        return ops;
    }

  private:
    // Published every kBatch nodes: the classifier rarely waits, and never per node.
    static constexpr std::uint32_t kBatch = 2048;
    void publish(std::uint32_t walked) {
        walked_.store(walked, std::memory_order_release);
        walked_.notify_one();
    }
    void walk() {
        const Trace& trace = graph_.trace();
        const auto& nodes = graph_.nodes();
        ChainWalker walker(trace);
        std::uint32_t last_op = kNoIndex;
        for (std::uint32_t n = 0; n < nodes.size(); ++n) {
            // Launch order is not op order: ask for the op a few nodes ahead, where its chain
            // starts.
            if (n + 8 < nodes.size() && nodes[n + 8].op != kNoIndex) {
                const char* op = reinterpret_cast<const char*>(&trace.cpu_ops[nodes[n + 8].op]);
                __builtin_prefetch(op);
                __builtin_prefetch(op + sizeof(CpuOp) - 1);
            }
            if ((n + 1) % kBatch == 0) publish(n);
            if (nodes[n].op == last_op) continue;
            last_op = nodes[n].op;
            if (last_op != kNoIndex) ends_[n] = walker(last_op);
        }
        publish(static_cast<std::uint32_t>(nodes.size()));
    }

    const KernelGraph& graph_;
    std::vector<ChainEnds> ends_;  // per node
    std::atomic<std::uint32_t> walked_{0};  // nodes whose ends_ are written
    std::atomic<bool> failed_{false};
    std::uint32_t ready_ = 0;  // walked_ as the reader last saw it
    std::future<void> walking_;
};

// Facts of nodes one after the other, their op chains' part from ChainEndsAhead: the facts of a
// node whose op is the node before's are those of the node before but for the activity's own.
class FactsOf {
  public:
    FactsOf(const KernelGraph& graph, bool beside)
        : graph_(graph), trace_(graph.trace()), ends_(graph, beside) {}

    Facts operator()(std::uint32_t n) {
        const GraphNode& node = graph_.nodes()[n];
        Facts f = activity_facts(graph_, node);
        if (node.op != last_op_) {
            last_op_ = node.op;
            chain_ = Chain{};
            ops_ = ChainOps{};
            if (node.op != kNoIndex) take_chain(ends_.at(n));
        }
        f.in_op = chain_.in_op;
        f.innermost_op = chain_.innermost_op;
        f.gemm_op = chain_.gemm_op;
        f.aten_op = chain_.aten_op;
        f.aten_children = chain_.aten_children;
        return f;
    }
    // The ops the facts of the last node name.
    const ChainOps& chain_ops() const { return ops_; }
    // ChainEndsAhead::shaped_ops(), the classifier done.
    std::vector<std::uint32_t> shaped_ops() { return ends_.shaped_ops(); }

  private:
    // The op chain's part of the facts.
    struct Chain {
        bool in_op = false;
        NameId innermost_op = 0;
        std::optional<OpRef> gemm_op, aten_op;
        std::vector<OpRef> aten_children;
    };
    // The chain's ops by what the walk read of them (ChainEnds), not from the ops themselves.
    void take_chain(const ChainEnds& ends) {
        chain_.in_op = true;
        chain_.innermost_op = ends.innermost_name;
        if (const std::uint32_t i = ends.aten; i != kNoIndex) {
            const OpRef aten{ends.aten_name, ends.aten_shapes};
            chain_.aten_op = aten;
            ops_.aten_op = i;
            ops_.aten_children = aten_children_of(trace_, i, aten);
            for (std::uint32_t child : ops_.aten_children)
                chain_.aten_children.push_back(
                    {trace_.cpu_ops[child].name, trace_.cpu_ops[child].shapes});
        }
        if (const std::uint32_t i = ends.gemm; i != kNoIndex) {
            chain_.gemm_op = OpRef{ends.gemm_name, ends.gemm_shapes};
            ops_.gemm_op = i;
        }
    }

    const KernelGraph& graph_;
    const Trace& trace_;
    ChainEndsAhead ends_;
    std::uint32_t last_op_ = kNoIndex;  // the op whose chain chain_ holds
    Chain chain_;
    ChainOps ops_;
};

// The facts of one node the straightforward way: the whole op chain as the graph lists it.
Facts facts_one_by_one(const KernelGraph& graph, const GraphNode& node, ChainOps& ops) {
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
            ops.aten_op = i;
            ops.aten_children = aten_children_of(trace, i);
            for (std::uint32_t child : ops.aten_children)
                f.aten_children.push_back({trace.cpu_ops[child].name, trace.cpu_ops[child].shapes});
        }
        if (!f.gemm_op && is_gemm_op(name) && has_shapes(trace, op.shapes)) {
            f.gemm_op = OpRef{op.name, op.shapes};
            ops.gemm_op = i;
        }
    }
    return f;
}

// The storage ids of the ops of one node's chain.
class ChainStorages : public StorageIds {
  public:
    ChainStorages(const Trace& trace, const ChainOps& ops) : trace_(trace), ops_(ops) {}
    std::int64_t storage(const TensorSource& source) override {
        return storage_of(trace_, ops_, source);
    }

  private:
    const Trace& trace_;
    const ChainOps& ops_;
};

// Stands in for the storage ids while a decision shared by many nodes is made: each tensor gets
// the number of its source, so that the decision says where each of its slots' ids comes from.
class SourceRecorder : public StorageIds {
  public:
    std::int64_t storage(const TensorSource& source) override {
        sources_.push_back(source);
        return static_cast<std::int64_t>(sources_.size() - 1);
    }
    // The source of each tensor slot of `decision` (visit_tensor_slots order), none for a
    // tensor the trace gave no id; the decision is left with storage ids -1.
    std::vector<std::optional<TensorSource>> take_slots(Recipe& decision) const {
        std::vector<std::optional<TensorSource>> slots;
        visit_tensor_slots(decision, [&](std::int64_t& storage, std::int64_t&) {
            slots.push_back(storage < 0 ? std::nullopt
                                        : std::optional(sources_[static_cast<std::size_t>(storage)]));
            storage = -1;
        });
        return slots;
    }

  private:
    std::vector<TensorSource> sources_;
};

void check_one_by_one(const KernelGraph& graph, const NodeRecipes& recipes) {
    for (std::size_t n = 0; n < graph.nodes().size(); ++n) {
        ChainOps ops;
        const Facts facts = facts_one_by_one(graph, graph.nodes()[n], ops);
        ChainStorages storages(graph.trace(), ops);
        const Recipe alone = decide(graph.trace(), facts, storages);
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

NodeRecipes classify(const KernelGraph& graph, ClassifyCheck check, unsigned threads,
                     std::vector<std::uint32_t>* shaped_ops) {
    const Trace& trace = graph.trace();
    NodeRecipes recipes;
    recipes.resize_nodes(graph.nodes().size());
    // Nodes with equal facts share one decision, made for the first of them; each node's storage
    // ids (an op instance's, Trace::storages) come from the places the decision noted for them.
    struct Decision {
        std::uint32_t first_node = kNoIndex;
        std::vector<std::optional<TensorSource>> slots;  // per tensor slot: where its id is
        bool any_slot = false;
    };
    std::vector<Decision> decisions;
    std::unordered_map<Facts, std::uint32_t, FactsHash> decided;  // facts -> decision
    FactsOf facts_of(graph, threads > 1);
    const bool with_storages = !trace.storages.empty();
    Facts previous;
    std::uint32_t current = kNoIndex;
    std::vector<std::int64_t> storages;
    std::uint32_t last_run_node = kNoIndex;  // the node whose storage ids the last run holds
    std::uint32_t last_run_decision = kNoIndex;
    const auto& nodes = graph.nodes();
    for (std::uint32_t n = 0; n < nodes.size(); ++n) {
        // Launch order is not activity order: ask for an activity a few nodes ahead.
        if (n + 8 < nodes.size()) __builtin_prefetch(&graph.activity(nodes[n + 8]));
        Facts facts = facts_of(n);
        // Neighbours in launch order are often alike (the kernels of one op, a loop's steps).
        if (current == kNoIndex || !(facts == previous)) {
            auto [it, inserted] =
                decided.try_emplace(facts, static_cast<std::uint32_t>(decisions.size()));
            if (inserted) {
                SourceRecorder recorder;
                Recipe decision = decide(trace, facts, recorder);
                Decision& d = decisions.emplace_back();
                d.first_node = n;
                d.slots = recorder.take_slots(decision);
                d.any_slot = std::ranges::any_of(d.slots, [](const auto& s) { return s.has_value(); });
                recipes.set(n, decision);
            }
            current = it->second;
            previous = std::move(facts);
        }
        const Decision& d = decisions[current];
        if (d.first_node != n) recipes.share(n, d.first_node);
        if (!with_storages || !d.any_slot) continue;
        // The kernels of one op come one after the other: one run of ids for them all.
        if (last_run_node != kNoIndex && nodes[last_run_node].op == nodes[n].op &&
            last_run_decision == current) {
            recipes.share_storages(n, last_run_node);
            continue;
        }
        storages.clear();
        for (const auto& slot : d.slots)
            storages.push_back(slot ? storage_of(trace, facts_of.chain_ops(), *slot) : -1);
        recipes.set_storages(n, storages);
        last_run_node = n;
        last_run_decision = current;
    }
    if (shaped_ops != nullptr) *shaped_ops = facts_of.shaped_ops();
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
