#include "replay/report_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "replay/shorten.h"
#include "replay/timeline.h"

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

// `x` in `format` (one %f conversion), or "n/a (why)" when it is not a number.
std::string figure(const char* format, double x, const char* why) {
    if (!std::isfinite(x)) return std::string("n/a (") + why + ")";
    char buf[64];
    std::snprintf(buf, sizeof buf, format, x);
    return buf;
}

// Sequential mode: the last iteration's timeline against the recorded step's.
void write_timeline_summary(std::ostream& out, const ReportTimeline& t) {
    if (t.iterations.empty()) return;
    const IterationResult& last = t.iterations.back();
    const TimelineFigures& replayed = last.replayed;
    const char* none = "nothing timed";
    print(out, "  step span (iteration %d)  %12s us vs %s us recorded (%s)\n", last.iteration,
          figure("%.1f", replayed.span_us, none).c_str(),
          figure("%.1f", t.recorded.span_us, none).c_str(),
          figure("x%.3f", last.span_ratio, "no recorded span").c_str());
    print(out, "    busy                    %12.1f us kernels + %.1f us warm-up reads (span %s)\n",
          replayed.kernel_us, replayed.warm_read_us, figure("x%.3f", last.stretch, none).c_str());
    print(out, "    gap between activities  median %s us (recorded %s), max %s us (recorded %s)\n",
          figure("%.1f", replayed.median_gap_us, "no gap").c_str(),
          figure("%.1f", t.recorded.median_gap_us, "no gap").c_str(),
          figure("%.1f", replayed.max_gap_us, "no gap").c_str(),
          figure("%.1f", t.recorded.max_gap_us, "no gap").c_str());
    if (replayed.warm_read_us > 0)
        print(out,
              "    end to next start       median %s us (recorded %s, %s), warm-up reads counted "
              "as gap\n",
              figure("%.1f", replayed.median_kernel_gap_us, "no gap").c_str(),
              figure("%.1f", t.recorded.median_kernel_gap_us, "no gap").c_str(),
              figure("x%.3f", last.kernel_gap_ratio,
                     t.recorded.median_kernel_gap_us < kShortestComparableGapUs
                         ? "no ratio: recorded back to back"
                         : "no gap")
                  .c_str());
    print(out, "    issue path              %12s%s\n", t.issue_path.c_str(),
          t.first_uses.empty() ? "" : "; first uses after the plan was sealed: see report.json");
}

}  // namespace

std::vector<NotReplayedReason> not_replayed_reasons(const Report& r) {
    std::map<std::string, NotReplayedReason> reasons;
    for (const auto& k : r.kernels) {
        if (!not_replayed(k.outcome)) continue;
        const std::string why = std::string(to_string(k.outcome)) + ": " + k.reason;
        NotReplayedReason& n = reasons[why];
        n.reason = why;
        ++n.kernels;
        n.recorded_us += k.recorded_us.sum;
    }
    std::vector<NotReplayedReason> largest;
    for (auto& [why, n] : reasons) largest.push_back(std::move(n));
    std::stable_sort(largest.begin(), largest.end(),
                     [](const auto& a, const auto& b) { return a.recorded_us > b.recorded_us; });
    return largest;
}

std::string why_nothing_was_replayed(const Report& r) {
    for (const auto& k : r.kernels)
        if (was_replayed(k)) return {};
    std::string why = "nothing was replayed: " + std::to_string(r.kernels.size()) +
                      " unique kernels, none of them timed";
    const auto reasons = not_replayed_reasons(r);
    constexpr std::size_t kShown = 3;
    for (std::size_t i = 0; i < std::min(kShown, reasons.size()); ++i)
        why += (i == 0 ? "; largest reasons: " : "; ") + std::to_string(reasons[i].kernels) +
               " kernel(s) (" + figure("%.1f", reasons[i].recorded_us, "no recorded time") +
               " us recorded) " + reasons[i].reason;
    if (reasons.size() > kShown)
        why += "; " + std::to_string(reasons.size() - kShown) + " more reasons";
    return why;
}

namespace {

// --energy: the probe, the step and the comparisons, n/a with the reason where they are missing.
void write_energy_summary(std::ostream& out, const ReportEnergy& e) {
    if (!e.requested) return;
    const EnergyProbe& p = e.probe;
    if (!p.available) {
        print(out, "  energy                    %12s (%s)\n", "n/a", p.why.c_str());
        return;
    }
    print(out,
          "  energy counter            %12.1f ms period (jitter %.2f ms), power reading %s; idle "
          "%.1f W, limit %s\n",
          p.counter_period_ms, p.counter_jitter_ms,
          figure("%.1f ms", p.power_period_ms, "unchanged while probed").c_str(), p.idle_power_w,
          figure("%.0f W", p.power_limit_w, "unknown").c_str());
    print(out, "  energy windows            %12d x %.1f ms (%s)\n", e.windows, e.window_ms,
          e.window_rule.c_str());
    const char* no_step = "no step measured";
    print(out, "  replayed step             %s, %s dynamic\n",
          figure("%12.2f mJ", e.step.mj, no_step).c_str(),
          figure("%.2f mJ", e.step.dynamic_mj, no_step).c_str());
    if (std::isfinite(e.predicted_mj))
        print(out,
              "  sum of count x J/launch   %12.2f mJ, %.2f mJ dynamic (%s vs the step's dynamic; "
              "kernels with energy: %.1f%% of the recorded time)\n",
              e.predicted_mj, e.predicted_dynamic_mj,
              figure("%+.2f%%", e.predicted_vs_step_pct, no_step).c_str(), 100 * e.coverage);
    if (std::isfinite(e.predicted_at_step_mj))
        print(out,
              "  sum at the step's time    %12.2f mJ (dynamic sum + idle x step: %+.2f%% of the "
              "step, %+.2f W over it)\n",
              e.predicted_at_step_mj, e.predicted_at_step_vs_step_pct, e.predicted_at_step_w);
    print(out, "  real step (timing.json)   %s; replayed step %s whole\n",
          figure("%12.2f mJ", e.model.mj, "none").c_str(),
          figure("%+.2f%%", e.step_vs_model_pct, "not comparable").c_str());
    if (std::isfinite(e.step_at_model_mj))
        print(out,
              "  replayed at the real time %12.2f mJ (dynamic + idle x real step: %+.2f%% of the "
              "real step, %+.2f W over it)\n",
              e.step_at_model_mj, e.step_at_model_vs_model_pct, e.step_at_model_w);
    for (const auto& note : e.notes) print(out, "    energy: %s\n", note.c_str());
}

}  // namespace

void write_report_summary(std::ostream& out, const Report& r) {
    const ReportTotals& t = r.totals;
    const bool any = why_nothing_was_replayed(r).empty();
    // Copies and memsets are left out of the per-kernel errors: with only those replayed, or
    // kernels recorded at 0 us, there is nothing to take a median of.
    const char* nothing = any ? "no kernel replayed, copies and memsets aside" : "nothing replayed";
    print(out, "mode %s on %s (%s)\n", r.mode.c_str(), r.backend.c_str(), r.env("gpu").c_str());
    print(out, "  recorded kernel time      %12.1f us, %.2f%% with a recipe\n",
          t.recorded_kernel_us, 100 * t.recipe_coverage);
    print(out, "  replayed                  %12.2f%% of recorded kernel time\n",
          100 * t.replayed_coverage);
    // Copies and memsets are replayed activities too: the recorded figure here is theirs and the
    // kernels', which is why it can exceed the recorded kernel time above.
    if (!any)
        print(out, "  replayed GPU time         %12s (%s)\n", "n/a", nothing);
    else
        print(out,
              "  replayed GPU time         %12.1f us vs %.1f us recorded for the same activities "
              "(%s)\n",
              t.replayed_kernel_us, t.replayed_recorded_us,
              figure("%+.2f%%", t.total_error_pct, "no recorded time").c_str());
    if (std::isnan(t.median_abs_error_pct))
        print(out, "  median |error| per kernel %12s (%s)\n", "n/a", nothing);
    else
        print(out, "  median |error| per kernel %12.2f%% (unique kernels), %s (launches)\n",
              t.median_abs_error_pct,
              figure("%.2f%%", t.median_abs_error_pct_per_launch, nothing).c_str());
    if (std::isfinite(t.weighted_abs_error_pct))
        print(out,
              "  |error| weighted by time  %12.2f%% of the recorded time (kernel by kernel: "
              "errors of opposite sign do not offset)\n",
              t.weighted_abs_error_pct);
    // "<label> N kernel(s), X% of the recorded time (<why>)" for the kernels `which` picks, if any.
    const auto kernels_line = [&](const char* label, const auto& which, const char* why) {
        std::size_t n = 0;
        double us = 0;
        for (const auto& k : r.kernels)
            if (which(k)) ++n, us += k.recorded_us.sum;
        if (n > 0)
            print(out, "  %-25s %12zu kernel(s), %.1f%% of the recorded time (%s)\n", label, n,
                  t.recorded_kernel_us > 0 ? 100 * us / t.recorded_kernel_us : 0.0, why);
    };
    kernels_line("recorded at two speeds", replayed_at_two_recorded_speeds,
                 "a median error says which speed held the middle; recorded_groups in report.json");
    if (std::isnan(t.gemm_name_match))
        print(out, "  GEMM time, same kernel    %12s (no GEMM replayed with kernel names)\n",
              "n/a");
    else
        print(out, "  GEMM time, same kernel    %12.2f%%\n", 100 * t.gemm_name_match);
    // A kernel timed by a launch of another grid ran as the library configured it here, not as
    // recorded (session.cpp's note names them): a figure to see before reading its error.
    kernels_line(
        "another launch grid", [](const KernelResult& k) { return !k.replayed_grids.empty(); },
        "the library launched them otherwise than recorded; replayed_grids in report.json");
    if (r.timeline) write_timeline_summary(out, *r.timeline);
    if (r.mode == "unique") {
        if (std::isfinite(t.predicted_total_us))
            print(out, "  predicted total           %12.1f us (sum of count x median)\n",
                  t.predicted_total_us);
        else
            print(out, "  predicted total           %12s (%s)\n", "n/a", nothing);
        if (t.sequential_kernel_us > 0)
            print(out, "  sequential pass           %12.1f us (predicted %s)\n",
                  t.sequential_kernel_us,
                  figure("%+.2f%%",
                         100 * (t.predicted_total_us - t.sequential_kernel_us) /
                             t.sequential_kernel_us,
                         nothing)
                      .c_str());
    }
    // Why the rest was not replayed, largest recorded time first: the first thing a reader of
    // "replayed < 100%" asks.
    // Counted as the reasons below group them (not_replayed()), so that the two agree.
    std::size_t not_timed = 0;
    for (const auto& k : r.kernels) not_timed += not_replayed(k.outcome);
    // Nothing replayed: no report.json is written, the reasons below are all there is.
    print(out,
          "  unique kernels            %12zu (%zu not replayed: skipped, failed or without a "
          "recipe%s)\n",
          r.kernels.size(), not_timed, any ? "; reasons in report.json" : "");
    const auto largest = not_replayed_reasons(r);
    constexpr std::size_t kShown = 3, kWidth = 90;
    for (std::size_t i = 0; i < std::min(kShown, largest.size()); ++i) {
        const std::string why = shorten(largest[i].reason, kWidth);
        print(out, "    %4zu kernel(s), %10.1f us recorded: %s\n", largest[i].kernels,
              largest[i].recorded_us, why.c_str());
    }
    if (largest.size() > kShown)
        print(out, "    ... %zu more reasons%s\n", largest.size() - kShown,
              any ? " in report.json" : "");
    write_energy_summary(out, r.energy);
    if (r.backend == "cpu") {
        print(out,
              "  note: the cpu backend times whole ops on the host; its errors against a GPU "
              "recording show that the pipeline runs, not how faithful a GPU replay is\n");
        // The cpu backend's note on a reference BLAS: it is why a replay takes many times as long.
        for (const auto& note : r.notes)
            if (note.starts_with("BLAS: ") && note.find("reference BLAS") != std::string::npos)
                print(out, "  note: %s\n", note.c_str());
    }
}

}  // namespace replay
