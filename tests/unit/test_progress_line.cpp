// Progress lines of long loops: the text and the cadence.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../../replayers/progress_line.h"

namespace replay::detail {
namespace {

using Clock = ProgressLine::Clock;
using std::chrono::seconds;

TEST(ProgressLine, SaysHowManyOfHowMany) {
    const ProgressLine p("plan", "steps prepared", 8166, {});
    EXPECT_EQ(p.line(2059), "plan: 2059 of 8166 steps prepared");
}

TEST(ProgressLine, SpeaksOncePerIntervalAndNotBeforeTheFirst) {
    const Clock::time_point start{};
    std::vector<std::string> lines;
    ProgressLine p(
        "unique kernels", "timed", 10, [&](const std::string& line) { lines.push_back(line); },
        seconds(5), start);
    p.tick(1, start + seconds(4));
    EXPECT_TRUE(lines.empty());
    p.tick(2, start + seconds(5));
    p.tick(3, start + seconds(9));
    p.tick(4, start + seconds(10));
    p.finish(10);
    EXPECT_EQ(lines, (std::vector<std::string>{"unique kernels: 2 of 10 timed",
                                               "unique kernels: 4 of 10 timed",
                                               "unique kernels: 10 of 10 timed"}));
}

}  // namespace
}  // namespace replay::detail
