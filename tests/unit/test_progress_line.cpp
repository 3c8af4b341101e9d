// Progress lines of long loops: the text and the cadence.
#include <gtest/gtest.h>

#include "../../replayers/progress_line.h"

namespace replay::detail {
namespace {

using Clock = ProgressLine::Clock;
using std::chrono::seconds;

TEST(ProgressLine, SaysHowManyOfHowMany) {
    const ProgressLine p("plan", "steps prepared", 8166);
    EXPECT_EQ(p.line(2059), "plan: 2059 of 8166 steps prepared");
}

TEST(ProgressLine, SpeaksOncePerIntervalAndNotBeforeTheFirst) {
    const Clock::time_point start{};
    ProgressLine p("unique kernels", "timed", 10, seconds(5), start);
    EXPECT_EQ(p.due(1, start + seconds(4)), "");
    EXPECT_EQ(p.due(2, start + seconds(5)), "unique kernels: 2 of 10 timed");
    EXPECT_EQ(p.due(3, start + seconds(9)), "");
    EXPECT_EQ(p.due(4, start + seconds(10)), "unique kernels: 4 of 10 timed");
}

}  // namespace
}  // namespace replay::detail
