#include "session.h"

#include <algorithm>
#include <cstdio>

#include "replay/ncu_command.h"
#include "replay/record_match.h"
#include "replay/shorten.h"

namespace replay::detail {
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
        {"sm_count", std::to_string(e.sm_count)},
        {"memory_bus_width_bits", std::to_string(e.memory_bus_width_bits)},
    };
    // The peaks that kernels.csv and the HTML report set the replayed rates against.
    const auto figure = [](double x) {
        if (!std::isfinite(x)) return std::string("n/a");
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.6g", x);
        return std::string(buf);
    };
    if (!e.device_uuid.empty()) v.emplace_back("gpu_uuid", e.device_uuid);
    for (DType dtype : peak_dtypes())
        v.emplace_back(peak_tflops_key(dtype), figure(e.peaks.tflops_of(dtype)));
    v.emplace_back(kPeakMemoryKey, figure(e.peaks.memory_gb_per_s));
    if (!e.peaks.why.empty()) v.emplace_back("peaks_note", e.peaks.why);
    return v;
}

const char* context_name(Context context) {
    constexpr const char* kNames[] = {"recorded", "previous", "none"};  // Context's order
    return kNames[static_cast<std::size_t>(context)];
}

// A millisecond option as it was given: "1000", "0.5" (std::to_string writes "1000.000000").
std::string milliseconds(double ms) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", ms);
    return text;
}

}  // namespace

Session::Session(Backend& backend, const std::vector<UniqueKernel>& kernels,
                 const DriverOptions& options)
    : backend_(backend), options_(options) {
    const Environment env = backend.environment();
    report_.tool_version = kVersion;
    report_.backend = env.backend;
    report_.environment = environment_pairs(env);
    for (const auto& note : env.notes) report_.notes.push_back(note);
    for (const auto& k : kernels) {
        KernelResult r = recorded_result(k);
        if (const double flops = k.recipe.flops(); flops > 0) r.energy.flops = flops;
        r.outcome = !k.recipe.replayable()    ? KernelOutcome::NotReplayable
                    : k.recipe.issued_with_op ? KernelOutcome::IssuedWithOp
                                              : KernelOutcome::Pending;
        if (k.recipe.tier == Tier::Collective && !backend.runs_collectives()) {
            r.outcome = KernelOutcome::Skipped;
            r.reason =
                "collectives need every rank: start one replay per rank with torchrun, mpirun or "
                "srun";
        }
        if (k.kind == ActivityKind::Kernel) report_.totals.recorded_kernel_us += k.recorded_us.sum;
        index_[k.id] = report_.kernels.size();
        report_.kernels.push_back(std::move(r));
        recorded_grids_.push_back({k.grid[0], k.grid[1], k.grid[2]});
    }
}

Prepared& Session::prepare(const Recipe& recipe) {
    const std::string key = recipe.instance_key();
    auto it = prepared_.find(key);
    if (it == prepared_.end()) {
        if (recipe.tier == Tier::Collective && !backend_.runs_collectives()) {
            it = prepared_
                     .emplace(key, Prepared{Disposition::Skipped, "collectives need every rank", 0})
                     .first;
        } else {
            it = prepared_.emplace(key, backend_.prepare(recipe)).first;
        }
        if (it->second.disposition == Disposition::Ready) {
            by_handle_[it->second.handle] = &it->second;
            if (!it->second.reason.empty()) notes_.insert(it->second.reason);
        }
    }
    return it->second;
}

bool Session::try_issue(Prepared& p, const std::vector<std::size_t>& kernels, int stream,
                        std::uint64_t tag) {
    if (!kernels.empty()) {
        auto [it, first] = issued_for_.try_emplace(p.handle);
        if (first) {
            // The watchdog's measure of the work: its kernels' recorded medians.
            double recorded_us = 0;
            for (std::size_t k : kernels) recorded_us += report_.kernels[k].recorded_us.median;
            backend_.set_recorded_ns(p.handle, static_cast<std::int64_t>(recorded_us * 1000.0));
        }
        for (std::size_t k : kernels)
            if (std::find(it->second.begin(), it->second.end(), k) == it->second.end())
                it->second.push_back(k);
    }
    if (options_.nvtx && !kernels.empty()) {
        const KernelResult& first = report_.kernels[kernels.front()];
        backend_.name_next_issue(nvtx_range_name(first.id, first.name, iteration_));
    }
    try {
        backend_.issue(p.handle, stream, tag);
        return true;
    } catch (const std::exception& e) {
        p.disposition = Disposition::Failed;
        p.reason = e.what();
        // Several ranks: only a collective throws from issue(), and its group is broken.
        if (backend_.runs_collectives() && stopped_.empty()) stopped_ = e.what();
        for (std::size_t k : kernels) mark(k, p);
        return false;
    }
}

bool Session::synchronize() {
    backend_.synchronize();
    FaultReport faults = backend_.take_faults();
    for (const auto& f : faults.failures) {
        auto p = by_handle_.find(f.handle);
        if (p == by_handle_.end()) continue;
        p->second->disposition = Disposition::Failed;
        p->second->reason = f.reason;
        if (auto k = issued_for_.find(f.handle); k != issued_for_.end())
            for (std::size_t kernel : k->second) mark(kernel, *p->second);
    }
    for (auto& note : faults.notes) notes_.insert(std::move(note));
    return faults.restarts > 0;
}

void Session::mark(std::size_t kernel, const Prepared& p) {
    KernelResult& r = report_.kernels[kernel];
    if (p.disposition == Disposition::Ready) return;
    r.outcome =
        p.disposition == Disposition::Skipped ? KernelOutcome::Skipped : KernelOutcome::Failed;
    r.reason = p.reason;
}

void Session::add_sample(std::size_t kernel, const TimedActivity& a) {
    KernelResult& r = report_.kernels[kernel];
    r.samples_us.push_back(static_cast<double>(a.end_ns - a.start_ns) / 1000.0);
    if (std::find(r.replayed_names.begin(), r.replayed_names.end(), a.name) ==
            r.replayed_names.end() &&
        r.replayed_names.size() < 8)
        r.replayed_names.push_back(a.name);
    if (a.per_kernel && a.name == r.name) r.name_match = true;
    const auto& recorded = recorded_grids_[kernel];
    constexpr std::array<std::int32_t, 3> unknown{};
    if (a.per_kernel && a.grid != unknown && recorded != unknown && a.grid != recorded &&
        r.replayed_grids.size() < 4 &&
        std::find(r.replayed_grids.begin(), r.replayed_grids.end(), a.grid) ==
            r.replayed_grids.end())
        r.replayed_grids.push_back(a.grid);
    if (r.outcome == KernelOutcome::Pending) r.outcome = KernelOutcome::Replayed;
}

void Session::add_shared_sample(std::size_t kernel, const TimedActivity& part,
                                const std::string& reason) {
    add_sample(kernel, part);
    KernelResult& r = report_.kernels[kernel];
    if (r.reason.find(reason) == std::string::npos)
        r.reason += (r.reason.empty() ? "" : "; ") + reason;
}

void Session::add_miss(std::size_t kernel, const std::string& reason) {
    Misses& m = misses_[kernel];
    if (m.count++ == 0) m.first_reason = reason;
}

Report Session::finish(const char* mode, double seconds) {
    report_.mode = mode;
    report_.totals.wall_seconds = seconds;
    for (const auto& [kernel, m] : misses_) {
        KernelResult& k = report_.kernels[kernel];
        if (k.outcome == KernelOutcome::Pending) {
            k.outcome = KernelOutcome::Failed;
            k.reason = "its timing record is missing: " + m.first_reason;
        } else if (k.outcome == KernelOutcome::Replayed) {
            k.reason = std::to_string(m.count) +
                       " of its issues came back without its own timing " +
                       "record, not counted: " + m.first_reason;
        }
    }
    for (auto& k : report_.kernels)
        if (k.outcome == KernelOutcome::Pending) {
            // Its reason so far is its recipe's ("variant ... of ..."), which says what it was
            // to run, not why it did not (a compiled DLRM's kernel after a worker's fault).
            k.outcome = KernelOutcome::Skipped;
            k.reason = "no timed activity came back for it" +
                       (k.reason.empty() ? std::string() : " (its recipe: " + k.reason + ")");
        }
    for (const auto& n : notes_) report_.notes.push_back(n);
    if (std::string note = other_grids_note(report_.kernels); !note.empty())
        report_.notes.push_back(std::move(note));
    // What the backend learnt while replaying (dropped records, failed runs) is in its notes now.
    for (auto& note : backend_.environment().notes)
        if (std::find(report_.notes.begin(), report_.notes.end(), note) == report_.notes.end())
            report_.notes.push_back(std::move(note));
    finalize_report(report_);
    return report_;
}

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

std::vector<std::size_t> kernel_of_nodes(const Analysis& analysis, const Session& session) {
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
    report.inputs.emplace_back("dataflow", dataflow_label(analysis));
    if (!analysis.recipe_libraries.empty()) {
        std::string files;
        for (const auto& f : analysis.recipe_libraries) files += (files.empty() ? "" : ", ") + f;
        report.inputs.emplace_back("recipes", files);
    }
    for (const auto& note : analysis.notes) report.notes.push_back(note);
    report.totals.recipe_coverage = analysis.coverage;
}

void add_options(Report& report, const DriverOptions& o, bool unique) {
    if (unique) {
        report.options.emplace_back("warmup", std::to_string(o.warmup));
        report.options.emplace_back("runs", std::to_string(o.runs));
        report.options.emplace_back("l2_flush", o.l2_flush ? "true" : "false");
        report.options.emplace_back("context", context_name(o.context));
        if (o.context == Context::Recorded)
            report.options.emplace_back("instruction_cache", to_string(o.instruction_cache));
        if (!o.only.empty()) {
            std::string ids;
            for (const auto& id : o.only) ids += (ids.empty() ? "" : ",") + id;
            report.options.emplace_back("only", ids);
        }
    } else {
        report.options.emplace_back("pace", o.pace == Pace::Recorded ? "recorded" : "none");
        report.options.emplace_back("iterations", std::to_string(o.iterations));
        report.options.emplace_back("warmup_ms", milliseconds(o.warmup_ms));
        report.options.emplace_back("warm_inputs", to_string(o.warm_inputs));
        report.options.emplace_back("graph", !o.graph ? "auto" : *o.graph ? "true" : "false");
        report.options.emplace_back("trace_iterations", o.trace_all_iterations ? "all" : "last");
    }
    if (o.nvtx) report.options.emplace_back("nvtx", "true");
    if (o.energy) {  // only then: reports without --energy stay as they were
        report.options.emplace_back("energy", "true");
        report.options.emplace_back("energy_window_ms", milliseconds(o.energy_window_ms));
        report.options.emplace_back("energy_windows", std::to_string(o.energy_windows));
        if (unique) report.options.emplace_back("energy_min_us", std::to_string(o.energy_min_us));
    }
}

namespace {

// A kernel's share of the summed time of the kernel records it shares (RecordMatch::shared),
// from the first one's start, under their names joined.
TimedActivity shared_part(const std::vector<TimedActivity>& records, const RecordMatch& match) {
    TimedActivity part = records[match.shared.front()];
    double total_ns = 0;
    std::string names;
    for (std::size_t r : match.shared) {
        total_ns += static_cast<double>(records[r].end_ns - records[r].start_ns);
        if (names.find(records[r].name) == std::string::npos)
            names += (names.empty() ? "" : " + ") + records[r].name;
    }
    part.name = names;
    part.end_ns = part.start_ns + static_cast<std::int64_t>(total_ns * match.share);
    return part;
}

}  // namespace

std::string other_grids_note(const std::vector<KernelResult>& kernels) {
    std::size_t count = 0;
    double recorded_us = 0;
    std::string names;
    for (const auto& k : kernels) {
        if (k.replayed_grids.empty()) continue;
        ++count;
        recorded_us += k.recorded_us.sum;
        if (count <= 3) {
            const auto& g = k.replayed_grids.front();
            names += std::string(names.empty() ? "" : "; ") + shorten(k.name, 60) + " ran [" +
                     std::to_string(g[0]) + ", " + std::to_string(g[1]) + ", " +
                     std::to_string(g[2]) + "]";
        }
    }
    if (count == 0) return {};
    char total[32];
    std::snprintf(total, sizeof total, "%.1f", recorded_us);
    return std::to_string(count) + " kernel(s) (" + total +
           " us recorded) timed by records of another launch grid than the recorded one "
           "(replayed_grids in report.json): the library configured the launch otherwise, or the "
           "replayed shapes are not the recorded ones; their times are of that launch. " +
           names + (count > 3 ? "; ..." : "");
}

LeftOver attribute(Session& session, const std::vector<std::size_t>& positions,
                   const std::vector<TimedActivity>& recs, const std::vector<double>& recorded_us) {
    if (positions.empty()) return {};
    if (recs.empty() ? session.per_kernel_timing() : recs.front().per_kernel) {
        std::vector<ExpectedActivity> expected;
        expected.reserve(positions.size());
        for (std::size_t i = 0; i < positions.size(); ++i) {
            const KernelResult& k = session.report().kernels[positions[i]];
            expected.push_back({k.name,
                                k.kind == "memcpy"   ? ActivityKind::Memcpy
                                : k.kind == "memset" ? ActivityKind::Memset
                                                     : record_kind(k.name),
                                i < recorded_us.size() ? recorded_us[i] : 0.0,
                                session.recorded_grid(positions[i])});
        }
        const auto matches = match_records(expected, recs);
        std::vector<bool> taken(recs.size(), false);
        for (std::size_t i = 0; i < positions.size(); ++i) {
            const RecordMatch& m = matches[i];
            for (std::size_t r : m.shared) taken[r] = true;
            if (!m.shared.empty()) {
                session.add_shared_sample(positions[i], shared_part(recs, m), m.reason);
            } else if (m.record == RecordMatch::kNone) {
                session.add_miss(positions[i], m.reason);
            } else {
                taken[m.record] = true;
                session.add_sample(positions[i], recs[m.record]);
            }
        }
        LeftOver left;
        for (std::size_t r = 0; r < recs.size(); ++r)
            if (!taken[r]) left += {1, recs[r].end_ns - recs[r].start_ns};
        return left;
    }
    if (recs.empty()) return {};
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
    return {};
}

std::string left_over_note(const LeftOver& left) {
    if (left.records == 0) return {};
    char us[32];
    std::snprintf(us, sizeof us, "%.1f us", static_cast<double>(left.ns) / 1000.0);
    return std::to_string(left.records) + " timed record" + (left.records == 1 ? "" : "s") +
           " of the last iteration (" + us +
           ") came back from steps whose recorded kernels none of them is: a replayed op ran work "
           "its recording did not (a library launching more, or an op issued twice)";
}

}  // namespace replay::detail

namespace replay {

const char* to_string(DriverOptions::WarmInputs warm) {
    switch (warm) {
        case DriverOptions::WarmInputs::None:
            return "none";
        case DriverOptions::WarmInputs::Needed:
            return "needed";
        case DriverOptions::WarmInputs::All:
            break;
    }
    return "all";
}

const char* to_string(InstructionCache cache) {
    switch (cache) {
        case InstructionCache::Cold:
            return "cold";
        case InstructionCache::Warm:
            return "warm";
        case InstructionCache::Auto:
            break;
    }
    return "auto";
}

}  // namespace replay
