// `replay TRACE --mode sequential|unique --out DIR` and `replay --mode unique --kernels FILE`:
// replay, write report.json, kernels.csv (and replay_trace.json in sequential mode), print the
// summary.
#include <cstdio>
#include <iostream>
#include <memory>

#include "commands.h"
#include "output_files.h"
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
};

int run_replay(const ReplayState& s, const Analysis* analysis) {
    const bool quiet = s.load.quiet;
    const ReplaySettings& settings = s.settings;
    SignatureFile file;
    if (analysis == nullptr) {
        if (settings.mode != "unique")
            throw std::runtime_error("--kernels replays in --mode unique only");
        file = read_signature_file(s.kernel_file);
    }
    auto backend = settings.make_backend();
    make_output_dir(settings.out_dir);
    Timeline timeline;
    Report report = settings.run(analysis, analysis ? nullptr : &file, *backend, quiet,
                                 settings.mode == "sequential" ? &timeline : nullptr);
    if (analysis == nullptr) report.inputs.emplace_back("kernels", s.kernel_file);
    const std::filesystem::path dir(settings.out_dir);
    write_file(dir / "report.json", [&](std::ostream& out) { write_report_json(out, report); });
    write_file(dir / "kernels.csv", [&](std::ostream& out) { write_kernels_csv(out, report); });
    if (settings.mode == "sequential") {
        write_file(dir / "replay_trace.json",
                   [&](std::ostream& out) { write_replay_trace(out, timeline); });
    } else {
        // A timeline left by an earlier sequential run in this folder is not this run's.
        std::error_code ec;
        std::filesystem::remove(dir / "replay_trace.json", ec);
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
                std::unique_ptr<Analysis> analysis;
                if (!s->trace.empty()) analysis = load_trace(s->trace, s->load);
                return run_replay(*s, analysis.get());
            }};
}

}  // namespace replay::cli
