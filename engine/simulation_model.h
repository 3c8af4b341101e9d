// The step simulator's view of a trace, built once from the kernel graph and shared by the
// parameter estimates and every simulated scenario (engine-internal).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "replay/simulation.h"

namespace replay {

// The point on another thread that woke a thread from an idle interval: that thread's last call
// starting before the wake (kNoIndex: the waking thread's own start).
struct WakeSource {
    std::uint32_t thread = kNoIndex;
    std::uint32_t call = kNoIndex;  // SimCall
    bool inside_call = false;       // the wake came while that call ran
};

// An interval in which a thread recorded nothing while another thread launched GPU work: it was
// waiting for that thread (the autograd engine's threads and the main thread hand work back and
// forth), so it resumes when the waking thread gets there, not after a fixed time.
struct Wake {
    Nanos idle_from = 0, at = 0;  // recorded
    WakeSource source;
};

// One runtime call on a simulated thread (StepSimulator::Model::calls has one per
// Trace::runtime_calls entry, at the same index).
struct SimCall {
    std::uint32_t thread = 0;    // StepSimulator::Model::threads
    std::uint32_t position = 0;  // index in its thread's calls
    Nanos ts = 0, dur = 0;       // recorded
    // Recorded CPU time from the previous call's end (or the thread's first event) to this
    // call's start: fixed in every scenario except for the profiler overhead it holds.
    Nanos gap = 0;
    std::uint32_t ops_in_gap = 0;   // recorded ops that start in that gap
    std::uint32_t wake = kNoIndex;  // the last Wake of its thread inside that gap
    bool kernel_launch = false;     // launched at least one kernel: --launch-us applies
    bool graph_launch = false;      // launched several activities (cudaGraphLaunch)
    // Returns only when GPU work is done: a host synchronisation, or a copy that came back after
    // its activity ended.
    bool blocking = false;
    std::vector<std::uint32_t> frontier;  // blocking: the last waited-for graph node per stream
    Nanos return_overhead = 0;            // blocking: recorded end - max(start, GPU done)
    // A launch returns only once the device's launch queue has room: when the activity launched
    // `launch queue depth` launches before its own has ended (kNoIndex: never full).
    std::uint32_t queue_node = kNoIndex;
    Nanos queue_return = 0;  // its end to this call's return
    // The call's duration when the queue has room: the recorded one, or, for a call that the
    // recording shows waiting for room, the typical launch's.
    Nanos free_dur = 0;
};

struct SimThread {
    std::int64_t pid = 0, tid = 0;
    Nanos origin = 0;                  // first recorded event (kept at its recorded time)
    Nanos last_end = 0;                // end of the last recorded event
    std::vector<std::uint32_t> calls;  // SimCall indices by start
    std::vector<Nanos> op_starts;      // recorded ops (cpu_op, user_annotation), sorted
    std::vector<Wake> wakes;           // by time
    WakeSource origin_wake;            // who started it (thread kNoIndex: nobody, it is fixed)

    // Ops starting in (from, to], or [from, to] when `inclusive`.
    std::uint32_t ops_between(Nanos from, Nanos to, bool inclusive) const;
};

// An activity on another stream that a node waits for.
struct Producer {
    std::uint32_t node = kNoIndex;
    // Producer's end to the waiter's start: kGpuGap for the graph's event waits, the recorded
    // delay for waits inferred from the recording (see add_contention_waits).
    Nanos delay = 0;
};
inline constexpr Nanos kGpuGap = -1;

// A graph node's inputs besides its own duration.
struct SimNode {
    std::uint32_t launch = kNoIndex;       // SimCall that launched it
    std::uint32_t stream_prev = kNoIndex;  // node before it on its stream (recorded order)
    std::vector<Producer> producers;       // what it waits for on other streams
};

struct SimStep {
    std::string name;
    Nanos start = 0, end = 0;  // recorded CPU range on the main thread
};

struct StepSimulator::Model {
    const KernelGraph* graph = nullptr;
    std::vector<SimThread> threads;
    std::vector<SimCall> calls;
    std::vector<SimNode> nodes;  // per graph node
    std::uint32_t main_thread = kNoIndex;
    std::vector<SimStep> steps;  // ProfilerStep#N ranges; empty: the traced span
    std::size_t syncs_without_target = 0;
    std::size_t unlinked_activities = 0;
    std::size_t waits_contradicted = 0;
    std::size_t contention_waits = 0;
    std::size_t queue_depth = 0;          // launch queue depth seen in the recording; 0: never full
    std::size_t queue_full_launches = 0;  // launches the recording shows waiting for room
    ModelParameters estimates;

    Nanos node_ts(std::uint32_t n) const { return graph->activity(graph->nodes()[n]).ts; }
    Nanos node_end(std::uint32_t n) const {
        const GpuActivity& a = graph->activity(graph->nodes()[n]);
        return a.ts + a.dur;
    }
};

// Builds everything but the estimates.
void build_model(StepSimulator::Model& model, const KernelGraph& graph);
// Activities that started later than anything the trace says held them back, right when an
// activity on another stream of the same device ended, waited for it: the GPU was full (a kernel
// that occupies every SM lets no other stream's kernel in) or the wait was on an event the trace
// does not show. Each becomes a producer of the delayed activity.
void add_contention_waits(StepSimulator::Model& model, Nanos launch_latency);

// A launch call that took far longer than launches usually do and came back when the number of
// activities launched but not finished on its device was at the trace's highest (CUDA's launch
// queue holds about a thousand) waited for room in the queue. With such evidence every launch
// gets the queue's constraint, so that the CPU is held back (or freed) as the GPU's pace changes.
void add_launch_queue(StepSimulator::Model& model);

// Measured on the recording: launch latency first (the contention waits need it), then the GPU
// dispatch gap and the per-op profiler overhead.
Nanos estimate_launch_latency(const StepSimulator::Model& model, std::size_t& samples);
Nanos estimate_graph_launch_latency(const StepSimulator::Model& model, std::size_t& samples);
void estimate_rest(const StepSimulator::Model& model, ModelParameters& parameters);

// Order statistic of integer samples (nearest rank); 0 for none. Reorders the samples.
Nanos quantile(std::vector<Nanos>& samples, double q);

}  // namespace replay
