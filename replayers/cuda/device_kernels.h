// Small device helpers of the CUDA backend (compiled by nvcc, C++17, no ATen): random fills for
// GEMM operands and indices, reads that bring buffers into L2 (warm-up reads, L2 eviction), and
// code that empties the SMs' instruction caches.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace replay::cuda {

enum class FillType : int { Float32 = 0, Float16 = 1, BFloat16 = 2, Float64 = 3, Bytes = 4 };

// Where the values of a fill lie: data (weights, activations) of either sign, or positive values
// for what a kernel takes the square root or the logarithm of (a variance).
enum class FillRange : int { Signed = 0, Positive = 1 };

// Fills `count` elements at `data` with uniform values in [-1, 1) (Signed) or [0.5, 1.5)
// (Positive); random bytes for Bytes. A pure function of (seed, index). Returns the launch error.
cudaError_t launch_fill_uniform(void* data, std::size_t count, FillType type, std::uint64_t seed,
                                cudaStream_t stream, FillRange range = FillRange::Signed);

// Fills `count` integers of `element_bytes` (4 or 8) at `data` with uniform values in [0, bound):
// indices that a kernel checks against `bound`. A pure function of (seed, index).
cudaError_t launch_fill_indices(void* data, std::size_t count, int element_bytes,
                                std::int64_t bound, std::uint64_t seed, cudaStream_t stream);

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

// Runs 512 KiB of straight-line code on every SM, so that no SM's instruction caches still hold
// code of the kernels before it. `sink`: 4 bytes it may write.
cudaError_t launch_instruction_cache_evict(int sm_count, float* sink, cudaStream_t stream);

// --pace recorded on the device's clock (its global timer, in ns), per stream: `let_go` holds
// one time per stream. launch_clock_start writes the time `stream` reached it to the first
// `streams` of them; launch_clock_hold keeps `stream` busy (one thread spinning) until
// `after_ns` past *let_go, then writes the time it let go there (its start, when that was later),
// so that what is issued after it starts no earlier. Their kernels' names start with
// kClockKernelPrefix: they are the replay's pacing, not replayed work, and the timers leave
// their records out.
inline constexpr const char* kClockKernelPrefix = "replay_clock_";
cudaError_t launch_clock_start(unsigned long long* let_go, int streams, cudaStream_t stream);
cudaError_t launch_clock_hold(unsigned long long* let_go, long long after_ns, cudaStream_t stream);

}  // namespace replay::cuda
