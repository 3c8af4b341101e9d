// A report of recorded durations only, so that `replay compare` can hold two traces against each
// other without a replay.
#pragma once

#include "replay/analysis.h"
#include "replay/report.h"

namespace replay {

// Mode "recorded"; every kernel's recorded instances are its samples (so that kernels recorded
// five times or more get the rank test, as replayed runs do), its outcome Recorded.
Report recorded_report(const Analysis& analysis);

}  // namespace replay
