// Graph links and tier decisions on the bundled H200 BLOOM trace and a 2021 trace.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <sstream>

#include "classifier_facts.h"
#include "replay/analysis.h"
#include "replay/recipe_json.h"
#include "replay/reuse.h"
#include "test_support.h"

using replay::testing::trace_path;

namespace {

std::unique_ptr<replay::Analysis> analyze(const std::string& relative, const std::string& et = "",
                                          bool infer_dataflow = true) {
    replay::AnalysisOptions options;
    options.trace_path = trace_path(relative);
    options.infer_dataflow = infer_dataflow;
    if (!et.empty()) options.execution_trace_path = trace_path(et);
    return replay::analyze(options);
}

// The analysis's kernels written to kernel_signatures.json and read back.
replay::SignatureFile through_signature_file(const replay::Analysis& a, const std::string& name) {
    replay::SignatureFile file{name, a.trace_hash, a.kernels, ""};
    std::ostringstream text;
    replay::write_signature_file(text, file);
    replay::testing::TempFile saved("signatures.json", text.str());
    return replay::read_signature_file(saved.path());
}

}  // namespace

TEST(Classifier, EveryBloomGemmKernelHasATier2RecipeMatchingInputDims) {
    auto a = analyze("h200/bloom560m_fp16_b1_s5.json.gz");
    simdjson::dom::parser parser;
    std::map<std::int64_t, std::array<std::int64_t, 4>> expected;  // external id -> m, n, k, batch
    for (auto g : parser.load(trace_path("expected_gemms_bloom.json")).get_array())
        expected[g["external_id"].get_int64()] = {g["m"].get_int64(), g["n"].get_int64(),
                                                  g["k"].get_int64(), g["batch"].get_int64()};
    ASSERT_EQ(expected.size(), 145u);
    const auto& trace = a->trace();
    std::size_t gemm_kernels = 0;
    for (std::size_t i = 0; i < a->graph.nodes().size(); ++i) {
        const auto& node = a->graph.nodes()[i];
        const auto& activity = a->graph.activity(node);
        if (activity.kind != replay::ActivityKind::Kernel) continue;
        // Kernels whose innermost op is the GEMM op (a broadcast copy of baddbmm's `self` runs
        // under its own aten::copy_ and is replayed as that op).
        const auto chain = a->graph.op_chain(node);
        for (auto op : chain) {
            if (op != chain.front()) break;
            auto it = expected.find(trace.cpu_ops[op].external_id);
            if (it == expected.end()) continue;
            ++gemm_kernels;
            const auto& r = a->recipes.decision(i);
            ASSERT_EQ(r.tier, replay::Tier::Gemm)
                << trace.names.view(activity.name) << " rule " << r.rule << ": " << r.reason;
            const auto& g = std::get<replay::GemmRecipe>(r.detail);
            EXPECT_EQ(g.m, it->second[0]);
            EXPECT_EQ(g.n, it->second[1]);
            EXPECT_EQ(g.k, it->second[2]);
            EXPECT_EQ(g.batch, it->second[3]);
            EXPECT_EQ(g.a_type, replay::DType::Float16);
            break;
        }
    }
    EXPECT_GE(gemm_kernels, 145u + 24u);  // 24 split-K GEMMs add a reduction kernel each
    EXPECT_GE(a->coverage, 0.99);
}

TEST(Classifier, SplitKReductionIsIssuedWithItsGemm) {
    auto a = analyze("h200/bloom560m_fp16_b1_s5.json.gz");
    std::size_t reductions = 0;
    for (std::size_t i = 0; i < a->graph.nodes().size(); ++i) {
        const auto name = a->trace().names.view(a->graph.activity(a->graph.nodes()[i]).name);
        if (name.find("splitKreduce") == std::string_view::npos) continue;
        ++reductions;
        EXPECT_EQ(a->recipes.decision(i).rule, "gemm-splitk-reduce");
        EXPECT_TRUE(a->recipes.decision(i).issued_with_op);
    }
    EXPECT_EQ(reductions, 24u);
}

// Qwen2's decode: biased projections of one row. PyTorch 2.11 took cuBLASLt's bias path for them
// (nvjet `_bias_` kernels) although its older size rule (m > 1) says not: the recipe carries what
// the recorded kernel shows, so the replay takes the same path. A bias GEMM whose kernel shows
// no epilogue (BLOOM's have one) is left to the size rule.
TEST(Classifier, TheRecordedBiasEpilogueIsKeptForOneRowGemms) {
    auto a = analyze("h200/qwen2_decode.json.gz");
    std::size_t one_row_bias = 0, with_bias = 0;
    for (std::size_t i = 0; i < a->graph.nodes().size(); ++i) {
        const auto& r = a->recipes.decision(i);
        const auto* g = std::get_if<replay::GemmRecipe>(&r.detail);
        if (g == nullptr || r.issued_with_op || !g->bias) continue;
        ++with_bias;
        const auto name = a->trace().names.view(a->graph.activity(a->graph.nodes()[i]).name);
        EXPECT_EQ(g->bias_epilogue_recorded, name.find("bias") != std::string_view::npos) << name;
        one_row_bias += g->m == 1 && g->bias_epilogue_recorded;
    }
    EXPECT_EQ(with_bias, 72u);  // q, k and v of 24 layers
    EXPECT_EQ(one_row_bias, 72u);
}

// An fp32 BERT recorded with torch.set_float32_matmul_precision("high"): cuBLAS and CUTLASS ran
// its GEMMs on TF32 tensor cores (`gemm_f32f32_tf32f32`, `tensorop_s1688gemm`), which only the
// kernel names tell. Each GEMM recipe keeps it, through kernel_signatures.json too; the same
// model recorded without TF32 (`ffma` kernels) has none.
TEST(Classifier, Fp32GemmsKeepTheTf32TheirKernelsRanOn) {
    auto count = [](const char* trace) {
        auto a = analyze(trace);
        std::size_t gemms = 0, tf32 = 0, tf32_after_file = 0;
        for (std::size_t i = 0; i < a->graph.nodes().size(); ++i) {
            const auto* g = std::get_if<replay::GemmRecipe>(&a->recipes.decision(i).detail);
            if (g == nullptr) continue;
            ++gemms;
            tf32 += g->tf32_recorded;
            EXPECT_EQ(g->a_type, replay::DType::Float32);
        }
        for (const auto& k : through_signature_file(*a, trace).kernels)
            if (const auto* g = std::get_if<replay::GemmRecipe>(&k.recipe.detail))
                tf32_after_file += g->tf32_recorded;
        return std::array<std::size_t, 3>{gemms, tf32, tf32_after_file};
    };
    const auto tf32 = count("h200/bert_infer_tf32.json.gz");
    EXPECT_EQ(tf32[0], 74u);  // 12 layers x (q, k, v, o, up, down) + the head's two
    EXPECT_EQ(tf32[1], tf32[0]);
    EXPECT_GT(tf32[2], 0u);
    const auto ieee = count("h200/bert_infer_fp32.json.gz");
    EXPECT_EQ(ieee[0], 74u);
    EXPECT_EQ(ieee[1], 0u);
    EXPECT_EQ(ieee[2], 0u);
    for (const char* name :
         {"sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32",
          "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x256_32x3_nt_"
          "align1>(cutlass_80_tensorop_s1688gemm_128x256_32x3_nt_align1::Params)",
          "sm90_xmma_gemm_f32f32_tf32f32_f32_nt_n_tilesize256x128x32"})
        EXPECT_TRUE(replay::classifier_detail::kernel_uses_tf32(name)) << name;
    for (const char* name :
         {"sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x64x8_stage3_warpsize2x2x1_ffma",
          "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nt_align1>",
          "nvjet_sm90_hsh_8x64_64x16_2x1_v_bz_bias_TNN", "ampere_sgemm_128x64_nn",
          "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT"})  // bfloat16's code
        EXPECT_FALSE(replay::classifier_detail::kernel_uses_tf32(name)) << name;
    // What a GEMM's kernel says of its operands where the op's types were not recorded.
    using replay::classifier_detail::dtype_from_kernel_name;
    EXPECT_EQ(dtype_from_kernel_name("nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT"),
              replay::DType::BFloat16);  // Llama's bf16 decode GEMMs
    EXPECT_EQ(dtype_from_kernel_name("nvjet_sm90_hsh_8x64_64x16_2x1_v_bz_bias_TNN"),
              replay::DType::Float16);  // BLOOM's fp16
    EXPECT_EQ(dtype_from_kernel_name("sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32"),
              replay::DType::Float32);
}

// annotate_reuse() takes each node's innermost op with shapes from the classifier's op-chain walk
// (as analyze() hands it on) or finds it on the op chain itself: the same reuse distances.
TEST(Reuse, DistancesFromTheClassifiersWalkEqualThoseFromTheOpChains) {
    for (const char* trace : {"h200/bloom560m_fp16_b1_s5.json.gz", "h200/gpt2_train.json.gz",
                              "h200/mixtral_prefill.json.gz", "h200/llama_decode_graph.json.gz"}) {
        auto a = analyze(trace);
        std::size_t known = 0;
        std::vector<std::uint32_t> walked;
        replay::NodeRecipes with_walk =
            replay::classify(a->graph, replay::ClassifyCheck::None, 2, &walked);
        ASSERT_EQ(walked.size(), a->graph.nodes().size()) << trace;
        replay::NodeRecipes without = with_walk;
        replay::annotate_reuse(a->graph, with_walk, walked);
        replay::annotate_reuse(a->graph, without);
        for (std::size_t n = 0; n < a->graph.nodes().size(); ++n) {
            const auto x = with_walk.reuse(n), y = without.reuse(n);
            ASSERT_TRUE(std::equal(x.begin(), x.end(), y.begin(), y.end()))
                << trace << " node " << n;
            known += std::count_if(x.begin(), x.end(),
                                   [](std::int64_t d) { return d != replay::kReuseUnknown; });
        }
        // The inferred dataflow gives storage ids to reuse; the CUDA-graph decode's kernels have
        // no op (nothing to measure there, but every node to walk past).
        if (std::string_view(trace).find("graph") == std::string_view::npos) {
            EXPECT_GT(known, 100u) << trace;
        }
    }
}

// classify() decides once per distinct set of what the rules look at; each activity classified
// on its own, from the op chain the graph lists for it, must get the very same recipe
// (ClassifyCheck::EveryActivity throws on the first that does not). With the Execution Trace
// every op has shapes and storage ids of its own.
TEST(Classifier, SharedDecisionsEqualClassifyingEachActivityAlone) {
    const std::pair<const char*, const char*> traces[] = {
        {"h200/bloom560m_fp16_b1_s5.json.gz", ""},
        {"h200/bloom560m_fp16_b1_s5.json.gz", "h200/bloom560m_fp16_b1_s5.et.json.gz"},
        {"h200/mixtral_prefill.json.gz", ""},  // index-list-from-children: the op's children
        {"public/HolisticTraceAnalysis/control.json.gz", ""},
        {"public/HolisticTraceAnalysis/nccl_data.json.gz", ""},
        {"public/HolisticTraceAnalysis/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", ""},
        {"public/TraceLens/eager_trace.json.gz", ""},
        {"public/TraceLens/resnet_act_checkpoint.json.gz", ""},
        {"public/param/linear_kineto.json.gz", ""},
        {"public/pytorch-kineto/worker0.1623143089861.pt.trace.json.gz", ""},
        {"public/pytorch-kineto/worker0.pt.trace.json.gz", ""},
    };
    for (const auto& [trace, et] : traces)
        for (const bool dataflow : {true, false}) {
            auto a = analyze(trace, et, dataflow);
            replay::NodeRecipes checked;
            // The op chains walked first (one thread) and on a thread of their own, ahead.
            for (const unsigned threads : {1u, 2u})
                EXPECT_NO_THROW(checked = replay::classify(
                                    a->graph, replay::ClassifyCheck::EveryActivity, threads))
                    << trace << " " << et << " " << threads << " threads";
            ASSERT_EQ(checked.size(), a->graph.nodes().size()) << trace;
            // Without storage ids (no Execution Trace, no inferred dataflow) a few hundred
            // decisions cover thousands of activities. Storage ids, recorded or inferred, are
            // per op instance but stay beside the table: it holds the same decisions.
            EXPECT_LT(4 * checked.table().size(), checked.size()) << trace << " " << et;
            if (*et == '\0' && dataflow) {
                auto without = analyze(trace, et, false);
                EXPECT_EQ(a->recipes.table().size(), without->recipes.table().size()) << trace;
            }
        }
}

TEST(Classifier, EveryDecisionNamesItsRuleAndUnreplayableOnesAReason) {
    for (const char* t : {"public/pytorch-kineto/worker0.pt.trace.json.gz",
                          "public/HolisticTraceAnalysis/nccl_data.json.gz",
                          "public/TraceLens/eager_trace.json.gz"}) {
        auto a = analyze(t);
        for (const auto& r : a->recipes.table()) {
            EXPECT_FALSE(r.rule.empty()) << t;
            if (!r.replayable()) {
                EXPECT_FALSE(r.reason.empty()) << t << " rule " << r.rule;
            }
        }
    }
}

TEST(Classifier, NcclKernelsAreTier4WithCollectiveMetadata) {
    auto a = analyze("public/HolisticTraceAnalysis/nccl_data.json.gz");
    std::size_t collectives = 0;
    for (const auto& k : a->kernels) {
        if (k.name.find("nccl") == std::string::npos) continue;
        ++collectives;
        ASSERT_EQ(k.recipe.tier, replay::Tier::Collective);
        const auto& c = std::get<replay::CollectiveRecipe>(k.recipe.detail);
        EXPECT_FALSE(c.collective.empty());
    }
    EXPECT_GT(collectives, 0u);
}

// Kineto writes a tensor list as [] (HTA's control trace: aten::cat); no replay can build its
// inputs from that, so the kernel is not replayable, with the reason, rather than a tier-3 recipe
// that fails at replay.
TEST(Classifier, TensorListWithoutItsTensorsIsNotReplayable) {
    auto a = analyze("public/HolisticTraceAnalysis/control.json.gz");
    std::size_t flagged = 0;
    for (const auto& k : a->kernels) {
        if (k.recipe.rule != "tensor-list-unrecorded") continue;
        ++flagged;
        EXPECT_EQ(k.recipe.tier, replay::Tier::NotReplayable);
        EXPECT_NE(k.recipe.reason.find("aten::cat"), std::string::npos) << k.recipe.reason;
        EXPECT_NE(k.recipe.reason.find("--et"), std::string::npos);
    }
    EXPECT_GT(flagged, 0u);
    // BLOOM has no tensor-list argument recorded empty: every kernel keeps its recipe.
    for (const auto& k : analyze("h200/bloom560m_fp16_b1_s5.json.gz")->kernels)
        EXPECT_NE(k.recipe.rule, "tensor-list-unrecorded") << k.name;
}

TEST(Graph, LinksKernelsToLaunchesAndOps) {
    auto a = analyze("h200/bloom560m_fp16_b1_s5.json.gz");
    const auto& s = a->graph.stats();
    EXPECT_EQ(s.linked, a->graph.nodes().size());
    EXPECT_GT(s.driver_launches, 0u);  // cuLaunchKernel(Ex) for nvjet/cutlass kernels
    // 2021 schema: string tids, "external id", Runtime/Operator categories.
    auto old = analyze("public/pytorch-kineto/worker0.pt.trace.json.gz");
    // 733 of its 10,015 activities have no runtime event with their correlation id in the file.
    EXPECT_EQ(old->graph.stats().no_launch, 733u);
    EXPECT_GT(static_cast<double>(old->graph.stats().linked),
              0.9 * static_cast<double>(old->graph.nodes().size()));
}

TEST(Graph, ExecutionTraceFixesOverloads) {
    auto a = analyze("h200/bloom560m_fp16_b1_s5.json.gz", "h200/bloom560m_fp16_b1_s5.et.json.gz");
    std::size_t with_schema = 0;
    for (const auto& k : a->kernels)
        if (const auto* op = std::get_if<replay::AtenRecipe>(&k.recipe.detail);
            op && !op->schema.empty())
            ++with_schema;
    EXPECT_GT(with_schema, 10u);
}

struct ReuseCounts {
    std::size_t gemms = 0, cold_weights = 0, warm_activations = 0, unknown = 0;
};

ReuseCounts count_addmm_reuse(const replay::Analysis& a) {
    ReuseCounts c;
    for (std::size_t n = 0; n < a.recipes.size(); ++n) {
        const replay::Recipe recipe = a.recipes.recipe(n);
        const auto* g = std::get_if<replay::GemmRecipe>(&recipe.detail);
        if (g == nullptr || g->op != "aten::addmm") continue;
        ++c.gemms;
        // addmm(bias, input, weight^T): B is the weight, A the activation; a split-K reduction
        // kernel of the same op sees the same state.
        if (g->b_reuse_bytes == replay::kReuseFirstTouch) ++c.cold_weights;
        if (g->a_reuse_bytes >= 0 && g->a_reuse_bytes < (8 << 20)) ++c.warm_activations;
        if (g->a_reuse_bytes == replay::kReuseUnknown) ++c.unknown;
    }
    return c;
}

// Reuse distances separate a layer's weights (first touched in this inference step: from memory)
// from the activations its producer just wrote (a short distance), which is what unique mode's
// --context recorded keeps in L2. The Execution Trace gives them; without it the inferred dataflow
// must give the same split, and with inference off nothing is known.
TEST(Reuse, WeightsAreFirstTouchesAndActivationsAreRecent) {
    const auto with_et =
        count_addmm_reuse(*analyze("h200/bloom560m_fp16_b1_s5.json.gz", "h200/bloom560m_fp16_b1_s5.et.json.gz"));
    ASSERT_GT(with_et.gemms, 50u);
    EXPECT_EQ(with_et.cold_weights, with_et.gemms);
    EXPECT_EQ(with_et.warm_activations, with_et.gemms);

    const auto inferred = count_addmm_reuse(*analyze("h200/bloom560m_fp16_b1_s5.json.gz"));
    ASSERT_GT(inferred.gemms, 50u);
    EXPECT_EQ(inferred.cold_weights, inferred.gemms);
    EXPECT_EQ(inferred.warm_activations, inferred.gemms);

    const auto blind = count_addmm_reuse(*analyze("h200/bloom560m_fp16_b1_s5.json.gz", "", false));
    ASSERT_GT(blind.gemms, 0u);
    EXPECT_EQ(blind.unknown, blind.gemms);
}

// kernel_signatures.json keeps the reuse distances, so that --kernels replays start each kernel
// with the same L2 contents as a replay from the trace.
TEST(Reuse, DistancesSurviveTheSignatureFile) {
    auto a = analyze("h200/bloom560m_fp16_b1_s5.json.gz", "h200/bloom560m_fp16_b1_s5.et.json.gz");
    const auto back = through_signature_file(*a, "bloom");
    ASSERT_EQ(back.kernels.size(), a->kernels.size());
    std::size_t compared = 0;
    for (std::size_t i = 0; i < back.kernels.size(); ++i) {
        const auto& before = a->kernels[i].recipe.detail;
        const auto& after = back.kernels[i].recipe.detail;
        if (const auto* g = std::get_if<replay::GemmRecipe>(&before)) {
            const auto& h = std::get<replay::GemmRecipe>(after);
            EXPECT_EQ(h.a_reuse_bytes, g->a_reuse_bytes);
            EXPECT_EQ(h.b_reuse_bytes, g->b_reuse_bytes);
            EXPECT_EQ(h.c_reuse_bytes, g->c_reuse_bytes);
            ++compared;
        } else if (const auto* op = std::get_if<replay::AtenRecipe>(&before)) {
            const auto& back_op = std::get<replay::AtenRecipe>(after);
            ASSERT_EQ(back_op.args.size(), op->args.size());
            for (std::size_t j = 0; j < op->args.size(); ++j)
                for (std::size_t t = 0; t < op->args[j].tensors.size(); ++t)
                    EXPECT_EQ(back_op.args[j].tensors[t].reuse_bytes,
                              op->args[j].tensors[t].reuse_bytes);
            ++compared;
        }
    }
    EXPECT_GT(compared, 30u);
}

// roctracer records hipStreamWaitEvent but no hipEventRecord: the wait's producer is the work the
// thread launched last before it. The MI300X DDP trace's RCCL stream waits on the compute stream.
TEST(Graph, HipStreamWaitsWithoutEventRecords) {
    auto a = analyze("public/TraceLens/resnet_act_checkpoint.json.gz");
    const auto& waits = a->graph.waits();
    EXPECT_GE(waits.size(), 12u);
    for (const auto& w : waits) {
        EXPECT_NE(w.producer_stream, w.waiting_stream);
        EXPECT_LT(a->graph.launch_time(a->graph.nodes()[w.producer]),
                  a->graph.launch_time(a->graph.nodes()[w.waiter]));
    }
}

// Kineto records the Tensor?[] of aten::index / index_put_ as []: the indices come from the op's
// own children (self restrided by as_strided, each index reshaped), checked against the sizes
// recorded in Concrete Inputs; without them (HTA's 2022 trace has none, and x[:, i] looks like
// x[i]) the op keeps the plain aten-op classification.
TEST(Classifier, IndexListsComeFromTheOpsChildren) {
    auto a = analyze("h200/mixtral_prefill.json.gz");
    std::size_t index_kernels = 0;
    for (const auto& k : a->kernels) {
        const auto* op = std::get_if<replay::AtenRecipe>(&k.recipe.detail);
        if (op == nullptr || (op->op != "aten::index" && op->op != "aten::_index_put_impl_"))
            continue;
        ++index_kernels;
        EXPECT_EQ(k.recipe.rule, "index-list-from-children");
        ASSERT_GE(op->args.size(), 2u);
        ASSERT_EQ(op->args[1].kind, replay::ArgKind::TensorList);
        ASSERT_EQ(op->args[1].tensors.size(), 1u);
        // 512 tokens x top-2 routed rows.
        EXPECT_EQ(op->args[1].tensors[0].dims, (std::vector<std::int64_t>{1024}));
        EXPECT_EQ(op->args[1].tensors[0].dtype, replay::DType::Int64);
    }
    EXPECT_EQ(index_kernels, 4u);
    // DLRM's interaction takes the upper triangle, x[:, rows, cols]: [None, rows, cols] on
    // [2048, 9, 9], in the forward (AdvancedIndex: self restrided to [2048, 36]) and in the
    // backward's accumulating index_put_ (remainder by 9 for each index; values [2048, 36]).
    auto ours = analyze("h200/dlrm_train.json.gz");
    std::set<std::string> recovered;
    for (const auto& k : ours->kernels) {
        const auto* op = std::get_if<replay::AtenRecipe>(&k.recipe.detail);
        if (op == nullptr || (op->op != "aten::index" && op->op != "aten::_index_put_impl_"))
            continue;
        EXPECT_EQ(k.recipe.rule, "index-list-from-children");
        ASSERT_EQ(op->args[1].kind, replay::ArgKind::TensorList);
        EXPECT_EQ(op->args[1].leading_nones, 1u);
        ASSERT_EQ(op->args[1].tensors.size(), 2u);
        for (const auto& t : op->args[1].tensors)
            EXPECT_EQ(t.dims, (std::vector<std::int64_t>{36}));
        recovered.insert(op->op);
    }
    EXPECT_EQ(recovered.size(), 2u);
    auto dlrm = analyze("public/HolisticTraceAnalysis/control.json.gz");
    for (const auto& r : dlrm->recipes.table()) EXPECT_NE(r.rule, "index-list-from-children");
}

// Kineto records no dtype for aten::cat's TensorList: the inferred dataflow gives the elements
// their producers' dtype, so each cat replays the kernel that copies elements of the recorded
// size (CatArrayBatchedCopy<OpaqueType<N>>: N bytes; bf16 halves of rotate_half in Llama).
TEST(Classifier, LlamaCatListsHaveTheElementSizeTheirKernelCopies) {
    auto a = analyze("h200/llama_decode.json.gz");
    std::size_t cats = 0, bf16 = 0;
    for (const auto& k : a->kernels) {
        const auto* aten = std::get_if<replay::AtenRecipe>(&k.recipe.detail);
        const auto opaque = k.name.find("OpaqueType<");
        if (aten == nullptr || aten->op != "aten::cat" || opaque == std::string::npos) continue;
        const std::size_t bytes = std::stoul(k.name.substr(opaque + 11));
        ASSERT_FALSE(aten->args.empty());
        ASSERT_FALSE(aten->args[0].tensors.empty());
        for (const auto& t : aten->args[0].tensors) {
            EXPECT_EQ(replay::element_size(t.dtype), bytes) << k.name;
            bf16 += t.dtype == replay::DType::BFloat16;
        }
        ++cats;
    }
    EXPECT_EQ(cats, 3u);
    EXPECT_EQ(bf16, 4u);  // the two rotate_half cats (q and k), two bf16 halves each
}

// cuDNN's RNN takes its weights in its input's dtype ("Input and parameter tensors are not the
// same dtype"). Kineto records the weight list's dims but no dtype, and in inference no earlier
// op made the weights: the list takes the input's dtype (bf16 here, not the float32 default),
// with the dataflow inferred or not. In training, autocast's copies of the weights give them
// their dtype (fp16: autocast runs cuDNN's RNN in half).
TEST(Classifier, RecurrentOpsWeightListsHaveTheirInputsDtype) {
    for (const bool infer : {true, false}) {
        for (const auto& [trace, want] :
             {std::pair{"h200/lstm_infer.json.gz", replay::DType::BFloat16},
              std::pair{"h200/lstm_train.json.gz", replay::DType::Float16}}) {
            auto a = analyze(trace, "", infer);
            std::size_t lists = 0;
            for (const auto& k : a->kernels) {
                const auto* aten = std::get_if<replay::AtenRecipe>(&k.recipe.detail);
                if (aten == nullptr || !aten->op.starts_with("aten::_cudnn_rnn")) continue;
                for (const auto& arg : aten->args) {
                    if (arg.kind != replay::ArgKind::TensorList) continue;
                    for (const auto& t : arg.tensors)
                        EXPECT_EQ(t.dtype, want) << trace << " " << aten->op;
                    lists += !arg.tensors.empty();
                }
            }
            EXPECT_GT(lists, 0u) << trace;
        }
    }
}

// Kineto records a list of 64 tensors as []: Mamba's torch.stack of its scan steps. The stack ran
// one aten::unsqueeze per element; their inputs are the stack's list and their outputs the list of
// the aten::cat inside it, which replays with the recovered list (the one kernel of the trace that
// had no recipe).
TEST(Classifier, MambasStackListsComeFromTheirUnsqueezes) {
    auto a = analyze("h200/mamba_infer.json.gz");
    EXPECT_DOUBLE_EQ(a->coverage, 1.0);
    std::size_t cats = 0;
    for (const auto& k : a->kernels) {
        const auto* aten = std::get_if<replay::AtenRecipe>(&k.recipe.detail);
        if (aten == nullptr || aten->op != "aten::cat") continue;
        ++cats;
        EXPECT_TRUE(k.recipe.replayable()) << k.recipe.reason;
        EXPECT_NE(k.recipe.reason.find("the outputs of the 64 aten::unsqueeze ops"),
                  std::string::npos)
            << k.recipe.reason;
        ASSERT_FALSE(aten->args.empty());
        const auto& list = aten->args[0].tensors;
        ASSERT_EQ(list.size(), 64u);
        for (const auto& t : list) {
            EXPECT_EQ(t.dims, (std::vector<std::int64_t>{2, 1536, 1}));
            EXPECT_EQ(t.strides,
                      (std::vector<std::int64_t>{1536, 1, 1}));  // as_strided's, recorded
            EXPECT_EQ(t.dtype, replay::DType::Float16);
        }
    }
    EXPECT_EQ(cats, 1u);
}

// Kineto records a Python number PyTorch wrapped (`x + 1`) and a 0-dim device tensor alike
// (`long int`, dims []); the recorded kernel tells them apart (CUDAFunctorOnSelf_add folds a CPU
// scalar `other` into the functor, CUDAFunctor_add reads two device tensors), and the recipe
// says so, in memory and through kernel_signatures.json.
TEST(Classifier, LlamaZeroDimOperandsArePlacedByTheirKernel) {
    using replay::Placement;
    auto a = analyze("h200/llama_decode.json.gz");
    struct Seen {
        std::string op, kernel;
        std::vector<Placement> placements;  // of the two tensor operands
    };
    std::vector<Seen> seen;
    for (const auto& k : a->kernels) {
        const auto* aten = std::get_if<replay::AtenRecipe>(&k.recipe.detail);
        if (aten == nullptr || aten->args.size() < 2) continue;
        if (k.name.find("Functor") == std::string::npos) continue;
        Seen s{aten->op, k.name, {}};
        for (std::size_t i = 0; i < 2; ++i) s.placements.push_back(aten->args[i].placement);
        if (s.placements[0] != Placement::Unknown || s.placements[1] != Placement::Unknown)
            seen.push_back(std::move(s));
    }
    const auto count = [&](const std::string& op, const std::string& kernel, Placement self,
                           Placement other) {
        return std::count_if(seen.begin(), seen.end(), [&](const Seen& s) {
            return s.op == op && s.kernel.find(kernel) != std::string::npos &&
                   s.placements == std::vector<Placement>{self, other};
        });
    };
    // position + [] long: the [] is a device tensor (three-operand CUDAFunctor_add).
    EXPECT_EQ(count("aten::add", "CUDAFunctor_add<long>", Placement::Unknown, Placement::Device), 1);
    // [257] + 1 and the in-place counter += 1: the 1 is a CPU scalar.
    EXPECT_EQ(count("aten::add", "CUDAFunctorOnSelf_add<long>", Placement::Unknown, Placement::Host), 1);
    EXPECT_EQ(count("aten::add_", "CUDAFunctorOnSelf_add<long>", Placement::Device, Placement::Host), 1);
    // RMSNorm's variance + eps, and x * scale: doubles wrapped (mul folds either side into
    // AUnaryFunctor: the 0-dim operand is the scalar).
    EXPECT_EQ(count("aten::add", "CUDAFunctorOnSelf_add<float>", Placement::Unknown, Placement::Host), 1);
    EXPECT_EQ(count("aten::mul", "AUnaryFunctor<float", Placement::Unknown, Placement::Host), 1);
    EXPECT_EQ(seen.size(), 5u);

    const auto back = through_signature_file(*a, "llama");
    ASSERT_EQ(back.kernels.size(), a->kernels.size());
    for (std::size_t i = 0; i < back.kernels.size(); ++i)
        EXPECT_EQ(back.kernels[i].recipe, a->kernels[i].recipe) << a->kernels[i].name;
}
