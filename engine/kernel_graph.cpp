#include "replay/kernel_graph.h"

#include <algorithm>
#include <future>
#include <map>
#include <span>

#include "replay/huge_pages.h"
#include "replay/id_map.h"
#include "sorted_runs.h"

namespace replay {
namespace {

bool contains(const CpuOp& op, Nanos ts) {
    return op.ts <= ts && ts <= op.ts + op.dur;
}

// What the graph builder needs to know about a runtime call's name, worked out once per name.
enum CallKind : std::uint8_t {
    kKnown = 1,
    kGraphLaunch = 2,
    kHostSync = 4,
    kStreamWait = 8,
    kEventRecord = 16
};

class CallKinds {
  public:
    explicit CallKinds(const StringPool& names) : names_(names), kinds_(names.size(), 0) {}
    std::uint8_t operator()(NameId name) {
        std::uint8_t& k = kinds_[name];
        if (k == 0) {
            const std::string_view n = names_.view(name);
            k = kKnown;
            if (n.starts_with("cudaGraphLaunch") || n.starts_with("hipGraphLaunch"))
                k |= kGraphLaunch;
            if (n.find("Synchronize") != std::string_view::npos) k |= kHostSync;
            if (n.starts_with("cudaStreamWaitEvent") || n.starts_with("hipStreamWaitEvent"))
                k |= kStreamWait;
            if (n.starts_with("cudaEventRecord") || n.starts_with("hipEventRecord"))
                k |= kEventRecord;
        }
        return k;
    }

  private:
    const StringPool& names_;
    std::vector<std::uint8_t> kinds_;
};

// Sorts one thread's ops by (start, longest first, index). Kineto writes most threads' ops in
// start order already; others (a trace of repeated copies: one sorted run per copy) are sorted on
// copied keys, comparing through the op indices would miss the cache each time, their runs merged
// where they are few.
void sort_by_start(const std::vector<CpuOp>& ops, std::span<std::uint32_t> segment) {
    // The thread's ops lie apart in the op array (other threads' in between): each pass over
    // them asks for an op a few places ahead.
    constexpr std::size_t kAhead = 16;
    const auto prefetch = [&](std::size_t i) {
        if (i + kAhead < segment.size()) __builtin_prefetch(&ops[segment[i + kAhead]]);
    };
    const auto before = [&](std::uint32_t a, std::uint32_t b) {
        const CpuOp& x = ops[a];
        const CpuOp& y = ops[b];
        if (x.ts != y.ts) return x.ts < y.ts;
        if (x.dur != y.dur) return x.dur > y.dur;
        return a < b;
    };
    bool sorted = true;
    for (std::size_t i = 1; i < segment.size() && sorted; ++i) {
        prefetch(i);
        sorted = !before(segment[i], segment[i - 1]);
    }
    if (sorted) return;
    struct Key {
        Nanos ts, dur;
        std::uint32_t op;
    };
    std::vector<Key> keys(segment.size());
    for (std::size_t i = 0; i < segment.size(); ++i) {
        prefetch(i);
        keys[i] = {ops[segment[i]].ts, ops[segment[i]].dur, segment[i]};
    }
    const auto key_before = [](const Key& x, const Key& y) {
        if (x.ts != y.ts) return x.ts < y.ts;
        if (x.dur != y.dur) return x.dur > y.dur;
        return x.op < y.op;
    };
    if (!merge_sorted_runs(std::span<Key>(keys), key_before))
        std::sort(keys.begin(), keys.end(), key_before);
    for (std::size_t i = 0; i < segment.size(); ++i) segment[i] = keys[i].op;
}

// Groups ops by thread, sorts each thread's by start and sets CpuOp::parent by a nesting stack.
ThreadOps nest_ops(Trace& trace, ThreadIndex& threads) {
    ThreadOps out;
    // Counted, then placed from a slot per op: the op array (~100 MB on a 1 GB trace) is read
    // once, the slots (4 bytes an op) twice. The parser counted them as it merged the ops, where
    // it still covers them.
    std::vector<std::uint32_t> count;
    std::vector<std::uint32_t> slot_of;
    if (trace.op_threads.covers(trace.cpu_ops)) {
        OpThreads::Taken taken = trace.op_threads.take();
        threads = std::move(taken.threads);
        count = std::move(taken.counts);
        slot_of = std::move(taken.of_op);
    } else {
        slot_of.resize(trace.cpu_ops.size());
        for (std::size_t i = 0; i < trace.cpu_ops.size(); ++i) {
            const CpuOp& op = trace.cpu_ops[i];
            const std::uint32_t slot = threads.slot(op.pid, op.tid);
            if (slot >= count.size()) count.resize(slot + 1, 0);
            ++count[slot];
            slot_of[i] = slot;
        }
    }
    out.begin.assign(count.size() + 1, 0);
    for (std::size_t s = 0; s < count.size(); ++s) out.begin[s + 1] = out.begin[s] + count[s];
    out.order.resize(trace.cpu_ops.size());
    std::vector<std::uint32_t> next(out.begin.begin(), out.begin.end() - 1);
    for (std::uint32_t i = 0; i < trace.cpu_ops.size(); ++i) out.order[next[slot_of[i]]++] = i;

    std::vector<std::uint32_t> stack;
    for (std::uint32_t slot = 0; slot + 1 < out.begin.size(); ++slot) {
        const std::span<std::uint32_t> ops(out.order.data() + out.begin[slot],
                                           out.begin[slot + 1] - out.begin[slot]);
        sort_by_start(trace.cpu_ops, ops);
        stack.clear();
        for (std::size_t k = 0; k < ops.size(); ++k) {
            // In start order the ops lie apart in the op array: one asked for a few places ahead.
            if (k + 8 < ops.size()) __builtin_prefetch(&trace.cpu_ops[ops[k + 8]]);
            const std::uint32_t i = ops[k];
            CpuOp& op = trace.cpu_ops[i];
            while (!stack.empty() && !(contains(trace.cpu_ops[stack.back()], op.ts) &&
                                       op.ts + op.dur <= trace.cpu_ops[stack.back()].ts +
                                                             trace.cpu_ops[stack.back()].dur))
                stack.pop_back();
            op.parent = stack.empty() ? kNoIndex : stack.back();
            stack.push_back(i);
        }
    }
    return out;
}

// What the pass over the runtime calls finds beside the launches: the calls that order work
// (host syncs, event records, stream waits) in index order, and the launch statistics.
struct CallScan {
    std::vector<std::uint32_t> ordering;
    std::size_t graph_launches = 0, driver_launches = 0;
};

// One node per activity, in activity order, with its launch: the first runtime call carrying the
// activity's correlation id. The ids are indexed from the activities' side (fewer than the
// calls'), with how many activities share each. The activity and call arrays (~100 MB on a 1 GB
// trace) are each read once: their reads, not the index's, are what this costs.
std::vector<GraphNode> launched_nodes(const Trace& trace, CallKinds& call_kind, CallScan& scan) {
    struct Launch {
        std::uint32_t call = kNoIndex;
        std::uint32_t activities : 30 = 0;
        std::uint32_t graph_launch : 1 = 0;
        std::uint32_t driver_launch : 1 = 0;
    };
    // The ids are scattered over the table: each pass asks for the slot it will need a few
    // elements ahead, so that the cache misses overlap.
    constexpr std::size_t kAhead = 16;
    const auto& activities = trace.activities;
    const auto& calls = trace.runtime_calls;
    // Sized for every activity's id, the table never grows: its slots stay where they are, and
    // each activity keeps a pointer to its own for the last pass.
    IdMap<Launch> launches(activities.size());
    std::vector<Launch*> launch_of(activities.size(), nullptr);
    for (std::size_t i = 0; i < activities.size(); ++i) {
        if (i + kAhead < activities.size()) launches.prefetch(activities[i + kAhead].correlation);
        if (activities[i].correlation == kNoId) continue;
        Launch& l = launches.at(activities[i].correlation, {});
        ++l.activities;
        launch_of[i] = &l;
    }
    for (std::uint32_t i = 0; i < calls.size(); ++i) {
        if (i + kAhead < calls.size()) launches.prefetch(calls[i + kAhead].correlation);
        const RuntimeCall& call = calls[i];
        const std::uint8_t kind = call_kind(call.name);
        scan.graph_launches += (kind & kGraphLaunch) != 0;
        scan.driver_launches += call.is_driver;
        if (kind & (kHostSync | kStreamWait | kEventRecord)) scan.ordering.push_back(i);
        Launch* l = launches.find(call.correlation);
        if (l == nullptr || l->call != kNoIndex) continue;
        l->call = i;
        l->graph_launch = (kind & kGraphLaunch) != 0;
        l->driver_launch = call.is_driver;
    }

    auto nodes = huge_page_vector<GraphNode>(activities.size());
    for (std::uint32_t i = 0; i < activities.size(); ++i) {
        if (i + kAhead < activities.size() && launch_of[i + kAhead] != nullptr)
            __builtin_prefetch(launch_of[i + kAhead]);
        GraphNode& node = nodes[i];
        node.activity = i;
        const Launch* l = launch_of[i];
        if (l == nullptr || l->call == kNoIndex) continue;
        node.launch = l->call;
        node.launch_fanout = l->activities;
        node.graph_launch = l->graph_launch;
        node.driver_launch = l->driver_launch;
    }
    return nodes;
}

// Orders nodes by (launch time, GPU start, activity index): the order every consumer walks.
void sort_by_launch(const KernelGraph& graph, std::vector<GraphNode>& nodes) {
    struct Key {
        Nanos launch, start;
        std::uint32_t node;
    };
    auto keys = huge_page_vector<Key>(nodes.size());
    const auto& calls = graph.trace().runtime_calls;
    for (std::uint32_t n = 0; n < nodes.size(); ++n) {
        if (n + 16 < nodes.size() && nodes[n + 16].launch != kNoIndex)
            __builtin_prefetch(&calls[nodes[n + 16].launch].ts);
        keys[n] = {graph.launch_time(nodes[n]), graph.activity(nodes[n]).ts, n};
    }
    // Nodes are still in activity order: the node index breaks ties as the activity index would.
    const auto before = [](const Key& x, const Key& y) {
        if (x.launch != y.launch) return x.launch < y.launch;
        if (x.start != y.start) return x.start < y.start;
        return x.node < y.node;
    };
    if (std::is_sorted(keys.begin(), keys.end(), before)) return;
    // A trace of repeated copies comes in a sorted run per copy (a few hundred).
    if (!merge_sorted_runs(std::span<Key>(keys), before))
        std::sort(keys.begin(), keys.end(), before);
    // Gathered into a new array rather than permuted in place: the loads are independent of
    // one another (a permutation's cycles chain each load on the one before), so their cache
    // misses overlap.
    auto sorted = huge_page_vector<GraphNode>(nodes.size());
    for (std::size_t i = 0; i < keys.size(); ++i) {
        if (i + 16 < keys.size()) __builtin_prefetch(&nodes[keys[i + 16].node]);
        sorted[i] = nodes[keys[i].node];
    }
    nodes = std::move(sorted);
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

KernelGraph KernelGraph::build(Trace& trace, unsigned threads,
                               const std::function<void(const ThreadOps&)>& after_nesting,
                               const std::function<void()>& beside_nesting,
                               const std::function<void(const KernelGraph&)>& once_linked) {
    KernelGraph graph;
    graph.trace_ = &trace;
    // The ops' nesting (then `after_nesting`) and the activities' launches are independent: the
    // nesting on a worker thread. The launches' sweep needs the nesting's order, read by both
    // threads once it is done.
    ThreadIndex thread_slots;
    ThreadOps thread_ops;
    std::promise<void> nested;  // outlives `beside`, whose end the destructor waits for
    std::future<void> beside;
    CallKinds call_kind(trace.names);
    CallScan calls;
    if (threads > 1) {
        std::future<void> nested_ops = nested.get_future();
        beside = std::async(std::launch::async, [&] {
            try {
                thread_ops = nest_ops(trace, thread_slots);
                nested.set_value();
            } catch (...) {
                nested.set_exception(std::current_exception());
                return;
            }
            if (after_nesting) after_nesting(thread_ops);
        });
        if (beside_nesting) beside_nesting();
        graph.nodes_ = launched_nodes(trace, call_kind, calls);
        sort_by_launch(graph, graph.nodes_);
        nested_ops.get();
    } else {
        thread_ops = nest_ops(trace, thread_slots);
        if (beside_nesting) beside_nesting();
        if (after_nesting) after_nesting(thread_ops);
        graph.nodes_ = launched_nodes(trace, call_kind, calls);
        sort_by_launch(graph, graph.nodes_);
    }

    // The innermost op on the launching thread whose span holds the launch. Nodes come in launch
    // order, so each thread's sorted ops are swept once, keeping the chain of the op that
    // started last (it and its ancestors): an op that ended before one launch cannot hold a
    // later one and leaves the chain for good, so deep nesting is walked once, not per launch.
    struct Sweep {
        std::uint32_t next = 0;            // position in thread_ops.order
        std::vector<std::uint32_t> chain;  // outermost first
    };
    std::vector<Sweep> sweeps(thread_ops.begin.size());
    for (std::size_t slot = 0; slot < sweeps.size(); ++slot)
        sweeps[slot].next = thread_ops.begin[slot];
    std::size_t without_op = 0;
    // Each launching node's thread slot, for the ordering calls below (its call is read here
    // anyway; there it would be a second cache miss per node).
    std::vector<std::uint32_t> node_slot(graph.nodes_.size(), kNoIndex);
    for (GraphNode& node : graph.nodes_) {
        if (node.launch == kNoIndex) {
            ++without_op;
            continue;
        }
        const RuntimeCall& call = trace.runtime_calls[node.launch];
        const std::uint32_t slot = thread_slots.slot(call.pid, call.tid);
        node_slot[static_cast<std::size_t>(&node - graph.nodes_.data())] = slot;
        if (thread_ops.of(slot).empty()) {
            ++without_op;
            continue;
        }
        Sweep& sweep = sweeps[slot];
        const std::uint32_t end = thread_ops.begin[slot + 1];
        for (; sweep.next < end && trace.cpu_ops[thread_ops.order[sweep.next]].ts <= call.ts;
             ++sweep.next) {
            // Ops of one thread in start order can lie far apart in the op array.
            if (sweep.next + 8 < end)
                __builtin_prefetch(&trace.cpu_ops[thread_ops.order[sweep.next + 8]]);
            const std::uint32_t op = thread_ops.order[sweep.next];
            // Its parent is on the chain: it holds the op, so it had not ended at any earlier
            // launch (those came before the op's start).
            while (!sweep.chain.empty() && sweep.chain.back() != trace.cpu_ops[op].parent)
                sweep.chain.pop_back();
            sweep.chain.push_back(op);
        }
        while (!sweep.chain.empty() && !contains(trace.cpu_ops[sweep.chain.back()], call.ts))
            sweep.chain.pop_back();
        node.op = sweep.chain.empty() ? kNoIndex : sweep.chain.back();
        without_op += node.op == kNoIndex;
    }

    // Nodes without an enclosing op fall back to the innermost cpu_op (latest start) carrying
    // the launch's External id, then the activity's. Only the ids asked for are indexed.
    if (without_op > 0) {
        IdMap<std::uint32_t> by_external(2 * without_op);
        for (const GraphNode& node : graph.nodes_) {
            if (node.op != kNoIndex) continue;
            if (node.launch != kNoIndex && trace.runtime_calls[node.launch].external_id != kNoId)
                by_external.at(trace.runtime_calls[node.launch].external_id, kNoIndex);
            if (trace.activities[node.activity].external_id != kNoId)
                by_external.at(trace.activities[node.activity].external_id, kNoIndex);
        }
        for (std::uint32_t i = 0; i < trace.cpu_ops.size(); ++i) {
            const CpuOp& op = trace.cpu_ops[i];
            if (op.category != 0) continue;
            if (std::uint32_t* found = by_external.find(op.external_id))
                if (*found == kNoIndex || trace.cpu_ops[*found].ts <= op.ts) *found = i;
        }
        for (GraphNode& node : graph.nodes_) {
            if (node.op != kNoIndex) continue;
            for (std::int64_t id :
                 {node.launch != kNoIndex ? trace.runtime_calls[node.launch].external_id : kNoId,
                  trace.activities[node.activity].external_id}) {
                if (const std::uint32_t* op = by_external.find(id); op && *op != kNoIndex) {
                    node.op = *op;
                    break;
                }
            }
        }
    }

    std::map<std::pair<std::int64_t, std::int64_t>, std::uint32_t> slot_of;
    std::vector<std::uint32_t> per_stream;
    std::vector<Nanos> busy;  // per stream, summed here where each activity is read anyway
    std::uint32_t last_slot = 0;
    for (GraphNode& node : graph.nodes_) {
        node.link = node.launch == kNoIndex ? LinkState::NoLaunch
                    : node.op == kNoIndex   ? LinkState::NoOp
                                            : LinkState::Linked;
        // An activity with no launch but a known op (external id) is still usable for replay.
        if (node.launch == kNoIndex && node.op != kNoIndex) node.link = LinkState::Linked;
        const GpuActivity& a = trace.activities[node.activity];
        const StreamTrack* last = graph.streams_.empty() ? nullptr : &graph.streams_[last_slot];
        if (last == nullptr || last->device != a.device || last->stream != a.stream) {
            auto [it, inserted] =
                slot_of.try_emplace(std::make_pair(a.device, a.stream),
                                    static_cast<std::uint32_t>(graph.streams_.size()));
            if (inserted) {
                graph.streams_.push_back(StreamTrack{a.device, a.stream, {}, 0});
                per_stream.push_back(0);
                busy.push_back(0);
            }
            last_slot = it->second;
        }
        node.stream_slot = last_slot;
        ++per_stream[last_slot];
        busy[last_slot] += a.dur;
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
    for (std::size_t s = 0; s < graph.streams_.size(); ++s) {
        graph.streams_[s].nodes.reserve(per_stream[s]);
        graph.streams_[s].busy = busy[s];
    }
    for (std::uint32_t n = 0; n < graph.nodes_.size(); ++n)
        graph.streams_[graph.nodes_[n].stream_slot].nodes.push_back(n);
    // In GPU start order; a stream runs its work in launch order, so this is mostly sorted.
    for (auto& track : graph.streams_) {
        const auto start = [&](std::uint32_t n) { return graph.activity(graph.nodes_[n]).ts; };
        const auto before = [&](std::uint32_t x, std::uint32_t y) { return start(x) < start(y); };
        if (!std::is_sorted(track.nodes.begin(), track.nodes.end(), before))
            std::stable_sort(track.nodes.begin(), track.nodes.end(), before);
    }

    // Host syncs, event records and stream waits, in time order (index order on equal times).
    graph.stats_.graph_launches = calls.graph_launches;
    graph.stats_.driver_launches = calls.driver_launches;
    std::vector<std::uint32_t>& ordering_calls = calls.ordering;
    std::stable_sort(ordering_calls.begin(), ordering_calls.end(),
                     [&](std::uint32_t a, std::uint32_t b) {
                         return trace.runtime_calls[a].ts < trace.runtime_calls[b].ts;
                     });
    // Per-thread launch order lets us infer which streams an event record / wait pair joins:
    // the record follows the producer stream's last launch, the wait precedes the waiter's next.
    std::vector<std::vector<std::uint32_t>> launches_by_thread;  // node indices, per thread slot
    if (!ordering_calls.empty()) {
        launches_by_thread.resize(thread_slots.size());
        for (std::uint32_t n = 0; n < graph.nodes_.size(); ++n)
            if (graph.nodes_[n].launch != kNoIndex) {
                const std::uint32_t slot = node_slot[n];
                if (slot >= launches_by_thread.size()) launches_by_thread.resize(slot + 1);
                launches_by_thread[slot].push_back(n);
            }
    }
    std::map<std::uint32_t, std::uint32_t> last_record_producer;  // thread slot -> node
    std::uint32_t next_node = 0;
    for (std::uint32_t c : ordering_calls) {
        const RuntimeCall& call = trace.runtime_calls[c];
        const std::uint8_t kind = call_kind(call.name);
        while (next_node < graph.nodes_.size() &&
               graph.launch_time(graph.nodes_[next_node]) < call.ts)
            ++next_node;
        if (kind & kHostSync) {
            graph.syncs_.push_back(HostSync{c, next_node});
            continue;
        }
        const std::uint32_t thread = thread_slots.slot(call.pid, call.tid);
        if (thread >= launches_by_thread.size() || launches_by_thread[thread].empty()) continue;
        const auto& mine = launches_by_thread[thread];
        auto after = std::lower_bound(
            mine.begin(), mine.end(), call.ts,
            [&](std::uint32_t n, Nanos t) { return graph.launch_time(graph.nodes_[n]) < t; });
        if (kind & kEventRecord) {
            if (after != mine.begin()) last_record_producer[thread] = *(after - 1);
        } else if (kind & kStreamWait) {
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
    if (once_linked) once_linked(graph);
    if (beside.valid()) beside.get();
    return graph;
}

Nanos KernelGraph::launch_time(const GraphNode& node) const {
    if (node.launch != kNoIndex) return trace_->runtime_calls[node.launch].ts;
    return trace_->activities[node.activity].ts;
}

std::vector<std::uint32_t> KernelGraph::op_chain(const GraphNode& node) const {
    std::vector<std::uint32_t> chain;
    visit_op_chain(node, [&](std::uint32_t op) {
        chain.push_back(op);
        return true;
    });
    return chain;
}

}  // namespace replay
