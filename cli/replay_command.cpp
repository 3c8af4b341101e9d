// `replay TRACE --mode sequential|unique --out DIR` and `replay --mode unique --kernels FILE`:
// replay, write report.json, kernels.csv (and replay_trace.json in sequential mode; target.json
// with --target), print the summary.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

#include "commands.h"
#include "html_output.h"
#include "output_files.h"
#include "rank_run.h"
#include "replay/kernels_csv.h"
#include "replay/report_json.h"
#include "replay/report_summary.h"
#include "replay/tensor_budget.h"
#include "replay/target.h"
#include "replay_settings.h"
#include "trace_loader.h"

namespace replay::cli {
namespace {

struct ReplayState {
    std::string trace;
    LoadOptions load;
    ReplaySettings settings;
    std::string kernel_file;
    bool html = false;
    std::string target;  // --target: B's recording of the same workload
    std::optional<RankEnv> rank;  // one of several processes, started by a launcher
};

int run_replay(const ReplayState& s, Analysis* analysis) {
    const bool quiet = s.load.quiet;
    ReplaySettings settings = s.settings;
    if (s.rank) {
        if (analysis == nullptr)
            throw std::runtime_error("several ranks replay traces, not --kernels files");
        settings.distributed =
            distributed_options(*s.rank, *analysis, settings.collective_timeout);
        settings.out_dir += "/rank" + std::to_string(s.rank->rank);
    }
    SignatureFile file;
    if (analysis == nullptr) {
        if (settings.mode != "unique")
            throw std::runtime_error("--kernels replays in --mode unique only");
        file = read_signature_file(s.kernel_file);
    }
    // Read before the replay: a bad target file stops the run before the GPU time is spent.
    std::unique_ptr<Analysis> target;
    if (!s.target.empty()) {
        if (analysis == nullptr) throw std::runtime_error("--target needs the TRACE replayed");
        LoadOptions plain;  // B's recorded durations only: its side files are not A's
        plain.quiet = s.load.quiet;
        plain.strict = s.load.strict;
        target = load_trace(s.target, plain);
    }
    auto backend = settings.make_backend();
    if (s.rank && !backend->runs_collectives())
        throw std::runtime_error("rank " + std::to_string(s.rank->rank) + ": the " +
                                 backend->environment().backend +
                                 " backend does not run collectives: replay several ranks with "
                                 "--backend cpu (c10d Gloo)");
    if (analysis != nullptr) {
        // Distinct buffers for every inferred parameter must fit beside the activations.
        const std::int64_t device = backend->environment().total_memory;
        const TensorBudget budget =
            device > 0 ? tensor_budget(settings.max_tensor_bytes, device, "device memory")
                       : tensor_budget(settings.max_tensor_bytes, available_host_memory(),
                                       "available host memory");
        fit_dataflow(*analysis, budget.bytes, budget.source);
    }
    // Locked before the replay: a second run into this folder stops now, not after its replay.
    OutputFolder out(settings.out_dir);
    Timeline timeline;
    Report report = settings.run(analysis, analysis ? nullptr : &file, *backend, quiet,
                                 settings.mode == "sequential" ? &timeline : nullptr);
    if (analysis == nullptr) report.inputs.emplace_back("kernels", s.kernel_file);
    if (settings.mode == "sequential" && analysis != nullptr)
        attach_kernels(timeline, *analysis, report.environment);
    if (const std::string why = why_nothing_was_replayed(report); !why.empty()) {
        write_report_summary(std::cout, report);
        throw std::runtime_error(why + "; " + settings.out_dir + " left as it was");
    }
    out.write("report.json", [&](std::ostream& o) { write_report_json(o, report); });
    out.write("kernels.csv", [&](std::ostream& o) { write_kernels_csv(o, report); });
    TargetComparison against;
    if (target) {
        against = compare_with_target(report, analysis->kernels, target->kernels, s.target);
        out.write("target.json", [&](std::ostream& o) { write_target_json(o, against); });
    } else {
        out.remove_at_commit("target.json");
    }
    if (settings.mode == "sequential")
        out.write("replay_trace.json", [&](std::ostream& o) { write_replay_trace(o, timeline); });
    else
        out.remove_at_commit("replay_trace.json");  // an earlier sequential run's, not this one's
    if (s.html) {
        HtmlReportInput page;
        page.report = &report;
        if (settings.mode == "sequential") page.timeline = &timeline;
        out.write("report.html", html_page(std::move(page)));
    } else {
        out.remove_at_commit("report.html");  // an earlier --html run's, not this one's
    }
    out.commit();
    if (s.rank) {
        // A failed collective broke the group: gathering the results would wait for the rank
        // that is gone.
        if (const std::string why = failed_collective(report); !why.empty()) {
            write_report_summary(std::cout, report);
            throw std::runtime_error(why);
        }
        // Every rank takes part in the gathering; rank 0 writes the merged report beside the
        // ranks' folders.
        const std::string merged = s.settings.out_dir + "/collectives.json";
        if (s.rank->rank == 0) {
            std::ofstream file(merged);
            gather_collectives(*s.rank, *analysis, report, *backend, &file);
            if (!file) throw std::runtime_error("cannot write " + merged);
            if (!quiet) std::fprintf(stderr, "replay: wrote %s\n", merged.c_str());
        } else {
            gather_collectives(*s.rank, *analysis, report, *backend, nullptr);
        }
    }
    write_report_summary(std::cout, report);
    if (target) print_target_summary(std::cout, against);
    if (!quiet) std::fprintf(stderr, "replay: wrote %s\n", settings.out_dir.c_str());
    return 0;
}

}  // namespace

Command add_replay_command(CLI::App& app) {
    auto s = std::make_shared<ReplayState>();
    add_trace_argument(app, s->trace);
    add_load_options(app, s->load, SideFiles::Offered);
    add_set_dims_option(app, s->load);
    s->settings.add_options(app);
    app.add_option("--kernels", s->kernel_file,
                   "Replay a kernel_signatures.json (from `replay classify`) in unique mode, "
                   "without the trace");
    app.add_flag("--html", s->html,
                 "Also write report.html: one self-contained page of the report (see `replay "
                 "report`)");
    app.add_option("--target", s->target,
                   "A recording of the same workload on the GPU this replay runs on (or the one "
                   "it stands for): each replayed kernel is compared with that recording's kernel "
                   "(by id, name + grid + block, or a GEMM's recipe) and target.json gives the "
                   "prediction error per kernel and in total, and whether each GEMM ran the kernel "
                   "cuBLAS picked there");
    return {&app,
            [s, &app] {
                if (s->trace.empty() && s->kernel_file.empty()) {
                    std::cerr << app.help();
                    return 2;
                }
                if (!s->trace.empty() && !s->kernel_file.empty())
                    throw std::runtime_error(
                        "give either a TRACE or --kernels FILE, not both (--kernels replays the "
                        "unique kernels of a signature file, without the trace)");
                s->rank = launched_rank();
                std::string trace = s->trace;
                if (s->rank && !trace.empty())
                    trace = rank_trace_path(trace, s->rank->rank, s->rank->world_size);
                std::unique_ptr<Analysis> analysis;
                if (!trace.empty()) analysis = load_trace(trace, s->load);
                return run_replay(*s, analysis.get());
            },
            true};
}

}  // namespace replay::cli
