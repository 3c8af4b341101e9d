// One progress line of a long loop (internal to replayers/): "plan: 2059 of 8166 steps prepared".
// No estimate of the time left: items differ by orders of magnitude (a step that cannot be
// replayed takes no time, a large GEMM on the cpu backend seconds), so the rate so far says
// little of the rest (on HTA's control trace it said 3 minutes with 35 s to go, and 10 minutes
// with 15 s to go in unique mode). Lines come at most every `every`, so a fast loop prints none.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace replay::detail {

class ProgressLine {
  public:
    using Clock = std::chrono::steady_clock;
    using Sink = std::function<void(const std::string&)>;  // empty: no progress wanted
    // "plan", "steps prepared": "plan: 2059 of 8166 steps prepared".
    ProgressLine(std::string_view stage, std::string_view unit, std::size_t total, Sink sink,
                 Clock::duration every = std::chrono::seconds(5),
                 Clock::time_point start = Clock::now());
    // Gives the line for `done` items to the sink when the interval has passed since the last.
    void tick(std::size_t done, Clock::time_point now = Clock::now());
    // Gives the line for `done` items to the sink now (the loop's last).
    void finish(std::size_t done) const;
    // The line itself: "<stage>: <done> of <total> <unit>".
    std::string line(std::size_t done) const;

  private:
    std::string stage_;
    std::string unit_;
    std::size_t total_;
    Sink sink_;
    Clock::duration every_;
    Clock::time_point next_;
};

}  // namespace replay::detail
