// The SVG charts of report.html. Every mark that stands for a datum has class "point" (see
// report_html_parts.h); coordinates are computed here so the page needs no charting library.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "replay/json_writer.h"
#include "report_html_parts.h"

namespace replay::html {
namespace {

int tier_class(Tier tier) {
    return static_cast<int>(tier) % 5;
}

// JSON for a <script type="application/json"> block: "<" escaped so that no "</script>" in a
// kernel name can end the block.
std::string script_json(const std::string& json) {
    std::string out;
    out.reserve(json.size());
    for (char c : json) {
        if (c == '<')
            out += "\\u003c";
        else
            out += c;
    }
    return out;
}

struct LogAxis {
    double lo = 0, hi = 1;  // decades
    double at(double value, double length) const {
        return (std::log10(value) - lo) / (hi - lo) * length;
    }
};

LogAxis log_axis(double min_value, double max_value) {
    LogAxis a;
    a.lo = std::floor(std::log10(min_value));
    a.hi = std::ceil(std::log10(max_value));
    if (a.hi <= a.lo) a.hi = a.lo + 1;
    return a;
}

std::string decade_label(int exponent) {
    const double v = std::pow(10.0, exponent);
    if (exponent >= 6) return number(v / 1e6, 0) + " s";
    if (exponent >= 3) return number(v / 1000.0, 0) + " ms";
    return number(v, exponent < 0 ? -exponent : 0) + " us";
}

void chart_open(std::ostream& out, const char* name, const std::string& title, std::size_t points) {
    out << "<div class=\"chart\" data-chart=\"" << name << "\" data-points=\"" << points
        << "\"><div class=\"title\">" << escape(title) << "</div>\n";
}

}  // namespace

std::string escape(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

std::string number(double x, int digits) {
    if (!std::isfinite(x)) return "n/a";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, x);
    std::string s = buf;
    if (s.find('.') != std::string::npos) {
        while (!s.empty() && s.back() == '0') s.pop_back();
        if (!s.empty() && s.back() == '.') s.pop_back();
    }
    if (s == "-0") s = "0";
    return s;
}

void card(std::ostream& out, const std::string& value, const std::string& label,
          const char* tone) {
    out << "<div class=\"card\"><div class=\"v " << tone << "\">" << escape(value)
        << "</div><div class=\"k\">" << escape(label) << "</div></div>";
}

void cell(std::ostream& out, double value, const std::string& text, const char* cls) {
    out << "<td" << (*cls ? std::string(" class=\"") + cls + "\"" : std::string()) << " data-v=\""
        << (std::isfinite(value) ? number(value, 6) : "NaN") << "\">" << escape(text) << "</td>";
}

void scatter_chart(std::ostream& out, const Report& report) {
    struct Point {
        std::size_t index;
        double recorded, replayed;
        Tier tier;
    };
    std::vector<Point> points;
    double lo = INFINITY, hi = 0;
    for (std::size_t i = 0; i < report.kernels.size(); ++i) {
        const KernelResult& k = report.kernels[i];
        if (!was_replayed(k) || !(k.recorded_us.median > 0) || !(k.replayed_us.median > 0)) continue;
        points.push_back({i, k.recorded_us.median, k.replayed_us.median, k.tier});
        lo = std::min({lo, k.recorded_us.median, k.replayed_us.median});
        hi = std::max({hi, k.recorded_us.median, k.replayed_us.median});
    }
    chart_open(out, "scatter", "Recorded vs replayed median per unique kernel (us, log axes)",
               points.size());
    constexpr double kW = 520, kH = 400, kLeft = 64, kBottom = 40, kTop = 10, kRight = 14;
    out << "<svg width=\"" << kLeft + kW + kRight << "\" height=\"" << kTop + kH + kBottom
        << "\" role=\"img\">\n";
    if (points.empty()) {
        out << "<text x=\"" << kLeft + 10 << "\" y=\"" << kTop + kH / 2
            << "\">no kernel was replayed</text></svg></div>\n";
        return;
    }
    const LogAxis axis = log_axis(lo, hi);
    const auto x = [&](double v) { return kLeft + axis.at(v, kW); };
    const auto y = [&](double v) { return kTop + kH - axis.at(v, kH); };
    for (int d = static_cast<int>(axis.lo); d <= static_cast<int>(axis.hi); ++d) {
        const double v = std::pow(10.0, d);
        out << "<line class=\"grid\" x1=\"" << number(x(v), 1) << "\" x2=\"" << number(x(v), 1)
            << "\" y1=\"" << kTop << "\" y2=\"" << kTop + kH << "\"/>"
            << "<line class=\"grid\" y1=\"" << number(y(v), 1) << "\" y2=\"" << number(y(v), 1)
            << "\" x1=\"" << kLeft << "\" x2=\"" << kLeft + kW << "\"/>"
            << "<text x=\"" << number(x(v), 1) << "\" y=\"" << kTop + kH + 16
            << "\" text-anchor=\"middle\">" << decade_label(d) << "</text>"
            << "<text x=\"" << kLeft - 6 << "\" y=\"" << number(y(v) + 4, 1)
            << "\" text-anchor=\"end\">" << decade_label(d) << "</text>\n";
    }
    out << "<line class=\"diag\" x1=\"" << kLeft << "\" y1=\"" << kTop + kH << "\" x2=\""
        << kLeft + kW << "\" y2=\"" << kTop << "\"/>";
    out << "<line class=\"axis\" x1=\"" << kLeft << "\" y1=\"" << kTop + kH << "\" x2=\""
        << kLeft + kW << "\" y2=\"" << kTop + kH << "\"/><line class=\"axis\" x1=\"" << kLeft
        << "\" y1=\"" << kTop << "\" x2=\"" << kLeft << "\" y2=\"" << kTop + kH << "\"/>";
    out << "<text x=\"" << kLeft + kW / 2 << "\" y=\"" << kTop + kH + 34
        << "\" text-anchor=\"middle\">recorded median</text>"
        << "<text transform=\"translate(14," << kTop + kH / 2
        << ") rotate(-90)\" text-anchor=\"middle\">replayed median</text>\n";
    for (const auto& p : points)
        out << "<circle class=\"point t" << tier_class(p.tier) << "\" cx=\""
            << number(x(p.recorded), 2) << "\" cy=\"" << number(y(p.replayed), 2)
            << "\" r=\"4\" data-k=\"" << p.index << "\"/>\n";
    out << "</svg></div>\n";
}

void tier_chart(std::ostream& out, const Report& report) {
    const std::size_t bars = report.tiers.size() * 3;
    chart_open(out, "tiers", "Time by tier (us): recorded, recorded of the replayed kernels, replayed",
               bars);
    constexpr double kLabel = 110, kW = 380, kRow = 54, kBar = 14;
    double most = 0;
    for (const auto& t : report.tiers)
        most = std::max({most, t.recorded_us, t.replayed_us, t.replayed_recorded_us});
    const double h = static_cast<double>(report.tiers.size()) * kRow + 8;
    out << "<svg width=\"" << kLabel + kW + 90 << "\" height=\"" << h << "\" role=\"img\">\n";
    double row = 4;
    for (const auto& t : report.tiers) {
        out << "<text x=\"" << kLabel - 8 << "\" y=\"" << row + 26 << "\" text-anchor=\"end\">"
            << escape(tier_label(t.tier)) << "</text>";
        const std::pair<const char*, double> values[] = {
            {"recorded", t.recorded_us},
            {"recorded, replayed kernels", t.replayed_recorded_us},
            {"replayed", t.replayed_us}};
        for (int b = 0; b < 3; ++b) {
            const double w = most > 0 ? values[b].second / most * kW : 0;
            const double y = row + b * (kBar + 2);
            out << "<rect class=\"point t" << tier_class(t.tier) << "\" x=\"" << kLabel
                << "\" y=\"" << y << "\" width=\"" << number(w, 2) << "\" height=\"" << kBar
                << "\" opacity=\"" << (b == 0 ? "0.45" : b == 1 ? "0.7" : "1")
                << "\" data-tip=\"" << escape(tier_label(t.tier)) << ": " << values[b].first
                << " " << number(values[b].second, 1) << " us\"/>"
                << "<text x=\"" << number(kLabel + w + 4, 1) << "\" y=\"" << y + 11 << "\">"
                << number(values[b].second, 0) << "</text>\n";
        }
        row += kRow;
    }
    out << "</svg></div>\n";
}

void gantt_chart(std::ostream& out, const Timeline& timeline,
                 const std::map<std::string, std::size_t>& kernel_index,
                 std::size_t max_per_side) {
    // The recorded step and the last replayed iteration (a replay's timeline may hold them all),
    // without warm-up reads: activities only, as replay_trace.json gives them back.
    int last = 0;
    for (const auto& item : timeline.items)
        if (item.replayed) last = std::max(last, item.iteration);
    std::vector<const Timeline::Item*> sides[2];
    for (const auto& item : timeline.items)
        if (!item.warm_read && (!item.replayed || item.iteration == last))
            sides[item.replayed ? 1 : 0].push_back(&item);
    std::set<std::pair<std::int64_t, std::int64_t>> lane_set;
    double span = 0;
    for (auto& side : sides) {
        std::stable_sort(side.begin(), side.end(),
                         [](const auto* a, const auto* b) { return a->start_us < b->start_us; });
        if (side.size() > max_per_side) side.resize(max_per_side);
        for (const auto* item : side) {
            lane_set.emplace(item->device, item->stream);
            span = std::max(span, item->start_us + item->dur_us);
        }
    }
    span = std::max(span, 0.001);
    const std::vector<std::pair<std::int64_t, std::int64_t>> lanes(lane_set.begin(),
                                                                   lane_set.end());
    const auto lane_of = [&](const Timeline::Item& item) {
        return std::lower_bound(lanes.begin(), lanes.end(),
                                std::pair{item.device, item.stream}) -
               lanes.begin();
    };
    const double lane_h = 18, height = static_cast<double>(lanes.size()) * lane_h + 2;
    chart_open(out, "timeline",
               "Timelines: recorded above, replayed below, each from its own start (wheel: "
               "zoom, drag: pan, double click: all)",
               sides[0].size() + sides[1].size());
    out << "<div class=\"note\">" << sides[0].size() << " recorded and " << sides[1].size()
        << " replayed activities (the first " << max_per_side << " of each side at most)</div>";
    std::ostringstream names_json;
    {
        JsonWriter json(names_json, false);
        json.begin_object();
        for (int s = 0; s < 2; ++s) {
            json.key(s == 0 ? "recorded" : "replayed").begin_array();
            for (const auto* item : sides[s]) json.value(item->name);
            json.end_array();
        }
        json.end_object();
    }
    out << "<div class=\"gantt-wrap\">";
    for (int s = 0; s < 2; ++s) {
        out << "<div class=\"side\">" << (s == 0 ? "recorded" : "replayed") << "</div>"
            << "<div class=\"gantt-row\"><div class=\"lanes\">";
        for (const auto& [device, stream] : lanes)
            out << "<div style=\"height:" << lane_h << "px\">GPU " << device << " stream "
                << stream << "</div>";
        out << "</div><div class=\"gantt-box\"><svg class=\"gantt\" data-side=\""
            << (s == 0 ? "recorded" : "replayed") << "\" data-span=\"" << number(span, 3)
            << "\" viewBox=\"0 0 " << number(span, 3) << " " << height
            << "\" preserveAspectRatio=\"none\" style=\"height:" << height
            << "px\" shape-rendering=\"crispEdges\">\n";
        for (std::size_t i = 0; i < sides[s].size(); ++i) {
            const Timeline::Item& item = *sides[s][i];
            const auto k = kernel_index.find(item.kernel_id);
            out << "<rect class=\"act point t" << tier_class(item.tier) << "\" x=\""
                << number(item.start_us, 3) << "\" y=\"" << lane_of(item) * lane_h + 1
                << "\" width=\"" << number(std::max(item.dur_us, 0.0), 3) << "\" height=\""
                << lane_h - 3 << "\" data-n=\"" << i << "\"";
            if (k != kernel_index.end()) out << " data-k=\"" << k->second << "\"";
            if (item.replayed && std::isfinite(item.error_pct()))
                out << " data-e=\"" << number(item.error_pct(), 1) << "\"";
            out << "/>\n";
        }
        out << "</svg></div></div>";
    }
    out << "<div class=\"gantt-axis\" id=\"gantt-axis\"></div></div>"
        << "<script type=\"application/json\" id=\"timeline-data\">"
        << script_json(names_json.str()) << "</script></div>\n";
}

void distribution_chart(std::ostream& out, const KernelComparison& change,
                        const std::vector<double>& baseline, const std::vector<double>& current,
                        std::size_t max_per_side) {
    // Evenly spaced picks keep the shape of a long sample.
    const auto pick = [&](const std::vector<double>& all) {
        if (all.size() <= max_per_side) return all;
        std::vector<double> some;
        for (std::size_t i = 0; i < max_per_side; ++i)
            some.push_back(all[i * all.size() / max_per_side]);
        return some;
    };
    const std::vector<double> sides[2] = {pick(baseline), pick(current)};
    double lo = INFINITY, hi = -INFINITY;
    for (const auto& side : sides)
        for (double v : side) {
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
    if (!(hi > lo)) {
        lo = std::isfinite(lo) ? lo * 0.95 : 0;
        hi = std::isfinite(hi) ? hi * 1.05 + 1e-3 : 1;
    }
    const double pad = (hi - lo) * 0.05;
    lo -= pad;
    hi += pad;
    chart_open(out, "distribution",
               std::string(to_string(change.verdict)) + " " +
                   (change.change_pct > 0 ? "+" : "") + number(change.change_pct, 1) + " %: " +
                   change.name.substr(0, 90) + " (" + change.id + ")",
               sides[0].size() + sides[1].size());
    constexpr double kLeft = 70, kW = 460, kRow = 34;
    const auto x = [&](double v) { return kLeft + (v - lo) / (hi - lo) * kW; };
    out << "<svg width=\"" << kLeft + kW + 20 << "\" height=\"" << 2 * kRow + 30
        << "\" role=\"img\">\n";
    const char* labels[] = {"baseline", "current"};
    const double medians[] = {change.baseline_median_us, change.current_median_us};
    for (int s = 0; s < 2; ++s) {
        const double mid = 6 + kRow * s + kRow / 2;
        out << "<text x=\"" << kLeft - 6 << "\" y=\"" << mid + 4 << "\" text-anchor=\"end\">"
            << labels[s] << "</text>";
        for (std::size_t i = 0; i < sides[s].size(); ++i) {
            // A fixed jitter by index spreads equal samples without randomness.
            const double jitter = static_cast<double>((i * 7919) % 21) - 10.0;
            out << "<circle class=\"point " << labels[s] << "\" cx=\""
                << number(x(sides[s][i]), 2) << "\" cy=\"" << number(mid + jitter, 1)
                << "\" r=\"2.5\" opacity=\"0.6\" data-tip=\"" << labels[s] << " sample "
                << number(sides[s][i], 3) << " us\"/>";
        }
        if (std::isfinite(medians[s]))
            out << "<line class=\"median " << labels[s] << "\" x1=\"" << number(x(medians[s]), 2)
                << "\" x2=\"" << number(x(medians[s]), 2) << "\" y1=\"" << mid - 14
                << "\" y2=\"" << mid + 14 << "\"/>\n";
    }
    const double axis_y = 2 * kRow + 10;
    out << "<line class=\"axis\" x1=\"" << kLeft << "\" x2=\"" << kLeft + kW << "\" y1=\""
        << axis_y << "\" y2=\"" << axis_y << "\"/>";
    for (int t = 0; t <= 4; ++t) {
        const double v = lo + (hi - lo) * t / 4;
        out << "<text x=\"" << number(x(v), 1) << "\" y=\"" << axis_y + 14
            << "\" text-anchor=\"middle\">" << number(v, v < 10 ? 3 : 1) << " us</text>";
    }
    out << "</svg><div class=\"note\">medians " << number(change.baseline_median_us, 3) << " -> "
        << number(change.current_median_us, 3) << " us, spread " << number(change.spread_pct, 1)
        << " %, p = " << (std::isfinite(change.p_value) ? number(change.p_value, 6) : "n/a")
        << (change.note.empty() ? "" : ", " + escape(change.note)) << "</div></div>\n";
}

}  // namespace replay::html
