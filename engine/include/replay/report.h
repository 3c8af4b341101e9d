// The replay report: what was replayed, on which machine, and how each unique kernel compares
// with the recording. Written as report.json and kernels.csv; read back by regress/compare.
#pragma once

#include <cmath>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "replay/recipe.h"
#include "replay/signatures.h"

namespace replay {

struct KernelResult {
    std::string id;  // UniqueKernel::id: stable across runs of the same trace
    std::string name;
    std::string kind;  // kernel | memcpy | memset
    Tier tier = Tier::NotReplayable;
    std::string rule;
    // replayed | issued_with_op | skipped | failed | not_replayable
    std::string disposition;
    std::string reason;
    std::size_t count = 0;
    DurationStats recorded_us;
    DurationStats replayed_us;  // over the replayed samples
    std::vector<double>
        samples_us;          // every replayed sample (unique: per run; sequential: per instance)
    double error_pct = NAN;  // (replayed median - recorded median) / recorded median * 100
    std::vector<std::string> replayed_names;  // kernel names the replay produced for it
    bool name_match = false;                  // a replayed name equals the recorded one
    double gflops_per_s = NAN;                // GEMMs
    double gb_per_s = NAN;                    // copies
};

struct TierResult {
    Tier tier = Tier::NotReplayable;
    std::size_t unique = 0;
    std::size_t activities = 0;
    double recorded_us = 0;
    double replayed_us = 0;           // over the kernels that were replayed
    double replayed_recorded_us = 0;  // their recorded time, for a like-for-like ratio
};

struct ReportTotals {
    double recorded_kernel_us = 0;      // all recorded kernel time
    double recipe_coverage = 0;         // share of it with a recipe (classifier)
    double replayed_coverage = 0;       // share of it that was replayed and timed
    double replayed_kernel_us = 0;      // replayed time of the replayed kernels
    double replayed_recorded_us = 0;    // recorded time of those same kernels
    double total_error_pct = NAN;       // replayed_kernel_us vs replayed_recorded_us
    double median_abs_error_pct = NAN;  // median over replayed unique kernels of |error_pct|
    // The same over recorded launches (each unique kernel weighted by its count), so that a
    // handful of sub-microsecond one-off kernels, whose error is mostly timer quantisation,
    // weigh as much as they occur.
    double median_abs_error_pct_per_launch = NAN;
    double gemm_name_match = NAN;       // share of replayed GEMM time whose kernel name matched
    double predicted_total_us = NAN;    // unique mode: sum of count x replayed median
    double sequential_kernel_us = NAN;  // unique mode: kernel time of one sequential pass, when run
    double wall_seconds = 0;
};

struct Report {
    std::string schema = "replay.report/1";
    std::string tool_version;
    std::string mode;     // sequential | unique
    std::string backend;  // cuda | cpu
    std::vector<std::pair<std::string, std::string>>
        environment;  // gpu, driver, cuda, cublas, libtorch, clocks...
    std::vector<std::pair<std::string, std::string>>
        inputs;  // trace, trace_hash, et, shapes, kernels
    std::vector<std::pair<std::string, std::string>>
        options;  // warmup, runs, l2_flush, pace, iterations
    ReportTotals totals;
    std::vector<TierResult> tiers;
    std::vector<KernelResult> kernels;
    std::vector<std::string> notes;

    std::string input(const std::string& key) const;
    std::string env(const std::string& key) const;
};

// Short tier name for tables ("gemm", "aten op", ...).
const char* tier_label(Tier tier);
// A kernel row with the recorded side filled in, as every report starts from.
KernelResult recorded_result(const UniqueKernel& kernel);

void write_report_json(std::ostream& out, const Report& report);
void write_kernels_csv(std::ostream& out, const Report& report);
// Throws InputError naming the file and byte offset.
Report read_report_json(const std::string& path);

// Fills error_pct, replayed_us, name_match-derived totals, tier rows and ReportTotals from the
// per-kernel samples (shared by every driver so the figures mean the same everywhere).
void finalize_report(Report& report);

}  // namespace replay
