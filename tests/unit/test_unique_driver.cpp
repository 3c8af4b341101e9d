// Unique mode against the fake backend: what runs before each timed run (--context, the
// instruction caches, a graph's recorded predecessor), how instances cycle, and how the records
// that come back are tied to the recorded kernels.
#include <gtest/gtest.h>

#include "driver_fakes.h"

namespace {

// ---- unique mode ------------------------------------------------------------------------------

// The issues of work (not of predecessors) with the calls that came before each since the last
// one, as "flush evict_code issue(key#tag) warm(key)" lines, per template in order.
std::vector<std::string> timed_sequence(const FakeBackend& b) {
    std::vector<std::string> lines;
    std::string line;
    for (const auto& c : b.calls) {
        if (c.what == "flush" || c.what == "evict_code")
            line += c.what + " ";
        else if (c.what == "warm")
            line += "warm(" + c.recipe + ") ";
        else if (c.what == "issue")
            line += "issue(" + c.recipe + "#" + std::to_string(c.tag) + ") ";
        else
            continue;
        // A run ends with the work's own issue: predecessors are issued with tag 0 before warm.
        if (c.what == "issue" && line.find("warm(" + c.recipe + ")") != std::string::npos) {
            lines.push_back(line);
            line.clear();
        }
    }
    return lines;
}

TEST(Drivers, UniquePlanCyclesInstancesWithTheirPredecessors) {
    auto a = unique_trace();
    ASSERT_EQ(a->kernels.size(), 4u);
    FakeBackend b;
    const replay::Report r =
        replay::replay_unique(*a, b, unique_options(replay::Context::Recorded));

    const std::string relu1 = relu(1).instance_key(), relu2 = relu(2).instance_key();
    const std::string gemm10 = gemm(10).instance_key(), gemm11 = gemm(11).instance_key();
    const std::string cp = copy().instance_key();
    // Three templates in recorded order: relu (two distinct instances: the third relu repeats
    // the first's storage), GEMM + reduction (two instances), the copy. Each work issue comes
    // after an L2 eviction, its recorded predecessor (untimed, tag 0) and the read-in of its
    // inputs; the first relu has no predecessor. The eviction empties the instruction caches
    // too (--instruction-cache cold, the default).
    std::vector<std::string> expected;
    auto run = [&](const std::string& work, const std::string& before, int tag) {
        std::string line = "flush evict_code ";
        if (!before.empty()) line += "issue(" + before + "#0) ";
        line += "warm(" + work + ") issue(" + work + "#" + std::to_string(tag) + ") ";
        expected.push_back(line);
    };
    // Warmup 2 then runs 3, cycling through the instances: 0 1 | 0 1 0.
    for (int tag : {0, 0, 1, 2, 3}) {
        const bool first = tag == 0 ? expected.size() % 2 == 0 : tag % 2 == 1;
        run(first ? relu1 : relu2, first ? "" : gemm10, tag);
    }
    for (int tag : {0, 0, 1, 2, 3}) {
        const bool first = tag == 0 ? expected.size() % 2 == 1 : tag % 2 == 1;
        run(first ? gemm10 : gemm11, first ? relu1 : relu2, tag);
    }
    for (int tag : {0, 0, 1, 2, 3}) run(cp, relu1, tag);
    EXPECT_EQ(timed_sequence(b), expected);

    // One stream; every template ends its warmup and its runs with a synchronize and a collect.
    ASSERT_FALSE(b.of("streams").empty());
    EXPECT_EQ(b.of("streams").front().value, 1);
    EXPECT_EQ(b.of("sync").size(), 6u);
    EXPECT_EQ(b.of("collect").size(), 6u);
    // Each distinct instance is prepared once, whatever the number of runs.
    std::map<std::string, int> prepares;
    for (const auto& c : b.of("prepare")) ++prepares[c.recipe];
    EXPECT_EQ(prepares, (std::map<std::string, int>{
                            {relu1, 1}, {relu2, 1}, {gemm10, 1}, {gemm11, 1}, {cp, 1}}));

    // Whole-issue records: one sample per timed run, the GEMM issue split between the GEMM and
    // its reduction by the first instance's recorded shares (10 : 1).
    const auto& relu_k = kernel_named(r, "relu_k");
    EXPECT_EQ(relu_k.outcome, KernelOutcome::Replayed);
    EXPECT_EQ(relu_k.samples_us.size(), 3u);
    const auto& gemm_k = kernel_named(r, "gemm_k");
    const auto& reduce = kernel_named(r, "splitk_reduce");
    EXPECT_EQ(gemm_k.outcome, KernelOutcome::Replayed);
    EXPECT_EQ(reduce.outcome, KernelOutcome::IssuedWithOp);
    ASSERT_EQ(gemm_k.samples_us.size(), 3u);
    ASSERT_EQ(reduce.samples_us.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i)
        EXPECT_NEAR(gemm_k.samples_us[i] / (gemm_k.samples_us[i] + reduce.samples_us[i]),
                    10.0 / 11.0, 1e-3);
    EXPECT_FALSE(gemm_k.name_match);  // whole-issue records carry the recipe's label
    EXPECT_EQ(kernel_named(r, "Memcpy DtoD (Device -> Device)").samples_us.size(), 3u);
    EXPECT_EQ(r.mode, "unique");
    EXPECT_EQ(r.backend, "fake");
}

TEST(Drivers, UniqueContextDecidesWhatRunsBeforeATimedRun) {
    const std::string relu1 = relu(1).instance_key(), gemm10 = gemm(10).instance_key();
    {  // previous: the predecessor without eviction or read-in
        auto a = unique_trace();
        FakeBackend b;
        replay::replay_unique(*a, b, unique_options(replay::Context::Previous, 0, 2));
        EXPECT_TRUE(b.of("flush").empty());
        EXPECT_TRUE(b.of("warm").empty());
        // Runs 1 and 2 of the GEMM template: each instance after its own predecessor.
        std::vector<std::string> gemm_runs;
        const auto& calls = b.calls;
        for (std::size_t i = 1; i < calls.size(); ++i)
            if (calls[i].what == "issue" && calls[i].recipe.find("aten::mm") != std::string::npos &&
                calls[i].tag > 0)
                gemm_runs.push_back(calls[i - 1].recipe + " -> " + calls[i].recipe);
        EXPECT_EQ(gemm_runs, (std::vector<std::string>{
                                 relu1 + " -> " + gemm10,
                                 relu(2).instance_key() + " -> " + gemm(11).instance_key()}));
    }
    {  // none: the kernel back to back with itself, no predecessor
        auto a = unique_trace();
        FakeBackend b;
        replay::replay_unique(*a, b, unique_options(replay::Context::None, 1, 4));
        EXPECT_TRUE(b.of("flush").empty());
        EXPECT_TRUE(b.of("warm").empty());
        std::vector<std::string> copy_template;  // the issues after the last GEMM one
        for (const auto& c : b.of("issue")) {
            if (c.recipe.find("aten::mm") != std::string::npos)
                copy_template.clear();
            else
                copy_template.push_back(c.recipe);
        }
        // One warmup and four runs of the copy alone (its recorded predecessor is a relu).
        EXPECT_EQ(copy_template, std::vector<std::string>(5, copy().instance_key()));
        EXPECT_EQ(b.of("issue").size(), 15u);
    }
    {  // --l2-flush: an eviction right before every work issue, after the read-in
        auto a = unique_trace();
        FakeBackend b;
        auto o = unique_options(replay::Context::Recorded, 0, 1);
        o.l2_flush = true;
        replay::replay_unique(*a, b, o);
        const auto& calls = b.calls;
        std::size_t work_issues = 0;
        for (std::size_t i = 1; i < calls.size(); ++i)
            if (calls[i].what == "issue" && calls[i].tag > 0) {
                ++work_issues;
                EXPECT_EQ(calls[i - 1].what, "flush");
                EXPECT_EQ(calls[i - 2].what, "warm");
            }
        EXPECT_EQ(work_issues, 3u);
    }
}

TEST(Drivers, UniqueEmptiesTheInstructionCachesUnlessAskedWarmAndSaysWhich) {
    for (auto cache : {replay::InstructionCache::Auto, replay::InstructionCache::Cold,
                       replay::InstructionCache::Warm}) {
        auto a = unique_trace();  // eager kernels: auto is cold
        FakeBackend b;
        auto o = unique_options(replay::Context::Recorded, 1, 2);
        o.instruction_cache = cache;
        const replay::Report r = replay::replay_unique(*a, b, o);
        // Three templates of one warmup and two runs: an eviction before each.
        EXPECT_EQ(b.of("flush").size(), 9u);
        const bool cold = cache != replay::InstructionCache::Warm;
        EXPECT_EQ(b.of("evict_code").size(), cold ? 9u : 0u);
        for (std::size_t i = 0; i < b.calls.size(); ++i)
            if (b.calls[i].what == "evict_code") {
                EXPECT_EQ(b.calls[i - 1].what, "flush");
            }
        std::string said;
        for (const auto& [key, value] : r.options)
            if (key == "instruction_cache") said = value;
        EXPECT_EQ(said, cache == replay::InstructionCache::Auto ? "auto" : cold ? "cold" : "warm");
    }
    {  // --context previous: no eviction of either cache
        auto a = unique_trace();
        FakeBackend b;
        replay::replay_unique(*a, b, unique_options(replay::Context::Previous, 1, 2));
        EXPECT_TRUE(b.of("flush").empty());
        EXPECT_TRUE(b.of("evict_code").empty());
    }
}

// A kernel recorded inside a CUDA graph right after another node of the same launch is timed
// inside a graph after its recorded predecessor (a node's record is longer than the same
// kernel's launched alone); the first node of a launch, an eager launch and --no-graph are
// issued directly, and a backend without graphs issues everything directly, saying so.
TEST(Drivers, UniqueTimesAKernelRecordedInsideAGraphInsideOneAfterItsPredecessor) {
    auto a = graph_then_eager({"relu_k", "gelu_k", "relu_k", "gelu_k"}, "graph_unique.json");
    const auto note_of = [](const replay::Report& r) {
        return note_with(r, "kernels recorded inside a CUDA graph");
    };
    // Every run issued directly, timed all the same, and the note says why.
    const auto all_direct = [&](const replay::Report& r, const std::string& why) {
        EXPECT_EQ(kernel_named(r, "gelu_k").samples_us.size(), 4u);
        EXPECT_NE(note_of(r).find("0 of 2 timed so"), std::string::npos) << note_of(r);
        EXPECT_NE(note_of(r).find("the others were issued directly (" + why + ")"),
                  std::string::npos)
            << note_of(r);
        EXPECT_EQ(r.option("graph_nodes"), "alone");
    };
    const std::string gelu1 = relu(2).instance_key(), gelu3 = relu(4).instance_key();
    {
        FakeBackend b;
        b.graphs = true;
        const replay::Report r =
            replay::replay_unique(*a, b, unique_options(replay::Context::Recorded, 1, 4));
        // relu_k's template comes first: its in-graph instance (node 2, after gelu_k's node 1),
        // then gelu_k's two (nodes 1 and 3, each after a relu_k node). Each is captured once:
        // its predecessor untimed, its warm-up reads, then itself. relu_k's first node (the
        // first of its launch) and its eager launch are issued directly.
        std::vector<std::string> captured;
        for (const auto& c : b.calls)
            if (c.captured && (c.what == "issue" || c.what == "warm"))
                captured.push_back(c.what + " " + c.recipe + (c.tag ? " timed" : ""));
        const std::string relu0 = relu(1).instance_key(), relu2 = relu(3).instance_key();
        const std::vector<std::string> expected = {
            "issue " + gelu1, "warm " + relu2, "issue " + relu2 + " timed",
            "issue " + relu0, "warm " + gelu1, "issue " + gelu1 + " timed",
            "issue " + relu2, "warm " + gelu3, "issue " + gelu3 + " timed"};
        EXPECT_EQ(captured, expected);
        EXPECT_EQ(b.of("begin_capture").size(), 3u);
        // gelu_k: 1 warmup and 4 runs, each a launch of its instance's graph; relu_k's in-graph
        // instance is the second of three, cycled (warmup 0, runs 0 1 2 0): one launch.
        EXPECT_EQ(b.of("launch_graph").size(), 5u + 1u);
        EXPECT_EQ(kernel_named(r, "gelu_k").samples_us.size(), 4u);
        EXPECT_EQ(kernel_named(r, "relu_k").samples_us.size(), 4u);
        EXPECT_NE(note_of(r).find("2 of 2 timed so"), std::string::npos) << note_of(r);
        // --instruction-cache auto: the code stays warm for the graph launches, and is evicted
        // before relu_k's four direct runs (its first-of-launch node, its eager launch).
        EXPECT_EQ(b.of("evict_code").size(), 4u);
        EXPECT_EQ(r.option("graph_nodes"), "in-graph");
    }
    {  // --no-graph
        FakeBackend b;
        b.graphs = true;
        auto o = unique_options(replay::Context::Recorded, 1, 4);
        o.graph = false;
        const replay::Report r = replay::replay_unique(*a, b, o);
        EXPECT_TRUE(b.of("begin_capture").empty());
        all_direct(r, "--no-graph");
    }
    {  // a backend without graphs
        FakeBackend b;
        const replay::Report r =
            replay::replay_unique(*a, b, unique_options(replay::Context::Recorded, 1, 4));
        EXPECT_TRUE(b.of("launch_graph").empty());
        all_direct(r, "the first: the fake has no graphs");
    }
}

TEST(Drivers, UniqueWarmupAndRunCounts) {
    auto a = unique_trace();
    FakeBackend b;
    replay::replay_unique(*a, b, unique_options(replay::Context::None, 4, 7));
    std::map<std::string, std::pair<int, int>> counts;  // key -> warmups, runs
    for (const auto& c : b.of("issue"))
        (c.tag == 0 ? counts[c.recipe].first : counts[c.recipe].second)++;
    // Two relu instances cycled: warmups 0 1 0 1, runs 0 1 0 1 0 1 0.
    EXPECT_EQ(counts[relu(1).instance_key()], std::make_pair(2, 4));
    EXPECT_EQ(counts[relu(2).instance_key()], std::make_pair(2, 3));
    EXPECT_EQ(counts[copy().instance_key()], std::make_pair(4, 7));
    // Tags of the runs: 1..7 per template.
    std::vector<std::uint64_t> copy_tags;
    for (const auto& c : b.of("issue"))
        if (c.recipe == copy().instance_key() && c.tag > 0) copy_tags.push_back(c.tag);
    EXPECT_EQ(copy_tags, (std::vector<std::uint64_t>{1, 2, 3, 4, 5, 6, 7}));
}

TEST(Drivers, PerKernelRecordsAreMatchedByName) {
    auto a = unique_trace();
    FakeBackend b;
    // cuBLAS ran the reduction before a helper kernel and the GEMM: names decide, not order.
    for (auto storage : {10, 11})
        b.per_kernel[gemm(storage).instance_key()] = {
            {"splitk_reduce", 2000}, {"helper_k", 100}, {"gemm_k", 20000}};
    const replay::Report r =
        replay::replay_unique(*a, b, unique_options(replay::Context::None, 0, 2));
    const auto& gemm_k = kernel_named(r, "gemm_k");
    EXPECT_EQ(gemm_k.samples_us, (std::vector<double>{20.0, 20.0}));
    EXPECT_TRUE(gemm_k.name_match);
    EXPECT_EQ(kernel_named(r, "splitk_reduce").samples_us, (std::vector<double>{2.0, 2.0}));
}

TEST(Drivers, ARecordOfAnotherGridIsNamedInTheKernelAndTheNotes) {
    auto a = unique_trace();
    FakeBackend b;
    for (auto storage : {10, 11})
        b.per_kernel[gemm(storage).instance_key()] = {{"splitk_reduce", 2000}, {"gemm_k", 20000}};
    b.grid_of["gemm_k"] = {64, 2, 1};        // the recording launched [1, 1, 1]
    b.grid_of["splitk_reduce"] = {1, 1, 1};  // as recorded
    const replay::Report r =
        replay::replay_unique(*a, b, unique_options(replay::Context::None, 0, 2));
    const auto& gemm_k = kernel_named(r, "gemm_k");
    EXPECT_EQ(gemm_k.outcome, KernelOutcome::Replayed);
    EXPECT_EQ(gemm_k.replayed_grids, (std::vector<std::array<std::int32_t, 3>>{{64, 2, 1}}));
    EXPECT_TRUE(kernel_named(r, "splitk_reduce").replayed_grids.empty());
    const auto note = std::find_if(r.notes.begin(), r.notes.end(), [](const std::string& n) {
        return n.find("another launch grid") != std::string::npos;
    });
    ASSERT_NE(note, r.notes.end());
    EXPECT_NE(note->find("1 kernel(s)"), std::string::npos) << *note;
    EXPECT_NE(note->find("gemm_k ran [64, 2, 1]"), std::string::npos) << *note;
}

TEST(Drivers, AnIssueThatRanOtherKernelsSharesTheirTimeByRecordedDurations) {
    auto a = unique_trace();
    FakeBackend b;
    // At another shape (--set-dims) cuBLASLt runs the split-K GEMM as one kernel of another
    // name: the issue's time is the GEMM's and its reduction's together, shared by their
    // recorded medians, not a failure of both.
    for (auto storage : {10, 11})
        b.per_kernel[gemm(storage).instance_key()] = {{"gemm_64x64_k", 24000}};
    const replay::Report r =
        replay::replay_unique(*a, b, unique_options(replay::Context::None, 0, 2));
    const auto& gemm_k = kernel_named(r, "gemm_k");
    const auto& reduce = kernel_named(r, "splitk_reduce");
    EXPECT_EQ(gemm_k.outcome, KernelOutcome::Replayed);
    ASSERT_EQ(gemm_k.samples_us.size(), 2u);
    ASSERT_EQ(reduce.samples_us.size(), 2u);
    // The first GEMM's recorded 10 us and its reduction's 1 us set the template's shares.
    EXPECT_NEAR(gemm_k.samples_us[0], 24.0 * 10.0 / 11.0, 1e-2);
    EXPECT_NEAR(reduce.samples_us[1], 24.0 * 1.0 / 11.0, 1e-2);
    EXPECT_NEAR(gemm_k.samples_us[0] + reduce.samples_us[0], 24.0, 1e-2);
    EXPECT_FALSE(gemm_k.name_match);
    EXPECT_EQ(gemm_k.replayed_names, (std::vector<std::string>{"gemm_64x64_k"}));
    EXPECT_NE(gemm_k.reason.find("shared by the recorded durations"), std::string::npos)
        << gemm_k.reason;
}

TEST(Drivers, ARecordThatIsNotTheKernelsOwnFailsTheKernel) {
    auto a = unique_trace();
    FakeBackend b;
    // The GEMM's issue came back with its workspace memset only: never a 0.3 us GEMM sample.
    for (auto storage : {10, 11})
        b.per_kernel[gemm(storage).instance_key()] = {{"Memset (Device)", 300}};
    const replay::Report r =
        replay::replay_unique(*a, b, unique_options(replay::Context::None, 0, 2));
    const auto& gemm_k = kernel_named(r, "gemm_k");
    EXPECT_EQ(gemm_k.outcome, KernelOutcome::Failed);
    EXPECT_TRUE(gemm_k.samples_us.empty());
    EXPECT_NE(gemm_k.reason.find("Memset (Device)"), std::string::npos) << gemm_k.reason;
    EXPECT_EQ(kernel_named(r, "relu_k").outcome, KernelOutcome::Replayed);
}

TEST(Drivers, AFailingIssueMarksItsKernelsFailedAndTheRunGoesOn) {
    auto a = unique_trace();
    FakeBackend b;
    b.fail_issue.insert(relu(2).instance_key());
    b.skip.insert(copy().instance_key());
    const replay::Report r = replay::replay_unique(*a, b, unique_options(replay::Context::None));
    const auto& relu_k = kernel_named(r, "relu_k");
    EXPECT_EQ(relu_k.outcome, KernelOutcome::Failed);
    EXPECT_NE(relu_k.reason.find("fake issue failure"), std::string::npos) << relu_k.reason;
    // The second warmup hit the failing instance: the template stopped there, no timed run.
    EXPECT_TRUE(relu_k.samples_us.empty());
    // The failed recipe is not issued again, the GEMM template still runs.
    EXPECT_EQ(kernel_named(r, "gemm_k").outcome, KernelOutcome::Replayed);
    EXPECT_EQ(kernel_named(r, "gemm_k").samples_us.size(), 3u);
    const auto& copy_k = kernel_named(r, "Memcpy DtoD (Device -> Device)");
    EXPECT_EQ(copy_k.outcome, KernelOutcome::Skipped);
    EXPECT_NE(copy_k.reason.find("fake cannot run"), std::string::npos);
    for (const auto& c : b.of("issue")) EXPECT_NE(c.recipe, copy().instance_key());
}

}  // namespace
