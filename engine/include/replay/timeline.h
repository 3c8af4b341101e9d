// replay_trace.json: a Chrome trace (Perfetto / chrome://tracing / HTA) of a sequential replay,
// the recorded activities and the replayed ones on parallel tracks, one per recorded stream;
// and the figures that describe a timeline's shape (span, gaps) for report.json.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "replay/kernel_graph.h"
#include "replay/report.h"

namespace replay {

struct Timeline {
    struct Item {
        std::string name;
        std::int64_t stream = 0;  // the recorded stream id, on both tracks
        double start_us = 0, dur_us = 0;
        bool replayed = false;
        int iteration = 0;       // replayed: which iteration (1-based); 0 for recorded items
        bool warm_read = false;  // replayed: an L2 warm-up read before a step, not an activity
    };
    std::vector<Item> items;
    // A counter track of the last replayed iteration (board power with --energy), on its clock.
    struct Counter {
        std::string name;
        double t_us = 0;
        double value = 0;
    };
    std::vector<Counter> counters;
};

// Shifts each replayed iteration's items already in `timeline` to start at 0 and appends every
// recorded activity of `graph`, shifted to start at 0 too, so that the tracks line up in a viewer.
void add_recorded_track(Timeline& timeline, const KernelGraph& graph);

// Process "recorded" (pid 1) and one process per replayed iteration (pid 2, 3, ...: "replayed",
// or "replayed iteration N" when there are several), one thread per stream.
void write_replay_trace(std::ostream& out, const Timeline& timeline);

// ---- figures ------------------------------------------------------------------------------------

// An activity (or warm-up read) on a stream, in nanoseconds.
struct TimelineInterval {
    std::int64_t stream = 0;
    std::int64_t start_ns = 0;
    std::int64_t end_ns = 0;
    bool warm_read = false;
};

// Span, busy time and gaps of a timeline. A gap is the time between consecutive activities of
// one stream (from the latest end so far to the next start) less the warm-up reads on that
// stream inside it, never below 0: the time the stream waited for the host. Warm-up reads count
// in the span and in warm_read_us, not as activities.
TimelineFigures timeline_figures(const std::vector<TimelineInterval>& intervals);

// Every recorded GPU activity of `graph` as an interval on its recorded stream.
std::vector<TimelineInterval> recorded_intervals(const KernelGraph& graph);

// A replayed iteration's figures with their ratios to the recorded ones (NaN where a figure is
// missing or the recorded one is 0).
IterationResult iteration_result(int iteration, const TimelineFigures& replayed,
                                 const TimelineFigures& recorded);

}  // namespace replay
