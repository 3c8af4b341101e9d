// `replay regress` / `replay compare`: a baseline report against a current one, per unique kernel
// (matched by id), per tier and in total. Pure statistics on two Reports; no GPU involved.
//
// A kernel is regressed (improved: the mirror image) only when
//   (a) its median moved by more than max(threshold_pct, k x robust relative spread of the runs),
//       the spread being 1.4826 x MAD of the samples' relative deviations from their own side's
//       median, baseline and current pooled; and
//   (b) a two-sided Mann-Whitney U test on the per-run samples gives p < alpha (exact
//       distribution for small tie-free samples, normal approximation with tie and continuity
//       correction otherwise). It needs >= min_samples samples per side: with fewer, a change
//       beyond (a) is reported as inconclusive (counted as unchanged, never flagged), since one or
//       two samples cannot tell a change from noise. `compare` of two traces takes each
//       kernel's recorded instances as its samples; a kernel recorded fewer than min_samples
//       times is judged by (a) alone there, as the notes say.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "replay/recipe.h"
#include "replay/report.h"
#include "replay/stats.h"

namespace replay {

struct RegressionOptions {
    double threshold_pct = 5.0;   // minimum median change that counts
    double k = 3.0;               // ... and at least k x the run-to-run spread
    double alpha = 0.01;          // significance level of the rank test
    std::size_t min_samples = 5;  // per side, for the rank test to be used
    // ... and the median must move by more than this many microseconds. Microsecond kernels shift
    // between processes by more than their runs within one process vary (buffer placement, timer
    // ticks of 32 ns), which the rank test cannot see: on an H100 a 2.2 us elementwise kernel ran
    // 0.26 us (-12%, p = 4e-19) faster in one of five fresh processes of the same trace.
    double min_change_us = 0.5;
    // Compare the recorded durations (recorded_us; samples_us, when present, holds the recorded
    // instances) instead of the replayed ones: `replay compare` on two traces.
    bool recorded = false;
    // Compare each kernel's energy per launch (--energy reports: the windows' samples, in
    // microjoules, in the fields named _us) with the same statistics instead of its time; the
    // absolute floor min_change_us does not apply.
    bool energy = false;
};

enum class Verdict : std::uint8_t { Unchanged, Improved, Regressed, New, Missing };
const char* to_string(Verdict verdict);  // unchanged | improved | regressed | new | missing

struct KernelComparison {
    std::string id;
    std::string name;
    std::string kind;
    Tier tier = Tier::NotReplayable;
    Verdict verdict = Verdict::Unchanged;
    std::size_t baseline_count = 0, current_count = 0;  // recorded invocations per trace
    std::size_t baseline_samples = 0, current_samples = 0;
    double baseline_median_us = NAN, current_median_us = NAN;
    double change_pct = NAN;     // (current - baseline) / baseline x 100: the effect
    double spread_pct = NAN;     // robust relative spread of the runs, pooled (percent)
    double threshold_pct = NAN;  // max(options.threshold_pct, k x spread_pct): what (a) used
    double p_value = NAN;        // Mann-Whitney U, two-sided; NaN when the test was not run
    bool rank_test = false;      // (b) was applied
    bool exact = false;          // p from the exact U distribution (else normal approximation)
    bool inconclusive = false;   // beyond (a) but too few samples for (b): verdict unchanged
    std::string note;  // "3/3 samples: inconclusive ...", "not replayed in the current run"
    double baseline_total_us() const {
        return static_cast<double>(baseline_count) * baseline_median_us;
    }
    double current_total_us() const {
        return static_cast<double>(current_count) * current_median_us;
    }
};

struct RegressionSummary {
    std::size_t regressed = 0, improved = 0, unchanged = 0, added = 0 /* "new" */, missing = 0;
    std::size_t inconclusive = 0;  // of `unchanged`: moved beyond the threshold, too few samples
};

struct RegressionTotals {
    std::size_t matched = 0;  // kernels compared on both sides
    double baseline_us = 0;   // sum over matched kernels of count x median
    double current_us = 0;
    double change_pct = NAN;
};

struct TierComparison {
    Tier tier = Tier::NotReplayable;
    RegressionSummary summary;
    RegressionTotals totals;
};

struct MachineDifference {
    std::string key;  // gpu | driver | cuda | cublas | libtorch
    std::string baseline, current;
};

struct Regression {
    std::string schema = "replay.regression/1";
    std::string baseline;  // label (path) of the baseline report
    std::string current;
    bool same_machine = true;
    std::vector<MachineDifference> machine_differences;
    RegressionOptions options;
    RegressionSummary summary;
    RegressionTotals totals;
    std::vector<TierComparison> tiers;      // tiers 0..4 that have kernels, in order
    std::vector<KernelComparison> kernels;  // baseline order, then the new ones
    std::vector<std::string> notes;
};

// Environment keys whose difference makes two reports "not the same machine".
const std::vector<std::string>& machine_keys();

Regression compare_reports(const Report& baseline, const Report& current,
                           const RegressionOptions& options = {},
                           const std::string& baseline_label = "baseline",
                           const std::string& current_label = "current");

// Several runs of one baseline as one report: per kernel (matched by id) the samples of every
// report that has it, time and energy, their statistics taken again; the first report's
// everything else. One process's samples spread less than processes do (GPT-2's power-hungry
// GEMM: windows 0.2-0.4 % apart, processes up to 5.2 %), so against one process a fresh run can
// be flagged for being another process; pooled, the spread and the rank test see both. Throws
// std::runtime_error when the reports are not of one trace (trace_hash) and one mode; `notes`
// gets what differs between them otherwise (the GPU or board).
Report pool_baselines(const std::vector<Report>& reports, const std::vector<std::string>& labels,
                      std::vector<std::string>& notes);

// 1 when any kernel regressed, else 0.
int regression_exit_code(const Regression& regression);

}  // namespace replay
