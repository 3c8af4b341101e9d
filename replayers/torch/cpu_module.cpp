// The cpu backend module's entry point (backend.h, "backend modules").
#include "replay/backend.h"
#include "replay/cpu_backend.h"

REPLAY_BACKEND_MODULE("cpu", replay::create_cpu_backend)
