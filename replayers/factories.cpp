// Picks the backends compiled into this build; each one's own factory checks the machine.
#include "replay/backend.h"

namespace replay {

#ifdef REPLAY_HAVE_CUDA
std::unique_ptr<Backend> create_cuda_backend(const BackendOptions& options, std::string& why);
#endif
#ifdef REPLAY_HAVE_TORCH
std::unique_ptr<Backend> create_cpu_backend(const BackendOptions& options, std::string& why);
#endif

std::unique_ptr<Backend> make_cuda_backend([[maybe_unused]] const BackendOptions& options,
                                           std::string& why) {
#ifdef REPLAY_HAVE_CUDA
    return create_cuda_backend(options, why);
#else
    why = "this build has no CUDA backend (configured without a CUDA toolkit)";
    return nullptr;
#endif
}

std::unique_ptr<Backend> make_cpu_backend([[maybe_unused]] const BackendOptions& options,
                                          std::string& why) {
#ifdef REPLAY_HAVE_TORCH
    return create_cpu_backend(options, why);
#else
    why = "this build has no CPU backend (configured without libtorch)";
    return nullptr;
#endif
}

}  // namespace replay
