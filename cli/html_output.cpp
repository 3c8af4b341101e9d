#include "html_output.h"

namespace replay::cli {

Fill html_page(HtmlReportInput input, HtmlReportOptions options) {
    return [input = std::move(input), options](std::ostream& out) {
        write_report_html(out, input, options);
    };
}

}  // namespace replay::cli
