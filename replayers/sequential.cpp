// Sequential mode: every recorded issue in recorded order, on as many streams as were recorded,
// with the recorded cross-stream waits and, on request, at the recorded launch times. The plan is
// made, issued once untimed and (with graphs) captured before the clock starts; the timed
// iterations only launch (drivers.h).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <thread>

#include "energy_run.h"
#include "plan.h"
#include "record_matching.h"
#include "session.h"
#include "step_overlap.h"

namespace replay {
namespace {

using detail::LaunchUnit;
using detail::PlannedStep;
using detail::Session;

// The most untimed passes of the warm-up: a step of a few microseconds reaches --warmup-ms only
// after hundreds of thousands of passes, and the clocks need far fewer.
constexpr int kMaxHeatUpPasses = 10000;

// Launch units per poll of the energy counter while the step loops through the energy windows.
constexpr std::size_t kUnitsPerPoll = 64;

// --pace recorded on a device clock: each step is held on the device until its recorded start
// after the step before it on its stream (Backend::hold_after); a stream's first step, this
// long after the clock's start plus its recorded start. The host still launches at the recorded
// launch times; the lead lets a launch that its issue cost (which varies by op) made late by up
// to this much still start on the recorded timeline instead of shortening the gaps after it.
constexpr std::int64_t kDeviceClockLeadNs = 1'000'000;
// How far the replayed median gap may be from the recorded one before a note says what would
// hold it: issue 17's limit for --pace recorded.
constexpr double kGapTolerance = 0.10;

std::int64_t steady_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// Spins until `deadline` on the steady clock, sleeping first while it is far away: a sleep
// overshoots by tens of microseconds, a spin by a few hundred nanoseconds.
void spin_until(std::int64_t deadline) {
    constexpr std::int64_t kSleepAbove = 2'000'000, kSpinLast = 1'000'000;
    for (std::int64_t left = deadline - steady_ns(); left > 0; left = deadline - steady_ns())
        if (left > kSleepAbove) std::this_thread::sleep_for(std::chrono::nanoseconds(left - kSpinLast));
}

// Share of the recorded kernel time whose kernels cudaGraphLaunch launched (0 without kernels).
double recorded_graph_share(const KernelGraph& graph) {
    double all = 0, in_graphs = 0;
    for (const GraphNode& node : graph.nodes()) {
        const GpuActivity& a = graph.activity(node);
        if (a.kind != ActivityKind::Kernel) continue;
        all += static_cast<double>(a.dur);
        if (node.graph_launch) in_graphs += static_cast<double>(a.dur);
    }
    return all > 0 ? in_graphs / all : 0.0;
}

std::string format_percent(double share) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f%%", 100.0 * share);
    return text;
}

// Problems of one kind: counted, the first few kept as they were said.
class Problems {
  public:
    void add(std::string line) {
        if (lines_.size() < kShown) lines_.push_back(std::move(line));
        ++count_;
    }
    void report(Report& report, const std::string& what) const {
        if (count_ == 0) return;
        std::string note = what + " (" + std::to_string(count_) + "): ";
        for (std::size_t i = 0; i < lines_.size(); ++i) note += (i ? "; " : "") + lines_[i];
        if (count_ > lines_.size()) note += "; ...";
        report.notes.push_back(std::move(note));
    }

  private:
    static constexpr std::size_t kShown = 5;
    std::vector<std::string> lines_;
    std::size_t count_ = 0;
};

// Moves the backend into the Timed phase for its lifetime.
class TimedPhase {
  public:
    explicit TimedPhase(Backend& backend) : backend_(backend) { backend_.set_phase(Phase::Timed); }
    ~TimedPhase() {
        try {
            backend_.set_phase(Phase::Plan);
        } catch (...) {  // a destructor never throws; the next replay starts a phase anew
        }
    }
    TimedPhase(const TimedPhase&) = delete;
    TimedPhase& operator=(const TimedPhase&) = delete;

  private:
    Backend& backend_;
};

class SequentialReplay {
  public:
    SequentialReplay(const Analysis& analysis, Session& session, std::vector<PlannedStep> plan,
                     const detail::EnergyRun* energy)
        : energy_(energy),
          graph_(analysis.graph),
          session_(session),
          backend_(session.backend()),
          options_(session.options()),
          plan_(std::move(plan)),
          units_(detail::direct_units(plan_)),
          recorded_(timeline_figures(recorded_intervals(graph_))) {
        if (options_.clock_ns) now_ = options_.clock_ns;
        if (options_.wait_until_ns) wait_until_ = options_.wait_until_ns;
        use_graphs_ = options_.graph.value_or(graph_share_ >= 0.5);
        clock_available_ = options_.pace == Pace::Recorded &&
                           options_.pace_clock != PaceClock::Host &&
                           backend_.environment().device_clock;
    }

    void run(Timeline* timeline);
    // The meter's clock when the last timed iteration started (NaN without --energy).
    double last_iteration_s() const { return last_iteration_s_; }

  private:
    // --energy: the step looped back to back (no recorded pacing) through the energy windows.
    void measure_energy();
    // --energy: the warm-up reads of the step alone through the windows (taken out of its energy).
    void measure_warm_read_energy();
    const detail::EnergyRun* energy_;
    double last_iteration_s_ = NAN;

    // ---- issuing ----
    // `hold`: --pace recorded on a device clock holds the unit, where held() says so.
    void pre_issue(std::size_t u, bool hold = false);
    void launch(std::size_t u);
    // One pass over the units (with `paced`, each at its recorded offset); the host time from the
    // first launch to the return of the last.
    std::int64_t issue_pass(bool paced);
    void untimed_pass(const char* what);  // what: a progress line, or nullptr
    // --pace recorded on a device clock: the iteration's anchor, which every stream waits for.
    void start_clock();
    // A note where the host alone paced the steps (--pace-clock auto on the direct path) and the
    // gaps came out more than kGapTolerance off the recorded ones: what would hold them.
    void note_host_pacing(const ReportTimeline& result) const;
    // --warmup-ms: untimed passes until that much time has passed (at most kMaxHeatUpPasses).
    void heat_up();
    void capture_graphs();
    std::uint32_t capture(std::size_t first, std::size_t last, bool per_step, std::string& why);
    bool ready(std::size_t step) const {
        return plan_[step].prepared->disposition == Disposition::Ready;
    }
    bool warms(const detail::PlannedStep& step) const {
        using W = DriverOptions::WarmInputs;
        return options_.warm_inputs == W::All || (options_.warm_inputs == W::Needed && step.warm);
    }

    // ---- timing ----
    IterationResult timed_iteration(int iteration, Timeline* timeline);
    // Ties untagged records to the issues of the last pass; returns how many stayed untied.
    std::size_t tie_untagged(std::vector<TimedActivity>& records, int iteration);
    // Attributes tagged records to their steps; returns how many could not be.
    std::size_t attribute(const std::vector<TimedActivity>& records, int iteration);
    void add_to_timeline(const std::vector<TimedActivity>& records, int iteration,
                         Timeline& timeline) const;
    static std::string step_name(const PlannedStep& step) {
        return "step " + std::to_string(step.tag) + " (" + step.label + ")";
    }

    const KernelGraph& graph_;
    Session& session_;
    Backend& backend_;
    const DriverOptions& options_;
    std::vector<PlannedStep> plan_;
    std::vector<LaunchUnit> units_;
    std::string issue_path_ = "direct";
    // Share of the recorded kernel time that cudaGraphLaunch launched.
    const double graph_share_ = recorded_graph_share(graph_);
    bool use_graphs_ = false;  // --graph, or unset and the recording ran as CUDA graphs
    TimelineFigures recorded_;
    std::map<std::uint64_t, detail::StepRecords> expected_;  // by tag, from the last untimed pass
    // Per unit, in the last pass: what became of its launch, and whether its warm-up reads went
    // out.
    enum class Issued : std::uint8_t { No, Yes, Failed };
    std::vector<Issued> issued_;
    std::vector<bool> warmed_;
    // Environment::device_clock with --pace recorded and a pace clock other than host.
    bool clock_available_ = false;
    // Whether `unit` is held on it: every unit with PaceClock::Device; with Auto, the units
    // launched from graphs (there are none until the graphs are captured).
    bool held(const LaunchUnit& unit) const {
        return clock_available_ &&
               (options_.pace_clock == PaceClock::Device || unit.kind == LaunchUnit::Kind::Graph);
    }
    bool holds_any() const {
        return std::any_of(units_.begin(), units_.end(),
                           [&](const LaunchUnit& unit) { return held(unit); });
    }
    std::map<int, std::int64_t> held_start_;  // per stream: the last held step's recorded start
    std::set<std::uint64_t> untied_steps_;  // steps whose untagged records matching gave up on
    Problems unmatched_, miscounted_, not_captured_;
    detail::StepOverlap overlap_;  // of the ops on several streams, in the last iteration
    detail::LeftOver left_over_;   // records no recorded kernel took, in the last iteration
    std::function<std::int64_t()> now_ = steady_ns;
    std::function<void(std::int64_t)> wait_until_ = spin_until;
};

void SequentialReplay::pre_issue(std::size_t u, bool hold) {
    const LaunchUnit& unit = units_[u];
    if (unit.kind == LaunchUnit::Kind::Direct && !ready(unit.first)) return;
    for (int producer : unit.waits) backend_.stream_wait(unit.stream, producer);
    if (unit.kind == LaunchUnit::Kind::Direct && warms(plan_[unit.first])) {
        const PlannedStep& step = plan_[unit.first];
        backend_.warm_inputs(step.prepared->handle, step.stream, step.tag);
        warmed_[u] = true;
    }
    // After the warm-up reads: they stand for cache state that took no time in the recording.
    if (hold && held(unit)) {
        // The recorded start after the previous held step's on this stream (after the clock's
        // start less the lead, for the stream's first).
        const auto last = held_start_.try_emplace(unit.stream, -kDeviceClockLeadNs).first;
        const std::int64_t start = plan_[unit.first].start_offset_ns;
        backend_.hold_after(unit.stream, std::max<std::int64_t>(0, start - last->second));
        last->second = start;
    }
}

void SequentialReplay::launch(std::size_t u) {
    const LaunchUnit& unit = units_[u];
    if (unit.kind == LaunchUnit::Kind::Graph) {
        backend_.launch_graph(unit.graph);
        issued_[u] = Issued::Yes;
        return;
    }
    if (!ready(unit.first)) return;
    const PlannedStep& step = plan_[unit.first];
    issued_[u] = session_.try_issue(*step.prepared, step.kernels, step.stream, step.tag)
                     ? Issued::Yes
                     : Issued::Failed;
}

std::int64_t SequentialReplay::issue_pass(bool paced) {
    issued_.assign(units_.size(), Issued::No);
    warmed_.assign(units_.size(), false);
    if (units_.empty()) return 0;
    const bool holding = paced && holds_any();
    held_start_.clear();
    if (holding) start_clock();
    // A unit's waits and warm-up reads go out right after the previous launch, so that at its
    // recorded offset only its own launch is left to do.
    pre_issue(0, holding);
    const std::int64_t start = now_();
    for (std::size_t u = 0; u < units_.size(); ++u) {
        if (paced) wait_until_(start + units_[u].offset_ns);
        launch(u);
        if (u + 1 < units_.size()) {
            // A host already late for the next launch is catching up: a hold could not keep
            // that step (it arrives after its time) and would cost the host a launch more.
            pre_issue(u + 1, holding && now_() <= start + units_[u + 1].offset_ns);
        }
        // Paced, the launch must reach the device before the host waits for the next one.
        if (paced) backend_.submit();
    }
    return now_() - start;
}

void SequentialReplay::note_host_pacing(const ReportTimeline& result) const {
    if (!clock_available_ || holds_any() || result.iterations.empty()) return;
    const double ratio = result.iterations.back().kernel_gap_ratio;
    if (!std::isfinite(ratio) || std::abs(ratio - 1.0) <= kGapTolerance) return;
    char text[32];
    std::snprintf(text, sizeof text, "%.2f", ratio);
    session_.report().notes.push_back(
        std::string("--pace recorded by the host alone: the last iteration's median "
                    "end-to-next-start gap is ") +
        text +
        "x the recorded one. --graph, or --pace-clock device where the host has time to spare "
        "between recorded launches, holds the steps on the GPU's clock until their recorded "
        "starts");
}

void SequentialReplay::start_clock() {
    const int home = units_.front().stream;
    backend_.start_device_clock(home);
    std::set<int> others;
    for (const LaunchUnit& unit : units_)
        if (unit.stream != home) others.insert(unit.stream);
    for (int stream : others) backend_.stream_wait(stream, home);  // all streams idle here
}

void SequentialReplay::untimed_pass(const char* what) {
    session_.set_iteration(0);  // NVTX ranges say "(plan)"
    if (holds_any()) {          // their first launches are not the timed phase's
        start_clock();
        backend_.hold_after(units_.front().stream, 0);
    }
    issue_pass(false);
    session_.synchronize();  // a restart in it re-ran the pass in the new process: nothing to redo
    expected_ = detail::records_by_step(backend_.collect());
    if (options_.progress && what != nullptr) options_.progress(what);
}

std::uint32_t SequentialReplay::capture(std::size_t first, std::size_t last, bool per_step,
                                        std::string& why) {
    return detail::capture_graph(
        backend_, plan_[first].stream, !per_step,
        [&] {
            for (std::size_t i = first; i < last; ++i) {
                const PlannedStep& step = plan_[i];
                if (!per_step)  // a graph of one step waits outside it (LaunchUnit::waits)
                    for (int producer : step.waits) backend_.stream_wait(step.stream, producer);
                if (warms(step)) backend_.warm_inputs(step.prepared->handle, step.stream, step.tag);
                backend_.issue(step.prepared->handle, step.stream, step.tag);
            }
        },
        why);
}

void SequentialReplay::capture_graphs() {
    // Which steps can be captured: asked once per prepared work and stream.
    std::map<std::pair<std::uint32_t, int>, std::string> blocker_of;
    std::map<std::string, std::pair<std::size_t, std::string>> blocked;  // why -> steps, first
    std::vector<bool> capturable(plan_.size(), false);
    for (std::size_t i = 0; i < plan_.size(); ++i) {
        if (!ready(i)) continue;
        const auto key = std::pair{plan_[i].prepared->handle, plan_[i].stream};
        auto it = blocker_of.find(key);
        if (it == blocker_of.end())
            it = blocker_of.emplace(key, backend_.capture_blocker(key.first, key.second)).first;
        capturable[i] = it->second.empty();
        if (capturable[i]) continue;
        auto& [count, first] = blocked[it->second];
        if (count++ == 0) first = step_name(plan_[i]);
    }
    for (const auto& [why, steps] : blocked)
        not_captured_.add(std::to_string(steps.first) + " steps (" + steps.second +
                          (steps.first > 1 ? " first" : "") + "): " + why);
    const bool per_step = options_.pace == Pace::Recorded;
    std::vector<LaunchUnit> units;
    std::size_t next = 0, graphs = 0, captured_steps = 0;
    auto add_direct = [&](std::size_t to) {
        for (; next < to; ++next)
            units.push_back({LaunchUnit::Kind::Direct, next, next + 1, 0, plan_[next].stream,
                             plan_[next].offset_ns, plan_[next].waits});
    };
    for (const auto& [first, last] : detail::graph_segments(capturable, per_step)) {
        add_direct(first);
        std::string why;
        const std::uint32_t graph = capture(first, last, per_step, why);
        if (graph == 0) {
            not_captured_.add(std::to_string(last - first) + " steps (" +
                              step_name(plan_[first]) + " first): the capture failed: " + why);
            add_direct(last);
            continue;
        }
        units.push_back({LaunchUnit::Kind::Graph, first, last, graph, plan_[first].stream,
                         plan_[first].offset_ns,
                         per_step ? plan_[first].waits : std::vector<int>{}});
        next = last;
        ++graphs;
        captured_steps += last - first;
    }
    add_direct(plan_.size());
    units_ = std::move(units);
    std::size_t direct = 0;
    for (std::size_t i = 0; i < plan_.size(); ++i) direct += ready(i) && !capturable[i];
    if (graphs > 0) {
        issue_path_ = std::string(per_step ? "graph per step" : "graph") + (direct ? "+direct" : "");
        session_.report().notes.push_back(
            std::to_string(captured_steps) + " steps captured in " + std::to_string(graphs) +
            " CUDA graph" + (graphs == 1 ? "" : "s") + " (warm-up reads included), launched " +
            (per_step ? "each at its recorded offset" : "once per iteration") +
            "; graph records are tied to their steps by the graph node that ran them");
    }
    not_captured_.report(session_.report(), "--graph: steps not captured but issued directly, by reason");
}

std::size_t SequentialReplay::tie_untagged(std::vector<TimedActivity>& records, int iteration) {
    static const detail::StepRecords kNothing;
    static const std::vector<std::string> kNoNames;
    untied_steps_.clear();
    std::map<detail::Lane, std::vector<TimedActivity*>> untagged;
    for (auto& r : records)
        if (r.tag == 0) untagged[detail::lane_of(r)].push_back(&r);
    if (untagged.empty()) return 0;
    // What each lane was asked to run in the last pass, in order: an issue's own stream gets
    // its warm-up reads and the work that ran there, a library's own stream what ran there.
    std::map<detail::Lane, std::vector<detail::ExpectedIssue>> issues;
    for (std::size_t u = 0; u < units_.size(); ++u) {
        if (units_[u].kind != LaunchUnit::Kind::Direct || issued_[u] == Issued::No) continue;
        const PlannedStep& step = plan_[units_[u].first];
        auto e = expected_.find(step.tag);
        const detail::StepRecords& expected = e == expected_.end() ? kNothing : e->second;
        const bool failed = issued_[u] == Issued::Failed;
        const detail::Lane own{step.stream, -1};
        auto& stream = issues[own];
        if (warmed_[u]) stream.push_back({step.tag, true, &expected.warm_reads});
        const auto mine = expected.work_by_lane.find(own);
        const auto* names = mine == expected.work_by_lane.end() ? &kNoNames : &mine->second;
        stream.push_back({step.tag, false, failed ? nullptr : names});
        for (const auto& [lane, elsewhere] : expected.work_by_lane)
            if (lane != own)
                issues[lane].push_back({step.tag, false, failed ? nullptr : &elsewhere});
    }
    std::size_t untied = 0;
    for (auto& [lane, recs] : untagged) {
        std::stable_sort(recs.begin(), recs.end(), [](const auto* a, const auto* b) {
            return a->start_ns < b->start_ns;
        });
        const auto match = detail::match_in_order(issues[lane], recs);
        untied += recs.size() - match.tied;
        if (match.why.empty()) continue;
        std::size_t steps_left = 0;
        for (std::size_t i : match.unmatched_issues)
            if (!issues[lane][i].warm_read) {
                ++steps_left;
                untied_steps_.insert(issues[lane][i].tag);
            }
        const std::string where =
            lane.first >= 0
                ? "stream " +
                      std::to_string(graph_.streams()[static_cast<std::size_t>(lane.first)].stream)
                : "a library's own stream (CUPTI id " + std::to_string(lane.second) + ")";
        unmatched_.add("iteration " + std::to_string(iteration) + ", " + where + ": " + match.why +
                       " (" + std::to_string(steps_left) + " steps untimed, " +
                       std::to_string(recs.size() - match.tied) + " records tied to none)");
    }
    return untied;
}

std::size_t SequentialReplay::attribute(const std::vector<TimedActivity>& records,
                                        int iteration) {
    std::vector<TimedActivity> work;
    for (const auto& r : records)
        if (r.tag != 0 && !r.warm_read) work.push_back(r);
    auto groups = detail::by_tag(std::move(work));
    overlap_.clear();
    left_over_ = {};
    static const std::vector<TimedActivity> kNone;
    std::size_t dropped = 0;
    for (std::size_t u = 0; u < units_.size(); ++u) {
        if (issued_[u] != Issued::Yes) continue;  // a failed issue marked its kernels already
        for (std::size_t i = units_[u].first; i < units_[u].last; ++i) {
            const PlannedStep& step = plan_[i];
            if (!ready(i)) continue;  // in a graph, failed after it was captured: marked so
            if (untied_steps_.count(step.tag)) continue;  // said by tie_untagged
            auto g = groups.find(step.tag);
            const auto& got = g == groups.end() ? kNone : g->second;
            // As many records as the same issue gave untimed, or none of them: a graph whose
            // records were partly lost must not give its kernels each other's times.
            auto e = expected_.find(step.tag);
            const std::size_t expected = e == expected_.end() ? 0 : e->second.work_records();
            if (got.size() != expected) {
                const std::string what = std::to_string(got.size()) + " records, " +
                                         std::to_string(expected) + " expected";
                miscounted_.add("iteration " + std::to_string(iteration) + ", " +
                                step_name(step) + ": " + what);
                // Not a sample, and not silently skipped either (record_match.h).
                for (std::size_t k : step.kernels)
                    session_.add_miss(k, "its issue brought back " + what);
                dropped += got.size();
                continue;
            }
            left_over_ += detail::attribute(session_, step.kernels, got, step.recorded_us);
            if (auto spans = detail::spans_on_several_streams(graph_, step.nodes); !spans.empty())
                overlap_.add(std::move(spans), got);
        }
    }
    return dropped;
}

void SequentialReplay::add_to_timeline(const std::vector<TimedActivity>& records, int iteration,
                                       Timeline& timeline) const {
    const auto& streams = graph_.streams();
    // A step's records in start order re-create its recorded nodes in order (as attribute()
    // takes them); records of a tag no step has re-create no known node.
    std::map<std::uint64_t, std::vector<const TimedActivity*>> work;
    for (const auto& r : records)
        if (!r.warm_read) work[r.tag].push_back(&r);
    std::map<const TimedActivity*, std::uint32_t> node_of;
    for (auto& [tag, group] : work) {
        std::stable_sort(group.begin(), group.end(),
                         [](const auto* a, const auto* b) { return a->start_ns < b->start_ns; });
        const auto step = std::lower_bound(
            plan_.begin(), plan_.end(), tag,
            [](const PlannedStep& p, std::uint64_t t) { return p.tag < t; });
        if (tag == 0 || step == plan_.end() || step->tag != tag) continue;
        for (std::size_t i = 0; i < group.size() && i < step->nodes.size(); ++i)
            node_of[group[i]] = step->nodes[i];
    }
    for (const auto& r : records) {
        // On the recorded stream's id (not the replay's stream index), so that each replayed
        // track sits beside its recorded one.
        const auto slot = static_cast<std::size_t>(r.stream);
        const std::int64_t stream = slot < streams.size() ? streams[slot].stream : r.stream;
        const auto node = node_of.find(&r);
        add_replayed_item(timeline, r.warm_read ? "L2 warm-up read" : r.name, r.start_ns, r.end_ns,
                          stream, node == node_of.end() ? kNoIndex : node->second, iteration,
                          r.warm_read, r.grid);
    }
}

IterationResult SequentialReplay::timed_iteration(int iteration, Timeline* timeline) {
    session_.set_iteration(iteration);  // the NVTX ranges of its issues name it (--nvtx)
    const std::int64_t host_ns = issue_pass(options_.pace == Pace::Recorded);
    const bool restarted = session_.synchronize();
    std::vector<TimedActivity> records = backend_.collect();
    std::size_t unattributed = tie_untagged(records, iteration);
    unattributed += attribute(records, iteration);

    std::vector<TimelineInterval> intervals;
    intervals.reserve(records.size());
    for (const auto& r : records) intervals.push_back({r.stream, r.start_ns, r.end_ns, r.warm_read});
    IterationResult result = iteration_result(iteration, timeline_figures(intervals), recorded_);
    result.issue_host_us = static_cast<double>(host_ns) / 1000.0;
    result.unattributed = unattributed;
    const bool last = iteration == std::max(1, options_.iterations);
    if (timeline != nullptr && (last || options_.trace_all_iterations))
        add_to_timeline(records, iteration, *timeline);
    if (options_.progress) options_.progress("iteration " + std::to_string(iteration) + " done");
    if (restarted) {
        // The new process ran this iteration's rest first, one issue at a time where the fault
        // was looked for: its figures are marked here; the next iterations find the plan issued
        // untimed again (and the graphs captured again by the backend), as the first did.
        std::string note = "iteration " + std::to_string(iteration) +
                           ": the device work moved to a new worker process after a fault; this "
                           "iteration's timeline includes the fault, the re-run and first uses";
        if (!last) {
            note += "; the plan was issued untimed again before iteration " +
                    std::to_string(iteration + 1);
            backend_.set_phase(Phase::Plan);
            untimed_pass("plan: issued again untimed after a worker restart");
            backend_.set_phase(Phase::Timed);
        }
        session_.report().notes.push_back(std::move(note));
    }
    return result;
}

void SequentialReplay::heat_up() {
    if (!(options_.warmup_ms > 0) || units_.empty()) return;
    if (backend_.runs_collectives()) {
        // Timed by each rank's own clock, the ranks would repeat the step different numbers of
        // times and wait on each other's collectives until the timeout.
        session_.report().notes.push_back(
            "warm-up: not repeated with several ranks (their collectives would not match "
            "across ranks); the plan pass only");
        return;
    }
    const std::int64_t start = now_();
    const auto until = start + static_cast<std::int64_t>(options_.warmup_ms * 1e6);
    int passes = 0;
    while (passes < kMaxHeatUpPasses && now_() < until && session_.stopped().empty()) {
        untimed_pass(passes == 0 ? "warm-up: the step repeated untimed" : nullptr);
        ++passes;
    }
    char took[32];
    std::snprintf(took, sizeof took, "%.0f", static_cast<double>(now_() - start) / 1e6);
    session_.report().notes.push_back(
        "warm-up: the step was repeated " + std::to_string(passes) + " time(s) untimed (" + took +
        " ms, --warmup-ms " + std::to_string(static_cast<long>(options_.warmup_ms)) +
        ") before the timed iterations, so that they run at the clocks of a sustained load");
}

void SequentialReplay::run(Timeline* timeline) {
    Report& report = session_.report();
    backend_.set_stream_count(static_cast<int>(graph_.streams().size()));
    // Plan phase: first uses happen here, not in the first timed step.
    untimed_pass("plan: every step issued once, untimed");
    report.notes.push_back(
        "the plan (" + std::to_string(plan_.size()) +
        " steps) was issued once untimed before the timed iterations: lazy module loads, "
        "library heuristics and workspaces, libtorch's first calls and allocations happen there");
    if (options_.warm_inputs == DriverOptions::WarmInputs::Needed) {
        const auto warmed = std::count_if(plan_.begin(), plan_.end(),
                                          [](const PlannedStep& s) { return s.warm; });
        report.notes.push_back(
            "warm-up reads before " + std::to_string(warmed) + " of " +
            std::to_string(plan_.size()) +
            " steps; the others' inputs were all read or written before by an earlier replayed "
            "step in their recorded storage's buffer (dataflow), so the L2 holds them as it held "
            "them in the recording (--warm-inputs all, the default: before every step)");
    }
    if (use_graphs_ && !options_.graph) {
        report.notes.push_back(
            format_percent(graph_share_) +
            " of the recorded kernel time was launched by cudaGraphLaunch: the steps are "
            "replayed as CUDA graphs too, so that their kernels run back to back as recorded "
            "(--no-graph: issued one by one)");
    }
    if (use_graphs_) {
        capture_graphs();
        if (issue_path_ != "direct") untimed_pass("plan: the graphs launched once, untimed");
    }
    report.options.emplace_back("issue_path", issue_path_);
    if (options_.pace == Pace::Recorded) {
        const bool every_step = options_.pace_clock == PaceClock::Device;
        const bool holds = holds_any();
        report.options.emplace_back("pace_clock", !holds       ? "host"
                                                  : every_step ? "device"
                                                               : "device for graph steps");
        if (holds)
            report.notes.push_back(
                "--pace recorded: the host launches each step at its recorded launch time, and "
                "the GPU holds " +
                std::string(every_step ? "each step" : "each graph step") +
                " (on its own timer) until its recorded interval after the step before it on "
                "its stream has passed, the first " +
                std::to_string(kDeviceClockLeadNs / 1000) +
                " us after the iteration's start: a launch made late by the host's issue cost "
                "still starts on the recorded timeline, and a stall delays what follows "
                "without squeezing its gaps");
    }
    heat_up();

    ReportTimeline result;
    result.issue_path = issue_path_;
    result.recorded = recorded_;
    {
        TimedPhase timed(backend_);
        for (int it = 1; it <= std::max(1, options_.iterations) && session_.stopped().empty();
             ++it) {
            if (energy_ != nullptr && it == std::max(1, options_.iterations))
                last_iteration_s_ = energy_->now_s();
            result.iterations.push_back(timed_iteration(it, timeline));
        }
        result.first_uses = backend_.first_uses();
    }
    measure_energy();
    if (!result.first_uses.empty()) {
        std::string note = "first uses inside the timed iterations (the plan missed them): ";
        for (std::size_t i = 0; i < result.first_uses.size(); ++i)
            note += (i ? "; " : "") + result.first_uses[i];
        report.notes.push_back(std::move(note));
    }
    unmatched_.report(report, "timed records that could not be tied to their steps");
    miscounted_.report(report, "steps whose records came back incomplete (left out)");
    if (!overlap_.empty()) report.notes.push_back(overlap_.note());
    if (left_over_.records > 0) report.notes.push_back(detail::left_over_note(left_over_));
    if (result.iterations.size() > 1) {
        const double first = result.iterations.front().replayed.max_gap_us;
        const double last = result.iterations.back().replayed.max_gap_us;
        result.first_to_last_max_gap = last > 0 ? first / last : NAN;
    }
    note_host_pacing(result);
    if (timeline != nullptr) add_recorded_track(*timeline, graph_);
    report.timeline = std::move(result);
}

void SequentialReplay::measure_energy() {
    if (energy_ == nullptr || !energy_->available() || units_.empty()) return;
    if (backend_.runs_collectives()) {
        // The windows loop the step as many times as this rank's timing says: ranks would issue
        // different numbers of collectives and wait on each other until the timeout.
        session_.report().energy.notes.push_back(
            "the step's energy is not measured with several ranks (its collectives would not "
            "match across ranks)");
        return;
    }
    if (options_.progress) options_.progress("energy: the step looped through the windows");
    if (options_.pace == Pace::Recorded)
        session_.report().energy.notes.push_back(
            "the step's energy was measured back to back, without the recorded launch times");
    issued_.assign(units_.size(), Issued::No);
    warmed_.assign(units_.size(), false);
    const std::size_t chunk = std::min(kUnitsPerPoll, units_.size());
    std::size_t next = 0;
    detail::measure_step_energy(
        *energy_,
        [&]() -> double {
            for (std::size_t i = 0; i < chunk; ++i, ++next) {
                const std::size_t u = next % units_.size();
                pre_issue(u);
                launch(u);
            }
            return static_cast<double>(chunk) / static_cast<double>(units_.size());
        },
        [&] {
            backend_.synchronize();
            backend_.collect();  // untimed
        },
        session_.report().energy);
    measure_warm_read_energy();
}

void SequentialReplay::measure_warm_read_energy() {
    std::vector<std::size_t> warmed;
    for (std::size_t i = 0; i < plan_.size(); ++i)
        if (ready(i) && warms(plan_[i])) warmed.push_back(i);
    if (warmed.empty()) return;
    // The reads of a step back to back on one stream (they only read: no order to keep), from a
    // graph where the step ran from graphs, so that the host's launches do not space them out
    // more than in the step.
    auto issue_reads = [&] {
        for (std::size_t i : warmed) backend_.warm_inputs(plan_[i].prepared->handle, 0, 0);
    };
    std::uint32_t graph = 0;
    if (use_graphs_ && issue_path_ != "direct") {
        std::string why;  // without a graph, the reads are issued directly
        graph = detail::capture_graph(backend_, 0, true, issue_reads, why);
    }
    if (options_.progress) options_.progress("energy: the step's warm-up reads looped alone");
    // A failure inside the windows leaves the step's energy as it was (reads included).
    try {
        detail::take_out_warm_read_energy(
            *energy_,
            [&]() -> double {
                if (graph != 0)
                    backend_.launch_graph(graph);
                else
                    issue_reads();
                return 1.0;
            },
            [&] {
                backend_.synchronize();
                backend_.collect();  // untimed
            },
            session_.report().energy);
    } catch (const std::exception& e) {
        session_.report().energy.notes.push_back(
            std::string("the step's warm-up reads were not measured alone (") + e.what() +
            "): the step's energy includes them");
        try {
            backend_.synchronize();
            backend_.collect();
        } catch (const std::exception&) {  // the next replay call says what is wrong
        }
    }
}

}  // namespace

namespace detail {

Report replay_sequential(const Analysis& analysis, Backend& backend, const DriverOptions& options,
                         Timeline* timeline, const EnergyRun* energy, double* last_iteration_s) {
    const auto start = std::chrono::steady_clock::now();
    Session session(backend, analysis.kernels, options);
    detail::add_inputs(session.report(), analysis);
    detail::add_options(session.report(), options, false);
    if (energy != nullptr) describe_energy_run(*energy, options, session.report().energy);
    const auto kernel_of = detail::kernel_of_nodes(analysis, session);
    SequentialReplay replay(analysis, session,
                            detail::plan_sequential(analysis, session, kernel_of, options.progress),
                            energy);
    replay.run(timeline);
    if (last_iteration_s != nullptr) *last_iteration_s = replay.last_iteration_s();
    const KernelGraph& graph = analysis.graph;
    if (!graph.host_syncs().empty())
        session.report().notes.push_back(
            std::to_string(graph.host_syncs().size()) +
            " recorded host synchronisations were not re-issued (their wait is in the recorded "
            "launch times that --pace recorded keeps)");
    Report report = session.finish("sequential", detail::seconds_since(start));
    const ReportTimeline& t = *report.timeline;
    report.totals.recorded_span_us = t.recorded.span_us;
    if (!t.iterations.empty()) {
        report.totals.replayed_span_us = t.iterations.back().replayed.span_us;
        report.totals.span_ratio = t.iterations.back().span_ratio;
    }
    return report;
}

}  // namespace detail

Report replay_sequential(const Analysis& analysis, Backend& backend, const DriverOptions& options,
                         Timeline* timeline) {
    std::unique_ptr<detail::EnergyRun> energy;
    ReportEnergy described;  // the report's own copy is filled by the driver
    if (options.energy) energy = std::make_unique<detail::EnergyRun>(backend, options, described);
    double origin_s = NAN;
    Report report =
        detail::replay_sequential(analysis, backend, options, timeline, energy.get(), &origin_s);
    if (energy) {
        const auto samples = energy->finish(report.energy);
        // On the replayed track's clock: its first activity starts at 0, within a launch's
        // latency of the host's first issue of the last iteration.
        if (timeline != nullptr && std::isfinite(origin_s))
            for (const auto& sample : samples)
                if (sample.t_s >= origin_s)
                    timeline->counters.push_back(
                        {"board power (W)", (sample.t_s - origin_s) * 1e6, sample.value});
        finalize_energy(report);
    }
    return report;
}

}  // namespace replay
