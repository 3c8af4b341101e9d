// The backends by name: each is loaded from its module, whose factory checks the machine.
#include "replay/backend.h"
#include "replay/backend_loader.h"

namespace replay {
namespace {

// `configured`: whether this build made the module; when it did not and none is found, that is
// the reason to give, not the folders searched.
std::unique_ptr<Backend> load_backend(const std::string& name, bool configured,
                                      const char* not_configured, const BackendOptions& options,
                                      std::string& why) {
    try {
        auto module = BackendModule::load(backend_module_file(name), backend_module_dirs());
        return create_backend(std::move(module), options, why);
    } catch (const BackendLoadError& e) {
        why =
            e.kind() == BackendLoadError::Kind::NotFound && !configured ? not_configured : e.what();
        return nullptr;
    }
}

#ifdef REPLAY_HAVE_CUDA
constexpr bool kCudaConfigured = true;
#else
constexpr bool kCudaConfigured = false;
#endif
#ifdef REPLAY_HAVE_TORCH
constexpr bool kTorchConfigured = true;
#else
constexpr bool kTorchConfigured = false;
#endif

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options, std::string& why) {
    return load_backend("cuda", kCudaConfigured,
                        "this build has no CUDA backend (configured without a CUDA toolkit)",
                        options, why);
}

std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& options, std::string& why) {
    return load_backend("cpu", kTorchConfigured,
                        "this build has no CPU backend (configured without libtorch)", options,
                        why);
}

}  // namespace replay
