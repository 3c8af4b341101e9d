// The replay report: what was replayed, on which machine, and how each unique kernel compares
// with the recording. Written as report.json (report_json.h) and kernels.csv (kernels_csv.h);
// read back by regress/compare.
#pragma once

#include <array>
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

// Energy per launch of one unique kernel (unique mode with --energy): windows of launches back to
// back (without the timing's context: an L2 eviction's energy would swamp a short kernel's), each
// from one change of the board's energy counter to a later one. A launch's energy is its dynamic
// energy (above the idle power, whatever the gaps between launches) plus the idle power over its
// own replayed time.
struct KernelEnergy {
    std::vector<double> samples_uj;  // per window: energy per launch, microjoules (the driver's)
    DurationStats uj;                // summary of samples_uj (finalize_report)
    double dynamic_uj = NAN;         // median over the windows of the energy above idle per launch
    double launches = 0;             // launches issued back to back for the windows
    // Windows in which the board held its clocks down (its power limit, heat) and what did:
    // their energy per launch is at the clocks the controller chose, not the kernel's own.
    int limited_windows = 0;
    std::string limited_by;
    // The loop itself: its time per launch (the replayed median plus the gap to the next
    // launch), the board's median power over the windows, and the windows' median SM clock and
    // die temperature (NaN: not read; reports before 2026-11-25 have none of these).
    double loop_us = NAN;
    double loop_power_w = NAN;
    double sm_clock_mhz = NAN;
    double temperature_c = NAN;
    std::string why;     // requested but not measured: why (energy n/a, never 0)
    double flops = NAN;  // work per launch (GEMMs), for pj_per_flop
    // Derived by finalize_report from the median energy and the replayed median time:
    // power_w: loop_power_w where measured (older reports: energy / replayed median, which
    // reads above the board's limit when the loop ran slower than the timed runs)
    double power_w = NAN;
    double edp_uj_us = NAN;    // energy-delay product
    double pj_per_flop = NAN;  // GEMMs
    bool measured() const { return !samples_uj.empty(); }
};

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
    // Two speeds (stats::two_groups(); empty for one): the recorded instances' and the replayed
    // samples'. Where they are set, error_pct compares which group holds the middle.
    std::vector<ValueGroup> recorded_groups, replayed_groups;
    std::vector<std::string> replayed_names;  // kernel names the replay produced for it
    bool name_match = false;                  // a replayed name equals the recorded one
    // The launch grids of its timing records that differ from the recorded grid (at most 4):
    // the library configured the launch otherwise, or the replayed shapes are not the recorded.
    std::vector<std::array<std::int32_t, 3>> replayed_grids;
    // Roofline: the work of one instance (recorded_result(), from the recipe) and, once
    // replayed, the rates at the replayed median and their share of the device's peaks
    // (roofline.h; NaN where the report's environment has no peak, as on the cpu backend).
    double flops = 0;                   // GEMMs
    double bytes = 0;                   // the least a GEMM or a copy moves
    DType flop_dtype = DType::Unknown;  // the operand type whose peak the FLOPs count against
    double gflops_per_s = NAN;          // GEMMs
    double gb_per_s = NAN;              // GEMMs and copies
    double pct_peak_flops = NAN;        // gflops_per_s of the peak TFLOP/s of flop_dtype
    double pct_peak_bandwidth = NAN;    // gb_per_s of the peak memory bandwidth
    KernelEnergy energy;                // measured with --energy (report.energy.requested)
};

struct TierResult {
    Tier tier = Tier::NotReplayable;
    std::size_t unique = 0;
    std::size_t activities = 0;
    double recorded_us = 0;
    double replayed_us = 0;           // over the kernels that were replayed
    double replayed_recorded_us = 0;  // their recorded time, for a like-for-like ratio
    // --energy: count x energy per launch over the tier's kernels with energy, millijoules
    double energy_mj = NAN, dynamic_energy_mj = NAN;
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
    // Sum over replayed kernels of |replayed - recorded| time (each unique kernel's mean error
    // times its count), as a share of their recorded time: what the replay got wrong kernel by
    // kernel, where errors of opposite sign do not offset as they do in total_error_pct.
    double weighted_abs_error_pct = NAN;
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

// What the backend found when it started measuring energy: how often its readings change, how
// precisely a change is timed, and the idle power. A backend without an energy counter says why.
struct EnergyProbe {
    bool available = false;
    std::string why;                  // not available: what is missing (energy is n/a, never 0)
    std::string method;               // the counter read
    double counter_period_ms = NAN;   // median time between changes of the energy counter
    double counter_jitter_ms = NAN;   // 1.4826 x MAD of that time
    double counter_read_ms = NAN;     // median time between two reads of the counter
    double counter_step_mj = NAN;     // smallest change seen
    std::size_t counter_changes = 0;  // changes seen while probing
    double power_period_ms = NAN;     // median time between changes of the power reading
    double power_read_ms = NAN;       // median time between two reads of the power
    double idle_power_w = NAN;        // the counter over an idle window before the run
    double idle_window_ms = NAN;
    double power_limit_w = NAN;
};

// The energy of one step: a replayed one (sequential mode, or unique mode's sequential pass),
// measured in windows of the whole step looped back to back, or the real model's
// (examples/capture_trace.py's timing.json). Static: the idle power over the step's time;
// dynamic: the rest.
struct StepEnergy {
    std::vector<double> samples_mj;  // per window: energy per step (replayed steps only)
    double mj = NAN;                 // median (replayed) or the measured figure (model)
    double dynamic_mj = NAN;
    double static_mj = NAN;
    double step_us = NAN;       // wall time of one step
    double power_w = NAN;       // average board power while the steps ran
    double idle_power_w = NAN;  // the idle power that static_mj is taken from
    double steps = 0;           // steps measured
    // Replayed step: the dynamic energy per step of its L2 warm-up reads, looped alone, which
    // samples_mj leave out (the recording had no such reads); NaN: none, or not measured.
    double warm_read_mj = NAN;
    int limited_windows = 0;  // replayed: windows with the clocks held down (KernelEnergy's)
    std::string limited_by;
    double sm_clock_mhz = NAN;  // replayed: the windows' median SM clock and die temperature
    double temperature_c = NAN;
    std::string source;  // model: the timing.json file
    std::string gpu;     // model: the GPU it was measured on
    bool measured() const { return std::isfinite(mj); }
};

// report.json's "energy": present when --energy was given, whether or not energy could be read.
struct ReportEnergy {
    bool requested = false;
    EnergyProbe probe;
    int window_updates = 0;  // counter changes per window
    double window_ms = NAN;
    int windows = 0;          // windows per measurement
    std::string window_rule;  // how the window length was chosen
    double min_us = 0;        // --energy-min-us: shorter kernels were not measured
    DurationStats power_w;    // the background sampler's readings while replaying
    StepEnergy step;          // the replayed step
    StepEnergy model;         // the real model's step, from a timing.json
    // Unique mode: sum over the kernels with energy of count x energy per launch, and the share of
    // the recorded time those kernels had.
    double predicted_mj = NAN, predicted_dynamic_mj = NAN, coverage = NAN;
    // Percent of the second. The sum over kernels counts the idle power over the kernels' own
    // time only, not over the gaps between them in a step: it is held against the step's dynamic
    // energy (predicted_*). step_vs_model_pct: whole against whole, comparable only where the two
    // steps took as long; the *_dynamic_pct and predicted_vs_model_pct figures subtract each
    // step's own idle power, the model's from the capture's probe: a few watts between two
    // probes over the step's time can be the whole dynamic energy of a light step.
    double predicted_vs_step_pct = NAN, predicted_vs_model_pct = NAN;
    double step_vs_model_pct = NAN, step_vs_model_dynamic_pct = NAN;
    // Against a step's whole energy (what the GPU drew over it, gaps between kernels included):
    // the replay's dynamic energy plus this run's probed idle power over that step's duration.
    // One idle power on both sides, and the durations equal by construction: what is left is
    // the dynamic energy the replay got wrong, which *_w spreads over the reference step's time
    // (W, to hold against the idle probe's own drift). The sum over kernels (back-to-back
    // launches) has none of the above-idle power of the step's gaps between kernels: that is
    // part of predicted_at_step_w.
    double predicted_at_step_mj = NAN, predicted_at_step_vs_step_pct = NAN;
    double predicted_at_step_w = NAN;
    double step_at_model_mj = NAN, step_at_model_vs_model_pct = NAN, step_at_model_w = NAN;
    double predicted_at_model_mj = NAN, predicted_at_model_vs_model_pct = NAN;
    // The real step's dynamic energy with this run's idle power (not the capture's).
    double model_dynamic_same_idle_mj = NAN, step_vs_model_dynamic_same_idle_pct = NAN;
    std::vector<std::string> notes;
};

// The shape of a timeline, the recorded step's or one replayed iteration's (timeline_figures()
// in timeline.h computes it from the activities' intervals).
struct TimelineFigures {
    double span_us = NAN;        // first start to last end, warm-up reads included
    double kernel_us = 0;        // summed durations of the activities (kernels, copies, memsets)
    double warm_read_us = 0;     // summed durations of the replay's L2 warm-up reads
    double median_gap_us = NAN;  // between consecutive activities of a stream, warm-up reads out
    double max_gap_us = NAN;
    // The same gaps with the warm-up reads in them counted as gap: from one activity's end to the
    // next one's start. The reads stand for cache state that took no time in the recording, so
    // this is what --pace recorded reproduces; median_gap_us is the time the GPU sat idle.
    double median_kernel_gap_us = NAN;
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
    double kernel_gap_ratio = NAN;  // replayed median_kernel_gap_us / the recorded one
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
    ReportEnergy energy;
    std::optional<ReportTimeline> timeline;  // sequential mode

    std::string input(const std::string& key) const;
    std::string env(const std::string& key) const;
    std::string option(const std::string& key) const;
};

// Short tier name for tables ("gemm", "aten op", ...).
const char* tier_label(Tier tier);
// A kernel row with the recorded side filled in, as every report starts from.
KernelResult recorded_result(const UniqueKernel& kernel);
// True when the kernel has replayed statistics (at least one timed sample).
inline bool was_replayed(const KernelResult& kernel) {
    return kernel.replayed_us.count > 0;
}

// Replayed, and its recorded instances ran at two speeds (recorded_groups): its median error says
// which speed held the middle.
inline bool replayed_at_two_recorded_speeds(const KernelResult& kernel) {
    return was_replayed(kernel) && !kernel.recorded_groups.empty();
}

// Fills error_pct, replayed_us, name_match-derived totals, tier rows and ReportTotals from the
// per-kernel samples (shared by every driver so the figures mean the same everywhere), and the
// energy figures (finalize_energy).
void finalize_report(Report& report);

// The energy figures derived from the measured ones: per kernel its statistics, power, EDP and
// pJ/FLOP; per tier and in total the sum of count x energy per launch; static and dynamic step
// energies; the comparisons between prediction, replayed step and real step. Idempotent
// (report_energy.cpp).
void finalize_energy(Report& report);

}  // namespace replay
