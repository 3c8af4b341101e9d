// Synthesized integer inputs stay inside what they index: group offsets and sizes (value_roles),
// the roles learnt from schemas and the table, and a scan of every bundled trace that builds the
// inputs of each index-consuming op through the replay's own code and checks them on the host
// against ranges this test computes from the recorded shapes by itself.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "input_synthesis.h"
#include "recipe_builders.h"
#include "replay/analysis.h"
#include "replay/torch_ops.h"
#include "schema_binding.h"
#include "test_support.h"
#include "value_roles.h"

namespace replay {
namespace {

using torch_detail::check_values;
using torch_detail::group_values;
using torch_detail::ValueConstraint;
using torch_detail::ValueRole;

// ---- a reference aten::_grouped_mm for libtorches without one --------------------------------

// The 2-D x 3-D case of MoE layers (tokens grouped by expert), checking `offs` as the CUDA
// kernels do (TORCH_CHECK where they assert), so that CPU replays exercise the offsets a GPU
// replay gets.
at::Tensor reference_grouped_mm(const at::Tensor& a, const at::Tensor& b,
                                const c10::optional<at::Tensor>& offs,
                                const c10::optional<at::Tensor>& bias,
                                c10::optional<at::ScalarType> out_dtype) {
    TORCH_CHECK(a.dim() == 2 && b.dim() == 3 && offs.has_value() && !bias.has_value(),
                "the reference _grouped_mm covers 2-D x 3-D operands with offsets");
    TORCH_CHECK(offs->scalar_type() == at::kInt, "offs must be int32");
    const at::Tensor ends = offs->to(at::kLong).cpu();
    TORCH_CHECK(ends.numel() == b.size(0), "one offset per group");
    at::Tensor out =
        at::zeros({a.size(0), b.size(2)}, a.options().dtype(out_dtype.value_or(a.scalar_type())));
    std::int64_t start = 0;
    for (std::int64_t g = 0; g < ends.numel(); ++g) {
        const std::int64_t end = ends[g].item<std::int64_t>();
        TORCH_CHECK(end >= start, "expected gemm dimension to be greater or equal 0");
        TORCH_CHECK(end <= a.size(0), "expected offset to be less than tensor size");
        if (end > start) out.slice(0, start, end).copy_(at::mm(a.slice(0, start, end), b[g]));
        start = end;
    }
    return out;
}

std::unique_ptr<torch::Library> register_reference_grouped_mm() {
    if (c10::Dispatcher::singleton().findSchema({"aten::_grouped_mm", ""})) return nullptr;
    auto library = std::make_unique<torch::Library>(torch::Library::FRAGMENT, "aten", c10::nullopt,
                                                    __FILE__, __LINE__);
    library->def(
        "_grouped_mm(Tensor self, Tensor mat2, Tensor? offs=None, Tensor? bias=None, "
        "ScalarType? out_dtype=None) -> Tensor");
    library->impl("_grouped_mm",
                  torch::dispatch(c10::DispatchKey::CPU, TORCH_FN(reference_grouped_mm)));
    return library;
}
// Registered before any test binds an op (the binder caches the dispatcher's op names).
const auto grouped_mm_reference = register_reference_grouped_mm();

// ---- recipes
// -------------------------------------------------------------------------------------

using testing::none;
using testing::op;
using testing::scalar;
using testing::spec;
using testing::tensor;
using testing::tensors;

// The stack the replay builds for `recipe` on the CPU; fails the test when it cannot.
struct Built {
    std::optional<torch_detail::Plan> plan;
    std::optional<torch_detail::BuiltStack> stack;
    std::string why;
};
Built build(const AtenRecipe& recipe, std::uint64_t seed = 7) {
    static torch_detail::InputSynthesis synthesis(c10::Device(c10::kCPU), seed, false);
    Built b;
    b.plan = torch_detail::bind_overload(recipe, b.why);
    if (b.plan) b.stack = synthesis.build_stack(*b.plan, recipe, false, b.why);
    return b;
}

std::vector<std::int64_t> values_of(const at::Tensor& t) {
    const at::Tensor host = t.to(at::kCPU).to(at::kLong).contiguous();
    return {host.data_ptr<std::int64_t>(), host.data_ptr<std::int64_t>() + host.numel()};
}

const ValueConstraint* constraint_on(const torch_detail::BuiltStack& s, std::size_t arg,
                                     std::size_t item = 0) {
    for (const auto& c : s.constraints)
        if (c.arg == arg && c.item == item) return &c;
    return nullptr;
}

// ---- group values
// ---------------------------------------------------------------------------------

TEST(GroupValues, GroupedGemmEndsAreBalancedIncreasingAndSumToTheRows) {
    ValueConstraint c;
    c.role = ValueRole::Offsets;
    c.total = 1024;
    EXPECT_EQ(group_values(c, 8),
              (std::vector<std::int64_t>{128, 256, 384, 512, 640, 768, 896, 1024}));
    // Decode: 2 routed rows over 8 experts.
    c.total = 2;
    EXPECT_EQ(group_values(c, 8), (std::vector<std::int64_t>{1, 2, 2, 2, 2, 2, 2, 2}));
    EXPECT_EQ(check_values(c, group_values(c, 8)), "");
}

TEST(GroupValues, RoutedGroupsAreAUniformRoutingDrawnFromTheSeed) {
    ValueConstraint c;
    c.role = ValueRole::Offsets;
    c.total = 1024;
    c.routed = true;
    const auto a = group_values(c, 8, 1), b = group_values(c, 8, 2);
    EXPECT_EQ(a, group_values(c, 8, 1));  // reproducible
    EXPECT_NE(a, b);
    for (const auto& v : {a, b}) {
        EXPECT_EQ(check_values(c, v), "");
        // 1024 rows over 8 groups: 128 each on average, about 10.6 apart (multinomial), not all
        // equal and none far off.
        std::int64_t previous = 0, largest = 0, smallest = c.total;
        for (auto end : v) {
            largest = std::max(largest, end - previous);
            smallest = std::min(smallest, end - previous);
            previous = end;
        }
        EXPECT_GT(largest, smallest);
        EXPECT_LT(largest, 128 + 60);
        EXPECT_GT(smallest, 128 - 60);
    }
    // Aligned units: every group but the last a multiple of 8.
    c.align = 8;
    c.total = 1000;
    EXPECT_EQ(check_values(c, group_values(c, 8, 3)), "");
}

TEST(GroupValues, AlignedGroupsLeaveTheUnalignedRestToTheLast) {
    ValueConstraint c;
    c.role = ValueRole::Offsets;
    c.total = 108;
    c.align = 8;  // 16 bytes of bfloat16
    const auto v = group_values(c, 4);
    EXPECT_EQ(v, (std::vector<std::int64_t>{32, 56, 80, 108}));  // 13 units of 8, rest 4
    EXPECT_EQ(check_values(c, v), "");
    EXPECT_NE(check_values(c, {30, 56, 80, 108}), "");  // a group of 30 is not aligned
}

TEST(GroupValues, StartsBoundsAndCounts) {
    ValueConstraint starts;  // embedding_bag offsets: bag starts
    starts.role = ValueRole::Offsets;
    starts.total = 10;
    starts.leading_zero = true;
    starts.ends_at_total = false;
    EXPECT_EQ(group_values(starts, 3), (std::vector<std::int64_t>{0, 4, 7}));
    EXPECT_EQ(check_values(starts, group_values(starts, 3)), "");

    ValueConstraint bounds = starts;  // cu_seqlens: 0, ..., total
    bounds.ends_at_total = true;
    EXPECT_EQ(group_values(bounds, 4), (std::vector<std::int64_t>{0, 4, 7, 10}));
    EXPECT_EQ(check_values(bounds, group_values(bounds, 4)), "");

    ValueConstraint counts;
    counts.role = ValueRole::Counts;
    counts.total = 7;
    EXPECT_EQ(group_values(counts, 3), (std::vector<std::int64_t>{3, 2, 2}));
    EXPECT_EQ(check_values(counts, group_values(counts, 3)), "");
}

TEST(GroupValues, ChecksCatchWhatWouldFault) {
    ValueConstraint ends;
    ends.role = ValueRole::Offsets;
    ends.total = 16;
    EXPECT_NE(check_values(ends, {4, 2, 16}).find("decreases"), std::string::npos);
    EXPECT_NE(check_values(ends, {4, 8, 12}).find("not"), std::string::npos);  // ends short
    EXPECT_NE(check_values(ends, {4, 8, 17}), "");
    ValueConstraint counts;
    counts.role = ValueRole::Counts;
    counts.total = 5;
    EXPECT_NE(check_values(counts, {2, 2}).find("sum"), std::string::npos);
    EXPECT_NE(check_values(counts, {6, -1}).find("negative"), std::string::npos);
    ValueConstraint index;
    index.bound = 3;
    EXPECT_EQ(check_values(index, {0, 1, 2}), "");
    EXPECT_NE(check_values(index, {0, 3}), "");
    EXPECT_NE(check_values(index, {-1}), "");
    ValueConstraint divisor;
    divisor.role = ValueRole::Divisor;
    divisor.bound = 16;
    EXPECT_NE(check_values(divisor, {1, 0}), "");
}

// ---- roles from schemas and the table
// --------------------------------------------------------------

TEST(ValueRoles, IndexListsIndexSelfsLeadingDims) {
    // x[i, j] on a [4, 5, 6] tensor: i < 4, j < 5.
    const auto b =
        build(op("aten::index", {tensor(spec({4, 5, 6}, DType::Float32)),
                                 tensors({spec({300}, DType::Int64), spec({300}, DType::Int64)})}));
    ASSERT_TRUE(b.stack) << b.why;
    ASSERT_EQ(b.stack->constraints.size(), 2u);
    EXPECT_EQ(constraint_on(*b.stack, 1, 0)->bound, 4);
    EXPECT_EQ(constraint_on(*b.stack, 1, 1)->bound, 5);
    for (const auto& c : b.stack->constraints)
        EXPECT_EQ(check_values(c, values_of(torch_detail::constrained_tensor(b.stack->stack, c))),
                  "");
}

TEST(ValueRoles, DimArgumentsPickTheIndexedDimension) {
    const auto b = build(op("aten::index_copy_", {tensor(spec({1, 8, 129, 64}, DType::Float32)),
                                                  scalar("2"), tensor(spec({1}, DType::Int64)),
                                                  tensor(spec({1, 8, 1, 64}, DType::Float32))}));
    ASSERT_TRUE(b.stack) << b.why;
    ASSERT_NE(constraint_on(*b.stack, 2), nullptr);
    EXPECT_EQ(constraint_on(*b.stack, 2)->bound, 129);
    const auto g =
        build(op("aten::gather", {tensor(spec({16, 5}, DType::Float32)), scalar("-1"),
                                  tensor(spec({16, 5}, DType::Int64)), scalar("False")}));
    ASSERT_TRUE(g.stack) << g.why;
    EXPECT_EQ(constraint_on(*g.stack, 2)->bound, 5);
}

TEST(ValueRoles, TheTableCoversWhatSchemasCannotSay) {
    const auto e = build(op("aten::embedding", {tensor(spec({3, 64}, DType::Float32)),
                                                tensor(spec({32, 128}, DType::Int64)), scalar("-1"),
                                                scalar("False"), scalar("False")}));
    ASSERT_TRUE(e.stack) << e.why;
    EXPECT_EQ(constraint_on(*e.stack, 1)->bound, 3);
    const auto n = build(op("aten::nll_loss_forward", {tensor(spec({64, 10}, DType::Float32)),
                                                       tensor(spec({64}, DType::Int64)), none(),
                                                       scalar("1"), scalar("-100")}));
    ASSERT_TRUE(n.stack) << n.why;
    EXPECT_EQ(constraint_on(*n.stack, 1)->bound, 10);
    const auto d =
        build(op("aten::embedding_dense_backward",
                 {tensor(spec({8, 128, 768}, DType::Float32)), tensor(spec({8, 128}, DType::Int64)),
                  scalar("50257"), scalar("-1"), scalar("False")}));
    ASSERT_TRUE(d.stack) << d.why;
    EXPECT_EQ(constraint_on(*d.stack, 1)->bound, 50257);
    // embedding_bag(include_last_offset=True): offsets 0, ..., indices numel.
    const auto bag =
        build(op("aten::embedding_bag",
                 {tensor(spec({100, 16}, DType::Float32)), tensor(spec({40}, DType::Int64)),
                  tensor(spec({5}, DType::Int64)), scalar("False"), scalar("0"), scalar("False"),
                  none(), scalar("True")}));
    ASSERT_TRUE(bag.stack) << bag.why;
    EXPECT_EQ(constraint_on(*bag.stack, 1)->bound, 100);
    const auto offsets = values_of(bag.stack->stack[2].toTensor());
    EXPECT_EQ(offsets.front(), 0);
    EXPECT_EQ(offsets.back(), 40);
    EXPECT_TRUE(std::is_sorted(offsets.begin(), offsets.end()));
    // repeat_interleave(repeats, output_size=30): sizes sum to 30.
    const auto r =
        build(op("aten::repeat_interleave", {tensor(spec({6}, DType::Int64)), scalar("30")}));
    ASSERT_TRUE(r.stack) << r.why;
    const auto repeats = values_of(r.stack->stack[0].toTensor());
    EXPECT_EQ(std::accumulate(repeats.begin(), repeats.end(), std::int64_t{0}), 30);
    // Integer division: no zero divisor.
    const auto f = build(op("aten::floor_divide",
                            {tensor(spec({1024}, DType::Int64)), tensor(spec({}, DType::Int64))}));
    ASSERT_TRUE(f.stack) << f.why;
    EXPECT_GE(values_of(f.stack->stack[1].toTensor()).front(), 1);
}

// embedding_bag's backward (DLRM training) indexes with the forward's bookkeeping: each index's
// bag (offset2bag) is a row of grad, indices and max mode's maximum_indices rows of the weight.
TEST(ValueRoles, EmbeddingBagBackwardsBookkeepingStaysInRange) {
    const auto b = build(op("aten::_embedding_bag_dense_backward",
                            {tensor(spec({64, 16}, DType::Float32)),
                             tensor(spec({900}, DType::Int64)), tensor(spec({900}, DType::Int64)),
                             tensor(spec({64}, DType::Int64)), tensor(spec({64, 16}, DType::Int64)),
                             scalar("1000"), scalar("False"), scalar("2"), none(), scalar("-1")}));
    ASSERT_TRUE(b.stack) << b.why;
    EXPECT_EQ(constraint_on(*b.stack, 1)->bound, 1000);
    EXPECT_EQ(constraint_on(*b.stack, 2)->bound, 64);
    EXPECT_EQ(constraint_on(*b.stack, 4)->bound, 1000);
    for (const std::int64_t bag : values_of(b.stack->stack[2].toTensor())) {
        EXPECT_GE(bag, 0);
        EXPECT_LT(bag, 64);
    }
    const auto s =
        build(op("aten::_embedding_bag_backward",
                 {tensor(spec({64, 16}, DType::Float32)), tensor(spec({900}, DType::Int64)),
                  tensor(spec({64}, DType::Int64)), tensor(spec({900}, DType::Int64)),
                  tensor(spec({64}, DType::Int64)), tensor(spec({0}, DType::Int64)), scalar("1000"),
                  scalar("False"), scalar("0"), scalar("False"), none(), scalar("-1")}));
    ASSERT_TRUE(s.stack) << s.why;
    const auto offsets = values_of(s.stack->stack[2].toTensor());
    EXPECT_EQ(offsets.front(), 0);
    EXPECT_TRUE(std::is_sorted(offsets.begin(), offsets.end()));
    EXPECT_LE(offsets.back(), 900);
    EXPECT_EQ(constraint_on(*s.stack, 3)->bound, 64);
}

TEST(ValueRoles, GroupedGemmOffsetsSplitTheRoutedRows) {
    // Mixtral's expert GEMM: 1024 routed rows x [8 experts, 1024, 7168] (a transposed view).
    const auto b = build(
        op("aten::_grouped_mm", {tensor(spec({1024, 1024}, DType::BFloat16)),
                                 tensor(spec({8, 1024, 7168}, DType::BFloat16, {7340032, 1, 1024})),
                                 tensor(spec({8}, DType::Int32)), none(), none()}));
    ASSERT_TRUE(b.stack) << b.why;
    const ValueConstraint* c = constraint_on(*b.stack, 2);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->role, ValueRole::Offsets);
    EXPECT_EQ(c->total, 1024);
    EXPECT_EQ(b.stack->stack[2].toTensor().scalar_type(), at::kInt);
    EXPECT_TRUE(c->routed);
    const auto ends = values_of(b.stack->stack[2].toTensor());
    EXPECT_EQ(check_values(*c, ends), "");
    EXPECT_TRUE(std::is_sorted(ends.begin(), ends.end()));
    EXPECT_EQ(ends.back(), 1024);
    // Ragged K (2-D x 2-D): groups of bfloat16 columns start 16-byte aligned.
    const auto k =
        build(op("aten::_grouped_mm", {tensor(spec({64, 100}, DType::BFloat16)),
                                       tensor(spec({100, 32}, DType::BFloat16, {1, 100})),
                                       tensor(spec({3}, DType::Int32)), none(), none()}));
    ASSERT_TRUE(k.stack) << k.why;
    const ValueConstraint* ragged = constraint_on(*k.stack, 2);
    EXPECT_EQ(ragged->align, 8);
    EXPECT_EQ(ragged->total, 100);
    const auto k_ends = values_of(k.stack->stack[2].toTensor());
    EXPECT_EQ(check_values(*ragged, k_ends), "");
    EXPECT_EQ(k_ends[0] % 8, 0);
    EXPECT_EQ((k_ends[1] - k_ends[0]) % 8, 0);
    EXPECT_EQ(k_ends.back(), 100);
}

TEST(ValueRoles, MaskedFillMasksSetNoElement) {
    // Mixtral's invalid-expert mask, broadcast over the routed rows: a random half would zero
    // half of the rows the expert GEMM and its SiLU read next.
    const auto b = build(
        op("aten::masked_fill_", {tensor(spec({1024, 1024}, DType::BFloat16)),
                                  tensor(spec({1024, 1024}, DType::Bool, {1, 0})), scalar("0.")}));
    ASSERT_TRUE(b.stack) << b.why;
    const ValueConstraint* c = constraint_on(*b.stack, 1);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->role, ValueRole::EmptyMask);
    const auto mask = values_of(b.stack->stack[1].toTensor());
    EXPECT_EQ(std::count(mask.begin(), mask.end(), 0), static_cast<std::ptrdiff_t>(mask.size()));
    EXPECT_NE(check_values(*c, {0, 1, 0}).find("element 1"), std::string::npos);
    // where()'s condition selects rather than overwrites: it keeps the random fill.
    const auto w = build(
        op("aten::where", {tensor(spec({64}, DType::Bool)), tensor(spec({64}, DType::Float32)),
                           tensor(spec({64}, DType::Float32))}));
    ASSERT_TRUE(w.stack) << w.why;
    EXPECT_EQ(constraint_on(*w.stack, 0), nullptr);
    const auto condition = values_of(w.stack->stack[0].toTensor());
    EXPECT_GT(std::count(condition.begin(), condition.end(), 1), 0);
}

TEST(ValueRoles, AFloatingPointDivisorIsOnes) {
    // Mixtral's routing: topk's weights divided in place by their sum. Random data near zero as
    // the divisor made quotients of 1e16, and unique mode's repeated div_ made them inf.
    const auto b = build(op("aten::div_", {tensor(spec({256, 2}, DType::BFloat16)),
                                           tensor(spec({256, 1}, DType::BFloat16))}));
    ASSERT_TRUE(b.stack) << b.why;
    const ValueConstraint* c = constraint_on(*b.stack, 1);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->role, ValueRole::Divisor);
    EXPECT_TRUE(b.stack->stack[1].toTensor().eq(1).all().item<bool>());
    EXPECT_EQ(torch_detail::check_constraints(*b.plan, *b.stack), "");
    at::Tensor self = b.stack->stack[0].toTensor();
    const at::Tensor before = self.clone();
    for (int i = 0; i < 1000; ++i) self.div_(b.stack->stack[1].toTensor());
    EXPECT_TRUE(self.equal(before)) << "a repeated in-place division moved the values";
    // The replay's check catches a divisor that is not.
    b.stack->stack[1].toTensor().fill_(0.5);
    EXPECT_NE(torch_detail::check_constraints(*b.plan, *b.stack).find("not all ones"),
              std::string::npos);
    // A scalar divisor is an argument, not a tensor: nothing to fill.
    const auto s = build(op("aten::div", {tensor(spec({16}, DType::Float32)), scalar("8.")}));
    ASSERT_TRUE(s.stack) << s.why;
    EXPECT_TRUE(s.stack->constraints.empty());
}

TEST(ValueRoles, WhatAnOpTakesTheSquareRootOfIsPositive) {
    auto expect_positive = [](const at::Tensor& t) {
        EXPECT_GE(t.min().item<double>(), torch_detail::kPositiveLow);
        EXPECT_LT(t.max().item<double>(), torch_detail::kPositiveHigh);
    };
    // An eager batch norm in inference: the kernel takes sqrt(running_var + eps) per channel.
    const auto bn = build(
        op("aten::_native_batch_norm_legit_no_training",
           {tensor(spec({16, 64, 8, 8}, DType::BFloat16)), tensor(spec({64}, DType::BFloat16)),
            tensor(spec({64}, DType::BFloat16)), tensor(spec({64}, DType::BFloat16)),
            tensor(spec({64}, DType::BFloat16)), scalar("0.1"), scalar("1e-05")}));
    if (bn.plan) {  // libtorch 1.13 has no such op: the schema rule is tested on native_batch_norm
        ASSERT_TRUE(bn.stack) << bn.why;
        const ValueConstraint* c = constraint_on(*bn.stack, 4);
        ASSERT_NE(c, nullptr);
        EXPECT_EQ(c->role, ValueRole::Positive);
        expect_positive(bn.stack->stack[4].toTensor().to(at::kFloat));
        EXPECT_EQ(constraint_on(*bn.stack, 3), nullptr) << "the running mean stays signed data";
    }
    const auto native = build(
        op("aten::native_batch_norm",
           {tensor(spec({16, 64, 8, 8}, DType::Float32)), tensor(spec({64}, DType::Float32)),
            tensor(spec({64}, DType::Float32)), tensor(spec({64}, DType::Float32)),
            tensor(spec({64}, DType::Float32)), scalar("False"), scalar("0.1"), scalar("1e-05")}));
    ASSERT_TRUE(native.stack) << native.why;
    const ValueConstraint* running_var = constraint_on(*native.stack, 4);
    ASSERT_NE(running_var, nullptr);
    EXPECT_EQ(running_var->role, ValueRole::Positive);
    expect_positive(native.stack->stack[4].toTensor());
    EXPECT_LT(native.stack->stack[0].toTensor().min().item<double>(), 0)
        << "the input stays signed";
    EXPECT_EQ(torch_detail::check_constraints(*native.plan, *native.stack), "");
    // Adam's second moments, a tensor list.
    const auto sqrt_list =
        build(op("aten::_foreach_sqrt",
                 {tensors({spec({32}, DType::Float32), spec({4, 8}, DType::Float32)})}));
    ASSERT_TRUE(sqrt_list.stack) << sqrt_list.why;
    for (std::size_t k = 0; k < 2; ++k) {
        const ValueConstraint* c = constraint_on(*sqrt_list.stack, 0, k);
        ASSERT_NE(c, nullptr) << k;
        EXPECT_EQ(c->role, ValueRole::Positive);
        expect_positive(sqrt_list.stack->stack[0].toList().get(k).toTensor());
    }
    // The replay's check catches a value that is not.
    native.stack->stack[4].toTensor().fill_(-1.0);
    EXPECT_NE(torch_detail::check_constraints(*native.plan, *native.stack).find("not positive"),
              std::string::npos);
    // An integer tensor's square root: its values keep their draw (no role).
    const auto integer = build(op("aten::sqrt", {tensor(spec({16}, DType::Int64))}));
    ASSERT_TRUE(integer.stack) << integer.why;
    EXPECT_TRUE(integer.stack->constraints.empty());
}

TEST(ValueRoles, AnIndexWithoutAKnownRangeSkipsTheOp) {
    // More index tensors than self has dims: nothing says what the last one indexes.
    TorchOpRunner runner(TorchDevice{TorchDevice::Kind::Cpu, 0}, 1, false);
    Prepared p = runner.prepare(
        op("aten::index", {tensor(spec({6}, DType::Float32)),
                           tensors({spec({4}, DType::Int64), spec({4}, DType::Int64)})}));
    EXPECT_EQ(p.disposition, Disposition::Skipped);
    EXPECT_NE(p.reason.find("range of argument 'indices' is unknown"), std::string::npos)
        << p.reason;
}

// ---- every index-consuming op of every bundled trace
// ----------------------------------------------

// What this test expects of an integer input, computed from the recipe's recorded shapes and
// values alone (not from value_roles): PyTorch's own rules for the ops the bundled traces hold.
struct Expected {
    std::size_t arg = 0, item = 0;
    ValueRole role = ValueRole::Index;
    std::int64_t bound = 0;  // Index: exclusive; Offsets: the total the last group ends at
};

bool is_int(const TensorSpec& t) {
    return t.dtype == DType::Int64 || t.dtype == DType::Int32;
}

bool is_mask(const TensorSpec& t) {
    return t.dtype == DType::Bool;
}

std::vector<Expected> expected_ranges(const AtenRecipe& r) {
    auto dims = [&](std::size_t i) -> const std::vector<std::int64_t>& {
        static const std::vector<std::int64_t> empty;
        return i < r.args.size() && !r.args[i].tensors.empty() ? r.args[i].tensors[0].dims : empty;
    };
    auto value = [&](std::size_t i) {
        return i < r.args.size() && !r.args[i].value.empty() ? std::stoll(r.args[i].value) : 0;
    };
    auto int_at = [&](std::size_t i) {
        return i < r.args.size() && r.args[i].kind == ArgKind::Tensor &&
               is_int(r.args[i].tensors[0]);
    };
    auto mask_at = [&](std::size_t i) {
        return i < r.args.size() && r.args[i].kind == ArgKind::Tensor &&
               is_mask(r.args[i].tensors[0]);
    };
    auto size = [](const std::vector<std::int64_t>& d, std::int64_t dim) {
        if (d.empty()) return std::int64_t{1};
        return d[static_cast<std::size_t>(dim < 0 ? dim + static_cast<std::int64_t>(d.size())
                                                  : dim)];
    };
    const std::string& o = r.op;
    std::vector<Expected> out;
    if (o == "aten::embedding" && int_at(1)) out.push_back({1, 0, ValueRole::Index, dims(0).at(0)});
    if ((o == "aten::index_select" || o == "aten::gather" || o == "aten::index_copy_" ||
         o == "aten::index_add_" || o == "aten::scatter_add_" || o == "aten::scatter_") &&
        int_at(2))
        out.push_back({2, 0, ValueRole::Index, size(dims(0), value(1))});
    if (o == "aten::gather_backward" && int_at(3))
        out.push_back({3, 0, ValueRole::Index, size(dims(1), value(2))});
    if ((o == "aten::index" || o == "aten::_index_put_impl_" || o == "aten::index_put_") &&
        r.args.size() > 1 && r.args[1].kind == ArgKind::TensorList)
        for (std::size_t k = 0; k < r.args[1].tensors.size(); ++k) {
            const std::size_t item = r.args[1].leading_nones + k;  // x[:, i]: [None, i]
            out.push_back({1, item, ValueRole::Index, dims(0).at(item)});
        }
    if ((o == "aten::embedding_bag" || o == "aten::_embedding_bag") && int_at(1))
        out.push_back({1, 0, ValueRole::Index, dims(0).at(0)});
    if (o == "aten::_embedding_bag_backward" && int_at(3)) {
        out.push_back({1, 0, ValueRole::Index, value(6)});
        out.push_back({3, 0, ValueRole::Index, dims(0).at(0)});
    }
    if (o == "aten::_embedding_bag_dense_backward" && int_at(2)) {
        out.push_back({1, 0, ValueRole::Index, value(5)});
        out.push_back({2, 0, ValueRole::Index, dims(0).at(0)});
    }
    if ((o == "aten::nll_loss" || o == "aten::nll_loss_forward" || o == "aten::nll_loss_nd" ||
         o == "aten::cross_entropy_loss") &&
        int_at(1))
        out.push_back({1, 0, ValueRole::Index, size(dims(0), dims(0).size() >= 2 ? 1 : 0)});
    if (o == "aten::nll_loss_backward" && int_at(2))
        out.push_back({2, 0, ValueRole::Index, size(dims(1), dims(1).size() >= 2 ? 1 : 0)});
    if ((o == "aten::embedding_dense_backward" || o == "aten::embedding_backward") && int_at(1))
        out.push_back({1, 0, ValueRole::Index, value(2)});
    if (o == "aten::max_pool2d_with_indices_backward" && int_at(7))
        out.push_back({7, 0, ValueRole::Index, size(dims(1), -1) * size(dims(1), -2)});
    if (o == "aten::_grouped_mm" && int_at(2) && dims(0).size() == 2 && dims(1).size() == 3)
        out.push_back({2, 0, ValueRole::Offsets, dims(0)[0]});
    if ((o == "aten::floor_divide" || o == "aten::remainder") && int_at(1))
        out.push_back({1, 0, ValueRole::Divisor, 0});
    if ((o == "aten::masked_fill" || o == "aten::masked_fill_") && mask_at(1))
        out.push_back({1, 0, ValueRole::EmptyMask, 0});
    return out;
}

bool has_integer_tensor(const AtenRecipe& r) {
    for (const auto& a : r.args)
        for (const auto& t : a.tensors)
            if (is_int(t) || is_mask(t) || (a.kind == ArgKind::TensorList && a.type == "Tensor?[]"))
                return true;
    return false;
}

// The bytes a recipe's tensors take once built (an unknown dtype as 4 bytes).
std::int64_t recipe_bytes(const AtenRecipe& r) {
    std::int64_t bytes = 0;
    for (const auto& a : r.args)
        for (const auto& t : a.tensors)
            bytes += std::max<std::int64_t>(t.numel(), 1) *
                     (t.dtype == DType::Unknown ? 4 : replay::element_size(t.dtype));
    return bytes;
}
// Larger recipes (the GCN's 800,000-edge gathers and sums, vocabulary-sized embeddings:
// gigabytes on the cpu backend) are left to the GPU runs: built beside the other tests on CI's
// 24 GiB, they ran it out of memory (7.9 GiB for this test alone; 3.9 GiB without them). Every
// op the list below names is still checked on its smaller recipes.
constexpr std::int64_t kLargestCheckedRecipe = std::int64_t{256} << 20;

AnalysisOptions options_for(const std::string& trace, const std::string& execution_trace) {
    AnalysisOptions options;
    options.trace_path = trace;
    options.execution_trace_path = execution_trace;
    return options;
}

// Every Kineto trace under traces/ (tar members extracted), with its Execution Trace when it has
// one.
std::vector<AnalysisOptions> bundled_traces(const std::filesystem::path& scratch) {
    namespace fs = std::filesystem;
    std::vector<AnalysisOptions> traces;
    for (const auto& entry : fs::recursive_directory_iterator(testing::trace_path(""))) {
        const std::string path = entry.path().string();
        const std::string name = entry.path().filename().string();
        if (!entry.is_regular_file() || name.find(".et.") != std::string::npos) continue;
        if (name.ends_with(".tar.gz") && name.find("inductor") == std::string::npos) {
            const fs::path dir = scratch / entry.path().stem();
            fs::create_directories(dir);
            const std::string command = "tar -xzf '" + path + "' -C '" + dir.string() + "'";
            EXPECT_EQ(std::system(command.c_str()), 0) << command;
            for (const auto& member : fs::recursive_directory_iterator(dir))
                if (member.is_regular_file() &&
                    member.path().string().find(".json") != std::string::npos)
                    traces.push_back(options_for(member.path().string(), ""));
            continue;
        }
        if (!name.ends_with(".json.gz") || name.starts_with("linear_et")) continue;
        traces.push_back(options_for(path, ""));
        const std::string et = path.substr(0, path.size() - 8) + ".et.json.gz";
        if (fs::exists(et)) traces.push_back(options_for(path, et));
    }
    return traces;
}

TEST(BundledTraces, EveryIndexConsumingOpReplaysWithInRangeInputs) {
    const std::filesystem::path scratch =
        std::filesystem::temp_directory_path() / ("replay_test_" + std::to_string(::getpid()));
    TorchOpRunner runner(TorchDevice{TorchDevice::Kind::Cpu, 0}, 11, false);
    std::set<std::string> seen_keys;
    std::map<std::string, int> checked;  // op -> recipes whose inputs were checked
    int too_large = 0;                   // recipes over kLargestCheckedRecipe
    for (const AnalysisOptions& options : bundled_traces(scratch)) {
        SCOPED_TRACE(options.trace_path + (options.execution_trace_path.empty() ? "" : " + ET"));
        const auto analysis = analyze(options);
        for (const UniqueKernel& k : analysis->kernels) {
            const auto* recipe = std::get_if<AtenRecipe>(&k.recipe.detail);
            if (recipe == nullptr || !has_integer_tensor(*recipe)) continue;
            if (!seen_keys.insert(k.recipe.key()).second) continue;
            if (recipe_bytes(*recipe) > kLargestCheckedRecipe) {
                ++too_large;
                continue;
            }
            SCOPED_TRACE(recipe->op);
            const Built b = build(*recipe);
            const std::vector<Expected> expected = expected_ranges(*recipe);
            if (!b.plan) {  // not in this libtorch: skipped, with the op named
                EXPECT_NE(b.why.find(recipe->op), std::string::npos) << b.why;
                continue;
            }
            ASSERT_TRUE(b.stack.has_value()) << b.why;
            // The replay's own check, then this test's ranges on the same tensors.
            EXPECT_EQ(torch_detail::check_constraints(*b.plan, *b.stack), "");
            for (const Expected& e : expected) {
                const c10::IValue& v = b.stack->stack.at(e.arg);
                const at::Tensor t =
                    v.isTensor() ? v.toTensor() : v.toList().get(e.item).toTensor();
                const auto values = values_of(t);
                ASSERT_FALSE(values.empty());
                EXPECT_NE(constraint_on(*b.stack, e.arg, e.item), nullptr)
                    << "argument " << e.arg << " has no value role";
                switch (e.role) {
                    case ValueRole::Index:
                        EXPECT_GE(*std::min_element(values.begin(), values.end()), 0);
                        EXPECT_LT(*std::max_element(values.begin(), values.end()), e.bound);
                        break;
                    case ValueRole::Offsets:
                        EXPECT_TRUE(std::is_sorted(values.begin(), values.end()));
                        EXPECT_GE(values.front(), 0);
                        EXPECT_EQ(values.back(), e.bound);
                        break;
                    case ValueRole::Divisor:
                        EXPECT_GE(*std::min_element(values.begin(), values.end()), 1);
                        break;
                    case ValueRole::EmptyMask:
                        EXPECT_EQ(*std::max_element(values.begin(), values.end()), 0);
                        break;
                    case ValueRole::Counts:
                    case ValueRole::Positive:  // floating point: no integer tensor has it
                        break;
                }
            }
            if (expected.empty()) continue;
            ++checked[recipe->op];
            // And the op replays on the cpu backend with them.
            const Prepared p = runner.prepare(*recipe);
            EXPECT_EQ(p.disposition, Disposition::Ready) << p.reason;
            if (p.disposition == Disposition::Ready) {
                EXPECT_EQ(runner.run(p.handle), "");
            }
        }
    }
    std::filesystem::remove_all(scratch);
    // 22 of the bundled traces' recipes are that large: a new trace's should not all be.
    EXPECT_LE(too_large, 24) << "recipes left out as too large for the cpu backend";
    // The ops the bundled traces are known to hold were all found and checked.
    for (const char* op :
         {"aten::index", "aten::_index_put_impl_", "aten::_grouped_mm", "aten::gather",
          "aten::index_select", "aten::index_copy_", "aten::nll_loss_forward",
          "aten::embedding_dense_backward", "aten::floor_divide",
          "aten::max_pool2d_with_indices_backward", "aten::scatter_add_", "aten::index_add_",
          "aten::masked_fill_", "aten::_embedding_bag", "aten::_embedding_bag_dense_backward"})
        EXPECT_GT(checked[op], 0) << op << " was not found in the bundled traces";
}

// ---- what the replayed ops of the Llama decode trace get ------------------------------------

std::unique_ptr<Analysis> llama_decode() {
    AnalysisOptions options;
    options.trace_path = testing::trace_path("h200/llama_decode.json.gz");
    return analyze(options);
}

// rotate_half's aten::cat gets the bf16 halves the recording copied (its kernel:
// CatArrayBatchedCopy<OpaqueType<2u>>), not float32 ones (OpaqueType<4u>).
TEST(ReplayedInputs, LlamaCatConcatenatesBf16Tensors) {
    const auto analysis = llama_decode();
    std::size_t cats = 0;
    for (const UniqueKernel& k : analysis->kernels) {
        const auto* recipe = std::get_if<AtenRecipe>(&k.recipe.detail);
        if (recipe == nullptr || recipe->op != "aten::cat" ||
            k.name.find("OpaqueType<2u>") == std::string::npos)
            continue;
        const Built b = build(*recipe);
        ASSERT_TRUE(b.stack.has_value()) << b.why;
        const auto list = b.stack->stack.at(0).toList();
        ASSERT_EQ(list.size(), 2u);
        for (std::size_t i = 0; i < list.size(); ++i)
            EXPECT_EQ(list.get(i).toTensor().scalar_type(), at::kBFloat16);
        ++cats;
    }
    EXPECT_EQ(cats, 2u);
}

// A CUDA replay wraps a 0-dim operand as a CPU scalar exactly where the recorded kernel folded
// one into its functor (CUDAFunctorOnSelf_add) and keeps it a device tensor where the kernel
// read two tensors (CUDAFunctor_add). The cpu backend cannot show the difference (every tensor
// is a host tensor there), so the decision is checked on the recipes themselves; without the
// recipe's placement the guess swaps two of the three long adds, as the H200 replay showed.
TEST(ReplayedInputs, LlamaAddsWrapTheScalarTheirKernelFolded) {
    const auto analysis = llama_decode();
    std::size_t adds = 0, guessed_right = 0;
    for (const UniqueKernel& k : analysis->kernels) {
        const auto* recipe = std::get_if<AtenRecipe>(&k.recipe.detail);
        if (recipe == nullptr || !recipe->op.starts_with("aten::add") ||
            k.name.find("_add<long>") == std::string::npos)
            continue;
        SCOPED_TRACE(recipe->op + " " + k.name);
        const Built b = build(*recipe);
        ASSERT_TRUE(b.plan.has_value()) << b.why;
        const AtenArgument& other = recipe->args.at(1);
        const bool beside_shaped = !recipe->args.at(0).tensors.at(0).dims.empty();
        const bool host = torch_detail::host_scalar_operand(&other, "other",
                                                            other.tensors.at(0), beside_shaped);
        EXPECT_EQ(host, k.name.find("CUDAFunctorOnSelf_add") != std::string::npos);
        AtenArgument unplaced = other;
        unplaced.placement = Placement::Unknown;
        guessed_right += torch_detail::host_scalar_operand(&unplaced, "other",
                                                           other.tensors.at(0), beside_shaped) ==
                         host;
        ++adds;
    }
    EXPECT_EQ(adds, 3u);
    EXPECT_EQ(guessed_right, 1u);
}

}  // namespace
}  // namespace replay
