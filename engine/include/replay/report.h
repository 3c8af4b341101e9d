// The replay report: what was replayed, on which machine, and how each unique kernel compares
// with the recording. Written as report.json (report_json.h) and kernels.csv (kernels_csv.h);
// read back by regress/compare.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "replay/recipe.h"
#include "replay/signatures.h"
#include "replay/stats.h"

namespace replay {

// What became of a unique kernel; written as "disposition" in report.json and kernels.csv.
enum class KernelOutcome : std::uint8_t {
    Pending,        // a driver is running and no timed activity came back yet (never written)
    Replayed,       // timed at least once
    IssuedWithOp,   // re-created by its op's issue (a split-K reduction): timed with it
    Skipped,        // the backend cannot run its recipe here; the reason says why
    Failed,         // its issue failed at run time; the reason says why
    NotReplayable,  // the classifier found no recipe
    Recorded,       // a report of recorded durations only (`compare` of two traces)
};
// replayed | issued_with_op | skipped | failed | not_replayable | pending | recorded
const char* to_string(KernelOutcome outcome);
// The inverse of to_string(); nullopt for any other text.
std::optional<KernelOutcome> kernel_outcome_from_string(std::string_view text);

struct KernelResult {
    std::string id;  // UniqueKernel::id: stable across runs of the same trace
    std::string name;
    std::string kind;  // kernel | memcpy | memset
    Tier tier = Tier::NotReplayable;
    std::string rule;
    KernelOutcome outcome = KernelOutcome::Pending;
    std::string reason;
    std::size_t count = 0;
    DurationStats recorded_us;
    DurationStats replayed_us;  // over the replayed samples
    std::vector<double>
        samples_us;          // every replayed sample (unique: per run; sequential: per instance)
    double error_pct = NAN;  // (replayed median - recorded median) / recorded median * 100
    std::vector<std::string> replayed_names;  // kernel names the replay produced for it
    bool name_match = false;                  // a replayed name equals the recorded one
    // Roofline: the work of one instance (recorded_result(), from the recipe) and, once
    // replayed, the rates at the replayed median and their share of the device's peaks
    // (roofline.h; NaN where the report's environment has no peak, as on the cpu backend).
    double flops = 0;                      // GEMMs
    double bytes = 0;                      // the least a GEMM or a copy moves
    DType flop_dtype = DType::Unknown;     // the operand type whose peak the FLOPs count against
    double gflops_per_s = NAN;             // GEMMs
    double gb_per_s = NAN;                 // GEMMs and copies
    double pct_peak_flops = NAN;           // gflops_per_s of the peak TFLOP/s of flop_dtype
    double pct_peak_bandwidth = NAN;       // gb_per_s of the peak memory bandwidth
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
    // Sequential mode: the recorded step's span, the last replayed iteration's, and their ratio
    // (ReportTimeline has every iteration's figures).
    double recorded_span_us = NAN;
    double replayed_span_us = NAN;
    double span_ratio = NAN;
    double wall_seconds = 0;
};

// The shape of a timeline, the recorded step's or one replayed iteration's (timeline_figures()
// in timeline.h computes it from the activities' intervals).
struct TimelineFigures {
    double span_us = NAN;        // first start to last end, warm-up reads included
    double kernel_us = 0;        // summed durations of the activities (kernels, copies, memsets)
    double warm_read_us = 0;     // summed durations of the replay's L2 warm-up reads
    double median_gap_us = NAN;  // between consecutive activities of a stream, warm-up reads out
    double max_gap_us = NAN;
    std::size_t activities = 0;
    std::size_t gaps = 0;
};

// One replayed iteration of a sequential replay against the recorded step.
struct IterationResult {
    int iteration = 0;  // 1-based
    TimelineFigures replayed;
    double span_ratio = NAN;        // replayed span / recorded span
    double stretch = NAN;           // replayed span / (kernel time + warm-up reads): 1 = no idle
    double median_gap_ratio = NAN;  // replayed median gap / recorded median gap
    double issue_host_us = NAN;     // host time from the iteration's first issue to its last
    std::size_t unattributed = 0;   // timed records that could not be tied to a step
};

struct ReportTimeline {
    std::string issue_path;  // direct | graph | graph per step, "+direct" when some steps were
    TimelineFigures recorded;
    std::vector<IterationResult> iterations;
    // The first iteration's largest gap over the last one's (lazy set-up inside the first step
    // shows here); NaN with one iteration.
    double first_to_last_max_gap = NAN;
    // What the backend still allocated, created or loaded once the plan was sealed: each line a
    // first use inside the timed step, which the plan should have done.
    std::vector<std::string> first_uses;
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
    std::optional<ReportTimeline> timeline;  // sequential mode

    std::string input(const std::string& key) const;
    std::string env(const std::string& key) const;
};

// Short tier name for tables ("gemm", "aten op", ...).
const char* tier_label(Tier tier);
// A kernel row with the recorded side filled in, as every report starts from.
KernelResult recorded_result(const UniqueKernel& kernel);
// True when the kernel has replayed statistics (at least one timed sample).
inline bool was_replayed(const KernelResult& kernel) {
    return kernel.replayed_us.count > 0;
}

// Fills error_pct, replayed_us, name_match-derived totals, tier rows and ReportTotals from the
// per-kernel samples (shared by every driver so the figures mean the same everywhere).
void finalize_report(Report& report);

}  // namespace replay
