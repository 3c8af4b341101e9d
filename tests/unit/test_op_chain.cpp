// OpChain (engine/op_chain.h), the op stack kept from one op to the next by the dataflow
// inference and the classifier: after each op it must hold exactly the op's CpuOp::parent chain,
// whatever the order ops come in, and the classifier's facts read off it must be those of a walk
// of each activity's chain, KernelGraph::kMaxOpChain included, also where launches jump between
// unrelated chains and back.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "op_chain.h"
#include "replay/analysis.h"
#include "replay/classifier.h"
#include "replay/kernel_graph.h"
#include "replay/kineto_parser.h"
#include "sorted_runs.h"
#include "test_support.h"

namespace {

using replay::CpuOp;
using replay::kNoIndex;

// The chain of `op` by walking its parent links, outermost first.
std::vector<std::uint32_t> walked_chain(const std::vector<CpuOp>& ops, std::uint32_t op) {
    std::vector<std::uint32_t> chain;
    for (std::uint32_t q = op; q != kNoIndex; q = ops[q].parent) chain.push_back(q);
    std::reverse(chain.begin(), chain.end());
    return chain;
}

// A 600-deep chain (op k inside op k-1), a second root, and side branches hanging off it.
std::vector<CpuOp> deep_forest() {
    std::vector<CpuOp> ops(600);
    for (std::uint32_t k = 1; k < ops.size(); ++k) ops[k].parent = k - 1;
    std::mt19937 random(7);
    for (int i = 0; i < 400; ++i) {
        CpuOp op;
        op.parent = static_cast<std::uint32_t>(random() % ops.size());
        ops.push_back(op);
    }
    ops.push_back(CpuOp{});  // a root of its own, then a chain under it
    for (int i = 0; i < 50; ++i) {
        CpuOp op;
        op.parent = static_cast<std::uint32_t>(ops.size() - 1);
        ops.push_back(op);
    }
    return ops;
}

TEST(OpChain, HoldsTheParentChainOfEachOpInAnyOrder) {
    const std::vector<CpuOp> ops = deep_forest();
    std::vector<std::uint32_t> order(ops.size());
    for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    // In index order (children after parents, as a thread's ops come), reversed (the deepest
    // first, then up), shuffled, and each op twice in a row.
    std::vector<std::uint32_t> visits = order;
    visits.insert(visits.end(), order.rbegin(), order.rend());
    std::mt19937 random(11);
    std::shuffle(order.begin(), order.end(), random);
    for (std::uint32_t op : order) visits.insert(visits.end(), {op, op});

    replay::OpChain chain(ops);
    std::vector<std::uint32_t> beside;  // kept through the callbacks
    for (std::uint32_t op : visits) {
        chain.enter(
            op, [&] { beside.pop_back(); }, [&](std::uint32_t q) { beside.push_back(q); });
        const std::vector<std::uint32_t> expected = walked_chain(ops, op);
        ASSERT_EQ(chain.ops(), expected) << "op " << op;
        ASSERT_EQ(beside, expected) << "op " << op;
        EXPECT_TRUE(chain.holds(op));
        EXPECT_TRUE(chain.holds(expected.front()));
        if (ops[op].parent == kNoIndex) continue;
        // A sibling branch's op is not on the chain.
        for (std::uint32_t other = 0; other < ops.size(); other += 97) {
            if (std::find(expected.begin(), expected.end(), other) == expected.end()) {
                EXPECT_FALSE(chain.holds(other)) << other << " on the chain of " << op;
            }
        }
    }
}

// A trace whose kernels are launched inside a 300-deep op chain with the only GEMM op (and the
// only dispatcher op) at its root, then from ever shallower ops: the GEMM op is within the
// kMaxOpChain ops visit_op_chain() visits for the kernels of ops 0..255, not for 256 and deeper.
std::string deep_trace_json() {
    std::string events;
    const auto add = [&](const std::string& event) {
        events += (events.empty() ? "" : ",") + event;
    };
    const int depth = 300;
    for (int k = 0; k < depth; ++k) {
        const std::string name = k == 0 ? "aten::mm" : "wrapper " + std::to_string(k);
        add("{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"" + name +
            "\",\"pid\":1,\"tid\":1,\"ts\":" + std::to_string(k) +
            ",\"dur\":" + std::to_string(2 * (1000 - k)) +
            ",\"args\":{\"Input Dims\":[[64,64],[64,64]],\"Input type\":[\"float\",\"float\"]}}");
    }
    int correlation = 0;
    // Down the chain (launch at k + 0.5 lies in op k alone), then back up (2000 - k - 0.5).
    std::vector<double> launches;
    for (int k : {250, 254, 255, 256, 257, 299}) launches.push_back(k + 0.5);
    for (int k : {299, 256, 255, 254, 100, 256, 3}) launches.push_back(2000 - k - 0.5);
    for (double ts : launches) {
        const std::string ids = ",\"args\":{\"correlation\":" + std::to_string(++correlation);
        add("{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,"
            "\"tid\":1,\"ts\":" +
            std::to_string(ts) + ",\"dur\":0.2" + ids + "}}");
        add("{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"sm90_xmma_gemm_f32f32_tn\",\"pid\":0,"
            "\"tid\":7,\"ts\":" +
            std::to_string(ts + 3000) + ",\"dur\":3" + ids +
            ",\"device\":0,\"stream\":7,\"grid\":[8,1,1],\"block\":[128,1,1]}}");
    }
    return "{\"traceEvents\":[" + events + "]}";
}

TEST(OpChain, ClassifierFactsEqualAWalkOfEachChainUpToTheCap) {
    replay::ParseResult parsed = replay::parse_kineto_buffer(deep_trace_json(), {}, "deep.json");
    replay::Trace& trace = parsed.trace;
    const replay::KernelGraph graph = replay::KernelGraph::build(trace, 1);
    ASSERT_EQ(graph.nodes().size(), 13u);
    // Throws where a node's shared decision differs from classifying it alone by a chain walk
    // (the chains walked first, or on a thread of their own ahead of the decisions).
    EXPECT_NO_THROW(classify(graph, replay::ClassifyCheck::EveryActivity, 2));
    const replay::NodeRecipes recipes = classify(graph, replay::ClassifyCheck::EveryActivity);
    std::string within, beyond;
    for (std::size_t n = 0; n < graph.nodes().size(); ++n) {
        std::size_t depth = 0;
        for (std::uint32_t q = graph.nodes()[n].op; q != kNoIndex; q = trace.cpu_ops[q].parent)
            ++depth;
        ASSERT_GT(depth, 0u);
        std::string& rule = depth <= replay::KernelGraph::kMaxOpChain ? within : beyond;
        const std::string& got = recipes.decision(n).rule;
        if (rule.empty()) rule = got;
        EXPECT_EQ(got, rule) << "node " << n << " launched " << depth << " ops deep";
    }
    EXPECT_NE(within, beyond);  // the GEMM op counts only within the cap
}

// Two threads whose launches interleave: thread 1 launches from "wrapper" inside aten::mm (then
// once from aten::mm itself), thread 2 from aten::mul inside aten::add. In launch order each
// node's op differs from the one before, and each op comes back after the other thread's.
std::string interleaved_trace_json() {
    std::string events;
    const auto add = [&](const std::string& event) {
        events += (events.empty() ? "" : ",") + event;
    };
    const auto op = [&](const std::string& name, int tid, int ts, int dur, const std::string& dims) {
        add("{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"" + name +
            "\",\"pid\":1,\"tid\":" + std::to_string(tid) + ",\"ts\":" + std::to_string(ts) +
            ",\"dur\":" + std::to_string(dur) + ",\"args\":{\"Input Dims\":" + dims +
            ",\"Input type\":[\"float\",\"float\"]}}");
    };
    op("aten::mm", 1, 0, 1000, "[[64,64],[64,64]]");
    op("wrapper", 1, 10, 900, "[]");
    op("aten::add", 2, 0, 1000, "[[64],[64]]");
    op("aten::mul", 2, 10, 900, "[[64],[64]]");
    int correlation = 0;
    const auto launch = [&](int tid, double ts, const std::string& kernel) {
        const std::string ids = ",\"args\":{\"correlation\":" + std::to_string(++correlation);
        add("{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,"
            "\"tid\":" +
            std::to_string(tid) + ",\"ts\":" + std::to_string(ts) + ",\"dur\":0.2" + ids + "}}");
        add("{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"" + kernel +
            "\",\"pid\":0,\"tid\":7,\"ts\":" + std::to_string(ts + 3000) + ",\"dur\":3" + ids +
            ",\"device\":0,\"stream\":7,\"grid\":[8,1,1],\"block\":[128,1,1]}}");
    };
    for (int k = 0; k < 4; ++k) {
        launch(1, 20 + 10 * k, "sm90_xmma_gemm_f32f32_tn");
        launch(2, 25 + 10 * k, "elementwise_kernel");
    }
    launch(1, 950, "sm90_xmma_gemm_f32f32_tn");  // aten::mm itself: wrapper ended at 910
    launch(2, 955, "elementwise_kernel");         // aten::add itself
    return "{\"traceEvents\":[" + events + "]}";
}

TEST(OpChain, ClassifierFactsOfInterleavedThreadsAreEachOpsOwn) {
    replay::ParseResult parsed =
        replay::parse_kineto_buffer(interleaved_trace_json(), {}, "interleaved.json");
    replay::Trace& trace = parsed.trace;
    const replay::KernelGraph graph = replay::KernelGraph::build(trace, 1);
    ASSERT_EQ(graph.nodes().size(), 10u);
    // Throws where a node's shared decision differs from classifying it alone by a chain walk
    // (the chains walked first, or on a thread of their own ahead of the decisions).
    EXPECT_NO_THROW(classify(graph, replay::ClassifyCheck::EveryActivity, 2));
    const replay::NodeRecipes recipes = classify(graph, replay::ClassifyCheck::EveryActivity);
    std::vector<std::string> ops;
    for (std::size_t n = 0; n < graph.nodes().size(); ++n) {
        const std::uint32_t op = graph.nodes()[n].op;
        ASSERT_NE(op, kNoIndex) << "node " << n;
        ops.emplace_back(trace.names.view(trace.cpu_ops[op].name));
        if (n > 0) {
            EXPECT_NE(graph.nodes()[n].op, graph.nodes()[n - 1].op) << "node " << n;
        }
    }
    EXPECT_EQ(ops, (std::vector<std::string>{"wrapper", "aten::mul", "wrapper", "aten::mul",
                                             "wrapper", "aten::mul", "wrapper", "aten::mul",
                                             "aten::mm", "aten::add"}));
    // Thread 1's kernels are GEMMs of aten::mm wherever they were launched in it; thread 2's are
    // not.
    for (std::size_t n = 0; n < graph.nodes().size(); ++n)
        EXPECT_EQ(recipes.decision(n).rule, recipes.decision(n % 2).rule) << "node " << n;
    EXPECT_NE(recipes.decision(0).rule, recipes.decision(1).rule);
    EXPECT_EQ(recipes.decision(0).tier, replay::Tier::Gemm) << recipes.decision(0).reason;
}

// The parser's thread index of the ops (Trace::op_threads), which the graph builder groups the
// ops by: the graph, every op's parent included, is the one built by reading each op's (pid, tid)
// itself; an op added after the parse makes the index stale, and the builder reads them again.
TEST(OpThreads, GraphFromTheParsersIndexIsTheGraphFromTheOps) {
    for (const char* file :
         {"h200/gpt2_train.json.gz", "public/pytorch-kineto/worker0.pt.trace.json.gz"}) {
        replay::ParseOptions options;
        options.chunk_bytes = 64 << 10;  // many batches
        replay::Trace indexed =
            replay::parse_kineto(replay::testing::trace_path(file), options).trace;
        ASSERT_TRUE(indexed.op_threads.covers(indexed.cpu_ops)) << file;
        ASSERT_GT(indexed.op_threads.threads().size(), 1u) << file;
        std::size_t counted = 0;
        for (std::uint32_t n : indexed.op_threads.counts()) counted += n;
        EXPECT_EQ(counted, indexed.cpu_ops.size()) << file;
        replay::Trace read_again = indexed;
        read_again.cpu_ops.push_back(read_again.cpu_ops.back());  // stale now
        ASSERT_FALSE(read_again.op_threads.covers(read_again.cpu_ops));
        read_again.cpu_ops.pop_back();
        (void)read_again.op_threads.take();
        for (unsigned threads : {1u, 2u}) {
            replay::Trace a = indexed, b = read_again;
            const replay::KernelGraph ga = replay::KernelGraph::build(a, threads);
            const replay::KernelGraph gb = replay::KernelGraph::build(b, threads);
            ASSERT_EQ(a.cpu_ops.size(), b.cpu_ops.size());
            for (std::size_t i = 0; i < a.cpu_ops.size(); ++i)
                ASSERT_EQ(a.cpu_ops[i].parent, b.cpu_ops[i].parent) << file << " op " << i;
            ASSERT_EQ(ga.nodes().size(), gb.nodes().size());
            for (std::size_t n = 0; n < ga.nodes().size(); ++n) {
                ASSERT_EQ(ga.nodes()[n].op, gb.nodes()[n].op) << file << " node " << n;
                ASSERT_EQ(ga.nodes()[n].activity, gb.nodes()[n].activity) << file << " node " << n;
            }
            EXPECT_EQ(ga.waits().size(), gb.waits().size()) << file;
            EXPECT_EQ(ga.stats().graph_launches, gb.stats().graph_launches) << file;
        }
    }
}

// merge_sorted_runs (engine/sorted_runs.h), which the graph builder's sorts use: items in a few
// sorted runs (a repeated trace's copies) come out as std::sort puts them; too many runs are left
// for the caller.
TEST(SortedRuns, FewRunsAreMergedAsASortWouldOrderThem) {
    struct Item {
        std::int64_t key;
        std::uint32_t index;
    };
    const auto before = [](const Item& x, const Item& y) {
        return x.key != y.key ? x.key < y.key : x.index < y.index;
    };
    std::mt19937 random(7);
    for (const std::size_t runs : {1u, 2u, 3u, 17u, 153u}) {
        std::vector<Item> items;
        for (std::size_t r = 0; r < runs; ++r) {
            std::int64_t key = static_cast<std::int64_t>(random() % 50);
            for (int k = 0; k < 400; ++k) {
                key += static_cast<std::int64_t>(random() % 3);  // ties within and across runs
                items.push_back({key, static_cast<std::uint32_t>(items.size())});
            }
        }
        std::vector<Item> want = items;
        std::sort(want.begin(), want.end(), before);
        ASSERT_TRUE(replay::merge_sorted_runs(std::span<Item>(items), before)) << runs;
        for (std::size_t i = 0; i < items.size(); ++i)
            ASSERT_EQ(items[i].index, want[i].index) << runs << " runs, item " << i;
    }
    // One run per item or so: left alone.
    std::vector<Item> shuffled;
    for (std::uint32_t i = 0; i < 1000; ++i)
        shuffled.push_back({static_cast<std::int64_t>(random() % 100000), i});
    const std::vector<Item> before_call = shuffled;
    EXPECT_FALSE(replay::merge_sorted_runs(std::span<Item>(shuffled), before));
    for (std::size_t i = 0; i < shuffled.size(); ++i)
        EXPECT_EQ(shuffled[i].index, before_call[i].index);
}

}  // namespace
