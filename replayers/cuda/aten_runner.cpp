#include "aten_runner.h"

#ifdef REPLAY_CUDA_WITH_TORCH
#include "replay/torch_ops.h"
#if __has_include(<torch/version.h>)
#include <torch/version.h>
#endif
#endif

namespace replay::cuda {

#ifdef REPLAY_CUDA_WITH_TORCH

namespace {

class TorchAtenRunner final : public AtenRunner {
public:
    // Assumed TorchOpRunner constructor: a device string and the seed of its random inputs.
    TorchAtenRunner(int device, std::uint64_t seed) : runner_("cuda:" + std::to_string(device), seed) {}
    Prepared prepare(const AtenRecipe& recipe) override { return runner_.prepare(recipe); }
    void run(std::uint32_t handle, cudaStream_t stream) override { runner_.run(handle, static_cast<void*>(stream)); }

private:
    TorchOpRunner runner_;
};

}  // namespace

std::unique_ptr<AtenRunner> AtenRunner::create(int device, std::uint64_t seed, std::string& why) {
    try {
        return std::make_unique<TorchAtenRunner>(device, seed);
    } catch (const std::exception& e) {
        why = std::string("libtorch could not start on cuda:") + std::to_string(device) + ": " + e.what();
        return nullptr;
    }
}

std::string AtenRunner::libtorch_version() {
#ifdef TORCH_VERSION
    return TORCH_VERSION;
#else
    return "unknown";
#endif
}

#else

std::unique_ptr<AtenRunner> AtenRunner::create(int, std::uint64_t, std::string& why) {
    why = "this build has no libtorch";
    return nullptr;
}

std::string AtenRunner::libtorch_version() { return {}; }

#endif

}  // namespace replay::cuda
