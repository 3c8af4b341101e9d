// torch.compile's Inductor cache on the bundled compiled-MLP capture: PTX entries, variants by
// block size, call sites and buffer sizes from the wrapper code, and the trace's Triton kernels
// given tier triton from it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>

#include "replay/analysis.h"
#include "replay/inductor_cache.h"
#include "replay/input_error.h"
#include "test_support.h"

namespace {

using replay::testing::trace_path;

const std::string kTar = "h200/mlp_compiled.inductor.tar.gz";
constexpr const char* kKernel = "triton_poi_fused_gelu_view_0";

TEST(InductorCache, PtxEntriesListPointersIntegersAndTheBlock) {
    const std::string ptx = R"(
.version 8.7
.target sm_90a
.visible .entry triton_poi_fused_gelu_view_0(
	.param .u64 .ptr .global .align 1 triton_poi_fused_gelu_view_0_param_0,
	.param .u32 triton_poi_fused_gelu_view_0_param_1,
	.param .u64 .ptr .global .align 1 triton_poi_fused_gelu_view_0_param_2,
	.param .u64 .ptr .global .align 1 triton_poi_fused_gelu_view_0_param_3
)
.reqntid 128
{
	ret;
}
.visible .entry other(.param .s64 other_param_0, .param .f32 other_param_1)
{ ret; }
)";
    const auto entries = replay::parse_ptx_entries(ptx, "test.ptx");
    ASSERT_EQ(entries.size(), 2u);
    EXPECT_EQ(entries[0].name, kKernel);
    ASSERT_EQ(entries[0].params.size(), 4u);
    EXPECT_TRUE(entries[0].params[0].pointer);
    EXPECT_FALSE(entries[0].params[1].pointer);
    EXPECT_EQ(entries[0].params[1].bits, 32);
    EXPECT_TRUE(entries[0].params[3].pointer);
    EXPECT_EQ(entries[0].reqntid, 128);
    ASSERT_EQ(entries[1].params.size(), 2u);
    EXPECT_EQ(entries[1].params[0].bits, 64);
    EXPECT_TRUE(entries[1].params[1].floating);
    EXPECT_EQ(entries[1].reqntid, 0);
    EXPECT_THROW(replay::parse_ptx_entries(".entry broken(.param .u32 x", "bad.ptx"),
                 replay::InputError);
}

TEST(InductorCache, TheBundledTarHasBothVariantsAndTheWrappersCallSites) {
    const auto cache = replay::read_inductor_cache(trace_path(kTar));
    ASSERT_EQ(cache.variants.size(), 2u);
    // The autotuner's pick (its .best_config names the hash) runs 4 warps: 128 threads.
    const auto v128 = cache.variants_of(kKernel, 128);
    ASSERT_EQ(v128.size(), 1u);
    EXPECT_EQ(v128.front()->num_warps, 4);
    EXPECT_TRUE(v128.front()->preferred);
    EXPECT_EQ(v128.front()->hash, "ZJJ7YKRXLTH3YKIQZD5QFJNHDWXBARYACMTXHI7P2IEN5CQQL4BQ");
    EXPECT_EQ(v128.front()->params.size(), 4u);
    EXPECT_FALSE(v128.front()->cubin.empty());
    EXPECT_EQ(cache.variants_of(kKernel, 256).front()->num_warps, 8);
    EXPECT_TRUE(cache.variants_of(kKernel, 64).empty());
    // Two call sites, each in place on a [4096, 16384] fp16 buffer (a reinterpret of bufN).
    std::size_t sites = 0;
    for (const auto& c : cache.calls)
        if (c.kernel == kKernel) {
            ++sites;
            ASSERT_EQ(c.args.size(), 2u);
            EXPECT_EQ(c.args[1].value, 67108864);
            const auto b = cache.buffers.find(c.args[0].buffer);
            ASSERT_NE(b, cache.buffers.end()) << c.args[0].buffer;
            EXPECT_EQ(b->second.bytes, 4096LL * 16384 * 2);
            EXPECT_EQ(b->second.dtype, replay::DType::Float16);
        }
    EXPECT_EQ(sites, 2u);
    const replay::TritonDefinition* defined = cache.definition(kKernel);
    ASSERT_NE(defined, nullptr);
    ASSERT_EQ(defined->params.size(), 2u);  // XBLOCK is a constexpr
    EXPECT_EQ(defined->params[0].second, "*fp16");
}

TEST(InductorCache, BufferSizesFollowAllocationsAliasesAndInputs) {
    replay::InductorCache cache;
    replay::parse_wrapper_code(R"(
        assert_size_stride(arg2_1, (8, 512, 4096), (2097152, 4096, 1))
        buf0 = empty_strided_cuda((4096, 16384), (16384, 1), torch.bfloat16)
        buf1 = reinterpret_tensor(buf0, (8, 512, 16384), (8388608, 16384, 1), 0); del buf0  # reuse
        buf3 = reinterpret_tensor(buf1, (4096, 16384), (16384, 1), 0); del buf1  # reuse
        triton_red_fused_sum_1.run(buf3, arg2_1, 4096, 16384, stream=stream0)
        buf10 = extern_kernels.convolution(buf9, arg16_1, stride=(1, 1), padding=(0, 0), dilation=(1, 1), transposed=False, output_padding=(0, 0), groups=1, bias=None)
        assert_size_stride(buf10, (16, 256, 56, 56), (802816, 1, 14336, 256), 'torch.ops.aten.convolution.default')
        buf12 = buf10; del buf10  # reuse
        buf13 = buf12; del buf12  # reuse
    arg2_1 = rand_strided((8, 512, 4096), (2097152, 4096, 1), device='cuda:0', dtype=torch.float32)
)",
                               cache);
    // An extern kernel's output: its extent, in elements of a type its readers' signatures give.
    EXPECT_EQ(cache.buffers.at("buf13").elements, 16LL * 256 * 56 * 56);
    EXPECT_EQ(cache.buffers.at("buf13").bytes, -1);
    EXPECT_EQ(cache.buffers.at("buf3").bytes, 4096LL * 16384 * 2);
    EXPECT_EQ(cache.buffers.at("buf3").dtype, replay::DType::BFloat16);
    EXPECT_EQ(cache.buffers.at("arg2_1").bytes, 8LL * 512 * 4096 * 4);
    ASSERT_EQ(cache.calls.size(), 1u);
    EXPECT_EQ(cache.calls[0].args.size(), 4u);
    EXPECT_EQ(cache.calls[0].args[3].value, 16384);
}

// max-autotune's Triton GEMM templates (and user kernels) run on a fixed grid that the wrapper
// passes after the kernel's arguments ('extra_launcher_args'); Triton's launcher takes it off
// before the call, as the PTX entry has no such parameters. A pointwise kernel of the same file
// keeps all of its arguments.
TEST(InductorCache, ATemplatesFixedGridIsNoKernelArgument) {
    replay::InductorCache cache;
    replay::parse_wrapper_code(R"PY(
triton_tem_fused_addmm_t_view_2 = async_compile.triton('triton_tem_fused_addmm_t_view_2', '''
@triton_heuristics.template(
    num_stages=3, num_warps=4,
    triton_meta={'signature': {'in_ptr0': '*fp16', 'arg_A': '*fp16', 'arg_B': '*fp16', 'out_ptr0': '*fp16'}, 'device': DeviceProperties(type='cuda', index=0), 'constants': {}},
    inductor_meta={'kernel_name': 'triton_tem_fused_addmm_t_view_2', 'grid_type': 'FixedGrid', 'fixed_grid': ['_grid_0', '_grid_1', '_grid_2'], 'extra_launcher_args': ['_grid_0', '_grid_1', '_grid_2'], 'config_args': {'BLOCK_M': 64}},
)
@triton.jit
def triton_tem_fused_addmm_t_view_2(in_ptr0, arg_A, arg_B, out_ptr0):
    BLOCK_M : tl.constexpr = 64
    tmp0 = tl.load(in_ptr0 + (x0))
''', device_str='cuda')
triton_poi_fused_gelu_view_3 = async_compile.triton('triton_poi_fused_gelu_view_3', '''
@triton_heuristics.pointwise(
    size_hints={'x': 4194304},
    triton_meta={'signature': {'in_out_ptr0': '*fp16', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'constants': {}},
    inductor_meta={'grid_type': 'Grid1D', 'kernel_name': 'triton_poi_fused_gelu_view_3'},
)
@triton.jit
def triton_poi_fused_gelu_view_3(in_out_ptr0, xnumel, XBLOCK : tl.constexpr):
    tmp0 = tl.load(in_out_ptr0 + (x0))
''', device_str='cuda')
        buf2 = empty_strided_cuda((1024, 3072), (3072, 1), torch.float16)
        triton_tem_fused_addmm_t_view_2.run(arg1_1, buf0, arg0_1, buf2, 48, 1, 1, stream=stream0)
        triton_poi_fused_gelu_view_3.run(buf2, 3145728, stream=stream0)
)PY",
                               cache);
    ASSERT_EQ(cache.calls.size(), 2u);
    EXPECT_EQ(cache.calls[0].kernel, "triton_tem_fused_addmm_t_view_2");
    ASSERT_EQ(cache.calls[0].args.size(), 4u);
    for (const auto& a : cache.calls[0].args) EXPECT_FALSE(a.buffer.empty());
    ASSERT_NE(cache.definition_of(cache.calls[0]), nullptr);
    EXPECT_EQ(cache.definition_of(cache.calls[0])->params.size(), 4u);
    ASSERT_EQ(cache.calls[1].args.size(), 2u);
    EXPECT_EQ(cache.calls[1].args[1].value, 3145728);
}

TEST(InductorCache, TheCompiledMlpsTritonKernelsGetTierTriton) {
    replay::AnalysisOptions o;
    o.trace_path = trace_path("h200/mlp_compiled.json.gz");
    const auto without = replay::analyze(o);
    EXPECT_LT(without->coverage, 0.95);
    bool told = false;
    for (const auto& k : without->kernels)
        if (k.name == kKernel) told = k.recipe.reason.find("--inductor-cache") != std::string::npos;
    EXPECT_TRUE(told);

    o.inductor_cache = trace_path(kTar);
    const auto with = replay::analyze(o);
    EXPECT_DOUBLE_EQ(with->coverage, 1.0);
    std::size_t triton = 0;
    for (const auto& k : with->kernels) {
        if (k.recipe.tier != replay::Tier::Triton) continue;
        triton += k.recorded_us.count;
        const auto& t = std::get<replay::TritonRecipe>(k.recipe.detail);
        EXPECT_EQ(t.num_warps, 4);  // recorded block: 128 threads
        EXPECT_EQ(t.grid[0], 65536);
        ASSERT_EQ(t.args.size(), 4u);
        EXPECT_EQ(t.args[0].bytes, 4096LL * 16384 * 2);
        EXPECT_EQ(t.args[1].value, 67108864);
        EXPECT_EQ(t.args[1].bits, 32);
        EXPECT_EQ(t.args[2].bytes, 0);  // no global scratch: a null pointer
        // in_out_ptr0: the GEMM's output, which the kernel reads and writes in place.
        EXPECT_TRUE(t.args[0].read);
        EXPECT_FALSE(t.args[0].graph_input) << t.args[0].buffer;
    }
    EXPECT_EQ(triton, 2u);
}

// A bundled H200 capture analysed with its Inductor cache (`name`.json.gz and .inductor.tar.gz).
std::unique_ptr<replay::Analysis> compiled(const std::string& name) {
    replay::AnalysisOptions o;
    o.trace_path = trace_path("h200/" + name + ".json.gz");
    o.inductor_cache = trace_path("h200/" + name + ".inductor.tar.gz");
    return replay::analyze(o);
}

// A compiled ResNet-50's pointwise kernels (batch norm folded with add and ReLU) read the
// convolution's output (a `buf`, written just before: the warm-up reads' business) and the
// graph's inputs (`arg`: weights and statistics, from before the step).
TEST(InductorCache, TheCompiledResnetsKernelsSayWhatTheyReadAndWhereItComesFrom) {
    const auto a = compiled("resnet_compiled");
    EXPECT_DOUBLE_EQ(a->coverage, 1.0);
    std::size_t kernels = 0, from_a_kernel = 0, from_the_graph = 0;
    for (const auto& k : a->kernels) {
        if (k.recipe.tier != replay::Tier::Triton) continue;
        ++kernels;
        const auto& t = std::get<replay::TritonRecipe>(k.recipe.detail);
        bool reads = false;
        for (const auto& arg : t.args) {
            if (!arg.pointer) continue;
            EXPECT_EQ(arg.graph_input, arg.buffer.starts_with("arg")) << arg.buffer;
            reads |= arg.read;
            from_a_kernel += arg.read && !arg.graph_input;
            from_the_graph += arg.read && arg.graph_input;
        }
        EXPECT_TRUE(reads) << k.name;
    }
    EXPECT_EQ(kernels, 24u);  // unique Triton kernels (68 launches)
    // The in-place pointwise kernel after the third block's convolutions: its bf16 buffers are the
    // convolutions' outputs (sizes asserted, `bufN = bufM  # reuse`), 2 bytes an element.
    bool seen = false;
    for (const auto& k : a->kernels) {
        if (!k.name.ends_with("add_relu_6")) continue;
        seen = true;
        const auto& t = std::get<replay::TritonRecipe>(k.recipe.detail);
        EXPECT_EQ(t.args[0].buffer, "buf13");
        EXPECT_EQ(t.args[0].bytes, 16LL * 256 * 56 * 56 * 2);
        EXPECT_EQ(t.args[5].buffer, "buf11");
        EXPECT_EQ(t.args[5].bytes, 16LL * 256 * 56 * 56 * 2);
        // The two batch norms' variances (in_ptr1, in_ptr6) reach sqrt_rn: filled positive.
        for (std::size_t i = 0; i < t.args.size(); ++i)
            EXPECT_EQ(t.args[i].positive, i == 2 || i == 7) << i;
    }
    EXPECT_TRUE(seen);
    EXPECT_GT(from_a_kernel, kernels / 2);
    EXPECT_GT(from_the_graph, kernels);
}

// torch.compile of a training step: four wrapper files (forward, backward, ...) that each name
// their own buf0, kernels specialised on arguments of 1 (`xnumel`, a seed offset) that the wrapper
// still passes, and a kernel whose name Triton cut short in its cache's file names.
TEST(InductorCache, ACompiledTrainingStepHasARecipeForEveryTritonLaunch) {
    const auto a = compiled("gpt2_compiled");
    EXPECT_DOUBLE_EQ(a->coverage, 1.0);
    for (const auto& k : a->kernels) {
        if (k.recipe.tier != replay::Tier::Triton) continue;
        const auto& t = std::get<replay::TritonRecipe>(k.recipe.detail);
        if (k.name == "triton_poi_fused__to_copy_17") {
            // (768, 2304) bf16 in, float out: the backward wrapper's buf43 and buf46.
            ASSERT_GE(t.args.size(), 3u);
            EXPECT_EQ(t.args[0].bytes, 768LL * 2304 * 2);
            EXPECT_EQ(t.args[1].bytes, 768LL * 2304 * 4);
            EXPECT_EQ(t.args[2].value, 768LL * 2304);
        }
        if (k.name.ends_with("nll_loss_forward_slice_sub_view_2")) {
            // (in_out_ptr0, 4 in_ptrs, out_ptr1, xnumel = 1 (constant), r0_numel): 6 pointers,
            // then r0_numel, then Triton's two scratch pointers.
            ASSERT_EQ(t.args.size(), 9u);
            EXPECT_FALSE(t.args[6].pointer);
            EXPECT_EQ(t.args[6].value, 1024);
        }
    }
}

// A compiled decode step: the cache holds the prefill's graph and the decode's, and both define
// triton_per_fused__to_copy__unsafe_view_add_mean_mul_pow_rsqrt_15, with 6 pointers and 2 numbers
// in one and 7 pointers and 1 number in the other. Each launch takes the call sites of the
// wrapper file whose calls fit a variant of its block, and that file's signature.
TEST(InductorCache, TwoGraphsThatDefineOneKernelNameOtherwiseEachKeepTheirOwn) {
    const auto a = compiled("qwen2_decode_compiled");
    EXPECT_DOUBLE_EQ(a->coverage, 1.0);
    bool seen = false;
    for (const auto& k : a->kernels) {
        if (k.name != "triton_per_fused__to_copy__unsafe_view_add_mean_mul_pow_rsqrt_15") continue;
        seen = true;
        ASSERT_EQ(k.recipe.tier, replay::Tier::Triton) << k.recipe.reason;
        const auto& t = std::get<replay::TritonRecipe>(k.recipe.detail);
        ASSERT_EQ(t.args.size(), 10u);  // 7 pointers, r0_numel, 2 scratch pointers
        for (std::size_t i = 0; i < 7; ++i) EXPECT_TRUE(t.args[i].pointer) << i;
        EXPECT_FALSE(t.args[7].pointer);
        EXPECT_EQ(t.args[7].value, 896);
        EXPECT_FALSE(t.args[6].read);  // out_ptr1 of the decode graph's signature
    }
    EXPECT_TRUE(seen);
}

// Every Triton launch of every bundled compiled capture takes a variant whose block covers the
// recorded grid with its call site's element count, and one compiled from the site's own
// kernel file: the forward and backward graphs of a compiled DLRM each define a
// `triton_poi_fused__to_copy_10` (131072 and 102400 elements) whose images were taken for one
// another, and the one launched with the other's count wrote past its buffers (a device assert
// two kernels later; tests/gpu/VALIDATION.md, thirtieth session).
TEST(InductorCache, EveryTritonLaunchTakesAVariantOfItsOwnKernelThatCoversItsGrid) {
    std::size_t checked = 0;
    for (const char* name : {"dlrm_train_compiled", "gcn_train_compiled", "gpt2_compiled",
                             "qwen2_decode_compiled", "resnet_compiled", "vit_compiled",
                             "bert_compiled_graph", "llama_decode_compiled_graph"}) {
        const auto a = compiled(name);
        const auto cache = replay::read_inductor_cache(
            trace_path(std::string("h200/") + name + ".inductor.tar.gz"));
        std::map<std::string, const replay::TritonVariant*> by_hash;
        for (const auto& v : cache.variants) by_hash[v.hash] = &v;
        std::set<std::string> files_of_copy_10;
        for (const auto& k : a->kernels) {
            if (k.recipe.tier != replay::Tier::Triton) continue;
            const auto& t = std::get<replay::TritonRecipe>(k.recipe.detail);
            const replay::TritonVariant* v = by_hash.at(t.variant);
            EXPECT_FALSE(v->source_file.empty()) << name << " " << t.kernel;
            if (t.kernel == "triton_poi_fused__to_copy_10") files_of_copy_10.insert(v->source_file);
            if (v->x_block <= 0 || v->y_block > 0 || t.grid[1] > 1) continue;
            // One of its integers is its xnumel (others: a seed's offset, r0_numel).
            bool covered = false;
            for (const auto& arg : t.args)
                covered |= !arg.pointer && arg.value > 0 &&
                           (arg.value + v->x_block - 1) / v->x_block == t.grid[0];
            EXPECT_TRUE(covered) << name << " " << t.kernel << " XBLOCK " << v->x_block << " grid "
                                 << t.grid[0];
            ++checked;
        }
        if (std::string(name) == "dlrm_train_compiled") {
            EXPECT_EQ(files_of_copy_10.size(), 2u);
        }
    }
    EXPECT_GT(checked, 100u);
}

TEST(InductorCache, AFolderReadsLikeItsTar) {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("replay_inductor_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string cmd = "tar xzf " + trace_path(kTar) + " -C " + dir.string();
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    const auto cache = replay::read_inductor_cache((dir / "mlp_compiled.inductor").string());
    EXPECT_EQ(cache.variants.size(), 2u);
    EXPECT_EQ(cache.variants_of(kKernel, 128).size(), 1u);
    std::filesystem::remove_all(dir);
}

// The autotuner compiles variants of one warp count that differ in XBLOCK; the one whose block
// covers the launch's elements in the recorded grid is taken, even over the autotuner's pick
// (here a doctored copy of the right variant with twice its XBLOCK, named by a .best_config and
// listed first).
TEST(InductorCache, TheVariantWhoseBlockCoversTheRecordedGridIsTaken) {
    namespace fs = std::filesystem;
    const auto dir = fs::temp_directory_path() / ("replay_variants_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const std::string cmd =
        "tar xzf " + trace_path("h200/resnet_compiled.inductor.tar.gz") + " -C " + dir.string();
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    const fs::path root = dir / "resnet_compiled.inductor";
    const std::string kernel = "triton_poi_fused__native_batch_norm_legit_no_training_add_relu_6";
    auto analyze_with = [&](const fs::path& cache) {
        replay::AnalysisOptions o;
        o.trace_path = trace_path("h200/resnet_compiled.json.gz");
        o.inductor_cache = cache.string();
        return replay::analyze(o);
    };
    auto chosen = [&](const replay::Analysis& a) {
        for (const auto& k : a.kernels)
            if (k.name == kernel) return std::get<replay::TritonRecipe>(k.recipe.detail).variant;
        return std::string();
    };
    const std::string right = chosen(*analyze_with(root));
    ASSERT_FALSE(right.empty());
    const auto cache = replay::read_inductor_cache(root.string());
    for (const auto& v : cache.variants) {
        if (v.name == kernel) {
            EXPECT_TRUE(v.x_block == 512 || v.x_block == 1024) << v.x_block;
            EXPECT_EQ(v.y_block, 0);  // no y axis
        }
    }
    // The doctored variant: the same image and warps, its IR saying XBLOCK is twice as large.
    const fs::path fake = root / "triton" / "AADOCTOREDVARIANT";
    fs::copy(root / "triton" / right, fake);
    const fs::path ttir = fake / (kernel + ".ttir");
    std::ifstream in(ttir);
    std::string ir((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    in.close();
    for (const char* block : {"512", "1024"}) {
        const std::string from = std::string("arith.constant ") + block + " : i32";
        for (auto at = ir.find(from); at != std::string::npos; at = ir.find(from, at + 1))
            ir.replace(at, from.size(),
                       "arith.constant " + std::to_string(2 * std::stoll(block)) + " : i32");
    }
    std::ofstream(ttir) << ir;
    std::ofstream(root / "zz.best_config") << R"({"triton_cache_hash": "AADOCTOREDVARIANT"})";
    EXPECT_EQ(chosen(*analyze_with(root)), right);
    fs::remove_all(dir);
}

// XBLOCK and YBLOCK are what Inductor's `xoffset = tl.program_id(0) * XBLOCK` multiplies the
// program id by; not the tl.arange extents (merged when XBLOCK == YBLOCK), nor a row stride that
// multiplies the id of a one-row program (XBLOCK 1, folded away).
TEST(InductorCache, ProgramBlocksAreWhatTheProgramIdIsMultipliedBy) {
    const std::string tiled = R"(
    %c32_i32 = arith.constant 32 : i32 loc(#loc4)
    %yoffset = tt.get_program_id y : i32 loc(#loc34)
    %yoffset_2 = arith.muli %yoffset, %c32_i32 : i32 loc(#loc35)
    %yindex = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32> loc(#loc36)
    %xoffset = tt.get_program_id x : i32 loc(#loc39)
    %c16_i32 = arith.constant 16 : i32 loc(#loc4)
    %xoffset_7 = arith.muli %c16_i32, %xoffset : i32 loc(#loc40)
)";
    EXPECT_EQ(replay::triton_program_blocks(tiled),
              std::make_pair(std::int64_t{16}, std::int64_t{32}));
    const std::string one_row = R"(
    %c768_i32 = arith.constant 768 : i32 loc(#loc1)
    %xoffset = tt.get_program_id x : i32 loc(#loc65)
    %r0_index = tt.make_range {end = 1024 : i32, start = 0 : i32} : tensor<1024xi32> loc(#loc66)
    %tmp0 = arith.muli %xoffset, %c768_i32 : i32 loc(#loc70)
)";
    EXPECT_EQ(replay::triton_program_blocks(one_row),
              std::make_pair(std::int64_t{1}, std::int64_t{0}));
    // IR without Inductor's names says nothing.
    EXPECT_EQ(replay::triton_program_blocks("%0 = tt.get_program_id x : i32\n"),
              std::make_pair(std::int64_t{0}, std::int64_t{0}));
}

}  // namespace

namespace {

// What reaches rsqrt/sqrt_rn/log through assignments is positive (1e-05 is no variable e); a
// variance the kernel reduces itself (Welford over a loop-carried accumulator, on lines that go
// on) is non-negative whatever its data, which stays signed.
TEST(InductorCache, ArgumentsThatReachASquareRootOrALogarithmArePositive) {
    const std::string body =
        R"(in_ptr0, in_ptr1, in_ptr2, out_ptr0, out_ptr1, xnumel, r0_numel, XBLOCK : tl.constexpr, R0_BLOCK : tl.constexpr):
    xnumel = 256
    xoffset = tl.program_id(0) * XBLOCK
    x0 = xindex
    tmp2_mean = tl.zeros([XBLOCK, R0_BLOCK], tl.float32)
    for r0_offset in range(0, r0_numel, R0_BLOCK):
        tmp0 = tl.load(in_ptr0 + (x0 + 256*r0_1), r0_mask & xmask, eviction_policy='evict_first', other=0.0).to(tl.float32)
        tmp1 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])
        tmp2_mean_next, tmp2_m2_next, tmp2_weight_next = triton_helpers.welford_reduce(
            tmp1, tmp2_mean, tmp2_m2, tmp2_weight, roffset == 0
        )
        tmp2_m2 = tl.where(r0_mask & xmask, tmp2_m2_next, tmp2_m2)
    tmp5 = tmp2_m2 / 100352.0
    tmp6 = 1e-05
    tmp7 = tmp5 + tmp6
    tmp8 = libdevice.rsqrt(tmp7)
    tl.store(out_ptr1 + (x0), tmp8, xmask)
    tmp10 = tl.load(in_ptr1 + (x0), xmask)
    tmp11 = tl_math.log(tmp10 * 2.0) + tl.load(in_ptr2 + (x0), xmask)
    tl.store(out_ptr0 + (x0), tmp11, xmask)
)";
    const auto positive =
        replay::positive_arguments(body, {"in_ptr0", "in_ptr1", "in_ptr2", "out_ptr0", "out_ptr1"});
    EXPECT_EQ(positive, (std::set<std::string>{"in_ptr1"}));
    // Nothing reaches such math: nothing positive.
    EXPECT_TRUE(replay::positive_arguments(
                    "in_ptr0, out_ptr0):\n    tmp0 = tl.load(in_ptr0 + (x0))\n    tmp1 = "
                    "tl.sigmoid(tmp0)\n    tl.store(out_ptr0 + (x0), tmp1)\n",
                    {"in_ptr0", "out_ptr0"})
                    .empty());
}

// Inductor's index checks give the indices' bounds (tests/gpu/VALIDATION.md, thirtieth session:
// zeros put a compiled GCN's scatter_add on one row, 22x slower than recorded).
TEST(InductorCache, IndexBoundsComeFromTheKernelsChecks) {
    // A compiled GCN's gather-multiply-scatter (its source, shortened): in_ptr0 holds both rows
    // of the edge index, each checked below 50000, the second after the negative-index wrap.
    const std::string scatter =
        R"(in_ptr0, in_ptr1, in_ptr2, out_ptr0, ynumel, xnumel, YBLOCK : tl.constexpr, XBLOCK : tl.constexpr):
    tmp0 = tl.load(in_ptr0 + (800000 + y0), ymask, eviction_policy='evict_last')
    tmp2 = tl.load(in_ptr0 + (y0), ymask, eviction_policy='evict_last')
    tmp10 = tl.load(in_ptr2 + (y0), ymask, eviction_policy='evict_last')
    tl.device_assert(((0 <= tmp0) & (tmp0 < 50000)) | ~(ymask), "index out of bounds: 0 <= tmp0 < 50000")
    tmp3 = tl.full([1, 1], 50000, tl.int32)
    tmp4 = tmp2 + tmp3
    tmp5 = tmp2 < 0
    tmp6 = tl.where(tmp5, tmp4, tmp2)
    tl.device_assert(((0 <= tmp6) & (tmp6 < 50000)) | ~(ymask), "index out of bounds: 0 <= tmp6 < 50000")
    tmp8 = tl.load(in_ptr1 + (x1 + 256*tmp6), xmask & ymask).to(tl.float32)
    tl.atomic_add(out_ptr0 + (tl.broadcast_to(x1 + 256*tmp0, [YBLOCK, XBLOCK])), tmp8 * tmp10, xmask & ymask, sem='relaxed')
)";
    const std::vector<std::string> four = {"in_ptr0", "in_ptr1", "in_ptr2", "out_ptr0"};
    EXPECT_EQ(replay::index_bounds(scatter, four),
              (std::map<std::string, std::int64_t>{{"in_ptr0", 50000}}));
    // A compiled DLRM's interaction: a cast after the load, the check on a broadcast, and the
    // smaller of two bounds.
    const std::string cat = R"(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    tmp9 = tl.load(in_ptr1 + ((-64) + x0), tmp6, eviction_policy='evict_last', other=0.0).to(tl.int64)
    tmp10 = tl.full([XBLOCK], 9, tl.int32)
    tmp11 = tmp9 + tmp10
    tmp12 = tmp9 < 0
    tmp13 = tl.where(tmp12, tmp11, tmp9)
    tl.device_assert(((0 <= tl.broadcast_to(tmp13, [XBLOCK])) & (tl.broadcast_to(tmp13, [XBLOCK]) < 9)) | ~(tmp6), "index out of bounds: 0 <= tl.broadcast_to(tmp13, [XBLOCK]) < 9")
    tmp15 = tl.load(in_ptr1 + (36 + x0), tmp6)
    tl.device_assert((0 <= tmp15) & (tmp15 < 7), "index out of bounds: 0 <= tmp15 < 7")
    tmp20 = tl.load(in_ptr0 + (tmp15 + 9*tmp13), tmp6).to(tl.float32)
    tl.store(out_ptr0 + (x2), tmp20, None)
)";
    EXPECT_EQ(replay::index_bounds(cat, {"in_ptr0", "in_ptr1", "out_ptr0"}),
              (std::map<std::string, std::int64_t>{{"in_ptr1", 7}}));
    // Other arithmetic between the load and the check (values below the bound would pass it
    // plus one), a wrap by another constant, a symbolic bound: no bound, the parameter stays zeros.
    for (const char* between :
         {"    tmp1 = tmp0 + 1\n    tl.device_assert((0 <= tmp1) & (tmp1 < 64), \"index out of "
          "bounds: 0 <= tmp1 < 64\")\n",
          "    tmp1 = tmp0 + 32\n    tmp2 = tmp0 < 0\n    tmp3 = tl.where(tmp2, tmp1, tmp0)\n    "
          "tl.device_assert((0 <= tmp3) & (tmp3 < 64), \"index out of bounds: 0 <= tmp3 < 64\")\n",
          "    tl.device_assert((0 <= tmp0) & (tmp0 < ks0), \"index out of bounds: 0 <= tmp0 < "
          "ks0\")\n"}) {
        const std::string body =
            "in_ptr0, out_ptr0, ks0, xnumel):\n    tmp0 = tl.load(in_ptr0 + (x0), xmask)\n" +
            std::string(between) +
            "    tl.device_assert((0 <= tmp0) & (tmp0 < 64), \"index out of bounds: 0 <= tmp0 < "
            "64\")\n";
        EXPECT_TRUE(replay::index_bounds(body, {"in_ptr0", "out_ptr0"}).empty()) << between;
    }
    // Two parameters in one checked value: neither.
    EXPECT_TRUE(replay::index_bounds(
                    "a):\n    tmp0 = tl.load(in_ptr0 + (x0))\n    tmp1 = tl.load(in_ptr1 + (x0))\n"
                    "    tmp2 = tl.where(tmp0 < 0, tmp0, tmp1)\n"
                    "    tl.device_assert((0 <= tmp2) & (tmp2 < 8), \"index out of bounds: 0 <= "
                    "tmp2 < 8\")\n",
                    {"in_ptr0", "in_ptr1"})
                    .empty());
}

}  // namespace
