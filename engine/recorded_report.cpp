#include "replay/recorded_report.h"

namespace replay {

Report recorded_report(const Analysis& analysis) {
    Report r;
    r.mode = "recorded";
    r.inputs = {{"trace", analysis.trace().source}, {"trace_hash", analysis.trace_hash}};
    const auto& devices = analysis.trace().meta.devices;
    if (!devices.empty()) r.environment.emplace_back("gpu", devices.front().name);
    for (const auto& k : analysis.kernels) {
        KernelResult kr = recorded_result(k);
        kr.outcome = KernelOutcome::Recorded;
        for (const auto node : k.nodes)
            kr.samples_us.push_back(
                static_cast<double>(analysis.graph.activity(analysis.graph.nodes()[node]).dur) /
                1000.0);
        r.kernels.push_back(std::move(kr));
    }
    return r;
}

}  // namespace replay
