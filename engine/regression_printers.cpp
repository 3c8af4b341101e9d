#include "replay/regression_printers.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>

#include "replay/json_writer.h"
#include "replay/report_json.h"
#include "replay/shorten.h"

namespace replay {
namespace {

void write_summary_fields(JsonWriter& json, const RegressionSummary& s) {
    json.field("regressed", static_cast<std::uint64_t>(s.regressed));
    json.field("improved", static_cast<std::uint64_t>(s.improved));
    json.field("unchanged", static_cast<std::uint64_t>(s.unchanged));
    json.field("new", static_cast<std::uint64_t>(s.added));
    json.field("missing", static_cast<std::uint64_t>(s.missing));
    json.field("inconclusive", static_cast<std::uint64_t>(s.inconclusive));
}

void write_totals_fields(JsonWriter& json, const RegressionTotals& t) {
    json.field("matched", static_cast<std::uint64_t>(t.matched));
    json.field("baseline_us", t.baseline_us)
        .field("current_us", t.current_us)
        .field("change_pct", t.change_pct);
}

std::string md_escape(std::string_view text, std::size_t width) {
    std::string s;
    for (char ch : text) {
        if (ch == '|')
            s += "\\|";
        else if (ch == '\n' || ch == '\r')
            s += ' ';
        else
            s += ch;
    }
    return shorten(s, width);
}

std::string fixed(double x, int digits) {
    if (!std::isfinite(x)) return "-";
    std::ostringstream s;
    s << std::fixed << std::setprecision(digits) << x;
    return s.str();
}

std::string pct(double x) {
    if (!std::isfinite(x)) return "-";
    std::ostringstream s;
    s << std::showpos << std::fixed << std::setprecision(1) << x << '%';
    return s.str();
}

std::string pvalue(double p) {
    if (!std::isfinite(p)) return "-";
    char buf[32];
    std::snprintf(buf, sizeof buf, p < 1e-3 ? "%.1e" : "%.3f", p);
    return buf;
}

}  // namespace

void write_regression_json(std::ostream& out, const Regression& r) {
    JsonWriter json(out);
    json.begin_object();
    json.field("schema", r.schema).field("baseline", r.baseline).field("current", r.current);
    json.field("same_machine", r.same_machine);
    json.key("machine_differences").begin_array();
    for (const auto& d : r.machine_differences) json.value(d.key);
    json.end_array();
    json.objects("machine", r.machine_differences, [&](const MachineDifference& d) {
        json.field("key", d.key).field("baseline", d.baseline).field("current", d.current);
    });
    json.key("options").begin_object();
    json.field("threshold_pct", r.options.threshold_pct)
        .field("k", r.options.k)
        .field("alpha", r.options.alpha);
    json.field("min_samples", static_cast<std::uint64_t>(r.options.min_samples));
    json.field("min_change_us", r.options.min_change_us);
    json.field("measure", r.options.energy     ? "energy"
                          : r.options.recorded ? "recorded"
                                               : "replayed");
    json.end_object();
    json.key("summary").begin_object();
    write_summary_fields(json, r.summary);
    json.end_object();
    json.key("totals").begin_object();
    write_totals_fields(json, r.totals);
    json.end_object();
    json.objects("tiers", r.tiers, [&](const TierComparison& t) {
        write_tier_and_label(json, t.tier);
        write_summary_fields(json, t.summary);
        write_totals_fields(json, t.totals);
    });
    json.objects("kernels", r.kernels, [&](const KernelComparison& k) {
        write_kernel_identity(json, k.id, k.name, k.kind, k.tier);
        json.field("verdict", to_string(k.verdict));
        json.field("baseline_count", static_cast<std::uint64_t>(k.baseline_count));
        json.field("current_count", static_cast<std::uint64_t>(k.current_count));
        json.field("baseline_samples", static_cast<std::uint64_t>(k.baseline_samples));
        json.field("current_samples", static_cast<std::uint64_t>(k.current_samples));
        json.field("baseline_median_us", k.baseline_median_us)
            .field("current_median_us", k.current_median_us);
        json.field("change_pct", k.change_pct).field("spread_pct", k.spread_pct);
        json.field("threshold_pct", k.threshold_pct).field("p_value", k.p_value);
        json.field("rank_test", k.rank_test).field("exact", k.exact);
        json.field("inconclusive", k.inconclusive);
        json.field("note", k.note);
    });
    json.array("notes", r.notes);
    json.end_object();
    out << '\n';
}

void write_regression_markdown(std::ostream& out, const Regression& r) {
    const RegressionSummary& s = r.summary;
    out << "### replay comparison: " << (s.regressed > 0 ? "REGRESSED" : "ok") << " - "
        << s.regressed << " regressed, " << s.improved << " improved, " << s.unchanged
        << " unchanged"
        << (s.inconclusive > 0
                ? " (" + std::to_string(s.inconclusive) + " inconclusive: too few samples)"
                : std::string())
        << ", " << s.added << " new, " << s.missing << " missing\n\n";
    out << "baseline `" << md_escape(r.baseline, 200) << "`, current `" << md_escape(r.current, 200)
        << "`; "
        << (r.options.energy     ? "energy per launch"
            : r.options.recorded ? "recorded"
                                 : "replayed")
        << " medians; a change counts beyond max(" << fixed(r.options.threshold_pct, 1) << "%, "
        << fixed(r.options.k, 1) << " x run spread)"
        // The floor in microseconds applies to times only (regression.cpp).
        << (r.options.energy ? std::string()
                             : " and " + fixed(r.options.min_change_us, 2) + " us")
        << ", with Mann-Whitney p < " << r.options.alpha << "\n\n";
    if (!r.same_machine) {
        out << "**Warning: not the same machine.**";
        for (const auto& d : r.machine_differences)
            out << " " << d.key << ": `" << md_escape(d.baseline.empty() ? "?" : d.baseline, 60)
                << "` -> `" << md_escape(d.current.empty() ? "?" : d.current, 60) << "`;";
        out << "\n\n";
    }
    // The columns' unit: energy comparisons hold microjoules where time ones hold microseconds.
    const std::string unit = r.options.energy ? "uJ" : "us";
    std::vector<const KernelComparison*> flagged;
    for (const auto& k : r.kernels)
        if (k.verdict == Verdict::Regressed || k.verdict == Verdict::Improved)
            flagged.push_back(&k);
    std::stable_sort(flagged.begin(), flagged.end(),
                     [](const KernelComparison* a, const KernelComparison* b) {
                         if (a->verdict != b->verdict) return a->verdict == Verdict::Regressed;
                         return std::fabs(a->change_pct) > std::fabs(b->change_pct);
                     });
    if (!flagged.empty()) {
        out << "| verdict | kernel | tier | count | baseline median " << unit
            << " | current median " << unit << " | change | threshold | p-value |\n";
        out << "|---|---|---|---:|---:|---:|---:|---:|---:|\n";
        for (const auto* k : flagged)
            out << "| " << to_string(k->verdict) << " | `" << md_escape(k->name, 80) << "` ("
                << k->id << ") | " << to_string(k->tier) << " | " << k->current_count << " | "
                << fixed(k->baseline_median_us, 3) << " | " << fixed(k->current_median_us, 3)
                << " | " << pct(k->change_pct) << " | " << fixed(k->threshold_pct, 1) << "% | "
                << (k->rank_test ? pvalue(k->p_value) : "n/a") << " |\n";
        out << "\n";
    }
    std::size_t listed = 0;
    for (const auto& k : r.kernels) {
        if (k.verdict != Verdict::New && k.verdict != Verdict::Missing) continue;
        if (listed == 0) out << "new / missing kernels:\n\n";
        if (++listed > 10) continue;
        out << "- " << to_string(k.verdict) << " `" << md_escape(k.name, 80) << "` (" << k.id
            << "): " << k.note << "\n";
    }
    if (listed > 10) out << "- ... and " << listed - 10 << " more\n";
    if (listed > 0) out << "\n";
    if (!r.tiers.empty()) {
        out << "| tier | compared | regressed | improved | baseline " << unit << " | current "
            << unit << " | change |\n";
        out << "|---|---:|---:|---:|---:|---:|---:|\n";
        for (const auto& t : r.tiers)
            out << "| " << tier_label(t.tier) << " | " << t.totals.matched << " | "
                << t.summary.regressed << " | " << t.summary.improved << " | "
                << fixed(t.totals.baseline_us, 1) << " | " << fixed(t.totals.current_us, 1) << " | "
                << pct(t.totals.change_pct) << " |\n";
        out << "\n";
    }
    out << "total over " << r.totals.matched
        << " compared kernels (count x median): " << fixed(r.totals.baseline_us, 1) << " " << unit
        << " -> " << fixed(r.totals.current_us, 1) << " " << unit << " ("
        << pct(r.totals.change_pct) << ")\n";
    for (const auto& n : r.notes) out << "\nnote: " << n << "\n";
}

}  // namespace replay
