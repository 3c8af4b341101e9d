// A replay on GPU B of a trace recorded on GPU A, against B's own recording of the same workload
// (`replay TRACE_A --target TRACE_B`): the replay becomes a prediction of B, and its error is
// measured per kernel and in total. Kernels are matched by signature id, then by name, grid and
// block, then (GEMMs, whose kernel cuBLAS picks per GPU) by recipe; a GEMM's replayed kernel name
// is compared with the one B recorded.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "replay/report.h"
#include "replay/signatures.h"

namespace replay {

struct TargetKernel {
    std::string id;
    std::string name;           // as recorded on A
    std::string target_name;    // as recorded on B
    std::string replayed_name;  // what the replay ran (per-kernel timing), else ""
    std::string matched_by;     // "id" | "name" | "recipe"
    std::size_t count = 0;      // instances on A
    double replayed_median_us = 0;
    double target_median_us = 0;
    double error_pct = 0;  // replayed against B's recording
    bool gemm = false;
    bool same_name_as_target = false;  // the replayed kernel is the one B ran
};

struct TargetComparison {
    std::string target;  // B's trace
    std::vector<TargetKernel> kernels;
    std::size_t replayed_unmatched = 0;  // replayed kernels B has no counterpart of
    double predicted_us = 0;             // sum over matched kernels of replayed median x count
    double target_us = 0;                // sum of B's medians x the same counts
    double total_error_pct = 0;
    double median_abs_error_pct = 0;
    std::size_t gemms = 0, gemms_same_name = 0;
};

// `report`: the replay of A, whose unique kernels are `replayed`; `target`: B's unique kernels.
TargetComparison compare_with_target(const Report& report,
                                     const std::vector<UniqueKernel>& replayed,
                                     const std::vector<UniqueKernel>& target,
                                     const std::string& target_trace);

void write_target_json(std::ostream& out, const TargetComparison& comparison);
void print_target_summary(std::ostream& out, const TargetComparison& comparison);

}  // namespace replay
