// Replay recipes: everything a backend needs to re-issue one recorded GPU activity (or the op
// that launched it), independent of any GPU library, so that they can be written to JSON,
// compared and replayed on CUDA or on the CPU.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace replay {

enum class Tier : std::uint8_t {
    NotReplayable = 0,
    Copy = 1,
    Gemm = 2,
    AtenOp = 3,
    Collective = 4,
    Triton = 5  // a Triton kernel launched from its compiled binary (--inductor-cache)
};
const char* to_string(Tier tier);

enum class DType : std::uint8_t {
    Unknown,
    Float32,
    Float16,
    BFloat16,
    Float64,
    Int64,
    Int32,
    Int16,
    Int8,
    UInt8,
    Bool,
    Float8E4M3,
    Float8E5M2,
    ComplexFloat,
    ComplexDouble
};
const char* to_string(DType dtype);
DType dtype_from_kineto(std::string_view type);  // "c10::Half", "float", "long int", ...
DType dtype_from_name(std::string_view name);    // to_string() inverse
std::size_t element_size(DType dtype);

// A recurrent ATen op (lstm, gru, rnn_tanh, rnn_relu, _cudnn_rnn, their backward ops): its tensor
// lists hold weights and states in its input's dtype (cuDNN requires it), and its backward takes
// several gradients.
bool is_recurrent_op(std::string_view name);

// Reuse distance of a recorded input: the bytes the recorded step touched (read or written, over
// all GPU ops) between the last touch of the input's storage and this use; the replay keeps an
// input in L2 before a timed run when it would still have been there (see reuse.h).
constexpr std::int64_t kReuseUnknown = -1;     // no storage ids (no Execution Trace)
constexpr std::int64_t kReuseFirstTouch = -2;  // not touched earlier in the trace: from memory

// Element counts and byte sums from recorded dims saturate here: a hostile or corrupt trace's
// dims (2^62) must not overflow 64 bits, and no real tensor comes near (2^50 elements: 8 PiB of
// bytes; sums of such stay representable).
constexpr std::int64_t kMostElements = std::int64_t{1} << 50;
std::int64_t saturating_product(std::span<const std::int64_t> dims);  // dims below 0 count as 0
std::int64_t saturating_add(std::int64_t a, std::int64_t b);
// A contiguous tensor's strides, as PyTorch computes them (a dim of 0 counts as 1), saturating.
std::vector<std::int64_t> contiguous_strides(std::span<const std::int64_t> dims);

// Elements a view spans from its first one: 1 + sum of (dim - 1) x |stride|, with contiguous
// strides when `strides` does not give one per dim; 0 when a dim is 0 or less. At most
// kMostElements.
std::int64_t view_extent(std::span<const std::int64_t> dims, std::span<const std::int64_t> strides);

struct TensorSpec {
    std::vector<std::int64_t> dims;
    std::vector<std::int64_t> strides;  // empty: contiguous
    DType dtype = DType::Unknown;
    std::int64_t storage_id = -1;  // recorded storage (Execution Trace) for dataflow replay
    std::int64_t storage_offset = 0;
    std::int64_t reuse_bytes = kReuseUnknown;
    std::int64_t numel() const;
    // Elements the storage must hold for these dims/strides (max offset + 1).
    std::int64_t storage_elements() const;
    std::vector<std::int64_t> contiguous_strides() const;
    bool operator==(const TensorSpec&) const = default;
};

enum class CopyDirection : std::uint8_t {
    HostToDevice,
    DeviceToHost,
    DeviceToDevice,
    HostToHost,
    PeerToPeer,
    Device
};
const char* to_string(CopyDirection direction);

struct CopyRecipe {
    bool is_memset = false;
    CopyDirection direction = CopyDirection::DeviceToDevice;
    bool host_pinned = false;  // "Pinned" in the activity name; "Pageable" otherwise
    std::int64_t bytes = 0;
    int value = 0;  // memset byte value (not recorded by Kineto: 0)
    bool operator==(const CopyRecipe&) const = default;
};

struct GemmRecipe {
    std::string op;  // aten::addmm, aten::mm, aten::bmm, aten::baddbmm
    // Row-major view, as PyTorch sees it: C[b] (m x n) = alpha * op(A[b]) (m x k) * op(B[b]) (k x
    // n)
    // + beta * C. `trans_a` means A is stored column-major (its strides are (1, lda)).
    std::int64_t m = 0, n = 0, k = 0, batch = 1;
    bool trans_a = false, trans_b = false;
    std::int64_t lda = 0, ldb = 0, ldc = 0;
    std::int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // batch strides (elements)
    DType a_type = DType::Unknown, b_type = DType::Unknown, c_type = DType::Unknown;
    DType compute_type = DType::Float32;
    double alpha = 1.0, beta = 0.0;
    bool bias = false;  // addmm with a 1-D bias broadcast over rows: cuBLASLt bias epilogue
    DType bias_type = DType::Unknown;
    // The recorded kernel names its bias epilogue (nvjet's `_bias_`): PyTorch took the cuBLASLt
    // bias path, also where its size rule (m, n, k > 1) says it would not (PyTorch 2.11 does for
    // a decode's one-row GEMMs).
    bool bias_epilogue_recorded = false;
    // fp32 operands, and the recorded kernel ran on TF32 tensor cores (`tf32` or `s1688gemm` in
    // its name): the recording allowed TF32 (torch.set_float32_matmul_precision("high")), which the
    // trace does not record otherwise. The replay's cuBLAS gets TF32 math for it.
    bool tf32_recorded = false;
    bool c_broadcast = false;  // beta != 0 with a C that is broadcast (baddbmm self [B,1,N])
    // Recorded storages of A, B and C/bias (Execution Trace), -1 when unknown: with them each
    // recorded weight gets its own buffer, so a replay reads from HBM what the recording did.
    std::int64_t a_storage = -1, b_storage = -1, c_storage = -1;
    std::int64_t a_reuse_bytes = kReuseUnknown, b_reuse_bytes = kReuseUnknown,
                 c_reuse_bytes = kReuseUnknown;
    double flops() const { return 2.0 * static_cast<double>(m) * n * k * batch; }
    bool operator==(const GemmRecipe&) const = default;
};

enum class ArgKind : std::uint8_t { Tensor, TensorList, Scalar, ScalarList, None, String, Other };
const char* to_string(ArgKind kind);

// Where a 0-dim tensor operand lived, when the recorded kernel tells: Kineto records a Python
// number that PyTorch wrapped (`x + 1`) like a 0-dim device tensor, but the kernel differs: the
// CPU scalar is folded into the functor (CUDAFunctorOnSelf_add, BUnaryFunctor: one input),
// a device tensor is one more operand (CUDAFunctor_add, BinaryFunctor: two inputs).
enum class Placement : std::uint8_t { Unknown, Host, Device };
const char* to_string(Placement placement);  // "", "host", "device"

struct AtenArgument {
    ArgKind kind = ArgKind::Other;
    std::string type;                 // recorded type text ("c10::Half", "Scalar", "ScalarList")
    std::vector<TensorSpec> tensors;  // one for Tensor, several for TensorList
    std::string value;  // concrete scalar / list text ("1", "0.125", "[1024]", "True")
    Placement placement = Placement::Unknown;  // 0-dim tensors only
    // Tensor?[] only: None elements before `tensors` (x[:, i] indexes dim 1: [None, i]).
    std::uint32_t leading_nones = 0;
    bool operator==(const AtenArgument&) const = default;
};

struct AtenRecipe {
    std::string op;  // "aten::layer_norm"
    std::string
        overload;  // "" (default) or e.g. "Tensor", "Scalar", "out"; from the schema when known
    std::string schema;  // full schema from the Execution Trace, when given
    std::vector<AtenArgument> args;
    bool operator==(const AtenRecipe&) const = default;
};

struct CollectiveRecipe {
    std::string
        collective;  // allreduce, allgather, reduce_scatter, all_to_all, send_recv, broadcast
    std::int64_t in_nelems = -1, out_nelems = -1;
    DType dtype = DType::Unknown;
    int group_size = -1;
    bool operator==(const CollectiveRecipe&) const = default;
};

// An argument of a Triton kernel, one per PTX parameter (Triton's trailing scratch pointers too).
struct TritonArgument {
    bool pointer = false;
    int bits = 64;             // integers: 32 or 64
    std::int64_t value = 0;    // integers
    std::int64_t bytes = 0;    // pointers: the buffer's size; 0: a null pointer
    std::string buffer;        // pointers: the wrapper's buffer (arguments naming one share it)
    DType dtype = DType::Unknown;  // pointers: the pointee (random floats; integers: index_bound)
    // Pointers: the kernel reads it (Inductor's `in_ptr`/`in_out_ptr` parameters), and the buffer
    // is one of the compiled graph's inputs (`arg*`, `primals*`: weights and the step's inputs,
    // from before the step) rather than one an earlier kernel of the graph wrote (`buf*`). With
    // them the replay warms into L2 what the recording likely still had there.
    bool read = false;
    bool graph_input = false;
    // Pointers: its values reach a square root or a logarithm in the kernel (a variance): they
    // are filled positive, as the recording's were (see positive_arguments in inductor_cache.h).
    bool positive = false;
    // Pointers to integers: the kernel checks its values as indices below this bound (see
    // index_bounds in inductor_cache.h); they are drawn uniform in [0, index_bound). 0: zeros.
    std::int64_t index_bound = 0;
    bool operator==(const TritonArgument&) const = default;
};

struct TritonRecipe {
    std::string kernel;   // the entry's name
    std::string variant;  // the cache folder (hash) of the compiled variant
    std::string source;   // the --inductor-cache folder or tar
    std::string cubin;    // the compiled image (not written to JSON: it stays in the cache)
    int num_warps = 0;
    int shared_bytes = 0;
    std::int32_t grid[3] = {1, 1, 1};
    std::vector<TritonArgument> args;
    bool operator==(const TritonRecipe&) const = default;
};

using RecipeDetail = std::variant<std::monostate, CopyRecipe, GemmRecipe, AtenRecipe,
                                  CollectiveRecipe, TritonRecipe>;

struct Recipe {
    Tier tier = Tier::NotReplayable;
    std::string rule;    // id of the classification rule that decided
    std::string reason;  // why not replayable, or a note ("replayed with its GEMM")
    // True for a kernel that its op's replay re-issues as a side effect (cuBLASLt split-K reduce,
    // the second kernel of a multi-kernel aten op): it is timed but not issued on its own.
    bool issued_with_op = false;
    RecipeDetail detail;
    bool replayable() const { return tier != Tier::NotReplayable; }
    // Stable text identifying the work (tier + parameters) for signatures and matching.
    std::string key() const;
    // key() plus the recorded storage ids (two instances of one kernel on different tensors,
    // layer 3's and layer 7's weights, differ here, so dataflow replay keeps them apart), the
    // dtypes of tensor-list elements and the placements of 0-dim operands.
    std::string instance_key() const;
    // Bytes moved for copies; 0 otherwise.
    double bytes() const;
    double flops() const;
    // Field by field (doubles by value: a NaN alpha makes two recipes differ).
    bool operator==(const Recipe&) const = default;
};

// Visits the recorded tensors of a recipe that carry a storage id and a reuse distance, in a
// fixed order (GEMM: A, B, C/bias; aten op: every tensor of every argument), as
// f(storage, reuse_bytes) by reference (const for a const recipe). NodeRecipes keeps a node's
// storage ids and distances in this order beside the shared decision.
template <typename RecipeRef, typename F>
void visit_tensor_slots(RecipeRef& recipe, F&& f) {
    if (auto* g = std::get_if<GemmRecipe>(&recipe.detail)) {
        f(g->a_storage, g->a_reuse_bytes);
        f(g->b_storage, g->b_reuse_bytes);
        f(g->c_storage, g->c_reuse_bytes);
    } else if (auto* a = std::get_if<AtenRecipe>(&recipe.detail)) {
        for (auto& arg : a->args)
            for (auto& t : arg.tensors) f(t.storage_id, t.reuse_bytes);
    }
}

}  // namespace replay
