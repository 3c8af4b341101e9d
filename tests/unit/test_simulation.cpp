// The step simulation on hand-made traces: launch-bound and GPU-bound chains, two streams and a
// wait, host syncs, a blocking copy, a graph launch, profiler overhead, thread wake-ups and
// contention, each checked against what the recording and the changed scenario must give.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "replay/kernel_graph.h"
#include "replay/simulation.h"

namespace {

using replay::ActivityKind;
using replay::CriticalPath;
using replay::KernelGraph;
using replay::Nanos;
using replay::Prediction;
using replay::Scenario;
using replay::StepSimulator;
using replay::Trace;

constexpr Nanos us(double t) {
    return static_cast<Nanos>(t * 1000.0);
}

// Builds a trace the way the parser would: interned names, ops, runtime calls and activities
// tied by correlation ids.
class TraceBuilder {
  public:
    void op(const std::string& name, double ts, double dur, std::int64_t tid = 1,
            std::uint8_t category = 0) {
        auto op = on_thread<replay::CpuOp>(name, ts, dur, tid);
        op.category = category;
        trace.cpu_ops.push_back(op);
    }
    // A runtime call; returns its correlation id.
    std::int64_t call(const std::string& name, double ts, double dur, std::int64_t tid = 1) {
        auto c = on_thread<replay::RuntimeCall>(name, ts, dur, tid);
        c.correlation = next_correlation_++;
        trace.runtime_calls.push_back(c);
        return c.correlation;
    }
    void activity(const std::string& name, double ts, double dur, std::int64_t stream,
                  std::int64_t correlation, ActivityKind kind = ActivityKind::Kernel) {
        replay::GpuActivity a;
        a.kind = kind;
        a.name = trace.names.intern(name);
        a.ts = us(ts);
        a.dur = us(dur);
        a.stream = stream;
        a.correlation = correlation;
        trace.activities.push_back(a);
    }
    // A cudaLaunchKernel at `ts` taking `dur`, whose kernel runs [start, start + kernel).
    void launch(double ts, double dur, double start, double kernel, std::int64_t stream = 7,
                std::int64_t tid = 1, const std::string& name = "kernel") {
        activity(name, start, kernel, stream, call("cudaLaunchKernel", ts, dur, tid));
    }

    Trace trace;

  private:
    // An op or a call (same fields) on thread `tid` of process 1.
    template <typename Event>
    Event on_thread(const std::string& name, double ts, double dur, std::int64_t tid) {
        Event e;
        e.name = trace.names.intern(name);
        e.ts = us(ts);
        e.dur = us(dur);
        e.pid = 1;
        e.tid = tid;
        return e;
    }

    std::int64_t next_correlation_ = 1;
};

// Durations of every graph node, from the recording, times `factor` for those named `name`.
std::vector<Nanos> durations(const KernelGraph& graph, double factor, const std::string& name) {
    std::vector<Nanos> out;
    for (const auto& node : graph.nodes()) {
        const auto& a = graph.activity(node);
        const bool match = name.empty() || graph.trace().names.view(a.name) == name;
        out.push_back(match ? static_cast<Nanos>(static_cast<double>(a.dur) * factor) : a.dur);
    }
    return out;
}

// Every step's critical path accounts for all of its predicted time.
void expect_paths_add_up(const Prediction& p) {
    for (const auto& step : p.steps) EXPECT_EQ(step.path.total(), step.predicted()) << step.name;
}

Prediction run(const StepSimulator& sim, const Scenario& scenario = {}) {
    Prediction p = sim.run(scenario, sim.estimates());
    expect_paths_add_up(p);
    return p;
}

// The recording simulated with its own durations gives back every recorded step.
Prediction reproduced(const StepSimulator& sim) {
    Prediction p = run(sim);
    for (const auto& step : p.steps) EXPECT_EQ(step.predicted(), step.recorded()) << step.name;
    return p;
}

Scenario scaled(const KernelGraph& graph, double factor, const std::string& name = "") {
    Scenario s;
    s.gpu_durations = durations(graph, factor, name);
    return s;
}

// Five launches 25 us apart (5 us calls, 20 us of CPU work between), 2 us kernels starting
// 5 us after their launch, then a device sync: the CPU decides the step.
Trace launch_bound_chain() {
    TraceBuilder b;
    b.op("step", 0, 150);
    for (int i = 0; i < 5; ++i) b.launch(10 + 25 * i, 5, 15 + 25 * i, 2);
    b.call("cudaDeviceSynchronize", 135, 3);
    return std::move(b.trace);  // a copy would leave the name pool pointing into b's
}

// Two launches with 40 leaf ops (3 us each, 4 us apart) in the gap between them, inside an
// outer op.
Trace ops_between_two_launches() {
    TraceBuilder b;
    b.op("outer", 0, 200);
    b.launch(10, 4, 17, 2);
    for (int i = 0; i < 40; ++i) b.op("aten::view", 15 + 4 * i, 3);
    b.launch(180, 4, 187, 2);
    return std::move(b.trace);  // a copy would leave the name pool pointing into b's
}

TEST(Simulation, LaunchBoundChainIsCpuBoundAndFollowsTheLaunchCost) {
    Trace trace = launch_bound_chain();
    KernelGraph graph = KernelGraph::build(trace);
    const StepSimulator sim(graph);
    EXPECT_EQ(sim.estimates().launch_latency, us(5));
    EXPECT_EQ(sim.estimates().launch_latency_samples, 5u);

    const Prediction p = run(sim);
    ASSERT_EQ(p.steps.size(), 1u);
    EXPECT_EQ(p.steps[0].name, "traced span");
    EXPECT_EQ(p.steps[0].recorded(), us(150));
    EXPECT_EQ(p.steps[0].predicted(), us(150));
    EXPECT_EQ(p.stats.kernel_launch_calls, 5u);
    EXPECT_EQ(p.steps[0].path.gpu_bound(), 0);
    EXPECT_EQ(p.steps[0].path.cpu_bound(), us(147));  // all but the sync's own 3 us
    EXPECT_EQ(p.steps[0].path.runtime_calls, us(25));

    Scenario free_launches;
    free_launches.launch_call = 0;
    const Prediction q = run(sim, free_launches);
    EXPECT_EQ(q.steps[0].predicted(), us(150 - 25));
    EXPECT_EQ(q.steps[0].path.runtime_calls, 0);
}

// Launches 2 us apart put five 100 us kernels back to back (1 us apart) on one stream; a device
// sync waits for the last: the GPU decides the step.
TEST(Simulation, GpuBoundChainFollowsTheKernelTimes) {
    TraceBuilder b;
    b.op("step", 0, 530);
    b.launch(1, 1, 10, 100);
    for (int i = 1; i < 5; ++i) b.launch(1 + 2 * i, 1, 10 + 101 * i, 100);
    b.call("cudaDeviceSynchronize", 12, 503);  // returns at 515, 1 us after the last kernel
    KernelGraph graph = KernelGraph::build(b.trace);
    const StepSimulator sim(graph);
    EXPECT_EQ(sim.estimates().gpu_gap, us(1));
    EXPECT_EQ(sim.estimates().gpu_gap_samples, 4u);

    const Prediction p = reproduced(sim);
    EXPECT_EQ(p.stats.blocking_calls, 1u);
    EXPECT_EQ(p.steps[0].path.gpu_activity, us(500));
    EXPECT_EQ(p.steps[0].path.gpu_gap, us(4));
    EXPECT_EQ(p.steps[0].path.sync, us(1));

    const Scenario faster = scaled(graph, 0.5);
    const Prediction q = run(sim, faster);
    EXPECT_EQ(q.steps[0].predicted(), p.steps[0].predicted() - us(250));
    Scenario free_launches;
    free_launches.launch_call = 0;
    EXPECT_EQ(run(sim, free_launches).steps[0].predicted(), p.steps[0].predicted());
}

// Stream 8 waits for stream 7 through an event (recorded after A's launch, waited on before
// B's): B follows A when A gets longer.
TEST(Simulation, CrossStreamWaitHoldsTheWaiter) {
    TraceBuilder b;
    b.op("step", 0, 300);
    b.activity("A", 10, 100, 7, b.call("cudaLaunchKernel", 2, 3));
    b.call("cudaEventRecord", 6, 1);
    b.call("cudaStreamWaitEvent", 8, 1);
    b.activity("B", 110, 20, 8, b.call("cudaLaunchKernel", 10, 3));
    b.call("cudaDeviceSynchronize", 14, 120);
    KernelGraph graph = KernelGraph::build(b.trace);
    ASSERT_EQ(graph.waits().size(), 1u);
    const StepSimulator sim(graph);
    const Prediction p = reproduced(sim);

    const Scenario longer = scaled(graph, 2.0, "A");
    const Prediction q = run(sim, longer);
    std::uint32_t a = 0, bn = 1;
    if (graph.trace().names.view(graph.activity(graph.nodes()[0]).name) != "A") std::swap(a, bn);
    EXPECT_GE(q.node_start[bn], q.node_end[a]);
    EXPECT_EQ(q.node_end[a] - p.node_end[a], us(100));
    EXPECT_EQ(q.node_start[bn] - p.node_start[bn], us(100));
}

// A device sync returns when the kernel is done (plus its own 5 us); the CPU work after it
// moves with it.
TEST(Simulation, HostSyncWaitsForTheGpu) {
    TraceBuilder b;
    b.op("step", 0, 1100);
    b.launch(1, 4, 10, 1000);
    b.call("cudaDeviceSynchronize", 6, 1009);  // returns at 1015
    b.launch(1025, 4, 1035, 10);
    KernelGraph graph = KernelGraph::build(b.trace);
    const StepSimulator sim(graph);
    const Prediction p = reproduced(sim);

    const Scenario faster = scaled(graph, 0.5);
    const Prediction q = run(sim, faster);
    const auto& calls = graph.trace().runtime_calls;
    EXPECT_EQ(q.call_end[1], q.node_end[0] + us(5));
    EXPECT_EQ(q.call_start[2], calls[2].ts - us(500));
    EXPECT_EQ(p.steps[0].predicted() - q.steps[0].predicted(), us(500));
    EXPECT_EQ(q.steps[0].path.sync, us(5));
}

// cudaMemcpy to pageable memory returns after the copy, which waits for the kernel before it.
TEST(Simulation, BlockingCopyWaitsForItsStream) {
    TraceBuilder b;
    b.op("step", 0, 400);
    b.launch(1, 4, 10, 300);
    b.activity("Memcpy DtoH (Device -> Pageable)", 311, 2, 7, b.call("cudaMemcpy", 6, 310),
               ActivityKind::Memcpy);
    b.launch(330, 4, 340, 10);
    KernelGraph graph = KernelGraph::build(b.trace);
    const StepSimulator sim(graph);
    const Prediction p = reproduced(sim);
    EXPECT_EQ(p.stats.blocking_calls, 1u);

    const Scenario slower = scaled(graph, 2.0, "kernel");
    const Prediction q = run(sim, slower);
    EXPECT_EQ(q.call_start[2] - p.call_start[2], us(300));
}

// One cudaGraphLaunch puts four kernels on the stream: the first after the launch latency, the
// others queued behind it.
TEST(Simulation, GraphLaunchIsOneCallForManyKernels) {
    TraceBuilder b;
    b.op("step", 0, 100);
    b.launch(1, 3, 6, 2);  // an ordinary launch, onto an idle stream: launch latency 5 us
    const std::int64_t graph_launch = b.call("cudaGraphLaunch", 10, 8);
    for (int i = 0; i < 4; ++i) b.activity("graph kernel", 15 + 11 * i, 10, 7, graph_launch);
    b.call("cudaDeviceSynchronize", 20, 40);  // returns at 60, 2 us after the last kernel
    KernelGraph graph = KernelGraph::build(b.trace);
    EXPECT_EQ(graph.stats().graph_launched_activities, 4u);
    const StepSimulator sim(graph);
    EXPECT_EQ(sim.estimates().launch_latency, us(5));
    const Prediction p = reproduced(sim);
    EXPECT_EQ(p.stats.kernel_launch_calls, 2u);
    for (std::size_t n = 1; n < 4; ++n) EXPECT_EQ(p.node_start[n + 1], p.node_end[n] + us(1));
    EXPECT_EQ(p.node_start[1], us(15));

    const Scenario faster = scaled(graph, 0.5, "graph kernel");
    EXPECT_EQ(run(sim, faster).steps[0].predicted(), p.steps[0].predicted() - us(20));
}

// A graph launch whose call takes 300 us (torch.compile's reduce-overhead uploads its graph):
// its first kernel starts 8 us after the call returns, not a kernel launch's latency after the
// call started, and a host that launches 100 us sooner starts the graph 100 us sooner.
TEST(Simulation, AGraphRunsAfterItsLaunchReturns) {
    TraceBuilder b;
    b.op("step", 0, 500);
    b.launch(1, 3, 6, 2);  // an ordinary launch, onto an idle stream: launch latency 5 us
    const std::int64_t graph_launch = b.call("cudaGraphLaunch", 110, 300);
    for (int i = 0; i < 3; ++i) b.activity("graph kernel", 418 + 11 * i, 10, 7, graph_launch);
    b.call("cudaDeviceSynchronize", 420, 40);  // returns at 460, 2 us after the last kernel
    KernelGraph graph = KernelGraph::build(b.trace);
    const StepSimulator sim(graph);
    EXPECT_EQ(sim.estimates().launch_latency, us(5));  // the graph's first kernel is no sample
    EXPECT_EQ(sim.estimates().graph_launch_latency, us(8));
    EXPECT_EQ(sim.estimates().graph_launch_samples, 1u);
    const Prediction p = reproduced(sim);
    EXPECT_EQ(p.node_start[1], us(418));
    EXPECT_EQ(p.steps[0].predicted(), us(500));
}

// A graph launch whose call runs 500 us while the GPU already runs what it has handed over: the
// kernels recorded during the call start no sooner after its start than they did, also on a GPU
// twice as fast (the hand-over is the host's pace), and their gaps are no sample of the GPU's.
TEST(Simulation, AGraphsKernelsFollowItsSubmissionWhileTheCallRuns) {
    TraceBuilder b;
    b.op("step", 0, 800);
    b.launch(1, 3, 6, 2);
    const std::int64_t graph_launch = b.call("cudaGraphLaunch", 110, 500);
    for (int i = 0; i < 4; ++i) b.activity("graph kernel", 160 + 100 * i, 10, 7, graph_launch);
    b.activity("graph kernel", 480, 280, 7, graph_launch);
    b.call("cudaDeviceSynchronize", 615, 150);  // returns at 765, 5 us after the GPU is done
    KernelGraph graph = KernelGraph::build(b.trace);
    const StepSimulator sim(graph);
    reproduced(sim);
    const Prediction faster = run(sim, scaled(graph, 0.5, "graph kernel"));
    for (int i = 0; i < 4; ++i) EXPECT_EQ(faster.node_start[1 + i], us(160 + 100 * i)) << i;
    EXPECT_EQ(faster.node_start[5], us(480));
    EXPECT_EQ(faster.node_end[5], us(480 + 140));
}

// A graph replay of 200 kernels: one call, and a critical path through every kernel.
TEST(Simulation, CriticalPathRunsThroughALongGraphReplay) {
    TraceBuilder b;
    b.launch(1, 3, 6, 2);
    const std::int64_t replay = b.call("cudaGraphLaunch", 10, 8);
    for (int i = 0; i < 200; ++i) b.activity("graph kernel", 15 + 11 * i, 10, 7, replay);
    KernelGraph graph = KernelGraph::build(b.trace);
    const StepSimulator sim(graph);
    const Prediction p = reproduced(sim);
    EXPECT_EQ(p.steps[0].path.gpu_activity, us(2000));
    EXPECT_EQ(p.steps[0].path.gpu_gap, us(199));
}

// Forty leaf ops of 3 us, 1 us apart, between two launches: each leaves a 4 us footprint, which
// is the overhead estimate; removing it empties the gap of its ops' cost.
TEST(Simulation, ProfilerOverheadIsEstimatedAndRemovedPerOp) {
    Trace trace = ops_between_two_launches();
    KernelGraph graph = KernelGraph::build(trace);
    const StepSimulator sim(graph);
    EXPECT_EQ(sim.estimates().op_overhead, us(4));
    EXPECT_EQ(sim.estimates().op_overhead_samples, 40u);  // "outer" is no leaf

    Scenario clean;
    clean.remove_op_overhead = true;
    const Prediction p = run(sim, clean);
    EXPECT_EQ(p.stats.ops_in_gaps, 41u);  // the outer op starts in the first gap
    const Prediction recorded = run(sim);
    // The gap before the second launch held 40 ops: 160 us less, the CPU work after it kept.
    EXPECT_EQ(recorded.call_start[1] - p.call_start[1], us(4 + 160));
    EXPECT_EQ(recorded.steps[0].predicted() - p.steps[0].predicted(), us(4 + 160));

    // A calibration larger than the gaps takes them to zero, never below.
    replay::ModelParameters calibrated = sim.estimates();
    calibrated.op_overhead = us(100);
    const Prediction q = sim.run(clean, calibrated);
    EXPECT_EQ(q.call_start[1], q.call_end[0]);
    EXPECT_GT(q.stats.gaps_clamped, 0u);
}

// Another host's CPU (Scenario::cpu_scale): the launch-bound chain's CPU work and calls take
// twice as long, the GPU-bound chain's kernels do not; the overhead comes off before the scale.
TEST(Simulation, CpuScaleStretchesCpuTimeNotGpuTime) {
    Trace cpu_trace = launch_bound_chain();
    KernelGraph cpu_graph = KernelGraph::build(cpu_trace);
    const StepSimulator cpu_sim(cpu_graph);
    Scenario slower;
    slower.cpu_scale = 2;
    const Prediction p = run(cpu_sim, slower);
    // 10 us before the first launch, 5 calls of 5 us, 4 gaps of 20 us, 5 us to the sync, and
    // the sync's own 3 us (nothing pending): all CPU, all doubled.
    EXPECT_EQ(p.steps[0].predicted(), us(2 * 150));
    EXPECT_EQ(p.steps[0].path.runtime_calls, us(2 * 25));

    TraceBuilder gpu;
    gpu.op("step", 0, 520);
    for (int i = 0; i < 5; ++i) gpu.launch(10 + 2 * i, 1, 15 + 101 * i, 100);
    gpu.call("cudaDeviceSynchronize", 25, 496);
    KernelGraph gpu_graph = KernelGraph::build(gpu.trace);
    const StepSimulator gpu_sim(gpu_graph);
    const Prediction recorded = run(gpu_sim);
    const Prediction q = run(gpu_sim, slower);
    // The CPU reaches the sync later (its 25 us doubled) but the GPU still ends it.
    EXPECT_EQ(q.node_end[4] - q.node_start[0], recorded.node_end[4] - recorded.node_start[0]);
    EXPECT_LT(q.steps[0].predicted() - recorded.steps[0].predicted(), us(15));

    // Overhead removal, then the scale: the 40-op gap of 160 us of overhead becomes 2 x 0.
    Trace ops_trace = ops_between_two_launches();
    KernelGraph ops_graph = KernelGraph::build(ops_trace);
    const StepSimulator ops_sim(ops_graph);
    Scenario clean;
    clean.remove_op_overhead = true;
    Scenario clean_slower = clean;
    clean_slower.cpu_scale = 2;
    const Prediction c1 = run(ops_sim, clean), c2 = run(ops_sim, clean_slower);
    EXPECT_EQ(c2.call_start[1] - c2.call_end[0], 2 * (c1.call_start[1] - c1.call_end[0]));
}

// A second thread starts once the main thread has launched, and the main thread sleeps while
// the second one launches: when the main thread gets faster, so does the second thread, and the
// main thread's resumption follows the second thread.
TEST(Simulation, IdleThreadWakesWithTheThreadThatLaunched) {
    TraceBuilder b;
    for (int i = 0; i < 10; ++i) b.op("aten::view", 2 + 5 * i, 4, 1);
    b.launch(60, 4, 66, 2, 7, 1);
    b.op("backward", 70, 100, 2);  // thread 2 starts after thread 1's launch
    b.launch(80, 4, 86, 2, 7, 2);
    b.op("backward", 190, 20, 2);
    b.launch(200, 4, 206, 2, 7, 2);
    b.op("optimizer", 220, 30, 1);  // thread 1 idle from 64 to 220 while thread 2 launched
    b.launch(230, 4, 236, 2, 7, 1);
    KernelGraph graph = KernelGraph::build(b.trace);
    const StepSimulator sim(graph);
    const Prediction p = reproduced(sim);
    EXPECT_EQ(p.stats.thread_wakes, 1u);  // thread 1 at 220 (thread 2's start is its origin)

    replay::ModelParameters parameters = sim.estimates();
    parameters.op_overhead = us(4);
    Scenario clean;
    clean.remove_op_overhead = true;
    const Prediction q = sim.run(clean, parameters);
    expect_paths_add_up(q);
    // Thread 1 loses 10 ops x 4 us before its launch; thread 2 starts 40 us earlier and loses
    // 4 us per "backward" op of its own; thread 1 resumes after thread 2's last launch and loses
    // its "optimizer" op's 4 us.
    const auto& calls = graph.trace().runtime_calls;
    EXPECT_EQ(calls[0].ts - q.call_start[0], us(40));
    EXPECT_EQ(calls[1].ts - q.call_start[1], us(44));
    EXPECT_EQ(calls[2].ts - q.call_start[2], us(48));
    EXPECT_EQ(calls[3].ts - q.call_start[3], us(52));
    ASSERT_EQ(q.steps.size(), 1u);
    EXPECT_EQ(p.steps[0].recorded(), us(248));
    EXPECT_EQ(p.steps[0].predicted() - q.steps[0].predicted(), us(52));
}

// A kernel launched onto an idle stream that starts only when another stream's kernel ends was
// held back by it (a full GPU): the simulation keeps that wait.
TEST(Simulation, ContentionFromTheRecordingIsKept) {
    TraceBuilder b;
    b.op("step", 0, 700);
    b.launch(1, 4, 10, 500, 7);
    b.launch(6, 4, 511, 20, 8);  // ready at 11, started when the stream 7 kernel ended
    b.call("cudaDeviceSynchronize", 12, 520);
    KernelGraph graph = KernelGraph::build(b.trace);
    ASSERT_TRUE(graph.waits().empty());
    const StepSimulator sim(graph);
    const Prediction p = run(sim);
    EXPECT_EQ(p.stats.contention_waits, 1u);
    EXPECT_EQ(p.node_start[1], us(511));

    const Scenario faster = scaled(graph, 0.5, "kernel");
    const Prediction q = run(sim, faster);
    EXPECT_EQ(q.node_start[1], q.node_end[0] + us(1));
}

// The CPU launches 100 kernels of 1 ms; from the 65th on, each launch comes back only when the
// kernel launched 64 launches before it has ended (a full launch queue). The simulation finds the
// queue in the recording and keeps the CPU to the GPU's pace, which it follows when that changes.
TEST(Simulation, FullLaunchQueueHoldsTheCpuBack) {
    TraceBuilder b;
    constexpr int kDepth = 64, kKernels = 100;
    const auto kernel_start = [](int i) { return 10.0 + 1001.0 * i; };
    double t = 1;
    for (int i = 0; i < kKernels; ++i) {
        const double back = i < kDepth ? t + 1 : kernel_start(i - kDepth) + 1000 + 5;
        b.launch(t, back - t, kernel_start(i), 1000);
        t = back + 1;
    }
    KernelGraph graph = KernelGraph::build(b.trace);
    const StepSimulator sim(graph);
    const Prediction p = reproduced(sim);
    EXPECT_EQ(p.stats.launch_queue_depth, static_cast<std::size_t>(kDepth));
    EXPECT_EQ(p.stats.queue_full_launches, static_cast<std::size_t>(kKernels - kDepth));
    EXPECT_EQ(p.steps[0].path.gpu_activity, us(1000 * kKernels));

    const Prediction q = run(sim, scaled(graph, 0.5));
    for (int i = kDepth; i < kKernels; ++i)
        EXPECT_EQ(q.call_end[static_cast<std::size_t>(i)],
                  q.node_end[static_cast<std::size_t>(i - kDepth)] + us(5));
    EXPECT_EQ(q.steps[0].predicted(), us(9 + 501 * kKernels - 1));
}

// ProfilerStep#N ranges are the steps; each takes the GPU work launched inside it, and a step
// whose kernel outlives its range ends with the kernel.
TEST(Simulation, ProfilerStepsAreTheSteps) {
    TraceBuilder b;
    b.op("ProfilerStep#1", 0, 100, 1, 1);
    b.launch(10, 4, 16, 50);
    b.op("ProfilerStep#2", 100, 100, 1, 1);
    b.launch(110, 4, 116, 150);  // runs until 266, after the range
    KernelGraph graph = KernelGraph::build(b.trace);
    const StepSimulator sim(graph);
    const Prediction p = run(sim);
    ASSERT_EQ(p.steps.size(), 2u);
    EXPECT_EQ(p.steps[0].name, "ProfilerStep#1");
    EXPECT_EQ(p.steps[0].recorded(), us(100));
    EXPECT_EQ(p.steps[1].recorded(), us(166));
    EXPECT_EQ(p.steps[1].predicted(), us(166));
    EXPECT_EQ(p.steps[1].path.gpu_activity, us(150));
    EXPECT_EQ(p.steps[1].path.launch_latency, us(6));
}

// The CPU launches a 100 us kernel every 50 us: the GPU falls behind and the steps' time is the
// GPU's period, not the CPU's, and follows the kernels.
TEST(Simulation, PipelinedStepsTakeTheGpuPeriod) {
    TraceBuilder b;
    for (int i = 0; i < 3; ++i) {
        b.op("ProfilerStep#" + std::to_string(i), 50 * i, 50, 1, 1);
        b.launch(50 * i + 4, 4, i == 0 ? 10 : 10 + 101 * i, 100);
    }
    KernelGraph graph = KernelGraph::build(b.trace);
    const StepSimulator sim(graph);
    const Prediction p = reproduced(sim);
    ASSERT_EQ(p.steps.size(), 3u);
    EXPECT_EQ(p.steps[0].recorded(), us(110));
    EXPECT_EQ(p.steps[1].recorded(), us(101));
    EXPECT_EQ(p.steps[2].recorded(), us(101));
    EXPECT_EQ(p.steps[2].path.gpu_bound(), us(101));

    const Prediction q = run(sim, scaled(graph, 0.5));
    EXPECT_EQ(q.steps[1].predicted(), us(51));
    EXPECT_EQ(q.steps[2].predicted(), us(51));
}

// A trace with no kernel at all still has a step: its CPU span, all host work.
TEST(Simulation, CpuOnlyTraceIsItsOwnSpan) {
    TraceBuilder b;
    b.op("aten::add", 0, 30);
    b.call("cudaGetDevice", 40, 2);
    b.op("aten::mul", 50, 10);
    KernelGraph graph = KernelGraph::build(b.trace);
    const StepSimulator sim(graph);
    const Prediction p = run(sim);
    ASSERT_EQ(p.steps.size(), 1u);
    EXPECT_EQ(p.steps[0].predicted(), us(60));
    EXPECT_EQ(p.steps[0].path.host_work + p.steps[0].path.runtime_calls, us(60));
}

TEST(Simulation, ScenarioWithWrongDurationCountIsRefused) {
    TraceBuilder b;
    b.launch(1, 4, 10, 10);
    KernelGraph graph = KernelGraph::build(b.trace);
    const StepSimulator sim(graph);
    Scenario wrong;
    wrong.gpu_durations = {1, 2};
    EXPECT_THROW(sim.run(wrong, sim.estimates()), std::invalid_argument);
}

}  // namespace
