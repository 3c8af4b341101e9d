// `replay compare A [A2...] B`: two reports (the baseline pooled from several runs where more are
// given), or two traces' recorded durations, without a replay; exit 1 when a kernel regressed.
#include <iostream>
#include <memory>

#include "commands.h"
#include "comparison.h"
#include "html_output.h"
#include "replay/baseline.h"
#include "replay/document_kind.h"
#include "replay/input_error.h"
#include "replay/recorded_report.h"
#include "replay/regression_printers.h"
#include "replay/report_json.h"
#include "trace_loader.h"

namespace replay::cli {
namespace {

// Whether a `compare` argument is a report (true) or a trace (false), by parsing its top level;
// any other file is an InputError saying what it is.
bool is_report(const std::string& path) {
    const Document d = sniff_document(path);
    switch (d.kind) {
        case DocumentKind::Trace:
            return false;
        case DocumentKind::ToolFile:
            if (d.schema.starts_with("replay.report/")) return true;
            throw InputError(path, 0,
                             d.schema.starts_with("replay.regression/")
                                 ? "a regression.json (the output of compare/regress), not a "
                                   "report.json or a trace"
                                 : "a \"" + d.schema + "\" file, not a report.json or a trace");
        case DocumentKind::NotJson:
            throw InputError(path, d.offset,
                             "not JSON (" + d.why + "): neither a report.json nor a trace");
        case DocumentKind::ExecutionTrace:
        case DocumentKind::Other:
            break;
    }
    throw InputError(path, 0, d.why + ": neither a report.json nor a trace");
}

struct CompareState {
    std::vector<std::string> files;  // the baselines, then the current side
    std::string out_dir;
    LoadOptions load;
    RegressionOptions options;
    bool html = false;
};

int run_compare(const CompareState& s) {
    const std::vector<std::string> baselines(s.files.begin(), s.files.end() - 1);
    const std::string& first = baselines.front();
    const std::string& current = s.files.back();
    const bool reports = is_report(first);
    if (baselines.size() > 1)
        for (const auto& path : baselines)
            if (!is_report(path))
                throw std::runtime_error(
                    "several baselines are pooled from report.json files: " + path + " is a trace");
    if (reports != is_report(current))
        throw std::runtime_error(
            "compare needs two reports or two traces: " + (reports ? first : current) +
            " is a report.json, " + (reports ? current : first) + " is a trace");
    if (s.html && s.out_dir.empty()) throw std::runtime_error("--html writes into --out: give it");
    Regression r;
    Report a, b;
    if (reports) {
        b = read_report_json(current);
        std::vector<Report> runs;
        for (const auto& path : baselines) runs.push_back(read_report_json(path));
        Baseline baseline = pooled_baseline(std::move(runs), baselines);
        a = std::move(baseline.report);
        r = compare_reports(a, b, s.options, baseline.path, current);
        r.notes.insert(r.notes.begin(), baseline.notes.begin(), baseline.notes.end());
    } else {
        RegressionOptions recorded = s.options;
        recorded.recorded = true;
        a = recorded_report(*load_trace(first, s.load));
        b = recorded_report(*load_trace(current, s.load));
        r = compare_reports(a, b, recorded, first, current);
    }
    require_something_compared(r);
    if (!s.out_dir.empty()) {
        OutputFolder out(s.out_dir);
        write_regression_outputs(out, {}, r);
        if (s.html) {
            HtmlReportInput page;
            page.report = &b;
            page.baseline = &a;
            page.regression = &r;
            out.write("report.html", html_page(std::move(page)));
        }
        out.commit();
    }
    write_regression_markdown(std::cout, r);
    return regression_exit_code(r);
}

}  // namespace

Command add_compare_command(CLI::App& app) {
    auto s = std::make_shared<CompareState>();
    auto* compare = app.add_subcommand("compare",
                                       "Compare two reports (or two traces' recorded times) "
                                       "without replaying; exit 1 when a kernel regressed, 2 "
                                       "when no kernel could be compared");
    compare
        ->add_option("files", s->files,
                     "A B: the baseline, then the current side, two report.json files or two "
                     "traces; A A2... B: the baseline pooled from several runs' reports (each "
                     "kernel's samples over all of them), so that the spread between processes "
                     "counts as noise")
        ->required()
        ->expected(2, -1);
    compare->add_option("--out", s->out_dir, "Also write regression.json and regression.md here");
    compare->add_flag("--html", s->html,
                      "Also write report.html into --out: the current side's report and its "
                      "changes against the baseline, with the changed kernels' samples");
    add_statistics_options(*compare, s->options);
    add_load_options(*compare, s->load, SideFiles::NotOffered);
    return {compare, [s] { return run_compare(*s); }};
}

}  // namespace replay::cli
