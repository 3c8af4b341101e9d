// Energy in report.html, keyed on the fields a report has: a backend that measures energy (NVML)
// adds fields like times, so the page looks for them by name instead of by a schema it would
// have to follow.
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "report_html_parts.h"

namespace replay::html {
namespace {

namespace dom = simdjson::dom;

bool is_energy_name(std::string_view key) {
    std::string k(key);
    std::transform(k.begin(), k.end(), k.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    for (const char* word : {"energy", "power", "joule", "watt"})
        if (k.find(word) != std::string::npos) return true;
    for (const char* unit : {"_j", "_mj", "_uj", "_nj"})
        if (k.size() > std::string_view(unit).size() && k.ends_with(unit)) return true;
    return false;
}

// A number, or the median of statistics, or nothing.
bool figure(dom::element e, double& out) {
    if (e.get_double().get(out) == simdjson::SUCCESS) return std::isfinite(out);
    std::int64_t i = 0;
    if (e.get_int64().get(i) == simdjson::SUCCESS) {
        out = static_cast<double>(i);
        return true;
    }
    dom::element median;
    return e.is_object() && e["median"].get(median) == simdjson::SUCCESS && figure(median, out);
}

// The numbers under an energy-named member, flattened as "energy.step.mj": numbers and
// statistics (their median) as they are, objects followed a few levels down; null (NaN written
// by the report), text, booleans and arrays (per-window samples) are left out, so that a report
// that asked for energy and could not read it shows no figure rather than a 0.
void flatten(const std::string& name, dom::element value, int depth,
             std::vector<std::pair<std::string, double>>& out) {
    double x = 0;
    if (figure(value, x)) {
        out.emplace_back(name, x);
        return;
    }
    dom::object inner;
    if (depth == 0 || value.get_object().get(inner) != simdjson::SUCCESS) return;
    for (auto [key, v] : inner) flatten(name + "." + std::string(key), v, depth - 1, out);
}

// Energy-named members of an object (energy, energy_mj, dynamic_energy_mj, power_w, ...).
void collect(dom::object object, std::vector<std::pair<std::string, double>>& out) {
    for (auto [key, value] : object)
        if (is_energy_name(key)) flatten(std::string(key), value, 3, out);
}

}  // namespace

EnergyFields find_energy_fields(const std::string& report_json) {
    EnergyFields f;
    if (report_json.empty()) return f;
    dom::parser parser;
    dom::object root;
    if (parser.parse(simdjson::padded_string(report_json)).get_object().get(root) !=
        simdjson::SUCCESS)
        return f;
    collect(root, f.totals);
    if (dom::object totals; root["totals"].get_object().get(totals) == simdjson::SUCCESS)
        collect(totals, f.totals);
    // Why energy is n/a, when it was asked for and the backend could not read it.
    std::string_view why;
    if (root["energy"]["probe"]["why"].get_string().get(why) == simdjson::SUCCESS)
        f.why = std::string(why);
    dom::array kernels;
    if (root["kernels"].get_array().get(kernels) != simdjson::SUCCESS) return f;
    for (dom::element k : kernels) {
        dom::object kernel;
        std::string_view id;
        if (k.get_object().get(kernel) != simdjson::SUCCESS ||
            kernel["id"].get_string().get(id) != simdjson::SUCCESS)
            continue;
        std::vector<std::pair<std::string, double>> found;
        collect(kernel, found);
        for (auto& [column, value] : found) {
            if (std::find(f.kernel_columns.begin(), f.kernel_columns.end(), column) ==
                f.kernel_columns.end())
                f.kernel_columns.push_back(column);
            f.kernels[std::string(id)][column] = value;
        }
    }
    return f;
}

void energy_section(std::ostream& out, const EnergyFields& energy, const Report& report) {
    out << "<h2 id=\"energy\">Energy</h2>";
    if (!energy.why.empty()) out << "<p class=\"note\">Energy n/a: " << escape(energy.why) << "</p>";
    out << "<div class=\"cards\">";
    for (const auto& [name, value] : energy.totals)
        out << "<div class=\"card\"><div class=\"v\">" << number(value, 3)
            << "</div><div class=\"k\">" << escape(name) << "</div></div>";
    out << "</div>\n";
    if (energy.kernels.empty()) return;
    struct Row {
        const KernelResult* kernel;
        const std::map<std::string, double>* values;
        double first;
    };
    std::vector<Row> rows;
    const std::string& first = energy.kernel_columns.front();
    for (const auto& k : report.kernels) {
        const auto it = energy.kernels.find(k.id);
        if (it == energy.kernels.end()) continue;
        const auto v = it->second.find(first);
        rows.push_back({&k, &it->second, v == it->second.end() ? NAN : v->second});
    }
    std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
        return (std::isfinite(a.first) ? a.first : -1) > (std::isfinite(b.first) ? b.first : -1);
    });
    const std::size_t bars = std::min<std::size_t>(rows.size(), 20);
    double most = 0;
    for (std::size_t i = 0; i < bars; ++i)
        if (std::isfinite(rows[i].first)) most = std::max(most, rows[i].first);
    out << "<div class=\"chart\" data-chart=\"energy\" data-points=\"" << bars
        << "\"><div class=\"title\">" << escape(first) << " per unique kernel (largest "
        << bars << ")</div><svg width=\"640\" height=\"" << bars * 18 + 6 << "\" role=\"img\">";
    for (std::size_t i = 0; i < bars; ++i) {
        const double w = most > 0 && std::isfinite(rows[i].first) ? rows[i].first / most * 420 : 0;
        const double y = 3 + static_cast<double>(i) * 18;
        out << "<text x=\"136\" y=\"" << y + 11 << "\" text-anchor=\"end\">"
            << escape(rows[i].kernel->id) << "</text><rect class=\"point t"
            << static_cast<int>(rows[i].kernel->tier) % 5 << "\" x=\"140\" y=\"" << y
            << "\" width=\"" << number(w, 2) << "\" height=\"14\" data-tip=\""
            << escape(rows[i].kernel->name.substr(0, 200)) << ": " << number(rows[i].first, 4)
            << "\"/><text x=\"" << number(144 + w, 1) << "\" y=\"" << y + 11 << "\">"
            << number(rows[i].first, 4) << "</text>";
    }
    out << "</svg></div>\n<div class=\"scroll\"><table class=\"sortable\" id=\"energy-table\">"
        << "<thead><tr><th class=\"l\">id</th><th class=\"l\">name</th><th>count</th>";
    for (const auto& c : energy.kernel_columns) out << "<th>" << escape(c) << "</th>";
    out << "</tr></thead><tbody>\n";
    for (const auto& row : rows) {
        out << "<tr><td class=\"l\">" << escape(row.kernel->id) << "</td><td class=\"name\">"
            << escape(row.kernel->name) << "</td><td data-v=\"" << row.kernel->count << "\">"
            << row.kernel->count << "</td>";
        for (const auto& c : energy.kernel_columns) {
            const auto v = row.values->find(c);
            const double x = v == row.values->end() ? NAN : v->second;
            out << "<td data-v=\"" << (std::isfinite(x) ? number(x, 9) : "NaN") << "\">"
                << number(x, 4) << "</td>";
        }
        out << "</tr>\n";
    }
    out << "</tbody></table></div>\n";
}

}  // namespace replay::html
