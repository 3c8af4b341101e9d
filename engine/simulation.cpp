// The discrete-event simulation proper: events (a call starts, a call returns, an activity runs)
// are taken in order as their dependencies complete, each at the earliest time its dependencies
// allow; then each step's time and its critical path.
#include "replay/simulation.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <queue>
#include <stdexcept>

#include "simulation_model.h"

namespace replay {
namespace {

using Model = StepSimulator::Model;

// What fixed an activity's start.
enum class Bind : std::uint8_t {
    Launch,  // its launch call's start + launch latency
    Stream,  // its stream predecessor's end + GPU gap
    Wait,    // a cross-stream producer's end + GPU gap
    Anchor,  // nothing known: its recorded start
};

enum class Bucket : std::uint8_t {
    HostWork,
    RuntimeCalls,
    LaunchLatency,
    GpuActivity,
    GpuGap,
    Sync,
    Unexplained
};

// The CriticalPath field of each Bucket, in the enum's order.
constexpr Nanos CriticalPath::*kBucketField[] = {
    &CriticalPath::host_work,    &CriticalPath::runtime_calls, &CriticalPath::launch_latency,
    &CriticalPath::gpu_activity, &CriticalPath::gpu_gap,       &CriticalPath::sync,
    &CriticalPath::unexplained};

void add(CriticalPath& path, Bucket bucket, Nanos t) {
    path.*kBucketField[static_cast<std::size_t>(bucket)] += t;
}

class Simulation {
  public:
    Simulation(const Model& m, const Scenario& s, const ModelParameters& p)
        : m_(m),
          s_(s),
          p_(p),
          calls_(m.calls.size()),
          nodes_(m.nodes.size()),
          threads_(m.threads.size()),
          thread_start_(threads_),
          call_start_(calls_),
          call_end_(calls_),
          woken_(calls_, false),
          waited_on_(calls_, kNoIndex),
          node_start_(nodes_),
          node_end_(nodes_),
          bind_(nodes_, Bind::Anchor),
          bind_ref_(nodes_, kNoIndex),
          done_(threads_ + 2 * calls_ + nodes_, false) {}

    Prediction run() {
        simulate_events();
        Prediction out;
        out.stats = stats_;
        out.stats.threads = threads_;
        out.stats.runtime_calls = calls_;
        out.stats.unlinked_activities = m_.unlinked_activities;
        out.stats.syncs_without_target = m_.syncs_without_target;
        out.stats.waits_contradicted = m_.waits_contradicted;
        out.stats.contention_waits = m_.contention_waits;
        out.stats.launch_queue_depth = m_.queue_depth;
        out.stats.queue_full_launches = m_.queue_full_launches;
        for (const SimThread& t : m_.threads) out.stats.thread_wakes += t.wakes.size();
        for (const SimCall& c : m_.calls) {
            out.stats.kernel_launch_calls += c.kernel_launch;
            out.stats.blocking_calls += c.blocking;
        }
        out.call_start = call_start_;
        out.call_end = call_end_;
        out.node_start = node_start_;
        out.node_end = node_end_;
        if (m_.main_thread != kNoIndex) {
            out.main_pid = m_.threads[m_.main_thread].pid;
            out.main_tid = m_.threads[m_.main_thread].tid;
        }
        add_steps(out.steps);
        return out;
    }

  private:
    // ---- the critical path's points ------------------------------------------------------

    enum class At : std::uint8_t { ThreadStart, CallStart, CallEnd, NodeStart, NodeEnd, None };
    struct Point {
        At at = At::None;  // None: a point kept at its recorded time, where the walk ends
        std::uint32_t index = kNoIndex;
    };
    struct Edge {
        Point from;
        Bucket bucket = Bucket::Unexplained;
    };

    // ---- CPU time ------------------------------------------------------------------------

    // Recorded CPU time, less the profiler's overhead of the ops started in it in a corrected
    // run (never below zero). `count` adds it to the statistics (once per simulated gap).
    Nanos cpu_time(Nanos recorded, std::uint32_t ops, bool count) {
        if (recorded <= 0) return recorded;
        if (!s_.remove_op_overhead || ops == 0) return on_host(recorded);
        const Nanos cut = static_cast<Nanos>(ops) * p_.op_overhead;
        if (count) {
            stats_.ops_in_gaps += ops;
            stats_.overhead_removed += std::min(cut, recorded);
            stats_.gaps_clamped += cut > recorded;
        }
        return on_host(std::max<Nanos>(0, recorded - cut));
    }

    // A recorded CPU duration on the scenario's host.
    Nanos on_host(Nanos recorded) const {
        if (s_.cpu_scale == 1) return recorded;
        return static_cast<Nanos>(std::llround(static_cast<double>(recorded) * s_.cpu_scale));
    }

    // Where thread `source.thread` is, on the predicted timeline, at its recorded time `t`.
    Nanos on_thread(const WakeSource& source, Nanos t) {
        const SimThread& u = m_.threads[source.thread];
        if (source.call == kNoIndex)
            return thread_start_[source.thread] +
                   cpu_time(t - u.origin, u.ops_between(u.origin, t, true), false);
        const SimCall& c = m_.calls[source.call];
        if (source.inside_call) return call_start_[source.call] + on_host(t - c.ts);
        return call_end_[source.call] +
               cpu_time(t - (c.ts + c.dur), u.ops_between(c.ts + c.dur, t, false), false);
    }

    Point source_point(const WakeSource& source) const {
        if (source.call == kNoIndex) return {At::ThreadStart, source.thread};
        return {source.inside_call ? At::CallStart : At::CallEnd, source.call};
    }

    // The predicted end of what precedes recorded position `position` on `thread` (its previous
    // call, or the thread's start) and that thing's recorded end.
    std::pair<Nanos, Nanos> before(const SimThread& t, std::uint32_t thread,
                                   std::uint32_t position) const {
        if (position == 0) return {thread_start_[thread], t.origin};
        const std::uint32_t prev = t.calls[position - 1];
        const Nanos recorded = m_.calls[prev].ts + m_.calls[prev].dur;
        return {done_[call_end_item(prev)] ? call_end_[prev] : recorded, recorded};
    }

    // When a thread resumes from `wake`, idle since after its predecessor (predicted end
    // `prev_end`, recorded `prev_recorded`): as soon as both its own work before the idle
    // interval is done and the waking thread has got to the wake.
    std::pair<Nanos, bool> resume(const Wake& wake, Nanos prev_end, Nanos prev_recorded,
                                  const SimThread& t, bool first, bool count) {
        const Nanos own =
            prev_end + cpu_time(wake.idle_from - prev_recorded,
                                t.ops_between(prev_recorded, wake.idle_from, first), count);
        const Nanos other = on_thread(wake.source, wake.at);
        return {std::max(own, other), other > own};
    }

    // ---- events --------------------------------------------------------------------------
    // Item i: [0, T) a thread starts, then [T, T + C) a call starts, [T + C, T + 2C) a call
    // returns, [T + 2C, T + 2C + N) an activity runs.

    std::size_t thread_item(std::size_t t) const { return t; }
    std::size_t call_start_item(std::size_t k) const { return threads_ + k; }
    std::size_t call_end_item(std::size_t k) const { return threads_ + calls_ + k; }
    std::size_t node_item(std::size_t n) const { return threads_ + 2 * calls_ + n; }
    std::size_t item_of(Point p) const {
        switch (p.at) {
            case At::ThreadStart:
                return thread_item(p.index);
            case At::CallStart:
                return call_start_item(p.index);
            case At::CallEnd:
                return call_end_item(p.index);
            case At::NodeStart:
            case At::NodeEnd:
                return node_item(p.index);
            case At::None:
                break;
        }
        return kNoIndex;
    }

    Nanos recorded_time(std::size_t item) const {
        if (item < threads_) return m_.threads[item].origin;
        item -= threads_;
        if (item < calls_) return m_.calls[item].ts;
        if (item < 2 * calls_) return m_.calls[item - calls_].ts + m_.calls[item - calls_].dur;
        return m_.node_ts(static_cast<std::uint32_t>(item - 2 * calls_));
    }

    // Dependents of each item and how many dependencies each item waits for.
    void link(std::vector<std::vector<std::uint32_t>>& next, std::vector<std::uint32_t>& waiting) {
        next.assign(done_.size(), {});
        waiting.assign(done_.size(), 0);
        const auto edge = [&](std::size_t from, std::size_t to) {
            next[from].push_back(static_cast<std::uint32_t>(to));
            ++waiting[to];
        };
        for (std::size_t t = 0; t < threads_; ++t) {
            const SimThread& thread = m_.threads[t];
            if (thread.origin_wake.thread != kNoIndex)
                edge(item_of(source_point(thread.origin_wake)), thread_item(t));
            for (std::size_t p = 0; p < thread.calls.size(); ++p) {
                const SimCall& c = m_.calls[thread.calls[p]];
                edge(p == 0 ? thread_item(t) : call_end_item(thread.calls[p - 1]),
                     call_start_item(thread.calls[p]));
                if (c.wake != kNoIndex)
                    edge(item_of(source_point(thread.wakes[c.wake].source)),
                         call_start_item(thread.calls[p]));
            }
        }
        for (std::size_t k = 0; k < calls_; ++k) {
            edge(call_start_item(k), call_end_item(k));
            for (auto n : m_.calls[k].frontier) edge(node_item(n), call_end_item(k));
            if (m_.calls[k].queue_node != kNoIndex)
                edge(node_item(m_.calls[k].queue_node), call_end_item(k));
        }
        for (std::size_t n = 0; n < nodes_; ++n) {
            const SimNode& node = m_.nodes[n];
            if (node.launch != kNoIndex) edge(call_start_item(node.launch), node_item(n));
            if (node.launch != kNoIndex && m_.calls[node.launch].graph_launch)
                edge(call_end_item(node.launch), node_item(n));
            if (node.stream_prev != kNoIndex) edge(node_item(node.stream_prev), node_item(n));
            for (const Producer& q : node.producers) edge(node_item(q.node), node_item(n));
        }
    }

    // Events in the order their dependencies complete, ties and independent ones by recorded
    // time. A recording whose clocks disagree can make a cycle (a sync that waits on work
    // launched after it); the earliest blocked event is then released and the dependencies it
    // still had are counted as dropped.
    void simulate_events() {
        std::vector<std::vector<std::uint32_t>> next;
        std::vector<std::uint32_t> waiting;
        link(next, waiting);
        using Entry = std::pair<Nanos, std::uint32_t>;
        std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
        std::vector<bool> queued(done_.size(), false);
        for (std::size_t i = 0; i < done_.size(); ++i)
            if (waiting[i] == 0) {
                queued[i] = true;
                ready.emplace(recorded_time(i), static_cast<std::uint32_t>(i));
            }
        std::vector<std::uint32_t> by_time(done_.size());
        std::iota(by_time.begin(), by_time.end(), 0u);
        std::stable_sort(by_time.begin(), by_time.end(), [&](std::uint32_t a, std::uint32_t b) {
            return recorded_time(a) < recorded_time(b);
        });
        std::size_t cursor = 0, completed = 0;
        while (completed < done_.size()) {
            if (ready.empty()) {
                while (queued[by_time[cursor]]) ++cursor;
                const std::uint32_t i = by_time[cursor];
                stats_.dropped_dependencies += waiting[i];
                waiting[i] = 0;
                queued[i] = true;
                ready.emplace(recorded_time(i), i);
            }
            const std::uint32_t i = ready.top().second;
            ready.pop();
            compute(i);
            done_[i] = true;
            ++completed;
            for (auto j : next[i])
                if (!queued[j] && --waiting[j] == 0) {
                    queued[j] = true;
                    ready.emplace(recorded_time(j), j);
                }
        }
    }

    void compute(std::size_t item) {
        if (item < threads_) return start_thread(item);
        item -= threads_;
        if (item < calls_) return start_call(item);
        if (item < 2 * calls_) return end_call(item - calls_);
        run_node(item - 2 * calls_);
    }

    bool ready_point(Point p) const { return done_[item_of(p)]; }

    // A thread starts at its recorded time, or, when another thread's launches preceded it,
    // when that thread gets there.
    void start_thread(std::size_t t) {
        const SimThread& thread = m_.threads[t];
        const WakeSource& source = thread.origin_wake;
        thread_start_[t] = source.thread != kNoIndex && ready_point(source_point(source))
                               ? on_thread(source, thread.origin)
                               : thread.origin;
    }

    void start_call(std::size_t k) {
        const SimCall& c = m_.calls[k];
        const SimThread& t = m_.threads[c.thread];
        const auto [prev_end, prev_recorded] = before(t, c.thread, c.position);
        const bool first = c.position == 0;
        if (c.wake != kNoIndex && ready_point(source_point(t.wakes[c.wake].source))) {
            const Wake& wake = t.wakes[c.wake];
            const auto [at, woken] = resume(wake, prev_end, prev_recorded, t, first, true);
            woken_[k] = woken;
            call_start_[k] =
                at + cpu_time(c.ts - wake.at, t.ops_between(wake.at, c.ts, true), true);
            return;
        }
        call_start_[k] = prev_end + (c.gap <= 0 ? c.gap : cpu_time(c.gap, c.ops_in_gap, true));
    }

    void end_call(std::size_t k) {
        const SimCall& c = m_.calls[k];
        if (c.blocking) {
            Nanos gpu_done = call_start_[k];
            for (auto n : c.frontier)
                if (done_[node_item(n)] && node_end_[n] > gpu_done) {
                    gpu_done = node_end_[n];
                    waited_on_[k] = n;
                }
            call_end_[k] = gpu_done + on_host(c.return_overhead);
            return;
        }
        const Nanos dur =
            s_.launch_call >= 0 && c.kernel_launch ? s_.launch_call : on_host(c.free_dur);
        call_end_[k] = call_start_[k] + dur;
        if (c.queue_node != kNoIndex && done_[node_item(c.queue_node)]) {
            const Nanos room = node_end_[c.queue_node] + on_host(c.queue_return);
            if (room > call_end_[k]) {
                call_end_[k] = room;
                waited_on_[k] = c.queue_node;
            }
        }
    }

    void run_node(std::size_t n) {
        const SimNode& node = m_.nodes[n];
        Nanos start = 0;
        bool bound = false;
        const auto consider = [&](Nanos t, Bind why, std::uint32_t ref) {
            if (bound && t <= start) return;
            start = t;
            bind_[n] = why;
            bind_ref_[n] = ref;
            bound = true;
        };
        // On a tie the GPU (still busy) is named before the launch.
        if (node.stream_prev != kNoIndex && done_[node_item(node.stream_prev)])
            consider(node_end_[node.stream_prev] + p_.gpu_gap, Bind::Stream, node.stream_prev);
        for (const Producer& q : node.producers)
            if (done_[node_item(q.node)])
                consider(node_end_[q.node] + (q.delay == kGpuGap ? p_.gpu_gap : q.delay),
                         Bind::Wait, q.node);
        if (node.launch != kNoIndex && done_[call_start_item(node.launch)])
            consider(call_start_[node.launch] + p_.launch_latency, Bind::Launch, node.launch);
        // A graph's nodes run once its launch has returned, or, those that the recording ran
        // while the call was still submitting the graph, no sooner after its start than there
        // (the driver hands a long graph over while the call runs).
        if (node.launch != kNoIndex && m_.calls[node.launch].graph_launch &&
            done_[call_end_item(node.launch)]) {
            const SimCall& call = m_.calls[node.launch];
            const Nanos offset = m_.node_ts(static_cast<std::uint32_t>(n)) - call.ts;
            if (offset < call.dur)
                consider(call_start_[node.launch] +
                             std::min(offset, call_end_[node.launch] - call_start_[node.launch]),
                         Bind::Launch, node.launch);
            else
                consider(call_end_[node.launch] + p_.graph_launch_latency, Bind::Launch,
                         node.launch);
        }
        if (node.launch == kNoIndex || !bound)
            consider(m_.node_ts(static_cast<std::uint32_t>(n)), Bind::Anchor, kNoIndex);
        const Nanos dur = s_.gpu_durations.empty() ? m_.node_end(static_cast<std::uint32_t>(n)) -
                                                         m_.node_ts(static_cast<std::uint32_t>(n))
                                                   : s_.gpu_durations[n];
        node_start_[n] = start;
        node_end_[n] = start + std::max<Nanos>(0, dur);
    }

    // ---- recorded CPU times on the predicted timeline ------------------------------------

    struct CpuPoint {
        Nanos time = 0;
        Edge cause;  // what fixed it
    };

    // A recorded instant on a thread, moved with the thread: CPU work keeps its recorded length
    // (less the overhead of the ops started in it, in a corrected run) from the last call
    // before it, or from the wake before it when the thread was idle in between.
    CpuPoint locate(std::uint32_t thread, Nanos t) {
        const SimThread& th = m_.threads[thread];
        auto it = std::partition_point(th.calls.begin(), th.calls.end(),
                                       [&](std::uint32_t k) { return m_.calls[k].ts <= t; });
        const auto position = static_cast<std::uint32_t>(it - th.calls.begin());
        CpuPoint point;
        if (position > 0) {
            const std::uint32_t k = *(it - 1);
            const SimCall& c = m_.calls[k];
            if (t < c.ts + c.dur) {
                point.time = std::min(call_start_[k] + on_host(t - c.ts), call_end_[k]);
                point.cause = {{At::CallStart, k},
                               c.blocking ? Bucket::Sync : Bucket::RuntimeCalls};
                return point;
            }
        }
        const auto [prev_end, prev_recorded] = before(th, thread, position);
        const Point prev = position == 0 ? Point{At::ThreadStart, thread}
                                         : Point{At::CallEnd, th.calls[position - 1]};
        auto wake = std::partition_point(th.wakes.begin(), th.wakes.end(),
                                         [&](const Wake& w) { return w.at <= t; });
        if (wake != th.wakes.begin() && (wake - 1)->idle_from >= prev_recorded) {
            const Wake& w = *(wake - 1);
            const auto [at, woken] = resume(w, prev_end, prev_recorded, th, position == 0, false);
            point.time = at + cpu_time(t - w.at, th.ops_between(w.at, t, true), false);
            point.cause = {woken ? source_point(w.source) : prev, Bucket::HostWork};
        } else {
            point.time =
                prev_end +
                cpu_time(t - prev_recorded, th.ops_between(prev_recorded, t, position == 0), false);
            point.cause = {prev, Bucket::HostWork};
        }
        if (it != th.calls.end()) point.time = std::min(point.time, call_start_[*it]);
        return point;
    }

    // ---- critical path -------------------------------------------------------------------

    Nanos time_of(Point p) const {
        switch (p.at) {
            case At::ThreadStart:
                return thread_start_[p.index];
            case At::CallStart:
                return call_start_[p.index];
            case At::CallEnd:
                return call_end_[p.index];
            case At::NodeStart:
                return node_start_[p.index];
            case At::NodeEnd:
                return node_end_[p.index];
            case At::None:
                break;
        }
        return 0;
    }

    // What fixed the time of `p`, and what kind of time lies between the two.
    Edge cause(Point p) const {
        switch (p.at) {
            case At::ThreadStart: {
                const WakeSource& source = m_.threads[p.index].origin_wake;
                if (source.thread == kNoIndex) break;
                return {source_point(source), Bucket::HostWork};
            }
            case At::CallStart: {
                const SimCall& c = m_.calls[p.index];
                if (woken_[p.index])
                    return {source_point(m_.threads[c.thread].wakes[c.wake].source),
                            Bucket::HostWork};
                if (c.position == 0) return {{At::ThreadStart, c.thread}, Bucket::HostWork};
                return {{At::CallEnd, m_.threads[c.thread].calls[c.position - 1]},
                        Bucket::HostWork};
            }
            case At::CallEnd: {
                // A blocking call, or a launch waiting for room in the queue, returns a little
                // after the GPU work it waited for: sync; the wait itself is that work.
                const SimCall& c = m_.calls[p.index];
                if (waited_on_[p.index] != kNoIndex)
                    return {{At::NodeEnd, waited_on_[p.index]}, Bucket::Sync};
                return {{At::CallStart, p.index}, c.blocking ? Bucket::Sync : Bucket::RuntimeCalls};
            }
            case At::NodeEnd:
                return {{At::NodeStart, p.index}, Bucket::GpuActivity};
            case At::NodeStart:
                switch (bind_[p.index]) {
                    case Bind::Launch:
                        return {{At::CallStart, bind_ref_[p.index]}, Bucket::LaunchLatency};
                    case Bind::Stream:
                    case Bind::Wait:
                        return {{At::NodeEnd, bind_ref_[p.index]}, Bucket::GpuGap};
                    case Bind::Anchor:
                        break;
                }
                break;
            case At::None:
                break;
        }
        return {{}, Bucket::Unexplained};
    }

    // Walks back from `end` (reached through `first`) to `start`, filling the buckets.
    CriticalPath walk(Nanos start, Nanos end, Edge first) const {
        CriticalPath path;
        Nanos now = end;
        Edge edge = first;
        // Every point (a thread start, a call start or end, an activity start or end) once at most.
        for (std::size_t guard = 0; guard <= threads_ + 2 * calls_ + 2 * nodes_; ++guard) {
            const bool fixed = edge.from.at == At::None;
            const Nanos then = fixed ? start : std::max(time_of(edge.from), start);
            add(path, edge.bucket, now - then);
            if (fixed || then <= start) break;
            now = then;
            edge = cause(edge.from);
        }
        return path;
    }

    // ---- steps ---------------------------------------------------------------------------

    void add_steps(std::vector<StepTime>& steps) {
        const auto& nodes = m_.graph->nodes();
        if (!m_.steps.empty()) {
            // A step's GPU work: what was launched inside its range (nodes are in launch order).
            const auto launched_before = [&](Nanos t) {
                return static_cast<std::size_t>(
                    std::partition_point(
                        nodes.begin(), nodes.end(),
                        [&](const GraphNode& g) { return m_.graph->launch_time(g) < t; }) -
                    nodes.begin());
            };
            for (const SimStep& s : m_.steps)
                steps.push_back(measure(s.name, s.start, s.end, launched_before(s.start),
                                        launched_before(s.end),
                                        steps.empty() ? nullptr : &steps.back()));
            return;
        }
        if (m_.main_thread == kNoIndex && nodes.empty()) return;
        Nanos first = std::numeric_limits<Nanos>::max(), last = std::numeric_limits<Nanos>::min();
        if (m_.main_thread != kNoIndex) {
            first = m_.threads[m_.main_thread].origin;
            last = m_.threads[m_.main_thread].last_end;
        }
        steps.push_back(measure("traced span", first, last, 0, nodes.size(), nullptr));
    }

    // A step from recorded CPU range [cpu_start, cpu_end] on the main thread (none: the GPU
    // alone) and the graph nodes [first_node, end_node). It ends when both its range and that
    // GPU work have; it starts where `previous` ended, when there is one (so that steps tile the
    // run and the lag of a GPU running behind the CPU is not counted in two steps: a step's time
    // is then the run's period, whichever side bounds it), else at its range's start.
    StepTime measure(const std::string& name, Nanos cpu_start, Nanos cpu_end,
                     std::size_t first_node, std::size_t end_node, const StepTime* previous) {
        StepTime step;
        step.name = name;
        const bool has_cpu = m_.main_thread != kNoIndex;
        const bool span = m_.steps.empty();
        step.recorded_start = cpu_start;
        step.recorded_end = cpu_end;
        CpuPoint end_point;
        if (has_cpu) {
            step.predicted_start = locate(m_.main_thread, cpu_start).time;
            end_point = locate(m_.main_thread, cpu_end);
            step.predicted_end = end_point.time;
        } else {
            step.predicted_start = std::numeric_limits<Nanos>::max();
            step.predicted_end = std::numeric_limits<Nanos>::min();
        }
        std::uint32_t last_node = kNoIndex;
        for (std::size_t n = first_node; n < end_node; ++n) {
            const auto node = static_cast<std::uint32_t>(n);
            step.recorded_end = std::max(step.recorded_end, m_.node_end(node));
            if (span) {
                step.recorded_start = std::min(step.recorded_start, m_.node_ts(node));
                step.predicted_start = std::min(step.predicted_start, node_start_[n]);
            }
            if (node_end_[n] > step.predicted_end || (!has_cpu && last_node == kNoIndex)) {
                step.predicted_end = node_end_[n];
                last_node = node;
            }
        }
        if (previous != nullptr) {
            step.recorded_start = previous->recorded_end;
            step.predicted_start = previous->predicted_end;
            step.recorded_end = std::max(step.recorded_end, previous->recorded_end);
            if (step.predicted_end <= previous->predicted_end) {
                step.predicted_end = previous->predicted_end;  // done when the one before was
                return step;
            }
        }
        const Edge first = last_node != kNoIndex
                               ? Edge{{At::NodeStart, last_node}, Bucket::GpuActivity}
                               : end_point.cause;
        step.path = walk(step.predicted_start, step.predicted_end, first);
        return step;
    }

    const Model& m_;
    const Scenario& s_;
    const ModelParameters& p_;
    std::size_t calls_, nodes_, threads_;
    std::vector<Nanos> thread_start_;
    std::vector<Nanos> call_start_, call_end_;
    std::vector<bool> woken_;               // the call's start was fixed by another thread
    std::vector<std::uint32_t> waited_on_;  // blocking call: the node whose end released it
    std::vector<Nanos> node_start_, node_end_;
    std::vector<Bind> bind_;
    std::vector<std::uint32_t> bind_ref_;
    std::vector<bool> done_;
    SimulationStats stats_;
};

}  // namespace

StepSimulator::StepSimulator(const KernelGraph& graph) : model_(std::make_unique<Model>()) {
    build_model(*model_, graph);
    ModelParameters& p = model_->estimates;
    p.launch_latency = estimate_launch_latency(*model_, p.launch_latency_samples);
    p.graph_launch_latency = estimate_graph_launch_latency(*model_, p.graph_launch_samples);
    add_contention_waits(*model_, p.launch_latency);
    add_launch_queue(*model_);
    estimate_rest(*model_, p);
}

StepSimulator::~StepSimulator() = default;

const ModelParameters& StepSimulator::estimates() const {
    return model_->estimates;
}

Prediction StepSimulator::run(const Scenario& scenario, const ModelParameters& parameters) const {
    if (!scenario.gpu_durations.empty() && scenario.gpu_durations.size() != model_->nodes.size())
        throw std::invalid_argument(
            "scenario has " + std::to_string(scenario.gpu_durations.size()) +
            " GPU durations for " + std::to_string(model_->nodes.size()) + " activities");
    return Simulation(*model_, scenario, parameters).run();
}

}  // namespace replay
