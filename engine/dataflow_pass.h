// The dataflow inference's passes (engine/dataflow_pass.cpp): one per thread, over the ops with
// recorded shapes in start order, giving each tensor input a storage id (an earlier op's output
// of its dims and dtype, an enclosing op's input, or a storage from before the step) and each op
// an output. Internal to engine/dataflow*.cpp; dataflow.cpp chooses the ops and their order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "replay/dataflow.h"
#include "replay/trace_model.h"

namespace replay::dataflow_detail {

inline bool is_step(std::string_view name) {
    return name.starts_with("ProfilerStep#");
}

// ProfilerStep#N ranges: an op's step, so that a step does not read the previous step's outputs.
class Steps {
  public:
    explicit Steps(const Trace& trace) {
        for (const CpuOp& op : trace.cpu_ops)
            if (is_step(trace.names.view(op.name))) starts_.push_back(op.ts);
        std::sort(starts_.begin(), starts_.end());
    }
    // From the steps' starts, in any order.
    explicit Steps(std::vector<Nanos> starts) : starts_(std::move(starts)) {
        std::sort(starts_.begin(), starts_.end());
    }
    std::size_t of(Nanos ts) const {
        return static_cast<std::size_t>(std::upper_bound(starts_.begin(), starts_.end(), ts) -
                                        starts_.begin());
    }
    // The same for times mostly in increasing order (a thread's ops): `at` is the answer for the
    // time before, moved on from there (a trace of thousands of steps made the binary search a
    // cache miss per op).
    std::size_t of(Nanos ts, std::size_t& at) const {
        if (at > starts_.size() || (at > 0 && starts_[at - 1] > ts)) return at = of(ts);
        while (at < starts_.size() && starts_[at] <= ts) ++at;
        return at;
    }

  private:
    std::vector<Nanos> starts_;
};

// The passes over `threads` (each thread's ops, in the order they run), the first thread's first:
// a backward pass (autograd's thread) reads what the forward pass saved. Writes the ops' records in
// Trace::storages and, where an op's recorded shapes must change (untyped tensor lists, storage
// offsets), its shapes.
DataflowSummary run_thread_passes(Trace& trace, const Steps& steps,
                                  const std::vector<std::vector<std::uint32_t>>& threads);

}  // namespace replay::dataflow_detail
