// The text summary of a replay that `replay TRACE` prints: coverage, error figures, why the rest
// was not replayed.
#pragma once

#include <ostream>

#include "replay/report.h"

namespace replay {

void write_report_summary(std::ostream& out, const Report& report);

}  // namespace replay
