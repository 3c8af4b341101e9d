#include "replay/signatures.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <future>
#include <unordered_map>

#include "replay/id_map.h"

namespace replay {
namespace {

// Below this many nodes a thread costs more than the statistics it would share.
constexpr std::size_t kNodesWorthASecondThread = 100000;

}  // namespace

std::vector<UniqueKernel> unique_kernels(const KernelGraph& graph, const NodeRecipes& recipes) {
    auto kernels = unique_kernels_by_decision(graph, recipes);
    take_first_instance_recipes(kernels, recipes);
    return kernels;
}

void take_first_instance_recipes(std::vector<UniqueKernel>& kernels, const NodeRecipes& recipes) {
    for (UniqueKernel& k : kernels) k.recipe = recipes.recipe(k.nodes.front());
}

std::vector<UniqueKernel> unique_kernels_by_decision(const KernelGraph& graph,
                                                     const NodeRecipes& recipes, unsigned threads) {
    // The signature text is the recipe's key, the kernel name, grid and block. Nodes are first
    // grouped by (recipe entry, name, grid, block), which fixes the text; the text, and so the
    // id, is then built once per group, and groups whose texts coincide (entries that differ
    // only in what the key leaves out) make one unique kernel.
    struct Group {
        std::uint32_t entry = 0;
        NameId name = 0;
        std::int32_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
        bool operator==(const Group& o) const {
            return entry == o.entry && name == o.name && std::equal(grid, grid + 3, o.grid) &&
                   std::equal(block, block + 3, o.block);
        }
    };
    struct GroupHash {
        std::size_t operator()(const Group& g) const {
            std::uint64_t h = g.entry | std::uint64_t{g.name} << 32;
            for (const std::int32_t* dims : {g.grid, g.block})
                for (int i = 0; i < 3; ++i)
                    h = (h ^ static_cast<std::uint32_t>(dims[i])) * 0x9E3779B97F4A7C15ull;
            return static_cast<std::size_t>(h ^ (h >> 31));
        }
    };
    std::unordered_map<Group, std::uint32_t, GroupHash> group_index;
    std::vector<Group> groups;
    std::vector<std::uint32_t> group_of(graph.nodes().size());
    // Each node's recorded duration, read here where its activity is at hand: the kernels'
    // statistics then read them by node, not the activities again.
    std::vector<Nanos> duration(graph.nodes().size());
    Group last;
    std::uint32_t last_group = kNoIndex;
    for (std::uint32_t n = 0; n < graph.nodes().size(); ++n) {
        // Launch order is not activity order: ask for an activity a few nodes ahead.
        if (n + 8 < graph.nodes().size()) __builtin_prefetch(&graph.activity(graph.nodes()[n + 8]));
        const GpuActivity& a = graph.activity(graph.nodes()[n]);
        duration[n] = a.dur;
        Group g{recipes.entry(n),
                a.name,
                {a.grid[0], a.grid[1], a.grid[2]},
                {a.block[0], a.block[1], a.block[2]}};
        // Neighbours in launch order are often of one group (a loop's steps, an op's kernels).
        if (last_group == kNoIndex || !(g == last)) {
            auto [it, inserted] =
                group_index.try_emplace(g, static_cast<std::uint32_t>(groups.size()));
            if (inserted) groups.push_back(g);
            last = g;
            last_group = it->second;
        }
        group_of[n] = last_group;
    }

    const auto& names = graph.trace().names;
    std::vector<std::string> entry_key(recipes.table().size());
    std::unordered_map<std::string, std::uint32_t> kernel_of_signature;
    std::vector<std::uint32_t> kernel_of_group(groups.size());
    std::vector<UniqueKernel> kernels;
    for (std::size_t i = 0; i < groups.size(); ++i) {
        const Group& g = groups[i];
        if (entry_key[g.entry].empty()) entry_key[g.entry] = recipes.table()[g.entry].key();
        std::string signature = entry_key[g.entry];
        signature += '|';
        signature += names.view(g.name);
        for (const std::int32_t* dims : {g.grid, g.block})
            for (int d = 0; d < 3; ++d) {
                signature += '|';
                signature += std::to_string(dims[d]);
            }
        auto [it, inserted] = kernel_of_signature.try_emplace(
            std::move(signature), static_cast<std::uint32_t>(kernels.size()));
        kernel_of_group[i] = it->second;
        if (!inserted) continue;
        UniqueKernel k;
        k.id = hash_hex(it->first);
        k.name = names.view(g.name);
        std::copy(g.grid, g.grid + 3, k.grid);
        std::copy(g.block, g.block + 3, k.block);
        kernels.push_back(std::move(k));
    }

    // Groups come in order of their first node, so kernels do too.
    for (std::uint32_t n = 0; n < graph.nodes().size(); ++n) {
        UniqueKernel& k = kernels[kernel_of_group[group_of[n]]];
        if (k.nodes.empty()) {
            k.kind = graph.activity(graph.nodes()[n]).kind;
            k.recipe = recipes.decision(n);
        }
        k.nodes.push_back(n);
    }
    const auto summarize_kernels = [&](std::size_t first, std::size_t last) {
        std::vector<double> durations;
        for (std::size_t i = first; i < last; ++i) {
            UniqueKernel& k = kernels[i];
            durations.clear();
            for (std::uint32_t n : k.nodes)
                durations.push_back(static_cast<double>(duration[n]) / 1000.0);
            // summarize() and two_groups() sort a copy each: sorted once here, both find it done.
            std::sort(durations.begin(), durations.end());
            k.recorded_us = summarize(durations);
            k.recorded_groups = stats::two_groups(durations, stats::kTwoSpeedsLeastGapUs);
        }
    };
    // The statistics sort every node's duration: with many nodes, the kernels holding the second
    // half of them on a second thread (in analyze(), the reuse annotation beside this is done by
    // then).
    std::size_t split = kernels.size();
    if (threads > 1 && graph.nodes().size() >= kNodesWorthASecondThread) {
        std::size_t nodes = 0;
        for (split = 0; split < kernels.size() && 2 * nodes < graph.nodes().size(); ++split)
            nodes += kernels[split].nodes.size();
    }
    std::future<void> second_half;
    if (split < kernels.size())
        second_half = std::async(std::launch::async, summarize_kernels, split, kernels.size());
    summarize_kernels(0, split);
    if (second_half.valid()) second_half.get();
    std::stable_sort(kernels.begin(), kernels.end(),
                     [](const UniqueKernel& a, const UniqueKernel& b) {
                         return a.recorded_us.sum > b.recorded_us.sum;
                     });
    return kernels;
}

}  // namespace replay
