// assert() must stay a device assert in release builds too: this kernel exists to fail it.
#undef NDEBUG
#include <cassert>
#include <cuda_runtime_api.h>

#include "device_assert.h"

namespace replay::testing {
namespace {

__global__ void failing_assert(int value) {
    assert(value == 0 && "replay test: a device-side assert on purpose");
}

__global__ void spin(long long cycles) {
    const long long start = clock64();
    while (clock64() - start < cycles) {
    }
}

}  // namespace

void launch_device_spin(double seconds) {
    spin<<<1, 1>>>(static_cast<long long>(seconds * 2e9));
}

void launch_device_assert() {
    failing_assert<<<1, 1>>>(1);
}

}  // namespace replay::testing
