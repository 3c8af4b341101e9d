// replay_trace.json: a sequential replay written as a Kineto trace (the PyTorch profiler's own
// schema), so that Perfetto, chrome://tracing and HolisticTraceAnalysis read it like a recording:
// the recorded activities are profiler step 1, the replayed ones step 2, on the recorded devices
// and streams, each replayed slice carrying its unique kernel, tier, recorded and replayed
// duration and error, with a flow arrow from each recorded activity to its replay.
// timeline.cpp builds and writes it; timeline_reader.cpp reads it back (the HTML report).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "replay/analysis.h"

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
        double start_us = 0, dur_us = 0;  // from the start of its side
        bool replayed = false;
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
            return replayed && recorded_dur_us > 0 ? (dur_us - recorded_dur_us) / recorded_dur_us *
                                                         100.0
                                                   : NAN;
        }
    };
    std::vector<Item> items;
    std::vector<Launch> launches;
    std::string trace;                 // the recording's path
    std::vector<DeviceInfo> devices;   // the recording's deviceProperties
    std::vector<std::pair<std::string, std::string>> environment;  // the replaying machine's
};

// Appends a replayed activity as the backend timed it (its clock, nanoseconds), on the recorded
// stream `stream`, for the recorded graph node it re-creates (kNoIndex when not known).
void add_replayed_item(Timeline& timeline, std::string name, std::int64_t start_ns,
                       std::int64_t end_ns, std::int64_t stream, std::uint32_t node);

// Shifts the replayed items already in `timeline` to start at 0 and appends every recorded
// activity of `graph` with its launch, shifted so that the recorded side starts at 0 too.
void add_recorded_track(Timeline& timeline, const KernelGraph& graph);

// Gives every item its unique kernel and tier, and every replayed item the recorded duration of
// the activity it re-creates; notes the replaying machine's environment.
void attach_kernels(Timeline& timeline, const Analysis& analysis,
                    const std::vector<std::pair<std::string, std::string>>& environment);

// Where the recorded step starts on the written clock: its launches precede its first activity,
// which is at 0 in `timeline`, and no written time is negative.
double recorded_step_offset_us(const Timeline& timeline);
// Where the replayed step starts on the written clock: after the recorded one, with a gap.
double replayed_step_offset_us(const Timeline& timeline);

// The Kineto trace: schemaVersion, deviceProperties, distributedInfo, traceEvents with the GPU
// activities (cat kernel | gpu_memcpy | gpu_memset, args device/stream/correlation), their
// launches (cuda_runtime, ac2g flows), ProfilerStep#1 (recorded) and #2 (replayed).
void write_replay_trace(std::ostream& out, const Timeline& timeline);

// Reads a replay_trace.json back (items with side-relative times, kernel ids, tiers, recorded
// durations); at most `max_items_per_side` items of each side, in start order. Throws InputError.
Timeline read_replay_trace(const std::string& path, std::size_t max_items_per_side);

}  // namespace replay
