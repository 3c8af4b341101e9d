// The dataflow's output shapes (engine/dataflow_rules.cpp): an op's output has the dims its
// name and recorded inputs give (convolutions, pools, cats, upsampling, embeddings, losses,
// grouped GEMMs, RNNs), so that the op that reads it next finds it; and hostile arguments give
// none.
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

// embedding_bag's output is one row per bag, not its table's dims: taken as the table's, it made
// the next table of the same shape that output (DLRM's eight tables: seven read warm in the
// replay, 12-19% fast, where the recording read them from memory).
TEST(Dataflow, EmbeddingBagsOutputOneRowPerBag) {
    TraceBuilder b;
    const std::string types =
        "[\"float\", \"long int\", \"long int\", \"Scalar\", \"Scalar\", \"Scalar\", \"\", "
        "\"Scalar\", \"Scalar\"]";
    const std::string values =
        "[\"\", \"\", \"\", \"False\", \"0\", \"False\", \"\", \"False\", \"-1\"]";
    b.op("aten::_embedding_bag", 0, 5, "[[1000, 16], [300], [64], [], [], [], [], [], []]", types,
         values);
    b.op("aten::_embedding_bag", 10, 5, "[[1000, 16], [310], [64], [], [], [], [], [], []]", types,
         values);
    b.op("aten::relu", 20, 2, "[[64, 16]]", "[\"float\"]");
    replay::Trace t = inferred(b);
    EXPECT_NE(storage(t, 1, 0), output(t, 0));  // the second table is not the first's output
    EXPECT_NE(storage(t, 1, 0), storage(t, 0, 0));
    EXPECT_EQ(storage(t, 2, 0), output(t, 1));  // relu reads the second bag's [64, 16]
    const auto origins = replay::input_origins(t);
    EXPECT_EQ(origins[1][0], InputOrigin::Persistent);
    EXPECT_EQ(origins[2][0], InputOrigin::Activation);
}

// A loss is a scalar (or one per target without reduction), gather's output has its index's
// dims: the elementwise rule gave them their first input's, so a later op of those dims read
// the loss (cross_entropy's [N, vocab] logits the next step's).
TEST(Dataflow, LossesAndGathersHaveTheirOwnOutputShapes) {
    TraceBuilder b;
    b.op("aten::gather", 0, 2, "[[8, 100], [], [8, 4], []]",
         "[\"float\", \"Scalar\", \"long int\", \"Scalar\"]", "[\"\", \"1\", \"\", \"False\"]");
    b.op("aten::nll_loss_nd", 10, 2, "[[8, 100], [8], [], [], []]",
         "[\"float\", \"long int\", \"\", \"Scalar\", \"Scalar\"]",
         "[\"\", \"\", \"\", \"1\", \"-100\"]");
    b.op("aten::relu", 20, 2, "[[8, 4]]", "[\"float\"]");
    b.op("aten::mul", 30, 2, "[[], []]", "[\"float\", \"Scalar\"]", "[\"\", \"2\"]");
    b.op("aten::relu", 40, 2, "[[8, 100]]", "[\"float\"]");
    replay::Trace t = inferred(b);
    EXPECT_EQ(storage(t, 2, 0), output(t, 0));  // [8, 4]: the gather's output
    EXPECT_EQ(storage(t, 3, 0), output(t, 1));  // the scalar loss
    EXPECT_NE(storage(t, 4, 0), output(t, 1));  // [8, 100] is not the loss
    EXPECT_NE(storage(t, 4, 0), output(t, 0));
}

// A UNet's decoder: upsample, then cat with the skip connection, then a group norm. Neither
// upsample nor cat had an output rule (cat's first input is a list: none at all; upsample took
// its input's dims), so the group norm read "first touch" and replayed 1.65x slow in unique mode
// where the recording read the cat's output from L2 (tests/gpu/VALIDATION.md, thirtieth session).
TEST(Dataflow, CatsStacksUpsamplesAndFlattensHaveTheirOwnOutputShapes) {
    TraceBuilder b;
    b.op("aten::relu", 0, 2, "[[4, 256, 32, 32]]", "[\"c10::Half\"]");
    b.op("aten::upsample_nearest2d", 10, 2, "[[4, 256, 32, 32], [], []]",
         "[\"c10::Half\", \"\", \"ScalarList\"]", "[\"\", \"\", \"[2., 2.]\"]");
    b.op("aten::relu", 20, 2, "[[4, 256, 64, 64]]", "[\"c10::Half\"]");
    b.op("aten::cat", 30, 2, "[[[4, 256, 64, 64], [4, 128, 64, 64]], []]",
         "[\"TensorList\", \"Scalar\"]", "[\"\", \"1\"]");
    b.op("aten::native_group_norm", 40, 2, "[[4, 384, 64, 64], [384], [384], [], [], [], [], []]",
         "[\"c10::Half\", \"c10::Half\", \"c10::Half\", \"Scalar\", \"Scalar\", \"Scalar\", "
         "\"Scalar\", \"Scalar\"]");
    b.op("aten::stack", 50, 2, "[[[4, 64], [4, 64], [4, 64]], []]", "[\"TensorList\", \"Scalar\"]",
         "[\"\", \"-1\"]");
    b.op("aten::flatten", 60, 2, "[[4, 64, 3], [], []]", "[\"float\", \"Scalar\", \"Scalar\"]",
         "[\"\", \"1\", \"-1\"]");
    b.op("aten::relu", 70, 2, "[[4, 192]]", "[\"float\"]");
    // An upsample to a given size ([4, 384, 64, 64] -> 96 x 80), a cross-attention.
    b.op("aten::upsample_bilinear2d", 80, 2, "[[4, 384, 64, 64], [], [], [], []]",
         "[\"c10::Half\", \"ScalarList\", \"Scalar\", \"\", \"\"]",
         "[\"\", \"[96, 80]\", \"False\", \"\", \"\"]");
    b.op("aten::relu", 90, 2, "[[4, 384, 96, 80]]", "[\"c10::Half\"]");
    b.op("aten::scaled_dot_product_attention", 100, 2,
         "[[2, 8, 128, 64], [2, 8, 77, 64], [2, 8, 77, 32], [], [], [], [], []]",
         "[\"c10::Half\", \"c10::Half\", \"c10::Half\", \"\", \"Scalar\", \"Scalar\", \"\", "
         "\"Scalar\"]");
    b.op("aten::relu", 110, 2, "[[2, 8, 128, 32]]", "[\"c10::Half\"]");
    replay::Trace t = inferred(b);
    EXPECT_EQ(storage(t, 4, 0), output(t, 3));    // the group norm reads the cat's output
    EXPECT_EQ(storage(t, 7, 0), output(t, 6));    // [4, 64, 3] flattened from the stack's
    EXPECT_EQ(storage(t, 9, 0), output(t, 8));    // the upsample to [96, 80]
    EXPECT_EQ(storage(t, 11, 0), output(t, 10));  // attention: query's dims, value's width
    EXPECT_EQ(storage(t, 2, 0), output(t, 1));    // the upsample's: twice its input's lengths
}

// A MoE's grouped GEMM gives the routed rows times each expert's width (the elementwise rule had
// broadcast [rows, k] with [experts, k, n]: [8, 1024, 1024]); aten::index with its list
// recorded as [] (Kineto's usual record) gives no output rather than self's dims, which a later
// read of that size would take for it.
TEST(Dataflow, GroupedGemmsHaveTheirOutputShapeAndAnUnseenIndexNone) {
    TraceBuilder b;
    b.op("aten::_grouped_mm", 0, 2, "[[1024, 1024], [8, 1024, 7168], [8], [], []]",
         "[\"c10::BFloat16\", \"c10::BFloat16\", \"int\", \"\", \"\"]");
    b.op("aten::silu", 10, 2, "[[1024, 7168]]", "[\"c10::BFloat16\"]");
    b.op("aten::relu", 20, 2, "[[512, 1024]]", "[\"c10::BFloat16\"]");
    b.op("aten::index", 30, 2, "[[512, 1024], []]", "[\"c10::BFloat16\", \"\"]");
    b.op("aten::relu", 40, 2, "[[512, 1024]]", "[\"c10::BFloat16\"]");
    replay::Trace t = inferred(b);
    EXPECT_EQ(storage(t, 1, 0), output(t, 0));  // silu reads the grouped GEMM's [1024, 7168]
    // The second relu reads the first relu's output, not the index's (which has none).
    EXPECT_NE(storage(t, 4, 0), t.storages.output(3, 0).storage);
    EXPECT_EQ(storage(t, 4, 0), output(t, 2));
}

// cuDNN's RNN: the input's layout with the hidden size times the directions (an LSTM of 512
// from 1024 features, bidirectional: 1024 wide; the elementwise rule kept the input's 1024 only
// when the sizes happened to agree).
TEST(Dataflow, CudnnRnnsOutputTheirHiddenWidth) {
    TraceBuilder b;
    b.op("aten::_cudnn_rnn", 0, 2,
         "[[32, 128, 256], [[2048, 256], [2048, 512], [2048], [2048]], [], [], [2, 32, 512], [2, "
         "32, 512], [], [], [], [], [], [], [], [], [], []]",
         "[\"float\", \"TensorList\", \"Scalar\", \"\", \"float\", \"float\", \"Scalar\", "
         "\"Scalar\", \"Scalar\", \"Scalar\", \"Scalar\", \"Scalar\", \"Scalar\", \"Scalar\", "
         "\"ScalarList\", \"\"]",
         "[\"\", \"\", \"4\", \"\", \"\", \"\", \"2\", \"512\", \"0\", \"1\", \"True\", "
         "\"0.\", \"True\", \"True\", \"[]\", \"\"]");
    b.op("aten::relu", 10, 2, "[[32, 128, 1024]]", "[\"float\"]");
    replay::Trace t = inferred(b);
    EXPECT_EQ(storage(t, 1, 0), output(t, 0));
}

// aten::conv2d(input, weight, bias, stride, padding, dilation, groups)'s recorded types.
const std::string kConv2dTypes =
    "[\"float\", \"float\", \"\", \"ScalarList\", \"ScalarList\", \"ScalarList\", \"Scalar\"]";

// A convolution's output has the weight's channels and the window formula's lengths, not its
// input's dims: without these rules ResNet's batch norms read "first touch" inputs, and their
// kernels replayed from memory what the recording read from L2 (+20-26%).
TEST(Dataflow, ConvolutionsAndPoolsGiveTheirOutputsShapes) {
    TraceBuilder b;
    // 7x7 stride 2 padding 3: 224 -> 112.
    b.op("aten::conv2d", 0, 5, "[[2, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], []]",
         kConv2dTypes, "[\"\", \"\", \"\", \"[2, 2]\", \"[3, 3]\", \"[1, 1]\", \"1\"]");
    b.op("aten::relu", 10, 2, "[[2, 64, 112, 112]]", "[\"float\"]");
    // 3x3 stride 2 padding 1: 112 -> 56.
    b.op("aten::max_pool2d", 20, 2, "[[2, 64, 112, 112], [], [], [], [], []]",
         "[\"float\", \"ScalarList\", \"ScalarList\", \"ScalarList\", \"ScalarList\", \"Scalar\"]",
         "[\"\", \"[3, 3]\", \"[2, 2]\", \"[1, 1]\", \"[1, 1]\", \"False\"]");
    // A 1x1 convolution to 256 channels (cudnn_convolution's order: padding before stride).
    b.op("aten::cudnn_convolution", 30, 5,
         "[[2, 64, 56, 56], [256, 64, 1, 1], [], [], [], [], [], [], []]",
         "[\"float\", \"float\", \"ScalarList\", \"ScalarList\", \"ScalarList\", \"Scalar\", "
         "\"Scalar\", \"Scalar\", \"Scalar\"]",
         "[\"\", \"\", \"[0, 0]\", \"[1, 1]\", \"[1, 1]\", \"1\", \"False\", \"False\", \"True\"]");
    b.op("aten::native_batch_norm", 40, 2,
         "[[2, 256, 56, 56], [256], [256], [256], [256], [], [], []]",
         "[\"float\", \"float\", \"float\", \"float\", \"float\", \"Scalar\", \"Scalar\", "
         "\"Scalar\"]");
    b.op("aten::adaptive_avg_pool2d", 50, 2, "[[2, 256, 56, 56], []]",
         "[\"float\", \"ScalarList\"]", "[\"\", \"[1, 1]\"]");
    b.op("aten::flatten", 60, 1, "[[2, 256, 1, 1], [], []]", "[\"float\", \"Scalar\", \"Scalar\"]",
         "[\"\", \"1\", \"-1\"]");
    // A transposed convolution (stride 2, output padding 1): 56 -> 112, weight [in, out/groups].
    b.op("aten::convolution", 70, 5,
         "[[2, 256, 56, 56], [256, 32, 3, 3], [], [], [], [], [], [], []]",
         "[\"float\", \"float\", \"\", \"ScalarList\", \"ScalarList\", \"ScalarList\", \"Scalar\", "
         "\"ScalarList\", \"Scalar\"]",
         "[\"\", \"\", \"\", \"[2, 2]\", \"[1, 1]\", \"[1, 1]\", \"True\", \"[1, 1]\", \"1\"]");
    b.op("aten::relu", 80, 2, "[[2, 32, 112, 112]]", "[\"float\"]");
    replay::Trace t = inferred(b);
    EXPECT_EQ(storage(t, 1, 0), output(t, 0));  // relu reads the convolution's output
    EXPECT_EQ(storage(t, 2, 0), output(t, 1));
    EXPECT_EQ(storage(t, 3, 0), output(t, 2));  // the 1x1 convolution reads the pool's
    EXPECT_EQ(storage(t, 4, 0), output(t, 3));  // the batch norm reads the convolution's
    EXPECT_EQ(storage(t, 5, 0), output(t, 4));
    EXPECT_EQ(storage(t, 6, 0),
              output(t, 5));  // flatten's input is the adaptive pool's [2, 256, 1, 1]
    EXPECT_EQ(storage(t, 8, 0), output(t, 7));  // relu reads the transposed convolution's
    const auto origins = replay::input_origins(t);
    for (std::size_t op : {1, 2, 3, 4, 5, 6, 8})
        EXPECT_EQ(origins[op][0], InputOrigin::Activation) << "op " << op;
}

// A hostile trace's window arguments (a stride of 2^63 - 1, a negative padding, groups of 2^62)
// or lengths give a convolution no output dims, never a product past 64 bits (UBSan runs these
// tests too).
TEST(Dataflow, HostileConvolutionArgumentsGiveNoOutputDims) {
    TraceBuilder b;
    b.op("aten::conv2d", 0, 5, "[[2, 3, 8, 8], [4, 3, 3, 3], [], [], [], [], []]", kConv2dTypes,
         "[\"\", \"\", \"\", \"[9223372036854775807, 1]\", \"[-4611686018427387904, 0]\", "
         "\"[1, 1]\", \"1\"]");
    b.op("aten::conv2d", 10, 5,
         "[[2, 3, 4611686018427387904, 8], [4, 3, 4611686018427387904, 3], [], [], [], [], []]",
         kConv2dTypes, "[\"\", \"\", \"\", \"[1, 1]\", \"[0, 0]\", \"[1048576, 1]\", \"1\"]");
    b.op("aten::max_pool2d", 20, 2, "[[2, 3, 8, 8], [], [], [], [], []]",
         "[\"float\", \"ScalarList\", \"ScalarList\", \"ScalarList\", \"ScalarList\", \"Scalar\"]",
         "[\"\", \"[3, 3]\", \"[0, 0]\", \"[1, 1]\", \"[1, 1]\", \"True\"]");  // stride 0
    // A transposed convolution's channels are weight[1] x groups: 2^40 x 2^62.
    b.op("aten::conv_transpose2d", 30, 5,
         "[[2, 3, 8, 8], [3, 1099511627776, 3, 3], [], [], [], [], [], []]",
         "[\"float\", \"float\", \"\", \"ScalarList\", \"ScalarList\", \"ScalarList\", "
         "\"Scalar\", \"ScalarList\"]",
         "[\"\", \"\", \"\", \"[1, 1]\", \"[0, 0]\", \"[0, 0]\", \"4611686018427387904\", "
         "\"[1, 1]\"]");
    replay::Trace t = inferred(b);
    for (std::uint32_t op = 0; op < 4; ++op)
        EXPECT_EQ(t.storages.outputs(op) == 0 ? replay::kNoId : t.storages.output(op, 0).storage,
                  replay::kNoId)
            << "op " << op;
}

// The whole analysis (dataflow, classifier, reuse distances) of a hostile trace whose ops record
// dims of 2^62 and 2^31: sizes saturate, nothing overflows (UBSan runs this too), and the kernels
// are still classified.
TEST(Dataflow, AHostileTracesHugeDimsAreAnalysedWithoutOverflow) {
    TraceBuilder b;
    b.op("aten::mm", 0, 10, "[[4611686018427387904, 64], [64, 4611686018427387904]]",
         "[\"float\", \"float\"]")
        .kernel("sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3", 1, 1);
    b.op("aten::relu", 20, 5, "[[4611686018427387904, 4611686018427387904]]", "[\"float\"]")
        .kernel("void at::native::vectorized_elementwise_kernel<4>()", 21, 1);
    b.op("aten::conv2d", 40, 10,
         "[[2147483648, 2147483648, 2147483648, 2147483648], [2147483648, 2147483648, 3, 3], [], "
         "[], [], [], []]",
         kConv2dTypes, "[\"\", \"\", \"\", \"[1, 1]\", \"[1, 1]\", \"[1, 1]\", \"1\"]")
        .kernel("void cudnn::engines_precompiled::nchwToNhwcKernel()", 41, 1);
    b.op("aten::add", 60, 5, "[[2147483648, 2147483648, 2147483648, 2147483648], [], []]",
         "[\"float\", \"Scalar\", \"Scalar\"]", "[\"\", \"1\", \"1\"]")
        .kernel("void at::native::vectorized_elementwise_kernel<4>()", 61, 1);
    TempFile file("hostile_dims.json", b.json());
    replay::AnalysisOptions options;
    options.trace_path = file.path();
    const auto a = replay::analyze(options);
    EXPECT_EQ(a->recipes.size(), 4u);
    EXPECT_GE(a->dataflow.persistent_bytes, 0);
}

// Every batch norm of a bundled ResNet-50 capture (eager, no ET) reads an activation, the
// convolution's output before it, never a tensor from before the step.
TEST(Dataflow, EveryBatchNormOfAResNetReadsItsConvolutionsOutput) {
    auto parsed = replay::parse_kineto(source_path("traces/h200/resnet_infer.json.gz"));
    (void)replay::KernelGraph::build(parsed.trace);
    replay::infer_dataflow(parsed.trace);
    const auto origins = replay::input_origins(parsed.trace);
    const replay::Trace& t = parsed.trace;
    std::size_t norms = 0, activations = 0, from_the_convolution = 0;
    std::optional<std::size_t> convolution;  // the latest aten::cudnn_convolution
    for (std::size_t op = 0; op < t.cpu_ops.size(); ++op) {
        const auto name = t.names.view(t.cpu_ops[op].name);
        if (name == "aten::cudnn_convolution") convolution = op;
        if (name != "aten::native_batch_norm") continue;
        ++norms;
        activations += !origins[op].empty() && origins[op][0] == InputOrigin::Activation;
        from_the_convolution += convolution && storage(t, op, 0) == output(t, *convolution);
    }
    EXPECT_EQ(norms, 53u);
    EXPECT_EQ(activations, norms);
    EXPECT_EQ(from_the_convolution, norms);
}

}  // namespace
