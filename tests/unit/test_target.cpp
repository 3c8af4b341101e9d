// A replay of A's trace against B's recording of the same workload: kernels matched by id, by
// launch, or (a GEMM cuBLAS ran as another kernel on B) by recipe; errors against B's medians.
#include <gtest/gtest.h>

#include <sstream>

#include "replay/target.h"

namespace {

using replay::KernelOutcome;
using replay::KernelResult;
using replay::Tier;
using replay::UniqueKernel;

UniqueKernel kernel(const std::string& id, const std::string& name, double median, int m = 0) {
    UniqueKernel k;
    k.id = id;
    k.name = name;
    k.grid[0] = 4;
    k.block[0] = 128;
    k.recorded_us.count = 2;
    k.recorded_us.median = median;
    if (m > 0) {
        k.recipe.tier = Tier::Gemm;
        replay::GemmRecipe g;
        g.op = "aten::mm";
        g.m = g.n = g.k = m;
        k.recipe.detail = g;
    } else {
        k.recipe.tier = Tier::AtenOp;
        replay::AtenRecipe a;
        a.op = "aten::relu";
        k.recipe.detail = a;
    }
    return k;
}

KernelResult replayed(const UniqueKernel& k, double median, const std::string& ran) {
    KernelResult r;
    r.id = k.id;
    r.name = k.name;
    r.kind = "kernel";
    r.tier = k.recipe.tier;
    r.outcome = KernelOutcome::Replayed;
    r.recorded_us.count = 2;
    r.samples_us = {median, median};
    r.replayed_us.count = 2;
    r.replayed_us.median = median;
    r.replayed_names = {ran};
    return r;
}

TEST(Target, KernelsMatchByIdLaunchOrRecipeAndErrorsAreAgainstTheTarget) {
    const std::vector<UniqueKernel> a = {kernel("a1", "relu_k", 10), kernel("a2", "sm90_gemm_a", 100, 512),
                                         kernel("a3", "only_on_a", 5)};
    std::vector<UniqueKernel> b = {kernel("b1", "relu_k", 8), kernel("b2", "sm80_gemm_b", 200, 512)};
    replay::Report report;
    report.kernels = {replayed(a[0], 9, "relu_k"), replayed(a[1], 220, "sm80_gemm_b"),
                      replayed(a[2], 5, "only_on_a")};
    const auto c = replay::compare_with_target(report, a, b, "b.json.gz");
    ASSERT_EQ(c.kernels.size(), 2u);
    EXPECT_EQ(c.replayed_unmatched, 1u);
    const auto& gemm = c.kernels[0];  // the largest on the target first
    EXPECT_EQ(gemm.matched_by, "recipe");
    EXPECT_EQ(gemm.target_name, "sm80_gemm_b");
    EXPECT_TRUE(gemm.same_name_as_target);
    EXPECT_NEAR(gemm.error_pct, 10.0, 1e-9);
    EXPECT_EQ(c.kernels[1].matched_by, "name");
    EXPECT_NEAR(c.kernels[1].error_pct, 12.5, 1e-9);
    EXPECT_EQ(c.gemms, 1u);
    EXPECT_EQ(c.gemms_same_name, 1u);
    // (9 + 220) x 2 against (8 + 200) x 2.
    EXPECT_NEAR(c.total_error_pct, (229.0 - 208.0) / 208.0 * 100.0, 1e-9);
    std::ostringstream json;
    replay::write_target_json(json, c);
    EXPECT_NE(json.str().find("\"schema\": \"replay.target/1\""), std::string::npos) << json.str();
}

TEST(Target, AGemmThatRanAnotherKernelThanTheTargetsIsSaid) {
    const std::vector<UniqueKernel> a = {kernel("a2", "sm90_gemm_a", 100, 512)};
    const std::vector<UniqueKernel> b = {kernel("a2", "sm90_gemm_a", 120, 512)};
    replay::Report report;
    report.kernels = {replayed(a[0], 110, "sm90_gemm_other")};
    const auto c = replay::compare_with_target(report, a, b, "b");
    ASSERT_EQ(c.kernels.size(), 1u);
    EXPECT_EQ(c.kernels[0].matched_by, "id");
    EXPECT_FALSE(c.kernels[0].same_name_as_target);
    EXPECT_EQ(c.gemms_same_name, 0u);
}

}  // namespace
