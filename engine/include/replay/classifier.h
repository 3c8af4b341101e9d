// The tier classifier: a table of rules, tried in order, that gives every GPU activity of a
// kernel graph a replay recipe (or the reason it has none) and records which rule decided.
#pragma once

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

// One recipe per graph node (same order as graph.nodes()).
std::vector<Recipe> classify(const KernelGraph& graph);

// Share of recorded kernel time whose recipe is replayable (0..1); 0 for a trace without kernels.
double kernel_time_coverage(const KernelGraph& graph, const std::vector<Recipe>& recipes);

}  // namespace replay
