// Which timing record of one issue belongs to which recorded kernel it re-creates. A record only
// ever times an activity of its own kind (a memset never times a GEMM), and a kernel record times
// a kernel when it carries that kernel's name, or when it is the one kernel record left for the
// one kernel left (cuBLAS's heuristics may pick another kernel than the recording's). When no
// kernel of the issue came back under a recorded name and the counts disagree (the library chose
// another algorithm: a split-K GEMM run as one kernel at a larger shape, a cub scan as one
// PyTorch scan kernel), the kernel records time the kernels together, shared out
// by their recorded durations, as a whole-issue timing is: the sum stays the time and no
// record stands for a kernel it is not. Otherwise what has no record of its own is a miss with a
// reason, never a sample of something else.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "replay/backend.h"
#include "replay/trace_model.h"

namespace replay {

// A recorded activity that an issue re-creates.
struct ExpectedActivity {
    std::string name;
    ActivityKind kind = ActivityKind::Kernel;
    double recorded_us = 0;  // its recorded duration: its share of a shared timing
    std::array<std::int32_t, 3> grid{};  // its recorded launch grid; zeros: not known
};

struct RecordMatch {
    static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
    std::size_t record = kNone;  // index into the records; kNone: a miss or shared
    bool same_name = false;
    // The kernel records (indices) that time this kernel together with the other
    // kernels, and this kernel's share of their summed time; empty when `record` decides.
    std::vector<std::size_t> shared;
    double share = 0;
    std::string reason;  // why it missed, or why it shares, when it does
};

// The kind of a record from its name as CUPTI and Kineto write it ("Memcpy HtoD (...)",
// "Memset (Device)"; "memset32", a CUDA graph's memset node recorded as a kernel, is a memset
// too); everything else is a kernel.
ActivityKind record_kind(const std::string& name);

// One match per expected activity, for per-kernel records (TimedActivity::per_kernel) of one
// issue in start order. Same kind, name and launch grid first (an op that launches one kernel
// twice, a convolution converting its input and then its weights, is told apart by the grids),
// then same kind and name; then, per kind, the records left are paired in
// order with the activities left when their counts agree (another kernel name: reported as a
// mismatch); when they disagree, memcpys and memsets still pair in order, and the kernels share
// the kernel records when none of the kernels matched by name, else miss.
std::vector<RecordMatch> match_records(const std::vector<ExpectedActivity>& expected,
                                       const std::vector<TimedActivity>& records);

}  // namespace replay
