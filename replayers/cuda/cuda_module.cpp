// The CUDA backend module's entry point (backend.h, "backend modules").
#include "replay/backend.h"
#include "replay/cuda_backend.h"

REPLAY_BACKEND_MODULE("cuda", replay::create_cuda_backend)
