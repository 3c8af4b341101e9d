// TensorLists that Kineto records as [] (engine/tensor_lists.cpp): the optimizer's foreach
// lists recovered from the parameters or the gradients, a stack's list from its unsqueezes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dataflow_builder.h"
#include "replay/analysis.h"
#include "replay/dataflow.h"
#include "replay/kineto_parser.h"
#include "replay/tensor_lists.h"
#include "test_support.h"

namespace {

using namespace dataflow_testing;

TEST(TensorLists, MultiTensorBlocksCountChunks) {
    std::vector<replay::ParameterShape> tensors{{{768}}, {{768, 2304}}, {{65536}}, {{65537}}};
    EXPECT_EQ(replay::multi_tensor_blocks(tensors), 1 + 27 + 1 + 2);
}

TEST(TensorLists, RecoveredFromParametersWhenTheBlocksMatch) {
    TempFile file("foreach.json", optimizer_trace(2));
    replay::AnalysisOptions options;
    options.trace_path = file.path();
    const auto a = replay::analyze(options);
    ASSERT_EQ(a->tensor_lists.ops.size(), 1u);
    const replay::OpArgument& list = input(a->trace(), a->tensor_lists.ops[0], 0);
    EXPECT_EQ(list.list_ranks.size(), 2u);
    EXPECT_EQ(list.dims, (std::vector<std::int64_t>{8, 4, 8}));
    ASSERT_EQ(a->recipes.size(), 2u);
    EXPECT_TRUE(a->recipes.decision(1).replayable()) << a->recipes.decision(1).reason;
    EXPECT_NE(a->recipes.decision(1).reason.find("tensor lists recovered"), std::string::npos);
}

TEST(TensorLists, LeftAloneWhenTheBlocksDisagree) {
    TempFile file("foreach_bad.json", optimizer_trace(5));
    replay::AnalysisOptions options;
    options.trace_path = file.path();
    const auto a = replay::analyze(options);
    EXPECT_TRUE(a->tensor_lists.ops.empty());
    EXPECT_EQ(a->tensor_lists.unrecovered, 1u);
    ASSERT_GT(a->recipes.size(), 1u);
    EXPECT_FALSE(a->recipes.decision(1).replayable());
}

// torch.stack of a list Kineto recorded as []: the stack's list is its unsqueezes' inputs, and
// the cat inside it takes their outputs (PyTorch's unsqueeze strides). A hostile trace's sizes
// saturate instead of overflowing (the sanitizer run covers this suite).
TEST(TensorLists, AStacksListComesFromItsUnsqueezes) {
    for (const bool hostile : {false, true}) {
        // 2^39 x 2^39: unsqueezed in front, the new stride is their product, 2^78.
        const std::string dims = hostile ? "[[549755813888, 549755813888], []]" : "[[2, 3], []]";
        const std::string dim = hostile ? "0" : "1";
        TraceBuilder b;
        b.op("aten::stack", 0, 100, "[[], []]", "[\"TensorList\", \"Scalar\"]", "[\"\", \"1\"]");
        for (int k = 0; k < 3; ++k)
            b.op("aten::unsqueeze", 10 + 10 * k, 2, dims, "[\"float\", \"Scalar\"]",
                 "[\"\", \"" + dim + "\"]");
        b.op("aten::cat", 50, 10, "[[], []]", "[\"TensorList\", \"Scalar\"]", "[\"\", \"1\"]");
        TempFile file("stack.json", b.json());
        replay::AnalysisOptions options;
        options.trace_path = file.path();
        const auto a = replay::analyze(options);
        ASSERT_EQ(a->tensor_lists.ops.size(), 2u) << hostile;
        const replay::OpArgument& stacked = input(a->trace(), 0, 0);
        const replay::OpArgument& cat = input(a->trace(), 4, 0);
        EXPECT_EQ(stacked.list_ranks, (std::vector<std::uint8_t>{2, 2, 2}));
        EXPECT_EQ(cat.list_ranks, (std::vector<std::uint8_t>{3, 3, 3}));
        if (hostile) {
            for (std::int64_t s : cat.strides) EXPECT_GE(s, 0);
            continue;
        }
        EXPECT_EQ(stacked.dims, (std::vector<std::int64_t>{2, 3, 2, 3, 2, 3}));
        EXPECT_EQ(cat.dims, (std::vector<std::int64_t>{2, 1, 3, 2, 1, 3, 2, 1, 3}));
        EXPECT_EQ(cat.strides, (std::vector<std::int64_t>{3, 3, 1, 3, 3, 1, 3, 3, 1}));
        EXPECT_EQ(a->trace().names.view(cat.element_type), "float");
    }
}

// The backward pass's AccumulateGrad ops (on the autograd engine's thread) with these gradient
// shapes, then one _foreach op per entry of `grids` launching one multi_tensor_apply kernel of
// that many blocks, after a linear layer whose weight and bias the parameter inference sees.
std::string gradients_then_foreach(const std::vector<std::string>& gradients,
                                   const std::vector<int>& grids) {
    TraceBuilder b;
    linear_layer(b, 0);
    b.kernel("sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3", 11, 1);
    b.on_thread(2);
    double at = 40;
    for (const auto& dims : gradients) {
        b.op("torch::autograd::AccumulateGrad", at, 2, "[" + dims + "]", "[\"float\"]");
        at += 3;
    }
    b.on_thread(1);
    for (int grid : grids) {
        b.op("aten::_foreach_mul_", at, 20, "[[], []]", "[\"TensorList\", \"Scalar\"]",
             "[\"\", \"0.9\"]")
            .kernel("void at::native::multi_tensor_apply_kernel<float>()", at + 1, grid);
        at += 25;
    }
    return b.json();
}

std::unique_ptr<replay::Analysis> analyzed(const std::string& name, const std::string& json) {
    TempFile file(name, json);
    replay::AnalysisOptions options;
    options.trace_path = file.path();
    return replay::analyze(options);
}

// A list element the parameter inference cannot see (a norm weight used through aten::mul, a
// scalar parameter) is in the gradients: the list is the backward pass's, last gradient first.
TEST(TensorLists, RecoveredFromTheGradientsOfTheBackwardPass) {
    const auto a =
        analyzed("grads.json", gradients_then_foreach({"[]", "[8]", "[8, 4]", "[70000]"}, {5}));
    ASSERT_EQ(a->tensor_lists.ops.size(), 1u);
    const replay::OpArgument& list = input(a->trace(), a->tensor_lists.ops[0], 0);
    EXPECT_EQ(list.dims, (std::vector<std::int64_t>{70000, 8, 4, 8}));
    EXPECT_EQ(list.list_ranks, (std::vector<std::uint8_t>{1, 2, 1, 0}));
    EXPECT_EQ(a->trace().names.view(list.element_type), "float");
    EXPECT_NE(a->tensor_lists.how[0].find("4 gradients the backward pass's AccumulateGrad"),
              std::string::npos)
        << a->tensor_lists.how[0];
}

// Two micro-batches' passes before one step: each gradient twice, the list is one pass's.
TEST(TensorLists, AccumulatedMicroBatchesGiveOnePassesList) {
    const auto a =
        analyzed("micro.json", gradients_then_foreach({"[8]", "[70000]", "[8]", "[70000]"}, {3}));
    ASSERT_EQ(a->tensor_lists.ops.size(), 1u);
    EXPECT_EQ(input(a->trace(), a->tensor_lists.ops[0], 0).dims,
              (std::vector<std::int64_t>{70000, 8}));
    EXPECT_NE(a->tensor_lists.how[0].find("one of 2 equal parts"), std::string::npos);
}

// Weight decay on the matrices only (two parameter groups, one _foreach op each).
TEST(TensorLists, ParameterGroupsByRankAreTakenApart) {
    const auto a =
        analyzed("groups.json", gradients_then_foreach({"[70000]", "[300, 300]", "[8]"}, {2, 3}));
    ASSERT_EQ(a->tensor_lists.ops.size(), 2u);
    std::vector<std::vector<std::int64_t>> lists;
    for (auto op : a->tensor_lists.ops) lists.push_back(input(a->trace(), op, 0).dims);
    std::sort(lists.begin(), lists.end());
    EXPECT_EQ(lists, (std::vector<std::vector<std::int64_t>>{{8, 70000}, {300, 300}}));
}

// Gradients that fit no launch leave the parameter inference's list as before ([8, 4] weight and
// [8] bias: 2 blocks), and where neither fits the op stays unrecovered.
TEST(TensorLists, GradientsThatDoNotFitLeaveTheParameterList) {
    const auto a =
        analyzed("nofit.json", gradients_then_foreach({"[70000]", "[70000]", "[9]"}, {2}));
    ASSERT_EQ(a->tensor_lists.ops.size(), 1u);
    EXPECT_EQ(input(a->trace(), a->tensor_lists.ops[0], 0).dims,
              (std::vector<std::int64_t>{8, 4, 8}));
    EXPECT_NE(a->tensor_lists.how[0].find("weight-like inputs"), std::string::npos);
    const auto none = analyzed("nofit2.json", gradients_then_foreach({"[70000]"}, {7}));
    EXPECT_TRUE(none->tensor_lists.ops.empty());
    EXPECT_EQ(none->tensor_lists.unrecovered, 1u);
}

// Captures of three architectures' training steps (AdamW, foreach): every _foreach op's list is
// the backward pass's gradients, and all kernel time has a recipe. T5's norm weights (used
// through aten::mul) and ResNet's batch-norm statistics kept the parameter inference's list from
// fitting: 101 and 373 parameters against 131 and 161.
TEST(TensorLists, TrainingCapturesRecoverEveryListFromTheirGradients) {
    for (const char* path : {"traces/h200/gpt2_train.json.gz", "traces/h200/t5_train.json.gz",
                             "traces/h200/resnet_train.json.gz"}) {
        SCOPED_TRACE(path);
        replay::AnalysisOptions options;
        options.trace_path = source_path(path);
        const auto a = replay::analyze(options);
        EXPECT_EQ(a->tensor_lists.ops.size(), 8u);
        EXPECT_EQ(a->tensor_lists.unrecovered, 0u);
        for (const auto& how : a->tensor_lists.how)
            EXPECT_NE(how.find("AccumulateGrad"), std::string::npos) << how;
        EXPECT_DOUBLE_EQ(replay::kernel_time_coverage(a->graph, a->recipes), 1.0);
    }
}

}  // namespace
