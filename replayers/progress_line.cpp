#include "progress_line.h"

namespace replay::detail {

ProgressLine::ProgressLine(std::string_view stage, std::string_view unit, std::size_t total,
                           Clock::duration every, Clock::time_point start)
    : stage_(stage), unit_(unit), total_(total), every_(every), next_(start + every) {}

std::string ProgressLine::due(std::size_t done, Clock::time_point now) {
    if (now < next_) return {};
    next_ = now + every_;
    return line(done);
}

std::string ProgressLine::line(std::size_t done) const {
    return stage_ + ": " + std::to_string(done) + " of " + std::to_string(total_) + " " + unit_;
}

}  // namespace replay::detail
