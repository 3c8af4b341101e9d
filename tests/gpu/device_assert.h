// Kernels that fail a device-side assert or spin, for the worker isolation test: the fault that a
// random index tensor causes in aten::index, and a hung kernel, without ATen.
#pragma once

namespace replay::testing {

// Launches one thread that calls assert(false) on the legacy default stream; the launch itself
// succeeds, the context is poisoned (cudaErrorAssert, 710) from the next synchronisation on.
void launch_device_assert();
// Launches one thread that spins for about `seconds` (at 2 GHz), as a hung kernel would.
void launch_device_spin(double seconds);

}  // namespace replay::testing
