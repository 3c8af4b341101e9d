#include "html_output.h"

#include <sstream>

#include "replay/report_json.h"

namespace replay::cli {

Fill html_page(HtmlReportInput input, HtmlReportOptions options) {
    if (input.report_json.empty()) {
        std::ostringstream json;
        write_report_json(json, *input.report);
        input.report_json = json.str();
    }
    return [input = std::move(input), options](std::ostream& out) {
        write_report_html(out, input, options);
    };
}

}  // namespace replay::cli
