// `replay TRACE --mode sequential|unique --out DIR` and `replay --mode unique --kernels FILE`:
// replay, write report.json, kernels.csv (and replay_trace.json in sequential mode), print the
// summary.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

#include "commands.h"
#include "output_files.h"
#include "rank_run.h"
#include "replay/kernels_csv.h"
#include "replay/report_json.h"
#include "replay/report_summary.h"
#include "replay_settings.h"
#include "trace_loader.h"

namespace replay::cli {
namespace {

struct ReplayState {
    std::string trace;
    LoadOptions load;
    ReplaySettings settings;
    std::string kernel_file;
    std::optional<RankEnv> rank;  // one of several processes, started by a launcher
};

int run_replay(const ReplayState& s, const Analysis* analysis) {
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
    auto backend = settings.make_backend();
    if (s.rank && !backend->runs_collectives())
        throw std::runtime_error("rank " + std::to_string(s.rank->rank) + ": the " +
                                 backend->environment().backend +
                                 " backend does not run collectives: replay several ranks with "
                                 "--backend cpu (c10d Gloo)");
    // Locked before the replay: a second run into this folder stops now, not after its replay.
    OutputFolder out(settings.out_dir);
    Timeline timeline;
    Report report = settings.run(analysis, analysis ? nullptr : &file, *backend, quiet,
                                 settings.mode == "sequential" ? &timeline : nullptr);
    if (analysis == nullptr) report.inputs.emplace_back("kernels", s.kernel_file);
    if (const std::string why = why_nothing_was_replayed(report); !why.empty()) {
        write_report_summary(std::cout, report);
        throw std::runtime_error(why + "; " + settings.out_dir + " left as it was");
    }
    out.write("report.json", [&](std::ostream& o) { write_report_json(o, report); });
    out.write("kernels.csv", [&](std::ostream& o) { write_kernels_csv(o, report); });
    if (settings.mode == "sequential")
        out.write("replay_trace.json", [&](std::ostream& o) { write_replay_trace(o, timeline); });
    else
        out.remove_at_commit("replay_trace.json");  // an earlier sequential run's, not this one's
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
    return {&app, [s, &app] {
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
            }};
}

}  // namespace replay::cli
