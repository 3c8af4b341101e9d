// Unique kernels: activities grouped by signature (tier + recipe + kernel name + grid/block),
// with invocation counts and recorded duration statistics.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "replay/classifier.h"
#include "replay/content_hash.h"  // hash_hex, trace_content_hash
#include "replay/kernel_graph.h"
#include "replay/recipe.h"
#include "replay/stats.h"  // DurationStats, summarize()

namespace replay {

struct UniqueKernel {
    std::string id;  // 16 hex digits of a hash of the signature text; stable across runs
    ActivityKind kind = ActivityKind::Kernel;
    std::string name;
    std::int32_t grid[3] = {0, 0, 0};
    std::int32_t block[3] = {0, 0, 0};
    Recipe recipe;
    std::vector<std::uint32_t> nodes;  // graph node indices, in launch order
    DurationStats recorded_us;         // recorded durations, microseconds
    std::vector<ValueGroup> recorded_groups;  // stats::two_groups() of them (empty: one group)
};

// Sorted by recorded total time, largest first.
std::vector<UniqueKernel> unique_kernels(const KernelGraph& graph, const NodeRecipes& recipes);
// unique_kernels() in two steps, so that the first can run beside annotate_reuse(): it reads only
// the nodes' decisions (NodeRecipes::entry/decision), and each kernel's recipe is its decision
// (storage ids -1, reuse distances unknown); the second gives each kernel its first instance's
// whole recipe. `threads` > 1: a big trace's duration statistics on two threads.
std::vector<UniqueKernel> unique_kernels_by_decision(const KernelGraph& graph,
                                                     const NodeRecipes& recipes,
                                                     unsigned threads = 1);
void take_first_instance_recipes(std::vector<UniqueKernel>& kernels, const NodeRecipes& recipes);

}  // namespace replay
