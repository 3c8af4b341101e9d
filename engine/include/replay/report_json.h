// report.json (schemas/report.schema.json): the writer (report_json.cpp) and the reader
// (report_json_reader.cpp) of a Report.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "replay/json_writer.h"
#include "replay/report.h"

namespace replay {

// No duration in a report is longer than this (11.6 days): a larger one is not a measurement,
// and the sums and medians of such values could overflow.
constexpr double kMaxDurationUs = 1e12;

void write_report_json(std::ostream& out, const Report& report);

// What a number in a report may be (schemas/report.schema.json).
enum class NumberRange : std::uint8_t {
    Duration,     // one activity or run, microseconds: 0 to kMaxDurationUs
    Sum,          // finite, >= 0
    Share,        // a fraction of the recorded time: 0 to 1
    Signed,       // finite, or null
    NonNegative,  // finite >= 0, or null
    ShareOrNull,  // 0 to 1, or null
};
struct TotalsField {
    const char* name;
    double ReportTotals::*member;
    NumberRange range;
    bool required;
};
// The members of "totals", in the order they are written.
const std::vector<TotalsField>& totals_fields();

// The numbers of "timeline" (sequential mode), in the order they are written; each >= 0 or null.
// A figures object: these, then its counts "activities" and "gaps".
struct FiguresField {
    const char* name;
    double TimelineFigures::*member;
    bool required = true;  // false: added later; reports written before it lack it (NaN)
};
const std::vector<FiguresField>& timeline_figures_fields();
// An iteration: "iteration", its figures, these, then "unattributed".
struct IterationField {
    const char* name;
    double IterationResult::*member;
    bool required = true;  // as FiguresField::required
};
const std::vector<IterationField>& iteration_fields();

// The members that start every kernel entry of report.json and regression.json.
void write_kernel_identity(JsonWriter& json, const std::string& id, const std::string& name,
                           const std::string& kind, Tier tier);
// "tier" and its "label": how every tier row of report.json and regression.json starts.
void write_tier_and_label(JsonWriter& json, Tier tier);
// Reads and validates a report: its schema and version, every field the schema requires, finite
// numbers within their ranges (durations and samples >= 0 and <= kMaxDurationUs), unique kernel
// ids. Throws InputError naming the file, the field (a JSON pointer such as
// /kernels/3/samples_us/2) and its byte offset; a truncated file at its end.
Report read_report_json(const std::string& path);

}  // namespace replay
