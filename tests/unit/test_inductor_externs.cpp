// The Inductor wrapper's library calls (extern_kernels.*, aten fallbacks) and the kernels without
// an op they give recipes to: torch.compile's reduce-overhead runs its compiled graph as a CUDA
// graph, whose cuBLAS and cuDNN kernels no op encloses.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <variant>

#include "replay/analysis.h"
#include "replay/inductor_cache.h"
#include "test_support.h"

namespace {

using replay::testing::trace_path;

// The arguments in the schema's order: positional ones, keywords in their places, defaults for
// those left out, `out=` dropped; sizes and strides from reinterpret_tensor, the allocation or the
// asserted input; a call in a comment is none; a convolution's result takes its input's type,
// and so does the buffer that reuses it.
TEST(InductorExterns, LibraryCallsReadAsTheAtenOpsTheyRun) {
    replay::InductorCache cache;
    replay::parse_wrapper_code(R"PY(
def call(args):
    arg0_1, arg1_1, arg2_1, arg3_1 = args
    assert_size_stride(arg0_1, (16, 3, 8, 8), (192, 1, 24, 3))
    assert_size_stride(arg1_1, (4, 3, 3, 3), (27, 1, 9, 3))
    assert_size_stride(arg2_1, (768, ), (1, ))
    assert_size_stride(arg3_1, (768, 768), (768, 1))
    buf0 = extern_kernels.convolution(arg0_1, arg1_1, stride=(1, 1), padding=(1, 1), dilation=(1, 1), transposed=False, output_padding=(0, 0), groups=1, bias=None)
    assert_size_stride(buf0, (16, 4, 8, 8), (256, 1, 32, 4))
    buf1 = buf0; del buf0  # reuse
    triton_poi_fused_relu_0.run(buf1, 4096, stream=stream0)
    buf2 = empty_strided_cuda((1024, 768), (768, 1), torch.float16)
    # extern_kernels.mm(arg3_1, arg3_1, out=buf2)
    extern_kernels.addmm(arg2_1, reinterpret_tensor(buf2, (1024, 768), (768, 1), 0), reinterpret_tensor(arg3_1, (768, 768), (1, 768), 0), alpha=1, out=buf2)
    buf3 = torch.ops.aten._scaled_dot_product_flash_attention.default(buf2, buf2, buf2, 0.0, True)
    extern_kernels.mystery(buf2, out=buf2)

def get_args():
    arg0_1 = rand_strided((16, 3, 8, 8), (192, 1, 24, 3), device='cuda:0', dtype=torch.bfloat16)
    arg1_1 = rand_strided((4, 3, 3, 3), (27, 1, 9, 3), device='cuda:0', dtype=torch.bfloat16)
    arg2_1 = rand_strided((768, ), (1, ), device='cuda:0', dtype=torch.float16)
    arg3_1 = rand_strided((768, 768), (768, 1), device='cuda:0', dtype=torch.float16)
)PY",
                               cache);
    ASSERT_EQ(cache.externs.size(), 4u);
    ASSERT_EQ(cache.steps.size(), 5u);  // conv, the Triton call, addmm, the fallback, mystery
    EXPECT_TRUE(cache.steps[1].triton);
    EXPECT_EQ(cache.calls[0].step, 1u);

    const replay::ExternCall& conv = cache.externs[0];
    ASSERT_TRUE(conv.reason.empty()) << conv.reason;
    EXPECT_EQ(conv.op.op, "aten::convolution");
    ASSERT_EQ(conv.op.args.size(), 9u);
    EXPECT_EQ(conv.op.args[0].tensors[0].dims, (std::vector<std::int64_t>{16, 3, 8, 8}));
    EXPECT_EQ(conv.op.args[0].tensors[0].strides, (std::vector<std::int64_t>{192, 1, 24, 3}));
    EXPECT_EQ(conv.op.args[0].tensors[0].dtype, replay::DType::BFloat16);
    EXPECT_EQ(conv.op.args[2].kind, replay::ArgKind::None);  // bias=None, in its place
    EXPECT_EQ(conv.op.args[3].value, "[1, 1]");
    EXPECT_EQ(conv.op.args[6].value, "False");
    EXPECT_EQ(conv.op.args[8].value, "1");
    // The convolution's result is of its input's type, and so is the buffer that reuses it.
    EXPECT_EQ(cache.buffers.at("buf0").dtype, replay::DType::BFloat16);
    EXPECT_EQ(cache.buffers.at("buf1").dtype, replay::DType::BFloat16);
    EXPECT_EQ(cache.buffers.at("buf1").bytes, 16 * 4 * 8 * 8 * 2);
    EXPECT_EQ(cache.calls[0].args[0].size.dtype, replay::DType::BFloat16);

    const replay::ExternCall& addmm = cache.externs[1];
    ASSERT_TRUE(addmm.reason.empty()) << addmm.reason;
    EXPECT_EQ(addmm.op.op, "aten::addmm");
    ASSERT_EQ(addmm.op.args.size(), 5u);  // self, mat1, mat2, beta (its default), alpha
    EXPECT_EQ(addmm.op.args[0].tensors[0].dims, (std::vector<std::int64_t>{768}));
    EXPECT_EQ(addmm.op.args[2].tensors[0].strides, (std::vector<std::int64_t>{1, 768}));
    EXPECT_EQ(addmm.op.args[2].type, "c10::Half");
    EXPECT_EQ(addmm.op.args[3].value, "1");

    const replay::ExternCall& fallback = cache.externs[2];
    ASSERT_TRUE(fallback.reason.empty()) << fallback.reason;
    EXPECT_EQ(fallback.op.op, "aten::_scaled_dot_product_flash_attention");
    EXPECT_EQ(fallback.op.overload, "");
    ASSERT_EQ(fallback.op.args.size(), 5u);
    EXPECT_EQ(fallback.op.args[4].value, "True");

    EXPECT_NE(cache.externs[3].reason.find("extern_kernels.mystery"), std::string::npos);
}

// An attention fallback called with a keyword (its place from the op's schema), on views whose
// sizes are not their allocation's (`buf4 = buf3  # reuse` of a reinterpret_tensor view), and
// the first of the tuple it returns (`buf6 = buf5[0]`), of its query's type, read by a GEMM.
TEST(InductorExterns, AnAttentionFallbacksKeywordsViewsAndFirstResult) {
    replay::InductorCache cache;
    replay::parse_wrapper_code(R"PY(
def call(args):
    buf1 = empty_strided_cuda((512, 896), (896, 1), torch.bfloat16)
    buf2 = empty_strided_cuda((2, 1, 256, 256), (65536, 65536, 256, 1), torch.bfloat16)
    buf3 = reinterpret_tensor(buf1, (2, 14, 256, 64), (229376, 64, 896, 1), 0); del buf1  # reuse
    buf4 = buf3; del buf3  # reuse
    buf5 = torch.ops.aten._scaled_dot_product_cudnn_attention.default(buf4, buf4, buf4, buf2, False, scale=0.125)
    buf6 = buf5[0]
    assert_size_stride(buf6, (2, 14, 256, 64), (229376, 64, 896, 1), 'torch.ops.aten._scaled_dot_product_cudnn_attention.default')
    extern_kernels.bmm(reinterpret_tensor(buf6, (28, 256, 64), (64, 896, 1), 0), reinterpret_tensor(buf6, (28, 64, 256), (64, 1, 896), 0), out=buf7)
)PY",
                               cache);
    ASSERT_EQ(cache.externs.size(), 2u);
    const replay::ExternCall& attention = cache.externs[0];
    ASSERT_TRUE(attention.reason.empty()) << attention.reason;
    ASSERT_EQ(attention.op.args.size(), 9u);
    EXPECT_EQ(attention.op.args[0].tensors[0].dims, (std::vector<std::int64_t>{2, 14, 256, 64}));
    EXPECT_EQ(attention.op.args[0].tensors[0].strides,
              (std::vector<std::int64_t>{229376, 64, 896, 1}));
    EXPECT_EQ(attention.op.args[3].tensors[0].dims, (std::vector<std::int64_t>{2, 1, 256, 256}));
    EXPECT_EQ(attention.op.args[5].value, "0.0");    // dropout_p, its default
    EXPECT_EQ(attention.op.args[8].value, "0.125");  // scale, in its place
    const replay::ExternCall& bmm = cache.externs[1];
    ASSERT_TRUE(bmm.reason.empty()) << bmm.reason;
    EXPECT_EQ(bmm.op.args[0].tensors[0].dtype, replay::DType::BFloat16);
}

struct Extern {
    int kernels = 0;     // with rule inductor-extern
    int companions = 0;  // of them issued with the kernel before
    int not_replayable = 0;
};

auto analysis_of(const std::string& trace, bool with_cache = true) {
    replay::AnalysisOptions o;
    o.trace_path = trace_path("h200/" + trace + ".json.gz");
    if (with_cache) o.inductor_cache = trace_path("h200/" + trace + ".inductor.tar.gz");
    return replay::analyze(o);
}

// The aten recipes of the kernels of `op`, with their launches.
std::vector<std::pair<const replay::AtenRecipe*, std::size_t>> aten_recipes(
    const replay::Analysis& a, const std::string& op) {
    std::vector<std::pair<const replay::AtenRecipe*, std::size_t>> out;
    for (const auto& k : a.kernels)
        if (const auto* aten = std::get_if<replay::AtenRecipe>(&k.recipe.detail);
            aten != nullptr && aten->op == op)
            out.emplace_back(aten, k.nodes.size());
    return out;
}

Extern externs_of(const std::string& trace, bool with_cache = true) {
    const auto a = analysis_of(trace, with_cache);
    Extern e;
    for (const auto& k : a->kernels) {
        if (!k.recipe.replayable()) e.not_replayable += static_cast<int>(k.nodes.size());
        if (k.recipe.rule != "inductor-extern") continue;
        e.kernels += static_cast<int>(k.nodes.size());
        if (k.recipe.issued_with_op) e.companions += static_cast<int>(k.nodes.size());
    }
    return e;
}

// BERT compiled with reduce-overhead: its 98 cuBLAS GEMMs ran in a CUDA graph, without ops;
// each is the one library call between its two Triton launches (or two of them, one each).
TEST(InductorExterns, AReduceOverheadBertsGemmsTakeTheWrappersCalls) {
    EXPECT_EQ(externs_of("bert_compiled_graph", false).not_replayable, 98 + 98);  // and Triton's
    const Extern e = externs_of("bert_compiled_graph");
    EXPECT_EQ(e.kernels, 98);
    EXPECT_EQ(e.companions, 0);
    EXPECT_EQ(e.not_replayable, 0);
}

// ResNet-50 compiled with reduce-overhead: convolutions of one to three kernels each (cuDNN's
// padding, memset and convolution kernels), the first issuing the others.
TEST(InductorExterns, AReduceOverheadResnetsConvolutionsTakeTheWrappersCalls) {
    const Extern e = externs_of("resnet_compiled_graph");
    EXPECT_EQ(e.kernels, 58);
    EXPECT_GT(e.companions, 0);
    EXPECT_EQ(e.not_replayable, 0);
    const auto a = analysis_of("resnet_compiled_graph");
    int convolutions = 0;
    for (const auto& [aten, launches] : aten_recipes(*a, "aten::convolution")) {
        ASSERT_EQ(aten->args.size(), 9u);
        // Every operand's type is known, also of those that an earlier convolution returned.
        EXPECT_EQ(aten->args[0].tensors.at(0).dtype, replay::DType::BFloat16);
        convolutions += static_cast<int>(launches);
    }
    EXPECT_GT(convolutions, 10);
}

// A UNet compiled with reduce-overhead: between two Triton kernels, a convolution whose cuDNN
// call launched a workspace init and its main kernel, then an addmm: 2 calls over 3 kernels, which
// left 58 us (5.2% of the kernel time) without a recipe before library helpers went with their
// main kernel's call.
TEST(InductorExterns, AReduceOverheadUnetsThreeKernelConvolutionTakesItsCall) {
    const Extern e = externs_of("unet_infer_compiled_graph");
    EXPECT_EQ(e.not_replayable, 0);
    EXPECT_GT(e.companions, 0);
    const auto a = analysis_of("unet_infer_compiled_graph");
    int inits = 0;
    for (const auto& k : a->kernels) {
        if (k.name.find("init_device_workspace_kernel") == std::string::npos) continue;
        inits += static_cast<int>(k.nodes.size());
        const auto* aten = std::get_if<replay::AtenRecipe>(&k.recipe.detail);
        ASSERT_NE(aten, nullptr) << k.recipe.reason;
        EXPECT_EQ(aten->op, "aten::convolution");
    }
    EXPECT_EQ(inits, 8);
}

// Qwen2 prefill compiled with reduce-overhead: its GEMMs and cuDNN attentions (a fallback with a
// keyword) all take the wrapper's calls; it had 62% of its kernel time with a recipe before.
TEST(InductorExterns, AReduceOverheadQwen2sAttentionsTakeTheWrappersCalls) {
    const Extern e = externs_of("qwen2_prefill_compiled_graph");
    EXPECT_EQ(e.not_replayable, 0);
    const auto a = analysis_of("qwen2_prefill_compiled_graph");
    int attentions = 0;
    for (const auto& [aten, launches] :
         aten_recipes(*a, "aten::_scaled_dot_product_cudnn_attention")) {
        ASSERT_EQ(aten->args.size(), 9u);
        for (int i = 0; i < 3; ++i)
            EXPECT_EQ(aten->args[i].tensors.at(0).dims,
                      (std::vector<std::int64_t>{2, 14, 256, 64}));
        attentions += static_cast<int>(launches);
    }
    EXPECT_EQ(attentions, 24);
}

// A Llama decode compiled with reduce-overhead: one-row GEMMs over 22 layers' weights, each
// weight a graph input of the wrapper. Each GEMM reads a storage of its own (a replay that
// shared one buffer per shape kept the weights in L2 and ran the GEMMs 9-27% fast), and the
// split-K GEMMs' reductions go with them (the case ASplitKReductionGoesWithItsGemm builds).
TEST(InductorExterns, AReduceOverheadDecodesWeightsAreStoragesOfTheirOwn) {
    const Extern e = externs_of("llama_decode_compiled_graph");
    EXPECT_EQ(e.not_replayable, 0);
    EXPECT_EQ(e.companions, 22);  // one split-K reduction per layer
    const auto a = analysis_of("llama_decode_compiled_graph");
    std::map<std::int64_t, int> weights;  // B's storage -> GEMMs that read it
    int gemms = 0, of_inputs = 0;
    for (std::uint32_t n = 0; n < a->graph.nodes().size(); ++n) {
        const replay::Recipe r = a->recipes.recipe(n);
        const auto* g = std::get_if<replay::GemmRecipe>(&r.detail);
        if (g == nullptr || r.issued_with_op) continue;
        ++gemms;
        if (g->b_storage < 0) continue;  // an intermediate: buffers by size, as before
        EXPECT_GE(g->b_storage, std::int64_t{1} << 28);
        ++of_inputs;
        ++weights[g->b_storage];
    }
    // q, k, v, o, gate, up, down of 22 layers and the LM head, each on a weight; the rotary
    // embedding's [32, 1] x [1, 1] on two intermediates.
    EXPECT_EQ(gemms, 22 * 7 + 1 + 1);
    EXPECT_EQ(of_inputs, 22 * 7 + 1);
    EXPECT_EQ(weights.size(), static_cast<std::size_t>(of_inputs));
}

// The compiled ViT as recorded without record_shapes: no op has shapes, but the wrapper's calls
// give its GEMMs theirs (none of its kernel time had a recipe without the cache).
TEST(InductorExterns, WithoutRecordShapesTheWrappersCallsGiveTheGemmsTheirShapes) {
    replay::AnalysisOptions o;
    o.trace_path = trace_path("h200/vit_compiled_noshapes.json.gz");
    EXPECT_EQ(replay::analyze(o)->coverage, 0.0);
    o.inductor_cache = trace_path("h200/vit_compiled.inductor.tar.gz");
    const auto a = replay::analyze(o);
    EXPECT_DOUBLE_EQ(a->coverage, 1.0);
    int gemms = 0;
    for (const auto& k : a->kernels)
        if (k.recipe.rule == "inductor-extern" && k.recipe.tier == replay::Tier::Gemm)
            gemms += static_cast<int>(k.nodes.size());
    EXPECT_EQ(gemms, 97);  // as many as with shapes
}

// A CUDA graph's kernels, launched in this order without ops (a reduce-overhead step), analysed
// and given the library calls of `cache`: the Triton kernels named *_0 and *_1 took call sites 0
// and 1. `stats`: what apply_inductor_externs said.
std::unique_ptr<replay::Analysis> graph_kernels_with_externs(const std::vector<std::string>& names,
                                                             const replay::InductorCache& cache,
                                                             replay::ExternStats& stats) {
    const std::string kernel =
        R"(,"pid":0,"tid":7,"dur":2,"args":{"correlation":9,"stream":7,"device":0,"grid":[1,1,1],"block":[128,1,1]}})";
    std::string json =
        R"({"traceEvents":[{"ph":"X","cat":"cuda_runtime","name":"cudaGraphLaunch","pid":1,"tid":1,"ts":1,"dur":5,"args":{"correlation":9}})";
    for (std::size_t i = 0; i < names.size(); ++i)
        json += R"(,{"ph":"X","cat":"kernel","name":")" + names[i] + R"(","ts":)" +
                std::to_string(10 + 3 * i) + kernel;
    json += "]}";
    const replay::testing::TempFile trace("externs_graph.json", json);
    replay::AnalysisOptions o;
    o.trace_path = trace.path();
    auto a = replay::analyze(o);
    replay::InductorStats triton;
    const auto& nodes = a->graph.nodes();
    for (std::uint32_t n = 0; n < nodes.size(); ++n) {
        const auto name = a->graph.trace().names.view(a->graph.activity(nodes[n]).name);
        if (name.starts_with("triton_")) triton.site_of_node[n] = name.ends_with("_0") ? 0 : 1;
    }
    stats = replay::apply_inductor_externs(a->graph, a->recipes, cache, triton);
    return a;
}

// Three projections of one input, back to back between two Triton kernels in one CUDA graph
// (q, k, v of a decode step): cuBLAS split the second one's K, and its reduction is issued with
// it; each GEMM takes its own call.
TEST(InductorExterns, ASplitKReductionGoesWithItsGemm) {
    replay::InductorCache cache;
    replay::parse_wrapper_code(R"PY(
def call(args):
    arg0_1, arg1_1 = args
    assert_size_stride(arg0_1, (1, 896), (896, 1))
    assert_size_stride(arg1_1, (896, 896), (896, 1))
    buf0 = empty_strided_cuda((1, 896), (896, 1), torch.bfloat16)
    triton_per_norm_0.run(arg0_1, buf0, 1, 896, stream=stream0)
    extern_kernels.mm(buf0, reinterpret_tensor(arg1_1, (896, 128), (1, 896), 0), out=buf1)
    extern_kernels.mm(buf0, reinterpret_tensor(arg1_1, (896, 896), (1, 896), 0), out=buf2)
    extern_kernels.mm(buf0, reinterpret_tensor(arg1_1, (896, 64), (1, 896), 0), out=buf3)
    triton_poi_rope_1.run(buf1, buf2, 128, stream=stream0)

def get_args():
    arg0_1 = rand_strided((1, 896), (896, 1), device='cuda:0', dtype=torch.bfloat16)
    arg1_1 = rand_strided((896, 896), (896, 1), device='cuda:0', dtype=torch.bfloat16)
)PY",
                               cache);
    ASSERT_EQ(cache.externs.size(), 3u);
    replay::ExternStats e;
    const auto a = graph_kernels_with_externs(
        {"triton_per_norm_0", "gemv_bf16_kernel", "nvjet_tst_64x8_splitK",
         "cublasLt::splitKreduce_kernel", "gemv_bf16_kernel", "triton_poi_rope_1"},
        cache, e);
    const auto& nodes = a->graph.nodes();
    EXPECT_EQ(e.candidates, 4u);
    EXPECT_EQ(e.matched, 4u);
    std::vector<std::pair<std::int64_t, bool>> got;  // N of each GEMM, issued with the one before
    for (std::uint32_t n = 0; n < nodes.size(); ++n) {
        const replay::Recipe r = a->recipes.recipe(n);
        if (const auto* g = std::get_if<replay::GemmRecipe>(&r.detail))
            got.emplace_back(g->n, r.issued_with_op);
    }
    EXPECT_EQ(got, (std::vector<std::pair<std::int64_t, bool>>{
                       {128, false}, {896, false}, {896, true}, {64, false}}));
}

// cuDNN launches helpers around a convolution's main kernel (a workspace init before it, layout
// conversions into NHWC before and back after): between two Triton kernels of a reduce-overhead
// UNet, two convolutions and a GEMM made 3 library calls and 6 kernels. Each helper goes with the
// call of the main kernel beside it, issued with it; none is left without a recipe.
TEST(InductorExterns, ALibrarysHelperKernelsGoWithTheirMainKernelsCall) {
    replay::InductorCache cache;
    replay::parse_wrapper_code(R"PY(
def call(args):
    arg0_1, arg1_1, arg2_1 = args
    assert_size_stride(arg0_1, (4, 64, 8, 8), (4096, 64, 8, 1))
    assert_size_stride(arg1_1, (64, 64, 3, 3), (576, 9, 3, 1))
    assert_size_stride(arg2_1, (64, 64), (64, 1))
    buf0 = empty_strided_cuda((4, 64, 8, 8), (4096, 64, 8, 1), torch.float16)
    triton_poi_silu_0.run(arg0_1, buf0, 16384, stream=stream0)
    buf1 = extern_kernels.convolution(buf0, arg1_1, stride=(1, 1), padding=(1, 1), dilation=(1, 1), transposed=False, output_padding=(0, 0), groups=1, bias=None)
    assert_size_stride(buf1, (4, 64, 8, 8), (4096, 64, 8, 1))
    buf2 = extern_kernels.convolution(buf1, arg1_1, stride=(1, 1), padding=(1, 1), dilation=(1, 1), transposed=False, output_padding=(0, 0), groups=1, bias=None)
    assert_size_stride(buf2, (4, 64, 8, 8), (4096, 64, 8, 1))
    buf3 = empty_strided_cuda((256, 64), (64, 1), torch.float16)
    extern_kernels.mm(reinterpret_tensor(buf2, (256, 64), (64, 1), 0), arg2_1, out=buf3)
    triton_poi_silu_1.run(buf3, 16384, stream=stream0)

def get_args():
    arg0_1 = rand_strided((4, 64, 8, 8), (4096, 64, 8, 1), device='cuda:0', dtype=torch.float16)
    arg1_1 = rand_strided((64, 64, 3, 3), (576, 9, 3, 1), device='cuda:0', dtype=torch.float16)
    arg2_1 = rand_strided((64, 64), (64, 1), device='cuda:0', dtype=torch.float16)
)PY",
                               cache);
    ASSERT_EQ(cache.externs.size(), 3u);
    replay::ExternStats e;
    const auto a = graph_kernels_with_externs(
        {"triton_poi_silu_0",
         "void cask_plugin__5x_cudnn::xmma__5x_cudnn::init_device_workspace_kernel<x>(x)",
         "sm90_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x128x64",
         "void cudnn::engines_precompiled::nchwToNhwcKernel<__half, __half, float>(x)",
         "sm80_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize64x64x64",
         "void cudnn::engines_precompiled::nhwcToNchwKernel<__half, __half, float>(x)",
         "nvjet_sm90_hsh_64x64_64x13_2x1_v_bz_TNN", "triton_poi_silu_1"},
        cache, e);
    const auto& nodes = a->graph.nodes();
    EXPECT_EQ(e.candidates, 6u);
    EXPECT_EQ(e.matched, 6u);
    // Per kernel between the Triton launches: its recipe's op and whether it is issued with the
    // kernel before it (by the same call).
    std::vector<std::pair<std::string, bool>> got;
    for (std::uint32_t n = 0; n < nodes.size(); ++n) {
        const replay::Recipe r = a->recipes.recipe(n);
        if (r.rule != "inductor-extern") continue;
        std::string op = "?";
        if (const auto* aten = std::get_if<replay::AtenRecipe>(&r.detail)) op = aten->op;
        if (const auto* g = std::get_if<replay::GemmRecipe>(&r.detail)) op = g->op;
        got.emplace_back(op, r.issued_with_op);
    }
    EXPECT_EQ(got, (std::vector<std::pair<std::string, bool>>{{"aten::convolution", false},
                                                              {"aten::convolution", true},
                                                              {"aten::convolution", false},
                                                              {"aten::convolution", true},
                                                              {"aten::convolution", true},
                                                              {"aten::mm", false}}));
}

}  // namespace
