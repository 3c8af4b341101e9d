// One progress line of a long loop (internal to replayers/): "plan: 2059 of 8166 steps prepared,
// about 4 min left". The estimate is the average rate so far, so it says "about": steps differ in
// cost (a large GEMM on the cpu backend takes seconds, a copy microseconds), and a loop whose
// items differ by orders of magnitude (unique mode's kernels, many skipped at once) gets none:
// its rate so far says nothing of the rest. Lines come at most every `every`, so a fast loop
// prints nothing.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace replay::detail {

class ProgressLine {
  public:
    using Clock = std::chrono::steady_clock;
    // "plan", "steps prepared": "plan: 2059 of 8166 steps prepared".
    enum class Estimate : std::uint8_t { AtTheRateSoFar, None };
    ProgressLine(std::string_view stage, std::string_view unit, std::size_t total,
                 Estimate estimate = Estimate::AtTheRateSoFar,
                 Clock::duration every = std::chrono::seconds(5),
                 Clock::time_point start = Clock::now());
    // The line for `done` items at `now` when the interval has passed since the last one, else "".
    std::string due(std::size_t done, Clock::time_point now = Clock::now());
    // The line itself: "<stage>: <done> of <total> <unit>, about 4 min left" (no estimate before
    // the first item is done).
    std::string line(std::size_t done, Clock::time_point now) const;

  private:
    std::string stage_;
    std::string unit_;
    std::size_t total_;
    Estimate estimate_;
    Clock::duration every_;
    Clock::time_point start_;
    Clock::time_point next_;
};

// "45 s", "4 min", "1 h 05 min": how long is left, rounded to what a reader needs.
std::string rough_duration(double seconds);

}  // namespace replay::detail
