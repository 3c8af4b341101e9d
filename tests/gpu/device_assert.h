// A kernel that fails a device-side assert, for the worker isolation test: the fault that a
// random index tensor causes in aten::index, without ATen.
#pragma once

namespace replay::testing {

// Launches one thread that calls assert(false) on the legacy default stream; the launch itself
// succeeds, the context is poisoned (cudaErrorAssert, 710) from the next synchronisation on.
void launch_device_assert();

}  // namespace replay::testing
