// `replay report DIR|report.json [--baseline B] [-o report.html]`: the HTML page of a report that
// was written before, with the replay's timeline when replay_trace.json lies beside it, and its
// changes against a baseline when one is given.
#include <cstdio>
#include <filesystem>
#include <memory>

#include "commands.h"
#include "comparison.h"
#include "html_output.h"
#include "replay/baseline.h"
#include "replay/report_json.h"
#include "replay/source.h"

namespace replay::cli {
namespace {

namespace fs = std::filesystem;

struct ReportState {
    std::string input, baseline, out;
    std::size_t timeline_items = HtmlReportOptions{}.timeline_items;
    RegressionOptions options;
    bool quiet = false;
};

int run_report(const ReportState& s) {
    const fs::path report_path =
        fs::is_directory(s.input) ? fs::path(s.input) / "report.json" : fs::path(s.input);
    if (!fs::exists(report_path))
        throw InputError(report_path.string(), 0,
                         "no report.json here (give a replay's --out folder or a report.json)");
    HtmlReportInput input;
    const Report report = read_report_json(report_path.string());
    input.report = &report;
    Timeline timeline;
    const fs::path trace_path = report_path.parent_path() / "replay_trace.json";
    HtmlReportOptions options;
    options.timeline_items = s.timeline_items;
    if (fs::exists(trace_path)) {
        timeline = read_replay_trace(trace_path.string(), options.timeline_items);
        input.timeline = &timeline;
    }
    Baseline baseline;
    Regression regression;
    if (!s.baseline.empty()) {
        baseline = find_baseline(s.baseline, report.input("trace_hash"), [&](const std::string& w) {
            if (!s.quiet) std::fprintf(stderr, "warning: %s\n", w.c_str());
        });
        regression = compare_reports(baseline.report, report, s.options, baseline.path,
                                     report_path.string());
        input.baseline = &baseline.report;
        input.regression = &regression;
    }
    const fs::path out = s.out.empty() ? report_path.parent_path() / "report.html" : fs::path(s.out);
    write_file(out, html_page(std::move(input), options));
    if (!s.quiet) std::fprintf(stderr, "replay: wrote %s\n", out.string().c_str());
    return 0;
}

}  // namespace

Command add_report_command(CLI::App& app) {
    auto s = std::make_shared<ReportState>();
    auto* report = app.add_subcommand(
        "report",
        "Write report.html: one self-contained page (no network) with the summary, recorded "
        "against replayed time per kernel, time by tier, the kernels, the timelines "
        "(replay_trace.json beside the report) and, with --baseline, the changed kernels");
    report->add_option("input", s->input, "A replay's --out folder, or a report.json")->required();
    report->add_option("--baseline", s->baseline,
                       "Baseline report.json, or a folder of them (matched by trace hash): "
                       "show the changes against it");
    report->add_option("-o,--output", s->out, "The page to write (default: report.html beside "
                                              "the report)");
    report->add_option("--timeline-items", s->timeline_items,
                       "Activities per side drawn in the timelines, the first in start order")
        ->check(CLI::Range(std::size_t{1}, std::size_t{10000000}))
        ->capture_default_str();
    report->add_flag("--quiet", s->quiet, "No progress on stderr");
    add_statistics_options(*report, s->options);
    return {report, [s] { return run_report(*s); }};
}

}  // namespace replay::cli
