// The tier classifier: a table of rules, tried in order, that gives every GPU activity of a
// kernel graph a replay recipe (or the reason it has none) and records which rule decided.
// Activities that look alike to the rules (same kernel, same op and shapes, same link ...) share
// one decision: a trace repeats a few thousand of them over hundreds of thousands of activities.
#pragma once

#include <cstdint>
#include <string_view>
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

// The recipe of every graph node, kept once per distinct recipe: a table of recipes and, per
// node, the index of its entry.
class NodeRecipes {
  public:
    // The recipe of node `node` (an index into KernelGraph::nodes()).
    const Recipe& operator[](std::size_t node) const { return table_[entry_[node]]; }
    // How many nodes have a recipe (all of the graph's).
    std::size_t size() const { return entry_.size(); }
    std::uint32_t entry(std::size_t node) const { return entry_[node]; }
    const std::vector<Recipe>& table() const { return table_; }
    // For edits that hold for every node of an entry alike (dropping storage ids, a reason
    // that depends only on the decision's inputs).
    std::vector<Recipe>& mutable_table() { return table_; }

    // Building: a new table entry, and which entry a node has.
    std::uint32_t add(Recipe recipe);
    void assign(std::size_t node, std::uint32_t entry) { entry_[node] = entry; }
    // A decision made for one node after the shared one (recipe library, inductor cache): the
    // node gets an entry of its own.
    void set(std::size_t node, Recipe recipe) { entry_[node] = add(std::move(recipe)); }
    void resize_nodes(std::size_t nodes) { entry_.resize(nodes, 0); }

  private:
    std::vector<Recipe> table_;
    std::vector<std::uint32_t> entry_;
};

enum class ClassifyCheck {
    None,
    // Also classifies every activity on its own, from its op chain as the graph gives it, and
    // throws std::logic_error when a shared decision differs from it (tests use this).
    EveryActivity,
};

NodeRecipes classify(const KernelGraph& graph, ClassifyCheck check = ClassifyCheck::None);

// Share of recorded kernel time whose recipe is replayable (0..1); 0 for a trace without kernels.
double kernel_time_coverage(const KernelGraph& graph, const NodeRecipes& recipes);

}  // namespace replay
