// The tier classifier: a table of rules, tried in order, that gives every GPU activity of a
// kernel graph a replay recipe (or the reason it has none) and records which rule decided.
// Activities that look alike to the rules (same kernel, same op and shapes, same link ...) share
// one decision: a trace repeats a few thousand of them over hundreds of thousands of activities.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "replay/kernel_graph.h"
#include "replay/recipe.h"

namespace replay {

struct RuleInfo {
    std::string_view id;
    std::string_view description;
};
// The rules in the order they are tried (for `--help`-style listings and the schema docs).
const std::vector<RuleInfo>& classifier_rules();

// The recipe of every graph node, in two parts: the decision (the recipe without recorded
// storage ids and reuse distances), kept once in a table shared by every node decided alike, and
// the node's own storage ids and reuse distances beside it. With dataflow every op instance has
// storages of its own, so a table of whole recipes would hold one entry per activity again.
class NodeRecipes {
  public:
    // The shared decision of node `node` (an index into KernelGraph::nodes()): everything but its
    // storage ids (-1) and reuse distances (unknown). Enough for tiers, rules, reasons and key().
    const Recipe& decision(std::size_t node) const { return table_[entry_[node]]; }
    // The node's whole recipe: its decision with its storage ids and reuse distances filled in.
    Recipe recipe(std::size_t node) const;
    // The node's storage ids, one per tensor slot of its decision (visit_tensor_slots order);
    // empty when it has none. Likewise its reuse distances (empty: all unknown).
    std::span<const std::int64_t> storages(std::size_t node) const {
        return slots(storage_at_[node], storage_pool_);
    }
    std::span<const std::int64_t> reuse(std::size_t node) const {
        return slots(reuse_at_[node], reuse_pool_);
    }
    // How many nodes have a recipe (all of the graph's).
    std::size_t size() const { return entry_.size(); }
    std::uint32_t entry(std::size_t node) const { return entry_[node]; }
    // The distinct decisions (about one per distinct set of classifier facts).
    const std::vector<Recipe>& table() const { return table_; }
    // Values held for the nodes' storage ids and reuse distances (runs with their lengths).
    std::size_t pooled_values() const { return storage_pool_.size() + reuse_pool_.size(); }

    void resize_nodes(std::size_t nodes);
    // Gives node `node` this recipe: its decision joins the table (an equal entry is shared),
    // its storage ids and reuse distances stay with the node.
    void set(std::size_t node, const Recipe& recipe);
    // Node `node` gets the decision, storage ids and reuse distances node `from` has.
    void share(std::size_t node, std::size_t from);
    // The node's storage ids, one per tensor slot of its decision (none kept when all are -1).
    void set_storages(std::size_t node, std::span<const std::int64_t> storages);
    // Node `node` gets decision `entry` of the table, no storage ids and no reuse distances.
    void set_decision(std::size_t node, std::uint32_t entry) {
        entry_[node] = entry;
        storage_at_[node] = reuse_at_[node] = kNone;
    }
    // Node `node` gets the storage ids node `from` has.
    void share_storages(std::size_t node, std::size_t from) { storage_at_[node] = storage_at_[from]; }
    // The node's reuse distances, in visit_tensor_slots order of its decision.
    void set_reuse(std::size_t node, std::span<const std::int64_t> distances);
    // A reason that holds for every node of an entry alike (it depends only on the decision's
    // inputs): the entry's reason becomes `reason`.
    void set_reason(std::uint32_t entry, std::string reason);
    // Every node's storage ids and reuse distances dropped (buffers by size and role again).
    void drop_storage_ids();
    // Adds node `node` of `from` as a new node (returned): its decision and its storage ids, each
    // id >= 0 moved by `storage_offset`; reuse distances are left out. `entries` maps from's
    // table entries to this table's, filled as they are met (one map per `from`).
    std::size_t append(const NodeRecipes& from, std::size_t node, std::int64_t storage_offset,
                       std::vector<std::uint32_t>& entries);

  private:
    static constexpr std::uint32_t kNone = 0xFFFFFFFFu;
    // A run in a pool: its length, then its values.
    static std::span<const std::int64_t> slots(std::uint32_t at,
                                               const std::vector<std::int64_t>& pool) {
        if (at == kNone) return {};
        return {pool.data() + at + 1, static_cast<std::size_t>(pool[at])};
    }
    static std::uint32_t add_run(std::vector<std::int64_t>& pool,
                                 std::span<const std::int64_t> values);
    std::uint32_t intern(Recipe decision);

    std::vector<Recipe> table_;
    std::unordered_multimap<std::uint64_t, std::uint32_t> index_;  // decision hash -> entry
    std::vector<std::uint32_t> entry_;
    // Per node: where its run of values (one per tensor slot of its decision) starts in the
    // pool, kNone for none. Nodes of one op instance share a run.
    std::vector<std::uint32_t> storage_at_, reuse_at_;
    std::vector<std::int64_t> storage_pool_, reuse_pool_;
    std::uint32_t last_reuse_run_ = kNone;  // the run set_reuse() added last
};

enum class ClassifyCheck {
    None,
    // Also classifies every activity on its own, from its op chain as the graph gives it, and
    // throws std::logic_error when a shared decision differs from it (tests use this).
    EveryActivity,
};

// `threads` > 1: the op chains are walked on a second thread, ahead of the decisions.
// `shaped_ops`, when given, gets per node what the walk found for annotate_reuse: the innermost
// op with a shapes entry (CpuOp::shapes set) within the KernelGraph::kMaxOpChain ops of its chain,
// for each node whose op differs from the node before's (kNoIndex for the others and for none).
NodeRecipes classify(const KernelGraph& graph, ClassifyCheck check = ClassifyCheck::None,
                     unsigned threads = 1, std::vector<std::uint32_t>* shaped_ops = nullptr);
// Share of recorded kernel time whose recipe is replayable (0..1); 0 for a trace without kernels.
double kernel_time_coverage(const KernelGraph& graph, const NodeRecipes& recipes);

}  // namespace replay
