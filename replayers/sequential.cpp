// Sequential mode: every recorded issue in recorded order, on as many streams as were recorded,
// with the recorded cross-stream waits and, on request, the recorded idle gaps.
#include <algorithm>
#include <unordered_map>

#include "session.h"

namespace replay {

using detail::Session;

Report replay_sequential(const Analysis& analysis, Backend& backend, const DriverOptions& options,
                         Timeline* timeline) {
    const auto start = std::chrono::steady_clock::now();
    Session session(backend, analysis.kernels, options);
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
    for (int it = 0; it < std::max(1, options.iterations); ++it) {
        std::vector<std::int64_t> last_end(graph.streams().size(), -1);  // recorded, per stream
        for (std::size_t s = 0; s < steps.size(); ++s) {
            const Step& step = steps[s];
            if (prepared[s]->disposition != Disposition::Ready) continue;
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
            session.try_issue(*prepared[s], kernels, step.stream, s + 1);
            if (options.progress && (s + 1) % 2000 == 0)
                options.progress("iteration " + std::to_string(it + 1) + ": issued " +
                                 std::to_string(s + 1) + "/" + std::to_string(steps.size()));
        }
        backend.synchronize();
        auto groups = detail::by_tag(backend.collect());
        const bool last_iteration = it + 1 == std::max(1, options.iterations);
        for (std::size_t s = 0; s < steps.size(); ++s) {
            if (prepared[s]->disposition != Disposition::Ready) continue;
            auto g = groups.find(s + 1);
            const std::vector<TimedActivity> nothing;
            const auto& records = g == groups.end() ? nothing : g->second;
            positions.clear();
            recorded_us.clear();
            for (auto n : steps[s].nodes) {
                positions.push_back(kernel_of[n]);
                recorded_us.push_back(static_cast<double>(graph.activity(nodes[n]).dur) / 1000.0);
            }
            detail::attribute(session, positions, records, recorded_us);
            // On the recorded stream's id (not the replay's stream handle), so that each
            // replayed track sits beside its recorded one.
            if (timeline != nullptr && last_iteration)
                for (const auto& r : records)
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
    return session.finish("sequential", detail::seconds_since(start));
}

}  // namespace replay
