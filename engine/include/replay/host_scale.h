// How much faster or slower another host's CPU runs the same framework code: from two traces,
// one of this step and one recorded on the other host (any workload), the per-name ratio of the
// median CPU duration of the ops and runtime calls both record often, and their median. The step
// simulation multiplies every recorded CPU time by it (`replay predict --host-reference`).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "replay/trace_model.h"

namespace replay {

// One name both traces record at least HostScale::kMinInstances times.
struct NameRatio {
    std::string name;
    bool runtime_call = false;  // a CUDA runtime/driver call, else a cpu_op
    std::size_t target_count = 0, reference_count = 0;
    double target_median_us = 0, reference_median_us = 0;
    double ratio() const { return reference_median_us / target_median_us; }
};

struct HostScale {
    static constexpr std::size_t kMinInstances = 5;
    // Fewer shared names than this give no scale: a handful of ops says more about the two
    // workloads' shapes than about the two CPUs.
    static constexpr std::size_t kMinNames = 5;
    double scale = 1;                 // reference host's CPU time / this trace's host's
    double ratio_p25 = 1, ratio_p75 = 1;  // spread of the per-name ratios
    std::vector<NameRatio> names;     // the ratios it came from, by name
};

// Throws InputError (naming `reference_path`) when the traces share fewer than kMinNames names.
// cpu_ops of category cpu_op and runtime calls count; calls whose duration is the GPU's (host
// synchronisations and copies, which may wait for it) and zero-length medians do not.
HostScale estimate_host_scale(const Trace& target, const Trace& reference,
                              const std::string& reference_path);

}  // namespace replay
