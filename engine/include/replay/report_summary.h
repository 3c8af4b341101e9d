// The text summary of a replay that `replay TRACE` prints: coverage, error figures, why the rest
// was not replayed.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "replay/report.h"

namespace replay {

// A figure that cannot be computed (nothing replayed) is printed as "n/a (why)", never "nan".
void write_report_summary(std::ostream& out, const Report& report);

// Why kernels were not replayed (skipped, failed, not replayable), grouped by outcome and
// reason, largest recorded time first.
struct NotReplayedReason {
    std::string reason;  // "not_replayable: no shapes for aten::mm: ..."
    std::size_t kernels = 0;
    double recorded_us = 0;
};
std::vector<NotReplayedReason> not_replayed_reasons(const Report& report);

// Empty when at least one kernel was replayed; otherwise one line: how many unique kernels there
// were and the largest reasons none was replayed.
std::string why_nothing_was_replayed(const Report& report);

}  // namespace replay
