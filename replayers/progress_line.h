// One progress line of a long loop (internal to replayers/): "plan: 2059 of 8166 steps prepared".
// No estimate of the time left: items differ by orders of magnitude (a step that cannot be
// replayed takes no time, a large GEMM on the cpu backend seconds), so the rate so far says
// little of the rest (on HTA's control trace it said 3 minutes with 35 s to go, and 10 minutes
// with 15 s to go in unique mode). Lines come at most every `every`, so a fast loop prints none.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace replay::detail {

class ProgressLine {
  public:
    using Clock = std::chrono::steady_clock;
    // "plan", "steps prepared": "plan: 2059 of 8166 steps prepared".
    ProgressLine(std::string_view stage, std::string_view unit, std::size_t total,
                 Clock::duration every = std::chrono::seconds(5),
                 Clock::time_point start = Clock::now());
    // The line for `done` items at `now` when the interval has passed since the last one, else "".
    std::string due(std::size_t done, Clock::time_point now = Clock::now());
    // The line itself: "<stage>: <done> of <total> <unit>".
    std::string line(std::size_t done) const;

  private:
    std::string stage_;
    std::string unit_;
    std::size_t total_;
    Clock::duration every_;
    Clock::time_point next_;
};

}  // namespace replay::detail
