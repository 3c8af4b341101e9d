// A timeline's figures (span, busy time, warm-up reads, gaps) and their ratios to the recording,
// and replay_trace.json's profiler steps per replayed iteration.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "replay/timeline.h"

namespace {

using replay::TimelineInterval;

constexpr std::int64_t us = 1000;  // the intervals are in nanoseconds

TimelineInterval work(std::int64_t stream, std::int64_t from_us, std::int64_t to_us) {
    return {stream, from_us * us, to_us * us, false};
}
TimelineInterval warm(std::int64_t stream, std::int64_t from_us, std::int64_t to_us) {
    return {stream, from_us * us, to_us * us, true};
}

TEST(TimelineFigures, NothingHasNoSpanAndNoGap) {
    const auto f = replay::timeline_figures({});
    EXPECT_TRUE(std::isnan(f.span_us));
    EXPECT_EQ(f.kernel_us, 0);
    EXPECT_EQ(f.activities, 0u);
    EXPECT_EQ(f.gaps, 0u);
    EXPECT_TRUE(std::isnan(f.median_gap_us));
    EXPECT_TRUE(std::isnan(f.max_gap_us));
    const auto one = replay::timeline_figures({work(7, 3, 5)});
    EXPECT_DOUBLE_EQ(one.span_us, 2);
    EXPECT_EQ(one.gaps, 0u);
}

TEST(TimelineFigures, GapsAreBetweenConsecutiveActivitiesOfAStream) {
    // Stream 0: gaps of 5 and 10 us; stream 1, back to back: a gap of 0. Out of order on input.
    const auto f = replay::timeline_figures(
        {work(0, 30, 31), work(1, 4, 6), work(0, 0, 10), work(1, 2, 4), work(0, 15, 20)});
    EXPECT_DOUBLE_EQ(f.span_us, 31);
    EXPECT_DOUBLE_EQ(f.kernel_us, 10 + 5 + 1 + 2 + 2);
    EXPECT_EQ(f.activities, 5u);
    EXPECT_EQ(f.gaps, 3u);
    EXPECT_DOUBLE_EQ(f.median_gap_us, 5);
    EXPECT_DOUBLE_EQ(f.max_gap_us, 10);
    EXPECT_DOUBLE_EQ(f.warm_read_us, 0);
}

TEST(TimelineFigures, WarmUpReadsCountInTheSpanNotInTheGaps) {
    // A 6 us gap on stream 0 holds a 2 us warm-up read (and stream 1's read, which does not
    // count on stream 0); the read before the first activity widens the span.
    const auto f = replay::timeline_figures({warm(0, -3, -1), work(0, 0, 10), warm(0, 12, 14),
                                             warm(1, 11, 15), work(0, 16, 20)});
    EXPECT_DOUBLE_EQ(f.span_us, 23);
    EXPECT_DOUBLE_EQ(f.kernel_us, 14);
    EXPECT_DOUBLE_EQ(f.warm_read_us, 2 + 2 + 4);
    EXPECT_EQ(f.activities, 2u);
    ASSERT_EQ(f.gaps, 1u);
    EXPECT_DOUBLE_EQ(f.median_gap_us, 4);
    // End to next start, the read counted as gap: the spacing of the kernels themselves.
    EXPECT_DOUBLE_EQ(f.median_kernel_gap_us, 6);
    // A read that straddles the gap's ends counts only inside it; reads that overlap count once.
    const auto g = replay::timeline_figures(
        {work(0, 0, 10), warm(0, 8, 12), warm(0, 11, 13), warm(0, 19, 25), work(0, 20, 30)});
    EXPECT_DOUBLE_EQ(g.median_gap_us, 10 - 3 - 1);
    EXPECT_DOUBLE_EQ(g.median_kernel_gap_us, 10);
    // Without warm-up reads (a recording) both gaps are the same.
    const auto r = replay::timeline_figures({work(0, 0, 10), work(0, 16, 20), work(0, 29, 30)});
    EXPECT_DOUBLE_EQ(r.median_gap_us, 7.5);
    EXPECT_DOUBLE_EQ(r.median_kernel_gap_us, 7.5);
}

TEST(TimelineFigures, AnActivityInsideALongerOneLeavesNoGap) {
    // [2, 4] lies inside [0, 10]: no gap before it, and the next gap counts from 10.
    const auto f = replay::timeline_figures({work(0, 0, 10), work(0, 2, 4), work(0, 12, 13)});
    ASSERT_EQ(f.gaps, 2u);
    EXPECT_DOUBLE_EQ(f.max_gap_us, 2);
    EXPECT_DOUBLE_EQ(f.median_gap_us, 1);  // (0 + 2) / 2
}

TEST(TimelineFigures, RatiosAgainstTheRecordedStep) {
    replay::TimelineFigures recorded;
    recorded.span_us = 100;
    recorded.median_gap_us = 10;
    replay::TimelineFigures replayed;
    replayed.span_us = 50;
    replayed.kernel_us = 40;
    replayed.warm_read_us = 5;
    replayed.median_gap_us = 2.5;
    recorded.median_kernel_gap_us = 10;
    replayed.median_kernel_gap_us = 9;
    const auto r = replay::iteration_result(3, replayed, recorded);
    EXPECT_EQ(r.iteration, 3);
    EXPECT_DOUBLE_EQ(r.span_ratio, 0.5);
    EXPECT_DOUBLE_EQ(r.stretch, 50.0 / 45.0);
    EXPECT_DOUBLE_EQ(r.median_gap_ratio, 0.25);
    EXPECT_DOUBLE_EQ(r.kernel_gap_ratio, 0.9);
    EXPECT_DOUBLE_EQ(r.replayed.kernel_us, 40);
    // Nothing to compare with: no ratio, not a division by zero.
    const auto none = replay::iteration_result(1, replayed, replay::TimelineFigures{});
    EXPECT_TRUE(std::isnan(none.span_ratio));
    EXPECT_TRUE(std::isnan(none.median_gap_ratio));
    // A recorded median gap of a few nanoseconds is back to back: no x2000 ratio to it.
    recorded.median_kernel_gap_us = 0.004;
    recorded.median_gap_us = 0.9;
    const auto back_to_back = replay::iteration_result(1, replayed, recorded);
    EXPECT_TRUE(std::isnan(back_to_back.kernel_gap_ratio));
    EXPECT_TRUE(std::isnan(back_to_back.median_gap_ratio));
    EXPECT_DOUBLE_EQ(back_to_back.span_ratio, 0.5);
    EXPECT_DOUBLE_EQ(none.stretch, 50.0 / 45.0);
    const auto empty = replay::iteration_result(1, replay::TimelineFigures{}, recorded);
    EXPECT_TRUE(std::isnan(empty.span_ratio));
    EXPECT_TRUE(std::isnan(empty.stretch));
}

// Each replayed iteration is a profiler step of its own (iteration N: step N + 1) after the
// recorded step 1, the steps one after another; a warm-up read is a slice of its own category with
// no stream, correlation or kernel id (HolisticTraceAnalysis counts no kernel for it).
TEST(ReplayTrace, OneProfilerStepPerReplayedIteration) {
    auto item = [](bool replayed, int iteration, double start, bool warm_read = false) {
        replay::Timeline::Item i;
        i.name = warm_read ? "L2 warm-up read" : "k";
        i.kernel_id = warm_read ? "" : "00ab";
        i.stream = 7;
        i.start_us = start;
        i.dur_us = 1;
        i.replayed = replayed;
        i.iteration = iteration;
        i.warm_read = warm_read;
        i.node = warm_read ? replay::kNoIndex : 0;
        i.recorded_dur_us = 1;
        return i;
    };
    replay::Timeline t;
    t.items = {item(false, 0, 0), item(true, 3, 0), item(true, 1, 1), item(true, 1, 0, true)};
    std::ostringstream out;
    replay::write_replay_trace(out, t);
    const std::string text = out.str();

    simdjson::dom::parser parser;
    const simdjson::padded_string json(text);
    simdjson::dom::element root = parser.parse(json);
    std::vector<std::pair<std::string, double>> steps;  // name, start
    std::vector<std::pair<std::int64_t, double>> kernels;  // iteration (0: recorded), start
    int warm_reads = 0;
    for (simdjson::dom::element e : root["traceEvents"].get_array()) {
        std::string_view ph, cat, name;
        if (e["ph"].get(ph) || ph != "X" || e["cat"].get(cat) || e["name"].get(name)) continue;
        if (cat == "user_annotation") steps.emplace_back(std::string(name), double(e["ts"]));
        if (cat == "kernel") {
            // Recorded kernels have no iteration.
            std::int64_t iteration = 0;
            if (e["args"]["iteration"].get_int64().get(iteration) != simdjson::SUCCESS)
                iteration = 0;
            kernels.emplace_back(iteration, double(e["ts"]));
        }
        if (cat == "warm_read") {
            ++warm_reads;
            simdjson::dom::element args = e["args"];
            EXPECT_TRUE(args["stream"].error() == simdjson::NO_SUCH_FIELD);
            EXPECT_TRUE(args["correlation"].error() == simdjson::NO_SUCH_FIELD);
            EXPECT_TRUE(args["kernel_id"].error() == simdjson::NO_SUCH_FIELD);
        }
    }
    ASSERT_EQ(steps.size(), 3u);
    EXPECT_EQ(steps[0].first, "ProfilerStep#1");
    EXPECT_EQ(steps[1].first, "ProfilerStep#2");  // iteration 1
    EXPECT_EQ(steps[2].first, "ProfilerStep#4");  // iteration 3
    EXPECT_LT(steps[0].second, steps[1].second);
    EXPECT_LT(steps[1].second, steps[2].second);
    EXPECT_EQ(warm_reads, 1);
    ASSERT_EQ(kernels.size(), 3u);
    // Each kernel inside its step: iteration 1's kernel 1 us after its step's warm-up read.
    for (const auto& [iteration, ts] : kernels) {
        const std::size_t s = iteration == 0 ? 0 : iteration == 1 ? 1 : 2;
        EXPECT_GE(ts, steps[s].second);
        if (s + 1 < steps.size()) {
            EXPECT_LT(ts, steps[s + 1].second);
        }
    }
    EXPECT_EQ(root["replay"]["replayed_iteration"].get_int64().value(), 3);
    EXPECT_EQ(root["replay"]["replayed_steps"].get_array().size(), 2u);
}

}  // namespace
