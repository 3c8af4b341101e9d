// `replay regress` (replay archived traces, compare with baseline reports) and `replay compare`
// (two reports or two traces, no replay).
#pragma once

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "replay/baseline.h"
#include "replay/recorded_report.h"
#include "replay/regression.h"
#include "replay/regression_printers.h"
#include "replay_command.h"

namespace replay::cli {

inline void add_statistics_options(CLI::App& app, RegressionOptions& o) {
    app.add_option("--threshold", o.threshold_pct,
                   "Smallest median change (%) that counts as a change")
        ->capture_default_str();
    app.add_option("--k", o.k, "... and it must exceed k x the runs' robust relative spread")
        ->capture_default_str();
    app.add_option("--min-change-us", o.min_change_us,
                   "... and the median must move by more than this many microseconds")
        ->capture_default_str();
    app.add_option("--alpha", o.alpha,
                   "Significance level of the Mann-Whitney rank test on the per-run samples")
        ->capture_default_str();
}

// A comparison in which no kernel was measured on both sides says nothing: an exit status of 0
// there would let a wrong baseline pass a CI job.
inline void require_something_compared(const Regression& r) {
    if (r.totals.matched > 0) return;
    std::size_t in_both = 0;
    for (const auto& k : r.kernels) in_both += k.baseline_count > 0 && k.current_count > 0;
    std::string why = "nothing to compare between " + r.baseline + " and " + r.current + ": " +
                      std::to_string(r.summary.missing) +
                      " kernels only in the baseline (or not "
                      "measured in the current run), " +
                      std::to_string(r.summary.added) + " only in the current one, " +
                      std::to_string(in_both) + " ids in common";
    // The comparison's notes say why (another trace, --et on one side only, ...).
    for (const auto& note : r.notes) why += "; " + note;
    throw std::runtime_error(why);
}

inline void write_regression_outputs(const std::filesystem::path& dir, const Regression& r) {
    make_output_dir(dir);
    write_file(dir / "regression.json", [&](std::ostream& out) { write_regression_json(out, r); });
    write_file(dir / "regression.md",
               [&](std::ostream& out) { write_regression_markdown(out, r); });
}

enum class CompareInput { Report, Regression, Trace };

// What a `compare` argument is, from its first 4 KiB; an unreadable file is an InputError.
inline CompareInput compare_input_kind(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path, 0, std::string("cannot open: ") + std::strerror(errno));
    std::string head(4096, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(in.gcount()));
    if (head.find("\"replay.report/") != std::string::npos) return CompareInput::Report;
    if (head.find("\"replay.regression/") != std::string::npos) return CompareInput::Regression;
    return CompareInput::Trace;
}

class RegressCommand {
  public:
    void add_options(CLI::App& app) {
        app.add_option("--baseline", baseline_,
                       "Baseline report.json, or a folder of them (matched to each trace by its "
                       "content hash)")
            ->required();
        app.add_option("traces", traces_,
                       "Traces to replay (.json, .json.gz or archived .json.zst)")
            ->required();
        app.add_option("--et", et_, "Execution Trace of the run (only with a single trace)");
        app.add_flag("-q,--quiet", quiet_, "No progress on stderr");
        settings_.out_dir = "regress_out";
        app.add_option("--out", settings_.out_dir,
                       "Output folder: one subfolder per trace with report.json, kernels.csv, "
                       "regression.json and regression.md")
            ->capture_default_str();
        settings_.add_options(app, /*with_out=*/false);
        add_statistics_options(app, options_);
    }

    int run() {
        if (!et_.empty() && traces_.size() != 1)
            throw std::runtime_error("--et applies to a single trace");
        auto backend = settings_.make_backend();
        int exit_code = 0;
        for (const auto& trace : traces_) {
            AnalysisOptions ao;
            ao.trace_path = trace;
            ao.execution_trace_path = et_;
            auto analysis = analyze(ao);
            for (const auto& w : analysis->parsed.warnings)
                if (!quiet_) std::fprintf(stderr, "warning: %s\n", w.c_str());
            const Baseline baseline = find_baseline(baseline_, analysis->trace_hash);
            Report current = settings_.run(analysis.get(), nullptr, *backend, quiet_, nullptr);
            const Regression r =
                compare_reports(baseline.report, current, options_, baseline.path, trace);
            require_something_compared(r);
            const auto dir =
                std::filesystem::path(settings_.out_dir) / std::filesystem::path(trace).filename();
            make_output_dir(dir);
            write_file(dir / "report.json",
                       [&](std::ostream& out) { write_report_json(out, current); });
            write_file(dir / "kernels.csv",
                       [&](std::ostream& out) { write_kernels_csv(out, current); });
            write_regression_outputs(dir, r);
            write_regression_markdown(std::cout, r);
            exit_code = std::max(exit_code, regression_exit_code(r));
        }
        return exit_code;
    }

  private:
    std::string baseline_;
    std::vector<std::string> traces_;
    std::string et_;
    bool quiet_ = false;
    ReplaySettings settings_;
    RegressionOptions options_;
};

class CompareCommand {
  public:
    void add_options(CLI::App& app) {
        app.add_option("a", a_, "Baseline: a report.json or a trace")->required();
        app.add_option("b", b_, "Current: a report.json or a trace (the same kind as A)")
            ->required();
        app.add_option("--out", out_dir_, "Also write regression.json and regression.md here");
        add_statistics_options(app, options_);
    }

    int run() {
        const CompareInput kind_a = compare_input_kind(a_), kind_b = compare_input_kind(b_);
        for (const auto& [path, kind] : {std::pair{a_, kind_a}, std::pair{b_, kind_b}})
            if (kind == CompareInput::Regression)
                throw InputError(path, 0,
                                 "a regression.json (the output of compare/regress), not a "
                                 "report.json or a trace");
        const bool reports = kind_a == CompareInput::Report;
        if (reports != (kind_b == CompareInput::Report))
            throw std::runtime_error("compare needs two reports or two traces: " +
                                     (reports ? a_ : b_) + " is a report.json, " +
                                     (reports ? b_ : a_) + " is not (it would be read as a trace)");
        Regression r;
        if (reports) {
            r = compare_reports(read_report_json(a_), read_report_json(b_), options_, a_, b_);
        } else {
            AnalysisOptions oa, ob;
            oa.trace_path = a_;
            ob.trace_path = b_;
            RegressionOptions recorded = options_;
            recorded.recorded = true;
            r = compare_reports(recorded_report(*analyze(oa)), recorded_report(*analyze(ob)),
                                recorded, a_, b_);
        }
        require_something_compared(r);
        if (!out_dir_.empty()) write_regression_outputs(out_dir_, r);
        write_regression_markdown(std::cout, r);
        return regression_exit_code(r);
    }

  private:
    std::string a_, b_, out_dir_;
    RegressionOptions options_;
};

}  // namespace replay::cli
