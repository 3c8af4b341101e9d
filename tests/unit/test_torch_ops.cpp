// libtorch replay on the CPU: schema binding (no tensors made), op resolution, argument
// synthesis, GEMMs, copies and the CPU backend.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "recipe_builders.h"
#include "replay/backend.h"
#include "replay/torch_ops.h"
#include "schema_binding.h"

namespace replay {
namespace {

using testing::none;
using testing::op;
using testing::scalar;
using testing::scalar_list;
using testing::spec;
using testing::tensor;

// ---- schema binding: which overload and where each argument comes from, no tensor made -------

using torch_detail::bind_overload;
using torch_detail::Plan;
using torch_detail::Slot;
using torch_detail::Source;

// Binds and expects an overload; the test then reads the plan.
std::optional<Plan> bound(const AtenRecipe& recipe) {
    std::string why;
    auto plan = bind_overload(recipe, why);
    EXPECT_TRUE(plan.has_value()) << recipe.op << ": " << why;
    EXPECT_EQ(why, "");
    return plan;
}

std::vector<Source> sources(const Plan& plan) {
    std::vector<Source> out;
    for (const auto& arg : plan.args) out.push_back(arg.source);
    return out;
}

TEST(SchemaBinding, EveryRecordedArgumentFillsItsSlot) {
    const AtenRecipe recipe =
        op("aten::layer_norm",
           {tensor(spec({8, 1024}, DType::Float32)), scalar_list("[1024]"),
            tensor(spec({1024}, DType::Float32)), tensor(spec({1024}, DType::Float32)),
            scalar("1e-05"), scalar("True")});
    const auto plan = bound(recipe);
    ASSERT_TRUE(plan);
    EXPECT_EQ(plan->op.schema().overload_name(), "");
    EXPECT_EQ(plan->cost, 0);
    ASSERT_EQ(plan->args.size(), 6u);
    const std::vector<Slot> slots{Slot::Tensor, Slot::IntList, Slot::Tensor,
                                  Slot::Tensor, Slot::Float,   Slot::Bool};
    for (std::size_t i = 0; i < slots.size(); ++i) {
        EXPECT_EQ(plan->args[i].info.slot, slots[i]) << "argument " << i;
        EXPECT_EQ(plan->args[i].source, Source::Recorded) << "argument " << i;
        EXPECT_EQ(plan->args[i].recorded, &recipe.args[i]) << "argument " << i;
    }
    EXPECT_TRUE(plan->args[2].info.optional);  // Tensor? weight
    EXPECT_FALSE(plan->args[0].info.optional);
}

TEST(SchemaBinding, OverloadFollowsTheRecordedKinds) {
    const auto a = spec({64, 128}, DType::Float32);
    auto overload_of = [](const AtenRecipe& recipe) {
        const auto plan = bound(recipe);
        return plan ? plan->op.schema().overload_name() : std::string("(none)");
    };
    // A recorded scalar fits add.Scalar exactly; add.Tensor would take it as a tensor (cost 4).
    EXPECT_EQ(overload_of(op("aten::add", {tensor(a), scalar("2"), scalar("1")})), "Scalar");
    EXPECT_EQ(overload_of(op("aten::add", {tensor(a), tensor(a), scalar("1")})), "Tensor");
    // An out= call records the output as a fourth tensor.
    EXPECT_EQ(overload_of(op("aten::add", {tensor(a), tensor(a), scalar("1"), tensor(a)})), "out");
}

TEST(SchemaBinding, UnrecordedArgumentsTakeDefaultsNoneOrTheDevice) {
    // empty(int[] size, *, ScalarType? dtype, Layout? layout, Device? device, bool? pin_memory,
    // MemoryFormat? memory_format): the device is always the replay's.
    const auto plan = bound(op("aten::empty", {scalar_list("[16, 32]"), scalar("6")}));
    ASSERT_TRUE(plan);
    const auto& arguments = plan->op.schema().arguments();
    ASSERT_EQ(plan->args.size(), arguments.size());
    for (std::size_t i = 0; i < arguments.size(); ++i) {
        const std::string& name = arguments[i].name();
        if (name == "size" || name == "dtype")
            EXPECT_EQ(plan->args[i].source, Source::Recorded) << name;
        else if (name == "device")
            EXPECT_EQ(plan->args[i].source, Source::Device) << name;
        else
            EXPECT_TRUE(plan->args[i].source == Source::Default ||
                        plan->args[i].source == Source::None)
                << name;
    }
    EXPECT_GT(plan->cost, 0);  // each unrecorded argument costs one
}

// A C++ caller that passes an undefined tensor (cuDNN attention backward's attn_bias, GPT-2
// training) is recorded as None for a non-optional Tensor. Without an Execution Trace that binds
// where the name has one overload besides out= variants: nothing else could have been meant.
TEST(SchemaBinding, ANoneForATensorOfTheOnlyOverloadIsAnUndefinedTensor) {
    // _softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype)
    const auto plan =
        bound(op("aten::_softmax_backward_data",
                 {tensor(spec({4, 8}, DType::Float32)), none(), scalar("1"), scalar("6")}));
    ASSERT_TRUE(plan);
    EXPECT_EQ(plan->op.schema().overload_name(), "");
    EXPECT_EQ(plan->args[1].source, Source::UndefinedTensor);
}

TEST(SchemaBinding, RequiredScalarsWithoutValuesAreGuessedAndListed) {
    // PyTorch 1.8 traces record no scalar values: threshold_(x, None, None).
    const AtenRecipe recipe =
        op("aten::threshold_", {tensor(spec({4, 64}, DType::Unknown)), none(), none()});
    const auto plan = bound(recipe);
    ASSERT_TRUE(plan);
    EXPECT_EQ(sources(*plan),
              (std::vector<Source>{Source::Recorded, Source::Guess, Source::Guess}));
    EXPECT_EQ(torch_detail::guessed_arguments(*plan, recipe), "threshold=1, value=1");
}

TEST(SchemaBinding, ScalarWhereAListIsWantedRepeatsIt) {
    // max_pool2d(self, int[2] kernel_size, int[2] stride=[], ...) recorded with a bare "2".
    const auto plan =
        bound(op("aten::max_pool2d", {tensor(spec({1, 3, 8, 8}, DType::Float32)), scalar("2")}));
    ASSERT_TRUE(plan);
    ASSERT_GE(plan->args.size(), 2u);
    EXPECT_EQ(plan->args[1].info.slot, Slot::IntList);
    EXPECT_TRUE(plan->args[1].scalar_as_list);
}

TEST(SchemaBinding, WhyNothingBindsNamesTheArgument) {
    std::string why;
    EXPECT_FALSE(
        bind_overload(op("aten::definitely_not_an_op", {tensor(spec({4}, DType::Float32))}), why));
    EXPECT_NE(why.find("has no aten::definitely_not_an_op"), std::string::npos) << why;
    why.clear();
    // aten::view needs its sizes: a list without its value fits no overload.
    EXPECT_FALSE(bind_overload(
        op("aten::view", {tensor(spec({4, 4}, DType::Float32)), scalar_list("")}), why));
    EXPECT_NE(why.find("no overload matches the recorded arguments (aten::view"), std::string::npos)
        << why;
    EXPECT_NE(why.find("'size'"), std::string::npos) << why;
    why.clear();
    AtenArgument empty_list;
    empty_list.kind = ArgKind::TensorList;
    EXPECT_FALSE(bind_overload(op("aten::cat", {empty_list, scalar("1")}), why));
    EXPECT_NE(why.find("tensor list recorded without its tensors"), std::string::npos) << why;
}

class TorchOps : public ::testing::Test {
  protected:
    TorchOpRunner runner{TorchDevice{TorchDevice::Kind::Cpu, 0}, 1234, true};

    // Prepares, expects Ready and runs twice (the stack must survive a run).
    Prepared ready(const AtenRecipe& recipe) {
        Prepared p = runner.prepare(recipe);
        EXPECT_EQ(p.disposition, Disposition::Ready) << recipe.op << ": " << p.reason;
        if (p.disposition == Disposition::Ready) {
            EXPECT_EQ(runner.run(p.handle), "");
            EXPECT_EQ(runner.run(p.handle), "");
        }
        return p;
    }
};

TEST_F(TorchOps, LayerNorm) {
    auto p = ready(op("aten::layer_norm",
                      {tensor(spec({8, 1024}, DType::Float32)), scalar_list("[1024]"),
                       tensor(spec({1024}, DType::Float32)), tensor(spec({1024}, DType::Float32)),
                       scalar("1e-05"), scalar("True")}));
    EXPECT_EQ(runner.label(p.handle), "aten::layer_norm");
    EXPECT_EQ(p.reason, "");
}

// The inputs a backend reads into L2 before a timed run: each recorded tensor with its recorded
// reuse distance, and weight/bias named as parameters by the op's signature.
TEST_F(TorchOps, InputsCarryReuseDistancesAndParameterRoles) {
    auto input = spec({8, 1024}, DType::Float32);
    input.reuse_bytes = 4096;
    auto weight = spec({1024}, DType::Float32);
    weight.reuse_bytes = kReuseFirstTouch;
    auto p = ready(op("aten::layer_norm",
                      {tensor(input), scalar_list("[1024]"), tensor(weight),
                       tensor(spec({1024}, DType::Float32)), scalar("1e-05"), scalar("True")}));
    const auto inputs = runner.inputs(p.handle);
    ASSERT_EQ(inputs.size(), 3u);
    EXPECT_EQ(inputs[0].bytes, 8u * 1024 * 4);
    EXPECT_EQ(inputs[0].reuse_bytes, 4096);
    EXPECT_FALSE(inputs[0].parameter);
    EXPECT_EQ(inputs[1].reuse_bytes, kReuseFirstTouch);
    EXPECT_TRUE(inputs[1].parameter);
    EXPECT_EQ(inputs[2].reuse_bytes, kReuseUnknown);
    EXPECT_TRUE(inputs[2].parameter);
    // What a 1 MiB cache would have held: the recently touched activation only.
    EXPECT_TRUE(cached_in_recording(inputs[0], 1 << 20));
    EXPECT_FALSE(cached_in_recording(inputs[0], 16 << 10));  // 4 KiB + 32 KiB > 16 KiB
    EXPECT_FALSE(cached_in_recording(inputs[1], 1 << 20));   // first touch: from memory
    EXPECT_FALSE(cached_in_recording(inputs[2], 1 << 20));   // unknown, but a parameter
    InputRegion unknown_activation = inputs[0];
    unknown_activation.reuse_bytes = kReuseUnknown;
    EXPECT_TRUE(cached_in_recording(unknown_activation, 1 << 20));
    EXPECT_FALSE(cached_in_recording(unknown_activation, 32 << 10));  // over half the cache
}

TEST_F(TorchOps, LayerNormHalfComputedAsFloatOnCpu) {
    // libtorch 1.13 has no Half LayerNorm CPU kernel; newer versions may, then no note is due.
    auto p = ready(op("aten::layer_norm",
                      {tensor(spec({8, 1024}, DType::Float16)), scalar_list("[1024]"),
                       tensor(spec({1024}, DType::Float16)), tensor(spec({1024}, DType::Float16)),
                       scalar("1e-05"), scalar("True")}));
    if (std::string(TorchOpRunner::libtorch_version()).starts_with("1.")) {
        EXPECT_EQ(p.reason, "float16 computed as float32 on CPU");
    }
}

TEST_F(TorchOps, SoftmaxHalfToFloat) {
    // As recorded for a float16 model on CUDA: half_to_float=True, which the CPU refuses.
    ready(op("aten::_softmax",
             {tensor(spec({1, 16, 5, 5}, DType::Float16)), scalar("-1"), scalar("True")}));
}

TEST_F(TorchOps, AddResolvesTensorAndScalarOverloads) {
    ready(op("aten::add", {tensor(spec({64, 128}, DType::Float32)),
                           tensor(spec({64, 128}, DType::Float32)), scalar("1")}));
    ready(op("aten::add", {tensor(spec({64, 128}, DType::Float32)), scalar("2"), scalar("1")}));
    // The recorded overload wins when given.
    ready(op(
        "aten::add",
        {tensor(spec({64, 128}, DType::Float32)), tensor(spec({128}, DType::Float32)), scalar("1")},
        "Tensor"));
    // In-place and out= variants.
    ready(op("aten::add_", {tensor(spec({64, 128}, DType::Float32)),
                            tensor(spec({64, 128}, DType::Float32)), scalar("1")}));
    ready(
        op("aten::add", {tensor(spec({4, 4}, DType::Float32)), tensor(spec({4, 4}, DType::Float32)),
                         scalar("1"), tensor(spec({4, 4}, DType::Float32))}));
}

TEST_F(TorchOps, AddmmAsAtenOp) {
    // Bias, a [5, 1024] input and a transposed [1024, 3072] weight (strides (1, 1024)), as linear
    // records it.
    ready(op("aten::addmm",
             {tensor(spec({3072}, DType::Float32)), tensor(spec({5, 1024}, DType::Float32)),
              tensor(spec({1024, 3072}, DType::Float32, {1, 1024})), scalar("1"), scalar("1")}));
}

TEST_F(TorchOps, EmbeddingIndicesStayInRange) {
    // A 3-row table looked up by 4096 indices: any index >= 3 would raise "index out of range".
    ready(op("aten::embedding",
             {tensor(spec({3, 64}, DType::Float32)), tensor(spec({32, 128}, DType::Int64)),
              scalar("-1"), scalar("False"), scalar("False")}));
    ready(op("aten::embedding",
             {tensor(spec({50257, 768}, DType::Float16)), tensor(spec({4, 512}, DType::Int64)),
              scalar("-1"), scalar("False"), scalar("False")}));
}

TEST_F(TorchOps, IndexingOpsStayInRange) {
    ready(op("aten::index_select", {tensor(spec({7, 256}, DType::Float32)), scalar("0"),
                                    tensor(spec({1000}, DType::Int64))}));
    ready(op("aten::gather", {tensor(spec({16, 5}, DType::Float32)), scalar("1"),
                              tensor(spec({16, 5}, DType::Int64)), scalar("False")}));
    ready(op("aten::nll_loss_forward",
             {tensor(spec({64, 10}, DType::Float32)), tensor(spec({64}, DType::Int64)), none(),
              scalar("1"), scalar("-100")}));
}

TEST_F(TorchOps, SumWithDimList) {
    ready(op("aten::sum", {tensor(spec({32, 64}, DType::Float32)), scalar_list("[1]"),
                           scalar("False"), none()}));
    ready(op("aten::sum", {tensor(spec({32, 64}, DType::Float32)), none()}));
}

TEST_F(TorchOps, FactoryOpUsesDefaults) {
    ready(
        op("aten::empty", {scalar_list("[16, 32]"), scalar("6"), none(), none(), none(), none()}));
    ready(op("aten::zeros", {scalar_list("[8]")}));
}

TEST_F(TorchOps, DataflowSharesGrowingStorage) {
    // Two views of recorded storage 7; the second needs more of it than the first.
    Prepared a = ready(op("aten::relu", {tensor(spec({16}, DType::Float32, {}, 7))}));
    Prepared b = ready(op("aten::relu", {tensor(spec({64, 64}, DType::Float32, {}, 7))}));
    EXPECT_EQ(runner.run(a.handle), "");
    EXPECT_NE(a.handle, b.handle);
}

TEST_F(TorchOps, OldTraceScalarsAreGuessed) {
    // PyTorch 1.8 traces record no scalar values: threshold_(x, None, None).
    Prepared p = ready(
        op("aten::threshold_", {tensor(spec({4, 64, 8, 8}, DType::Unknown)), none(), none()}));
    EXPECT_EQ(p.reason, "guessed unrecorded arguments: threshold=1, value=1");
    p = ready(op("aten::_log_softmax", {tensor(spec({32, 10}, DType::Float32)), none(), none()}));
    EXPECT_EQ(p.reason, "guessed unrecorded arguments: dim=-1, half_to_float=False");
    // The Tensor overload cannot take None: fill_.Scalar is the one.
    ready(op("aten::fill_", {tensor(spec({16}, DType::Float32)), none()}));
}

TEST_F(TorchOps, EmptyTensorListIsSkipped) {
    AtenArgument list;
    list.kind = ArgKind::TensorList;
    list.type = "TensorList";
    Prepared p = runner.prepare(op("aten::cat", {list, scalar("1")}));
    EXPECT_EQ(p.disposition, Disposition::Skipped);
    EXPECT_NE(p.reason.find("without its tensors"), std::string::npos) << p.reason;
}

TEST_F(TorchOps, TensorListArguments) {
    AtenArgument list;
    list.kind = ArgKind::TensorList;
    list.type = "TensorList";
    list.tensors = {spec({4, 8}, DType::Float32), spec({4, 8}, DType::Float32),
                    spec({4, 16}, DType::Float32)};
    ready(op("aten::cat", {list, scalar("1")}));
    // index.Tensor's Tensor?[] holds indices: float-typed (unrecorded) elements become int64.
    AtenArgument indices;
    indices.kind = ArgKind::TensorList;
    indices.type = "GenericList";
    indices.tensors = {spec({100}, DType::Float32)};
    ready(op("aten::index", {tensor(spec({6, 32}, DType::Float32)), indices}));
}

TEST_F(TorchOps, MissingOpIsSkipped) {
    Prepared p =
        runner.prepare(op("aten::definitely_not_an_op", {tensor(spec({4}, DType::Float32))}));
    EXPECT_EQ(p.disposition, Disposition::Skipped);
    EXPECT_NE(p.reason.find("has no aten::definitely_not_an_op"), std::string::npos) << p.reason;
}

TEST_F(TorchOps, MismatchedArgumentsAreSkipped) {
    // aten::view needs its sizes: without a recorded value there is nothing to run.
    Prepared p =
        runner.prepare(op("aten::view", {tensor(spec({4, 4}, DType::Float32)), scalar_list("")}));
    EXPECT_EQ(p.disposition, Disposition::Skipped);
    EXPECT_NE(p.reason.find("no overload matches"), std::string::npos) << p.reason;
}

TEST_F(TorchOps, CudaOnlyOpIsSkippedOnCpu) {
    Prepared p = runner.prepare(
        op("aten::_fused_dropout", {tensor(spec({4}, DType::Float32)), scalar("0.1"), none()}));
    EXPECT_EQ(p.disposition, Disposition::Skipped);
    EXPECT_NE(p.reason.find("no CPU kernel"), std::string::npos) << p.reason;
}

TEST_F(TorchOps, FailingOpIsFailedNotThrown) {
    // Shapes that do not broadcast: the trial run reports the error.
    Prepared p = runner.prepare(op("aten::add", {tensor(spec({3}, DType::Float32)),
                                                 tensor(spec({4}, DType::Float32)), scalar("1")}));
    EXPECT_EQ(p.disposition, Disposition::Failed);
    EXPECT_TRUE(p.reason.starts_with("aten::add failed on the CPU: ")) << p.reason;
}

// Graph capture is CUDA's: a CPU runner says why not, opens nothing and has nothing to end.
TEST_F(TorchOps, GraphCaptureOnTheCpuSaysWhyNot) {
    EXPECT_NE(runner.begin_capture(nullptr), "");
    std::string why;
    EXPECT_EQ(runner.end_capture(nullptr, why), nullptr);
    EXPECT_NE(why, "");
}

GemmRecipe gemm_5x3072x1024(DType dtype) {
    GemmRecipe g;
    g.op = "aten::addmm";
    g.m = 5, g.n = 3072, g.k = 1024;
    g.trans_b = true;  // linear's weight [3072, 1024] read transposed
    g.lda = 1024, g.ldb = 1024, g.ldc = 3072;
    g.a_type = g.b_type = g.c_type = g.bias_type = dtype;
    g.bias = true;
    g.alpha = g.beta = 1.0;
    return g;
}

TEST_F(TorchOps, GemmFloat) {
    Prepared p = runner.prepare_gemm(gemm_5x3072x1024(DType::Float32));
    ASSERT_EQ(p.disposition, Disposition::Ready) << p.reason;
    EXPECT_EQ(runner.label(p.handle), "gemm 5 x 3072 x 1024");
    EXPECT_EQ(runner.run(p.handle), "");
}

TEST_F(TorchOps, BatchedGemm) {
    GemmRecipe g;
    g.op = "aten::bmm";
    g.m = 16, g.n = 32, g.k = 64, g.batch = 8;
    g.lda = 64, g.ldb = 32, g.ldc = 32;
    g.stride_a = 16 * 64, g.stride_b = 64 * 32, g.stride_c = 16 * 32;
    g.a_type = g.b_type = g.c_type = DType::Float32;
    Prepared p = runner.prepare_gemm(g);
    ASSERT_EQ(p.disposition, Disposition::Ready) << p.reason;
    EXPECT_EQ(runner.run(p.handle), "");
}

TEST_F(TorchOps, CopyAndMemset) {
    CopyRecipe c;
    c.bytes = 4096;
    c.direction = CopyDirection::HostToDevice;
    Prepared p = runner.prepare_copy(c);
    ASSERT_EQ(p.disposition, Disposition::Ready) << p.reason;
    EXPECT_EQ(runner.label(p.handle), "memcpy 4096 bytes");
    EXPECT_EQ(runner.run(p.handle), "");
    c.is_memset = true;
    p = runner.prepare_copy(c);
    ASSERT_EQ(p.disposition, Disposition::Ready) << p.reason;
    EXPECT_EQ(runner.label(p.handle), "memset 4096 bytes");
    EXPECT_EQ(runner.run(p.handle), "");
}

TEST(TorchRunner, DeviceStrings) {
    EXPECT_NO_THROW(TorchOpRunner("cpu", 1));
    EXPECT_THROW(TorchOpRunner("tpu:0", 1), std::invalid_argument);
    EXPECT_EQ(TorchOpRunner("cpu", 1).run(99), "unknown handle 99");
}

// ---- the CPU backend ---------------------------------------------------------------------------

std::unique_ptr<Backend> cpu_backend() {
    std::string why;
    auto backend = make_cpu_backend(BackendOptions{}, why);
    EXPECT_NE(backend, nullptr) << why;
    return backend;
}

TEST(CpuBackend, HalfGemmComputedAsFloat) {
    auto backend = cpu_backend();
    ASSERT_NE(backend, nullptr);
    Recipe recipe;
    recipe.tier = Tier::Gemm;
    recipe.detail = gemm_5x3072x1024(DType::Float16);
    Prepared p = backend->prepare(recipe);
    ASSERT_EQ(p.disposition, Disposition::Ready) << p.reason;
    if (std::string(TorchOpRunner::libtorch_version()).starts_with("1.")) {
        EXPECT_EQ(p.reason, "float16 computed as float32 on CPU");
        const auto notes = backend->environment().notes;
        EXPECT_NE(std::find(notes.begin(), notes.end(), "float16 computed as float32 on CPU"),
                  notes.end());
    }
    backend->set_stream_count(1);
    backend->issue(p.handle, 0, 42);
    backend->synchronize();
    const auto activities = backend->collect();
    ASSERT_EQ(activities.size(), 1u);
    EXPECT_EQ(activities[0].tag, 42u);
    EXPECT_EQ(activities[0].name, "gemm 5 x 3072 x 1024");
    EXPECT_EQ(activities[0].stream, 0);
    EXPECT_FALSE(activities[0].per_kernel);
    EXPECT_LE(activities[0].start_ns, activities[0].end_ns);
    EXPECT_TRUE(backend->collect().empty());
}

TEST(CpuBackend, TiersAndEnvironment) {
    auto backend = cpu_backend();
    ASSERT_NE(backend, nullptr);

    Recipe copy;
    copy.tier = Tier::Copy;
    copy.detail = CopyRecipe{false, CopyDirection::DeviceToHost, true, 1 << 20, 0};
    Prepared c = backend->prepare(copy);
    ASSERT_EQ(c.disposition, Disposition::Ready) << c.reason;

    Recipe aten;
    aten.tier = Tier::AtenOp;
    aten.detail = op("aten::gelu", {tensor(spec({256, 256}, DType::Float32))});
    Prepared a = backend->prepare(aten);
    ASSERT_EQ(a.disposition, Disposition::Ready) << a.reason;

    Recipe collective;
    collective.tier = Tier::Collective;
    collective.detail = CollectiveRecipe{"allreduce", 1024, 1024, DType::Float32, 8};
    EXPECT_EQ(backend->prepare(collective).disposition, Disposition::Skipped);

    Recipe nothing;
    nothing.reason = "no launching op";
    Prepared n = backend->prepare(nothing);
    EXPECT_EQ(n.disposition, Disposition::Skipped);
    EXPECT_EQ(n.reason, "no launching op");

    backend->set_stream_count(2);
    backend->issue(c.handle, 1, 1);
    backend->stream_wait(0, 1);
    backend->flush_l2();
    // The gelu's input (an activation of 256 KiB, no recorded reuse) was in cache when recorded:
    // it is read in first, timed as a warm-up read of its step.
    backend->warm_inputs(a.handle, 0, 2);
    backend->issue(a.handle, 0, 2);
    backend->synchronize();
    const auto activities = backend->collect();
    ASSERT_EQ(activities.size(), 3u);
    EXPECT_EQ(activities[0].name, "memcpy 1048576 bytes");
    EXPECT_EQ(activities[0].stream, 1);
    EXPECT_TRUE(activities[1].warm_read);
    EXPECT_EQ(activities[1].tag, 2u);
    EXPECT_EQ(activities[2].name, "aten::gelu");
    EXPECT_FALSE(activities[2].warm_read);
    EXPECT_LE(activities[0].end_ns, activities[1].start_ns);
    EXPECT_LE(activities[1].end_ns, activities[2].start_ns);

    // No graphs on the host: the reason, and a capture is refused.
    EXPECT_NE(backend->capture_blocker(a.handle, 0).find("no graph"), std::string::npos);
    EXPECT_THROW(backend->begin_capture(0, true), std::logic_error);
    backend->set_phase(Phase::Timed);
    EXPECT_TRUE(backend->first_uses().empty());
    backend->set_phase(Phase::Plan);

    const Environment env = backend->environment();
    EXPECT_EQ(env.backend, "cpu");
    EXPECT_EQ(env.timing, "host-clock");
    EXPECT_FALSE(env.device_name.empty());
    EXPECT_EQ(env.libtorch_version, TorchOpRunner::libtorch_version());
}


// --energy's placements: a copy of prepared work holds the same values at other addresses, and
// views that shared one storage (here self and other of an add, one recorded storage) still share
// one; the original is left as it was, and release() drops the copy's tensors.
TEST_F(TorchOps, RelocatedWorkHoldsTheSameValuesElsewhere) {
    const TensorSpec shared = spec({64, 32}, DType::Float32, {}, 7);
    Prepared p = ready(op("aten::add", {tensor(shared), tensor(shared), scalar("1")}));
    const auto before = runner.inputs(p.handle);
    ASSERT_EQ(before.size(), 2u);
    ASSERT_EQ(before[0].data, before[1].data);  // one recorded storage
    std::vector<char> values(before[0].bytes);
    std::copy_n(static_cast<const char*>(before[0].data), values.size(), values.begin());

    Prepared moved = runner.relocated(p.handle);
    ASSERT_EQ(moved.disposition, Disposition::Ready) << moved.reason;
    EXPECT_NE(moved.handle, p.handle);
    EXPECT_EQ(runner.label(moved.handle), "aten::add");
    const auto after = runner.inputs(moved.handle);
    ASSERT_EQ(after.size(), 2u);
    EXPECT_NE(after[0].data, before[0].data);
    EXPECT_EQ(after[0].data, after[1].data);  // still one storage
    EXPECT_EQ(after[0].bytes, before[0].bytes);
    EXPECT_TRUE(std::equal(values.begin(), values.end(), static_cast<const char*>(after[0].data)));
    EXPECT_EQ(runner.run(moved.handle), "");
    EXPECT_EQ(runner.inputs(p.handle)[0].data, before[0].data);  // the original stays put
    EXPECT_EQ(runner.run(p.handle), "");

    runner.release(moved.handle);
    EXPECT_TRUE(runner.inputs(moved.handle).empty());
    EXPECT_EQ(runner.relocated(moved.handle).disposition, Disposition::Failed);
    // GEMMs (and copies) are not moved: their work is not an op's boxed stack.
    Prepared g = runner.prepare_gemm(gemm_5x3072x1024(DType::Float32));
    ASSERT_EQ(g.disposition, Disposition::Ready) << g.reason;
    EXPECT_EQ(runner.relocated(g.handle).disposition, Disposition::Skipped);
}

}  // namespace
}  // namespace replay
