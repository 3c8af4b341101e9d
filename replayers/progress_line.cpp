#include "progress_line.h"

#include <utility>

namespace replay::detail {

ProgressLine::ProgressLine(std::string_view stage, std::string_view unit, std::size_t total,
                           Sink sink, Clock::duration every, Clock::time_point start)
    : stage_(stage),
      unit_(unit),
      total_(total),
      sink_(std::move(sink)),
      every_(every),
      next_(start + every) {}

void ProgressLine::tick(std::size_t done, Clock::time_point now) {
    if (!sink_ || now < next_) return;
    next_ = now + every_;
    sink_(line(done));
}

void ProgressLine::finish(std::size_t done) const {
    if (sink_) sink_(line(done));
}

std::string ProgressLine::line(std::size_t done) const {
    return stage_ + ": " + std::to_string(done) + " of " + std::to_string(total_) + " " + unit_;
}

}  // namespace replay::detail
