// torch.compile's Inductor cache folder (TORCHINDUCTOR_CACHE_DIR, as a folder or a .tar[.gz]):
// the Triton kernels a compiled step launches, each compiled variant's cubin and launch metadata
// (triton/<hash>/<kernel>.{cubin,json,ptx}), and the generated wrapper code whose call sites
// (`<kernel>.run(buf1, 67108864, stream=...)`) and allocations (`empty_strided_cuda(...)`) say
// which buffers and sizes each launch takes. Enough to launch the recorded kernels through the
// driver API, without Python.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "replay/classifier.h"
#include "replay/kernel_graph.h"
#include "replay/recipe.h"

namespace replay {

// A parameter of a PTX kernel entry.
struct PtxParam {
    bool pointer = false;
    int bits = 64;  // .u32/.s32: 32, .u64/.s64/pointers: 64, .f32: 32, ...
    bool floating = false;
};

struct PtxEntry {
    std::string name;
    std::vector<PtxParam> params;
    int reqntid = 0;  // threads per block the kernel requires (0: not stated)
};

// The `.entry` declarations of a PTX text, in order. Throws InputError (named by `file`) for an
// entry whose parameter list does not close.
std::vector<PtxEntry> parse_ptx_entries(std::string_view ptx, const std::string& file);

// A Triton IR's (.ttir) elements per program along x and y: TritonVariant::x_block, y_block.
std::pair<std::int64_t, std::int64_t> triton_program_blocks(const std::string& ttir);

// One compiled variant of a Triton kernel (one folder under triton/).
struct TritonVariant {
    std::string name;
    std::string hash;  // the folder's name
    std::string cubin;
    std::vector<PtxParam> params;
    int num_warps = 0;
    int shared_bytes = 0;
    std::int64_t global_scratch_bytes = 0;  // per program; 0: a null pointer is passed
    std::int64_t profile_scratch_bytes = 0;
    int arch = 0;
    bool preferred = false;  // the autotuner's pick (a .best_config names its hash)
    // Elements per program along x and y (XBLOCK, YBLOCK): what its Triton IR (.ttir)
    // multiplies each axis's program id by (1 when it does not: a reduction's XBLOCK 1); 0: not
    // known (no IR, no such axis, a template's tiles). Autotuned variants of one warp count
    // differ in them.
    std::int64_t x_block = 0;
    std::int64_t y_block = 0;
    // The kernel's own Python file (its name, "c4xee....py"), as its Triton IR's first location
    // names it; empty when not known. Two compiled graphs (a training step's forward and
    // backward) may each define a kernel of one name with other code.
    std::string source_file;
};

// A buffer of the wrapper: its allocation's bytes (after following reinterpret_tensor and
// `bufN = bufM  # reuse` aliases) and its element type. An extern kernel's output (a
// convolution's) has only its size asserted: its elements, and bytes once a kernel's signature
// gives the element type.
struct WrapperBuffer {
    std::int64_t bytes = -1;  // -1: not known
    DType dtype = DType::Unknown;
    std::int64_t elements = -1;  // the extent its sizes and strides span; -1: not known
    // As allocated (empty_strided_cuda) or asserted (a graph input); empty: not known.
    std::vector<std::int64_t> dims, strides;
};

// An argument of a call site: a buffer (by name) or an integer literal.
struct CallArgument {
    std::string buffer;      // non-empty: a tensor argument
    std::int64_t value = 0;  // otherwise an integer
    WrapperBuffer size;      // the buffer as its own wrapper file allocates it
};

struct TritonCallSite {
    std::string kernel;
    std::vector<CallArgument> args;
    // The wrapper file it is in (in the order read): two compiled graphs (a prefill's and a
    // decode's) may each define a kernel of the same name with other arguments.
    std::size_t file = 0;
    std::size_t step = 0;  // its place in InductorCache::steps
};

// A library call of the wrapper code: `extern_kernels.addmm(arg9_1, reinterpret_tensor(buf4,
// (1024, 768), (768, 1), 0), ..., alpha=1, beta=1, out=buf5)` (cuBLAS, cuDNN) or a fallback
// `torch.ops.aten.<op>.<overload>(...)`. Its kernels have no op of their own in a trace where
// the compiled graph ran as a CUDA graph (torch.compile's reduce-overhead).
struct ExternCall {
    // The aten op it runs, its arguments in the schema's order (`out=` left out: the replay
    // calls the functional op); valid when `reason` is empty.
    AtenRecipe op;
    std::string reason;  // why it cannot be replayed (an argument it could not read)
    std::string text;    // the call as written, cut short, for reasons
    std::size_t file = 0;
};

// A launch of the wrapper code, in its order: a Triton call site or a library call.
struct WrapperStep {
    bool triton = false;
    std::size_t index = 0;  // into InductorCache::calls or ::externs
    std::size_t file = 0;
};

// A kernel as one file defines it.
struct TritonDefinition {
    // Its Python signature's runtime arguments (constexprs left out), with the pointee type of
    // pointers ("*fp16") or the integer type ("i32").
    std::vector<std::pair<std::string, std::string>> params;
    // Its pointer arguments whose values reach a square root or a logarithm (positive_arguments):
    // a variance, a scale.
    std::set<std::string> positive;
    // Its pointer arguments that hold indices and the bound each is checked against
    // (index_bounds).
    std::map<std::string, std::int64_t> index_bounds;
    // Its own Python file's name, from the wrapper's `# kernel path:` comment before it
    // (TritonVariant::source_file); empty when the wrapper has none.
    std::string kernel_file;
};

struct InductorCache {
    std::string source;  // the folder or tar it was read from
    std::vector<TritonVariant> variants;
    std::vector<TritonCallSite> calls;  // in the wrapper's order
    std::vector<ExternCall> externs;    // in the wrapper's order
    std::vector<WrapperStep> steps;     // both, in the wrapper's order, file after file
    std::map<std::string, WrapperBuffer> buffers;  // every file's; the last file's on a clash
    // Per file read (TritonCallSite::file), the kernels it defines.
    std::vector<std::map<std::string, TritonDefinition>> definitions;
    // `kernel` as the first file that defines it does; nullptr when none does.
    const TritonDefinition* definition(const std::string& kernel) const;
    // The kernel a call site launches, as its own file defines it, else definition(kernel).
    const TritonDefinition* definition_of(const TritonCallSite& site) const;
    // Variants of `kernel` that run with `block_threads` threads per block, preferred first.
    std::vector<const TritonVariant*> variants_of(std::string_view kernel, int block_threads) const;
};

// Reads a cache folder or a .tar / .tar.gz of one. Throws InputError.
InductorCache read_inductor_cache(const std::string& path);

// The wrapper code's call sites, buffers and kernel signatures (exposed for tests).
void parse_wrapper_code(std::string_view python, InductorCache& cache);

// Which of `parameters` (a kernel's pointer arguments) hold values that reach a square root, a
// reciprocal square root, a logarithm or a power in `body` (the kernel's Python source after its
// `def` line), through the kernel's assignments (`tmp8 = tmp6 + tmp7`, `tmp9 = tl.sqrt_rn(tmp8)`).
// The recording's values there were in the function's domain (a batch norm's variance); random
// signed data is not, and the correctly rounded square root of a negative number or a NaN takes a
// slow path: a compiled ResNet-50's batch-norm kernels ran 17-55% slower on it.
std::set<std::string> positive_arguments(std::string_view body,
                                         const std::vector<std::string>& parameters);

// Which of `parameters` hold indices that `body` checks against a bound, with the bound: the
// parameters loaded, wrapped when negative (`tl.where(tmp0 < 0, tmp0 + 50000, tmp0)`) and checked
// by Inductor's `tl.device_assert(... "index out of bounds: 0 <= tmp3 < 50000")`. Values drawn in
// [0, bound) pass the check and spread over the indexed rows as the recording's did; zeros (what
// integers get without a bound) send a scatter's every atomic to one row (a compiled GCN's
// scatter_add ran 22x slower) and let a gather read one row from L1. A parameter that also
// reaches a check through other arithmetic (`tmp0 + 1`) or a symbolic bound is left out.
std::map<std::string, std::int64_t> index_bounds(std::string_view body,
                                                 const std::vector<std::string>& parameters);

struct InductorStats {
    std::size_t triton_kernels = 0;  // Triton launches in the trace
    std::size_t matched = 0;
    std::vector<std::string> unmatched_reasons;  // one per distinct reason
    // Per graph node, the call site (index into InductorCache::calls) its Triton launch took.
    std::unordered_map<std::uint32_t, std::size_t> site_of_node;
};

// Gives the trace's Triton kernels (rule triton) recipes of tier triton from the cache: variant
// by name and block, arguments from the k-th call site of the kernel for its k-th launch.
InductorStats apply_inductor_cache(const KernelGraph& graph, NodeRecipes& recipes,
                                   const InductorCache& cache);

// The library calls of the wrapper code whose kernels no op encloses (a compiled graph replayed
// as a CUDA graph): the kernels between two Triton launches of a stream are those of the library
// calls between the two call sites those launches took (apply_inductor_cache's site_of_node).
// One call there takes them all (the first issues them, the others are issued with it); as
// many calls as kernels pair one to one; several GEMM calls take their kernels in order, a
// split-K reduction issued with the GEMM before it; otherwise the reason says so. GEMMs become tier-2
// recipes as an eager aten::mm's would, other ops tier-3 ones; rule `inductor-extern`.
struct ExternStats {
    std::size_t candidates = 0;  // kernels without a recipe between or beside Triton launches
    std::size_t matched = 0;
    std::vector<std::string> unmatched_reasons;  // one per distinct reason
};
ExternStats apply_inductor_externs(const KernelGraph& graph, NodeRecipes& recipes,
                                   const InductorCache& cache, const InductorStats& triton);

}  // namespace replay
