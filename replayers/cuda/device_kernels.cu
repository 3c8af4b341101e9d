// Device helpers of the CUDA backend; see device_kernels.h.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "device_kernels.h"

namespace replay::cuda {
namespace {

__device__ __forceinline__ std::uint64_t splitmix64(std::uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// Uniform in [-1, 1) from the top 24 bits.
__device__ __forceinline__ float uniform(std::uint64_t bits) {
    return static_cast<float>(bits >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

// `scale` * u + `offset` for u uniform in [-1, 1).
__global__ void fill_uniform_kernel(void* data, std::size_t count, int type, std::uint64_t seed,
                                    float scale, float offset) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += stride) {
        const std::uint64_t bits = splitmix64(seed ^ (i * 0xD1B54A32D192ED03ull));
        const float value = scale * uniform(bits) + offset;
        switch (type) {
            case 0:
                static_cast<float*>(data)[i] = value;
                break;
            case 1:
                static_cast<__half*>(data)[i] = __float2half(value);
                break;
            case 2:
                static_cast<__nv_bfloat16*>(data)[i] = __float2bfloat16(value);
                break;
            case 3:
                static_cast<double*>(data)[i] = static_cast<double>(value);
                break;
            default:
                static_cast<unsigned char*>(data)[i] = static_cast<unsigned char>(bits >> 56);
                break;
        }
    }
}

__global__ void fill_indices_kernel(void* data, std::size_t count, int element_bytes,
                                    std::uint64_t bound, std::uint64_t seed) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += stride) {
        // The high 64 bits of bits x bound: uniform in [0, bound) to within 2^-64.
        const std::uint64_t bits = splitmix64(seed ^ (i * 0xD1B54A32D192ED03ull));
        const std::uint64_t value = __umul64hi(bits, bound);
        if (element_bytes == 8)
            static_cast<std::int64_t*>(data)[i] = static_cast<std::int64_t>(value);
        else
            static_cast<std::int32_t*>(data)[i] = static_cast<std::int32_t>(value);
    }
}

__global__ void l2_touch_kernel(const unsigned* sectors, std::size_t count, unsigned* sink) {
    constexpr std::size_t kWordsPerSector = 8;
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    unsigned acc = 0;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += stride)
        acc ^= __ldcg(sectors + i * kWordsPerSector);  // cache in L2, not L1
    if (acc == 0x9e3779b9u) *sink = acc;
}

// Sector ranges of a TouchList: whole 32-byte sectors, 8 words each.
struct SectorRanges {
    const unsigned* begin[TouchList::kCapacity];
    std::size_t sectors[TouchList::kCapacity];
    int count;
};

__global__ void l2_touch_ranges_kernel(SectorRanges ranges, unsigned* sink) {
    constexpr std::size_t kWordsPerSector = 8;
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    unsigned acc = 0;
    for (int r = 0; r < ranges.count; ++r)
        for (std::size_t i = first; i < ranges.sectors[r]; i += stride)
            acc ^= __ldcg(ranges.begin[r] + i * kWordsPerSector);  // cache in L2, not L1
    if (acc == 0x9e3779b9u) *sink = acc;
}

// 8,192 x 4 dependent FMAs, straight-line: 32,768 SASS instructions of 16 bytes, 512 KiB of
// code, several times what an SM's instruction caches hold, so that after it no SM holds any
// code of the kernels before. Inline assembly, so that neither compiler folds or rolls it.
#define REPLAY_X2(s) s s
#define REPLAY_X16(s) REPLAY_X2(REPLAY_X2(REPLAY_X2(REPLAY_X2(s))))
#define REPLAY_X8192(s) REPLAY_X2(REPLAY_X16(REPLAY_X16(REPLAY_X16(s))))
__global__ void instruction_cache_evict_kernel(float a, float b, float* sink) {
    float x0 = static_cast<float>(threadIdx.x), x1 = x0 + 1.0f, x2 = x0 + 2.0f, x3 = x0 + 3.0f;
    asm volatile(REPLAY_X8192("fma.rn.f32 %0, %0, %4, %5;\n\t"
                              "fma.rn.f32 %1, %1, %4, %5;\n\t"
                              "fma.rn.f32 %2, %2, %4, %5;\n\t"
                              "fma.rn.f32 %3, %3, %4, %5;\n\t")
                 : "+f"(x0), "+f"(x1), "+f"(x2), "+f"(x3)
                 : "f"(a), "f"(b));
    if (x0 + x1 + x2 + x3 == 1234.5f) *sink = x0;
}
#undef REPLAY_X8192
#undef REPLAY_X16
#undef REPLAY_X2

// [data, data + bytes) rounded out to whole 32-byte sectors: allocations are at least 256-byte
// aligned and sized, so rounding out stays inside the allocation.
std::size_t sector_range(const void* data, std::size_t bytes, const unsigned*& begin) {
    constexpr std::uintptr_t kSector = 32;
    const auto first = reinterpret_cast<std::uintptr_t>(data) & ~(kSector - 1);
    const auto end =
        (reinterpret_cast<std::uintptr_t>(data) + bytes + kSector - 1) & ~(kSector - 1);
    begin = reinterpret_cast<const unsigned*>(first);
    return (end - first) / kSector;
}

constexpr unsigned kTouchThreads = 256;

// The device's global timer (ns); with CUPTI on, it ticks every 32 ns.
__device__ __forceinline__ unsigned long long global_ns() {
    unsigned long long ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    return ns;
}

// Names start with kClockKernelPrefix: the timers leave their records out.
__global__ void replay_clock_start_kernel(unsigned long long* let_go, int streams) {
    const unsigned long long now = global_ns();
    for (int s = 0; s < streams; ++s) let_go[s] = now;
}

// One thread spins (no sleep: a sleep's wake-up is coarser than the gaps it keeps) until
// `after_ns` past the stream's last let-go, so that the stream's next work starts then, and
// writes the time it let go (its start, when that is already later). The write also keeps the
// loop: one with no effect may be assumed to end and be removed.
__global__ void replay_clock_hold_kernel(unsigned long long* let_go, long long after_ns) {
    const long long target = static_cast<long long>(*let_go) + after_ns;
    long long now = static_cast<long long>(global_ns());
    while (now < target) now = static_cast<long long>(global_ns());
    *let_go = static_cast<unsigned long long>(now);
}

unsigned touch_blocks(std::size_t sectors) {
    return static_cast<unsigned>(
        std::min<std::size_t>((sectors + kTouchThreads - 1) / kTouchThreads, 1024));
}

}  // namespace

cudaError_t launch_clock_start(unsigned long long* let_go, int streams, cudaStream_t stream) {
    replay_clock_start_kernel<<<1, 1, 0, stream>>>(let_go, streams);
    return cudaGetLastError();
}

cudaError_t launch_clock_hold(unsigned long long* let_go, long long after_ns, cudaStream_t stream) {
    replay_clock_hold_kernel<<<1, 1, 0, stream>>>(let_go, after_ns);
    return cudaGetLastError();
}

cudaError_t launch_l2_touch(const void* data, std::size_t bytes, unsigned* sink,
                            cudaStream_t stream) {
    if (bytes == 0 || data == nullptr) return cudaSuccess;
    const unsigned* begin = nullptr;
    const std::size_t count = sector_range(data, bytes, begin);
    l2_touch_kernel<<<touch_blocks(count), kTouchThreads, 0, stream>>>(begin, count, sink);
    return cudaGetLastError();
}

cudaError_t launch_l2_touch_list(const TouchList& list, unsigned* sink, cudaStream_t stream) {
    SectorRanges ranges{};
    std::size_t largest = 0;
    for (int r = 0; r < list.count && r < TouchList::kCapacity; ++r) {
        if (list.bytes[r] == 0 || list.data[r] == nullptr) continue;
        ranges.sectors[ranges.count] =
            sector_range(list.data[r], list.bytes[r], ranges.begin[ranges.count]);
        largest = std::max(largest, ranges.sectors[ranges.count]);
        ++ranges.count;
    }
    if (ranges.count == 0) return cudaSuccess;
    // Enough threads for the largest range: the others finish sooner.
    l2_touch_ranges_kernel<<<touch_blocks(largest), kTouchThreads, 0, stream>>>(ranges, sink);
    return cudaGetLastError();
}

cudaError_t launch_instruction_cache_evict(int sm_count, float* sink, cudaStream_t stream) {
    // Four blocks of four warps per SM: every SM, and every one of its sub-partitions, runs it.
    const unsigned blocks = static_cast<unsigned>(std::max(sm_count, 1)) * 4;
    instruction_cache_evict_kernel<<<blocks, 128, 0, stream>>>(1.0f, 0.0f, sink);
    return cudaGetLastError();
}

cudaError_t launch_fill_uniform(void* data, std::size_t count, FillType type, std::uint64_t seed,
                                cudaStream_t stream, FillRange range) {
    if (count == 0) return cudaSuccess;
    constexpr unsigned kThreads = 256;
    const std::size_t wanted = (count + kThreads - 1) / kThreads;
    const unsigned blocks = static_cast<unsigned>(wanted < 4096 ? wanted : 4096);
    const bool positive = range == FillRange::Positive;
    fill_uniform_kernel<<<blocks, kThreads, 0, stream>>>(
        data, count, static_cast<int>(type), seed, positive ? 0.5f : 1.0f, positive ? 1.0f : 0.0f);
    return cudaGetLastError();
}

cudaError_t launch_fill_indices(void* data, std::size_t count, int element_bytes,
                                std::int64_t bound, std::uint64_t seed, cudaStream_t stream) {
    if (count == 0) return cudaSuccess;
    if (bound <= 0 || (element_bytes != 4 && element_bytes != 8) ||
        (element_bytes == 4 && bound > 2147483647))
        return cudaErrorInvalidValue;
    constexpr unsigned kThreads = 256;
    const std::size_t wanted = (count + kThreads - 1) / kThreads;
    const unsigned blocks = static_cast<unsigned>(wanted < 4096 ? wanted : 4096);
    fill_indices_kernel<<<blocks, kThreads, 0, stream>>>(data, count, element_bytes,
                                                         static_cast<std::uint64_t>(bound), seed);
    return cudaGetLastError();
}

}  // namespace replay::cuda
