// Step prediction (`replay predict`): the step simulation of a trace with the recording's GPU
// durations, with a replay's (another GPU's) or with what-if changes, each with the profiler's
// per-op overhead kept and removed; and the outputs (text, prediction.json, predicted_trace.json).
#pragma once

#include <cmath>
#include <optional>
#include <ostream>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "replay/analysis.h"
#include "replay/host_scale.h"
#include "replay/simulation.h"

namespace replay {

// --scale: multiply the GPU durations of one tier, or of the activities whose name matches a
// regular expression. Rules that match the same activity multiply.
struct ScaleRule {
    std::string text;          // as given
    std::optional<Tier> tier;  // a tier rule
    std::regex name;           // a name~REGEX rule (searched anywhere in the name)
    double factor = 1;
};
// "tier2=0.5", "2=0.5", "gemm=0.5" (tiers 1-4 by number or name: copy, gemm, aten, collective),
// "name~REGEX=0.8". Throws std::invalid_argument saying what is accepted.
ScaleRule parse_scale_rule(std::string_view text);

struct PredictOptions {
    std::string times_path;  // --times: a report.json of a replay of this trace
    std::string model_path;  // --model: timing models (`replay fit`) for the kernels they cover
    std::vector<ScaleRule> scale;
    double launch_us = NAN;       // --launch-us: every kernel-launch call takes this long
    double op_overhead_us = NAN;  // --op-overhead-us: calibration instead of the estimate
    // --host-reference: a trace recorded on the host to predict for; its CPU speed relative to
    // this trace's host scales the what-if's CPU times (predict_step's `host_reference`).
    std::string host_reference_path;
    bool what_if() const {
        return !times_path.empty() || !model_path.empty() || !scale.empty() ||
               !std::isnan(launch_us) || !host_reference_path.empty();
    }
};

// Where the GPU durations of a --times run came from.
struct TimesSource {
    std::string path, mode, gpu;
    std::size_t activities_from_report = 0;
    std::size_t activities_recorded = 0;  // their kernel has no time in the report: recorded kept
    std::size_t kernels_missing = 0;      // unique kernels of the trace without a time there
    // Sequential reports whose samples do not line up with the recorded instances (a kernel
    // partly replayed): every instance gets the kernel's median.
    std::size_t kernels_by_median = 0;
    std::size_t report_kernels_unmatched = 0;  // report kernels that are not in this trace
};

struct ScenarioResult {
    std::string name;
    bool what_if = false;
    bool overhead_removed = false;
    Prediction prediction;
};

struct StepPrediction {
    std::string trace, trace_hash;
    ModelParameters parameters;
    PredictOptions options;
    std::optional<TimesSource> times;
    std::optional<HostScale> host;  // --host-reference
    std::size_t modelled_kernels = 0;  // unique kernels timed by --model
    std::size_t scaled_activities = 0;
    Nanos recorded_gpu_time = 0;  // summed activity durations
    Nanos what_if_gpu_time = 0;
    std::size_t streams = 0;
    // recorded, recorded without overhead, then (with what-if options) what-if and what-if
    // without overhead.
    std::vector<ScenarioResult> scenarios;
    std::vector<std::string> notes;

    // The scenario the predicted timeline shows: the what-if when there is one.
    const ScenarioResult& primary() const;
};

// Throws InputError for an unreadable --times report, or a host reference (the parsed trace of
// options.host_reference_path, required when that is set) too unlike this trace to compare.
StepPrediction predict_step(const Analysis& analysis, const PredictOptions& options,
                            const Trace* host_reference = nullptr);

void print_prediction(std::ostream& out, const StepPrediction& prediction);
// schemas/prediction.schema.json
void write_prediction_json(std::ostream& out, const StepPrediction& prediction);
// Chrome trace of the primary scenario: runtime calls per CPU thread (and the step ranges on the
// main thread), activities per stream, at predicted times from the earliest one.
void write_predicted_trace(std::ostream& out, const KernelGraph& graph,
                           const StepPrediction& prediction);

}  // namespace replay
