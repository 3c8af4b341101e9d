// Unique mode: each unique kernel alone, warmup + timed runs, with the context its recorded
// instances had (see Context in drivers.h).
#include <map>
#include <sstream>

#include "plan.h"
#include "replay/ranks.h"
#include "session.h"

namespace replay {
namespace {

using detail::Session;
using detail::Template;

constexpr int kSequentialCheckPasses = 3;

void run_templates(Session& session, const std::vector<Template>& templates) {
    Backend& backend = session.backend();
    const DriverOptions& o = session.options();
    backend.set_stream_count(1);
    std::size_t done = 0;
    for (const Template& t : templates) {
        if (!session.stopped().empty()) break;
        ++done;
        struct Ready {
            Prepared* work;
            Prepared* predecessor;  // nullptr: none, or it cannot run here
        };
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
            ready.push_back({&p, before});
        }
        if (ready.empty()) continue;
        const std::vector<std::size_t> no_kernels;
        // Tag 0 marks untimed work (warmups, predecessors); its activities are dropped.
        auto run_once = [&](std::size_t i, std::uint64_t tag) {
            const Ready& r = ready[i % ready.size()];
            const bool recorded_cache = o.context == Context::Recorded;
            if (recorded_cache) backend.flush_l2();
            if (r.predecessor != nullptr && !session.try_issue(*r.predecessor, no_kernels, 0, 0))
                return false;
            if (recorded_cache) backend.warm_inputs(r.work->handle, 0, 0);  // untimed
            if (o.l2_flush) backend.flush_l2();
            return session.try_issue(*r.work, t.positions, 0, tag);
        };
        bool ok = true;
        for (int w = 0; w < o.warmup && ok; ++w) ok = run_once(static_cast<std::size_t>(w), 0);
        backend.synchronize();
        backend.collect();
        for (int r = 0; r < o.runs && ok; ++r)
            ok = run_once(static_cast<std::size_t>(r), static_cast<std::uint64_t>(r) + 1);
        backend.synchronize();
        auto groups = detail::by_tag(backend.collect());
        for (int r = 0; r < o.runs; ++r) {
            auto it = groups.find(static_cast<std::uint64_t>(r) + 1);
            if (it != groups.end())
                detail::attribute(session, t.positions, it->second, t.recorded_us);
        }
        if (o.progress && (done % 10 == 0 || done == templates.size()))
            o.progress("unique kernels " + std::to_string(done) + "/" +
                       std::to_string(templates.size()));
    }
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
                                     {c.recorded_us}});
    }
    return templates;
}

}  // namespace

Report replay_unique(const Analysis& analysis, Backend& backend, const DriverOptions& options) {
    const auto start = std::chrono::steady_clock::now();
    Session session(backend, analysis.kernels, options);
    detail::add_inputs(session.report(), analysis);
    detail::add_options(session.report(), options, true);
    run_templates(session,
                  detail::plan_unique(analysis, detail::kernel_of_nodes(analysis, session)));
    if (backend.runs_collectives()) run_templates(session, collective_templates(analysis, session));
    Report report = session.finish("unique", 0);
    if (options.sequential_check) {
        if (options.progress) options.progress("sequential pass for comparison");
        DriverOptions check = options;
        // One pass of a short trace varies by several percent from run to run (launch jitter,
        // clocks); the mean over a few passes is what the prediction should be held against.
        check.iterations = kSequentialCheckPasses;
        check.pace = Pace::None;
        const Report seq = replay_sequential(analysis, backend, check, nullptr);
        report.totals.sequential_kernel_us = seq.totals.replayed_kernel_us;
        report.notes.push_back("sequential pass (mean of " +
                               std::to_string(kSequentialCheckPasses) +
                               "): " + std::to_string(seq.totals.replayed_kernel_us) +
                               " us replayed kernel time over " +
                               std::to_string(seq.totals.replayed_recorded_us) + " us recorded");
    }
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
            Template{{k.recipe}, {}, {session.kernel_index(k.id)}, {k.recorded_us.median}});
    }
    session.report().totals.recipe_coverage = total > 0 ? covered / total : 0;
    session.report().notes.push_back(
        "isolated replay from a signature file: kernels issued by another kernel's op (split-K "
        "reductions) are not timed; a signature file has no predecessors: --context recorded "
        "evicts L2, then reads in the inputs that the representative instance's reuse distance "
        "(or, without one, the op's signature) says were cached");
    run_templates(session, templates);
    return session.finish("unique", detail::seconds_since(start));
}

}  // namespace replay
