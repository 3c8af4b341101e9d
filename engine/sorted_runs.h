// Sorting sequences that are mostly sorted already. Internal to engine/: a trace's activities come
// in launch order stream by stream, a thread's ops in start order block by block, so the graph
// builder's sorts see a few long sorted runs (one per copy of a repeated trace, per parser batch)
// far more often than disorder. Merging the runs front to back reads each element once per
// merge level, in order, where a comparison sort jumps about.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

namespace replay {

// Sorts `items` by `before` when they come in at most one sorted run per 8 items, merging runs
// pairwise, and says so; otherwise leaves them as they are and returns false (the caller sorts
// them another way). `before` must be a strict total order (ties broken by an index): the result
// is then the one any sort gives. `visit(i)` is called for each item as the runs are found (to
// prefetch what the comparisons of later ones will read).
template <typename T, typename Before, typename Visit>
bool merge_sorted_runs(std::span<T> items, Before before, Visit visit) {
    std::vector<std::size_t> runs = {0};  // where each sorted run starts, then the end
    for (std::size_t i = 1; i < items.size(); ++i) {
        visit(i);
        if (before(items[i], items[i - 1])) runs.push_back(i);
    }
    runs.push_back(items.size());
    if (runs.size() <= 2) return true;
    if (8 * runs.size() > items.size()) return false;
    std::vector<T> buffer(items.size());
    std::span<T> from = items, to = buffer;
    while (runs.size() > 2) {
        std::vector<std::size_t> merged = {0};
        for (std::size_t r = 0; r + 1 < runs.size(); r += 2) {
            const std::size_t mid = runs[r + 1], end = runs[std::min(r + 2, runs.size() - 1)];
            std::merge(from.begin() + runs[r], from.begin() + mid, from.begin() + mid,
                       from.begin() + end, to.begin() + runs[r], before);
            merged.push_back(end);
        }
        runs = std::move(merged);
        std::swap(from, to);
    }
    if (from.data() != items.data()) std::copy(from.begin(), from.end(), items.begin());
    return true;
}

template <typename T, typename Before>
bool merge_sorted_runs(std::span<T> items, Before before) {
    return merge_sorted_runs(items, before, [](std::size_t) {});
}

}  // namespace replay
