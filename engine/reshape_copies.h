// --set-dims, internal to engine/shape_rewrite*.cpp: the copies that aten::reshape makes at the
// new shape where the recording had a view.
//
// PyTorch's reshape returns a view when the input's strides allow one (at::detail::computeStride)
// and otherwise clones the input contiguously and views the copy (aten::clone -> aten::copy_,
// one kernel, then aten::_unsafe_view). A layout that allowed a view at the recorded shape may not
// at the new one: BLOOM's attention heads, [b, 16, s, 64] sliced out of the fused QKV projection
// and reshaped to [b*16, s, 64], are a view at batch 1 (a batch of 1 merges with any stride) and
// a copy at batch 4 (72 copy kernels in the real b4 s128 capture, ~9 % of its kernel time). The
// rewrite adds that copy (the view op becomes aten::clone, an aten::copy_ with its kernel launch
// and kernel is nested in it) and gives the copy's contiguous layout to the tensors that the
// recording shows as the view or views of it.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "replay/trace_model.h"

namespace replay::shape_rewrite_detail {

// at::detail::computeStride: the strides of a view of (`dims`, `strides`) with sizes `shape`
// (no -1), nullopt when no view has them.
std::optional<std::vector<std::int64_t>> view_strides(const std::vector<std::int64_t>& dims,
                                                      const std::vector<std::int64_t>& strides,
                                                      const std::vector<std::int64_t>& shape);
// A size list with its -1 worked out from the element count of `dims`.
std::vector<std::int64_t> resolve_size_list(const std::vector<std::int64_t>& dims,
                                            std::vector<std::int64_t> list);

// An aten::reshape recorded as a view (its child is aten::_reshape_alias or aten::view), with
// where a copy kernel it makes at another shape would run.
struct ReshapeSite {
    std::uint32_t reshape = 0;  // Trace::cpu_ops
    std::uint32_t view = 0;     // its view child: becomes the aten::clone
    std::int64_t device = 0, stream = 0;
    Nanos gpu_ts = 0;  // after the stream's work launched before it, before the work after it
};
// Every such reshape of the trace; CpuOp::parent must be set (KernelGraph::build).
std::vector<ReshapeSite> find_reshape_sites(const Trace& trace);

// The events a site's copy adds: `view` renamed aten::clone with (input, memory format) as its
// shapes, an aten::copy_ (contiguous destination, the input as source) nested in it, its
// cudaLaunchKernel and its kernel (recorded duration 0: the recording has no such kernel).
// `input` is the reshape's input at the new shape; `correlation` a fresh id.
void add_reshape_copy(Trace& trace, const ReshapeSite& site, const OpArgument& input,
                      std::int64_t correlation);
// The name the added kernels carry (no recording names them).
inline constexpr const char* kReshapeCopyKernel =
    "aten::copy_ (a reshape's contiguous copy at the --set-dims shape, not in the recording)";

// The contiguous layouts of copies, for the tensors recorded as views of the reshape's result:
// a tensor whose every (size, stride) pair is one of a copy's recorded output pairs (the output
// itself, a transpose of it) takes that copy's new stride for each.
class LayoutRemaps {
  public:
    void add(const std::vector<std::int64_t>& recorded_dims,
             const std::vector<std::int64_t>& recorded_strides,
             const std::vector<std::int64_t>& new_strides);
    // The new strides of a tensor recorded as (dims, strides), nullopt when no copy made it.
    std::optional<std::vector<std::int64_t>> find(const std::vector<std::int64_t>& dims,
                                                  const std::vector<std::int64_t>& strides) const;

  private:
    // Per copy: recorded (size, stride) -> new stride; the latest copy first when several hold
    // a tensor's pairs.
    std::vector<std::vector<std::pair<std::pair<std::int64_t, std::int64_t>, std::int64_t>>> copies_;
};

}  // namespace replay::shape_rewrite_detail
