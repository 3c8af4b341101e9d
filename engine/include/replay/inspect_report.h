// `replay inspect`: what ran on the GPU, by category, tier, stream and unique kernel.
#pragma once

#include <ostream>

#include "replay/analysis.h"

namespace replay {

void print_inspect(std::ostream& out, const Analysis& analysis, int top);
// One JSON object: counts {kernel, memcpy, memset}, kernel_time_us, unique_kernels, coverage, ...
void write_inspect_json(std::ostream& out, const Analysis& analysis, int top);

}  // namespace replay
