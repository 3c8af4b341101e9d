// Small device helpers of the CUDA backend (compiled by nvcc, C++17, no ATen): random fills for
// GEMM operands and a clock64 spin that stands in for recorded idle time on a stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace replay::cuda {

enum class FillType : int { Float32 = 0, Float16 = 1, BFloat16 = 2, Float64 = 3, Bytes = 4 };

// Fills `count` elements at `data` with uniform values in [-1, 1) (random bytes for Bytes),
// a pure function of (seed, index). Returns the launch error.
cudaError_t launch_fill_uniform(void* data, std::size_t count, FillType type, std::uint64_t seed,
                                cudaStream_t stream);

// Reads [data, data + bytes) once through L2 (one load per 32-byte sector, the unit L2 fills),
// so a following kernel finds it there. `sink` (4 bytes of device memory) receives a value only
// to keep the loads from being optimised away.
cudaError_t launch_l2_touch(const void* data, std::size_t bytes, unsigned* sink,
                            cudaStream_t stream);

// One thread that spins until clock64() has advanced by `cycles` on its multiprocessor.
cudaError_t launch_spin(long long cycles, cudaStream_t stream);

}  // namespace replay::cuda
