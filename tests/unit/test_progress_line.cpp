// Progress lines of long loops: the estimate of what is left, and the cadence.
#include <gtest/gtest.h>

#include "../../replayers/progress_line.h"

namespace replay::detail {
namespace {

using Clock = ProgressLine::Clock;
using std::chrono::seconds;

TEST(ProgressLine, EstimatesWhatIsLeftFromTheRateSoFar) {
    const Clock::time_point start{};
    const ProgressLine p("plan", "steps prepared", 8000, ProgressLine::Estimate::AtTheRateSoFar,
                         seconds(5), start);
    // 2000 steps in 60 s: 6000 left at the same rate take 180 s.
    EXPECT_EQ(p.line(2000, start + seconds(60)),
              "plan: 2000 of 8000 steps prepared, about 3 min left");
    EXPECT_EQ(p.line(7990, start + seconds(60)),
              "plan: 7990 of 8000 steps prepared, about 1 s left");
    // Nothing done yet, or everything: no estimate.
    EXPECT_EQ(p.line(0, start + seconds(60)), "plan: 0 of 8000 steps prepared");
    EXPECT_EQ(p.line(8000, start + seconds(60)), "plan: 8000 of 8000 steps prepared");
}

TEST(ProgressLine, SpeaksOncePerIntervalAndNotBeforeTheFirst) {
    const Clock::time_point start{};
    ProgressLine p("unique kernels", "timed", 10, ProgressLine::Estimate::AtTheRateSoFar,
                   seconds(5), start);
    EXPECT_EQ(p.due(1, start + seconds(4)), "");
    EXPECT_EQ(p.due(2, start + seconds(5)), "unique kernels: 2 of 10 timed, about 20 s left");
    EXPECT_EQ(p.due(3, start + seconds(9)), "");
    EXPECT_NE(p.due(4, start + seconds(10)), "");
}

// Items whose costs differ by orders of magnitude: the rate so far says nothing of the rest.
TEST(ProgressLine, NoEstimateWhereTheRateSaysNothing) {
    const Clock::time_point start{};
    const ProgressLine p("unique kernels", "timed", 598, ProgressLine::Estimate::None, seconds(5),
                         start);
    EXPECT_EQ(p.line(115, start + seconds(120)), "unique kernels: 115 of 598 timed");
}

TEST(ProgressLine, RoughDurations) {
    EXPECT_EQ(rough_duration(0.2), "1 s");
    EXPECT_EQ(rough_duration(89), "89 s");
    EXPECT_EQ(rough_duration(90), "2 min");
    EXPECT_EQ(rough_duration(89 * 60), "89 min");
    EXPECT_EQ(rough_duration(125 * 60), "2 h 05 min");
    EXPECT_EQ(rough_duration(-3), "1 s");
}

}  // namespace
}  // namespace replay::detail
