// What `replay predict` prints and writes: the text summary, prediction.json and the predicted
// timeline as a Chrome trace.
#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <string>

#include "replay/json_writer.h"
#include "replay/predict.h"

namespace replay {
namespace {

double us(Nanos t) {
    return static_cast<double>(t) / 1000.0;
}

std::string fixed(double value, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
    return buf;
}

// "10.705 ms", "812.4 us".
std::string duration(Nanos t) {
    if (t >= 1000000 || t <= -1000000) return fixed(us(t) / 1000.0, 3) + " ms";
    return fixed(us(t), 1) + " us";
}

std::string percent(Nanos part, Nanos whole) {
    return whole > 0
               ? fixed(100.0 * static_cast<double>(part) / static_cast<double>(whole), 1) + "%"
               : "-";
}

std::string change(Nanos now, Nanos before) {
    if (before <= 0) return "";
    const double pct = 100.0 * static_cast<double>(now - before) / static_cast<double>(before);
    std::string text = fixed(pct, 1) + "%";
    if (pct >= 0) text.insert(text.begin(), '+');
    return text;
}

std::string count(std::size_t n, const char* one, const char* many = nullptr) {
    std::string text = std::to_string(n) + " ";
    if (n == 1) return text + one;
    return text + (many != nullptr ? std::string(many) : std::string(one) + "s");
}

std::string pad(std::string text, std::size_t width) {
    if (text.size() < width) text.append(width - text.size(), ' ');
    return text;
}

std::string path_line(const CriticalPath& p, Nanos total) {
    return "cpu-bound " + percent(p.cpu_bound(), total) + " (host work " +
           percent(p.host_work, total) + ", runtime calls " + percent(p.runtime_calls, total) +
           ", launch latency " + percent(p.launch_latency, total) + "), gpu-bound " +
           percent(p.gpu_bound(), total) + " (activities " + percent(p.gpu_activity, total) +
           ", gaps " + percent(p.gpu_gap, total) + "), sync " + percent(p.sync, total) +
           (p.unexplained != 0 ? ", unexplained " + percent(p.unexplained, total) : "");
}

const ScenarioResult* find(const StepPrediction& p, bool what_if, bool overhead_removed) {
    for (const auto& s : p.scenarios)
        if (s.what_if == what_if && s.overhead_removed == overhead_removed) return &s;
    return nullptr;
}

constexpr std::size_t kMaxStepRows = 20;
constexpr std::size_t kStepsWithBothPaths = 3;

// One table: per step, recorded time, the scenario's prediction and its overhead-free twin.
void print_steps(std::ostream& out, const ScenarioResult& with, const ScenarioResult& without,
                 const char* label) {
    const auto& steps = with.prediction.steps;
    std::size_t width = 12;
    for (const auto& s : steps) width = std::max(width, s.name.size() + 2);
    out << pad("step", width) << pad("recorded", 13) << pad(label, 24)
        << "without profiler overhead\n";
    for (std::size_t i = 0; i < steps.size() && i < kMaxStepRows; ++i) {
        const StepTime& s = steps[i];
        const StepTime& w = without.prediction.steps[i];
        out << pad(s.name, width) << pad(duration(s.recorded()), 13)
            << pad(duration(s.predicted()) + " (" + change(s.predicted(), s.recorded()) + ")", 24)
            << duration(w.predicted()) << " (" << change(w.predicted(), s.recorded()) << ")\n";
    }
    if (steps.size() > kMaxStepRows)
        out << "... " << steps.size() - kMaxStepRows << " more steps in prediction.json\n";
    // Beyond a few steps, the overhead-free paths are left to prediction.json.
    const bool both = steps.size() <= kStepsWithBothPaths;
    out << "critical path" << (both ? "" : " (without overhead: see prediction.json)") << ":\n";
    for (std::size_t i = 0; i < steps.size() && i < kMaxStepRows; ++i) {
        out << "  " << pad(steps[i].name, width) << path_line(steps[i].path, steps[i].predicted())
            << "\n";
        const StepTime& w = without.prediction.steps[i];
        if (both)
            out << "  " << pad("", width)
                << "without overhead: " << path_line(w.path, w.predicted()) << "\n";
    }
}

std::string what_if_text(const StepPrediction& p) {
    std::string text;
    const auto add = [&](const std::string& part) { text += (text.empty() ? "" : ", ") + part; };
    if (p.times)
        add("--times " + p.times->path + " (" + p.times->mode +
            (p.times->gpu.empty() ? "" : " on " + p.times->gpu) + ")");
    for (const auto& r : p.options.scale) add("--scale " + r.text);
    if (!std::isnan(p.options.launch_us)) add("--launch-us " + fixed(p.options.launch_us, 2));
    if (p.host) add("--host-reference " + p.options.host_reference_path);
    return text;
}

void write_path(JsonWriter& json, const CriticalPath& p) {
    json.key("critical_path").begin_object();
    json.field("cpu_bound_us", us(p.cpu_bound()))
        .field("gpu_bound_us", us(p.gpu_bound()))
        .field("sync_us", us(p.sync))
        .field("unexplained_us", us(p.unexplained))
        .field("host_work_us", us(p.host_work))
        .field("runtime_calls_us", us(p.runtime_calls))
        .field("launch_latency_us", us(p.launch_latency))
        .field("gpu_activity_us", us(p.gpu_activity))
        .field("gpu_gap_us", us(p.gpu_gap));
    json.end_object();
}

void write_host(JsonWriter& json, const StepPrediction& p) {
    if (!p.host) {
        json.key("host").null();
        return;
    }
    const HostScale& h = *p.host;
    json.key("host").begin_object();
    json.field("reference", p.options.host_reference_path)
        .field("cpu_scale", h.scale)
        .field("ratio_p25", h.ratio_p25)
        .field("ratio_p75", h.ratio_p75)
        .field("names", static_cast<std::uint64_t>(h.names.size()));
    json.key("ratios").begin_array();
    for (const NameRatio& r : h.names) {
        json.begin_object();
        json.field("name", r.name)
            .field("runtime_call", r.runtime_call)
            .field("count", static_cast<std::uint64_t>(r.target_count))
            .field("reference_count", static_cast<std::uint64_t>(r.reference_count))
            .field("median_us", r.target_median_us)
            .field("reference_median_us", r.reference_median_us)
            .field("ratio", r.ratio());
        json.end_object();
    }
    json.end_array();
    json.end_object();
}

}  // namespace

void print_prediction(std::ostream& out, const StepPrediction& p) {
    const ModelParameters& m = p.parameters;
    const SimulationStats& s = p.scenarios.front().prediction.stats;
    out << "predict " << p.trace << "\n";
    out << "model from the recording: launch latency " << fixed(us(m.launch_latency), 2)
        << " us (10th percentile of " << m.launch_latency_samples
        << " launches onto an idle stream), GPU gap " << fixed(us(m.gpu_gap), 2) << " us (mean of "
        << m.gpu_gap_samples << " queued activities, top 5% left out)";
    if (m.graph_launch_samples > 0)
        out << ", graph launch " << fixed(us(m.graph_launch_latency), 2)
            << " us from cudaGraphLaunch's return (10th percentile of " << m.graph_launch_samples
            << ")";
    out << "\n";
    out << "profiler overhead: " << fixed(us(m.op_overhead), 2) << " us per op ";
    if (m.op_overhead_calibrated)
        out << "(--op-overhead-us)";
    else
        out << "(mean of " << m.op_overhead_samples << " leaf-op footprints, median "
            << fixed(us(m.op_footprint_median), 2) << " us, 90th percentile "
            << fixed(us(m.op_footprint_high), 2)
            << " us: a footprint is an op's profiler callbacks and record_shapes copy, and its "
               "own short work)";
    const ScenarioResult* corrected = find(p, false, true);
    if (corrected != nullptr) {
        const SimulationStats& c = corrected->prediction.stats;
        out << "; removing it takes " << duration(c.overhead_removed) << " off " << c.ops_in_gaps
            << " ops in CPU gaps";
        if (c.gaps_clamped > 0) out << " (" << c.gaps_clamped << " gaps cut to zero)";
        out << "; runtime calls keep their recorded durations";
    }
    out << "\nsimulated: " << count(s.threads, "CPU thread") << ", "
        << count(s.runtime_calls, "runtime call") << " (" << s.kernel_launch_calls
        << " kernel launches, " << s.blocking_calls << " blocking), "
        << count(p.scenarios.front().prediction.node_start.size(), "GPU activity", "GPU activities")
        << " on " << count(p.streams, "stream") << ", " << duration(p.recorded_gpu_time)
        << " of GPU time\n";
    if (s.contention_waits + s.thread_wakes + s.waits_contradicted > 0)
        out << "from the recorded times: " << count(s.contention_waits, "wait")
            << " on another stream's activity (a full GPU or an unseen event), "
            << count(s.thread_wakes, "thread wake-up") << " after another thread's launches, "
            << count(s.waits_contradicted, "inferred event wait") << " ruled out\n";
    if (s.launch_queue_depth > 0)
        out << "launch queue: " << count(s.queue_full_launches, "launch", "launches")
            << " waited for room in a queue of " << s.launch_queue_depth
            << " activities: every launch waits for it\n";
    out << "\n";
    print_steps(out, p.scenarios[0], p.scenarios[1], "predicted");
    const ScenarioResult* what_if = find(p, true, false);
    const ScenarioResult* what_if_clean = find(p, true, true);
    if (what_if != nullptr && what_if_clean != nullptr) {
        out << "\nwhat-if: " << what_if_text(p) << "\n";
        out << "GPU time " << duration(p.recorded_gpu_time) << " -> "
            << duration(p.what_if_gpu_time);
        if (p.times)
            out << "; " << p.times->activities_from_report << " activities timed by the report, "
                << p.times->activities_recorded << " keep their recorded time ("
                << p.times->kernels_missing << " unique kernels missing from it)";
        if (!p.options.scale.empty()) out << "; " << p.scaled_activities << " activities scaled";
        out << "\n";
        if (p.host) {
            std::size_t calls = 0;
            for (const NameRatio& r : p.host->names) calls += r.runtime_call;
            out << "host CPU: times " << fixed(p.host->scale, 3) << " (median of "
                << count(p.host->names.size(), "per-name ratio") << ", " << calls
                << " of them runtime calls, reference / this trace's median duration; "
                << "interquartile range " << fixed(p.host->ratio_p25, 3) << "-"
                << fixed(p.host->ratio_p75, 3)
                << "): CPU work and runtime calls of the what-if take that much longer\n";
        }
        print_steps(out, *what_if, *what_if_clean, "what-if (vs recorded)");
    }
    for (const auto& note : p.notes) out << "note: " << note << "\n";
}

void write_prediction_json(std::ostream& out, const StepPrediction& p) {
    JsonWriter json(out);
    json.begin_object().field("schema", "replay.prediction/1").field("trace", p.trace);
    json.field("trace_hash", p.trace_hash).key("inputs").begin_object();
    if (p.options.times_path.empty())
        json.key("times").null();
    else
        json.field("times", p.options.times_path);
    json.key("scale").begin_array();
    for (const auto& r : p.options.scale) json.value(r.text);
    json.end_array();
    json.field("launch_us", p.options.launch_us).field("op_overhead_us", p.options.op_overhead_us);
    if (p.options.host_reference_path.empty())
        json.key("host_reference").null();
    else
        json.field("host_reference", p.options.host_reference_path);
    json.end_object();

    const ModelParameters& m = p.parameters;
    json.key("model").begin_object();
    json.field("launch_latency_us", us(m.launch_latency))
        .field("launch_latency_samples", static_cast<std::uint64_t>(m.launch_latency_samples))
        .field("graph_launch_latency_us", us(m.graph_launch_latency))
        .field("graph_launch_samples", static_cast<std::uint64_t>(m.graph_launch_samples))
        .field("gpu_gap_us", us(m.gpu_gap))
        .field("gpu_gap_samples", static_cast<std::uint64_t>(m.gpu_gap_samples))
        .field("op_overhead_us", us(m.op_overhead))
        .field("op_overhead_samples", static_cast<std::uint64_t>(m.op_overhead_samples))
        .field("op_footprint_median_us", us(m.op_footprint_median))
        .field("op_footprint_p90_us", us(m.op_footprint_high))
        .field("op_overhead_source", m.op_overhead_calibrated ? "calibrated" : "estimated");
    json.end_object();

    if (p.times) {
        const TimesSource& t = *p.times;
        json.key("times").begin_object();
        json.field("report", t.path).field("mode", t.mode).field("gpu", t.gpu);
        json.field("activities_from_report", static_cast<std::uint64_t>(t.activities_from_report))
            .field("activities_recorded", static_cast<std::uint64_t>(t.activities_recorded))
            .field("kernels_missing", static_cast<std::uint64_t>(t.kernels_missing))
            .field("kernels_by_median", static_cast<std::uint64_t>(t.kernels_by_median))
            .field("report_kernels_unmatched",
                   static_cast<std::uint64_t>(t.report_kernels_unmatched));
        json.end_object();
    } else {
        json.key("times").null();
    }
    write_host(json, p);
    json.field("recorded_gpu_time_us", us(p.recorded_gpu_time));
    json.field("what_if_gpu_time_us", us(p.what_if_gpu_time));
    json.field("scaled_activities", static_cast<std::uint64_t>(p.scaled_activities));

    const SimulationStats& s = p.scenarios.front().prediction.stats;
    json.key("simulation").begin_object();
    json.field("threads", static_cast<std::uint64_t>(s.threads))
        .field("streams", static_cast<std::uint64_t>(p.streams))
        .field("runtime_calls", static_cast<std::uint64_t>(s.runtime_calls))
        .field("kernel_launch_calls", static_cast<std::uint64_t>(s.kernel_launch_calls))
        .field("blocking_calls", static_cast<std::uint64_t>(s.blocking_calls))
        .field("syncs_without_target", static_cast<std::uint64_t>(s.syncs_without_target))
        .field("unlinked_activities", static_cast<std::uint64_t>(s.unlinked_activities))
        .field("waits_contradicted", static_cast<std::uint64_t>(s.waits_contradicted))
        .field("contention_waits", static_cast<std::uint64_t>(s.contention_waits))
        .field("thread_wakes", static_cast<std::uint64_t>(s.thread_wakes))
        .field("launch_queue_depth", static_cast<std::uint64_t>(s.launch_queue_depth))
        .field("queue_full_launches", static_cast<std::uint64_t>(s.queue_full_launches))
        .field("dropped_dependencies", static_cast<std::uint64_t>(s.dropped_dependencies));
    json.end_object();

    json.key("scenarios").begin_array();
    for (const auto& sc : p.scenarios) {
        const SimulationStats& st = sc.prediction.stats;
        json.begin_object();
        json.field("name", sc.name)
            .field("what_if", sc.what_if)
            .field("profiler_overhead_removed", sc.overhead_removed)
            .field("ops_in_gaps", static_cast<std::uint64_t>(st.ops_in_gaps))
            .field("overhead_removed_us", us(st.overhead_removed))
            .field("gaps_clamped", static_cast<std::uint64_t>(st.gaps_clamped));
        json.key("steps").begin_array();
        for (const auto& step : sc.prediction.steps) {
            json.begin_object();
            json.field("name", step.name)
                .field("recorded_us", us(step.recorded()))
                .field("predicted_us", us(step.predicted()));
            const double err = step.recorded() > 0
                                   ? 100.0 *
                                         static_cast<double>(step.predicted() - step.recorded()) /
                                         static_cast<double>(step.recorded())
                                   : std::numeric_limits<double>::quiet_NaN();
            json.field("change_pct", err);
            write_path(json, step.path);
            json.end_object();
        }
        json.end_array();
        json.end_object();
    }
    json.end_array();
    json.array("notes", p.notes);
    json.end_object();
    out << '\n';
}

void write_predicted_trace(std::ostream& out, const KernelGraph& graph, const StepPrediction& p) {
    const Prediction& pr = p.primary().prediction;
    const Trace& trace = graph.trace();
    const auto& nodes = graph.nodes();
    Nanos origin = std::numeric_limits<Nanos>::max();
    for (auto t : pr.call_start) origin = std::min(origin, t);
    for (auto t : pr.node_start) origin = std::min(origin, t);
    for (const auto& s : pr.steps) origin = std::min(origin, s.predicted_start);
    if (origin == std::numeric_limits<Nanos>::max()) origin = 0;
    const auto at = [&](Nanos t) { return us(t - origin); };

    constexpr int kCpu = 1, kGpu = 2;
    JsonWriter json(out, false);
    json.begin_object();
    json.field("displayTimeUnit", "ns");
    json.key("traceEvents").begin_array();
    const auto meta = [&](const char* what, int pid, std::int64_t tid, const std::string& name) {
        json.begin_object().field("ph", "M").field("name", what).field("pid", pid);
        if (tid >= 0) json.field("tid", tid);
        json.key("args").begin_object().field("name", name).end_object();
        json.end_object();
    };
    meta("process_name", kCpu, -1, "CPU (predicted: " + p.primary().name + ")");
    meta("process_name", kGpu, -1, "GPU (predicted: " + p.primary().name + ")");

    std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> lane;  // (pid, tid) -> track
    const auto lane_of = [&](std::int64_t pid, std::int64_t tid) {
        auto [it, inserted] =
            lane.emplace(std::make_pair(pid, tid), static_cast<std::int64_t>(lane.size()) + 1);
        if (inserted)
            meta("thread_name", kCpu, it->second,
                 "thread " + std::to_string(tid) + " (pid " + std::to_string(pid) + ")");
        return it->second;
    };
    const auto span = [&](const std::string_view name, const char* cat, int pid, std::int64_t tid,
                          Nanos start, Nanos end) {
        json.begin_object().field("ph", "X").field("cat", cat).field("name", name);
        json.field("pid", pid)
            .field("tid", tid)
            .field("ts", at(start))
            .field("dur", us(end - start));
        json.end_object();
    };
    // Steps on a track of their own: a step can end (with its GPU work) in the middle of a call,
    // and Perfetto drops slices that overlap without nesting.
    constexpr std::int64_t kStepLane = 0;
    meta("thread_name", kCpu, kStepLane, "steps (main thread " + std::to_string(pr.main_tid) + ")");
    for (const auto& s : pr.steps)
        span(s.name, "user_annotation", kCpu, kStepLane, s.predicted_start, s.predicted_end);
    for (std::size_t c = 0; c < trace.runtime_calls.size(); ++c) {
        const RuntimeCall& call = trace.runtime_calls[c];
        span(trace.names.view(call.name), call.is_driver ? "cuda_driver" : "cuda_runtime", kCpu,
             lane_of(call.pid, call.tid), pr.call_start[c], pr.call_end[c]);
    }
    for (std::size_t s = 0; s < graph.streams().size(); ++s) {
        const StreamTrack& track = graph.streams()[s];
        meta("thread_name", kGpu, static_cast<std::int64_t>(s) + 1,
             "stream " + std::to_string(track.stream) +
                 (graph.streams().size() > 1 ? " (device " + std::to_string(track.device) + ")"
                                             : ""));
    }
    for (std::size_t n = 0; n < nodes.size(); ++n) {
        const GpuActivity& a = graph.activity(nodes[n]);
        const char* cat = a.kind == ActivityKind::Kernel   ? "kernel"
                          : a.kind == ActivityKind::Memcpy ? "gpu_memcpy"
                                                           : "gpu_memset";
        span(trace.names.view(a.name), cat, kGpu,
             static_cast<std::int64_t>(nodes[n].stream_slot) + 1, pr.node_start[n], pr.node_end[n]);
    }
    json.end_array();
    json.end_object();
    out << '\n';
}

}  // namespace replay
