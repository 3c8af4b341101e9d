// --set-dims on the CPU: the BLOOM-560M b1 s5 capture rewritten to batch 4, seq 128 held against
// the real b4 s128 capture kernel for kernel (shapes and layouts), the copies a reshape makes at
// the new shape, and the pieces they rest on (PyTorch's view rule, the copies' layouts).
#include <gtest/gtest.h>

#include <cstdio>
#include <map>

#include "replay/analysis.h"
#include "replay/shape_rewrite.h"
#include "reshape_copies.h"
#include "test_support.h"

namespace replay {
namespace {

using shape_rewrite_detail::LayoutRemaps;
using shape_rewrite_detail::resolve_size_list;
using shape_rewrite_detail::view_strides;
using Dims = std::vector<std::int64_t>;

void append_dims(std::string& out, const Dims& dims) {
    out += '[';
    for (auto d : dims) {
        out += std::to_string(d);
        out += ',';
    }
    out += ']';
}

// Every recorded launch's GEMM (m, n, k, batch and its leading dims and batch strides) or
// dispatcher op's input dims and strides, as a multiset over the step's launches.
std::map<std::string, std::size_t> launch_shapes(const Analysis& a) {
    std::map<std::string, std::size_t> out;
    for (const auto& k : a.kernels) {
        if (k.recipe.issued_with_op) continue;  // a split-K reduction: the GEMM's own kernel
        std::string key;
        if (const auto* g = std::get_if<GemmRecipe>(&k.recipe.detail)) {
            key = g->op + " m" + std::to_string(g->m) + " n" + std::to_string(g->n) + " k" +
                  std::to_string(g->k) + " b" + std::to_string(g->batch) + " ld" + std::to_string(g->lda) +
                  "," + std::to_string(g->ldb) + "," + std::to_string(g->ldc) + " stride" +
                  std::to_string(g->stride_a) + "," + std::to_string(g->stride_b) + "," +
                  std::to_string(g->stride_c);
        } else if (const auto* op = std::get_if<AtenRecipe>(&k.recipe.detail)) {
            key = op->op;
            for (const auto& arg : op->args)
                for (const auto& t : arg.tensors) {
                    key += ' ';
                    append_dims(key, t.dims);
                    key += '/';
                    append_dims(key, t.strides);
                }
        } else {
            continue;
        }
        out[key] += k.nodes.size();
    }
    return out;
}

std::unique_ptr<Analysis> bloom(const char* trace, const char* set_dims = nullptr) {
    AnalysisOptions options;
    options.trace_path = testing::trace_path(trace);
    if (set_dims != nullptr) options.set_dims = parse_set_dims(set_dims);
    return analyze(options);
}

// The CPU check of issue 18.
TEST(SetDims, BloomB1RewrittenToB4S128MatchesTheRealCaptureKernelForKernel) {
    const auto rewritten = bloom("h200/bloom_b1.json.gz", "batch=4,seq=128");
    const auto real = bloom("h200/bloom_b4s128.json.gz");
    ASSERT_TRUE(rewritten->dims_rewrite);
    const ShapeRewriteReport& report = *rewritten->dims_rewrite;
    EXPECT_EQ(report.batch_from, 1);
    EXPECT_EQ(report.seq_from, 5);
    std::printf("%s\n", describe(report).c_str());

    const auto a = launch_shapes(*rewritten), b = launch_shapes(*real);
    std::size_t launches = 0, matched = 0, gemm_launches = 0, gemm_matched = 0, real_launches = 0;
    for (const auto& [key, count] : a) {
        auto it = b.find(key);
        const std::size_t same = it == b.end() ? 0 : std::min(count, it->second);
        launches += count;
        matched += same;
        if (key.find(" m") != std::string::npos && key.find(" ld") != std::string::npos) {
            gemm_launches += count;
            gemm_matched += same;
        }
        if (same < count) std::printf("  rewritten only: %zu x %s\n", count - same, key.c_str());
    }
    for (const auto& [key, count] : b) {
        real_launches += count;
        auto it = a.find(key);
        const std::size_t have = it == a.end() ? 0 : it->second;
        if (have < count) std::printf("  real only:      %zu x %s\n", count - have, key.c_str());
    }
    std::printf("kernel launches whose shapes and layouts match the real capture: %zu of %zu (real: %zu; "
                "GEMMs %zu of %zu)\n",
                matched, launches, real_launches, gemm_matched, gemm_launches);
    // Every GEMM of the step (QKV, dense, MLP, lm_head, both attention batched GEMMs), with the
    // leading dims of the real capture: the attention GEMMs read the heads' contiguous copies.
    EXPECT_EQ(gemm_matched, gemm_launches);
    // The heads' copies: q, k and v of each of the 24 layers, a view at batch 1.
    EXPECT_EQ(report.reshape_copies, 72u);
    const std::string head_copy = "aten::copy_ [4,16,128,64,]/[131072,8192,64,1,] [4,16,128,64,]/[393216,192,3072,1,]";
    EXPECT_EQ(a.count(head_copy) ? a.at(head_copy) : 0, 72u);
    EXPECT_EQ(b.count(head_copy) ? b.at(head_copy) : 0, 72u);
    // ALiBi: slopes [16, 1] times the positions [b, 1, s] (the 1 after the batch is not the batch).
    EXPECT_EQ(a.count("aten::mul [16,1,]/[1,1,] [4,1,128,]/[128,128,1,]"), 1u);
    // What does not match, 6 launches: the embedding's index_select (PyTorch gathers at batch 4),
    // the cub scan of cumsum (two kernels at [1, 5], one at [4, 128]: the same op), the causal
    // and padding masks built from an index tensor that only dataflow could tell from the
    // position ids, and two contiguous() copies of mask indices that batch 1 never recorded.
    EXPECT_LE(launches - matched, 6u);
    EXPECT_LE(real_launches - matched, 6u);
}

TEST(SetDims, TheRecordedShapeAddsNoCopyAndARewriteIsUndoneByTheNext) {
    auto analysis = bloom("h200/bloom_b1.json.gz");
    Trace& trace = analysis->parsed.trace;
    const std::size_t ops = trace.cpu_ops.size(), calls = trace.runtime_calls.size(),
                      activities = trace.activities.size();
    std::vector<NameId> names;
    for (const auto& op : trace.cpu_ops) names.push_back(op.name);
    const ShapeRewriter rewriter(trace);
    EXPECT_EQ(rewriter.apply(trace, parse_set_dims("batch=1,seq=5")).reshape_copies, 0u);
    // Batch 1 merges with any stride: a longer sequence alone copies nothing.
    EXPECT_EQ(rewriter.apply(trace, parse_set_dims("seq=64")).reshape_copies, 0u);
    EXPECT_EQ(trace.activities.size(), activities);
    const ShapeRewriteReport b4 = rewriter.apply(trace, parse_set_dims("batch=4,seq=128"));
    EXPECT_EQ(b4.reshape_copies, 72u);
    EXPECT_EQ(trace.activities.size(), activities + 72);
    EXPECT_EQ(trace.runtime_calls.size(), calls + 72);
    EXPECT_EQ(trace.cpu_ops.size(), ops + 72);
    EXPECT_EQ(trace.names.view(trace.activities.back().name), shape_rewrite_detail::kReshapeCopyKernel);
    rewriter.apply(trace, {});
    EXPECT_EQ(trace.cpu_ops.size(), ops);
    EXPECT_EQ(trace.runtime_calls.size(), calls);
    EXPECT_EQ(trace.activities.size(), activities);
    for (std::size_t i = 0; i < ops; ++i) ASSERT_EQ(trace.cpu_ops[i].name, names[i]) << "op " << i;
}

TEST(SetDims, TheAddedCopiesRunWhereTheHeadsAreSplit) {
    const auto rewritten = bloom("h200/bloom_b1.json.gz", "batch=4,seq=128");
    const KernelGraph& graph = rewritten->graph;
    const Trace& trace = graph.trace();
    std::size_t copies = 0;
    for (std::size_t n = 0; n < graph.nodes().size(); ++n) {
        const GraphNode& node = graph.nodes()[n];
        if (trace.names.view(graph.activity(node).name) != shape_rewrite_detail::kReshapeCopyKernel) continue;
        ++copies;
        ASSERT_EQ(node.link, LinkState::Linked);
        const auto chain = graph.op_chain(node);
        ASSERT_GE(chain.size(), 3u);
        EXPECT_EQ(trace.names.view(trace.cpu_ops[chain[0]].name), "aten::copy_");
        EXPECT_EQ(trace.names.view(trace.cpu_ops[chain[1]].name), "aten::clone");
        EXPECT_EQ(trace.names.view(trace.cpu_ops[chain[2]].name), "aten::reshape");
        // In stream order between the QKV projection's kernels and the attention GEMM.
        ASSERT_GT(n, 0u);
        ASSERT_LT(n + 1, graph.nodes().size());
        EXPECT_LE(graph.activity(graph.nodes()[n - 1]).ts, graph.activity(node).ts);
        EXPECT_LE(graph.activity(node).ts, graph.activity(graph.nodes()[n + 1]).ts);
    }
    EXPECT_EQ(copies, 72u);
}

TEST(ReshapeCopies, ViewStridesFollowPyTorchsRule) {
    // BLOOM's query heads: [b, 16, s, 64] sliced out of the fused QKV output, reshaped to
    // [b*16, s, 64]. At batch 1 a view (its size-1 batch merges with anything)...
    EXPECT_EQ(view_strides({1, 16, 5, 64}, {15360, 192, 3072, 1}, {16, 5, 64}), (Dims{192, 3072, 1}));
    // ...at batch 4 the batch and the heads, 393216 and 192 apart, cannot be one dim.
    EXPECT_FALSE(view_strides({4, 16, 128, 64}, {393216, 192, 3072, 1}, {64, 128, 64}));
    // Contiguous tensors view as anything of their size; splitting a dim keeps its stride.
    EXPECT_EQ(view_strides({4, 128, 1024}, {131072, 1024, 1}, {512, 1024}), (Dims{1024, 1}));
    EXPECT_EQ(view_strides({512, 3072}, {3072, 1}, {4, 128, 16, 3, 64}), (Dims{393216, 3072, 192, 64, 1}));
    // The merged heads of the context layer ([b, s, 16, 64] permuted): a copy at any batch.
    EXPECT_FALSE(view_strides({1, 5, 16, 64}, {5120, 64, 320, 1}, {1, 5, 1024}));
    // A broadcast dim splits, but does not merge with a real one.
    EXPECT_EQ(view_strides({16, 5, 5}, {5, 0, 1}, {16, 5, 5}), (Dims{5, 0, 1}));
    EXPECT_FALSE(view_strides({16, 5, 5}, {5, 0, 1}, {80, 5}));
    EXPECT_EQ(contiguous_strides(Dims{64, 128, 64}), (Dims{8192, 64, 1}));
    EXPECT_EQ(resolve_size_list({4, 16, 128, 64}, {64, -1, 64}), (Dims{64, 128, 64}));
}

TEST(ReshapeCopies, ViewsOfACopyTakeItsLayoutAndOtherTensorsDoNot) {
    LayoutRemaps copies;
    // The recorded view [16, 5, 64] / [192, 3072, 1] is a contiguous [64, 128, 64] copy now.
    copies.add({16, 5, 64}, {192, 3072, 1}, {8192, 64, 1});
    EXPECT_EQ(copies.find({16, 5, 64}, {192, 3072, 1}), (Dims{8192, 64, 1}));
    // The keys' transpose (k^T for the scores) is the copy's transpose.
    EXPECT_EQ(copies.find({16, 64, 5}, {192, 1, 3072}), (Dims{8192, 1, 64}));
    // The 4-D slice the reshape read stays a slice of the projection.
    EXPECT_FALSE(copies.find({1, 16, 5, 64}, {15360, 192, 3072, 1}));
    EXPECT_FALSE(copies.find({16, 5, 5}, {25, 5, 1}));
    // The next layer's identical copy is kept once; the latest copy with the pairs decides.
    copies.add({16, 5, 64}, {192, 3072, 1}, {8192, 64, 1});
    copies.add({16, 5}, {192, 3072}, {128, 1});
    EXPECT_EQ(copies.find({16, 5}, {192, 3072}), (Dims{128, 1}));
    EXPECT_EQ(copies.find({16, 5, 64}, {192, 3072, 1}), (Dims{8192, 64, 1}));
}

TEST(SetDims, RequestsAreParsedAndChecked) {
    const DimsRequest r = parse_set_dims("batch=4,seq=128");
    EXPECT_EQ(r.batch, 4);
    EXPECT_EQ(r.seq, 128);
    EXPECT_FALSE(parse_set_dims("seq=9").batch);
    EXPECT_THROW(parse_set_dims("batch=0"), std::invalid_argument);
    EXPECT_THROW(parse_set_dims("heads=4"), std::invalid_argument);
    EXPECT_THROW(parse_set_dims("batch"), std::invalid_argument);
}

TEST(SetDims, ATraceWithoutAnEmbeddingIsAnError) {
    AnalysisOptions options;
    options.trace_path = testing::trace_path("h200/mlp_compiled.json.gz");
    options.set_dims = parse_set_dims("batch=2");
    EXPECT_THROW(analyze(options), InputError);
}

}  // namespace
}  // namespace replay
