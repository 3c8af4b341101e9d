// Nsight hooks and the timeline: NVTX ranges that name each kernel and iteration, --kernel
// selection for ncu, and the sequential timeline written as a Kineto trace.
#include <gtest/gtest.h>

#include "driver_fakes.h"

namespace {

// "range" calls and the issue each one names, in order.
std::vector<std::string> ranges_and_issues(const FakeBackend& b) {
    std::vector<std::string> out;
    for (const auto& c : b.calls)
        if (c.what == "range")
            out.push_back("range " + c.recipe);
        else if (c.what == "issue")
            out.push_back("issue " + c.recipe + " #" + std::to_string(c.tag));
    return out;
}

TEST(Drivers, NvtxRangesNameTheKernelAndTheIteration) {
    auto a = two_stream_trace();
    FakeBackend b;
    replay::DriverOptions o;
    o.iterations = 2;
    o.nvtx = true;
    const replay::Report r = replay::replay_sequential(*a, b, o, nullptr);
    const auto id = [&](const std::string& name) { return kernel_named(r, name).id; };
    std::vector<std::string> expected;
    for (int it = 0; it <= 2; ++it)  // the untimed plan pass first, named "(plan)"
        for (const auto& [name, key, tag] :
             {std::tuple{std::string("relu_k"), relu(1).instance_key(), 1},
              std::tuple{std::string("gemm_k"), gemm(10).instance_key(), 2},
              std::tuple{std::string("Memcpy DtoD (Device -> Device)"), copy().instance_key(),
                         3}}) {
            expected.push_back("range " + replay::nvtx_range_name(id(name), name, it));
            expected.push_back("issue " + key + " #" + std::to_string(tag));
        }
    EXPECT_EQ(ranges_and_issues(b), expected);
    EXPECT_NE(std::find(r.options.begin(), r.options.end(),
                        std::pair<std::string, std::string>{"nvtx", "true"}),
              r.options.end());

    // Off by default: no range at all.
    FakeBackend quiet;
    replay::replay_sequential(*a, quiet, replay::DriverOptions{}, nullptr);
    EXPECT_TRUE(quiet.of("range").empty());
}

TEST(Drivers, UniqueOnlyTimesTheSelectedKernelAndNamesItsIssues) {
    auto a = unique_trace();
    FakeBackend probe;
    const std::string gemm_id =
        kernel_named(replay::replay_unique(*a, probe, unique_options(replay::Context::None)),
                     "gemm_k")
            .id;
    FakeBackend b;
    auto o = unique_options(replay::Context::Recorded, 0, 1);
    o.only = {gemm_id};
    o.nvtx = true;
    o.sequential_check = true;  // --only leaves it out: it would issue every kernel
    const replay::Report r = replay::replay_unique(*a, b, o);
    // One timed issue of one GEMM instance, inside its range; its predecessor (a relu) runs
    // untimed without one, so that ncu --nvtx-include selects the GEMM alone.
    const auto seq = ranges_and_issues(b);
    ASSERT_EQ(seq.size(), 3u) << ::testing::PrintToString(seq);
    EXPECT_EQ(seq[0], "issue " + relu(1).instance_key() + " #0");
    EXPECT_EQ(seq[1], "range " + replay::nvtx_range_name(gemm_id, "gemm_k", 1));
    EXPECT_EQ(seq[2], "issue " + gemm(10).instance_key() + " #1");
    EXPECT_EQ(kernel_named(r, "gemm_k").outcome, KernelOutcome::Replayed);
    EXPECT_EQ(kernel_named(r, "gemm_k").samples_us.size(), 1u);
    for (const char* other : {"relu_k", "Memcpy DtoD (Device -> Device)"}) {
        EXPECT_EQ(kernel_named(r, other).outcome, KernelOutcome::Skipped) << other;
        EXPECT_EQ(kernel_named(r, other).reason, "not selected by --only");
    }
    bool only_option = false;
    for (const auto& [k, v] : r.options) only_option |= k == "only" && v == gemm_id;
    EXPECT_TRUE(only_option);

    FakeBackend typo;
    o.only = {"not-an-id"};
    EXPECT_THROW(replay::replay_unique(*a, typo, o), std::runtime_error);
}

TEST(Drivers, SequentialTimelineCarriesKernelsAndRoundTripsAsKineto) {
    auto a = two_stream_trace();
    FakeBackend b;
    b.per_kernel[gemm(10).instance_key()] = {{"gemm_k", 12000}};  // recorded 10 us: +20%
    b.warm_ns = 300;
    replay::Timeline timeline;
    const replay::Report r = replay::replay_sequential(*a, b, replay::DriverOptions{}, &timeline);
    replay::attach_kernels(timeline, *a, r.environment);
    // Three recorded, three replayed and each replayed step's warm-up read.
    ASSERT_EQ(timeline.items.size(), 9u);
    const auto& gemm_k = kernel_named(r, "gemm_k");
    const replay::Timeline::Item* replayed_gemm = nullptr;
    std::size_t warm_reads = 0;
    for (const auto& item : timeline.items) {
        if (item.warm_read) {  // no activity: no node, kernel or error
            ++warm_reads;
            EXPECT_EQ(item.node, replay::kNoIndex);
            EXPECT_TRUE(item.kernel_id.empty());
            EXPECT_TRUE(std::isnan(item.error_pct()));
            continue;
        }
        EXPECT_NE(item.node, replay::kNoIndex);
        EXPECT_FALSE(item.kernel_id.empty());
        if (item.replayed && item.name == "gemm_k") replayed_gemm = &item;
    }
    EXPECT_EQ(warm_reads, 3u);
    ASSERT_NE(replayed_gemm, nullptr);
    EXPECT_EQ(replayed_gemm->iteration, 1);
    EXPECT_EQ(replayed_gemm->kernel_id, gemm_k.id);
    EXPECT_EQ(replayed_gemm->tier, Tier::Gemm);
    EXPECT_DOUBLE_EQ(replayed_gemm->recorded_dur_us, 10);
    EXPECT_NEAR(replayed_gemm->error_pct(), 20, 1e-9);

    std::ostringstream out;
    replay::write_replay_trace(out, timeline);
    const std::string text = out.str();
    // What HolisticTraceAnalysis and Perfetto look for.
    for (const char* needle :
         {"\"rank\": 0", "\"schemaVersion\": 1", "\"deviceProperties\"", "\"ProfilerStep#1\"",
          "\"ProfilerStep#2\"", "\"cat\":\"kernel\"", "\"cat\":\"gpu_memcpy\"",
          "\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\"", "\"cat\":\"ac2g\"",
          "\"cat\":\"replay\"", "\"error_pct\":20", "\"cat\":\"warm_read\""})
        EXPECT_NE(text.find(needle), std::string::npos) << needle;
    // Three recorded activities each get an arrow to their replay.
    std::size_t arrows = 0;
    for (auto at = text.find("\"cat\":\"replay\""); at != std::string::npos;
         at = text.find("\"cat\":\"replay\"", at + 1))
        ++arrows;
    EXPECT_EQ(arrows, 6u);  // a start and an end each

    replay::testing::TempFile file("replay_trace.json", text);
    const replay::Timeline back = replay::read_replay_trace(file.path(), 100);
    ASSERT_EQ(back.items.size(), 6u);  // warm-up reads are not read back
    for (std::size_t i = 0; i < 6; ++i) {
        const auto& item = back.items[i];
        // Recorded side first, each in start order, on its own clock again.
        EXPECT_EQ(item.replayed, i >= 3);
        const auto original = std::find_if(
            timeline.items.begin(), timeline.items.end(), [&](const replay::Timeline::Item& x) {
                return !x.warm_read && x.replayed == item.replayed && x.kernel_id == item.kernel_id;
            });
        ASSERT_NE(original, timeline.items.end());
        EXPECT_NEAR(item.start_us, original->start_us, 1e-6) << item.name;
        EXPECT_NEAR(item.dur_us, original->dur_us, 1e-6);
        EXPECT_EQ(item.stream, original->stream);
        EXPECT_EQ(item.tier, original->tier);
        if (item.replayed) {
            EXPECT_NEAR(item.recorded_dur_us, original->recorded_dur_us, 1e-9);
        }
    }
    EXPECT_EQ(replay::read_replay_trace(file.path(), 1).items.size(), 2u);  // one of each side
}

}  // namespace
