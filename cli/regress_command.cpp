// `replay regress --baseline BASE TRACE...`: replay archived traces and compare each with its
// baseline report; exit 1 when a kernel regressed.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>

#include "commands.h"
#include "comparison.h"
#include "html_output.h"
#include "output_files.h"
#include "replay/baseline.h"
#include "replay/kernels_csv.h"
#include "replay/regression_printers.h"
#include "replay/report_json.h"
#include "replay/report_summary.h"
#include "replay_settings.h"
#include "trace_loader.h"

namespace replay::cli {
namespace {

struct RegressState {
    std::string baseline;
    std::vector<std::string> traces;
    LoadOptions load;
    ReplaySettings settings;
    RegressionOptions options;
    bool html = false;
    bool pool = false;  // every report of the trace in the --baseline folder, pooled
};

int run_regress(const RegressState& s) {
    if ((!s.load.et.empty() || !s.load.shapes.empty() || !s.load.recipes.empty() ||
         !s.load.inductor_cache.empty()) &&
        s.traces.size() != 1)
        throw std::runtime_error("--et, --shapes, --recipes and --inductor-cache apply to a single trace");
    auto backend = s.settings.make_backend();
    // Every trace's outputs are committed together at the end: a failure on the third trace
    // leaves the folder as it was.
    OutputFolder out(s.settings.out_dir);
    const auto warn = [&](const std::string& line) {
        if (!s.load.quiet) std::fprintf(stderr, "warning: %s\n", line.c_str());
    };
    int exit_code = 0;
    for (const auto& trace : s.traces) {
        auto analysis = load_trace(trace, s.load);
        const Baseline baseline =
            s.pool ? find_pooled_baseline(s.baseline, analysis->trace_hash, s.settings.mode, warn)
                   : find_baseline(s.baseline, analysis->trace_hash, warn);
        if (!s.load.quiet && !baseline.chosen.empty())
            std::fprintf(stderr, "regress: baseline of %s: %s, %s\n", trace.c_str(),
                         baseline.path.c_str(), baseline.chosen.c_str());
        Report current = s.settings.run(analysis.get(), nullptr, *backend, s.load.quiet, nullptr);
        if (const std::string why = why_nothing_was_replayed(current); !why.empty())
            throw std::runtime_error(trace + ": " + why);
        RegressionOptions options = s.options;
        options.energy = s.settings.energy;  // --energy replays with it and compares it
        Regression r = compare_reports(baseline.report, current, options, baseline.path, trace);
        r.notes.insert(r.notes.begin(), baseline.notes.begin(), baseline.notes.end());
        require_something_compared(r);
        const std::filesystem::path dir = std::filesystem::path(trace).filename();
        out.write(dir / "report.json", [&](std::ostream& o) { write_report_json(o, current); });
        out.write(dir / "kernels.csv", [&](std::ostream& o) { write_kernels_csv(o, current); });
        write_regression_outputs(out, dir, r);
        if (s.html) {
            HtmlReportInput page;
            page.report = &current;
            page.baseline = &baseline.report;
            page.regression = &r;
            out.write(dir / "report.html", html_page(std::move(page)));
        }
        write_regression_markdown(std::cout, r);
        exit_code = std::max(exit_code, regression_exit_code(r));
    }
    out.commit();
    return exit_code;
}

}  // namespace

Command add_regress_command(CLI::App& app) {
    auto s = std::make_shared<RegressState>();
    auto* regress = app.add_subcommand(
        "regress",
        "Replay traces and compare with baseline report(s); exit 1 when a kernel regressed, 2 "
        "when no kernel could be compared");
    regress
        ->add_option("--baseline", s->baseline,
                     "Baseline report.json, or a folder of them (matched to each trace by its "
                     "content hash)")
        ->required();
    regress
        ->add_option("traces", s->traces,
                     "Traces to replay (.json, .json.gz or archived .json.zst)")
        ->required();
    add_load_options(*regress, s->load, SideFiles::OneTraceOnly);
    s->settings.out_dir = "regress_out";
    regress
        ->add_option("--out", s->settings.out_dir,
                     "Output folder: one subfolder per trace with report.json, kernels.csv, "
                     "regression.json, regression.md (and report.html with --html)")
        ->capture_default_str();
    s->settings.add_options(*regress, /*with_out=*/false);
    add_statistics_options(*regress, s->options, /*with_energy=*/false);
    regress->add_flag("--pool-baselines", s->pool,
                      "Pool every report of the trace in the --baseline folder made in this "
                      "--mode (each kernel's samples over all of them) instead of taking the "
                      "newest: runs of several processes, so that what differs between processes "
                      "counts as noise");
    regress->add_flag("--html", s->html,
                      "Also write report.html per trace: the report and its changes against "
                      "the baseline, with the changed kernels' samples");
    return {regress, [s] { return run_regress(*s); }, true};
}

}  // namespace replay::cli
