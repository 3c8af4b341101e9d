// Builds the simulator's model of a trace: threads and their runtime calls with the CPU gaps
// between them, what each launch and each blocking call depends on, and the step ranges.
#include "simulation_model.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <string_view>

namespace replay {
namespace {

using ThreadKey = std::pair<std::int64_t, std::int64_t>;

// Recorded times closer than this are not told apart (older traces round to whole microseconds).
constexpr Nanos kClockTolerance = 2000;

bool starts_with_any(std::string_view name, std::initializer_list<std::string_view> prefixes) {
    for (auto p : prefixes)
        if (name.starts_with(p)) return true;
    return false;
}

// What a host synchronisation waits for (CUDA and HIP spellings).
enum class SyncScope { Device, Stream, Event };
SyncScope sync_scope(std::string_view name) {
    if (name.find("StreamSynchronize") != std::string_view::npos) return SyncScope::Stream;
    if (name.find("EventSynchronize") != std::string_view::npos) return SyncScope::Event;
    return SyncScope::Device;
}

bool is_event_record(std::string_view name) {
    return starts_with_any(name, {"cudaEventRecord", "hipEventRecord"});
}

// Per stream track: its nodes in recorded order and, at each position, the largest node index
// up to there, so that "the last node on this stream launched before node b" is one search.
struct TrackIndex {
    std::vector<std::uint32_t> prefix_max;
    // Position of the last node such that it and every node before it were launched before
    // `before_node`; -1 when there is none.
    std::ptrdiff_t last_before(std::uint32_t before_node) const {
        auto it = std::lower_bound(prefix_max.begin(), prefix_max.end(), before_node);
        return (it - prefix_max.begin()) - 1;
    }
};

class ModelBuilder {
  public:
    ModelBuilder(StepSimulator::Model& model, const KernelGraph& graph)
        : m_(model), graph_(graph), trace_(graph.trace()) {}

    void build() {
        m_.graph = &graph_;
        collect_threads();
        link_nodes();
        find_host_syncs();
        find_blocking_copies();
        find_wakes();
        find_steps();
    }

  private:
    std::uint32_t thread_of(std::int64_t pid, std::int64_t tid, Nanos ts, Nanos end) {
        auto [it, inserted] = thread_index_.emplace(ThreadKey{pid, tid},
                                                    static_cast<std::uint32_t>(m_.threads.size()));
        if (inserted) {
            SimThread t;
            t.pid = pid;
            t.tid = tid;
            t.origin = ts;
            t.last_end = end;
            m_.threads.push_back(std::move(t));
        }
        SimThread& t = m_.threads[it->second];
        t.origin = std::min(t.origin, ts);
        t.last_end = std::max(t.last_end, end);
        return it->second;
    }

    void collect_threads() {
        for (const CpuOp& op : trace_.cpu_ops) {
            const std::uint32_t t = thread_of(op.pid, op.tid, op.ts, op.ts + op.dur);
            // RecordFunction ranges (cpu_op, user_annotation) carry the profiler's per-op cost;
            // python_function events come from the Python tracer and are not counted.
            if (op.category <= 1) m_.threads[t].op_starts.push_back(op.ts);
        }
        for (std::uint32_t i = 0; i < trace_.runtime_calls.size(); ++i) {
            const RuntimeCall& c = trace_.runtime_calls[i];
            SimCall call;
            call.ts = c.ts;
            call.dur = std::max<Nanos>(c.dur, 0);
            call.free_dur = call.dur;
            call.thread = thread_of(c.pid, c.tid, c.ts, c.ts + call.dur);
            m_.threads[call.thread].calls.push_back(i);
            m_.calls.push_back(call);
        }
        for (SimThread& t : m_.threads) {
            std::sort(t.op_starts.begin(), t.op_starts.end());
            std::sort(t.calls.begin(), t.calls.end(), [&](std::uint32_t a, std::uint32_t b) {
                const SimCall& x = m_.calls[a];
                const SimCall& y = m_.calls[b];
                if (x.ts != y.ts) return x.ts < y.ts;
                if (x.dur != y.dur) return x.dur > y.dur;
                return a < b;
            });
            for (std::uint32_t p = 0; p < t.calls.size(); ++p) {
                SimCall& c = m_.calls[t.calls[p]];
                c.position = p;
                if (p == 0) {
                    c.gap = c.ts - t.origin;
                    c.ops_in_gap = t.ops_between(t.origin, c.ts, true);
                } else {
                    const SimCall& prev = m_.calls[t.calls[p - 1]];
                    c.gap = c.ts - (prev.ts + prev.dur);
                    c.ops_in_gap = c.gap > 0 ? t.ops_between(prev.ts + prev.dur, c.ts, false) : 0;
                }
            }
        }
    }

    void link_nodes() {
        const auto& nodes = graph_.nodes();
        m_.nodes.assign(nodes.size(), SimNode{});
        launched_by_thread_.assign(m_.threads.size(), {});
        launch_count_.assign(m_.calls.size(), 0);
        for (std::uint32_t n = 0; n < nodes.size(); ++n) {
            if (nodes[n].launch == kNoIndex) {
                ++m_.unlinked_activities;
                continue;
            }
            const std::uint32_t k = nodes[n].launch;
            m_.nodes[n].launch = k;
            ++launch_count_[k];
            if (graph_.activity(nodes[n]).kind == ActivityKind::Kernel)
                m_.calls[k].kernel_launch = true;
            launched_by_thread_[m_.calls[k].thread].push_back(n);
        }
        for (std::uint32_t k = 0; k < m_.calls.size(); ++k)
            m_.calls[k].graph_launch = launch_count_[k] > 1;
        tracks_.resize(graph_.streams().size());
        for (std::size_t s = 0; s < graph_.streams().size(); ++s) {
            const auto& track = graph_.streams()[s].nodes;
            std::uint32_t running = 0;
            for (std::size_t p = 0; p < track.size(); ++p) {
                if (p > 0) m_.nodes[track[p]].stream_prev = track[p - 1];
                running = std::max(running, track[p]);
                tracks_[s].prefix_max.push_back(running);
            }
        }
        // A wait whose waiter started before its producer ended did not hold it back: the graph
        // infers waits from launch order, and this one paired the wrong launches. The tolerance
        // covers traces with whole-microsecond times, where start and duration round apart.
        for (const StreamWait& w : graph_.waits()) {
            if (w.producer == w.waiter || w.producer >= nodes.size() || w.waiter >= nodes.size())
                continue;
            if (m_.node_ts(w.waiter) + kClockTolerance < m_.node_end(w.producer)) {
                ++m_.waits_contradicted;
                continue;
            }
            m_.nodes[w.waiter].producers.push_back(Producer{w.producer, kGpuGap});
        }
    }

    // The last node `thread` launched before node index `before_node`, or kNoIndex.
    std::uint32_t last_launched(std::uint32_t thread, std::uint32_t before_node) const {
        const auto& mine = launched_by_thread_[thread];
        auto it = std::lower_bound(mine.begin(), mine.end(), before_node);
        return it == mine.begin() ? kNoIndex : *(it - 1);
    }

    void add_last_on_stream(std::vector<std::uint32_t>& frontier, std::uint32_t slot,
                            std::uint32_t before_node) const {
        const std::ptrdiff_t p = tracks_[slot].last_before(before_node);
        if (p >= 0) frontier.push_back(graph_.streams()[slot].nodes[static_cast<std::size_t>(p)]);
    }

    // Marks a call blocking on `frontier` when the recording agrees that it waited for it.
    void make_blocking(SimCall& call, std::vector<std::uint32_t> frontier, bool is_sync) {
        if (frontier.empty()) return;  // nothing was pending: an ordinary call
        Nanos done = 0;
        for (auto n : frontier) done = std::max(done, m_.node_end(n));
        const Nanos end = call.ts + call.dur;
        if (done > end + kClockTolerance) {
            // It returned before the work we think it waited for: another target (a stream or
            // event the trace does not name) or clocks apart. Keep its recorded duration.
            if (is_sync) ++m_.syncs_without_target;
            return;
        }
        call.blocking = true;
        call.frontier = std::move(frontier);
        call.return_overhead = std::max<Nanos>(0, end - std::max(call.ts, done));
    }

    void find_host_syncs() {
        for (const HostSync& sync : graph_.host_syncs()) {
            SimCall& call = m_.calls[sync.runtime_call];
            const RuntimeCall& rc = trace_.runtime_calls[sync.runtime_call];
            const std::string_view name = trace_.names.view(rc.name);
            std::vector<std::uint32_t> frontier;
            switch (sync_scope(name)) {
                case SyncScope::Device:
                    for (std::uint32_t s = 0; s < tracks_.size(); ++s)
                        add_last_on_stream(frontier, s, sync.before_node);
                    break;
                case SyncScope::Stream: {
                    // The stream argument when the trace has it, else the stream this thread
                    // last launched onto (PyTorch synchronises its current stream).
                    std::uint32_t slot = kNoIndex;
                    const std::uint32_t last = last_launched(call.thread, sync.before_node);
                    if (rc.wait_on_stream != kNoId) {
                        for (std::uint32_t s = 0; s < graph_.streams().size(); ++s)
                            if (graph_.streams()[s].stream == rc.wait_on_stream) slot = s;
                    } else if (last != kNoIndex) {
                        slot = graph_.nodes()[last].stream_slot;
                    }
                    if (slot != kNoIndex) {
                        add_last_on_stream(frontier, slot, sync.before_node);
                    } else {
                        for (std::uint32_t s = 0; s < tracks_.size(); ++s)
                            add_last_on_stream(frontier, s, sync.before_node);
                    }
                    break;
                }
                case SyncScope::Event: {
                    // The event this thread recorded last: it follows the last launch before it.
                    const std::uint32_t node = event_producer(call);
                    if (node != kNoIndex) frontier.push_back(node);
                    break;
                }
            }
            make_blocking(call, std::move(frontier), true);
        }
    }

    std::uint32_t event_producer(const SimCall& sync) const {
        const SimThread& t = m_.threads[sync.thread];
        Nanos cutoff = sync.ts;
        for (std::uint32_t p = sync.position; p-- > 0;) {
            const SimCall& c = m_.calls[t.calls[p]];
            if (is_event_record(trace_.names.view(trace_.runtime_calls[t.calls[p]].name))) {
                cutoff = c.ts;
                break;
            }
        }
        // Node indices follow launch order, so this thread's launches are sorted by time too.
        const auto& mine = launched_by_thread_[sync.thread];
        auto it = std::partition_point(mine.begin(), mine.end(), [&](std::uint32_t n) {
            return graph_.launch_time(graph_.nodes()[n]) < cutoff;
        });
        return it == mine.begin() ? kNoIndex : *(it - 1);
    }

    // A copy call that came back only after its copy was done was a blocking one (cudaMemcpy,
    // or cudaMemcpyAsync to or from pageable memory, which the driver stages synchronously).
    void find_blocking_copies() {
        std::vector<std::vector<std::uint32_t>> launched(m_.calls.size());
        std::vector<bool> only_copies(m_.calls.size(), true);
        for (std::uint32_t n = 0; n < m_.nodes.size(); ++n) {
            const std::uint32_t k = m_.nodes[n].launch;
            if (k == kNoIndex) continue;
            launched[k].push_back(n);
            if (graph_.activity(graph_.nodes()[n]).kind == ActivityKind::Kernel)
                only_copies[k] = false;
        }
        for (std::uint32_t k = 0; k < m_.calls.size(); ++k) {
            SimCall& call = m_.calls[k];
            if (call.blocking || launched[k].empty() || !only_copies[k]) continue;
            const std::string_view name = trace_.names.view(trace_.runtime_calls[k].name);
            bool pageable = false;
            for (auto n : launched[k])
                pageable |=
                    trace_.names.view(graph_.activity(graph_.nodes()[n]).name).find("Pageable") !=
                    std::string_view::npos;
            if (name.find("Async") != std::string_view::npos && !pageable) continue;
            Nanos done = 0;
            for (auto n : launched[k]) done = std::max(done, m_.node_end(n));
            if (call.ts + call.dur >= done) make_blocking(call, launched[k], false);
        }
    }

    // Idle intervals of a thread in which another thread launched GPU work, and the time before
    // a thread's first event when another thread launched before it. Idle: at least kMinIdle
    // with nothing starting or ending on the thread and no runtime call running. Enclosing
    // ranges do not count as work: the main thread waits out the backward pass inside
    // "## backward ##" or "ProfilerStep#N". The minimum keeps Python's own time between two ops,
    // which is work, out (it is tens of microseconds; waits for another thread are longer).
    void find_wakes() {
        constexpr Nanos kMinIdle = 100000;
        const std::size_t threads = m_.threads.size();
        std::vector<std::vector<Nanos>> launch_starts(threads);
        for (std::uint32_t k = 0; k < m_.calls.size(); ++k)
            if (launch_count_[k] > 0) launch_starts[m_.calls[k].thread].push_back(m_.calls[k].ts);
        for (auto& v : launch_starts) std::sort(v.begin(), v.end());
        std::vector<std::vector<Nanos>> boundaries(threads);
        for (const CpuOp& op : trace_.cpu_ops) {
            auto& b = boundaries[thread_index_.at({op.pid, op.tid})];
            b.push_back(op.ts);
            b.push_back(op.ts + op.dur);
        }
        for (const SimCall& c : m_.calls) {
            boundaries[c.thread].push_back(c.ts);
            boundaries[c.thread].push_back(c.ts + c.dur);
        }
        for (std::uint32_t t = 0; t < threads; ++t) {
            SimThread& thread = m_.threads[t];
            thread.origin_wake =
                waker(t, std::numeric_limits<Nanos>::min(), thread.origin, launch_starts);
            auto& b = boundaries[t];
            std::sort(b.begin(), b.end());
            for (std::size_t i = 1; i < b.size(); ++i) {
                if (b[i] - b[i - 1] < kMinIdle || inside_call(thread, b[i - 1], b[i])) continue;
                const WakeSource source = waker(t, b[i - 1], b[i], launch_starts);
                if (source.thread != kNoIndex) thread.wakes.push_back(Wake{b[i - 1], b[i], source});
            }
            for (std::uint32_t w = 0; w < thread.wakes.size(); ++w) {
                // The call whose gap holds the wake: the first call at or after it.
                auto it = std::partition_point(
                    thread.calls.begin(), thread.calls.end(),
                    [&](std::uint32_t k) { return m_.calls[k].ts < thread.wakes[w].at; });
                if (it != thread.calls.end()) m_.calls[*it].wake = w;
            }
        }
    }

    // Whether a runtime call of `thread` runs over all of [from, to].
    bool inside_call(const SimThread& thread, Nanos from, Nanos to) const {
        auto it = std::partition_point(thread.calls.begin(), thread.calls.end(),
                                       [&](std::uint32_t k) { return m_.calls[k].ts <= from; });
        if (it == thread.calls.begin()) return false;
        const SimCall& c = m_.calls[*(it - 1)];
        return c.ts + c.dur >= to;
    }

    // Of the other threads that launched GPU work in (from, to), the one that did so last before
    // `to`, at its last call starting before `to`.
    WakeSource waker(std::uint32_t idle, Nanos from, Nanos to,
                     const std::vector<std::vector<Nanos>>& launch_starts) const {
        WakeSource best;
        Nanos best_time = std::numeric_limits<Nanos>::min();
        for (std::uint32_t u = 0; u < m_.threads.size(); ++u) {
            if (u == idle) continue;
            const auto& starts = launch_starts[u];
            auto it = std::lower_bound(starts.begin(), starts.end(), to);
            if (it == starts.begin() || *(it - 1) <= from) continue;
            const SimThread& other = m_.threads[u];
            auto call = std::partition_point(other.calls.begin(), other.calls.end(),
                                             [&](std::uint32_t k) { return m_.calls[k].ts < to; });
            if (call == other.calls.begin()) continue;
            const SimCall& c = m_.calls[*(call - 1)];
            const bool inside = to < c.ts + c.dur;
            const Nanos last = inside ? to : c.ts + c.dur;
            if (last > best_time) {
                best_time = last;
                best = WakeSource{u, *(call - 1), inside};
            }
        }
        return best;
    }

    void find_steps() {
        std::map<std::string, std::uint32_t, std::less<>> by_name;  // name -> longest op
        for (std::uint32_t i = 0; i < trace_.cpu_ops.size(); ++i) {
            const CpuOp& op = trace_.cpu_ops[i];
            const std::string_view name = trace_.names.view(op.name);
            if (!name.starts_with("ProfilerStep#")) continue;
            auto [it, inserted] = by_name.emplace(std::string(name), i);
            if (!inserted && trace_.cpu_ops[it->second].dur < op.dur) it->second = i;
        }
        std::vector<std::uint32_t> ops;
        for (const auto& [name, i] : by_name) ops.push_back(i);
        std::sort(ops.begin(), ops.end(), [&](std::uint32_t a, std::uint32_t b) {
            return trace_.cpu_ops[a].ts < trace_.cpu_ops[b].ts;
        });
        if (!ops.empty()) {
            const CpuOp& first = trace_.cpu_ops[ops.front()];
            m_.main_thread = thread_index_.at({first.pid, first.tid});
            for (auto i : ops) {
                const CpuOp& op = trace_.cpu_ops[i];
                if (op.pid != first.pid || op.tid != first.tid) continue;
                m_.steps.push_back(
                    SimStep{std::string(trace_.names.view(op.name)), op.ts, op.ts + op.dur});
            }
            return;
        }
        // No step ranges: the main thread is the one whose recorded events span the longest
        // (Python's thread holds the whole step; helper threads come and go), more calls on a tie.
        for (std::uint32_t t = 0; t < m_.threads.size(); ++t) {
            if (m_.main_thread == kNoIndex) {
                m_.main_thread = t;
                continue;
            }
            const SimThread& a = m_.threads[t];
            const SimThread& b = m_.threads[m_.main_thread];
            const Nanos span_a = a.last_end - a.origin, span_b = b.last_end - b.origin;
            if (span_a > span_b || (span_a == span_b && a.calls.size() > b.calls.size()))
                m_.main_thread = t;
        }
    }

    StepSimulator::Model& m_;
    const KernelGraph& graph_;
    const Trace& trace_;
    std::map<ThreadKey, std::uint32_t> thread_index_;
    std::vector<std::vector<std::uint32_t>> launched_by_thread_;  // node indices, ascending
    std::vector<std::uint32_t> launch_count_;                     // per SimCall: nodes launched
    std::vector<TrackIndex> tracks_;
};

}  // namespace

void build_model(StepSimulator::Model& model, const KernelGraph& graph) {
    ModelBuilder(model, graph).build();
}

std::uint32_t SimThread::ops_between(Nanos from, Nanos to, bool inclusive) const {
    const auto lo = inclusive ? std::lower_bound(op_starts.begin(), op_starts.end(), from)
                              : std::upper_bound(op_starts.begin(), op_starts.end(), from);
    const auto hi = std::upper_bound(op_starts.begin(), op_starts.end(), to);
    return hi > lo ? static_cast<std::uint32_t>(hi - lo) : 0;
}

void add_contention_waits(StepSimulator::Model& m, Nanos launch_latency) {
    // A start later than this after everything known to hold it back is a delay to explain.
    constexpr Nanos kUnexplainedDelay = 10000;
    // ... by an activity on another stream that ended this close before it started (an event
    // wait takes 1-3 us to release a stream on NVIDIA GPUs, 15-20 us on AMD ones).
    constexpr Nanos kEndedBefore = 30000;
    // ... or was still ending: a kernel that fills the GPU lets the next one in as its last
    // blocks finish.
    constexpr Nanos kTailOverlap = 10000;
    const KernelGraph& graph = *m.graph;
    const auto& nodes = graph.nodes();
    std::map<std::int64_t, std::vector<std::pair<Nanos, std::uint32_t>>>
        ends;  // device -> (end, node)
    for (std::uint32_t n = 0; n < nodes.size(); ++n)
        ends[graph.activity(nodes[n]).device].emplace_back(m.node_end(n), n);
    for (auto& [device, list] : ends) std::sort(list.begin(), list.end());
    for (std::uint32_t n = 0; n < nodes.size(); ++n) {
        SimNode& node = m.nodes[n];
        if (node.launch == kNoIndex) continue;
        Nanos ready = m.calls[node.launch].ts + launch_latency;
        if (node.stream_prev != kNoIndex) ready = std::max(ready, m.node_end(node.stream_prev));
        for (const Producer& q : node.producers) ready = std::max(ready, m.node_end(q.node));
        const Nanos start = m.node_ts(n);
        if (start - ready <= kUnexplainedDelay) continue;
        const GpuActivity& a = graph.activity(nodes[n]);
        const auto& list = ends[a.device];
        auto it = std::upper_bound(list.begin(), list.end(),
                                   std::make_pair(start + kTailOverlap, kNoIndex));
        while (it != list.begin()) {
            --it;
            if (it->first < start - kEndedBefore) break;
            const GpuActivity& other = graph.activity(nodes[it->second]);
            if (other.stream == a.stream || other.ts >= start || it->first <= ready) continue;
            // The recorded delay after its end stays with the wait.
            node.producers.push_back(Producer{it->second, std::max<Nanos>(0, start - it->first)});
            ++m.contention_waits;
            break;
        }
    }
}

Nanos quantile(std::vector<Nanos>& samples, double q) {
    if (samples.empty()) return 0;
    const auto rank = static_cast<std::size_t>(q * static_cast<double>(samples.size() - 1) + 0.5);
    std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(rank),
                     samples.end());
    return samples[rank];
}

}  // namespace replay

namespace replay {

void add_launch_queue(StepSimulator::Model& m) {
    // A queue never seen this full says nothing about its depth.
    constexpr std::size_t kMinDepth = 64;
    constexpr std::size_t kMinEvidence = 5;
    // "Far longer than usual": this many times the median launch call.
    constexpr Nanos kSlowFactor = 10;
    const KernelGraph& graph = *m.graph;
    const auto& nodes = graph.nodes();
    // Per device: its nodes in launch order and their recorded ends, sorted.
    std::map<std::int64_t, std::vector<std::uint32_t>> launched;
    std::map<std::int64_t, std::vector<Nanos>> ends;
    for (std::uint32_t n = 0; n < nodes.size(); ++n) {
        if (m.nodes[n].launch == kNoIndex) continue;
        const std::int64_t device = graph.activity(nodes[n]).device;
        launched[device].push_back(n);
        ends[device].push_back(m.node_end(n));
    }
    for (auto& [device, v] : ends) std::sort(v.begin(), v.end());

    struct Launch {
        std::uint32_t call;
        std::int64_t device;
        std::size_t position;  // of its first node in the device's launch order
        std::size_t pending;   // launched, not finished, when it returned
    };
    std::vector<Launch> launches;
    std::vector<Nanos> durations;
    std::vector<bool> seen(m.calls.size(), false);
    std::size_t most_pending = 0;
    for (auto& [device, order] : launched) {
        const auto& finished = ends[device];
        for (std::size_t p = 0; p < order.size(); ++p) {
            const std::uint32_t k = m.nodes[order[p]].launch;
            if (seen[k] || m.calls[k].blocking) continue;
            seen[k] = true;
            const Nanos back = m.calls[k].ts + m.calls[k].dur;
            const auto started = static_cast<std::size_t>(
                std::partition_point(
                    order.begin(), order.end(),
                    [&](std::uint32_t n) { return graph.launch_time(nodes[n]) < back; }) -
                order.begin());
            const auto done = static_cast<std::size_t>(
                std::upper_bound(finished.begin(), finished.end(), back) - finished.begin());
            const std::size_t pending = started > done ? started - done : 0;
            most_pending = std::max(most_pending, pending);
            launches.push_back(Launch{k, device, p, pending});
            durations.push_back(m.calls[k].dur);
        }
    }
    if (launches.empty() || most_pending < kMinDepth) return;
    const Nanos typical = quantile(durations, 0.5);
    std::vector<Nanos> depths, returns;
    std::vector<bool> full(launches.size(), false);
    for (std::size_t i = 0; i < launches.size(); ++i) {
        const Launch& l = launches[i];
        if (m.calls[l.call].dur <= kSlowFactor * typical || l.pending * 10 < most_pending * 9)
            continue;
        full[i] = true;
        depths.push_back(static_cast<Nanos>(l.pending));
    }
    if (depths.size() < kMinEvidence) return;
    const auto depth = static_cast<std::size_t>(quantile(depths, 0.5));
    m.queue_depth = depth;
    for (std::size_t i = 0; i < launches.size(); ++i) {
        const Launch& l = launches[i];
        // It came back with `depth` activities pending, its own included: the one launched
        // `depth` launches before it had just ended.
        if (l.position < depth) continue;
        SimCall& call = m.calls[l.call];
        call.queue_node = launched[l.device][l.position - depth];
        if (!full[i]) continue;
        ++m.queue_full_launches;
        call.free_dur = std::min(call.dur, typical);
        call.queue_return = std::max<Nanos>(0, call.ts + call.dur - m.node_end(call.queue_node));
    }
}

}  // namespace replay
