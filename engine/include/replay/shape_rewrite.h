// Trace-level what-if: `--set-dims batch=4,seq=128` rewrites every recorded dim that traces back
// to the model input's batch or sequence length, so that the trace's recipes become those of the
// same model at another shape.
//
// The input's [batch, seq] come from the first embedding-like op (aten::embedding's indices).
// Every op's recorded sizes are then labelled, op by op in recorded order, with a product of
// b and s (b, s, b*s, s*s, heads*b...) or left alone:
//   * sizes an op computes from its input's (view/reshape/expand size lists, the allocations
//     nested in an op) are labelled by aligning them with the input's labelled dims;
//   * a tensor argument takes the labels of the most recent tensor of the same dims that a
//     labelled size list produced;
//   * anything else is labelled by value, batch first: in a tensor that has a seq-sized dim, the
//     leading dim carries the batch (a 1 is b, 16 is 16*b, a seq-sized one is b*s).
// Conservative: a dim that only equals b or s by value where b or s is 1, or that matches two
// different products, is left as recorded and listed as ambiguous.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "replay/trace_model.h"

namespace replay {

struct DimsRequest {
    std::optional<std::int64_t> batch, seq;
};
// "batch=4,seq=128" (either may be left out). Throws std::invalid_argument saying what is
// accepted.
DimsRequest parse_set_dims(std::string_view text);

struct ShapeRewriteReport {
    std::string input_op;  // the op whose indices gave [batch, seq]
    std::int64_t batch_from = 0, seq_from = 0, batch_to = 0, seq_to = 0;
    std::size_t ops_changed = 0;
    std::size_t dims_rewritten = 0;  // tensor dims, strides and size-list entries changed
    // One line per kind of dim that could not be placed ("aten::arange arg 0 = 1: equals the
    // batch 1 by value only (x2)").
    std::vector<std::string> ambiguous;
    std::size_t ambiguous_dims = 0;
    // aten::reshape ops recorded as views that copy at the new shape: an aten::copy_ and its
    // kernel are added to the trace for each (engine/reshape_copies.h).
    std::size_t reshape_copies = 0;
};
std::string describe(const ShapeRewriteReport& report);

// Labels the trace's recorded sizes once (see the top of this file); apply() then rewrites a
// trace with the same op shapes to any batch and seq.
class ShapeRewriter {
  public:
    // Throws InputError when the trace has no op with [batch, seq] indices.
    explicit ShapeRewriter(const Trace& trace);
    ~ShapeRewriter();
    ShapeRewriter(ShapeRewriter&&) noexcept;
    ShapeRewriter& operator=(ShapeRewriter&&) noexcept;

    std::int64_t batch() const;
    std::int64_t seq() const;
    // Rewrites `trace` (the one labelled, or a copy of it) in place. A reshape that copies at
    // the new shape adds ops, a launch and a kernel at the end of the trace's event lists (the
    // kernel graph must be built again to see them); the next apply() takes them out again.
    ShapeRewriteReport apply(Trace& trace, const DimsRequest& request) const;

  private:
    struct Plan;
    std::unique_ptr<Plan> plan_;
};

}  // namespace replay
