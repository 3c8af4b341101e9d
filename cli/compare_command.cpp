// `replay compare A B`: two reports, or two traces' recorded durations, without a replay; exit 1
// when a kernel regressed.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>

#include "commands.h"
#include "comparison.h"
#include "replay/recorded_report.h"
#include "replay/regression_printers.h"
#include "replay/report_json.h"
#include "replay/source.h"
#include "trace_loader.h"

namespace replay::cli {
namespace {

enum class CompareInput { Report, Regression, Trace };

// What a `compare` argument is, from its first 4 KiB; an unreadable file is an InputError.
CompareInput compare_input_kind(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path, 0, std::string("cannot open: ") + std::strerror(errno));
    std::string head(4096, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(in.gcount()));
    if (head.find("\"replay.report/") != std::string::npos) return CompareInput::Report;
    if (head.find("\"replay.regression/") != std::string::npos) return CompareInput::Regression;
    return CompareInput::Trace;
}

struct CompareState {
    std::string a, b, out_dir;
    LoadOptions load;
    RegressionOptions options;
};

int run_compare(const CompareState& s) {
    const CompareInput kind_a = compare_input_kind(s.a), kind_b = compare_input_kind(s.b);
    for (const auto& [path, kind] : {std::pair{s.a, kind_a}, std::pair{s.b, kind_b}})
        if (kind == CompareInput::Regression)
            throw InputError(path, 0,
                             "a regression.json (the output of compare/regress), not a "
                             "report.json or a trace");
    const bool reports = kind_a == CompareInput::Report;
    if (reports != (kind_b == CompareInput::Report))
        throw std::runtime_error("compare needs two reports or two traces: " +
                                 (reports ? s.a : s.b) + " is a report.json, " +
                                 (reports ? s.b : s.a) + " is not (it would be read as a trace)");
    Regression r;
    if (reports) {
        r = compare_reports(read_report_json(s.a), read_report_json(s.b), s.options, s.a, s.b);
    } else {
        RegressionOptions recorded = s.options;
        recorded.recorded = true;
        r = compare_reports(recorded_report(*load_trace(s.a, s.load)),
                            recorded_report(*load_trace(s.b, s.load)), recorded, s.a, s.b);
    }
    require_something_compared(r);
    if (!s.out_dir.empty()) write_regression_outputs(s.out_dir, r);
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
    compare->add_option("a", s->a, "Baseline: a report.json or a trace")->required();
    compare->add_option("b", s->b, "Current: a report.json or a trace (the same kind as A)")
        ->required();
    compare->add_option("--out", s->out_dir, "Also write regression.json and regression.md here");
    add_statistics_options(*compare, s->options);
    add_load_options(*compare, s->load, SideFiles::NotOffered);
    return {compare, [s] { return run_compare(*s); }};
}

}  // namespace replay::cli
