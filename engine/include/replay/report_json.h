// report.json (schemas/report.schema.json): the writer and the reader of a Report.
#pragma once

#include <ostream>
#include <string>

#include "replay/report.h"

namespace replay {

void write_report_json(std::ostream& out, const Report& report);
// Throws InputError naming the file and byte offset.
Report read_report_json(const std::string& path);

}  // namespace replay
