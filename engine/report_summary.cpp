#include "replay/report_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace replay {
namespace {

__attribute__((format(printf, 2, 3))) void print(std::ostream& out, const char* format, ...) {
    va_list args;
    va_start(args, format);
    va_list again;
    va_copy(again, args);
    const int n = std::vsnprintf(nullptr, 0, format, args);
    va_end(args);
    std::string text(static_cast<std::size_t>(std::max(n, 0)) + 1, '\0');
    std::vsnprintf(text.data(), text.size(), format, again);
    va_end(again);
    text.pop_back();
    out << text;
}

bool not_replayed(KernelOutcome outcome) {
    return outcome == KernelOutcome::Skipped || outcome == KernelOutcome::Failed ||
           outcome == KernelOutcome::NotReplayable;
}

}  // namespace

void write_report_summary(std::ostream& out, const Report& r) {
    const ReportTotals& t = r.totals;
    print(out, "mode %s on %s (%s)\n", r.mode.c_str(), r.backend.c_str(), r.env("gpu").c_str());
    print(out, "  recorded kernel time      %12.1f us, %.2f%% with a recipe\n",
          t.recorded_kernel_us, 100 * t.recipe_coverage);
    print(out, "  replayed                  %12.2f%% of recorded kernel time\n",
          100 * t.replayed_coverage);
    // Copies and memsets are replayed activities too: the recorded figure here is theirs and the
    // kernels', which is why it can exceed the recorded kernel time above.
    print(out,
          "  replayed GPU time         %12.1f us vs %.1f us recorded for the same activities "
          "(%+.2f%%)\n",
          t.replayed_kernel_us, t.replayed_recorded_us, t.total_error_pct);
    print(out, "  median |error| per kernel %12.2f%% (unique kernels), %.2f%% (launches)\n",
          t.median_abs_error_pct, t.median_abs_error_pct_per_launch);
    if (std::isnan(t.gemm_name_match))
        print(out, "  GEMM time, same kernel    %12s (no GEMM replayed with kernel names)\n",
              "n/a");
    else
        print(out, "  GEMM time, same kernel    %12.2f%%\n", 100 * t.gemm_name_match);
    if (r.mode == "unique") {
        print(out, "  predicted total           %12.1f us (sum of count x median)\n",
              t.predicted_total_us);
        if (t.sequential_kernel_us == t.sequential_kernel_us)
            print(out, "  sequential pass           %12.1f us (predicted %+.2f%%)\n",
                  t.sequential_kernel_us,
                  100 * (t.predicted_total_us - t.sequential_kernel_us) / t.sequential_kernel_us);
    }
    // Why the rest was not replayed, largest recorded time first: the first thing a reader of
    // "replayed < 100%" asks.
    struct NotReplayed {
        std::size_t kernels = 0;
        double recorded_us = 0;
    };
    std::map<std::string, NotReplayed> reasons;
    std::size_t skipped = 0;
    for (const auto& k : r.kernels) {
        skipped += k.outcome == KernelOutcome::Skipped || k.outcome == KernelOutcome::Failed;
        if (!not_replayed(k.outcome)) continue;
        NotReplayed& n = reasons[std::string(to_string(k.outcome)) + ": " + k.reason];
        ++n.kernels;
        n.recorded_us += k.recorded_us.sum;
    }
    print(out,
          "  unique kernels            %12zu (%zu skipped or failed; reasons in report.json)\n",
          r.kernels.size(), skipped);
    std::vector<std::pair<std::string, NotReplayed>> largest(reasons.begin(), reasons.end());
    std::sort(largest.begin(), largest.end(), [](const auto& a, const auto& b) {
        return a.second.recorded_us > b.second.recorded_us;
    });
    constexpr std::size_t kShown = 3, kWidth = 90;
    for (std::size_t i = 0; i < std::min(kShown, largest.size()); ++i) {
        std::string why = largest[i].first;
        if (why.size() > kWidth) why = why.substr(0, kWidth - 3) + "...";
        print(out, "    %4zu kernel(s), %10.1f us recorded: %s\n", largest[i].second.kernels,
              largest[i].second.recorded_us, why.c_str());
    }
    if (largest.size() > kShown)
        print(out, "    ... %zu more reasons in report.json\n", largest.size() - kShown);
    if (r.backend == "cpu")
        print(out,
              "  note: the cpu backend times whole ops on the host; its errors against a GPU "
              "recording show that the pipeline runs, not how faithful a GPU replay is\n");
}

}  // namespace replay
