#include "progress_line.h"

#include <algorithm>
#include <cmath>

namespace replay::detail {

ProgressLine::ProgressLine(std::string_view stage, std::string_view unit, std::size_t total,
                           Estimate estimate, Clock::duration every, Clock::time_point start)
    : stage_(stage),
      unit_(unit),
      total_(total),
      estimate_(estimate),
      every_(every),
      start_(start),
      next_(start + every) {}

std::string ProgressLine::due(std::size_t done, Clock::time_point now) {
    if (now < next_) return {};
    next_ = now + every_;
    return line(done, now);
}

std::string ProgressLine::line(std::size_t done, Clock::time_point now) const {
    std::string out =
        stage_ + ": " + std::to_string(done) + " of " + std::to_string(total_) + " " + unit_;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    if (estimate_ == Estimate::AtTheRateSoFar && done > 0 && done < total_ && elapsed > 0)
        out += ", about " +
               rough_duration(elapsed / static_cast<double>(done) *
                              static_cast<double>(total_ - done)) +
               " left";
    return out;
}

std::string rough_duration(double seconds) {
    if (!(seconds >= 0)) seconds = 0;
    if (seconds < 90) return std::to_string(std::max<long>(1, std::lround(seconds))) + " s";
    const long minutes = std::lround(seconds / 60);
    if (minutes < 90) return std::to_string(minutes) + " min";
    const long m = minutes % 60;
    return std::to_string(minutes / 60) + " h " + (m < 10 ? "0" : "") + std::to_string(m) + " min";
}

}  // namespace replay::detail
