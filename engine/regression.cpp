#include "replay/regression.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string_view>
#include <unordered_map>

namespace replay {
namespace {

// A replay option that changes what runs around each timed kernel, as a report states it. Unique
// mode's instruction_cache is absent from reports made before 2026-11-27, which ran warm; its
// graph_nodes from reports of traces without graph-recorded kernels and from those made before
// then, which timed them alone.
std::string timing_option(const Report& report, const char* key) {
    std::string value = report.option(key);
    if (!value.empty() || report.mode != "unique") return value;
    const std::string_view name = key;
    if (name == "instruction_cache" && report.option("context") == "recorded") return "warm";
    if (name == "graph_nodes") return "alone";
    return value;
}

// "key baseline vs current" for each such option that both reports state and that differs.
std::string timing_option_differences(const Report& baseline, const Report& current) {
    std::string out;
    for (const char* key : {"context", "instruction_cache", "graph_nodes", "l2_flush", "pace",
                            "warm_inputs", "graph", "warmup_ms"}) {
        const std::string b = timing_option(baseline, key), c = timing_option(current, key);
        if (b.empty() || c.empty() || b == c) continue;
        out += (out.empty() ? "" : "; ") + std::string(key) + " " + b + " vs " + c;
    }
    return out;
}

std::string why_not_replayed(const KernelResult& k) {
    std::string s = "not replayed";
    // Pending: a report read without a disposition says nothing more.
    if (k.outcome != KernelOutcome::Pending)
        s += std::string(" (") + to_string(k.outcome) + (k.reason.empty() ? "" : ": " + k.reason) +
             ")";
    return s;
}

struct Measure {
    bool has = false;   // a positive median that a relative change can be taken against
    bool zero = false;  // measured, but its median is 0 us
    double median = NAN;
    std::vector<double> samples;
    std::string why_not;  // when !has
};

Measure measure(const KernelResult& k, const RegressionOptions& o) {
    Measure m;
    if (o.energy) {
        for (double x : k.energy.samples_uj)
            if (std::isfinite(x)) m.samples.push_back(x);
        m.has = !m.samples.empty();
        m.median = m.has ? stats::median(m.samples) : NAN;
        if (!m.has)
            m.why_not =
                "no energy (" + (k.energy.why.empty() ? why_not_replayed(k) : k.energy.why) + ")";
        else if (!(m.median > 0)) {
            m.has = false;
            m.zero = true;
            m.why_not = "measured at a median energy <= 0 uJ,";
        }
        return m;
    }
    // Replayed runs, or (recorded) the recorded instances when the report carries them.
    for (double x : k.samples_us)
        if (std::isfinite(x)) m.samples.push_back(x);
    if (o.recorded) {
        m.has = k.recorded_us.count > 0;
        m.median = k.recorded_us.median;
    } else if (!m.samples.empty()) {
        m.has = true;
        m.median = stats::median(m.samples);
    } else if (k.replayed_us.count > 0) {
        m.has = true;
        m.median = k.replayed_us.median;
    }
    if (!m.has) {
        m.why_not = why_not_replayed(k);
    } else if (!(m.median > 0)) {
        // A duration of 0 is no measurement: against it every change is infinite, and a
        // baseline of zeros would otherwise pass every kernel as unchanged.
        m.has = false;
        m.zero = true;
        m.why_not = "measured at a median of 0 us (" + std::to_string(m.samples.size()) +
                    " samples), which no change can be taken against,";
    }
    return m;
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
    c.change_pct = (cur.median - b.median) / b.median * 100.0;
    const bool beyond = std::fabs(c.change_pct) > c.threshold_pct &&
                        (o.energy || std::fabs(cur.median - b.median) > o.min_change_us);
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

Report pool_baselines(const std::vector<Report>& reports, const std::vector<std::string>& labels,
                      std::vector<std::string>& notes) {
    if (reports.empty()) throw std::runtime_error("pool_baselines: no report");
    Report pooled = reports.front();
    std::unordered_map<std::string, KernelResult*> by_id;
    for (auto& k : pooled.kernels) by_id.emplace(k.id, &k);
    const auto label = [&](std::size_t i) {
        return i < labels.size() ? labels[i] : "report " + std::to_string(i + 1);
    };
    for (std::size_t i = 1; i < reports.size(); ++i) {
        const Report& r = reports[i];
        if (r.input("trace_hash") != pooled.input("trace_hash"))
            throw std::runtime_error("baselines of different traces cannot be pooled: " + label(0) +
                                     " has trace_hash " + pooled.input("trace_hash") + ", " +
                                     label(i) + " " + r.input("trace_hash"));
        if (r.mode != pooled.mode)
            throw std::runtime_error("baselines of different modes cannot be pooled: " + label(0) +
                                     " is " + pooled.mode + ", " + label(i) + " " + r.mode);
        for (const std::string key : {"gpu", "gpu_uuid"})
            if (r.env(key) != pooled.env(key))
                notes.push_back("pooled baselines differ in " + key + ": " + label(0) + " " +
                                pooled.env(key) + ", " + label(i) + " " + r.env(key));
        for (const KernelResult& k : r.kernels) {
            const auto found = by_id.find(k.id);
            if (found == by_id.end()) continue;  // the first report's kernels are the baseline's
            KernelResult& into = *found->second;
            into.samples_us.insert(into.samples_us.end(), k.samples_us.begin(), k.samples_us.end());
            into.energy.samples_uj.insert(into.energy.samples_uj.end(), k.energy.samples_uj.begin(),
                                          k.energy.samples_uj.end());
        }
    }
    for (auto& k : pooled.kernels) {
        if (!k.samples_us.empty()) k.replayed_us = summarize(k.samples_us);
        if (!k.energy.samples_uj.empty()) k.energy.uj = summarize(k.energy.samples_uj);
    }
    std::ostringstream note;
    note << "baseline pooled from " << reports.size()
         << " reports, each kernel's samples over all of them";
    notes.insert(notes.begin(), note.str());
    return pooled;
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
    if (!options.recorded && baseline.mode == current.mode)
        if (std::string differ = timing_option_differences(baseline, current); !differ.empty())
            r.notes.push_back("the replays ran with other options (" + differ +
                              "): what runs around each timed kernel changed, and its time with "
                              "it; replay the way the baseline was replayed to compare the code");
    if (!options.recorded && baseline.backend != current.backend)
        r.notes.push_back("backends differ (" + baseline.backend + " vs " + current.backend + ")");
    if (options.energy) {
        r.notes.push_back(
            "energy per launch compared (microjoules in the fields named _us): each kernel's "
            "energy windows are its samples");
        const std::string ub = baseline.env("gpu_uuid"), uc = current.env("gpu_uuid");
        if (!ub.empty() && !uc.empty() && ub != uc)
            r.notes.push_back("energy was measured on two boards (" + ub + " and " + uc +
                              "): boards of one model differ in energy at the same speed (two "
                              "H200s measured GPT-2's elementwise kernels 8-10 % apart), so a "
                              "change may be the board's");
        for (const auto* side : {&baseline, &current})
            if (!side->energy.requested || !side->energy.probe.available)
                r.notes.push_back(std::string("the ") +
                                  (side == &baseline ? "baseline" : "current") +
                                  " report has no energy: " +
                                  (side->energy.requested ? side->energy.probe.why
                                                          : "it was made without --energy"));
    }
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
    std::size_t zero_in_baseline = 0, zero_in_current = 0;
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
        zero_in_baseline += bm.zero;
        zero_in_current += cm.zero;
        if (!bm.has && !cm.has) {
            not_measured += !bm.zero && !cm.zero;
            continue;
        }
        if (!cm.has) {
            c.verdict = Verdict::Missing;
            c.note = cm.why_not + " in the current run";
        } else if (!bm.has) {
            c.verdict = Verdict::New;
            c.current_median_us = cm.median;
            c.current_samples = cm.samples.size();
            c.note = bm.why_not + " in the baseline run";
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
    for (const auto& [zeros, side] :
         {std::pair{zero_in_baseline, "baseline"}, std::pair{zero_in_current, "current"}})
        if (zeros > 0)
            r.notes.push_back(std::to_string(zeros) + " kernels have a median of 0 us in the " +
                              side +
                              " report: a duration of 0 is no measurement, they were not "
                              "compared");
    if (few_samples > 0)
        r.notes.push_back(
            std::to_string(few_samples) + " kernels had fewer than " +
            std::to_string(options.min_samples) +
            " samples on a side: without the rank test none of them is flagged (changes beyond "
            "the threshold are counted as inconclusive)");

    std::vector<TierComparison> tiers(6);
    std::vector<bool> present(6, false);
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

int regression_exit_code(const Regression& r) {
    return r.summary.regressed > 0 ? 1 : 0;
}

}  // namespace replay
