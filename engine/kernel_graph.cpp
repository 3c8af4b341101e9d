#include "replay/kernel_graph.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <unordered_map>

namespace replay {
namespace {

using ThreadKey = std::pair<std::int64_t, std::int64_t>;  // (pid, tid)

bool contains(const CpuOp& op, Nanos ts) {
    return op.ts <= ts && ts <= op.ts + op.dur;
}

// Per-thread ops sorted by start (outer first on ties), with parents set by a nesting stack.
std::map<ThreadKey, std::vector<std::uint32_t>> nest_ops(Trace& trace) {
    std::map<ThreadKey, std::vector<std::uint32_t>> by_thread;
    for (std::uint32_t i = 0; i < trace.cpu_ops.size(); ++i)
        by_thread[{trace.cpu_ops[i].pid, trace.cpu_ops[i].tid}].push_back(i);
    for (auto& [key, ops] : by_thread) {
        std::sort(ops.begin(), ops.end(), [&](std::uint32_t a, std::uint32_t b) {
            const CpuOp& x = trace.cpu_ops[a];
            const CpuOp& y = trace.cpu_ops[b];
            if (x.ts != y.ts) return x.ts < y.ts;
            if (x.dur != y.dur) return x.dur > y.dur;
            return a < b;
        });
        std::vector<std::uint32_t> stack;
        for (std::uint32_t i : ops) {
            CpuOp& op = trace.cpu_ops[i];
            while (!stack.empty() && !(contains(trace.cpu_ops[stack.back()], op.ts) &&
                                       op.ts + op.dur <= trace.cpu_ops[stack.back()].ts +
                                                             trace.cpu_ops[stack.back()].dur))
                stack.pop_back();
            op.parent = stack.empty() ? kNoIndex : stack.back();
            stack.push_back(i);
        }
    }
    return by_thread;
}

// Innermost op on the call's thread whose span holds the call's start.
std::uint32_t enclosing_op(const Trace& trace, const std::vector<std::uint32_t>& ops, Nanos ts) {
    auto it = std::upper_bound(ops.begin(), ops.end(), ts,
                               [&](Nanos t, std::uint32_t i) { return t < trace.cpu_ops[i].ts; });
    if (it == ops.begin()) return kNoIndex;
    std::uint32_t candidate = *(it - 1);
    while (candidate != kNoIndex && !contains(trace.cpu_ops[candidate], ts))
        candidate = trace.cpu_ops[candidate].parent;
    return candidate;
}

bool is_host_sync(std::string_view name) {
    return name.find("Synchronize") != std::string_view::npos;
}

bool is_graph_launch(std::string_view name) {
    return name.starts_with("cudaGraphLaunch") || name.starts_with("hipGraphLaunch");
}

bool is_stream_wait(std::string_view name) {
    return name.starts_with("cudaStreamWaitEvent") || name.starts_with("hipStreamWaitEvent");
}

bool is_event_record(std::string_view name) {
    return name.starts_with("cudaEventRecord") || name.starts_with("hipEventRecord");
}

}  // namespace

const char* to_string(LinkState state) {
    switch (state) {
        case LinkState::Linked:
            return "linked";
        case LinkState::NoLaunch:
            return "no runtime launch with this correlation id";
        case LinkState::NoOp:
            return "launch has no enclosing CPU op";
    }
    return "?";
}

KernelGraph KernelGraph::build(Trace& trace) {
    KernelGraph graph;
    graph.trace_ = &trace;
    auto ops_by_thread = nest_ops(trace);

    std::unordered_map<std::int64_t, std::uint32_t> op_by_external;
    for (std::uint32_t i = 0; i < trace.cpu_ops.size(); ++i) {
        const CpuOp& op = trace.cpu_ops[i];
        if (op.external_id == kNoId || op.category != 0) continue;
        auto [it, inserted] = op_by_external.emplace(op.external_id, i);
        // Keep the innermost op when ids repeat (nested ops sharing an id).
        if (!inserted && trace.cpu_ops[it->second].ts <= op.ts) it->second = i;
    }
    std::unordered_map<std::int64_t, std::uint32_t> launch_by_correlation;
    launch_by_correlation.reserve(trace.runtime_calls.size());
    for (std::uint32_t i = 0; i < trace.runtime_calls.size(); ++i)
        if (trace.runtime_calls[i].correlation != kNoId)
            launch_by_correlation.emplace(trace.runtime_calls[i].correlation, i);

    std::unordered_map<std::uint32_t, std::uint32_t> fanout;
    graph.nodes_.resize(trace.activities.size());
    for (std::uint32_t i = 0; i < trace.activities.size(); ++i) {
        const GpuActivity& a = trace.activities[i];
        GraphNode& node = graph.nodes_[i];
        node.activity = i;
        if (auto it = launch_by_correlation.find(a.correlation);
            a.correlation != kNoId && it != launch_by_correlation.end()) {
            node.launch = it->second;
            ++fanout[node.launch];
            const RuntimeCall& call = trace.runtime_calls[node.launch];
            node.graph_launch = is_graph_launch(trace.names.view(call.name));
            node.driver_launch = call.is_driver;
            if (auto ops = ops_by_thread.find({call.pid, call.tid}); ops != ops_by_thread.end())
                node.op = enclosing_op(trace, ops->second, call.ts);
            if (node.op == kNoIndex && call.external_id != kNoId)
                if (auto ext = op_by_external.find(call.external_id); ext != op_by_external.end())
                    node.op = ext->second;
        }
        if (node.op == kNoIndex && a.external_id != kNoId)
            if (auto ext = op_by_external.find(a.external_id); ext != op_by_external.end())
                node.op = ext->second;
        node.link = node.launch == kNoIndex ? LinkState::NoLaunch
                    : node.op == kNoIndex   ? LinkState::NoOp
                                            : LinkState::Linked;
        // An activity with no launch but a known op (external id) is still usable for replay.
        if (node.launch == kNoIndex && node.op != kNoIndex) node.link = LinkState::Linked;
    }
    for (auto& node : graph.nodes_)
        if (node.launch != kNoIndex) node.launch_fanout = fanout[node.launch];

    std::sort(graph.nodes_.begin(), graph.nodes_.end(),
              [&](const GraphNode& x, const GraphNode& y) {
                  const Nanos lx = graph.launch_time(x), ly = graph.launch_time(y);
                  if (lx != ly) return lx < ly;
                  const GpuActivity& ax = trace.activities[x.activity];
                  const GpuActivity& ay = trace.activities[y.activity];
                  if (ax.ts != ay.ts) return ax.ts < ay.ts;
                  return x.activity < y.activity;
              });

    std::map<std::pair<std::int64_t, std::int64_t>, std::uint32_t> slot_of;
    for (std::uint32_t n = 0; n < graph.nodes_.size(); ++n) {
        GraphNode& node = graph.nodes_[n];
        const GpuActivity& a = trace.activities[node.activity];
        auto [it, inserted] = slot_of.emplace(std::make_pair(a.device, a.stream),
                                              static_cast<std::uint32_t>(graph.streams_.size()));
        if (inserted) graph.streams_.push_back(StreamTrack{a.device, a.stream, {}, 0});
        node.stream_slot = it->second;
        graph.streams_[it->second].nodes.push_back(n);
        graph.streams_[it->second].busy += a.dur;
        switch (node.link) {
            case LinkState::Linked:
                ++graph.stats_.linked;
                break;
            case LinkState::NoLaunch:
                ++graph.stats_.no_launch;
                break;
            case LinkState::NoOp:
                ++graph.stats_.no_op;
                break;
        }
        if (node.graph_launch) ++graph.stats_.graph_launched_activities;
    }
    for (auto& track : graph.streams_)
        std::stable_sort(track.nodes.begin(), track.nodes.end(),
                         [&](std::uint32_t x, std::uint32_t y) {
                             return trace.activities[graph.nodes_[x].activity].ts <
                                    trace.activities[graph.nodes_[y].activity].ts;
                         });

    // Per-thread launch order lets us infer which streams an event record / wait pair joins:
    // the record follows the producer stream's last launch, the wait precedes the waiter's next.
    std::map<ThreadKey, std::vector<std::uint32_t>> launches_by_thread;  // node indices
    for (std::uint32_t n = 0; n < graph.nodes_.size(); ++n)
        if (graph.nodes_[n].launch != kNoIndex) {
            const RuntimeCall& call = trace.runtime_calls[graph.nodes_[n].launch];
            launches_by_thread[{call.pid, call.tid}].push_back(n);
        }
    std::vector<std::uint32_t> calls(trace.runtime_calls.size());
    std::iota(calls.begin(), calls.end(), 0u);
    std::sort(calls.begin(), calls.end(), [&](std::uint32_t a, std::uint32_t b) {
        return trace.runtime_calls[a].ts < trace.runtime_calls[b].ts;
    });
    std::map<ThreadKey, std::uint32_t> last_record_producer;  // node before the latest event record
    std::uint32_t next_node = 0;
    for (std::uint32_t c : calls) {
        const RuntimeCall& call = trace.runtime_calls[c];
        const std::string_view name = trace.names.view(call.name);
        while (next_node < graph.nodes_.size() &&
               graph.launch_time(graph.nodes_[next_node]) < call.ts)
            ++next_node;
        if (is_graph_launch(name)) ++graph.stats_.graph_launches;
        if (call.is_driver) ++graph.stats_.driver_launches;
        if (is_host_sync(name)) {
            graph.syncs_.push_back(HostSync{c, next_node});
            continue;
        }
        const ThreadKey thread{call.pid, call.tid};
        auto launches = launches_by_thread.find(thread);
        if (launches == launches_by_thread.end()) continue;
        const auto& mine = launches->second;
        auto after = std::lower_bound(
            mine.begin(), mine.end(), call.ts,
            [&](std::uint32_t n, Nanos t) { return graph.launch_time(graph.nodes_[n]) < t; });
        if (is_event_record(name)) {
            if (after != mine.begin()) last_record_producer[thread] = *(after - 1);
        } else if (is_stream_wait(name)) {
            if (after == mine.end()) continue;
            auto producer = last_record_producer.find(thread);
            // roctracer records no hipEventRecord: the event was then most likely recorded
            // right after the last work this thread launched.
            if (producer == last_record_producer.end() && after == mine.begin()) continue;
            StreamWait wait;
            wait.producer =
                producer != last_record_producer.end() ? producer->second : *(after - 1);
            wait.waiter = *after;
            wait.producer_stream = trace.activities[graph.nodes_[wait.producer].activity].stream;
            wait.waiting_stream = trace.activities[graph.nodes_[wait.waiter].activity].stream;
            if (call.wait_on_stream != kNoId) {
                wait.producer_stream = call.wait_on_stream;
                wait.inferred = false;
            }
            if (wait.producer_stream != wait.waiting_stream) graph.waits_.push_back(wait);
        }
    }
    graph.stats_.waits = graph.waits_.size();
    graph.stats_.host_syncs = graph.syncs_.size();
    return graph;
}

Nanos KernelGraph::launch_time(const GraphNode& node) const {
    if (node.launch != kNoIndex) return trace_->runtime_calls[node.launch].ts;
    return trace_->activities[node.activity].ts;
}

std::vector<std::uint32_t> KernelGraph::op_chain(const GraphNode& node) const {
    std::vector<std::uint32_t> chain;
    for (std::uint32_t op = node.op; op != kNoIndex && chain.size() < 256;
         op = trace_->cpu_ops[op].parent)
        chain.push_back(op);
    return chain;
}

}  // namespace replay
