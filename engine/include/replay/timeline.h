// replay_trace.json: a Chrome trace (Perfetto / chrome://tracing / HTA) of a sequential replay,
// the recorded activities and the replayed ones on parallel tracks, one per recorded stream.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "replay/kernel_graph.h"

namespace replay {

struct Timeline {
    struct Item {
        std::string name;
        std::int64_t stream = 0;  // the recorded stream id, on both tracks
        double start_us = 0, dur_us = 0;
        bool replayed = false;
    };
    std::vector<Item> items;
    // A counter track of the replay (board power with --energy), on the replayed track's clock.
    struct Counter {
        std::string name;
        double t_us = 0;
        double value = 0;
    };
    std::vector<Counter> counters;
};

// Shifts the replayed items already in `timeline` to start at 0 and appends every recorded
// activity of `graph`, shifted to start at 0 too, so that the two tracks line up in a viewer.
void add_recorded_track(Timeline& timeline, const KernelGraph& graph);

// Process "recorded" (pid 1) and "replayed" (pid 2), one thread per stream.
void write_replay_trace(std::ostream& out, const Timeline& timeline);

}  // namespace replay
