// Tier 3 on the CUDA backend: aten ops run through libtorch (replay_torch's TorchOpRunner) on the
// backend's device and streams. Builds without libtorch report why instead.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "replay/backend.h"

namespace replay::cuda {

// In an end_capture() error: libtorch is left in a state where later work may fail (the words
// of TorchOpRunner::end_capture).
inline constexpr const char* kNotRestored = "could not be restored";
// libtorch's words (2.x) when an op draws random numbers in a capture it does not know of.
inline constexpr const char* kGeneratorNotCapturing = "generator not in capture mode";

class AtenRunner {
  public:
    virtual ~AtenRunner() = default;
    virtual Prepared prepare(const AtenRecipe& recipe) = 0;
    // Throws CudaError when the op fails.
    virtual void run(std::uint32_t handle, cudaStream_t stream) = 0;
    virtual std::string label(std::uint32_t handle) const = 0;
    // The op's tensor inputs as replayed (see TorchOpRunner::inputs).
    virtual std::vector<InputRegion> inputs(std::uint32_t handle) const = 0;
    virtual std::vector<std::string> notes() const = 0;
    // TorchOpRunner::relocated() / release().
    virtual Prepared relocated(std::uint32_t handle) = 0;
    virtual void release(std::uint32_t handle) = 0;

    // A graph capture on `stream` that libtorch takes part in (TorchOpRunner::begin_capture):
    // "" when it began, else why not, and nothing was opened.
    virtual std::string begin_capture(cudaStream_t stream) = 0;
    // Ends it: the graph, which the runner keeps. Throws CudaError when the capture failed (it
    // is ended all the same).
    virtual cudaGraph_t end_capture(cudaStream_t stream) = 0;

    // nullptr with `why` when this build has no libtorch (or one without CUDA), or libtorch cannot
    // start on `device`. `dataflow`: share storages by recorded storage id.
    static std::unique_ptr<AtenRunner> create(int device, std::uint64_t seed, bool dataflow,
                                              std::string& why);
    // The libtorch version this build was compiled against ("" without libtorch).
    static std::string libtorch_version();
};

}  // namespace replay::cuda
