#include "replay/timeline.h"

#include <algorithm>
#include <set>

#include "replay/json_writer.h"

namespace replay {

void add_recorded_track(Timeline& timeline, const KernelGraph& graph) {
    double replay_origin = 1e300;
    for (const auto& i : timeline.items) replay_origin = std::min(replay_origin, i.start_us);
    for (auto& i : timeline.items) i.start_us -= replay_origin;
    const auto& nodes = graph.nodes();
    const std::int64_t origin = nodes.empty() ? 0 : [&] {
        std::int64_t m = graph.activity(nodes.front()).ts;
        for (const auto& n : nodes) m = std::min(m, graph.activity(n).ts);
        return m;
    }();
    const Trace& trace = graph.trace();
    for (const auto& n : nodes) {
        const GpuActivity& a = graph.activity(n);
        timeline.items.push_back({std::string(trace.names.view(a.name)), a.stream,
                                  static_cast<double>(a.ts - origin) / 1000.0,
                                  static_cast<double>(a.dur) / 1000.0, false});
    }
}

void write_replay_trace(std::ostream& out, const Timeline& timeline) {
    JsonWriter json(out, false);
    json.begin_object();
    json.field("displayTimeUnit", "ns");
    json.key("traceEvents").begin_array();
    for (int pid : {1, 2}) {
        json.begin_object().field("ph", "M").field("name", "process_name").field("pid", pid);
        json.key("args")
            .begin_object()
            .field("name", pid == 1 ? "recorded" : "replayed")
            .end_object();
        json.end_object();
    }
    std::set<std::pair<int, std::int64_t>> tracks;
    for (const auto& i : timeline.items) tracks.emplace(i.replayed ? 2 : 1, i.stream);
    for (const auto& [pid, stream] : tracks) {
        json.begin_object().field("ph", "M").field("name", "thread_name").field("pid", pid);
        json.field("tid", stream);
        json.key("args")
            .begin_object()
            .field("name", "stream " + std::to_string(stream))
            .end_object();
        json.end_object();
    }
    for (const auto& i : timeline.items) {
        json.begin_object().field("ph", "X").field("cat", "kernel").field("name", i.name);
        json.field("pid", i.replayed ? 2 : 1)
            .field("tid", i.stream)
            .field("ts", i.start_us)
            .field("dur", i.dur_us);
        json.end_object();
    }
    // Perfetto draws "C" events of one name as a counter track of the process.
    for (const auto& c : timeline.counters) {
        json.begin_object().field("ph", "C").field("name", c.name).field("pid", 2);
        json.field("ts", c.t_us);
        json.key("args").begin_object().field("W", c.value).end_object();
        json.end_object();
    }
    json.end_array();
    json.end_object();
    out << '\n';
}

}  // namespace replay
