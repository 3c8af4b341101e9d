// report.html as the commands write it (`replay report`, and --html on the replay, `regress` and
// `compare`): the page of a report, with its timeline and comparison when there is one.
#pragma once

#include "output_files.h"
#include "replay/report_html.h"

namespace replay::cli {

// What writes report.html into an output folder. Without `input.report_json` the page reads
// the report as write_report_json() writes it, so that what it shows is what report.json says.
Fill html_page(HtmlReportInput input, HtmlReportOptions options = {});

}  // namespace replay::cli
