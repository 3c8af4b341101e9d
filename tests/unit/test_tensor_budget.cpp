// The tensor budget each backend checks in prepare(): what a recipe's tensors allocate and what
// each of its views spans, against a byte budget, with reasons that name the tensor.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "aten_arguments.h"
#include "replay/tensor_budget.h"

namespace replay {
namespace {

constexpr std::int64_t kGiB = std::int64_t{1} << 30;
const TensorBudget kOneGiB{kGiB, "test budget"};

AtenArgument tensor_arg(std::vector<std::int64_t> dims, std::vector<std::int64_t> strides = {},
                        std::int64_t storage = -1, DType dtype = DType::Float32) {
    AtenArgument a = test::tensor_argument(dtype, std::move(dims), std::move(strides));
    a.tensors.front().storage_id = storage;
    return a;
}

Recipe aten(std::string op, std::vector<AtenArgument> args) {
    Recipe r;
    r.tier = Tier::AtenOp;
    r.detail = AtenRecipe{std::move(op), "", "", std::move(args)};
    return r;
}

std::string reason(const Recipe& recipe, const TensorBudget& budget = kOneGiB) {
    return over_budget(recipe, budget).value_or("fits");
}

TEST(TensorBudget, OverlappingViewCountsEveryElementItSpans) {
    // The copy_ that once made libtorch copy 1e18 elements: a few bytes of storage.
    const std::vector<std::int64_t> huge{1000000, 1000000, 1000000}, overlap{1, 1, 1};
    AtenArgument non_blocking;
    non_blocking.kind = ArgKind::Scalar;
    non_blocking.value = "False";
    const Recipe copy =
        aten("aten::copy_", {tensor_arg(huge, overlap), tensor_arg(huge, overlap), non_blocking});
    EXPECT_EQ(reason(copy),
              "aten::copy_ argument 0 [1000000, 1000000, 1000000] spans 1000000000000000000 "
              "float32 elements (3.5 EiB), over the 1.0 GiB tensor budget (test budget; "
              "--max-tensor-bytes sets it)");
}

TEST(TensorBudget, OrdinaryOpsFit) {
    EXPECT_EQ(reason(aten("aten::layer_norm",
                          {tensor_arg({8, 1024}), tensor_arg({1024}), tensor_arg({1024})})),
              "fits");
    // A broadcast view spans what the op writes, on a small storage: within budget, it fits.
    EXPECT_EQ(
        reason(aten("aten::add", {tensor_arg({4096, 4096}), tensor_arg({4096, 4096}, {0, 1})})),
        "fits");
}

TEST(TensorBudget, StoragesAddUpAndARecordedStorageCountsOnce) {
    // Two 600 MiB float32 tensors: 1.2 GiB together, over 1 GiB.
    const std::int64_t rows = 600 * 1024 * 1024 / 4 / 1024;
    EXPECT_EQ(reason(aten("aten::add", {tensor_arg({rows, 1024}), tensor_arg({rows, 1024})})),
              "aten::add needs 1.2 GiB of tensors (largest: argument 0 [153600, 1024], 600.0 MiB), "
              "over the 1.0 GiB tensor budget (test budget; --max-tensor-bytes sets it)");
    // The same recorded storage twice (an in-place op on itself) is allocated once.
    EXPECT_EQ(reason(aten("aten::add_",
                          {tensor_arg({rows, 1024}, {}, 7), tensor_arg({rows, 1024}, {}, 7)})),
              "fits");
}

TEST(TensorBudget, GemmOperandsAndCopiesAreNamed) {
    Recipe gemm;
    gemm.tier = Tier::Gemm;
    GemmRecipe g;
    g.op = "aten::mm";
    g.m = 16, g.n = 1 << 20, g.k = 1 << 20;  // B is k x n: 4 TiB of float16
    g.lda = g.k, g.ldb = g.n, g.ldc = g.n;
    g.a_type = g.b_type = g.c_type = DType::Float16;
    gemm.detail = g;
    EXPECT_EQ(reason(gemm),
              "aten::mm B [1048576, 1048576] spans 1099511627776 float16 elements (2.0 TiB), "
              "over the 1.0 GiB tensor budget (test budget; --max-tensor-bytes sets it)");

    Recipe copy;
    copy.tier = Tier::Copy;
    copy.detail = CopyRecipe{false, CopyDirection::HostToDevice, true, 600 << 20, 0};
    EXPECT_NE(reason(copy).find("memcpy needs 1.2 GiB of tensors"), std::string::npos)
        << reason(copy);
    copy.detail = CopyRecipe{true, CopyDirection::Device, false, 600 << 20, 0};
    EXPECT_EQ(reason(copy), "fits");  // a memset has no source
}

TEST(TensorBudget, SizesBeyondInt64Saturate) {
    const Recipe op = aten("aten::relu", {tensor_arg({10000000, 10000000, 10000000})});
    EXPECT_NE(reason(op).find("spans 9223372036854775807 float32 elements"), std::string::npos)
        << reason(op);
}

TEST(TensorBudget, OptionOverridesTheFreeMemory) {
    const TensorBudget from_memory = tensor_budget(0, 8 * kGiB, "free device memory");
    EXPECT_EQ(from_memory.bytes, 8 * kGiB);
    EXPECT_EQ(from_memory.source, "free device memory");
    const TensorBudget from_option = tensor_budget(1024, 8 * kGiB, "free device memory");
    EXPECT_EQ(from_option.bytes, 1024);
    EXPECT_EQ(reason(aten("aten::relu", {tensor_arg({64, 64})}), from_option),
              "aten::relu argument 0 [64, 64] spans 4096 float32 elements (16.0 KiB), over the "
              "1.0 KiB tensor budget (--max-tensor-bytes)");
    EXPECT_GT(available_host_memory(), 0);
}

TEST(TensorBudget, BytesAreWrittenInBinaryUnits) {
    EXPECT_EQ(format_bytes(512), "512 B");
    EXPECT_EQ(format_bytes(1536), "1.5 KiB");
    EXPECT_EQ(format_bytes(3 * kGiB), "3.0 GiB");
}

TEST(TensorBudget, HostMemoryIsCappedAtWhatWasAvailableWhenTheReplayStarted) {
    // 16 GiB were available at the start (cap: 1 GiB resident then + 12 GiB); the prepared
    // steps now hold 11 GiB, and the host still reports 8 GiB available: 2 GiB are left, not 6.
    const std::int64_t cap = kGiB + 12 * kGiB;
    const TensorBudget capped = host_memory_budget(0, cap, 11 * kGiB, 8 * kGiB);
    EXPECT_EQ(capped.bytes, 2 * kGiB);
    EXPECT_NE(capped.source.find("the replay's memory cap (13.0 GiB"), std::string::npos)
        << capped.source;
    EXPECT_NE(capped.source.find("11.0 GiB in use"), std::string::npos) << capped.source;
    const auto why = reason(aten("aten::relu", {tensor_arg({1024, 1024, 1024})}), capped);
    EXPECT_NE(why.find("over the 2.0 GiB tensor budget (the replay's memory cap"),
              std::string::npos)
        << why;
    EXPECT_EQ(why.find("--max-tensor-bytes sets it"), std::string::npos) << why;  // it cannot
    // Past the cap nothing more is prepared.
    EXPECT_EQ(host_memory_budget(0, cap, 14 * kGiB, 8 * kGiB).bytes, 0);
    // Other processes took memory: three quarters of what is available now is the tighter.
    const TensorBudget shared = host_memory_budget(0, cap, 2 * kGiB, 4 * kGiB);
    EXPECT_EQ(shared.bytes, 3 * kGiB);
    EXPECT_EQ(shared.source, "3/4 of available RAM");
    // --max-tensor-bytes narrows the budget but does not lift the cap.
    EXPECT_EQ(host_memory_budget(kGiB, cap, 2 * kGiB, 4 * kGiB).bytes, kGiB);
    EXPECT_EQ(host_memory_budget(kGiB, cap, 2 * kGiB, 4 * kGiB).source, "--max-tensor-bytes");
    EXPECT_EQ(host_memory_budget(64 * kGiB, cap, 11 * kGiB, 8 * kGiB).bytes, 2 * kGiB);
    EXPECT_GT(resident_memory(), 0);
}

}  // namespace
}  // namespace replay
