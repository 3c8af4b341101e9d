// Ops whose recorded kernels ran on several streams (cuDNN's RNNs run an op's layers on streams
// of their own, internal to replayers/): how long their kernels ran two or more at a time,
// replayed and recorded. Overlapping kernels slow each other, and how much they overlap depends
// on how fast the library's launches come, which a profiled run slows: the note that the
// sequential report gets says so, with the figures, so that such kernels' errors are read right.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "replay/backend.h"
#include "replay/kernel_graph.h"

namespace replay::detail {

using Span = std::pair<std::int64_t, std::int64_t>;  // [start, end) in ns

// The time during which at least two of `spans` run.
std::int64_t overlapped_ns(std::vector<Span> spans);
// The recorded spans of `nodes` when they ran on more than one stream; empty otherwise.
std::vector<Span> spans_on_several_streams(const KernelGraph& graph,
                                           const std::vector<std::uint32_t>& nodes);

class StepOverlap {
  public:
    // One step of an iteration: its recorded activities' spans and the records its issue
    // brought back.
    void add(std::vector<Span> recorded, const std::vector<TimedActivity>& replayed);
    // Forget the iteration before (the note is about the last one).
    void clear() { *this = StepOverlap{}; }
    bool empty() const { return ops_ == 0; }
    std::string note() const;

  private:
    std::size_t ops_ = 0;
    std::int64_t recorded_overlap_ = 0, recorded_busy_ = 0;
    std::int64_t replayed_overlap_ = 0, replayed_busy_ = 0;
};

}  // namespace replay::detail
