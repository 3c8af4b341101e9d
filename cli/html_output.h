// report.html as the commands write it (`replay report`, and --html on the replay, `regress` and
// `compare`): the page of a report, with its timeline and comparison when there is one.
#pragma once

#include "output_files.h"
#include "replay/report_html.h"

namespace replay::cli {

// What writes report.html into an output folder.
Fill html_page(HtmlReportInput input, HtmlReportOptions options = {});

}  // namespace replay::cli
