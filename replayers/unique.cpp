// Unique mode: each unique kernel alone, warmup + timed runs, with the context its recorded
// instances had (see Context in drivers.h).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "energy_run.h"
#include "plan.h"
#include "progress_line.h"
#include "replay/ranks.h"
#include "session.h"

namespace replay {
namespace {

const std::vector<TimedActivity> kNothing;  // an issue that nothing came back for

using detail::Session;
using detail::Template;

constexpr int kSequentialCheckPasses = 3;
// Launches per poll of the counter: about this much device time, so that a change of the counter
// is seen within about that long.
constexpr double kPollEveryUs = 1000;
constexpr int kMaxLaunchesPerPoll = 256;
constexpr double kLeadReads = 3;

// A CUDA graph of `launches` issues cycling through `work` (tag 0: untimed), or 0 where the backend
// cannot capture one of them (it says why; the loop then issues from the host).
std::uint32_t capture_loop(Backend& backend, const std::vector<Prepared*>& work, int launches) {
    for (const Prepared* w : work)
        if (!backend.capture_blocker(w->handle, 0).empty()) return 0;
    std::string why;
    return detail::capture_graph(
        backend, 0, false,
        [&] {
            for (int i = 0; i < launches; ++i)
                backend.issue(work[static_cast<std::size_t>(i) % work.size()]->handle, 0, 0);
        },
        why);
}

// The work of one energy loop and its copies at other addresses (Backend::relocated), held until
// the loop is done: a copy freed while the next is made would get the same memory back.
class WorkPlacements {
  public:
    WorkPlacements(Backend& backend, const std::vector<Prepared*>& work)
        : backend_(backend), current_(work) {}
    ~WorkPlacements() {
        for (const Prepared& p : copies_)
            if (p.disposition == Disposition::Ready) backend_.release(p.handle);
    }
    WorkPlacements(const WorkPlacements&) = delete;
    WorkPlacements& operator=(const WorkPlacements&) = delete;

    const std::vector<Prepared*>& current() const { return current_; }
    int count() const { return placements_; }
    // Moves every piece of the work elsewhere; false (staying put) where the backend cannot move
    // one of them, which it is then not asked again.
    bool move() {
        if (!movable_) return false;
        std::vector<Prepared*> moved;
        for (const Prepared* w : current_) {
            copies_.push_back(backend_.relocated(w->handle));
            if (copies_.back().disposition != Disposition::Ready) {
                movable_ = false;
                return false;
            }
            moved.push_back(&copies_.back());
        }
        previous_ = std::exchange(current_, std::move(moved));
        ++placements_;
        return true;
    }
    // Back to the placement before the last move (its copy could not be looped).
    void undo() {
        current_ = previous_;
        --placements_;
        movable_ = false;
    }

  private:
    Backend& backend_;
    std::vector<Prepared*> current_, previous_;
    std::deque<Prepared> copies_;  // stable addresses: current_ points into it
    int placements_ = 1;
    bool movable_ = true;
};

// The template's launches back to back (cycling through its instances, no context) through the
// windows; each kernel it re-creates gets the issue's dynamic energy by its recorded share plus
// the idle power over its own replayed median. The launches go out as a CUDA graph where they can:
// issued one by one, a kernel of a few microseconds waits for the host between launches (on the
// H100, GPT-2's 4.5 us kernels looped at one per 12 us or so), and the power of those idle gaps
// would be counted as the kernel's, and a small dynamic power over idle is a noisy one. The
// graphs are kept about kLeadReads counter reads of work ahead of the device (a read takes 2.3-2.4
// ms on the H100 and the H200, and the device must not run dry while the host reads). Each window
// after the first runs on a copy of the work at other addresses where the backend can make one
// (WorkPlacements; `placements` says how many the windows had). Returns what ran the loop.
enum class EnergyLoop : std::uint8_t { NotMeasured, Graph, Host };
EnergyLoop measure_template_energy(Session& session, const Template& t,
                                   const std::vector<Prepared*>& work,
                                   const detail::EnergyRun& energy, int& placements) {
    placements = 0;
    Report& report = session.report();
    const DriverOptions& o = session.options();
    double issue_us = 0, recorded_sum = 0, longest_recorded = 0;
    std::vector<double> own_us;
    for (std::size_t j = 0; j < t.positions.size(); ++j) {
        const KernelResult& k = report.kernels[t.positions[j]];
        own_us.push_back(k.samples_us.empty() ? NAN : stats::median(k.samples_us));
        if (std::isfinite(own_us.back())) issue_us += own_us.back();
        recorded_sum += t.recorded_us[j];
        longest_recorded = std::max(longest_recorded, k.recorded_us.median);
    }
    auto set_why = [&](const std::string& why) {
        for (auto k : t.positions) report.kernels[k].energy.why = why;
    };
    if (longest_recorded < o.energy_min_us) {
        set_why("recorded median below --energy-min-us " + std::to_string(o.energy_min_us));
        return EnergyLoop::NotMeasured;
    }
    if (!(issue_us > 0)) {
        set_why("no replayed time to attribute energy to");
        return EnergyLoop::NotMeasured;
    }
    const int batch =
        std::clamp(static_cast<int>(std::ceil(kPollEveryUs / issue_us)), 1, kMaxLaunchesPerPoll);
    Backend& backend = session.backend();
    std::size_t next = 0;
    bool ok = true;
    WorkPlacements placed(backend, work);
    std::uint32_t graph = capture_loop(backend, placed.current(), batch);
    const bool from_graph = graph != 0;
    const double graph_us = batch * issue_us;  // device time of one launch of the graph
    const double read_ms = energy.probe().counter_read_ms;
    const double lead_us =
        std::max(kPollEveryUs, kLeadReads * (std::isfinite(read_ms) ? read_ms : 0) * 1e3);
    double ahead_us = 0;  // device work issued but not yet due by the wall clock
    auto last = std::chrono::steady_clock::now();
    const WindowRun run = energy.windows_apart(
        [&]() -> double {
            if (graph != 0) {
                const auto now = std::chrono::steady_clock::now();
                ahead_us = std::max(
                    0.0, ahead_us - std::chrono::duration<double, std::micro>(now - last).count());
                last = now;
                int launched = 0;
                try {
                    do {
                        backend.launch_graph(graph);
                        ahead_us += graph_us;
                        ++launched;
                    } while (ahead_us < lead_us);
                } catch (const std::exception&) {
                    ok = false;
                }
                return static_cast<double>(launched) * batch;
            }
            const std::vector<Prepared*>& current = placed.current();
            int issued = 0;
            for (; issued < batch && ok; ++issued)
                ok = session.try_issue(*current[next++ % current.size()], t.positions, 0, 0);
            return issued;
        },
        [&] {
            backend.synchronize();
            backend.collect();  // tag 0: untimed
        },
        [&](int) {
            // The device drained: the next window starts on the work moved elsewhere, in a graph
            // of its own (the last one's holds the old addresses).
            if (!placed.move()) return;
            if (from_graph) {
                const std::uint32_t moved = capture_loop(backend, placed.current(), batch);
                if (moved == 0) {
                    placed.undo();
                    return;
                }
                graph = moved;
            }
            ahead_us = 0;
            last = std::chrono::steady_clock::now();
        });
    placements = placed.count();
    if (!ok) {
        set_why("an issue failed during the energy windows");
        return EnergyLoop::NotMeasured;
    }
    if (!run.failure.empty()) {
        set_why(run.failure);
        return EnergyLoop::NotMeasured;
    }
    const double idle = energy.probe().idle_power_w;
    const std::vector<double> dynamic = dynamic_uj_per_unit(run, idle);
    const ClockLimitCount limited = count_clock_limits(run);
    const BoardState board = median_board_state(run);
    std::vector<double> loop_watts;
    for (const EnergyWindow& w : run.windows) loop_watts.push_back(w.power_w());
    const double loop_power_w = loop_watts.empty() ? NAN : stats::median(loop_watts);
    for (std::size_t j = 0; j < t.positions.size(); ++j) {
        KernelEnergy& e = report.kernels[t.positions[j]].energy;
        const double share = recorded_sum > 0 ? t.recorded_us[j] / recorded_sum
                                              : 1.0 / static_cast<double>(t.positions.size());
        const double own = std::isfinite(own_us[j]) ? own_us[j] : issue_us * share;
        e.samples_uj.clear();
        std::vector<double> dyn;
        for (double d : dynamic) {
            dyn.push_back(d * share);
            e.samples_uj.push_back(d * share + idle * own);
        }
        e.dynamic_uj = stats::median(dyn);
        e.launches = run.units;
        e.limited_windows = limited.windows;
        e.limited_by = limited.by;
        e.loop_us = run.seconds_per_unit() * 1e6;
        e.loop_power_w = loop_power_w;
        e.sm_clock_mhz = board.sm_clock_mhz;
        e.temperature_c = board.temperature_c;
        e.why.clear();
    }
    return from_graph ? EnergyLoop::Graph : EnergyLoop::Host;
}

// Kernels whose windows ran with the board's clocks held down get one note naming how many.
void note_clock_limits(Report& report) {
    std::size_t limited = 0, measured = 0;
    std::set<std::string> by;
    for (const KernelResult& k : report.kernels) {
        if (!k.energy.measured()) continue;
        ++measured;
        if (k.energy.limited_windows == 0) continue;
        ++limited;
        by.insert(k.energy.limited_by);
    }
    if (limited == 0) return;
    std::string what;
    for (const auto& b : by) what += (what.empty() ? "" : "; ") + b;
    report.energy.notes.push_back(
        std::to_string(limited) + " of " + std::to_string(measured) +
        " kernels ran with the board's clocks held down (" + what +
        ") in some of their windows (limited_windows): launched back to back they reach the "
        "board's limit, so their energy per launch is at the clocks its controller chose, not "
        "those of the recorded step");
}

// One instance of a template, prepared: its work and the step recorded before it.
struct Ready {
    Prepared* work;
    Prepared* predecessor;    // nullptr: none, or it cannot run here
    bool in_graph = false;    // Template::in_graph
    std::uint32_t graph = 0;  // its capture (0: none yet, or it failed)
    bool capture_tried = false;
};

// The tag of a timed kernel inside an instance's graph: the graph is launched once per run and
// each run's records are collected before the next, so one tag serves every run. Apart from the
// direct runs' tags (1 to --runs).
constexpr std::uint64_t kGraphRunTag = std::uint64_t{1} << 48;

enum class Run : std::uint8_t { Failed, Direct, InGraph };

// Template::in_graph: the instance's recorded predecessor, its warm-up reads and the kernel itself
// captured into one graph, so the kernel runs as a graph node right after another, as it was
// recorded. The reads come after the predecessor, as in a direct run: before it, what the
// predecessor wrote pushed the kernel's inputs out of the L2 (a UNet's group norm after the
// 16 MiB skip-connection cat: 34.1 us against 25.8 recorded, 26.3 so; H200). 0 where one of them
// cannot be captured, with `why` (the instance is then issued directly).
std::uint32_t capture_instance(Session& session, const Template& t, Ready& r, bool warm,
                               std::string& why) {
    Backend& backend = session.backend();
    r.capture_tried = true;
    if (r.predecessor == nullptr) {
        why = "no recorded predecessor to run before it";
        return 0;
    }
    for (const Prepared* p : {r.work, r.predecessor})
        if (why = backend.capture_blocker(p->handle, 0); !why.empty()) return 0;
    return detail::capture_graph(
        backend, 0, false,
        [&] {
            backend.issue(r.predecessor->handle, 0, 0);
            if (warm) backend.warm_inputs(r.work->handle, 0, 0);
            // A failing issue is marked failed by the session; the capture is of no use then.
            if (!session.try_issue(*r.work, t.positions, 0, kGraphRunTag))
                throw std::runtime_error(r.work->reason);
        },
        why);
}

// How many templates recorded inside CUDA graphs were timed inside one, and why not the others.
std::string in_graph_note(const DriverOptions& o, std::size_t in_graph, std::size_t timed,
                          const std::string& not_captured) {
    std::string note =
        "kernels recorded inside a CUDA graph, right after another kernel of the same launch: " +
        std::to_string(timed) + " of " + std::to_string(in_graph) +
        " timed so, inside a graph after their recorded predecessor (a graph node's record is "
        "longer than the same kernel's launched alone: 0.13 us on the H200, 10-25% of a 1 us "
        "kernel)";
    if (timed == in_graph) return note;
    const std::string why = !o.graph.value_or(true)      ? "--no-graph"
                            : o.l2_flush                 ? "--l2-flush"
                            : o.context == Context::None ? "--context none"
                                                         : "the first: " + not_captured;
    return note + "; the others were issued directly (" + why + ")";
}

void run_templates(Session& session, const std::vector<Template>& templates,
                   const detail::EnergyRun* energy) {
    Backend& backend = session.backend();
    const DriverOptions& o = session.options();
    backend.set_stream_count(1);
    std::size_t done = 0;
    detail::ProgressLine progress_line("unique kernels", "timed", templates.size(), o.progress);
    std::size_t from_graph = 0, from_host = 0;  // energy loops
    std::size_t measured_loops = 0, moved_loops = 0;
    std::size_t in_graph = 0, in_graph_timed = 0;  // templates recorded in graphs; timed so
    std::string not_captured;                      // why the first instance could not be
    for (const Template& t : templates) {
        if (!session.stopped().empty()) break;
        progress_line.tick(done);
        ++done;
        std::vector<Ready> ready;
        for (std::size_t i = 0; i < t.instances.size(); ++i) {
            Prepared& p = session.prepare(t.instances[i]);
            if (p.disposition != Disposition::Ready) {
                if (ready.empty() && i + 1 == t.instances.size())
                    for (auto k : t.positions) session.mark(k, p);
                continue;
            }
            Prepared* before = nullptr;
            if (o.context != Context::None && i < t.predecessors.size() && t.predecessors[i]) {
                Prepared& q = session.prepare(*t.predecessors[i]);
                if (q.disposition == Disposition::Ready) before = &q;
            }
            ready.push_back({&p, before, i < t.in_graph.size() && t.in_graph[i]});
        }
        if (ready.empty()) continue;
        // Recorded as a node of a CUDA graph after another: timed inside a graph, unless told
        // --no-graph, or an eviction must come right before it (--l2-flush), or there is no
        // context to put before it.
        const bool as_graph = o.graph.value_or(true) && !o.l2_flush && o.context != Context::None;
        const bool any_in_graph =
            std::any_of(ready.begin(), ready.end(), [](const Ready& r) { return r.in_graph; });
        in_graph += any_in_graph;
        const std::vector<std::size_t> no_kernels;
        // Tag 0 marks untimed work (warmups, predecessors); its activities are dropped.
        int issues = 0;  // of this template: the iteration its NVTX ranges name
        const bool recorded_cache = o.context == Context::Recorded;
        // Records of direct runs, by tag, as they come back (a graph run collects early).
        std::map<std::uint64_t, std::vector<TimedActivity>> groups;
        auto gather = [&] {
            for (auto& [tag, records] : detail::by_tag(backend.collect())) {
                auto& into = groups[tag];
                into.insert(into.end(), records.begin(), records.end());
            }
        };
        auto run_once = [&](std::size_t i, std::uint64_t tag) {
            Ready& r = ready[i % ready.size()];
            session.set_iteration(++issues);
            if (recorded_cache) backend.flush_l2();
            const bool cold_code = o.instruction_cache == InstructionCache::Cold ||
                                   (o.instruction_cache == InstructionCache::Auto && !r.in_graph);
            if (recorded_cache && cold_code) backend.evict_instruction_caches();
            if (as_graph && r.in_graph && !r.capture_tried) {
                std::string why;
                r.graph = capture_instance(session, t, r, recorded_cache, why);
                if (r.graph == 0 && not_captured.empty()) not_captured = why;
            }
            if (as_graph && r.in_graph && r.graph != 0) {
                // Its records carry kGraphRunTag in every run: taken before the next one.
                backend.launch_graph(r.graph);
                session.synchronize();
                gather();
                auto records = groups.extract(kGraphRunTag);
                if (tag != 0)
                    detail::attribute(session, t.positions,
                                      records.empty() ? kNothing : records.mapped(), t.recorded_us);
                return Run::InGraph;
            }
            if (r.predecessor != nullptr && !session.try_issue(*r.predecessor, no_kernels, 0, 0))
                return Run::Failed;
            if (recorded_cache) backend.warm_inputs(r.work->handle, 0, 0);  // untimed
            if (o.l2_flush) backend.flush_l2();
            return session.try_issue(*r.work, t.positions, 0, tag) ? Run::Direct : Run::Failed;
        };
        bool ok = true;
        for (int w = 0; w < o.warmup && ok; ++w)
            ok = run_once(static_cast<std::size_t>(w), 0) != Run::Failed;
        session.synchronize();
        backend.collect();
        groups.clear();
        std::vector<std::uint64_t> direct;  // runs issued directly, by tag
        bool graphed = false;
        for (int r = 0; r < o.runs && ok; ++r) {
            const auto tag = static_cast<std::uint64_t>(r) + 1;
            const Run run = run_once(static_cast<std::size_t>(r), tag);
            ok = run != Run::Failed;
            if (run == Run::Direct) direct.push_back(tag);
            graphed |= run == Run::InGraph;
        }
        in_graph_timed += graphed;
        session.synchronize();
        gather();
        for (std::uint64_t tag : direct) {
            auto it = groups.find(tag);
            detail::attribute(session, t.positions, it != groups.end() ? it->second : kNothing,
                              t.recorded_us);
        }
        if (energy != nullptr && energy->available() && ok) {
            std::vector<Prepared*> work;
            for (const Ready& r : ready) work.push_back(r.work);
            int placements = 0;
            const EnergyLoop loop = measure_template_energy(session, t, work, *energy, placements);
            if (loop == EnergyLoop::Graph) ++from_graph;
            if (loop == EnergyLoop::Host) ++from_host;
            if (loop != EnergyLoop::NotMeasured) {
                ++measured_loops;
                moved_loops += placements > 1;
            }
        }
    }
    progress_line.finish(done);
    note_clock_limits(session.report());
    if (in_graph > 0) {
        session.report().notes.push_back(in_graph_note(o, in_graph, in_graph_timed, not_captured));
        // Stated only where the trace has such kernels; regress reads its absence as "alone".
        session.report().options.emplace_back("graph_nodes",
                                              in_graph_timed > 0 ? "in-graph" : "alone");
    }
    if (moved_loops > 0)
        session.report().energy.notes.push_back(
            "energy windows on buffers of their own: " + std::to_string(moved_loops) + " of " +
            std::to_string(measured_loops) +
            " loops ran each window on a fresh copy of the kernel's tensors (aten ops), since a "
            "memory-bound kernel's energy per launch depends on where its data lies; their "
            "samples spread over placements as fresh runs do. The others (GEMMs, copies, "
            "Triton) kept one placement for all windows");
    if (from_graph + from_host > 0)
        session.report().energy.notes.push_back(
            "energy loops: " + std::to_string(from_graph) + " of " +
            std::to_string(from_graph + from_host) +
            " launched back to back from a CUDA graph; the others were issued from the host "
            "(they cannot be captured), and the idle gaps between their short kernels count as "
            "theirs");
}

// --only: the templates that time a selected kernel; the kernels of the others are skipped, saying
// why. An id that names no unique kernel is an error (a typo would time nothing).
std::vector<Template> only_selected(Session& session, std::vector<Template> templates) {
    const auto& only = session.options().only;
    if (only.empty()) return templates;
    Report& report = session.report();
    std::vector<bool> selected(report.kernels.size(), false);
    for (const auto& id : only) {
        const auto it = std::find_if(report.kernels.begin(), report.kernels.end(),
                                     [&](const KernelResult& k) { return k.id == id; });
        if (it == report.kernels.end())
            throw std::runtime_error("--only " + id + ": no unique kernel has this id");
        selected[static_cast<std::size_t>(it - report.kernels.begin())] = true;
    }
    std::vector<Template> kept;
    for (auto& t : templates) {
        bool wanted = false;
        for (auto k : t.positions) wanted |= selected[k];
        if (wanted) kept.push_back(std::move(t));
    }
    for (std::size_t k = 0; k < report.kernels.size(); ++k)
        if (!selected[k] && report.kernels[k].outcome == KernelOutcome::Pending) {
            report.kernels[k].outcome = KernelOutcome::Skipped;
            report.kernels[k].reason = "not selected by --only";
        }
    return kept;
}

// Each rank's unique collectives differ (an all_to_all's sizes do), but every rank must run the
// same collectives in the same order: the positions in the recorded order are rank 0's first
// instance of each of its unique collectives, and every rank times its own collective at each.
std::vector<Template> collective_templates(const Analysis& analysis, Session& session) {
    const std::vector<CollectiveCall> calls = collective_schedule(analysis);
    std::map<std::string, std::size_t> first;  // instance key -> position
    std::string mine;
    for (std::size_t i = 0; i < calls.size(); ++i)
        if (first.emplace(collective_recipe(analysis, calls[i].node).instance_key(), i).second)
            mine += std::to_string(i) + " ";
    const std::vector<std::string> all = session.backend().all_gather_text(mine);
    std::vector<Template> templates;
    std::istringstream chosen(all.front());
    for (std::size_t i; chosen >> i;) {
        if (i >= calls.size())
            throw std::runtime_error("rank 0 times collective #" + std::to_string(i + 1) +
                                     " of its trace; this rank's trace records " +
                                     std::to_string(calls.size()));
        const CollectiveCall& c = calls[i];
        templates.push_back(Template{{collective_recipe(analysis, c.node)},
                                     {},
                                     {session.kernel_index(c.kernel_id)},
                                     {c.recorded_us},
                                     {}});
    }
    return templates;
}

}  // namespace

Report replay_unique(const Analysis& analysis, Backend& backend, const DriverOptions& options) {
    const auto start = std::chrono::steady_clock::now();
    Session session(backend, analysis.kernels, options);
    detail::add_inputs(session.report(), analysis);
    detail::add_options(session.report(), options, true);
    std::unique_ptr<detail::EnergyRun> energy;
    if (options.energy)
        energy = std::make_unique<detail::EnergyRun>(backend, options, session.report().energy);
    run_templates(session,
                  only_selected(session, detail::plan_unique(
                                             analysis, detail::kernel_of_nodes(analysis, session))),
                  energy.get());
    // Collectives after the kernels, on every rank alike. --only times the selected kernels of
    // this rank's trace, which other ranks' selections need not match: a collective that one rank
    // skips would leave the others waiting, so with --only none runs (only_selected marked them).
    // Nor are they measured for energy: the windows size their batches from this rank's times, so
    // ranks would issue different numbers of collectives.
    if (backend.runs_collectives() && options.only.empty())
        run_templates(session, collective_templates(analysis, session), nullptr);
    Report report = session.finish("unique", 0);
    if (options.sequential_check && options.only.empty()) {
        if (options.progress) options.progress("sequential pass for comparison");
        DriverOptions check = options;
        // One pass of a short trace varies by several percent from run to run (launch jitter,
        // clocks); the mean over a few passes is what the prediction should be held against.
        check.iterations = kSequentialCheckPasses;
        check.pace = Pace::None;
        const Report seq =
            detail::replay_sequential(analysis, backend, check, nullptr, energy.get(), nullptr);
        report.totals.sequential_kernel_us = seq.totals.replayed_kernel_us;
        report.energy.step = seq.energy.step;
        for (const auto& note : seq.energy.notes) report.energy.notes.push_back(note);
        report.notes.push_back("sequential pass (mean of " +
                               std::to_string(kSequentialCheckPasses) +
                               "): " + std::to_string(seq.totals.replayed_kernel_us) +
                               " us replayed kernel time over " +
                               std::to_string(seq.totals.replayed_recorded_us) + " us recorded");
    }
    if (energy) energy->finish(report.energy);
    finalize_energy(report);
    report.totals.wall_seconds = detail::seconds_since(start);
    return report;
}

Report replay_unique(const SignatureFile& file, Backend& backend, const DriverOptions& options) {
    const auto start = std::chrono::steady_clock::now();
    Session session(backend, file.kernels, options);
    // The signature file's own path is added by the caller, which read it.
    session.report().inputs.emplace_back("trace", file.trace);
    session.report().inputs.emplace_back("trace_hash", file.trace_hash);
    detail::add_options(session.report(), options, true);
    std::vector<Template> templates;
    double covered = 0, total = 0;
    for (const auto& k : file.kernels) {
        if (k.kind == ActivityKind::Kernel) {
            total += k.recorded_us.sum;
            if (k.recipe.replayable()) covered += k.recorded_us.sum;
        }
        if (!k.recipe.replayable() || k.recipe.issued_with_op) continue;
        templates.push_back(
            Template{{k.recipe}, {}, {session.kernel_index(k.id)}, {k.recorded_us.median}, {}});
    }
    session.report().totals.recipe_coverage = total > 0 ? covered / total : 0;
    session.report().notes.push_back(
        "isolated replay from a signature file: kernels issued by another kernel's op (split-K "
        "reductions) are not timed; a signature file has no predecessors: --context recorded "
        "evicts L2, then reads in the inputs that the representative instance's reuse distance "
        "(or, without one, the op's signature) says were cached");
    std::unique_ptr<detail::EnergyRun> energy;
    if (options.energy)
        energy = std::make_unique<detail::EnergyRun>(backend, options, session.report().energy);
    run_templates(session, only_selected(session, std::move(templates)), energy.get());
    if (energy) energy->finish(session.report().energy);
    return session.finish("unique", detail::seconds_since(start));
}

}  // namespace replay
