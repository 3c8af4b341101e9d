// The CUDA backend's index fill (replayers/cuda/device_kernels.cu): what a Triton kernel's
// index arguments get when Inductor checks them against a bound. Every value in range, spread
// evenly over it (zeros had sent a compiled GCN's scatter_add to one row), a pure function of
// the seed, and a refusal of what it cannot fill.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "device_kernels.h"

namespace {

#define ASSERT_CUDA(call) ASSERT_EQ((call), cudaSuccess) << #call

bool have_gpu() {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

// `count` values of `bytes` (4 or 8) filled below `bound` with `seed`, read back as int64.
std::vector<std::int64_t> filled(std::size_t count, int bytes, std::int64_t bound,
                                 std::uint64_t seed) {
    void* data = nullptr;
    EXPECT_EQ(cudaMalloc(&data, count * static_cast<std::size_t>(bytes)), cudaSuccess);
    EXPECT_EQ(replay::cuda::launch_fill_indices(data, count, bytes, bound, seed, nullptr),
              cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<std::int64_t> out(count);
    if (bytes == 8) {
        EXPECT_EQ(cudaMemcpy(out.data(), data, count * 8, cudaMemcpyDeviceToHost), cudaSuccess);
    } else {
        std::vector<std::int32_t> narrow(count);
        EXPECT_EQ(cudaMemcpy(narrow.data(), data, count * 4, cudaMemcpyDeviceToHost), cudaSuccess);
        std::copy(narrow.begin(), narrow.end(), out.begin());
    }
    cudaFree(data);
    return out;
}

TEST(IndexFill, EveryValueIsInRangeAndTheRangeIsCoveredEvenly) {
    if (!have_gpu()) GTEST_SKIP() << "no GPU";
    constexpr std::size_t kCount = 1 << 20;
    for (const int bytes : {8, 4}) {
        // A small bound (DLRM's interaction's 9 rows): each value about count / 9 times.
        const auto small = filled(kCount, bytes, 9, 1);
        std::vector<std::size_t> seen(9, 0);
        for (const auto v : small) {
            ASSERT_GE(v, 0);
            ASSERT_LT(v, 9);
            ++seen[static_cast<std::size_t>(v)];
        }
        for (const auto n : seen)
            EXPECT_NEAR(static_cast<double>(n), kCount / 9.0, 0.02 * kCount / 9.0) << bytes;
        // A large one (a vocabulary): in range, its mean near the middle, its ends reached.
        const auto large = filled(kCount, bytes, 50257, 2);
        const auto [lo, hi] = std::minmax_element(large.begin(), large.end());
        EXPECT_GE(*lo, 0);
        EXPECT_LT(*hi, 50257);
        EXPECT_LT(*lo, 50);
        EXPECT_GT(*hi, 50257 - 50);
        double mean = 0;
        for (const auto v : large) mean += static_cast<double>(v) / kCount;
        EXPECT_NEAR(mean, 50256 / 2.0, 0.01 * 50257);
    }
}

TEST(IndexFill, TheSameSeedGivesTheSameValuesAndAnotherOthers) {
    if (!have_gpu()) GTEST_SKIP() << "no GPU";
    EXPECT_EQ(filled(4096, 8, 1000, 7), filled(4096, 8, 1000, 7));
    EXPECT_NE(filled(4096, 8, 1000, 7), filled(4096, 8, 1000, 8));
}

TEST(IndexFill, WhatItCannotFillIsRefused) {
    if (!have_gpu()) GTEST_SKIP() << "no GPU";
    void* data = nullptr;
    ASSERT_CUDA(cudaMalloc(&data, 64));
    using replay::cuda::launch_fill_indices;
    EXPECT_EQ(launch_fill_indices(data, 8, 8, 0, 1, nullptr), cudaErrorInvalidValue);  // no range
    EXPECT_EQ(launch_fill_indices(data, 8, 2, 9, 1, nullptr), cudaErrorInvalidValue);  // 16-bit
    EXPECT_EQ(launch_fill_indices(data, 8, 4, std::int64_t{1} << 40, 1, nullptr),
              cudaErrorInvalidValue);  // a bound int32 cannot hold
    EXPECT_EQ(launch_fill_indices(data, 0, 8, 9, 1, nullptr), cudaSuccess);  // nothing to fill
    cudaFree(data);
}

}  // namespace
