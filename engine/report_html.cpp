#include "replay/report_html.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include "replay/json_writer.h"
#include "replay/roofline.h"
#include "report_html_assets.h"
#include "report_html_parts.h"

namespace replay {
namespace {

using html::card;
using html::cell;
using html::escape;
using html::number;

std::string percent(double share) {
    return std::isfinite(share) ? number(share * 100.0, 1) + " %" : "n/a";
}

std::string signed_percent(double pct) {
    if (!std::isfinite(pct)) return "n/a";
    std::string text = number(pct, 1) + " %";
    if (pct > 0) text.insert(text.begin(), '+');
    return text;
}

// " (two speeds: 13 @ 5.54, 11 @ 7.07)" after a median whose sample splits (stats::two_groups).
std::string two_speeds_text(const std::vector<ValueGroup>& groups) {
    if (groups.size() != 2) return {};
    return " (two speeds: " + std::to_string(groups[0].count) + " @ " +
           number(groups[0].median, 2) + ", " + std::to_string(groups[1].count) + " @ " +
           number(groups[1].median, 2) + ")";
}

std::string microseconds(double us) {
    if (!std::isfinite(us)) return "n/a";
    if (std::fabs(us) >= 1e6) return number(us / 1e6, 3) + " s";
    if (std::fabs(us) >= 1e3) return number(us / 1e3, 3) + " ms";
    return number(us, 2) + " us";
}

void summary(std::ostream& out, const Report& r) {
    const ReportTotals& t = r.totals;
    out << "<h2 id=\"summary\">Summary</h2><div class=\"cards\">";
    card(out, percent(t.recipe_coverage), "recorded kernel time with a recipe");
    card(out, percent(t.replayed_coverage), "recorded kernel time replayed");
    card(out, microseconds(t.recorded_kernel_us), "recorded kernel time");
    card(out, microseconds(t.replayed_kernel_us), "replayed time of the replayed kernels");
    card(out, microseconds(t.replayed_recorded_us), "their recorded time");
    card(out, signed_percent(t.total_error_pct), "total error",
         std::isfinite(t.total_error_pct) && std::fabs(t.total_error_pct) > 3 ? "bad" : "good");
    card(out, std::isfinite(t.median_abs_error_pct) ? number(t.median_abs_error_pct, 1) + " %"
                                                    : "n/a",
         "median |error| per unique kernel");
    card(out,
         std::isfinite(t.median_abs_error_pct_per_launch)
             ? number(t.median_abs_error_pct_per_launch, 1) + " %"
             : "n/a",
         "median |error| per launch");
    if (std::isfinite(t.weighted_abs_error_pct))
        card(out, number(t.weighted_abs_error_pct, 1) + " %",
             "|error| weighted by time (no offsetting)");
    card(out, percent(t.gemm_name_match), "GEMM time with the recorded kernel name");
    if (std::isfinite(t.predicted_total_us))
        card(out, microseconds(t.predicted_total_us), "unique: count x replayed median");
    if (std::isfinite(t.sequential_kernel_us))
        card(out, microseconds(t.sequential_kernel_us), "unique: one sequential pass");
    card(out, number(t.wall_seconds, 1) + " s", "wall time of the replay");
    std::size_t replayed = 0;
    for (const auto& k : r.kernels) replayed += was_replayed(k);
    card(out, std::to_string(replayed) + " / " + std::to_string(r.kernels.size()),
         "unique kernels replayed");
    out << "</div>\n";
}

void pairs_table(std::ostream& out, const char* id,
                 const std::vector<std::pair<std::string, std::string>>& pairs) {
    out << "<table class=\"pairs\" id=\"" << id << "\"><tbody>";
    for (const auto& [k, v] : pairs)
        out << "<tr><td>" << escape(k) << "</td><td>" << escape(v) << "</td></tr>";
    out << "</tbody></table>\n";
}

void legend(std::ostream& out) {
    out << "<div class=\"legend\">";
    for (int t : {1, 2, 3, 4, 0})
        out << "<span><i class=\"t" << t << "\"></i>"
            << escape(tier_label(static_cast<Tier>(t))) << "</span>";
    out << "</div>";
}

// Achieved share of a peak: empty without a work figure, "n/a" without a peak.
std::string peak_text(double work, double pct) {
    if (!(work > 0)) return "";
    return std::isfinite(pct) ? number(pct, 1) : "n/a";
}

void kernel_table(std::ostream& out, const Report& r) {
    out << "<h2 id=\"kernels\">Unique kernels</h2><div class=\"note\">Click a column to sort. "
           "% of peak: the replayed rate against the device's peak FLOP/s (GEMMs) or memory "
           "bandwidth (GEMMs, copies); n/a where the report's environment has no peak (cpu "
           "backend).</div><div class=\"scroll\"><table class=\"sortable\" id=\"kernel-table\">"
           "<thead><tr><th>#</th><th class=\"l\">id</th><th class=\"l\">name</th><th>tier</th>"
           "<th class=\"l\">disposition</th><th>count</th><th>recorded median us</th>"
           "<th>replayed median us</th><th>error %</th><th>recorded total us</th>"
           "<th>GFLOP/s</th><th>GB/s</th><th>% peak FLOP/s</th><th>% peak bandwidth</th>"
           "<th class=\"l\">reason</th></tr></thead><tbody>\n";
    for (std::size_t i = 0; i < r.kernels.size(); ++i) {
        const KernelResult& k = r.kernels[i];
        const bool done = was_replayed(k);
        out << "<tr data-k=\"" << i << "\">";
        cell(out, static_cast<double>(i + 1), std::to_string(i + 1));
        out << "<td class=\"l\">" << escape(k.id) << "</td><td class=\"name\" title=\""
            << escape(k.name) << "\">" << escape(k.name) << "</td>";
        cell(out, static_cast<double>(k.tier), to_string(k.tier));
        out << "<td class=\"l\">" << to_string(k.outcome) << "</td>";
        cell(out, static_cast<double>(k.count), std::to_string(k.count));
        cell(out, k.recorded_us.median,
             number(k.recorded_us.median, 3) + two_speeds_text(k.recorded_groups));
        cell(out, done ? k.replayed_us.median : NAN,
             done ? number(k.replayed_us.median, 3) + two_speeds_text(k.replayed_groups) : "");
        cell(out, k.error_pct, std::isfinite(k.error_pct) ? signed_percent(k.error_pct) : "",
             std::isfinite(k.error_pct) && std::fabs(k.error_pct) > 5 ? "bad" : "");
        cell(out, k.recorded_us.sum, number(k.recorded_us.sum, 1));
        cell(out, k.gflops_per_s, std::isfinite(k.gflops_per_s) ? number(k.gflops_per_s, 1) : "");
        cell(out, k.gb_per_s, std::isfinite(k.gb_per_s) ? number(k.gb_per_s, 1) : "");
        cell(out, k.pct_peak_flops, done ? peak_text(k.flops, k.pct_peak_flops) : "");
        cell(out, k.pct_peak_bandwidth, done ? peak_text(k.bytes, k.pct_peak_bandwidth) : "");
        out << "<td class=\"l\">" << escape(k.reason) << "</td></tr>\n";
    }
    out << "</tbody></table></div>\n";
}

// The kernels as the page's script sees them (tooltips), indexed like the report's kernels.
void kernel_data(std::ostream& out, const Report& r) {
    std::ostringstream text;
    {
        JsonWriter json(text, false);
        json.begin_array();
        for (const auto& k : r.kernels) {
            json.begin_object().field("id", k.id).field("name", k.name);
            json.field("tier", static_cast<int>(k.tier)).field("count", k.count);
            json.field("rec", k.recorded_us.median);
            json.field("rep", was_replayed(k) ? k.replayed_us.median : NAN);
            json.field("err", k.error_pct).end_object();
        }
        json.end_array();
    }
    std::string json = text.str();
    // No "</script>" from a kernel name may end the block.
    for (std::size_t at = json.find('<'); at != std::string::npos; at = json.find('<', at))
        json.replace(at, 1, "\\u003c");
    out << "<script type=\"application/json\" id=\"kernel-data\">" << json << "</script>\n";
}

void regression_section(std::ostream& out, const Regression& reg, const Report& baseline,
                        const Report& current, const HtmlReportOptions& options) {
    const RegressionSummary& s = reg.summary;
    out << "<h2 id=\"regression\">Changes against the baseline</h2><p class=\"sub\">baseline "
        << escape(reg.baseline) << ", current " << escape(reg.current)
        << (reg.same_machine ? "" : " (different machines)") << "</p><div class=\"cards\">";
    card(out, std::to_string(s.regressed), "regressed", s.regressed > 0 ? "bad" : "good");
    card(out, std::to_string(s.improved), "improved");
    card(out, std::to_string(s.unchanged), "unchanged");
    card(out, std::to_string(s.inconclusive), "inconclusive (too few samples)");
    card(out, std::to_string(s.added), "new");
    card(out, std::to_string(s.missing), "missing");
    card(out, signed_percent(reg.totals.change_pct),
         "total of " + std::to_string(reg.totals.matched) + " matched kernels");
    out << "</div>\n";
    for (const auto& d : reg.machine_differences)
        out << "<div class=\"note\">" << escape(d.key) << ": " << escape(d.baseline) << " -> "
            << escape(d.current) << "</div>";
    std::vector<const KernelComparison*> changed;
    for (const auto& k : reg.kernels)
        if (k.verdict == Verdict::Regressed || k.verdict == Verdict::Improved || k.inconclusive)
            changed.push_back(&k);
    std::stable_sort(changed.begin(), changed.end(), [](const auto* a, const auto* b) {
        const auto rank = [](const KernelComparison* k) {
            return k->verdict == Verdict::Regressed ? 0 : k->verdict == Verdict::Improved ? 1 : 2;
        };
        if (rank(a) != rank(b)) return rank(a) < rank(b);
        return std::fabs(a->change_pct) > std::fabs(b->change_pct);
    });
    if (changed.size() > options.changed_kernels) changed.resize(options.changed_kernels);
    if (changed.empty()) {
        out << "<p>No kernel changed beyond the thresholds.</p>\n";
        return;
    }
    std::map<std::string, const KernelResult*> base, cur;
    for (const auto& k : baseline.kernels) base[k.id] = &k;
    for (const auto& k : current.kernels) cur[k.id] = &k;
    static const std::vector<double> none;
    for (const auto* c : changed) {
        const auto b = base.find(c->id);
        const auto n = cur.find(c->id);
        html::distribution_chart(out, *c, b == base.end() ? none : b->second->samples_us,
                                 n == cur.end() ? none : n->second->samples_us,
                                 options.samples_per_side);
    }
}

std::string default_title(const Report& r) {
    const std::string trace = r.input("trace");
    return "replay report: " +
           (trace.empty() ? std::string("(no trace)")
                          : std::filesystem::path(trace).filename().string());
}

}  // namespace

void write_report_html(std::ostream& out, const HtmlReportInput& in,
                       const HtmlReportOptions& options) {
    const Report& r = *in.report;
    const std::string title = in.title.empty() ? default_title(r) : in.title;
    out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        << "<title>" << escape(title) << "</title><style>" << html::kReportCss
        << "</style></head>\n<body><div id=\"tip\"></div><h1>" << escape(title) << "</h1>"
        << "<p class=\"sub\">" << escape(r.mode) << " replay on the " << escape(r.backend)
        << " backend (" << escape(r.env("gpu")) << "), replay " << escape(r.tool_version)
        << "; trace " << escape(r.input("trace")) << "</p>\n";
    summary(out, r);
    if (in.regression != nullptr && in.baseline != nullptr)
        regression_section(out, *in.regression, *in.baseline, r, options);
    out << "<h2 id=\"charts\">Recorded against replayed</h2>";
    legend(out);
    html::scatter_chart(out, r);
    html::tier_chart(out, r);
    if (in.timeline != nullptr && !in.timeline->items.empty()) {
        std::map<std::string, std::size_t> index;
        for (std::size_t i = 0; i < r.kernels.size(); ++i) index.emplace(r.kernels[i].id, i);
        out << "<h2 id=\"timeline\">Timeline</h2>";
        html::gantt_chart(out, *in.timeline, index, options.timeline_items);
    }
    if (html::has_energy(r)) html::energy_section(out, r);
    kernel_table(out, r);
    out << "<h2 id=\"environment\">Environment</h2>";
    pairs_table(out, "environment-table", r.environment);
    out << "<h2>Inputs and options</h2>";
    auto inputs = r.inputs;
    inputs.insert(inputs.end(), r.options.begin(), r.options.end());
    pairs_table(out, "inputs-table", inputs);
    if (!r.notes.empty()) {
        out << "<h2>Notes</h2><ul>";
        for (const auto& note : r.notes) out << "<li>" << escape(note) << "</li>";
        out << "</ul>\n";
    }
    kernel_data(out, r);
    out << "<script>" << html::kReportJs << "</script>\n</body></html>\n";
}

}  // namespace replay
