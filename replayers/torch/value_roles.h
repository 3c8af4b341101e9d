// What the values of an op's integer, mask, divisor and variance-like tensors mean, so that
// synthesized inputs stay valid: an index into a dimension of another argument, the offsets or
// sizes of groups that split a dimension, a divisor, a mask the op writes through, what the op
// takes the square root or the logarithm of. Learnt from the op's schema (argument
// names, `dim` arguments, `Tensor?[] indices` against `self`'s leading dimensions) and, for what a
// schema cannot say, from one table (value_roles.cpp). Random data in an index tensor is an index
// out of range: on a GPU a device-side assert that poisons the CUDA context for every later op.
// Internal to replayers/torch/.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/function_schema.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace replay::torch_detail {

enum class ValueRole : std::uint8_t {
    Index,    // every value in [0, bound)
    Offsets,  // nondecreasing group boundaries over `total` (see ValueConstraint)
    Counts,   // nonnegative group sizes summing to `total`
    // Integers: every value in [1, bound] (integer division by zero fails). Floating point:
    // every value 1, so that quotients keep the data's values: random data near zero made
    // Mixtral's routing weights reach 1e16, and unique mode's repeated in-place div_ inf.
    Divisor,
    // A bool mask whose set elements the op overwrites with a constant (masked_fill): none set.
    // The trace does not say which elements the recording masked (an MoE layer's invalid-expert
    // mask masks none); a random half would zero half of a tensor that later ops read (SiLU's
    // division then takes its slow path: 14.6 instead of 10.1 us on an H200).
    EmptyMask,
    // Floating point: every value in [0.5, 1.5). What an op takes the square root or the
    // logarithm of (a batch norm's running variance, Adam's second moments): the recording's
    // values were in the function's domain, and on a GPU the correctly rounded square root of a
    // negative number or a NaN takes a slow path (an eager ResNet-50's batch-norm kernels ran
    // 7-9% slower on signed data).
    Positive,
};
const char* to_string(ValueRole role);

struct ValueConstraint {
    std::size_t arg = 0;   // schema argument
    std::size_t item = 0;  // element of a tensor list (0 for a tensor)
    ValueRole role = ValueRole::Index;
    std::int64_t bound = 1;  // Index, Divisor
    std::int64_t total = 0;  // Offsets, Counts: the extent the groups split
    // Offsets: group starts (the first value is 0) rather than group ends; with both flags the
    // sequence is 0, ..., total (cu_seqlens, embedding_bag with include_last_offset).
    bool leading_zero = false;
    bool ends_at_total = true;
    // Offsets, Counts: every group but the last is a multiple of `align` (grouped GEMM kernels
    // need the groups of their dynamic dimension 16-byte aligned).
    std::int64_t align = 1;
    // Offsets, Counts: group sizes of a uniform routing (each aligned unit of rows picks a group
    // at random: a MoE layer's tokens per expert, which the trace records the total of but not
    // the split), rather than equal groups.
    bool routed = false;
    std::string what;  // where the range comes from: "self dim 0 (512)", for reasons and tests
};

// Whether argument `arg` of `schema` holds integer values that index or split something: its
// dtype is then int64 when the trace did not record one (old traces).
bool holds_indices(const c10::FunctionSchema& schema, std::size_t arg);

// The constraints on the integer tensors of a stack built for `schema`, read from the stack
// itself (the sizes and ints the op will get). nullopt with `why` when an index's range cannot be
// known: the op is skipped rather than risk a device-side assert.
std::optional<std::vector<ValueConstraint>> value_constraints(const c10::FunctionSchema& schema,
                                                              const std::vector<c10::IValue>& stack,
                                                              std::string& why);

// The tensor a constraint is about (a stack argument or a tensor-list element).
at::Tensor constrained_tensor(const std::vector<c10::IValue>& stack, const ValueConstraint& c);

// Whether `t`, under `c`, is a floating-point divisor: all ones, not integers in [1, bound].
inline bool ones_divisor(const ValueConstraint& c, const at::Tensor& t) {
    return c.role == ValueRole::Divisor && t.is_floating_point();
}

// The range of ValueRole::Positive.
inline constexpr double kPositiveLow = 0.5, kPositiveHigh = 1.5;

// Values for a constraint of `count` elements (Offsets and Counts only): groups of aligned units
// that sum to the total, the unaligned rest going to the last group. Equal groups (the remainder
// to the first ones), or with `routed` a multinomial draw seeded by `seed`.
std::vector<std::int64_t> group_values(const ValueConstraint& c, std::int64_t count,
                                       std::uint64_t seed = 0);

// Empty when `values` (the tensor's elements in order) satisfy `c`, else what is wrong.
std::string check_values(const ValueConstraint& c, const std::vector<std::int64_t>& values);

}  // namespace replay::torch_detail
