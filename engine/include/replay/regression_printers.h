// The printers of a comparison: regression.json (schemas/regression.schema.json) and a short
// Markdown summary for a CI log.
#pragma once

#include <ostream>

#include "replay/regression.h"

namespace replay {

void write_regression_json(std::ostream& out, const Regression& regression);
// Regressed/improved table, new and missing kernels, tier rows, then totals and notes.
void write_regression_markdown(std::ostream& out, const Regression& regression);

}  // namespace replay
