// Input synthesis: the tensors a replayed op reads and writes, made from their recorded dims,
// strides, offsets and dtypes on the replay device and filled with random but valid data, and the
// boxed stack of a bound op (schema_binding.h). Internal to replayers/torch/.
//
// Input data (documented rule, also in the README):
//   * floating/complex tensors: N(0, 0.1^2) (U[0, 1) for ops that take probabilities);
//   * bool tensors: uniform {false, true};
//   * integer tensors whose values index or split something (value_roles.h: learnt from the
//     op's schema and one table): inside the range they address. Indices uniform in [0, size of
//     the indexed dimension); offsets and group sizes (grouped GEMM offsets, cu_seqlens,
//     embedding_bag offsets, repeat_interleave repeats) groups that sum to the recorded total,
//     increasing, aligned as the kernels need: equal groups, or for a MoE routing (grouped GEMM
//     offsets) a uniform routing, each row picking its group at random (a multinomial draw per op,
//     seeded); integer divisors in [1, 16]. The values are
//     checked on the host before the op is prepared; an index whose range cannot be known skips
//     the op with a reason instead of risking a device-side assert;
//   * other integer tensors (data: sort keys, counts, positions): uniform in [0, bound) where
//     bound is the smallest positive dimension among the op's other tensor arguments (at least 1);
//   * with dataflow, only floating/complex tensors share recorded storages: an integer tensor
//     could otherwise be overwritten by another op with values out of range for its indexing op
//     (a device-side assert poisons a CUDA context).
//   * tensors without a recorded dtype are float32, except arguments that hold indices by
//     value_roles.h (int64) and arguments named mask (bool); Tensor?[] index lists hold int64.
//
// Scalars come from the recorded text ("1", "0.125", "True", "[1024]"); an unrecorded one takes
// the schema default, else None when optional, else (required scalars of old traces only) a
// guess that Prepared::reason lists. Device arguments are always the replay device.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "replay/recipe.h"
#include "schema_binding.h"
#include "value_roles.h"

namespace replay::torch_detail {

// Normal(0, 0.1); uniform in [0, 1) (probabilities); uniform in [kPositiveLow, kPositiveHigh)
// (ValueRole::Positive); integers below a bound.
enum class Fill : std::uint8_t { Normal, Uniform01, Positive, Below };

// The boxed stack of a bound op, with the constraints its integer tensors were filled to meet.
struct BuiltStack {
    std::vector<c10::IValue> stack;
    std::vector<ValueConstraint> constraints;
    bool host_seed = false;  // a dropout seed on the host (dropout_seed_on_host)
};

// Whether `param` of `op` is a dropout seed or offset that a CUDA replay passes on the host:
// the flash and memory-efficient attention backwards dereference `philox_seed` and
// `philox_offset` on the host unless a CUDA graph is capturing (their forwards return them as
// CPU tensors), so a device tensor there is a host segfault. cuDNN's attention keeps them on
// the device.
bool dropout_seed_on_host(const std::string& op, const std::string& param);

// A recorded tensor of a built stack, with what the recording says about it.
struct RecordedInput {
    at::Tensor tensor;  // a view whose storage may grow later: data_ptr() is read when asked
    std::int64_t reuse_bytes = kReuseUnknown;
    bool parameter = false;  // a weight or bias by the op's signature
};

// Whether a CUDA replay passes the 0-dim tensor `spec` (argument `param`, `recorded` as the
// recipe has it) as a CPU scalar that PyTorch folds into the kernel (CUDAFunctorOnSelf_add,
// AUnaryFunctor) rather than a device tensor the kernel reads (CUDAFunctor_add): the recipe's
// Placement when the recorded kernel told, else a guess from the dtype and the argument's role.
// `beside_shaped_tensor`: another tensor argument of the op has dims.
bool host_scalar_operand(const AtenArgument* recorded, const std::string& param,
                         const TensorSpec& spec, bool beside_shaped_tensor);

// Not thread-safe: one per runner.
class InputSynthesis {
  public:
    // `seed` makes the data reproducible. With `dataflow`, floating-point tensors that carry the
    // same recorded storage id (>= 0) share one storage.
    InputSynthesis(c10::Device device, std::uint64_t seed, bool dataflow);

    const c10::Device& device() const { return device_; }
    bool on_cpu() const { return device_.is_cpu(); }
    at::TensorOptions options(at::ScalarType dtype) const;

    // A tensor with the recorded dims/strides/offset on a storage big enough for them, filled by
    // `how` (`bound`: the exclusive upper bound of Fill::Below), on a shared storage when `share`
    // and the spec names one.
    at::Tensor make_tensor(const TensorSpec& spec, at::ScalarType dtype, Fill how,
                           std::int64_t bound, bool share);

    // The boxed stack of every schema argument of `plan`, tensors made and filled; `promote`
    // computes float16/bfloat16 in float32. nullopt with `why` when a recorded tensor cannot be
    // made (a dtype this libtorch lacks, invalid dims) or an index's range cannot be known.
    std::optional<BuiltStack> build_stack(const Plan& plan, const AtenRecipe& recipe, bool promote,
                                          std::string& why);

    // Prepare fills inputs with kernels on the device's current stream; the backend's streams
    // may not synchronize with it (non-blocking streams), and an index tensor read before its
    // fill finished could hold anything. So prepare ends with that stream drained.
    void drain_fills() const;

  private:
    void fill(const at::Tensor& t, Fill how, std::int64_t bound);
    // Refills a constrained integer tensor (value_roles.h); empty on success, else why not.
    std::string fill_constrained(const at::Tensor& t, const ValueConstraint& c);
    // A typed tensor over the whole of a byte buffer.
    at::Tensor typed_view(const at::Tensor& bytes, at::ScalarType dtype) const;

    c10::Device device_;
    bool dataflow_ = true;
    std::uint64_t seed_ = 0;
    std::uint64_t group_draws_ = 0;  // offsets/counts filled so far: each draw is seeded apart
    at::Generator generator_;
    at::Generator host_generator_;  // CPU tensors of a CUDA synthesis (wrapped numbers)
    // Recorded storage id -> a byte buffer shared by every floating tensor on it (dataflow).
    struct SharedStorage {
        at::Tensor bytes;           // 1-D uint8 over the whole storage
        at::ScalarType fill_dtype;  // dtype its random values were written as
    };
    std::unordered_map<std::int64_t, SharedStorage> storages_;
};

// Reads the constrained tensors of `built` back to the host and checks their values: empty when
// all hold, else which argument breaks its constraint. Run before an op is prepared, so that a
// synthesis bug skips a kernel instead of raising a device-side assert.
std::string check_constraints(const Plan& plan, const BuiltStack& built);

// The recorded tensors of a stack built from `plan`.
std::vector<RecordedInput> inputs_of(const Plan& plan, const std::vector<c10::IValue>& stack);

}  // namespace replay::torch_detail
