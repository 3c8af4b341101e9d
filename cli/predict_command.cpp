#include "predict_command.h"

#include <iostream>
#include <memory>

#include "commands.h"
#include "output_files.h"
#include "trace_loader.h"

namespace replay::cli {

void PredictCommand::add_options(CLI::App& app) {
    app.add_option("--times", times_,
                   "report.json of a replay of this trace (this GPU or another): its GPU times "
                   "replace the recorded ones (sequential: per activity; unique: each kernel's "
                   "median); kernels it lacks keep their recorded time");
    app.add_option("--model", model_,
                   "model.json of `replay fit`: kernels whose recipe a model covers (same op, "
                   "dtypes and fixed dims as the swept kernel) get the model's time; the notes "
                   "name every modelled kernel. --times, when given too, wins for the kernels it "
                   "measured");
    app.add_option("--scale", scale_,
                   "Multiply GPU durations: TIER=FACTOR (tier 1-4 by number, tier1-tier4, copy, "
                   "gemm, aten, collective) or name~REGEX=FACTOR on kernel names; repeatable, "
                   "factors of rules that match the same activity multiply");
    app.add_option("--launch-us", launch_us_,
                   "What if every kernel-launch runtime call took this long (e.g. CUDA graphs)")
        ->check(CLI::Range(0.0, 1e9));
    app.add_option("--op-overhead-us", op_overhead_us_,
                   "Profiler cost per recorded op, measured elsewhere, instead of the estimate "
                   "from the trace's leaf-op footprints (their mean)")
        ->check(CLI::Range(0.0, 1e9));
    app.add_option("--host-reference", host_reference_,
                   "A trace recorded on the host to predict for (any workload; with --times from "
                   "a replay on that host's GPU: this step there): the median, over the cpu_op "
                   "and runtime-call names both traces record at least 5 times, of the ratio of "
                   "their median durations scales the what-if's CPU work and runtime calls. "
                   "Both traces should be profiled alike (record_shapes on or off in both)");
    app.add_option("--out", out_dir_,
                   "Write DIR/prediction.json (schemas/prediction.schema.json) and "
                   "DIR/predicted_trace.json (a Chrome trace of the predicted timeline: runtime "
                   "calls per CPU thread, activities per stream; the what-if when there is one)");
    app.add_flag("--json", json_, "Print prediction.json on stdout instead of the text summary");
}

int PredictCommand::run(const Analysis& analysis, const LoadOptions& load) const {
    const bool quiet = load.quiet;
    PredictOptions options;
    options.times_path = times_;
    options.model_path = model_;
    for (const auto& rule : scale_) options.scale.push_back(parse_scale_rule(rule));
    options.launch_us = launch_us_;
    options.op_overhead_us = op_overhead_us_;
    options.host_reference_path = host_reference_;
    std::unique_ptr<Analysis> reference;
    if (!host_reference_.empty()) {
        LoadOptions plain;  // its own trace: none of this trace's side files
        plain.quiet = load.quiet;
        plain.strict = load.strict;
        plain.max_event_bytes = load.max_event_bytes;
        reference = load_trace(host_reference_, plain);
    }
    const StepPrediction prediction =
        predict_step(analysis, options, reference ? &reference->trace() : nullptr);
    if (json_)
        write_prediction_json(std::cout, prediction);
    else
        print_prediction(std::cout, prediction);
    if (!out_dir_.empty()) {
        OutputFolder out(out_dir_);
        out.write("prediction.json",
                  [&](std::ostream& o) { write_prediction_json(o, prediction); });
        out.write("predicted_trace.json",
                  [&](std::ostream& o) { write_predicted_trace(o, analysis.graph, prediction); });
        out.commit();
        if (!quiet)
            std::fprintf(stderr, "wrote %s/prediction.json and %s/predicted_trace.json\n",
                         out_dir_.c_str(), out_dir_.c_str());
    }
    return 0;
}

Command add_predict_command(CLI::App& app) {
    struct State {
        std::string trace;
        LoadOptions load;
        PredictCommand predict;
    };
    auto s = std::make_shared<State>();
    auto* predict = app.add_subcommand("predict", PredictCommand::kDescription);
    add_trace_argument(*predict, s->trace)->required();
    add_load_options(*predict, s->load, SideFiles::Offered);
    add_set_dims_option(*predict, s->load);
    s->predict.add_options(*predict);
    return {predict, [s] { return s->predict.run(*load_trace(s->trace, s->load), s->load); }};
}

}  // namespace replay::cli
