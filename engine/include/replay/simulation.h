// Step simulation: a discrete-event model of a recorded step over its kernel graph. Every CPU
// thread replays its sequence of runtime calls with the recorded CPU time between them; launches
// put work on streams, streams run in recorded order, cross-stream waits and host
// synchronisations hold work back; GPU durations come from the recording or from a scenario.
// Nothing here needs a GPU: the simulation is arithmetic over the trace.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "replay/kernel_graph.h"

namespace replay {

// Time constants the simulation takes from the recording itself (see estimate_parameters in
// simulation_estimates.cpp for how each one is measured).
struct ModelParameters {
    // Launch call start -> kernel start, for kernels launched onto an idle stream.
    Nanos launch_latency = 0;
    std::size_t launch_latency_samples = 0;
    // A CUDA graph launch's call end -> its first activity's start, over graph launches (a graph
    // is submitted when cudaGraphLaunch returns: its call takes hundreds of microseconds where a
    // kernel launch's takes a few, and the first node follows the return, not the call's start).
    Nanos graph_launch_latency = 0;
    std::size_t graph_launch_samples = 0;
    // End of one activity -> start of the next on the same stream when that one was already
    // queued (the GPU's own dispatch gap); also used after a cross-stream wait is satisfied.
    Nanos gpu_gap = 0;
    std::size_t gpu_gap_samples = 0;
    // Profiler cost of one recorded op (record_shapes, RecordFunction callbacks) on the CPU: the
    // mean leaf-op footprint; the footprints' median and 90th percentile show their spread.
    Nanos op_overhead = 0;
    std::size_t op_overhead_samples = 0;
    Nanos op_footprint_median = 0, op_footprint_high = 0;
    bool op_overhead_calibrated = false;  // given by the user, not estimated
};

// What a run changes relative to the recording.
struct Scenario {
    std::vector<Nanos> gpu_durations;  // per graph node; empty: the recorded ones
    Nanos launch_call = -1;            // >= 0: every kernel-launch runtime call takes this long
    bool remove_op_overhead = false;   // take op_overhead off per op started in a CPU gap
    // Another host's CPU: every recorded CPU time (the work between runtime calls, after the
    // overhead is taken off, and the calls' own time) multiplied by this (host_scale.h).
    double cpu_scale = 1;
};

// Where the predicted step's time went, along its critical path (the chain of dependencies that
// fixed its end, walked back to its start). The buckets add up to the predicted step time.
//   cpu-bound: the host decided: CPU work between runtime calls (host_work), the runtime calls'
//              own time (runtime_calls), and a launch's way to the GPU (launch_latency: from the
//              call's start to its kernel's start, when the stream was free before that; for a
//              CUDA graph, its hand-over while cudaGraphLaunch runs and after it returns).
//   gpu-bound: the GPU decided: activities executing (gpu_activity) and the dispatch gap
//              between an activity and the one queued behind it or waiting on it (gpu_gap).
//   sync:      host synchronisations' own cost: the time a blocking call (cudaDeviceSynchronize,
//              cudaStreamSynchronize, cudaEventSynchronize, a blocking copy) takes to return
//              after the GPU work it waited for is done, or all of it when nothing was pending.
//              The wait itself is the GPU work on the path, counted as gpu-bound.
//   unexplained: time before a point the model keeps at its recorded time (the first event of
//              a thread other than the step's, an activity without a known launch).
struct CriticalPath {
    Nanos host_work = 0, runtime_calls = 0, launch_latency = 0;
    Nanos gpu_activity = 0, gpu_gap = 0;
    Nanos sync = 0;
    Nanos unexplained = 0;
    Nanos cpu_bound() const { return host_work + runtime_calls + launch_latency; }
    Nanos gpu_bound() const { return gpu_activity + gpu_gap; }
    Nanos total() const { return cpu_bound() + gpu_bound() + sync + unexplained; }
};

// One step: a ProfilerStep#N range, or, without such ranges, the traced span from the first to
// the last event of the main thread and the GPU. A ProfilerStep ends at the later of its range's
// end and the end of the GPU work launched inside it; it starts where the step before it ended
// (the first one: at its range's start), so that a step's time is the run's period whichever
// side, CPU or GPU, bounds it.
struct StepTime {
    std::string name;
    Nanos recorded_start = 0, recorded_end = 0;
    Nanos predicted_start = 0, predicted_end = 0;
    CriticalPath path;
    Nanos recorded() const { return recorded_end - recorded_start; }
    Nanos predicted() const { return predicted_end - predicted_start; }
};

struct SimulationStats {
    std::size_t threads = 0;
    std::size_t runtime_calls = 0;
    std::size_t kernel_launch_calls = 0;   // calls --launch-us applies to
    std::size_t blocking_calls = 0;        // host syncs and blocking copies that waited on the GPU
    std::size_t syncs_without_target = 0;  // host syncs that returned before the work they name
    std::size_t unlinked_activities = 0;   // no launch: kept at their recorded start
    std::size_t waits_contradicted = 0;    // graph waits the recorded times rule out: ignored
    // Activities held back, in the recording, until another stream's activity ended (a full
    // GPU, an event the trace does not show): kept as a wait on that activity.
    std::size_t contention_waits = 0;
    // Idle intervals of a thread that end when another thread gets somewhere (the autograd
    // engine's threads and the main thread handing work back and forth).
    std::size_t thread_wakes = 0;
    // Launch calls that waited for room in the device's launch queue (the GPU that far behind),
    // and the queue's depth they show (0: the queue never filled up).
    std::size_t queue_full_launches = 0;
    std::size_t launch_queue_depth = 0;
    std::size_t dropped_dependencies = 0;  // broken to resolve an inconsistent recording
    std::size_t ops_in_gaps = 0;           // ops whose overhead a corrected run removes
    std::size_t gaps_clamped = 0;          // CPU gaps the overhead correction took to zero
    Nanos overhead_removed = 0;            // summed over all threads
};

struct Prediction {
    std::vector<StepTime> steps;
    // Predicted times per Trace::runtime_calls index and per graph node.
    std::vector<Nanos> call_start, call_end;
    std::vector<Nanos> node_start, node_end;
    std::int64_t main_pid = 0, main_tid = 0;
    SimulationStats stats;
};

class StepSimulator {
  public:
    // The graph (and its trace) must outlive the simulator.
    explicit StepSimulator(const KernelGraph& graph);
    ~StepSimulator();
    StepSimulator(const StepSimulator&) = delete;
    StepSimulator& operator=(const StepSimulator&) = delete;

    // Estimated from the recording when the simulator is built.
    const ModelParameters& estimates() const;
    Prediction run(const Scenario& scenario, const ModelParameters& parameters) const;

    struct Model;

  private:
    std::unique_ptr<Model> model_;
};

}  // namespace replay
