#include "replay/regression.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <numeric>
#include <sstream>
#include <unordered_map>

#include "replay/input_error.h"
#include "replay/json_writer.h"

namespace replay {

namespace stats {

double median(std::vector<double> v) {
    if (v.empty()) return NAN;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double robust_relative_spread(const std::vector<double>& a, const std::vector<double>& b) {
    std::vector<double> deviations;
    for (const auto* side : {&a, &b}) {
        if (side->size() < 2) continue;
        const double m = median(*side);
        if (!(m > 0)) continue;
        for (double x : *side) deviations.push_back((x - m) / m);
    }
    if (deviations.empty()) return 0;
    for (double& d : deviations) d = std::fabs(d);
    return 1.4826 * median(std::move(deviations));
}

namespace {

// Null distribution of U for sizes m, n without ties: the coefficients of the Gaussian binomial
// [m+n choose m]_q; c[u] / C(m+n, m) = P(U = u). Exact in doubles while C(m+n, m) < 2^53.
std::vector<double> u_distribution(std::size_t m, std::size_t n) {
    std::vector<double> c(m * n + 1, 0.0);
    c[0] = 1;
    for (std::size_t i = 1; i <= m; ++i) {
        const std::size_t s = n + i;  // multiply by (1 - q^(n+i))
        for (std::size_t u = c.size(); u-- > s;) c[u] -= c[u - s];
        for (std::size_t u = i; u < c.size(); ++u) c[u] += c[u - i];  // divide by (1 - q^i)
    }
    return c;
}

}  // namespace

RankTest mann_whitney(const std::vector<double>& a, const std::vector<double>& b) {
    RankTest r;
    const std::size_t n1 = a.size(), n2 = b.size(), n = n1 + n2;
    if (n1 == 0 || n2 == 0) return r;
    std::vector<std::pair<double, bool>> all;  // value, from a
    all.reserve(n);
    for (double x : a) all.emplace_back(x, true);
    for (double x : b) all.emplace_back(x, false);
    std::sort(all.begin(), all.end(),
              [](const auto& x, const auto& y) { return x.first < y.first; });
    double rank_sum_a = 0, tie_term = 0;
    bool ties = false;
    for (std::size_t i = 0; i < n;) {
        std::size_t j = i;
        while (j < n && all[j].first == all[i].first) ++j;
        const double t = static_cast<double>(j - i);
        const double avg_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2.0;
        for (std::size_t q = i; q < j; ++q)
            if (all[q].second) rank_sum_a += avg_rank;
        if (t > 1) {
            ties = true;
            tie_term += t * t * t - t;
        }
        i = j;
    }
    const double m1 = static_cast<double>(n1), m2 = static_cast<double>(n2),
                 N = static_cast<double>(n);
    r.u = rank_sum_a - m1 * (m1 + 1) / 2.0;
    if (!ties && n <= 40) {
        const auto c = u_distribution(n1, n2);
        const double total = std::accumulate(c.begin(), c.end(), 0.0);
        const auto u = static_cast<std::size_t>(std::llround(r.u));
        double lower = 0, upper = 0;
        for (std::size_t v = 0; v < c.size(); ++v) {
            if (v <= u) lower += c[v];
            if (v >= u) upper += c[v];
        }
        r.p = std::min(1.0, 2.0 * std::min(lower, upper) / total);
        r.exact = true;
        return r;
    }
    const double mu = m1 * m2 / 2.0;
    const double var = m1 * m2 / 12.0 * ((N + 1) - tie_term / (N * (N - 1)));
    if (!(var > 0)) {  // every value equal
        r.z = 0;
        r.p = 1;
        return r;
    }
    r.z = std::max(0.0, std::fabs(r.u - mu) - 0.5) / std::sqrt(var);
    r.p = std::min(1.0, std::erfc(r.z / std::sqrt(2.0)));
    if (r.u < mu) r.z = -r.z;
    return r;
}

}  // namespace stats

namespace {

struct Measure {
    bool has = false;
    double median = NAN;
    std::vector<double> samples;
};

Measure measure(const KernelResult& k, const RegressionOptions& o) {
    Measure m;
    // Replayed runs, or (recorded) the recorded instances when the report carries them.
    for (double x : k.samples_us)
        if (std::isfinite(x)) m.samples.push_back(x);
    if (o.recorded) {
        m.has = k.recorded_us.count > 0;
        m.median = k.recorded_us.median;
        return m;
    }
    if (!m.samples.empty()) {
        m.has = true;
        m.median = stats::median(m.samples);
    } else if (k.replayed_us.count > 0) {
        m.has = true;
        m.median = k.replayed_us.median;
    }
    return m;
}

std::string why_not_measured(const KernelResult& k) {
    std::string s = "not replayed";
    if (!k.disposition.empty())
        s += " (" + k.disposition + (k.reason.empty() ? "" : ": " + k.reason) + ")";
    return s;
}

void count(RegressionSummary& s, Verdict v) {
    switch (v) {
        case Verdict::Unchanged:
            ++s.unchanged;
            break;
        case Verdict::Improved:
            ++s.improved;
            break;
        case Verdict::Regressed:
            ++s.regressed;
            break;
        case Verdict::New:
            ++s.added;
            break;
        case Verdict::Missing:
            ++s.missing;
            break;
    }
}

void add_matched(RegressionTotals& t, const KernelComparison& k) {
    ++t.matched;
    t.baseline_us += k.baseline_total_us();
    t.current_us += k.current_total_us();
    t.change_pct = t.baseline_us > 0 ? (t.current_us - t.baseline_us) / t.baseline_us * 100.0 : NAN;
}

void compare_kernel(KernelComparison& c, const Measure& b, const Measure& cur,
                    const RegressionOptions& o) {
    c.baseline_samples = b.samples.size();
    c.current_samples = cur.samples.size();
    c.baseline_median_us = b.median;
    c.current_median_us = cur.median;
    c.spread_pct = 100.0 * stats::robust_relative_spread(b.samples, cur.samples);
    c.threshold_pct = std::max(o.threshold_pct, o.k * c.spread_pct);
    if (!(b.median > 0) || !std::isfinite(cur.median)) {
        c.verdict = Verdict::Unchanged;
        c.note = "baseline median is not positive: no relative change";
        return;
    }
    c.change_pct = (cur.median - b.median) / b.median * 100.0;
    const bool beyond = std::fabs(c.change_pct) > c.threshold_pct &&
                        std::fabs(cur.median - b.median) > o.min_change_us;
    bool significant = true;
    if (b.samples.size() >= o.min_samples && cur.samples.size() >= o.min_samples) {
        const auto test = stats::mann_whitney(cur.samples, b.samples);
        c.rank_test = true;
        c.exact = test.exact;
        c.p_value = test.p;
        significant = test.p < o.alpha;
    } else if (o.recorded) {
        c.note = std::to_string(b.samples.size()) + "/" + std::to_string(cur.samples.size()) +
                 " recorded instances: threshold only";
    } else {
        // One or two samples a side cannot tell a change from noise: a single slow run of a
        // 20 us kernel is +10%. Say how far it moved, flag nothing.
        significant = false;
        std::ostringstream note;
        note << b.samples.size() << "/" << cur.samples.size() << " samples: ";
        if (beyond) {
            c.inconclusive = true;
            note << "inconclusive, " << (c.change_pct > 0 ? "+" : "") << c.change_pct
                 << "% beyond the threshold but ";
        }
        note << "the rank test needs >= " << o.min_samples
             << " per side (more --iterations in sequential mode, or unique mode)";
        c.note = note.str();
    }
    if (beyond && significant)
        c.verdict = c.change_pct > 0 ? Verdict::Regressed : Verdict::Improved;
    else
        c.verdict = Verdict::Unchanged;
}

void write_tier(JsonWriter& json, Tier tier) {
    if (tier == Tier::NotReplayable)
        json.key("tier").null();
    else
        json.field("tier", static_cast<int>(tier));
}

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
    if (s.size() > width) s = s.substr(0, width - 3) + "...";
    return s;
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

const char* to_string(Verdict verdict) {
    switch (verdict) {
        case Verdict::Unchanged:
            return "unchanged";
        case Verdict::Improved:
            return "improved";
        case Verdict::Regressed:
            return "regressed";
        case Verdict::New:
            return "new";
        case Verdict::Missing:
            return "missing";
    }
    return "?";
}

const std::vector<std::string>& machine_keys() {
    static const std::vector<std::string> keys = {"gpu", "driver", "cuda", "cublas", "libtorch"};
    return keys;
}

Regression compare_reports(const Report& baseline, const Report& current,
                           const RegressionOptions& options, const std::string& baseline_label,
                           const std::string& current_label) {
    Regression r;
    r.baseline = baseline_label;
    r.current = current_label;
    r.options = options;

    for (const auto& key : machine_keys()) {
        const std::string b = baseline.env(key), c = current.env(key);
        if (b != c) r.machine_differences.push_back({key, b, c});
    }
    r.same_machine = r.machine_differences.empty();
    if (!r.same_machine) {
        std::string keys;
        for (const auto& d : r.machine_differences) keys += (keys.empty() ? "" : ", ") + d.key;
        r.notes.push_back("the reports come from different machines or software (" + keys +
                          "): changes may not be the code's");
    }
    if (!options.recorded && baseline.env("timing") != current.env("timing"))
        r.notes.push_back("timing methods differ (" + baseline.env("timing") + " vs " +
                          current.env("timing") + ")");
    const std::string hb = baseline.input("trace_hash"), hc = current.input("trace_hash");
    if (!hb.empty() && !hc.empty() && hb != hc)
        r.notes.push_back("the reports are of different traces (trace_hash " + hb + " vs " + hc +
                          "): kernels are matched by id only");
    for (const char* key : {"et", "shapes"}) {
        const bool in_baseline = !baseline.input(key).empty(),
                   in_current = !current.input(key).empty();
        if (in_baseline != in_current)
            r.notes.push_back(std::string("only the ") + (in_baseline ? "baseline" : "current") +
                              " report was made with --" + key + " (" +
                              (in_baseline ? baseline.input(key) : current.input(key)) +
                              "): it changes the recipes, so kernels of the ops it covers get "
                              "other ids and show as missing and new; give it to both");
    }
    if (!options.recorded && baseline.mode != current.mode)
        r.notes.push_back("replay modes differ (" + baseline.mode + " vs " + current.mode + ")");
    if (!options.recorded && baseline.backend != current.backend)
        r.notes.push_back("backends differ (" + baseline.backend + " vs " + current.backend + ")");
    if (options.recorded)
        r.notes.push_back(
            "recorded durations compared: each kernel's recorded instances are its samples "
            "(kernels recorded fewer than " +
            std::to_string(options.min_samples) + " times: threshold only)");
    else if (baseline.backend == "cpu" || current.backend == "cpu")
        r.notes.push_back(
            "cpu backend: host timings drift with the machine's load and clock between runs; "
            "its verdicts test the pipeline, not GPU performance");

    std::unordered_map<std::string, std::size_t> in_current;
    for (std::size_t i = 0; i < current.kernels.size(); ++i)
        in_current.emplace(current.kernels[i].id, i);
    std::unordered_map<std::string, std::size_t> in_baseline;
    for (std::size_t i = 0; i < baseline.kernels.size(); ++i)
        in_baseline.emplace(baseline.kernels[i].id, i);

    std::size_t not_measured = 0;
    std::size_t few_samples = 0;
    auto base_fields = [](KernelComparison& c, const KernelResult& k) {
        c.id = k.id;
        c.name = k.name;
        c.kind = k.kind;
        c.tier = k.tier;
    };
    for (std::size_t i = 0; i < baseline.kernels.size(); ++i) {
        const KernelResult& bk = baseline.kernels[i];
        if (in_baseline.at(bk.id) != i) continue;  // a duplicate id: the first one counts
        const Measure bm = measure(bk, options);
        KernelComparison c;
        base_fields(c, bk);
        c.baseline_count = bk.count;
        c.baseline_median_us = bm.median;
        c.baseline_samples = bm.samples.size();
        const auto it = in_current.find(bk.id);
        if (it == in_current.end()) {
            c.verdict = Verdict::Missing;
            c.note = "not in the current report";
            r.kernels.push_back(std::move(c));
            continue;
        }
        const KernelResult& ck = current.kernels[it->second];
        const Measure cm = measure(ck, options);
        c.tier = ck.tier;
        c.current_count = ck.count;
        if (!bm.has && !cm.has) {
            ++not_measured;
            continue;
        }
        if (!cm.has) {
            c.verdict = Verdict::Missing;
            c.note = why_not_measured(ck) + " in the current run";
        } else if (!bm.has) {
            c.verdict = Verdict::New;
            c.current_median_us = cm.median;
            c.current_samples = cm.samples.size();
            c.note = why_not_measured(bk) + " in the baseline run";
        } else {
            compare_kernel(c, bm, cm, options);
            if (!c.rank_test && !options.recorded) ++few_samples;
        }
        r.kernels.push_back(std::move(c));
    }
    for (std::size_t i = 0; i < current.kernels.size(); ++i) {
        const KernelResult& ck = current.kernels[i];
        if (in_current.at(ck.id) != i || in_baseline.count(ck.id)) continue;
        const Measure cm = measure(ck, options);
        KernelComparison c;
        base_fields(c, ck);
        c.verdict = Verdict::New;
        c.current_count = ck.count;
        c.current_median_us = cm.median;
        c.current_samples = cm.samples.size();
        c.note = "not in the baseline report";
        r.kernels.push_back(std::move(c));
    }
    if (not_measured > 0)
        r.notes.push_back(std::to_string(not_measured) +
                          " kernels replayed in neither report were not compared");
    if (few_samples > 0)
        r.notes.push_back(
            std::to_string(few_samples) + " kernels had fewer than " +
            std::to_string(options.min_samples) +
            " samples on a side: without the rank test none of them is flagged (changes beyond "
            "the threshold are counted as inconclusive)");

    std::vector<TierComparison> tiers(5);
    std::vector<bool> present(5, false);
    for (std::size_t i = 0; i < tiers.size(); ++i) tiers[i].tier = static_cast<Tier>(i);
    for (const auto& c : r.kernels) {
        const auto t = static_cast<std::size_t>(c.tier) % tiers.size();
        present[t] = true;
        count(r.summary, c.verdict);
        count(tiers[t].summary, c.verdict);
        r.summary.inconclusive += c.inconclusive;
        tiers[t].summary.inconclusive += c.inconclusive;
        if (c.verdict == Verdict::Unchanged || c.verdict == Verdict::Improved ||
            c.verdict == Verdict::Regressed) {
            add_matched(r.totals, c);
            add_matched(tiers[t].totals, c);
        }
    }
    for (std::size_t i = 0; i < tiers.size(); ++i)
        if (present[i]) r.tiers.push_back(tiers[i]);
    return r;
}

void write_regression_json(std::ostream& out, const Regression& r) {
    JsonWriter json(out);
    json.begin_object();
    json.field("schema", r.schema).field("baseline", r.baseline).field("current", r.current);
    json.field("same_machine", r.same_machine);
    json.key("machine_differences").begin_array();
    for (const auto& d : r.machine_differences) json.value(d.key);
    json.end_array();
    json.key("machine").begin_array();
    for (const auto& d : r.machine_differences)
        json.begin_object()
            .field("key", d.key)
            .field("baseline", d.baseline)
            .field("current", d.current)
            .end_object();
    json.end_array();
    json.key("options").begin_object();
    json.field("threshold_pct", r.options.threshold_pct)
        .field("k", r.options.k)
        .field("alpha", r.options.alpha);
    json.field("min_samples", static_cast<std::uint64_t>(r.options.min_samples));
    json.field("min_change_us", r.options.min_change_us);
    json.field("measure", r.options.recorded ? "recorded" : "replayed");
    json.end_object();
    json.key("summary").begin_object();
    write_summary_fields(json, r.summary);
    json.end_object();
    json.key("totals").begin_object();
    write_totals_fields(json, r.totals);
    json.end_object();
    json.key("tiers").begin_array();
    for (const auto& t : r.tiers) {
        json.begin_object();
        write_tier(json, t.tier);
        json.field("label", tier_label(t.tier));
        write_summary_fields(json, t.summary);
        write_totals_fields(json, t.totals);
        json.end_object();
    }
    json.end_array();
    json.key("kernels").begin_array();
    for (const auto& k : r.kernels) {
        json.begin_object();
        json.field("id", k.id).field("name", k.name).field("kind", k.kind);
        write_tier(json, k.tier);
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
        json.end_object();
    }
    json.end_array();
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
        << "`; " << (r.options.recorded ? "recorded" : "replayed")
        << " medians; a change counts beyond max(" << fixed(r.options.threshold_pct, 1) << "%, "
        << fixed(r.options.k, 1) << " x run spread) and " << fixed(r.options.min_change_us, 2)
        << " us, with Mann-Whitney p < " << r.options.alpha << "\n\n";
    if (!r.same_machine) {
        out << "**Warning: not the same machine.**";
        for (const auto& d : r.machine_differences)
            out << " " << d.key << ": `" << md_escape(d.baseline.empty() ? "?" : d.baseline, 60)
                << "` -> `" << md_escape(d.current.empty() ? "?" : d.current, 60) << "`;";
        out << "\n\n";
    }
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
        out << "| verdict | kernel | tier | count | baseline median us | current median us | "
               "change | threshold | p-value |\n";
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
        out << "| tier | compared | regressed | improved | baseline us | current us | change |\n";
        out << "|---|---:|---:|---:|---:|---:|---:|\n";
        for (const auto& t : r.tiers)
            out << "| " << tier_label(t.tier) << " | " << t.totals.matched << " | "
                << t.summary.regressed << " | " << t.summary.improved << " | "
                << fixed(t.totals.baseline_us, 1) << " | " << fixed(t.totals.current_us, 1) << " | "
                << pct(t.totals.change_pct) << " |\n";
        out << "\n";
    }
    out << "total over " << r.totals.matched
        << " compared kernels (count x median): " << fixed(r.totals.baseline_us, 1) << " us -> "
        << fixed(r.totals.current_us, 1) << " us (" << pct(r.totals.change_pct) << ")\n";
    for (const auto& n : r.notes) out << "\nnote: " << n << "\n";
}

int regression_exit_code(const Regression& r) {
    return r.summary.regressed > 0 ? 1 : 0;
}

Baseline find_baseline(const std::string& path_or_dir, const std::string& trace_hash) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_directory(path_or_dir, ec))
        return Baseline{path_or_dir, read_report_json(path_or_dir)};

    // *.json in the folder and in its immediate subfolders.
    std::vector<fs::path> files;
    auto scan = [&](const fs::path& dir, bool descend) {
        std::error_code e;
        std::vector<fs::path> subdirs;
        for (fs::directory_iterator it(dir, e), end; !e && it != end; it.increment(e)) {
            std::error_code se;
            if (it->is_directory(se))
                subdirs.push_back(it->path());
            else if (it->path().extension() == ".json")
                files.push_back(it->path());
        }
        return descend ? subdirs : std::vector<fs::path>{};
    };
    for (const auto& sub : scan(path_or_dir, true)) scan(sub, false);
    std::sort(files.begin(), files.end());

    std::size_t reports = 0;
    bool found = false;
    Baseline best;
    fs::file_time_type best_time{};
    for (const auto& f : files) {
        // Reports start with their schema; skip other JSON (traces can be large) without parsing
        // it.
        {
            std::ifstream in(f, std::ios::binary);
            std::string head(4096, '\0');
            in.read(head.data(), static_cast<std::streamsize>(head.size()));
            head.resize(static_cast<std::size_t>(in.gcount()));
            if (head.find("replay.report/") == std::string::npos) continue;
        }
        Report report;
        try {
            report = read_report_json(f.string());
        } catch (const std::exception&) {
            continue;
        }
        ++reports;
        if (report.input("trace_hash") != trace_hash) continue;
        std::error_code te;
        const auto t = fs::last_write_time(f, te);
        if (!found || t > best_time) {
            found = true;
            best_time = t;
            best = Baseline{f.string(), std::move(report)};
        }
    }
    if (!found)
        throw InputError(path_or_dir, 0,
                         "no baseline report for trace_hash " + trace_hash + " (" +
                             std::to_string(reports) +
                             " replay reports read in this folder and its subfolders)");
    return best;
}

}  // namespace replay
