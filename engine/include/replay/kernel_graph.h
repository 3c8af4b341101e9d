// The kernel execution graph: every GPU activity of a trace, in launch order, linked to its
// runtime launch (correlation id), its innermost CPU op and that op's ancestors, with the
// cross-stream waits and host synchronisations that order them.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "replay/thread_ops.h"
#include "replay/trace_model.h"

namespace replay {

enum class LinkState : std::uint8_t {
    Linked,    // launch and op found
    NoLaunch,  // no runtime/driver call carries this activity's correlation id
    NoOp,      // the launch is known but no CPU op encloses it
};
const char* to_string(LinkState state);

struct GraphNode {
    std::uint32_t activity = kNoIndex;  // Trace::activities
    std::uint32_t launch = kNoIndex;    // Trace::runtime_calls
    std::uint32_t op = kNoIndex;        // innermost enclosing Trace::cpu_ops entry
    std::uint32_t stream_slot = 0;      // KernelGraph::streams
    std::uint32_t launch_fanout = 1;    // activities sharing the launch (cudaGraphLaunch: many)
    LinkState link = LinkState::NoLaunch;
    bool graph_launch = false;  // launched by cudaGraphLaunch
    bool driver_launch =
        false;  // cuLaunchKernel(Ex): Triton, cuBLASLt or other driver-API launches
};

struct StreamTrack {
    std::int64_t device = 0;
    std::int64_t stream = 0;
    std::vector<std::uint32_t> nodes;  // KernelGraph::nodes indices, in GPU start order
    Nanos busy = 0;                    // summed activity durations
};

// `waiter` (first node on `waiting_stream` launched after the wait) must not start before
// `producer` (last node on `producer_stream` launched before the recorded event) has finished.
struct StreamWait {
    std::uint32_t producer = kNoIndex;
    std::uint32_t waiter = kNoIndex;
    std::int64_t producer_stream = 0;
    std::int64_t waiting_stream = 0;
    bool inferred = true;  // from launch order on the thread rather than explicit wait args
};

// A host synchronisation (cudaDeviceSynchronize, cudaStreamSynchronize, ...): every node before
// `before_node` in launch order has completed when it returns.
struct HostSync {
    std::uint32_t runtime_call = kNoIndex;
    std::uint32_t before_node = 0;
};

struct GraphStats {
    std::uint64_t linked = 0, no_launch = 0, no_op = 0;
    std::uint64_t graph_launches = 0, graph_launched_activities = 0;
    std::uint64_t driver_launches = 0;
    std::uint64_t waits = 0, host_syncs = 0;
};

class KernelGraph {
  public:
    // Also fills CpuOp::parent (time nesting per thread) in `trace`, which must outlive the graph.
    // `threads`: how many threads it may use (1: only the calling one). `after_nesting`, when
    // given, runs once CpuOp::parent is set, beside the rest of the build on another thread where
    // it may use two: it may read the trace and write what the build does not read (op shapes,
    // Trace::storages), and build() returns when it has (its exception, if any, is build()'s).
    // It is handed each thread's ops in start order, valid while it runs. `beside_nesting`, when
    // given, runs on the calling thread while the ops are nested, before the launches are
    // linked (it may read the trace, and write Trace::storages); with one thread, before
    // `after_nesting`. `once_linked`, when given, runs on the calling thread once the graph is
    // built but for what `after_nesting` writes, while that may still run on the other thread:
    // it may read the nodes and the activities, which neither writes. With one thread, last.
    static KernelGraph build(Trace& trace, unsigned threads = 2,
                             const std::function<void(const ThreadOps&)>& after_nesting = {},
                             const std::function<void()>& beside_nesting = {},
                             const std::function<void(const KernelGraph&)>& once_linked = {});

    const Trace& trace() const { return *trace_; }
    const std::vector<GraphNode>& nodes() const { return nodes_; }
    const std::vector<StreamTrack>& streams() const { return streams_; }
    const std::vector<StreamWait>& waits() const { return waits_; }
    const std::vector<HostSync>& host_syncs() const { return syncs_; }
    const GraphStats& stats() const { return stats_; }

    const GpuActivity& activity(const GraphNode& node) const {
        return trace_->activities[node.activity];
    }
    // The op and its ancestors, innermost first, at most kMaxOpChain of them.
    std::vector<std::uint32_t> op_chain(const GraphNode& node) const;
    // The same ops, handed to `visit` one by one without building the list; stops early when
    // `visit` returns false.
    template <typename Visit>
    void visit_op_chain(const GraphNode& node, Visit&& visit) const {
        std::size_t seen = 0;
        for (std::uint32_t op = node.op; op != kNoIndex && seen < kMaxOpChain;
             op = trace_->cpu_ops[op].parent, ++seen)
            if (!visit(op)) return;
    }
    // Ops nest deeper than this only in broken traces (or copies of one trace laid over each
    // other); the chain stops there.
    static constexpr std::size_t kMaxOpChain = 256;
    // Launch time of a node (the activity's own start when the launch is unknown).
    Nanos launch_time(const GraphNode& node) const;

  private:
    const Trace* trace_ = nullptr;
    std::vector<GraphNode> nodes_;
    std::vector<StreamTrack> streams_;
    std::vector<StreamWait> waits_;
    std::vector<HostSync> syncs_;
    GraphStats stats_;
};

}  // namespace replay
