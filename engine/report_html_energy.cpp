// Energy in report.html, from the report's typed energy (report.h: ReportEnergy, KernelEnergy):
// the step and the sum over kernels as cards, the kernels measured as a table and a bar chart of
// the largest. A report that asked for energy and could not read it says why and shows no figure:
// energy is n/a, never 0.
#include <algorithm>
#include <cmath>

#include "report_html_parts.h"

namespace replay::html {
namespace {

// A card only for a measured figure: energy that could not be read is n/a, never shown as 0.
void card(std::ostream& out, const char* label, double value, int digits) {
    if (std::isfinite(value)) html::card(out, number(value, digits), label);
}

void cell(std::ostream& out, double x) {
    html::cell(out, x, number(x, 4));
}

}  // namespace

bool has_energy(const Report& report) {
    return report.energy.requested;
}

void energy_section(std::ostream& out, const Report& report) {
    const ReportEnergy& e = report.energy;
    out << "<h2 id=\"energy\">Energy</h2>";
    if (!e.probe.available)
        out << "<p class=\"note\">Energy n/a: "
            << escape(e.probe.why.empty() ? "not measured" : e.probe.why) << "</p>";
    out << "<div class=\"cards\">";
    card(out, "replayed step, mJ", e.step.mj, 3);
    card(out, "step above idle, mJ", e.step.dynamic_mj, 3);
    card(out, "step power, W", e.step.power_w, 1);
    card(out, "idle power, W", e.probe.idle_power_w, 1);
    card(out, "sum over kernels, mJ", e.predicted_mj, 3);
    card(out, "sum over kernels above idle, mJ", e.predicted_dynamic_mj, 3);
    card(out, "kernel time covered", e.coverage, 3);
    card(out, "sum vs step above idle, %", e.predicted_vs_step_pct, 1);
    card(out, "sum + idle over the step vs step, %", e.predicted_at_step_vs_step_pct, 1);
    card(out, "sum vs step, W over the step", e.predicted_at_step_w, 2);
    card(out, "real step (timing.json), mJ", e.model.mj, 3);
    card(out, "replayed vs real step whole, %", e.step_vs_model_pct, 1);
    card(out, "replayed + idle over the real step vs real, %", e.step_at_model_vs_model_pct, 1);
    card(out, "replayed vs real, W over the real step", e.step_at_model_w, 2);
    card(out, "replayed vs real above this run's idle, %", e.step_vs_model_dynamic_same_idle_pct,
         1);
    out << "</div>\n";
    for (const auto& note : e.notes) out << "<p class=\"note\">" << escape(note) << "</p>";

    std::vector<const KernelResult*> rows;
    for (const auto& k : report.kernels)
        if (k.energy.measured()) rows.push_back(&k);
    if (rows.empty()) return;
    std::stable_sort(rows.begin(), rows.end(), [](const KernelResult* a, const KernelResult* b) {
        return a->energy.uj.median > b->energy.uj.median;
    });
    const std::size_t bars = std::min<std::size_t>(rows.size(), 20);
    const double most = rows.front()->energy.uj.median;
    out << "<div class=\"chart\" data-chart=\"energy\" data-points=\"" << bars
        << "\"><div class=\"title\">energy per launch, uJ (median), largest " << bars
        << "</div><svg width=\"640\" height=\"" << bars * 18 + 6 << "\" role=\"img\">";
    for (std::size_t i = 0; i < bars; ++i) {
        const KernelResult& k = *rows[i];
        const double uj = k.energy.uj.median;
        const double w = most > 0 ? uj / most * 420 : 0;
        const double y = 3 + static_cast<double>(i) * 18;
        out << "<text x=\"136\" y=\"" << y + 11 << "\" text-anchor=\"end\">" << escape(k.id)
            << "</text><rect class=\"point t" << static_cast<int>(k.tier) % 5 << "\" x=\"140\" y=\""
            << y << "\" width=\"" << number(w, 2) << "\" height=\"14\" data-tip=\""
            << escape(k.name.substr(0, 200)) << ": " << number(uj, 4) << " uJ\"/><text x=\""
            << number(144 + w, 1) << "\" y=\"" << y + 11 << "\">" << number(uj, 4) << "</text>";
    }
    out << "</svg></div>\n<div class=\"scroll\"><table class=\"sortable\" id=\"energy-table\">"
        << "<thead><tr><th class=\"l\">id</th><th class=\"l\">name</th><th>count</th>"
        << "<th>uJ per launch</th><th>above idle, uJ</th><th>windows</th><th>power, W</th>"
        << "<th>EDP, uJ us</th><th>pJ/FLOP</th></tr></thead><tbody>\n";
    for (const KernelResult* k : rows) {
        const KernelEnergy& ke = k->energy;
        out << "<tr><td class=\"l\">" << escape(k->id) << "</td><td class=\"name\">"
            << escape(k->name) << "</td><td data-v=\"" << k->count << "\">" << k->count << "</td>";
        cell(out, ke.uj.median);
        cell(out, ke.dynamic_uj);
        cell(out, static_cast<double>(ke.samples_uj.size()));
        cell(out, ke.power_w);
        cell(out, ke.edp_uj_us);
        cell(out, ke.pj_per_flop);
        out << "</tr>\n";
    }
    out << "</tbody></table></div>\n";
}

}  // namespace replay::html
