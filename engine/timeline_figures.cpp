// The shape of a timeline: span, busy time, warm-up reads and the gaps between activities (see
// timeline.h). Pure arithmetic on intervals, shared by the recorded step and every replayed
// iteration so that both sides of a ratio mean the same.
#include <algorithm>
#include <cmath>
#include <map>

#include "replay/stats.h"
#include "replay/timeline.h"

namespace replay {
namespace {

double us(std::int64_t ns) {
    return static_cast<double>(ns) / 1000.0;
}

std::int64_t length(const TimelineInterval& i) {
    return std::max<std::int64_t>(0, i.end_ns - i.start_ns);
}

bool by_start(const TimelineInterval& a, const TimelineInterval& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns < b.end_ns;
}

// The part of [from, to) that the (sorted) warm-up reads cover; `next` is where the search starts
// and moves past reads that end before `from`.
std::int64_t warm_inside(const std::vector<TimelineInterval>& warm, std::size_t& next,
                         std::int64_t from, std::int64_t to) {
    while (next < warm.size() && warm[next].end_ns <= from) ++next;
    std::int64_t covered = 0, reached = from;
    for (std::size_t w = next; w < warm.size() && warm[w].start_ns < to; ++w) {
        const std::int64_t begin = std::max(reached, warm[w].start_ns);
        const std::int64_t end = std::min(to, warm[w].end_ns);
        if (end > begin) {
            covered += end - begin;
            reached = end;
        }
    }
    return covered;
}

}  // namespace

TimelineFigures timeline_figures(const std::vector<TimelineInterval>& intervals) {
    TimelineFigures f;
    if (intervals.empty()) return f;
    std::int64_t first = intervals.front().start_ns, last = intervals.front().end_ns;
    std::int64_t busy = 0, warm_total = 0;
    struct Stream {
        std::vector<TimelineInterval> work, warm;
    };
    std::map<std::int64_t, Stream> streams;
    for (const auto& i : intervals) {
        first = std::min(first, i.start_ns);
        last = std::max(last, i.end_ns);
        Stream& s = streams[i.stream];
        if (i.warm_read) {
            warm_total += length(i);
            s.warm.push_back(i);
        } else {
            busy += length(i);
            s.work.push_back(i);
        }
    }
    f.span_us = us(std::max<std::int64_t>(0, last - first));
    f.kernel_us = us(busy);
    f.warm_read_us = us(warm_total);

    std::vector<double> gaps, kernel_gaps;
    for (auto& [id, s] : streams) {
        f.activities += s.work.size();
        std::sort(s.work.begin(), s.work.end(), by_start);
        std::sort(s.warm.begin(), s.warm.end(), by_start);
        std::size_t next_warm = 0;
        // From the latest end so far: an activity that overlaps a longer one leaves no gap.
        std::int64_t reached = s.work.empty() ? 0 : s.work.front().end_ns;
        for (std::size_t k = 1; k < s.work.size(); ++k) {
            const std::int64_t to = s.work[k].start_ns;
            const std::int64_t idle =
                to > reached ? to - reached - warm_inside(s.warm, next_warm, reached, to) : 0;
            gaps.push_back(us(std::max<std::int64_t>(0, idle)));
            kernel_gaps.push_back(us(std::max<std::int64_t>(0, to - reached)));
            reached = std::max(reached, s.work[k].end_ns);
        }
    }
    f.gaps = gaps.size();
    if (!gaps.empty()) {
        f.max_gap_us = *std::max_element(gaps.begin(), gaps.end());
        f.median_gap_us = stats::median(std::move(gaps));
        f.median_kernel_gap_us = stats::median(std::move(kernel_gaps));
    }
    return f;
}

std::vector<TimelineInterval> recorded_intervals(const KernelGraph& graph) {
    std::vector<TimelineInterval> out;
    out.reserve(graph.nodes().size());
    for (const auto& n : graph.nodes()) {
        const GpuActivity& a = graph.activity(n);
        out.push_back({a.stream, a.ts, a.ts + a.dur, false});
    }
    return out;
}

IterationResult iteration_result(int iteration, const TimelineFigures& replayed,
                                 const TimelineFigures& recorded) {
    auto ratio = [](double a, double b) { return std::isfinite(a) && b > 0 ? a / b : NAN; };
    // A recorded median gap under a microsecond is back to back (a kernel-to-kernel launch takes
    // about that long): a ratio to it, x2000 for a 4 ns median, would say nothing true.
    auto gap_ratio = [&](double a, double b) {
        return b >= kShortestComparableGapUs ? ratio(a, b) : NAN;
    };
    IterationResult r;
    r.iteration = iteration;
    r.replayed = replayed;
    r.span_ratio = ratio(replayed.span_us, recorded.span_us);
    r.stretch = ratio(replayed.span_us, replayed.kernel_us + replayed.warm_read_us);
    r.median_gap_ratio = gap_ratio(replayed.median_gap_us, recorded.median_gap_us);
    r.kernel_gap_ratio = gap_ratio(replayed.median_kernel_gap_us, recorded.median_kernel_gap_us);
    return r;
}

}  // namespace replay
