// Sequential mode: every recorded issue in recorded order, on as many streams as were recorded,
// with the recorded cross-stream waits and, on request, the recorded idle gaps.
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "energy_run.h"
#include "session.h"

namespace replay {

using detail::Session;

namespace {
// Issues per poll of the energy counter while a step loops through the windows.
constexpr std::size_t kIssuesPerPoll = 64;
}  // namespace

namespace detail {

Report replay_sequential(const Analysis& analysis, Backend& backend, const DriverOptions& options,
                         Timeline* timeline, const EnergyRun* energy, double* last_iteration_s) {
    const auto start = std::chrono::steady_clock::now();
    Session session(backend, analysis.kernels, options);
    if (energy != nullptr) describe_energy_run(*energy, options, session.report().energy);
    detail::add_inputs(session.report(), analysis);
    detail::add_options(session.report(), options, false);
    const KernelGraph& graph = analysis.graph;
    const auto& nodes = graph.nodes();
    const auto kernel_of = detail::kernel_of_nodes(analysis, session);
    const std::vector<Step> steps = plan_steps(graph, analysis.recipes);

    std::vector<Prepared*> prepared(steps.size());
    for (std::size_t s = 0; s < steps.size(); ++s) {
        prepared[s] = &session.prepare(analysis.recipes[steps[s].issue_node]);
        if (prepared[s]->disposition != Disposition::Ready)
            for (auto n : steps[s].nodes) session.mark(kernel_of[n], *prepared[s]);
    }
    std::unordered_map<std::uint32_t, std::vector<int>>
        waits_before;  // waiter node -> producer slots
    for (const auto& w : graph.waits())
        waits_before[w.waiter].push_back(static_cast<int>(nodes[w.producer].stream_slot));

    backend.set_stream_count(static_cast<int>(graph.streams().size()));
    std::vector<double> recorded_us;
    std::vector<std::size_t> positions;
    std::vector<std::int64_t> last_end;  // recorded, per stream
    // Step s of an iteration; tag 0: untimed (the energy windows).
    auto issue_step = [&](std::size_t s, std::uint64_t tag) {
        const Step& step = steps[s];
        if (prepared[s]->disposition != Disposition::Ready) return;
        for (auto n : step.nodes)
            if (auto w = waits_before.find(n); w != waits_before.end())
                for (int producer : w->second)
                    if (producer != step.stream) backend.stream_wait(step.stream, producer);
        const GpuActivity& first = graph.activity(nodes[step.nodes.front()]);
        if (options.pace == Pace::Recorded &&
            last_end[static_cast<std::size_t>(step.stream)] >= 0) {
            const std::int64_t gap = first.ts - last_end[static_cast<std::size_t>(step.stream)];
            if (gap > 0) backend.delay(step.stream, gap);
        }
        const GpuActivity& last = graph.activity(nodes[step.nodes.back()]);
        last_end[static_cast<std::size_t>(step.stream)] = last.ts + last.dur;
        std::vector<std::size_t> kernels;
        for (auto n : step.nodes) kernels.push_back(kernel_of[n]);
        if (options.warm_inputs) backend.warm_inputs(prepared[s]->handle, step.stream);
        session.try_issue(*prepared[s], kernels, step.stream, tag);
    };
    for (int it = 0; it < std::max(1, options.iterations); ++it) {
        last_end.assign(graph.streams().size(), -1);
        if (energy != nullptr && last_iteration_s != nullptr &&
            it + 1 == std::max(1, options.iterations))
            *last_iteration_s = energy->now_s();
        for (std::size_t s = 0; s < steps.size(); ++s) {
            issue_step(s, s + 1);
            if (options.progress && (s + 1) % 2000 == 0)
                options.progress("iteration " + std::to_string(it + 1) + ": issued " +
                                 std::to_string(s + 1) + "/" + std::to_string(steps.size()));
        }
        backend.synchronize();
        auto groups = detail::by_tag(backend.collect());
        const bool last_iteration = it + 1 == std::max(1, options.iterations);
        for (std::size_t s = 0; s < steps.size(); ++s) {
            auto g = groups.find(s + 1);
            if (g == groups.end()) continue;
            positions.clear();
            recorded_us.clear();
            for (auto n : steps[s].nodes) {
                positions.push_back(kernel_of[n]);
                recorded_us.push_back(static_cast<double>(graph.activity(nodes[n]).dur) / 1000.0);
            }
            detail::attribute(session, positions, g->second, recorded_us);
            // On the recorded stream's id (not the replay's stream handle), so that each
            // replayed track sits beside its recorded one.
            if (timeline != nullptr && last_iteration)
                for (const auto& r : g->second)
                    timeline->items.push_back({r.name, graph.streams()[steps[s].stream].stream,
                                               static_cast<double>(r.start_ns) / 1000.0,
                                               static_cast<double>(r.end_ns - r.start_ns) / 1000.0,
                                               true});
        }
        if (options.progress) options.progress("iteration " + std::to_string(it + 1) + " done");
    }
    if (timeline != nullptr) add_recorded_track(*timeline, graph);
    if (!graph.host_syncs().empty())
        session.report().notes.push_back(
            std::to_string(graph.host_syncs().size()) +
            " recorded host synchronisations were not re-issued (replay runs back to back)");
    if (energy != nullptr && energy->available() && !steps.empty()) {
        if (options.progress) options.progress("energy: the step looped through the windows");
        std::size_t next = 0;
        detail::measure_step_energy(
            *energy,
            [&]() -> double {
                for (std::size_t i = 0; i < kIssuesPerPoll; ++i, ++next) {
                    if (next % steps.size() == 0) last_end.assign(graph.streams().size(), -1);
                    issue_step(next % steps.size(), 0);
                }
                return static_cast<double>(kIssuesPerPoll) / static_cast<double>(steps.size());
            },
            [&] {
                backend.synchronize();
                backend.collect();
            },
            session.report().energy);
    }
    return session.finish("sequential", detail::seconds_since(start));
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
        // On the replayed track's clock: its first activity starts at 0, within a launch's latency
        // of the host's first issue of that iteration.
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
