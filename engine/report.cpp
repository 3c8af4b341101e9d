#include "replay/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>

#include "replay/roofline.h"
#include "replay/shorten.h"

namespace replay {

const char* to_string(KernelOutcome outcome) {
    switch (outcome) {
        case KernelOutcome::Pending:
            return "pending";
        case KernelOutcome::Replayed:
            return "replayed";
        case KernelOutcome::IssuedWithOp:
            return "issued_with_op";
        case KernelOutcome::Skipped:
            return "skipped";
        case KernelOutcome::Failed:
            return "failed";
        case KernelOutcome::NotReplayable:
            return "not_replayable";
        case KernelOutcome::Recorded:
            return "recorded";
    }
    return "?";
}

std::optional<KernelOutcome> kernel_outcome_from_string(std::string_view text) {
    for (auto outcome : {KernelOutcome::Pending, KernelOutcome::Replayed,
                         KernelOutcome::IssuedWithOp, KernelOutcome::Skipped, KernelOutcome::Failed,
                         KernelOutcome::NotReplayable, KernelOutcome::Recorded})
        if (text == to_string(outcome)) return outcome;
    return std::nullopt;
}

const char* tier_label(Tier tier) {
    switch (tier) {
        case Tier::NotReplayable:
            return "not replayable";
        case Tier::Copy:
            return "copy/memset";
        case Tier::Gemm:
            return "gemm";
        case Tier::AtenOp:
            return "dispatcher op";
        case Tier::Collective:
            return "collective";
        case Tier::Triton:
            return "triton";
    }
    return "?";
}

KernelResult recorded_result(const UniqueKernel& k) {
    KernelResult r;
    r.id = k.id;
    r.name = k.name;
    r.kind = to_string(k.kind);
    r.tier = k.recipe.tier;
    r.rule = k.recipe.rule;
    r.count = k.recorded_us.count;
    r.recorded_us = k.recorded_us;
    r.recorded_groups = k.recorded_groups;
    r.reason = k.recipe.reason;
    // A kernel issued with its op (a split-K reduction) does none of the op's FLOPs itself.
    if (!k.recipe.issued_with_op) {
        if (const auto* gemm = std::get_if<GemmRecipe>(&k.recipe.detail)) {
            r.flops = gemm->flops();
            r.bytes = gemm_bytes(*gemm);
            r.flop_dtype = gemm->a_type;
        } else if (std::holds_alternative<CopyRecipe>(k.recipe.detail)) {
            r.bytes = k.recipe.bytes();
        }
    }
    return r;
}

namespace {

// The value of `key` in a report's list of (key, value) pairs; "" when absent.
std::string value_of(const std::vector<std::pair<std::string, std::string>>& pairs,
                     const std::string& key) {
    for (const auto& [k, v] : pairs)
        if (k == key) return v;
    return {};
}

}  // namespace

std::string Report::input(const std::string& key) const {
    return value_of(inputs, key);
}
std::string Report::env(const std::string& key) const {
    return value_of(environment, key);
}
std::string Report::option(const std::string& key) const {
    return value_of(options, key);
}

namespace {

// A peak from the report's environment ("n/a", absent: NaN).
double environment_number(const Report& r, const std::string& key) {
    const std::string text = r.env(key);
    char* end = nullptr;
    const double x = text.empty() ? NAN : std::strtod(text.c_str(), &end);
    return end != nullptr && *end == '\0' && std::isfinite(x) ? x : NAN;
}

// Rates at the replayed median and their share of the device's peaks.
void fill_roofline(Report& r) {
    const double bandwidth = environment_number(r, kPeakMemoryKey);
    for (auto& k : r.kernels) {
        if (!was_replayed(k) || !(k.replayed_us.median > 0)) continue;
        const double ns = k.replayed_us.median * 1e3;
        if (k.flops > 0) {
            k.gflops_per_s = k.flops / ns;
            k.pct_peak_flops = percent_of(k.gflops_per_s / 1e3,
                                          environment_number(r, peak_tflops_key(k.flop_dtype)));
        }
        if (k.bytes > 0) {
            k.gb_per_s = k.bytes / ns;
            k.pct_peak_bandwidth = percent_of(k.gb_per_s, bandwidth);
        }
    }
}

constexpr std::string_view kTwoSpeedNote = "recorded instances at two speeds, ";

std::string group_text(const std::vector<ValueGroup>& groups) {
    char text[96];
    std::snprintf(text, sizeof text, "%zu near %.2f us and %zu near %.2f us", groups[0].count,
                  groups[0].median, groups[1].count, groups[1].median);
    return text;
}

// Replayed kernels whose recorded instances ran at two speeds: their error_pct compares which
// speed holds the middle, so say so, naming the three with the most recorded time.
std::optional<std::string> two_speed_note(const Report& r) {
    std::vector<const KernelResult*> split;
    for (const auto& k : r.kernels)
        if (replayed_at_two_recorded_speeds(k)) split.push_back(&k);
    if (split.empty()) return std::nullopt;
    std::stable_sort(split.begin(), split.end(), [](const auto* a, const auto* b) {
        return a->recorded_us.sum > b->recorded_us.sum;
    });
    std::ostringstream note;
    note << kTwoSpeedNote << split.size() << (split.size() == 1 ? " kernel" : " kernels")
         << " (recorded_groups in report.json): ";
    for (std::size_t i = 0; i < split.size() && i < 3; ++i) {
        const KernelResult& k = *split[i];
        note << (i ? "; " : "") << shorten(k.name, 80) << ": recorded "
             << group_text(k.recorded_groups) << ", replayed "
             << (k.replayed_groups.empty() ? "in one group" : group_text(k.replayed_groups));
    }
    note << ". Their median compares which speed held the middle, not how fast the kernel is "
            "(error_pct); the totals use means. On the H200 a small GEMM's time moves by up to "
            "45% with where its input lies in memory, which neither the trace nor the replay "
            "controls.";
    return note.str();
}

}  // namespace

void finalize_report(Report& r) {
    // Per kernel: statistics of the replayed samples and the error against the recording.
    // name_match is the driver's (only per-kernel timing such as CUPTI knows the names that really
    // ran).
    for (auto& k : r.kernels) {
        if (!k.samples_us.empty()) {
            k.replayed_us = summarize(k.samples_us);
            k.replayed_groups = stats::two_groups(k.samples_us, stats::kTwoSpeedsLeastGapUs);
        }
        if (k.count == 0) k.count = k.recorded_us.count;
        k.error_pct =
            was_replayed(k) && k.recorded_us.median > 0
                ? (k.replayed_us.median - k.recorded_us.median) / k.recorded_us.median * 100.0
                : NAN;
    }

    fill_roofline(r);

    // Tier rows, tiers 0..5 in order, only those present.
    std::vector<TierResult> tiers(6);
    for (std::size_t i = 0; i < tiers.size(); ++i) tiers[i].tier = static_cast<Tier>(i);
    for (const auto& k : r.kernels) {
        auto& t = tiers[static_cast<std::size_t>(k.tier) % tiers.size()];
        ++t.unique;
        t.activities += k.count;
        t.recorded_us += k.recorded_us.sum;
        if (was_replayed(k)) {
            t.replayed_us += k.replayed_us.mean * static_cast<double>(k.count);
            t.replayed_recorded_us += k.recorded_us.sum;
        }
    }
    r.tiers.clear();
    for (const auto& t : tiers)
        if (t.unique > 0) r.tiers.push_back(t);

    // Totals.
    ReportTotals& t = r.totals;
    if (!(t.recorded_kernel_us > 0)) {
        t.recorded_kernel_us = 0;
        for (const auto& k : r.kernels)
            if (k.kind == "kernel") t.recorded_kernel_us += k.recorded_us.sum;
    }
    double covered = 0;
    double replayed_total = 0, recorded_total = 0;
    double gemm_all = 0, gemm_matched = 0;
    double predicted = 0;
    std::vector<double> abs_errors;
    std::vector<std::pair<double, std::int64_t>> abs_errors_per_launch;
    double abs_error_us = 0;
    for (const auto& k : r.kernels) {
        if (!was_replayed(k)) continue;
        const double n = static_cast<double>(k.count);
        replayed_total += k.replayed_us.mean * n;
        recorded_total += k.recorded_us.sum;
        abs_error_us += std::fabs(k.replayed_us.mean * n - k.recorded_us.sum);
        predicted += k.replayed_us.median * n;
        if (k.kind == "kernel") {
            covered += k.recorded_us.sum;
            if (std::isfinite(k.error_pct)) {
                abs_errors.push_back(std::fabs(k.error_pct));
                abs_errors_per_launch.emplace_back(std::fabs(k.error_pct), k.count);
            }
        }
        if (k.tier == Tier::Gemm) {
            gemm_all += k.recorded_us.sum;
            if (k.name_match) gemm_matched += k.recorded_us.sum;
        }
    }
    t.replayed_coverage = t.recorded_kernel_us > 0 ? covered / t.recorded_kernel_us : 0;
    t.replayed_kernel_us = replayed_total;
    t.replayed_recorded_us = recorded_total;
    t.total_error_pct =
        recorded_total > 0 ? (replayed_total - recorded_total) / recorded_total * 100.0 : NAN;
    t.weighted_abs_error_pct = recorded_total > 0 ? abs_error_us / recorded_total * 100.0 : NAN;
    t.median_abs_error_pct = stats::median(std::move(abs_errors));
    t.median_abs_error_pct_per_launch = stats::median_of_counted(std::move(abs_errors_per_launch));
    // Only CUPTI records name the kernels a replay ran; other timings carry the recipe's label.
    const bool names_known = r.env("timing") == "cupti";
    t.gemm_name_match = names_known && gemm_all > 0 ? gemm_matched / gemm_all : NAN;
    const bool any = recorded_total > 0 || replayed_total > 0;
    t.predicted_total_us = r.mode == "unique" && any ? predicted : NAN;
    finalize_energy(r);
    if (auto note = two_speed_note(r)) {
        std::erase_if(r.notes, [](const std::string& n) { return n.starts_with(kTwoSpeedNote); });
        r.notes.push_back(std::move(*note));
    }
}

}  // namespace replay
