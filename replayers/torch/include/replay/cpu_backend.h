// The CPU backend: recipes replayed with libtorch's CPU kernels, timed with the host clock, so that
// the whole pipeline runs without a GPU. Built into the cpu backend module (cpu_module.cpp).
#pragma once

#include <memory>
#include <string>

#include "replay/backend.h"

namespace replay {

// nullptr with `why` when libtorch cannot start.
std::unique_ptr<Backend> create_cpu_backend(const BackendOptions& options, std::string& why);

}  // namespace replay
