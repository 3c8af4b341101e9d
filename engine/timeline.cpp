#include "replay/timeline.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "replay/json_writer.h"

namespace replay {
namespace {

// The process of the events the replay adds on the CPU side (the profiler steps, the replay's
// issues, launches the recording lacks): above any Linux pid, so it never meets a recorded one.
constexpr std::int64_t kReplayPid = 1 << 23;
constexpr std::int64_t kReplayTid = 1;
// Flow ids of the recorded -> replayed arrows start here, apart from the correlation ids.
constexpr std::int64_t kReplayFlowBase = std::int64_t{1} << 40;

const char* category(const std::string& kind) {
    if (kind == "memcpy") return "gpu_memcpy";
    if (kind == "memset") return "gpu_memset";
    return "kernel";
}

// The recorded side's end on its own clock: its last activity or launch.
double recorded_end_us(const Timeline& t) {
    double end = 0;
    for (const auto& item : t.items)
        if (!item.replayed) end = std::max(end, item.start_us + item.dur_us);
    for (const auto& launch : t.launches) end = std::max(end, launch.start_us + launch.dur_us);
    return end;
}

// A gap of 5% (at least 1 us) after a step keeps the steps apart in a viewer; a step's annotation
// ends 1 us after its last activity.
double next_step_start(double start, double length) {
    return start + length + 1 + std::max(1.0, 0.05 * length);
}

// What the writer derives once: correlation ids and the clock of each step.
struct Layout {
    double recorded_offset_us = 0;  // launches before the first activity start at 0
    double recorded_end_us = 0;
    std::vector<ReplayedStep> steps;                 // per replayed iteration, in order
    std::map<int, std::size_t> step_of_iteration;    // iteration -> steps
    std::vector<std::int64_t> correlation;           // per item; -1: none (warm-up reads)
    std::vector<std::int64_t> launch_correlation;    // per launch; -1: launches nothing written
    std::unordered_map<std::uint32_t, std::size_t> recorded_of_node;  // node -> item
};

Layout lay_out(const Timeline& t) {
    Layout l;
    l.recorded_offset_us = recorded_step_offset_us(t);
    l.recorded_end_us = recorded_end_us(t);
    l.steps = replayed_steps(t);
    for (std::size_t s = 0; s < l.steps.size(); ++s) l.step_of_iteration[l.steps[s].iteration] = s;
    l.correlation.assign(t.items.size(), -1);
    l.launch_correlation.assign(t.launches.size(), -1);
    std::int64_t next = 1;
    for (std::size_t i = 0; i < t.items.size(); ++i) {
        const auto& item = t.items[i];
        if (item.warm_read) continue;
        if (!item.replayed && item.node != kNoIndex) l.recorded_of_node.emplace(item.node, i);
        // A launch that started several activities (cudaGraphLaunch) keeps one correlation id.
        if (!item.replayed && item.launch != kNoIndex) {
            auto& c = l.launch_correlation[item.launch];
            if (c < 0) c = next++;
            l.correlation[i] = c;
        } else {
            l.correlation[i] = next++;
        }
    }
    return l;
}

// An item's start on the written clock.
double written_start(const Timeline::Item& item, const Layout& l) {
    if (!item.replayed) return item.start_us + l.recorded_offset_us;
    return item.start_us + l.steps[l.step_of_iteration.at(std::max(item.iteration, 1))].offset_us;
}

void write_metadata(JsonWriter& json, const char* what, std::int64_t pid, std::int64_t tid,
                    const std::string& name) {
    json.begin_object().field("ph", "M").field("name", what).field("pid", pid);
    if (tid >= 0) json.field("tid", tid);
    json.key("args").begin_object().field("name", name).end_object();
    json.end_object();
}

void write_slice(JsonWriter& json, const char* cat, const std::string& name, std::int64_t pid,
                 std::int64_t tid, double ts, double dur) {
    json.begin_object().field("ph", "X").field("cat", cat).field("name", name);
    json.field("pid", pid).field("tid", tid).field("ts", ts).field("dur", dur);
}

void write_flow(JsonWriter& json, const char* cat, std::int64_t id, std::int64_t pid,
                std::int64_t tid, double ts, bool start) {
    json.begin_object().field("ph", start ? "s" : "f").field("id", id);
    json.field("pid", pid).field("tid", tid).field("ts", ts);
    json.field("cat", cat).field("name", cat);
    if (!start) json.field("bp", "e");
    json.end_object();
}

void write_tracks(JsonWriter& json, const Timeline& t) {
    std::set<std::int64_t> devices;
    std::set<std::pair<std::int64_t, std::int64_t>> streams;
    std::set<std::pair<std::int64_t, std::int64_t>> threads;
    for (const auto& item : t.items) {
        devices.insert(item.device);
        streams.emplace(item.device, item.stream);
    }
    for (const auto& launch : t.launches) threads.emplace(launch.pid, launch.tid);
    for (auto d : devices) write_metadata(json, "process_name", d, -1, "GPU " + std::to_string(d));
    for (const auto& [d, s] : streams)
        write_metadata(json, "thread_name", d, s, "stream " + std::to_string(s));
    std::set<std::int64_t> hosts;
    for (const auto& [pid, tid] : threads) hosts.insert(pid);
    for (auto pid : hosts) write_metadata(json, "process_name", pid, -1, "recorded host");
    write_metadata(json, "process_name", kReplayPid, -1, "replay");
    write_metadata(json, "thread_name", kReplayPid, kReplayTid,
                   "profiler steps: 1 recorded, then each replayed iteration (N + 1)");
}

void write_steps(JsonWriter& json, const Layout& l) {
    // Each step 1 us longer than its last activity: HTA gives an event the step whose
    // [start, start + dur) holds its start, and the next step starts later than that.
    write_slice(json, "user_annotation", "ProfilerStep#1", kReplayPid, kReplayTid, 0,
                l.recorded_offset_us + l.recorded_end_us + 1);
    json.end_object();
    for (const auto& s : l.steps) {
        write_slice(json, "user_annotation", "ProfilerStep#" + std::to_string(s.step), kReplayPid,
                    kReplayTid, s.offset_us, s.end_us + 1);
        json.key("args").begin_object().field("replayed_iteration", s.iteration).end_object();
        json.end_object();
    }
}

void write_launches(JsonWriter& json, const Timeline& t, const Layout& l) {
    for (std::size_t i = 0; i < t.launches.size(); ++i) {
        if (l.launch_correlation[i] < 0) continue;
        const auto& launch = t.launches[i];
        const double ts = launch.start_us + l.recorded_offset_us;
        write_slice(json, launch.driver ? "cuda_driver" : "cuda_runtime", launch.name, launch.pid,
                    launch.tid, ts, launch.dur_us);
        json.key("args").begin_object().field("correlation", l.launch_correlation[i]);
        json.end_object().end_object();
        write_flow(json, "ac2g", l.launch_correlation[i], launch.pid, launch.tid, ts, true);
    }
}

// The CPU-side event of an activity whose launch the trace does not have, or of a replayed one:
// HTA gives a GPU activity the profiler step of the CPU event with its correlation id.
void write_stand_in_launch(JsonWriter& json, const Timeline::Item& item, double ts,
                           std::int64_t correlation) {
    write_slice(json, "cuda_runtime",
                item.replayed ? "replay issue" : "launch not in the recording", kReplayPid,
                kReplayTid, ts, 0);
    json.key("args").begin_object().field("correlation", correlation).end_object();
    json.end_object();
    write_flow(json, "ac2g", correlation, kReplayPid, kReplayTid, ts, true);
}

void write_activity(JsonWriter& json, const Timeline::Item& item, double ts,
                    std::int64_t correlation) {
    write_slice(json, category(item.kind), item.name, item.device, item.stream, ts, item.dur_us);
    json.key("args").begin_object();
    json.field("device", item.device).field("stream", item.stream);
    json.field("correlation", correlation);
    if (item.external_id >= 0) json.field("External id", item.external_id);
    if (item.kind == "kernel" && !item.replayed) {
        json.array("grid", item.grid).array("block", item.block);
        if (item.registers >= 0) json.field("registers per thread", item.registers);
        if (item.shared_memory >= 0) json.field("shared memory", item.shared_memory);
    } else if (item.replayed && item.grid != std::array<std::int32_t, 3>{}) {
        json.array("grid", item.grid);  // the launch the replay made (CUPTI)
    }
    if (item.bytes >= 0) json.field("bytes", item.bytes);
    json.field("side", item.replayed ? "replayed" : "recorded");
    if (!item.kernel_id.empty()) json.field("kernel_id", item.kernel_id);
    json.field("tier", to_string(item.tier));
    if (item.replayed) {
        json.field("iteration", item.iteration);
        json.field("recorded_dur_us", item.recorded_dur_us);
        json.field("replayed_dur_us", item.dur_us);
        json.field("error_pct", item.error_pct());
    }
    json.end_object().end_object();
    write_flow(json, "ac2g", correlation, item.device, item.stream, ts, false);
}

// A warm-up read: on its stream's track, but with no stream, correlation or kernel id in its args,
// so that HolisticTraceAnalysis takes it for no GPU kernel and no step's work.
void write_warm_read(JsonWriter& json, const Timeline::Item& item, double ts) {
    write_slice(json, "warm_read", item.name, item.device, item.stream, ts, item.dur_us);
    json.key("args").begin_object();
    json.field("side", "replayed").field("iteration", item.iteration).field("warm_read", true);
    json.end_object().end_object();
}

}  // namespace

void add_replayed_item(Timeline& timeline, std::string name, std::int64_t start_ns,
                       std::int64_t end_ns, std::int64_t stream, std::uint32_t node, int iteration,
                       bool warm_read, const std::array<std::int32_t, 3>& grid) {
    Timeline::Item item;
    item.grid = grid;
    item.name = std::move(name);
    item.stream = stream;
    item.start_us = static_cast<double>(start_ns) / 1000.0;
    item.dur_us = static_cast<double>(end_ns - start_ns) / 1000.0;
    item.replayed = true;
    item.node = warm_read ? kNoIndex : node;
    item.iteration = std::max(iteration, 1);
    item.warm_read = warm_read;
    timeline.items.push_back(std::move(item));
}

void add_recorded_track(Timeline& timeline, const KernelGraph& graph) {
    std::map<int, double> replay_origin;  // iteration -> its first start
    for (const auto& i : timeline.items) {
        if (!i.replayed) continue;
        auto [it, added] = replay_origin.emplace(std::max(i.iteration, 1), i.start_us);
        if (!added) it->second = std::min(it->second, i.start_us);
    }
    for (auto& i : timeline.items)
        if (i.replayed) i.start_us -= replay_origin[std::max(i.iteration, 1)];
    const auto& nodes = graph.nodes();
    const Trace& trace = graph.trace();
    // The recorded side starts at its first activity, as the replayed one does (its launches
    // start earlier: the writer shifts both for them).
    Nanos origin = 0;
    for (std::size_t n = 0; n < nodes.size(); ++n)
        origin = n == 0 ? graph.activity(nodes[n]).ts : std::min(origin, graph.activity(nodes[n]).ts);
    const auto us = [&](Nanos t) { return static_cast<double>(t - origin) / 1000.0; };
    std::unordered_map<std::uint32_t, std::uint32_t> launch_of_call;
    for (std::uint32_t n = 0; n < nodes.size(); ++n) {
        const GraphNode& node = nodes[n];
        const GpuActivity& a = graph.activity(node);
        Timeline::Item item;
        item.name = std::string(trace.names.view(a.name));
        item.kind = to_string(a.kind);
        item.device = a.device;
        item.stream = a.stream;
        item.start_us = us(a.ts);
        item.dur_us = static_cast<double>(a.dur) / 1000.0;
        item.node = n;
        item.external_id = a.external_id;
        std::copy(a.grid, a.grid + 3, item.grid.begin());
        std::copy(a.block, a.block + 3, item.block.begin());
        item.registers = a.registers;
        item.shared_memory = a.shared_memory;
        item.bytes = a.bytes;
        if (node.launch != kNoIndex) {
            auto [it, added] = launch_of_call.emplace(
                node.launch, static_cast<std::uint32_t>(timeline.launches.size()));
            if (added) {
                const RuntimeCall& call = trace.runtime_calls[node.launch];
                timeline.launches.push_back({std::string(trace.names.view(call.name)),
                                             us(call.ts), static_cast<double>(call.dur) / 1000.0,
                                             call.pid, call.tid, call.is_driver});
            }
            item.launch = it->second;
        }
        timeline.items.push_back(std::move(item));
    }
    timeline.trace = trace.source;
    timeline.devices = trace.meta.devices;
}

void attach_kernels(Timeline& timeline, const Analysis& analysis,
                    const std::vector<std::pair<std::string, std::string>>& environment) {
    const std::size_t n = analysis.graph.nodes().size();
    std::vector<const UniqueKernel*> kernel_of(n, nullptr);
    for (const auto& k : analysis.kernels)
        for (auto node : k.nodes)
            if (node < n) kernel_of[node] = &k;
    std::map<std::int64_t, std::int64_t> device_of_stream;  // recorded stream -> its device
    for (const auto& node : analysis.graph.nodes()) {
        const GpuActivity& a = analysis.graph.activity(node);
        device_of_stream.emplace(a.stream, a.device);
    }
    for (auto& item : timeline.items) {
        if (item.warm_read) {  // no node: on its stream's device
            const auto d = device_of_stream.find(item.stream);
            if (d != device_of_stream.end()) item.device = d->second;
            continue;
        }
        if (item.node == kNoIndex || item.node >= n) continue;
        const UniqueKernel* k = kernel_of[item.node];
        if (k != nullptr) {
            item.kernel_id = k->id;
            item.tier = k->recipe.tier;
        }
        if (item.replayed) {
            const GpuActivity& recorded = analysis.graph.activity(analysis.graph.nodes()[item.node]);
            item.recorded_dur_us = static_cast<double>(recorded.dur) / 1000.0;
            item.device = recorded.device;
            item.kind = to_string(recorded.kind);
        }
    }
    timeline.environment = environment;
}

double recorded_step_offset_us(const Timeline& t) {
    double first = 0;
    for (const auto& launch : t.launches) first = std::min(first, launch.start_us);
    return -first;
}

std::vector<ReplayedStep> replayed_steps(const Timeline& t) {
    std::map<int, double> end_of;  // iteration -> its last end
    for (const auto& item : t.items)
        if (item.replayed) {
            double& end = end_of[std::max(item.iteration, 1)];
            end = std::max(end, item.start_us + item.dur_us);
        }
    std::vector<ReplayedStep> steps;
    double start = next_step_start(0, recorded_step_offset_us(t) + recorded_end_us(t));
    for (const auto& [iteration, end] : end_of) {
        steps.push_back({iteration, iteration + 1, start, end});
        start = next_step_start(start, end);
    }
    return steps;
}

void write_replay_trace(std::ostream& out, const Timeline& t) {
    const Layout l = lay_out(t);
    // HolisticTraceAnalysis finds a trace's rank with the pattern `"rank":\s+(\d+)`: the space
    // after the colon is needed.
    out << "{\n  \"schemaVersion\": 1,\n"
        << "  \"distributedInfo\": {\"backend\": \"none\", \"rank\": 0, \"world_size\": 1},\n"
        << "  \"deviceProperties\": ";
    {
        JsonWriter json(out, false);
        json.begin_array();
        for (const auto& d : t.devices) {
            json.begin_object().field("id", d.id).field("name", d.name);
            json.field("totalGlobalMem", d.total_global_mem);
            json.field("computeMajor", d.compute_major).field("computeMinor", d.compute_minor);
            json.field("numSms", d.num_sms).end_object();
        }
        json.end_array();
    }
    out << ",\n  \"replay\": ";
    {
        JsonWriter json(out, false);
        json.begin_object().field("recorded_step", 1);
        json.field("recorded_offset_us", l.recorded_offset_us);
        // The last iteration is the one the HTML report draws.
        if (!l.steps.empty()) {
            json.field("replayed_step", l.steps.back().step);
            json.field("replayed_iteration", l.steps.back().iteration);
            json.field("replayed_offset_us", l.steps.back().offset_us);
        }
        json.key("replayed_steps").begin_array();
        for (const auto& s : l.steps)
            json.begin_object()
                .field("step", s.step)
                .field("iteration", s.iteration)
                .field("offset_us", s.offset_us)
                .end_object();
        json.end_array();
        json.field("trace", t.trace);
        json.key("environment").begin_object();
        for (const auto& [k, v] : t.environment) json.field(k, v);
        json.end_object().end_object();
    }
    out << ",\n  \"displayTimeUnit\": \"ms\",\n  \"traceEvents\": ";
    JsonWriter json(out, false);
    json.begin_array();
    write_tracks(json, t);
    write_steps(json, l);
    write_launches(json, t, l);
    std::int64_t flow = kReplayFlowBase;
    for (std::size_t i = 0; i < t.items.size(); ++i) {
        const auto& item = t.items[i];
        const double ts = written_start(item, l);
        if (item.warm_read) {
            write_warm_read(json, item, ts);
            continue;
        }
        if (item.replayed || item.launch == kNoIndex)
            write_stand_in_launch(json, item, ts, l.correlation[i]);
        write_activity(json, item, ts, l.correlation[i]);
        if (!item.replayed) continue;
        const auto recorded = l.recorded_of_node.find(item.node);
        if (recorded == l.recorded_of_node.end()) continue;
        const auto& from = t.items[recorded->second];
        write_flow(json, "replay", flow, from.device, from.stream,
                   from.start_us + l.recorded_offset_us, true);
        write_flow(json, "replay", flow, item.device, item.stream, ts, false);
        ++flow;
    }
    // Perfetto draws "C" events of one name as a counter track of the process: the device of the
    // last replayed iteration, whose clock (its first activity at 0) the counters are on.
    if (!t.counters.empty() && !l.steps.empty()) {
        std::int64_t device = 0;
        for (const auto& item : t.items)
            if (item.replayed && item.iteration == l.steps.back().iteration) {
                device = item.device;
                break;
            }
        for (const auto& c : t.counters) {
            json.begin_object().field("ph", "C").field("name", c.name).field("pid", device);
            json.field("ts", c.t_us + l.steps.back().offset_us);
            json.key("args").begin_object().field("W", c.value).end_object();
            json.end_object();
        }
    }
    json.end_array();
    out << "\n}\n";
}

}  // namespace replay
