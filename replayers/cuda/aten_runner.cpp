#include "aten_runner.h"

#include "cuda_check.h"

#ifdef REPLAY_CUDA_WITH_TORCH
#include "replay/torch_ops.h"
#endif

namespace replay::cuda {

#ifdef REPLAY_CUDA_WITH_TORCH

namespace {

class TorchAtenRunner final : public AtenRunner {
  public:
    TorchAtenRunner(int device, std::uint64_t seed, bool dataflow)
        : runner_("cuda:" + std::to_string(device), seed, dataflow) {}

    Prepared prepare(const AtenRecipe& recipe) override { return runner_.prepare(recipe); }

    void run(std::uint32_t handle, cudaStream_t stream) override {
        if (std::string error = runner_.run(handle, static_cast<void*>(stream)); !error.empty())
            throw CudaError(runner_.label(handle) + " failed in libtorch: " + error);
    }

    std::string label(std::uint32_t handle) const override { return runner_.label(handle); }
    std::vector<InputRegion> inputs(std::uint32_t handle) const override {
        return runner_.inputs(handle);
    }
    std::vector<std::string> notes() const override { return runner_.notes(); }
    Prepared relocated(std::uint32_t handle) override { return runner_.relocated(handle); }
    void release(std::uint32_t handle) override { runner_.release(handle); }
    std::string begin_capture(cudaStream_t stream) override {
        return runner_.begin_capture(static_cast<void*>(stream));
    }
    cudaGraph_t end_capture(cudaStream_t stream) override {
        std::string why;
        void* graph = runner_.end_capture(static_cast<void*>(stream), why);
        if (graph == nullptr) throw CudaError("the graph capture through libtorch failed: " + why);
        return static_cast<cudaGraph_t>(graph);
    }

  private:
    TorchOpRunner runner_;
};

}  // namespace

std::unique_ptr<AtenRunner> AtenRunner::create(int device, std::uint64_t seed, bool dataflow,
                                               std::string& why) {
    if (!TorchOpRunner::has_cuda()) {
        why = "this build's libtorch has no CUDA";
        return nullptr;
    }
    try {
        return std::make_unique<TorchAtenRunner>(device, seed, dataflow);
    } catch (const std::exception& e) {
        why = std::string("libtorch could not start on cuda:") + std::to_string(device) + ": " +
              e.what();
        return nullptr;
    }
}

std::string AtenRunner::libtorch_version() {
    return TorchOpRunner::libtorch_version();
}

#else

std::unique_ptr<AtenRunner> AtenRunner::create(int, std::uint64_t, bool, std::string& why) {
    why = "this build has no libtorch";
    return nullptr;
}

std::string AtenRunner::libtorch_version() {
    return {};
}

#endif

}  // namespace replay::cuda
