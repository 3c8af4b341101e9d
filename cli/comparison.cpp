#include "comparison.h"

#include <stdexcept>
#include <string>

#include "replay/regression_printers.h"

namespace replay::cli {

void add_statistics_options(CLI::App& app, RegressionOptions& o, bool with_energy) {
    app.add_option("--threshold", o.threshold_pct,
                   "Smallest median change (%) that counts as a change")
        ->capture_default_str();
    app.add_option("--k", o.k, "... and it must exceed k x the runs' robust relative spread")
        ->capture_default_str();
    app.add_option("--min-change-us", o.min_change_us,
                   "... and the median must move by more than this many microseconds")
        ->capture_default_str();
    if (with_energy)
        app.add_flag("--energy", o.energy,
                     "Compare each kernel's energy per launch (reports made with --energy) with "
                     "the same statistics instead of its time");
    app.add_option("--alpha", o.alpha,
                   "Significance level of the Mann-Whitney rank test on the per-run samples")
        ->capture_default_str();
}

void require_something_compared(const Regression& r) {
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

void write_regression_outputs(OutputFolder& out, const std::filesystem::path& relative,
                              const Regression& r) {
    out.write(relative / "regression.json", [&](std::ostream& o) { write_regression_json(o, r); });
    out.write(relative / "regression.md",
              [&](std::ostream& o) { write_regression_markdown(o, r); });
}

}  // namespace replay::cli
