// The simulation's time constants, measured on the recording itself: no table of GPUs or
// drivers, so a trace from any machine brings its own.
#include <algorithm>
#include <map>
#include <vector>

#include "simulation_model.h"

namespace replay {
namespace {

// Launch latency: the 10th percentile of (kernel start - launch call start) over kernels whose
// stream had nothing left to run when the call started (no predecessor still running, no
// cross-stream wait pending), so that the difference is the launch path alone. A low percentile,
// not the median: what delays the slower ones (the GPU busy with another stream's kernels, a
// clock-rate change) is not a property of the launch.
constexpr double kLaunchLatencyQuantile = 0.10;
// GPU gap: the mean of (start - predecessor's end) over activities that were queued behind
// their stream predecessor (launched, and with their waits met, before it ended): the time the
// GPU itself takes to go from one activity to the next. The mean, not the median, because a
// GPU-bound chain adds the gaps up and they come in two sizes on some GPUs (AMD: none after most
// kernels, 3.4 us after some); less the top 5 %, stalls the trace does not explain.
constexpr double kGpuGapTrim = 0.95;
// Op overhead (see op_overhead_samples): the mean leaf-op footprint; the median and the 90th
// percentile are reported beside it.
constexpr double kFootprintHighQuantile = 0.90;
// Fewer footprints than this say little about the profiler: no estimate.
constexpr std::size_t kMinOverheadSamples = 20;

bool stream_idle_at(const StepSimulator::Model& m, std::uint32_t n, Nanos t) {
    const SimNode& node = m.nodes[n];
    if (node.stream_prev != kNoIndex && m.node_end(node.stream_prev) > t) return false;
    for (const Producer& p : node.producers)
        if (m.node_end(p.node) > t) return false;
    return true;
}

std::vector<Nanos> launch_latency_samples(const StepSimulator::Model& m) {
    std::vector<Nanos> samples;
    const auto& nodes = m.graph->nodes();
    for (std::uint32_t n = 0; n < nodes.size(); ++n) {
        const std::uint32_t k = m.nodes[n].launch;
        if (k == kNoIndex || m.graph->activity(nodes[n]).kind != ActivityKind::Kernel) continue;
        const SimCall& call = m.calls[k];
        if (call.graph_launch) continue;  // graph_launch_samples
        if (stream_idle_at(m, n, call.ts)) samples.push_back(m.node_ts(n) - call.ts);
    }
    return samples;
}

// Graph launch latency: the 10th percentile of (first activity start - call end) over graph
// launches whose first activity's stream was idle at the call's end.
std::vector<Nanos> graph_launch_samples(const StepSimulator::Model& m) {
    std::vector<std::uint32_t> first(m.calls.size(), kNoIndex);
    for (std::uint32_t n = 0; n < m.nodes.size(); ++n) {
        const std::uint32_t k = m.nodes[n].launch;
        if (k == kNoIndex || !m.calls[k].graph_launch) continue;
        if (first[k] == kNoIndex || m.node_ts(n) < m.node_ts(first[k])) first[k] = n;
    }
    std::vector<Nanos> samples;
    for (std::uint32_t k = 0; k < m.calls.size(); ++k) {
        if (first[k] == kNoIndex) continue;
        const Nanos end = m.calls[k].ts + m.calls[k].dur;
        if (stream_idle_at(m, first[k], end)) samples.push_back(m.node_ts(first[k]) - end);
    }
    return samples;
}

std::vector<Nanos> gpu_gap_samples(const StepSimulator::Model& m, Nanos launch_latency) {
    std::vector<Nanos> samples;
    for (std::uint32_t n = 0; n < m.nodes.size(); ++n) {
        const SimNode& node = m.nodes[n];
        if (node.launch == kNoIndex || node.stream_prev == kNoIndex) continue;
        const Nanos prev_end = m.node_end(node.stream_prev);
        const SimCall& call = m.calls[node.launch];
        // A graph's node that ran while its launch call was still handing the graph over was
        // ready when it started (the simulation holds it there, Simulator::run_node).
        if (call.graph_launch && m.node_ts(n) - call.ts < call.dur) continue;
        Nanos ready = call.ts + launch_latency;
        for (const Producer& p : node.producers) ready = std::max(ready, m.node_end(p.node));
        if (ready <= prev_end) samples.push_back(m.node_ts(n) - prev_end);
    }
    return samples;
}

struct Span {
    Nanos ts = 0, end = 0;
    bool counts = false;  // a cpu_op whose footprint is a sample
};

// A leaf op's footprint is the time from the previous boundary on its thread (its parent's
// start, or the end of whatever ran before it inside that parent: a sibling op or a runtime
// call) to its own end. A leaf op launches nothing and calls nothing: views, as_strided, empty,
// t, reshape, whose real work is a few hundred nanoseconds, so what a thread loses to each of
// them is almost all the profiler's: the callbacks and the record_shapes copy at the op's start
// (before and after its timestamp) and the bookkeeping at its end. Measuring only the gaps
// between op boundaries (a parent's start to its first child's, a sibling's end to the next
// start) would miss the part inside the op's own range, which on record_shapes traces is most
// of it. What is removed is the footprints' mean, not a quantile: the correction takes one cost
// off every op, so the sum it removes is right when the per-op cost is the average one. The
// footprints are skewed to the right (record_shapes copies more for ops with more or larger
// inputs, tensor lists; the same trivial view takes 0.8 us inside its range on one capture and
// 2.5 us on another of the same host, so the profiled CPU is slower as a whole, not by a fixed
// cost per callback), and their median, which earlier versions removed, left 12-57 % of the step
// on the bundled eager captures (see Predict.WithoutOverheadMatchesTheUnprofiledStep for what
// the mean leaves). No constant here is fitted to a capture.
std::vector<Nanos> op_overhead_samples(const StepSimulator::Model& m) {
    const Trace& trace = m.graph->trace();
    std::vector<std::vector<Span>> by_thread(m.threads.size());
    std::map<std::pair<std::int64_t, std::int64_t>, std::uint32_t> index;
    for (std::uint32_t t = 0; t < m.threads.size(); ++t)
        index[{m.threads[t].pid, m.threads[t].tid}] = t;
    for (const CpuOp& op : trace.cpu_ops)
        by_thread[index.at({op.pid, op.tid})].push_back(
            Span{op.ts, op.ts + op.dur, op.category == 0});
    for (const SimCall& c : m.calls) by_thread[c.thread].push_back(Span{c.ts, c.ts + c.dur, false});

    std::vector<Nanos> samples;
    for (auto& spans : by_thread) {
        std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
            return a.ts != b.ts ? a.ts < b.ts : a.end > b.end;
        });
        std::vector<const Span*> open;  // enclosing spans, innermost last
        Nanos closed_end = 0;
        bool any_closed = false;
        for (std::size_t i = 0; i < spans.size(); ++i) {
            const Span& s = spans[i];
            while (!open.empty() && !(s.ts >= open.back()->ts && s.end <= open.back()->end)) {
                closed_end = any_closed ? std::max(closed_end, open.back()->end) : open.back()->end;
                any_closed = true;
                open.pop_back();
            }
            const bool leaf = i + 1 == spans.size() || spans[i + 1].ts >= s.end;
            if (s.counts && leaf && (!open.empty() || any_closed)) {
                Nanos boundary = open.empty() ? closed_end : open.back()->ts;
                if (any_closed) boundary = std::max(boundary, closed_end);
                if (s.ts >= boundary) samples.push_back(s.end - boundary);
            }
            open.push_back(&s);
        }
    }
    return samples;
}

}  // namespace

Nanos estimate_launch_latency(const StepSimulator::Model& model, std::size_t& samples) {
    auto launches = launch_latency_samples(model);
    samples = launches.size();
    return quantile(launches, kLaunchLatencyQuantile);
}

Nanos estimate_graph_launch_latency(const StepSimulator::Model& model, std::size_t& samples) {
    auto launches = graph_launch_samples(model);
    samples = launches.size();
    return quantile(launches, kLaunchLatencyQuantile);
}

void estimate_rest(const StepSimulator::Model& model, ModelParameters& p) {
    auto gaps = gpu_gap_samples(model, p.launch_latency);
    p.gpu_gap_samples = gaps.size();
    if (!gaps.empty()) {
        std::sort(gaps.begin(), gaps.end());
        const auto kept = std::max<std::size_t>(
            1, static_cast<std::size_t>(kGpuGapTrim * static_cast<double>(gaps.size())));
        Nanos total = 0;
        for (std::size_t i = 0; i < kept; ++i) total += gaps[i];
        // Never below zero: overlap between dependent kernels (programmatic dependent launch)
        // is not modelled, and a stream's activities follow each other.
        p.gpu_gap = std::max<Nanos>(0, total / static_cast<Nanos>(kept));
    }
    auto footprints = op_overhead_samples(model);
    p.op_overhead_samples = footprints.size();
    if (footprints.size() >= kMinOverheadSamples) {
        Nanos total = 0;
        for (Nanos f : footprints) total += f;
        p.op_overhead = std::max<Nanos>(0, total / static_cast<Nanos>(footprints.size()));
        p.op_footprint_median = quantile(footprints, 0.5);
        p.op_footprint_high = quantile(footprints, kFootprintHighQuantile);
    }
}

}  // namespace replay
