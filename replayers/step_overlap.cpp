#include "step_overlap.h"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace replay::detail {
namespace {

// Time during which at least one of `spans` runs.
std::int64_t busy_ns(const std::vector<Span>& sorted) {
    std::int64_t busy = 0, end = std::numeric_limits<std::int64_t>::min();
    for (const auto& [s, e] : sorted) {
        if (e <= end) continue;
        busy += e - std::max(s, end);
        end = e;
    }
    return busy;
}

std::string us(std::int64_t ns) {
    char text[32];
    std::snprintf(text, sizeof text, "%.0f us", static_cast<double>(ns) / 1000.0);
    return text;
}

}  // namespace

std::int64_t overlapped_ns(std::vector<Span> spans) {
    // Sweep over starts (+1) and ends (-1); an end sorts before a start at the same time.
    std::vector<std::pair<std::int64_t, int>> events;
    events.reserve(2 * spans.size());
    for (const auto& [s, e] : spans) {
        if (e <= s) continue;
        events.emplace_back(s, +1);
        events.emplace_back(e, -1);
    }
    std::sort(events.begin(), events.end());
    std::int64_t overlapped = 0, last = 0;
    int running = 0;
    for (const auto& [t, d] : events) {
        if (running >= 2) overlapped += t - last;
        running += d;
        last = t;
    }
    return overlapped;
}

std::vector<Span> spans_on_several_streams(const KernelGraph& graph,
                                           const std::vector<std::uint32_t>& nodes) {
    std::vector<Span> spans;
    bool several = false;
    for (const std::uint32_t n : nodes) {
        const GraphNode& node = graph.nodes()[n];
        several |= node.stream_slot != graph.nodes()[nodes.front()].stream_slot;
        const auto& a = graph.activity(node);
        spans.emplace_back(a.ts, a.ts + a.dur);
    }
    if (!several) spans.clear();
    return spans;
}

void StepOverlap::add(std::vector<Span> recorded, const std::vector<TimedActivity>& replayed) {
    std::vector<Span> ran;
    ran.reserve(replayed.size());
    for (const auto& r : replayed) ran.emplace_back(r.start_ns, r.end_ns);
    std::sort(recorded.begin(), recorded.end());
    std::sort(ran.begin(), ran.end());
    ++ops_;
    recorded_busy_ += busy_ns(recorded);
    recorded_overlap_ += overlapped_ns(recorded);
    replayed_busy_ += busy_ns(ran);
    replayed_overlap_ += overlapped_ns(ran);
}

std::string StepOverlap::note() const {
    return std::to_string(ops_) + " op" + (ops_ == 1 ? "" : "s") +
           " ran kernels on several streams (a library's own, as cuDNN's RNNs do): in the last "
           "iteration two or more of them ran at once for " +
           us(replayed_overlap_) + " of " + us(replayed_busy_) + " busy, recorded " +
           us(recorded_overlap_) + " of " + us(recorded_busy_) +
           ". Overlapping kernels slow each other, and how much they overlap follows how fast "
           "the library's launches came (a profiled run's came slower; a CUDA graph launches "
           "them all at once): their errors are partly the overlap's";
}

}  // namespace replay::detail
