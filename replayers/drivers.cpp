#include "replay/drivers.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "replay/json_writer.h"

namespace replay {
namespace {

constexpr const char* kVersion = "0.1.0";

std::vector<std::pair<std::string, std::string>> environment_pairs(const Environment& e) {
    std::vector<std::pair<std::string, std::string>> v = {
        {"backend", e.backend},
        {"gpu", e.device_name},
        {"driver", e.driver_version},
        {"cuda", e.cuda_runtime_version},
        {"cublas", e.cublas_version},
        {"libtorch", e.libtorch_version},
        {"timing", e.timing},
        {"sm_clock_mhz", std::to_string(e.sm_clock_mhz)},
        {"max_sm_clock_mhz", std::to_string(e.max_sm_clock_mhz)},
        {"memory_clock_mhz", std::to_string(e.memory_clock_mhz)},
        {"total_memory_bytes", std::to_string(e.total_memory)},
        {"compute_capability",
         std::to_string(e.compute_major) + "." + std::to_string(e.compute_minor)},
    };
    return v;
}

// Everything a driver shares: the report skeleton, prepared recipes, per-kernel samples.
class Session {
  public:
    Session(Backend& backend, const std::vector<UniqueKernel>& kernels,
            const DriverOptions& options)
        : backend_(backend), options_(options) {
        const Environment env = backend.environment();
        report_.tool_version = kVersion;
        report_.backend = env.backend;
        report_.environment = environment_pairs(env);
        for (const auto& note : env.notes) report_.notes.push_back(note);
        for (const auto& k : kernels) {
            KernelResult r = recorded_result(k);
            r.disposition = !k.recipe.replayable()    ? "not_replayable"
                            : k.recipe.issued_with_op ? "issued_with_op"
                                                      : "pending";
            if (k.recipe.tier == Tier::Collective) {
                r.disposition = "skipped";
                r.reason =
                    "collectives need every rank: multi-process NCCL replay is not implemented";
            }
            if (k.kind == ActivityKind::Kernel)
                report_.totals.recorded_kernel_us += k.recorded_us.sum;
            index_[k.id] = report_.kernels.size();
            report_.kernels.push_back(std::move(r));
        }
    }

    // Prepares once per recipe text; a recipe that cannot run marks its kernels skipped.
    Prepared& prepare(const Recipe& recipe) {
        const std::string key = recipe.instance_key();
        auto it = prepared_.find(key);
        if (it == prepared_.end()) {
            if (recipe.tier == Tier::Collective) {
                it = prepared_
                         .emplace(key,
                                  Prepared{Disposition::Skipped, "collectives need every rank", 0})
                         .first;
            } else {
                it = prepared_.emplace(key, backend_.prepare(recipe)).first;
            }
            if (it->second.disposition == Disposition::Ready && !it->second.reason.empty())
                notes_.insert(it->second.reason);
        }
        return it->second;
    }

    // Issues prepared work; a failure (an op that libtorch refuses at run time) marks the recipe
    // failed for good and its kernels with the reason, and the replay goes on.
    template <typename Kernels>
    bool try_issue(Prepared& p, const Kernels& kernels, int stream, std::uint64_t tag) {
        try {
            backend_.issue(p.handle, stream, tag);
            return true;
        } catch (const std::exception& e) {
            p.disposition = Disposition::Failed;
            p.reason = e.what();
            for (std::size_t k : kernels) mark(k, p);
            return false;
        }
    }

    void mark(std::size_t kernel, const Prepared& p) {
        KernelResult& r = report_.kernels[kernel];
        if (p.disposition == Disposition::Ready) return;
        r.disposition = p.disposition == Disposition::Skipped ? "skipped" : "failed";
        r.reason = p.reason;
    }

    void add_sample(std::size_t kernel, const TimedActivity& a) {
        KernelResult& r = report_.kernels[kernel];
        r.samples_us.push_back(static_cast<double>(a.end_ns - a.start_ns) / 1000.0);
        if (std::find(r.replayed_names.begin(), r.replayed_names.end(), a.name) ==
                r.replayed_names.end() &&
            r.replayed_names.size() < 8)
            r.replayed_names.push_back(a.name);
        if (a.per_kernel && a.name == r.name) r.name_match = true;
        if (r.disposition == "pending") r.disposition = "replayed";
    }

    std::size_t kernel_index(const std::string& id) const { return index_.at(id); }
    Report& report() { return report_; }
    Backend& backend() { return backend_; }
    const DriverOptions& options() const { return options_; }

    Report finish(const char* mode, double seconds) {
        report_.mode = mode;
        report_.totals.wall_seconds = seconds;
        for (auto& k : report_.kernels)
            if (k.disposition == "pending") {
                k.disposition = "skipped";
                if (k.reason.empty()) k.reason = "no timed activity came back for it";
            }
        for (const auto& n : notes_) report_.notes.push_back(n);
        finalize_report(report_);
        return report_;
    }

  private:
    Backend& backend_;
    DriverOptions options_;
    Report report_;
    std::unordered_map<std::string, std::size_t> index_;
    std::unordered_map<std::string, Prepared> prepared_;
    std::set<std::string> notes_;
};

// Groups timed activities by tag, each group in start order.
std::unordered_map<std::uint64_t, std::vector<TimedActivity>> by_tag(
    std::vector<TimedActivity> records) {
    std::unordered_map<std::uint64_t, std::vector<TimedActivity>> out;
    for (auto& r : records) out[r.tag].push_back(std::move(r));
    for (auto& [tag, v] : out)
        std::sort(v.begin(), v.end(), [](const TimedActivity& a, const TimedActivity& b) {
            return a.start_ns < b.start_ns;
        });
    return out;
}

// Kernel index per graph node.
std::vector<std::size_t> kernel_of_nodes(const Analysis& analysis, Session& session) {
    std::vector<std::size_t> of(analysis.graph.nodes().size(), 0);
    for (const auto& k : analysis.kernels) {
        const std::size_t i = session.kernel_index(k.id);
        for (auto n : k.nodes) of[n] = i;
    }
    return of;
}

void add_inputs(Report& report, const Analysis& analysis) {
    report.inputs.emplace_back("trace", analysis.trace().source);
    report.inputs.emplace_back("trace_hash", analysis.trace_hash);
    // Kernel ids depend on these (the Execution Trace fixes overloads, both add shapes):
    // compare says when two reports differ in them.
    if (!analysis.execution_trace.empty())
        report.inputs.emplace_back("et", analysis.execution_trace);
    if (!analysis.shape_log.empty()) report.inputs.emplace_back("shapes", analysis.shape_log);
    for (const auto& note : analysis.notes) report.notes.push_back(note);
    report.totals.recipe_coverage = analysis.coverage;
}

const char* context_name(Context context) {
    switch (context) {
        case Context::Previous:
            return "previous";
        case Context::None:
            return "none";
        case Context::Recorded:
            break;
    }
    return "recorded";
}

void add_options(Report& report, const DriverOptions& o, bool unique) {
    if (unique) {
        report.options.emplace_back("warmup", std::to_string(o.warmup));
        report.options.emplace_back("runs", std::to_string(o.runs));
        report.options.emplace_back("l2_flush", o.l2_flush ? "true" : "false");
        report.options.emplace_back("context", context_name(o.context));
    } else {
        report.options.emplace_back("pace", o.pace == Pace::Recorded ? "recorded" : "none");
        report.options.emplace_back("iterations", std::to_string(o.iterations));
        report.options.emplace_back("warm_inputs", o.warm_inputs ? "true" : "false");
    }
}

// Matches one issue's timed activities to the recorded kernels it re-creates.
void attribute(Session& session, const std::vector<std::size_t>& positions,
               const std::vector<TimedActivity>& recs, const std::vector<double>& recorded_us) {
    if (recs.empty() || positions.empty()) return;
    if (recs.front().per_kernel) {
        // Same name first (cuBLAS may add or drop a helper kernel), then what is left in order.
        std::vector<bool> used(recs.size(), false);
        std::vector<std::ptrdiff_t> match(positions.size(), -1);
        for (std::size_t i = 0; i < positions.size(); ++i)
            for (std::size_t j = 0; j < recs.size(); ++j)
                if (!used[j] && recs[j].name == session.report().kernels[positions[i]].name) {
                    match[i] = static_cast<std::ptrdiff_t>(j);
                    used[j] = true;
                    break;
                }
        std::size_t next = 0;
        for (std::size_t i = 0; i < positions.size(); ++i) {
            if (match[i] < 0) {
                while (next < recs.size() && used[next]) ++next;
                if (next == recs.size()) continue;
                match[i] = static_cast<std::ptrdiff_t>(next);
                used[next] = true;
            }
            session.add_sample(positions[i], recs[static_cast<std::size_t>(match[i])]);
        }
        return;
    }
    // Whole-issue timing: split by the recorded shares so sums stay comparable.
    double total = 0;
    for (double d : recorded_us) total += d;
    const TimedActivity& whole = recs.front();
    const double span = static_cast<double>(whole.end_ns - whole.start_ns);
    for (std::size_t i = 0; i < positions.size(); ++i) {
        TimedActivity part = whole;
        const double share =
            total > 0 ? recorded_us[i] / total : 1.0 / static_cast<double>(positions.size());
        part.end_ns = part.start_ns + static_cast<std::int64_t>(span * share);
        session.add_sample(positions[i], part);
    }
}

template <typename Clock = std::chrono::steady_clock>
double seconds_since(typename Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// Unique-mode core: each template (a recipe and the kernels its issue re-creates) alone.
struct Template {
    // The recorded instances (same work, different tensors: layer 3's and layer 7's weights),
    // cycled through run after run so caches see what the recording saw, not one hot buffer.
    std::vector<Recipe> instances;
    // Per instance, the step recorded just before it on its stream: issued untimed before each
    // run so the kernel starts with the caches its predecessor left, as in the recording.
    std::vector<std::optional<Recipe>> predecessors;
    std::vector<std::size_t> positions;  // kernel index per produced activity
    std::vector<double> recorded_us;     // recorded duration per position (first instance)
};
constexpr std::size_t kMaxInstances = 64;
constexpr int kSequentialCheckPasses = 3;

void run_templates(Session& session, const std::vector<Template>& templates) {
    Backend& backend = session.backend();
    const DriverOptions& o = session.options();
    backend.set_stream_count(1);
    std::size_t done = 0;
    for (const Template& t : templates) {
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
            if (recorded_cache) backend.warm_inputs(r.work->handle, 0);
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
        auto groups = by_tag(backend.collect());
        for (int r = 0; r < o.runs; ++r) {
            auto it = groups.find(static_cast<std::uint64_t>(r) + 1);
            if (it != groups.end()) attribute(session, t.positions, it->second, t.recorded_us);
        }
        if (o.progress && (done % 10 == 0 || done == templates.size()))
            o.progress("unique kernels " + std::to_string(done) + "/" +
                       std::to_string(templates.size()));
    }
}

}  // namespace

std::vector<Step> plan_steps(const KernelGraph& graph, const NodeRecipes& recipes) {
    std::vector<Step> steps;
    std::unordered_map<std::uint32_t, std::size_t> last_step_of_op;  // op instance -> step
    const auto& nodes = graph.nodes();
    for (std::uint32_t n = 0; n < nodes.size(); ++n) {
        const Recipe& r = recipes[n];
        if (!r.replayable() || r.tier == Tier::Collective) continue;
        const std::uint32_t op = nodes[n].op;
        auto previous = op == kNoIndex ? last_step_of_op.end() : last_step_of_op.find(op);
        const bool same_op = previous != last_step_of_op.end();
        if (r.issued_with_op || (same_op && r.tier == Tier::AtenOp &&
                                 recipes[steps[previous->second].issue_node].key() == r.key())) {
            if (same_op) steps[previous->second].nodes.push_back(n);
            continue;  // an auxiliary kernel whose op was not issued stays unreplayed
        }
        Step step;
        step.issue_node = n;
        step.nodes.push_back(n);
        step.stream = static_cast<int>(nodes[n].stream_slot);
        if (op != kNoIndex) last_step_of_op[op] = steps.size();
        steps.push_back(std::move(step));
    }
    return steps;
}

Report replay_sequential(const Analysis& analysis, Backend& backend, const DriverOptions& options,
                         Timeline* timeline) {
    const auto start = std::chrono::steady_clock::now();
    Session session(backend, analysis.kernels, options);
    add_inputs(session.report(), analysis);
    add_options(session.report(), options, false);
    const KernelGraph& graph = analysis.graph;
    const auto& nodes = graph.nodes();
    const Trace& trace = analysis.trace();
    const auto kernel_of = kernel_of_nodes(analysis, session);
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
        auto groups = by_tag(backend.collect());
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
            attribute(session, positions, g->second, recorded_us);
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
    if (timeline != nullptr) {
        // Recorded activities, then both tracks shifted to start at 0 so they line up in a viewer.
        double replay_origin = 1e300;
        for (const auto& i : timeline->items) replay_origin = std::min(replay_origin, i.start_us);
        for (auto& i : timeline->items) i.start_us -= replay_origin;
        const std::int64_t origin = nodes.empty() ? 0 : [&] {
            std::int64_t m = graph.activity(nodes.front()).ts;
            for (const auto& n : nodes) m = std::min(m, graph.activity(n).ts);
            return m;
        }();
        for (const auto& n : nodes) {
            const GpuActivity& a = graph.activity(n);
            timeline->items.push_back({std::string(trace.names.view(a.name)), a.stream,
                                       static_cast<double>(a.ts - origin) / 1000.0,
                                       static_cast<double>(a.dur) / 1000.0, false});
        }
    }
    if (!graph.host_syncs().empty())
        session.report().notes.push_back(
            std::to_string(graph.host_syncs().size()) +
            " recorded host synchronisations were not re-issued (replay runs back to back)");
    return session.finish("sequential", seconds_since(start));
}

Report replay_unique(const Analysis& analysis, Backend& backend, const DriverOptions& options) {
    const auto start = std::chrono::steady_clock::now();
    Session session(backend, analysis.kernels, options);
    add_inputs(session.report(), analysis);
    add_options(session.report(), options, true);
    const auto kernel_of = kernel_of_nodes(analysis, session);
    const auto& nodes = analysis.graph.nodes();
    // One template per distinct sequence of unique kernels an issue re-creates; its instances
    // are the recorded op instances of that sequence.
    std::vector<Template> templates;
    std::map<std::vector<std::size_t>, std::size_t> template_of;
    std::map<std::size_t, std::set<std::string>> instance_keys;
    std::set<std::size_t> covered;
    const std::vector<Step> steps = plan_steps(analysis.graph, analysis.recipes);
    std::map<int, std::size_t> last_on_stream;  // stream -> previous step index
    std::vector<std::optional<Recipe>> predecessor(steps.size());
    for (std::size_t s = 0; s < steps.size(); ++s) {
        if (auto it = last_on_stream.find(steps[s].stream); it != last_on_stream.end())
            predecessor[s] = analysis.recipes[steps[it->second].issue_node];
        last_on_stream[steps[s].stream] = s;
    }
    for (std::size_t s = 0; s < steps.size(); ++s) {
        const Step& step = steps[s];
        std::vector<std::size_t> positions;
        for (auto n : step.nodes) positions.push_back(kernel_of[n]);
        const Recipe& recipe = analysis.recipes[step.issue_node];
        if (auto it = template_of.find(positions); it != template_of.end()) {
            Template& t = templates[it->second];
            if (t.instances.size() < kMaxInstances &&
                instance_keys[it->second].insert(recipe.instance_key()).second) {
                t.instances.push_back(recipe);
                t.predecessors.push_back(predecessor[s]);
            }
            continue;
        }
        bool adds = false;
        for (auto k : positions) adds |= !covered.count(k);
        if (!adds) continue;
        Template t;
        t.instances.push_back(recipe);
        t.predecessors.push_back(predecessor[s]);
        t.positions = positions;
        for (auto n : step.nodes)
            t.recorded_us.push_back(static_cast<double>(analysis.graph.activity(nodes[n]).dur) /
                                    1000.0);
        covered.insert(positions.begin(), positions.end());
        instance_keys[templates.size()].insert(recipe.instance_key());
        template_of.emplace(positions, templates.size());
        templates.push_back(std::move(t));
    }
    run_templates(session, templates);
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
    report.totals.wall_seconds = seconds_since(start);
    return report;
}

Report replay_unique(const SignatureFile& file, Backend& backend, const DriverOptions& options) {
    const auto start = std::chrono::steady_clock::now();
    Session session(backend, file.kernels, options);
    // The signature file's own path is added by the caller, which read it.
    session.report().inputs.emplace_back("trace", file.trace);
    session.report().inputs.emplace_back("trace_hash", file.trace_hash);
    add_options(session.report(), options, true);
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
    Report report = session.finish("unique", seconds_since(start));
    return report;
}

void write_replay_trace(std::ostream& out, const Timeline& timeline) {
    JsonWriter json(out, false);
    json.begin_object();
    json.field("displayTimeUnit", "ns");
    json.key("traceEvents").begin_array();
    for (int pid : {1, 2}) {
        json.begin_object().field("ph", "M").field("name", "process_name").field("pid", pid);
        json.key("args")
            .begin_object()
            .field("name", pid == 1 ? "recorded" : "replayed")
            .end_object();
        json.end_object();
    }
    std::set<std::pair<int, std::int64_t>> tracks;
    for (const auto& i : timeline.items) tracks.emplace(i.replayed ? 2 : 1, i.stream);
    for (const auto& [pid, stream] : tracks) {
        json.begin_object().field("ph", "M").field("name", "thread_name").field("pid", pid);
        json.field("tid", stream);
        json.key("args")
            .begin_object()
            .field("name", "stream " + std::to_string(stream))
            .end_object();
        json.end_object();
    }
    for (const auto& i : timeline.items) {
        json.begin_object().field("ph", "X").field("cat", "kernel").field("name", i.name);
        json.field("pid", i.replayed ? 2 : 1)
            .field("tid", i.stream)
            .field("ts", i.start_us)
            .field("dur", i.dur_us);
        json.end_object();
    }
    json.end_array();
    json.end_object();
    out << '\n';
}

}  // namespace replay
