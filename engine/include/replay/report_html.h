// report.html: one self-contained page (styles, scripts and data inlined, no network) that shows
// a report: the summary and environment, recorded against replayed time per unique kernel, time
// by tier, the kernels (sortable), the recorded and replayed timelines one above the other
// (sequential mode), the changed kernels with their samples (regress, compare) and energy where
// the report has it. The charts are SVG written here; a little inline JavaScript adds tooltips,
// sorting and zooming (engine/report_html_assets/).
#pragma once

#include <cstddef>
#include <ostream>
#include <string>

#include "replay/regression.h"
#include "replay/report.h"
#include "replay/timeline.h"

namespace replay {

struct HtmlReportInput {
    const Report* report = nullptr;  // required: the report shown (compare: the current side)
    const Timeline* timeline = nullptr;      // sequential mode: recorded and replayed activities
    const Report* baseline = nullptr;        // regress / compare / --baseline
    const Regression* regression = nullptr;  // with `baseline`
    std::string title;                       // "" : from the report's trace
};

struct HtmlReportOptions {
    std::size_t timeline_items = 20000;   // per side, the first ones in start order
    std::size_t changed_kernels = 40;     // distributions drawn, largest changes first
    std::size_t samples_per_side = 400;   // per distribution, evenly picked when there are more
};

void write_report_html(std::ostream& out, const HtmlReportInput& input,
                       const HtmlReportOptions& options = {});

}  // namespace replay
