// `replay predict`: simulate the recorded step, with recorded or replayed GPU times and what-if
// changes, and print or write the prediction.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "replay/analysis.h"
#include "replay/predict.h"
#include "trace_loader.h"

namespace replay::cli {

class PredictCommand {
  public:
    static constexpr const char* kDescription =
        "Predict the step time: a discrete-event simulation of the recorded step. Each CPU "
        "thread replays its runtime calls with the recorded CPU time between them; a kernel "
        "starts no earlier than its launch plus the launch latency (measured on the trace), its "
        "stream predecessor's end and its cross-stream waits; host synchronisations and "
        "blocking copies return when the GPU work they wait for is done. Prints, per "
        "ProfilerStep#N (from the previous step's end to the later of its range's end and the "
        "end of the GPU work launched in it; else the traced span), the recorded and predicted "
        "step time, the prediction without the profiler's per-op overhead, and the critical "
        "path:\n"
        "  cpu-bound: CPU work between runtime calls, the calls themselves, and launch latency "
        "(call start to kernel start) where the GPU waited for the host\n"
        "  gpu-bound: GPU activities and the dispatch gaps between dependent ones\n"
        "  sync: synchronisations' own return time after the GPU work they waited for (the "
        "wait itself is the GPU work on the path)\n"
        "  unexplained: time before points kept at their recorded time (a helper thread's "
        "first event, an activity without a launch)\n"
        "--times, --model, --scale, --launch-us and --host-reference add a what-if prediction "
        "beside the recorded one.";

    // The subcommand's own options; its trace inputs (--et, --shapes, --strict, --quiet) come
    // from the trace loader, as every command's do (add_predict_command).
    void add_options(CLI::App& app);
    // `load` reads --host-reference (the same loader as the trace's, quiet and strict alike).
    int run(const Analysis& analysis, const LoadOptions& load) const;

  private:
    std::string out_dir_;
    bool json_ = false;
    std::string times_;
    std::string model_;
    std::vector<std::string> scale_;
    double launch_us_ = NAN;
    double op_overhead_us_ = NAN;
    std::string host_reference_;
};

}  // namespace replay::cli
