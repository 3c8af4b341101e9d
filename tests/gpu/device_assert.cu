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

}  // namespace

void launch_device_assert() {
    failing_assert<<<1, 1>>>(1);
}

}  // namespace replay::testing
