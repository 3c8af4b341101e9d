// Runs recipes through libtorch: aten ops (tier 3) through the dispatcher's boxed calling
// convention, GEMMs (tier 2) through at::mm & co. with the recorded operand layouts, and copies
// (tier 1). Used by the CPU backend for everything and by a CUDA backend for tier 3.
//
// The header deliberately includes no torch header (pimpl): libtorch's headers are heavy and
// must be compiled with TORCH_CXX_FLAGS, which only replayers/torch/ has to know about.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "replay/backend.h"
#include "replay/recipe.h"

namespace replay {

struct TorchDevice {
    enum class Kind : std::uint8_t { Cpu, Cuda };
    Kind kind = Kind::Cpu;
    int index = 0;  // CUDA device ordinal
};

// Not thread-safe: one runner per driver thread.
class TorchOpRunner {
  public:
    // `seed` makes the random inputs reproducible. With `dataflow`, floating-point tensors that
    // carry the same recorded storage id (>= 0) share one storage, so a producer's output is the
    // next op's input as in the recording.
    TorchOpRunner(TorchDevice device, std::uint64_t seed, bool dataflow);
    // `device` as PyTorch writes it: "cpu", "cuda", "cuda:1". Throws std::invalid_argument on
    // anything else.
    TorchOpRunner(const std::string& device, std::uint64_t seed, bool dataflow = true);
    ~TorchOpRunner();
    TorchOpRunner(TorchOpRunner&&) noexcept;
    TorchOpRunner& operator=(TorchOpRunner&&) noexcept;
    TorchOpRunner(const TorchOpRunner&) = delete;
    TorchOpRunner& operator=(const TorchOpRunner&) = delete;

    // Resolves the op's schema (overload from the recipe, else the overload whose argument kinds
    // match the recorded ones), allocates and fills its inputs and builds the boxed stack. On the
    // CPU it also makes one trial run, retrying float16/bfloat16 in float32 when libtorch has no
    // CPU kernel for them. Never throws.
    Prepared prepare(const AtenRecipe& recipe);
    // A GEMM with the recipe's shapes, transposes and leading dimensions through
    // at::mm / at::addmm / at::bmm / at::baddbmm.
    Prepared prepare_gemm(const GemmRecipe& recipe);
    // A copy or memset of the recorded size: memcpy/memset between host buffers on the CPU,
    // Tensor::copy_ / fill_ between host (pinned when recorded so) and device memory on CUDA.
    Prepared prepare_copy(const CopyRecipe& recipe);

    // Runs prepared work once (on the caller's current stream). Returns an empty string on
    // success, else why it failed (a c10::Error's message). Never throws.
    std::string run(std::uint32_t handle);
    // Same, on the given cudaStream_t (nullptr: the current stream). Needs a libtorch with CUDA
    // (see has_cuda()); otherwise a non-null stream is reported as a failure.
    std::string run(std::uint32_t handle, void* cuda_stream);

    // A copy of prepared aten-op work on freshly allocated memory holding the same values (views
    // that shared a storage still share one): a new handle, or Skipped for GEMMs and copies.
    // The original stays as it was. release() drops a handle's tensors (the handle must not run
    // again); it is for such copies, whose memory would otherwise stay held until the end.
    Prepared relocated(std::uint32_t handle);
    void release(std::uint32_t handle);

    // The tensor inputs of prepared aten-op work (its device memory, with the recorded reuse
    // distance and whether the op's signature names it a weight or bias); empty for other work.
    std::vector<InputRegion> inputs(std::uint32_t handle) const;
    // What to call the work in activities: "aten::layer_norm", "gemm 5 x 3072 x 1024",
    // "memcpy 4096 bytes".
    const std::string& label(std::uint32_t handle) const;
    // Notes worth reporting once per run (e.g. "float16 computed as float32 on CPU").
    std::vector<std::string> notes() const;

    // Graph capture that libtorch takes part in (graph_capture.cpp). A capture libtorch does not
    // know of leaves its CUDA random-number generator outside capture mode, so that dropout and
    // every other op that draws random numbers refuse to run in it; libtorch's CUDAGraph lets
    // them, and keeps what the captured ops allocate for as long as the graph may run.
    // begin_capture() opens one on `cuda_stream`: "" when it did, else why not (nothing open).
    // end_capture() closes it: the cudaGraph_t, which the runner owns (with its memory) until
    // the runner ends, or nullptr with `why` (the capture was ended and nothing is kept).
    std::string begin_capture(void* cuda_stream);
    void* end_capture(void* cuda_stream, std::string& why);

    // Whether this build can run on CUDA streams (libtorch with CUDA found at configure time).
    static bool has_cuda();
    // The libtorch these sources were compiled against ("1.13.0").
    static const char* libtorch_version();

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace replay
