// kernels.csv: one row per unique kernel of a report, for spreadsheets, with the roofline
// columns (work per instance, % of the device's peak FLOP/s and memory bandwidth).
#pragma once

#include <ostream>

#include "replay/report.h"

namespace replay {

// Numbers in shortest round-trip form, NaN as an empty cell, text quoted as RFC 4180 says.
void write_kernels_csv(std::ostream& out, const Report& report);

}  // namespace replay
