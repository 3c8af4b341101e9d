// Which timing record belongs to which re-created activity: a record of another kind or another
// kernel's name never becomes a kernel's sample (a memset of a GEMM's launch once stood in for
// the GEMM, 0.8 us instead of 700).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "replay/record_match.h"

namespace {

using replay::ActivityKind;
using replay::ExpectedActivity;
using replay::RecordMatch;
using replay::TimedActivity;

std::vector<TimedActivity> records(const std::vector<std::string>& names) {
    std::vector<TimedActivity> out;
    std::int64_t t = 0;
    for (const auto& n : names) {
        out.push_back({1, n, t, t + 1000, 0, true});
        t += 2000;
    }
    return out;
}

const ExpectedActivity kGemm{"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", ActivityKind::Kernel};

TEST(RecordMatch, RecordKindsFollowCuptiAndKinetoNames) {
    EXPECT_EQ(replay::record_kind("Memset (Device)"), ActivityKind::Memset);
    // A CUDA graph's memset node, recorded as a kernel.
    EXPECT_EQ(replay::record_kind("memset32"), ActivityKind::Memset);
    EXPECT_EQ(replay::record_kind("memset"), ActivityKind::Kernel);
    EXPECT_EQ(replay::record_kind("memset32_kernel<float>"), ActivityKind::Kernel);
    EXPECT_EQ(replay::record_kind("Memcpy HtoD (Pinned -> Device)"), ActivityKind::Memcpy);
    EXPECT_EQ(replay::record_kind("void at::native::vectorized_elementwise_kernel<4>"),
              ActivityKind::Kernel);
}

TEST(RecordMatch, AMemsetNeverTimesAKernel) {
    // The GEMM's own record went missing; the launch's workspace memset is all that came back.
    const auto m = replay::match_records({kGemm}, records({"Memset (Device)"}));
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(m[0].record, RecordMatch::kNone);
    EXPECT_NE(m[0].reason.find("no kernel record of its own"), std::string::npos) << m[0].reason;
    EXPECT_NE(m[0].reason.find("Memset (Device)"), std::string::npos) << m[0].reason;
}

// A CUDA graph runs a captured memset as a kernel named memset32: the same work as the
// replay's Memset (Device), and the other way round; a kernel is still never timed by it.
TEST(RecordMatch, AGraphsMemsetKernelAndAMemsetTimeEachOther) {
    const ExpectedActivity graph_memset{"memset32", replay::record_kind("memset32")};
    const auto m =
        replay::match_records({graph_memset, kGemm}, records({"Memset (Device)", kGemm.name}));
    EXPECT_EQ(m[0].record, 0u);
    EXPECT_FALSE(m[0].same_name);
    EXPECT_EQ(m[1].record, 1u);
    const ExpectedActivity memset{"Memset (Device)", ActivityKind::Memset};
    EXPECT_EQ(replay::match_records({memset}, records({"memset32"}))[0].record, 0u);
    EXPECT_EQ(replay::match_records({kGemm}, records({"memset32"}))[0].record, RecordMatch::kNone);
}

TEST(RecordMatch, NothingBackIsAMissWithAReason) {
    const auto m = replay::match_records({kGemm}, {});
    EXPECT_EQ(m[0].record, RecordMatch::kNone);
    EXPECT_NE(m[0].reason.find("no timing record came back"), std::string::npos) << m[0].reason;
}

TEST(RecordMatch, TheOnlyKernelRecordOfALaunchTimesTheOnlyKernelAsAMismatch) {
    // cuBLAS on another GPU picked another tile: the one kernel that ran is the GEMM.
    const auto m =
        replay::match_records({kGemm}, records({"Memset (Device)", "sm90_xmma_gemm_other_tile"}));
    EXPECT_EQ(m[0].record, 1u);
    EXPECT_FALSE(m[0].same_name);
}

TEST(RecordMatch, AnotherKernelNameAmongSeveralTimesTheIssueTogether) {
    // Two kernels came back, neither with the recorded name: which one is the GEMM would be a
    // guess, but together they are the GEMM's work (cuBLAS split it at this shape).
    const auto m = replay::match_records(
        {kGemm}, records({"gemv2T_kernel_val", "splitKreduce_kernel"}));
    EXPECT_EQ(m[0].record, RecordMatch::kNone);
    EXPECT_EQ(m[0].shared, (std::vector<std::size_t>{0, 1}));
    EXPECT_DOUBLE_EQ(m[0].share, 1.0);
    EXPECT_NE(m[0].reason.find("gemv2T_kernel_val"), std::string::npos) << m[0].reason;
}

TEST(RecordMatch, FewerKernelsOfOtherNamesAreSharedByRecordedDurations) {
    // A split-K GEMM recorded at batch 1 (the GEMM and its reduction) replayed at batch 4, where
    // cuBLASLt runs one kernel: neither recorded kernel has a record of its own, and the one
    // record is the work of both.
    const std::vector<ExpectedActivity> expected = {
        {"nvjet_splitK_bias_TNT", ActivityKind::Kernel, 6.0},
        {"splitKreduce_kernel", ActivityKind::Kernel, 2.0},
        {"Memset (Device)", ActivityKind::Memset, 0.7},
    };
    const auto m = replay::match_records(expected, records({"Memset (Device)", "nvjet_64x64_bias_TNT"}));
    EXPECT_EQ(m[0].shared, (std::vector<std::size_t>{1}));
    EXPECT_DOUBLE_EQ(m[0].share, 0.75);
    EXPECT_EQ(m[1].shared, (std::vector<std::size_t>{1}));
    EXPECT_DOUBLE_EQ(m[1].share, 0.25);
    EXPECT_NE(m[0].reason.find("1 kernel(s) for the 2 recorded"), std::string::npos) << m[0].reason;
    EXPECT_EQ(m[2].record, 0u);
    EXPECT_TRUE(m[2].shared.empty());
}

TEST(RecordMatch, AKernelMatchedByNameKeepsTheOthersFromSharing) {
    // One kernel came back under its recorded name: the issue ran what was recorded, and a
    // record of another name for the other kernel is a guess, so that one misses.
    const std::vector<ExpectedActivity> expected = {
        kGemm,
        {"splitKreduce_kernel", ActivityKind::Kernel, 2.0},
    };
    const auto m = replay::match_records(expected, records({kGemm.name, "fill_kernel", "other_kernel"}));
    EXPECT_EQ(m[0].record, 0u);
    EXPECT_TRUE(m[0].same_name);
    EXPECT_EQ(m[1].record, RecordMatch::kNone);
    EXPECT_TRUE(m[1].shared.empty());
    EXPECT_NE(m[1].reason.find("none can be told apart"), std::string::npos) << m[1].reason;
}

TEST(RecordMatch, NamesDecideBeforeOrderAndLeftoversPairOneToOne) {
    const std::vector<ExpectedActivity> expected = {
        {"splitKreduce_kernel", ActivityKind::Kernel},
        kGemm,
        {"Memcpy HtoD (Pageable -> Device)", ActivityKind::Memcpy},
    };
    const auto m = replay::match_records(
        expected, records({"Memcpy HtoD (Pinned -> Device)", kGemm.name, "splitKreduce_kernel"}));
    EXPECT_EQ(m[0].record, 2u);
    EXPECT_TRUE(m[0].same_name);
    EXPECT_EQ(m[1].record, 1u);
    EXPECT_TRUE(m[1].same_name);
    // A copy times a copy whatever host memory the replay chose.
    EXPECT_EQ(m[2].record, 0u);
    EXPECT_FALSE(m[2].same_name);
}

// A convolution converts its input and then its weights with one kernel (cuDNN's nchwToNhwc),
// 35.9 and 1.7 us recorded. Records of one name pair by launch grid before order, whatever order
// they came back in; a record of another grid still times a kernel of its name, last.
TEST(RecordMatch, OneKernelNameTwiceInAnIssuePairsByGrid) {
    const std::string convert = "void cudnn::engines_precompiled::nchwToNhwcKernel<__nv_bfloat16>";
    const std::vector<ExpectedActivity> expected = {
        {convert, ActivityKind::Kernel, 35.9, {1568, 1, 16}},
        {convert, ActivityKind::Kernel, 1.7, {2, 1, 64}}};
    auto recs = records({convert, convert});
    recs[0].grid = {2, 1, 64};
    recs[1].grid = {1568, 1, 16};
    auto m = replay::match_records(expected, recs);
    EXPECT_EQ(m[0].record, 1u);
    EXPECT_EQ(m[1].record, 0u);
    EXPECT_TRUE(m[0].same_name && m[1].same_name);
    // One record of the input's grid, one of neither: the grid pairs first, the name the rest.
    recs[0].grid = {8, 1, 64};
    m = replay::match_records(expected, recs);
    EXPECT_EQ(m[0].record, 1u);
    EXPECT_EQ(m[1].record, 0u);
    // A backend without grids (zeros): order decides, as before.
    for (auto& r : recs) r.grid = {};
    m = replay::match_records(expected, recs);
    EXPECT_EQ(m[0].record, 0u);
    EXPECT_EQ(m[1].record, 1u);
}

TEST(RecordMatch, AKernelRecordNeverTimesACopy) {
    const auto m = replay::match_records({{"Memset (Device)", ActivityKind::Memset}},
                                         records({"fill_kernel"}));
    EXPECT_EQ(m[0].record, RecordMatch::kNone);
    EXPECT_NE(m[0].reason.find("no memset record"), std::string::npos) << m[0].reason;
}

}  // namespace
