// Small device helpers of the CUDA backend (compiled by nvcc, C++17, no ATen): random fills for
// GEMM operands and reads that bring buffers into L2 (warm-up reads, L2 eviction).
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

// Byte ranges that one launch reads through L2: a step's warm-up reads, decided when its work is
// prepared and passed by value, so that warming a step is one launch and no memory of its own.
struct TouchList {
    static constexpr int kCapacity = 8;
    const void* data[kCapacity] = {};
    std::size_t bytes[kCapacity] = {};
    int count = 0;
};
// Reads every range of `list` once through L2, like launch_l2_touch.
cudaError_t launch_l2_touch_list(const TouchList& list, unsigned* sink, cudaStream_t stream);

// Drops every whole 128-byte line of the ranges of `list` from L2 without writing it back
// (PTX discard.global.L2, sm_80 and later): what L2 held of the ranges is gone and the next read
// comes from memory, while everything else in L2 (other data, every kernel's code) stays. The
// lines' contents become memory's copy: only for data whose latest contents were written back
// (an L2 flush since they were made) or whose contents do not matter (outputs).
cudaError_t launch_l2_drop_list(const TouchList& list, cudaStream_t stream);

// Runs 512 KiB of straight-line code on every SM, so that no SM's instruction caches still hold
// code of the kernels before; L2 keeps that code. `sink`: 4 bytes it may write.
cudaError_t launch_instruction_cache_evict(int sm_count, float* sink, cudaStream_t stream);

}  // namespace replay::cuda
