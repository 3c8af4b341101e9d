// replay_trace.json: a sequential replay written as a Kineto trace (the PyTorch profiler's own
// schema), so that Perfetto, chrome://tracing and HolisticTraceAnalysis read it like a recording:
// the recorded activities are profiler step 1, each replayed iteration the next step (2, 3, ...),
// laid out one after another on the recorded devices and streams; each replayed slice carries its
// unique kernel, tier, recorded and replayed duration and error, with a flow arrow from each
// recorded activity to its replay. L2 warm-up reads are slices of their own category, not kernels.
// timeline.cpp builds and writes it; timeline_reader.cpp reads it back (the HTML report);
// timeline_figures.cpp gives a timeline's shape (span, gaps) for report.json.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "replay/analysis.h"
#include "replay/report.h"

namespace replay {

struct Timeline {
    // A recorded runtime call that launched recorded activities (the CPU side of a recording).
    struct Launch {
        std::string name;  // cudaLaunchKernel, cudaMemcpyAsync, cudaGraphLaunch, cuLaunchKernel
        double start_us = 0, dur_us = 0;  // on the recorded side's clock (from its start)
        std::int64_t pid = 0, tid = 0;
        bool driver = false;  // a driver-API call (cuLaunchKernel): category cuda_driver
    };
    struct Item {
        std::string name;       // recorded: the activity's name; replayed: the backend's name
        std::string kernel_id;  // its unique kernel ("" when not known)
        std::string kind = "kernel";  // kernel | memcpy | memset
        Tier tier = Tier::NotReplayable;
        std::int64_t device = 0;
        std::int64_t stream = 0;          // the recorded stream id, on both sides
        double start_us = 0, dur_us = 0;  // from the start of its side (its iteration)
        bool replayed = false;
        int iteration = 0;       // replayed: which iteration (1-based); 0 for recorded items
        bool warm_read = false;  // replayed: an L2 warm-up read before a step, not an activity
        std::uint32_t node = kNoIndex;  // the recorded activity (graph node) it is or re-creates
        double recorded_dur_us = NAN;   // replayed: the duration of that recorded activity
        // Recorded: what the trace says of the activity (Kineto's kernel args).
        std::uint32_t launch = kNoIndex;  // Timeline::launches
        std::int64_t external_id = -1;
        std::array<std::int32_t, 3> grid{}, block{};
        std::int32_t registers = -1, shared_memory = -1;
        std::int64_t bytes = -1;  // memcpy/memset

        // (replayed - recorded) / recorded x 100 of this instance; NaN when unknown.
        double error_pct() const {
            return replayed && !warm_read && recorded_dur_us > 0
                       ? (dur_us - recorded_dur_us) / recorded_dur_us * 100.0
                       : NAN;
        }
    };
    std::vector<Item> items;
    std::vector<Launch> launches;
    std::string trace;                 // the recording's path
    std::vector<DeviceInfo> devices;   // the recording's deviceProperties
    std::vector<std::pair<std::string, std::string>> environment;  // the replaying machine's
    // A counter track of the last replayed iteration (board power with --energy), on its clock.
    struct Counter {
        std::string name;
        double t_us = 0;
        double value = 0;
    };
    std::vector<Counter> counters;
};

// Appends a replayed activity of `iteration` as the backend timed it (its clock, nanoseconds), on
// the recorded stream `stream`, for the recorded graph node it re-creates (kNoIndex when not
// known, and for a warm-up read), with the launch grid of its record (zeros: not known).
void add_replayed_item(Timeline& timeline, std::string name, std::int64_t start_ns,
                       std::int64_t end_ns, std::int64_t stream, std::uint32_t node, int iteration,
                       bool warm_read, const std::array<std::int32_t, 3>& grid = {});

// Shifts each replayed iteration's items already in `timeline` to start at 0 and appends every
// recorded activity of `graph` with its launch, shifted so that the recorded side starts at 0 too.
void add_recorded_track(Timeline& timeline, const KernelGraph& graph);

// Gives every item its unique kernel and tier, and every replayed item the recorded duration of
// the activity it re-creates; notes the replaying machine's environment.
void attach_kernels(Timeline& timeline, const Analysis& analysis,
                    const std::vector<std::pair<std::string, std::string>>& environment);

// Where the recorded step starts on the written clock: its launches precede its first activity,
// which is at 0 in `timeline`, and no written time is negative.
double recorded_step_offset_us(const Timeline& timeline);

// A replayed iteration's place in the written trace: profiler step `step` (iteration + 1),
// starting at `offset_us`, after the recorded step and the iterations before it, with a gap.
struct ReplayedStep {
    int iteration = 0;
    int step = 0;
    double offset_us = 0;
    double end_us = 0;  // of its last activity, on its own clock
};
std::vector<ReplayedStep> replayed_steps(const Timeline& timeline);

// The Kineto trace: schemaVersion, deviceProperties, distributedInfo, traceEvents with the GPU
// activities (cat kernel | gpu_memcpy | gpu_memset, args device/stream/correlation), their
// launches (cuda_runtime, ac2g flows), ProfilerStep#1 (recorded) and #2, #3, ... (replayed
// iterations), and warm-up reads (cat warm_read: no stream, correlation or kernel id, so that
// HolisticTraceAnalysis counts no kernel for them).
void write_replay_trace(std::ostream& out, const Timeline& timeline);

// Reads a replay_trace.json back (items with side-relative times, kernel ids, tiers, recorded
// durations): the recorded step and the last replayed iteration, warm-up reads left out; at most
// `max_items_per_side` items of each side, in start order. Throws InputError.
Timeline read_replay_trace(const std::string& path, std::size_t max_items_per_side);

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

// A recorded median gap shorter than this is back to back; gap ratios are left out (NaN) below it.
inline constexpr double kShortestComparableGapUs = 1.0;

// A replayed iteration's figures with their ratios to the recorded ones (NaN where a figure is
// missing, the recorded one is 0, or a recorded median gap is under kShortestComparableGapUs).
IterationResult iteration_result(int iteration, const TimelineFigures& replayed,
                                 const TimelineFigures& recorded);

}  // namespace replay
