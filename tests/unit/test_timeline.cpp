// A timeline's figures (span, busy time, warm-up reads, gaps) and their ratios to the recording,
// and replay_trace.json's processes per replayed iteration.
#include <gtest/gtest.h>

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
    // A read that straddles the gap's ends counts only inside it; reads that overlap count once.
    const auto g = replay::timeline_figures(
        {work(0, 0, 10), warm(0, 8, 12), warm(0, 11, 13), warm(0, 19, 25), work(0, 20, 30)});
    EXPECT_DOUBLE_EQ(g.median_gap_us, 10 - 3 - 1);
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
    const auto r = replay::iteration_result(3, replayed, recorded);
    EXPECT_EQ(r.iteration, 3);
    EXPECT_DOUBLE_EQ(r.span_ratio, 0.5);
    EXPECT_DOUBLE_EQ(r.stretch, 50.0 / 45.0);
    EXPECT_DOUBLE_EQ(r.median_gap_ratio, 0.25);
    EXPECT_DOUBLE_EQ(r.replayed.kernel_us, 40);
    // Nothing to compare with: no ratio, not a division by zero.
    const auto none = replay::iteration_result(1, replayed, replay::TimelineFigures{});
    EXPECT_TRUE(std::isnan(none.span_ratio));
    EXPECT_TRUE(std::isnan(none.median_gap_ratio));
    EXPECT_DOUBLE_EQ(none.stretch, 50.0 / 45.0);
    const auto empty = replay::iteration_result(1, replay::TimelineFigures{}, recorded);
    EXPECT_TRUE(std::isnan(empty.span_ratio));
    EXPECT_TRUE(std::isnan(empty.stretch));
}

TEST(ReplayTrace, OneProcessPerReplayedIteration) {
    auto processes = [](const replay::Timeline& t) {
        std::ostringstream out;
        replay::write_replay_trace(out, t);
        std::vector<std::string> names;
        const std::string text = out.str();
        for (std::size_t at = text.find("\"process_name\""); at != std::string::npos;
             at = text.find("\"process_name\"", at + 1)) {
            const auto name = text.find("\"name\":\"", text.find("\"args\"", at)) + 8;
            names.push_back(text.substr(name, text.find('"', name) - name));
        }
        return names;
    };
    replay::Timeline t;
    t.items.push_back({"k", 7, 0, 1, false, 0, false});
    t.items.push_back({"k", 7, 5, 1, true, 3, false});
    EXPECT_EQ(processes(t), (std::vector<std::string>{"recorded", "replayed"}));
    t.items.push_back({"k", 7, 9, 1, true, 1, false});
    t.items.push_back({"L2 warm-up read", 7, 8, 1, true, 1, true});
    EXPECT_EQ(processes(t), (std::vector<std::string>{"recorded", "replayed iteration 1",
                                                      "replayed iteration 3"}));
    std::ostringstream out;
    replay::write_replay_trace(out, t);
    EXPECT_NE(out.str().find("\"cat\":\"warm_read\""), std::string::npos);
}

}  // namespace
