// The pieces of report.html (internal to engine/): text escaping and number formatting, the SVG
// charts (report_html_charts.cpp) and the energy fields found in a report's JSON
// (report_html_energy.cpp). report_html.cpp puts them together.
#pragma once

#include <cstddef>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "replay/regression.h"
#include "replay/report.h"
#include "replay/timeline.h"

namespace replay::html {

// Text for HTML content and attribute values.
std::string escape(std::string_view text);
// A number with at most `digits` decimals, trailing zeros dropped; "n/a" when not finite.
std::string number(double x, int digits = 3);
// A summary card: a figure over its label; `tone` is an extra class of the figure (good, bad).
void card(std::ostream& out, const std::string& value, const std::string& label,
          const char* tone = "");
// A table cell with its sort key (NaN sorts as unknown).
void cell(std::ostream& out, double value, const std::string& text, const char* cls = "");

// Every chart is a <div class="chart" data-chart=NAME data-points=N> whose marks of class
// "point" (circles, rects) number N, so that a test can count them in the DOM.

// Recorded against replayed median per replayed unique kernel, log axes, the diagonal y = x;
// each point has data-k, the kernel's index in the report (the page's kernel table).
void scatter_chart(std::ostream& out, const Report& report);
// Recorded and replayed time per tier, side by side.
void tier_chart(std::ostream& out, const Report& report);
// Recorded (top) and replayed (bottom) activities, one lane per stream of either side, on one
// time scale; `kernel_index` maps a unique-kernel id to its index in the report.
void gantt_chart(std::ostream& out, const Timeline& timeline,
                 const std::map<std::string, std::size_t>& kernel_index, std::size_t max_per_side);
// Baseline and current samples of one changed kernel as two strips, medians marked.
void distribution_chart(std::ostream& out, const KernelComparison& change,
                        const std::vector<double>& baseline, const std::vector<double>& current,
                        std::size_t max_per_side);

// Whether the report asked for energy (--energy), measured or not.
bool has_energy(const Report& report);
// The energy section: the step and the sum over kernels as cards, the kernels measured as a table
// and a bar chart of the largest; why energy is n/a when it could not be read.
void energy_section(std::ostream& out, const Report& report);

}  // namespace replay::html
