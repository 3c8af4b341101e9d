#include "replay/timeline.h"

#include <algorithm>
#include <map>
#include <set>

#include "replay/json_writer.h"

namespace replay {
namespace {

// The process an item is drawn in: 0 for recorded items, else its iteration (at least 1).
int process_key(const Timeline::Item& item) {
    return item.replayed ? std::max(item.iteration, 1) : 0;
}

}  // namespace

void add_recorded_track(Timeline& timeline, const KernelGraph& graph) {
    std::map<int, double> replay_origin;  // iteration -> its first start
    for (const auto& i : timeline.items) {
        auto [it, added] = replay_origin.emplace(process_key(i), i.start_us);
        if (!added) it->second = std::min(it->second, i.start_us);
    }
    for (auto& i : timeline.items) i.start_us -= replay_origin[process_key(i)];
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
                                  static_cast<double>(a.dur) / 1000.0, false, 0, false});
    }
}

void write_replay_trace(std::ostream& out, const Timeline& timeline) {
    JsonWriter json(out, false);
    json.begin_object();
    json.field("displayTimeUnit", "ns");
    json.key("traceEvents").begin_array();
    // Each replayed iteration is a process of its own beside the recorded one.
    std::map<int, int> pid_of{{0, 1}};
    for (const auto& i : timeline.items)
        pid_of.emplace(process_key(i), 0);
    int next_pid = 1;
    for (auto& [iteration, pid] : pid_of) pid = next_pid++;
    const bool several = pid_of.size() > 2;
    for (const auto& [iteration, pid] : pid_of) {
        const std::string name = iteration == 0 ? "recorded"
                                 : several ? "replayed iteration " + std::to_string(iteration)
                                           : "replayed";
        json.begin_object().field("ph", "M").field("name", "process_name").field("pid", pid);
        json.key("args").begin_object().field("name", name).end_object();
        json.end_object();
    }
    auto pid = [&](const Timeline::Item& i) { return pid_of[process_key(i)]; };
    std::set<std::pair<int, std::int64_t>> tracks;
    for (const auto& i : timeline.items) tracks.emplace(pid(i), i.stream);
    for (const auto& [process, stream] : tracks) {
        json.begin_object().field("ph", "M").field("name", "thread_name").field("pid", process);
        json.field("tid", stream);
        json.key("args")
            .begin_object()
            .field("name", "stream " + std::to_string(stream))
            .end_object();
        json.end_object();
    }
    for (const auto& i : timeline.items) {
        json.begin_object().field("ph", "X").field("cat", i.warm_read ? "warm_read" : "kernel");
        json.field("name", i.name).field("pid", pid(i))
            .field("tid", i.stream)
            .field("ts", i.start_us)
            .field("dur", i.dur_us);
        json.end_object();
    }
    // Perfetto draws "C" events of one name as a counter track of the process: the last replayed
    // iteration's, whose clock the counters are on.
    const int counter_pid = pid_of.rbegin()->second;
    for (const auto& c : timeline.counters) {
        json.begin_object().field("ph", "C").field("name", c.name).field("pid", counter_pid);
        json.field("ts", c.t_us);
        json.key("args").begin_object().field("W", c.value).end_object();
        json.end_object();
    }
    json.end_array();
    json.end_object();
    out << '\n';
}

}  // namespace replay
