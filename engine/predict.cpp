// Scenarios of `replay predict`: which GPU durations and launch costs each one simulates.
#include "replay/predict.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <unordered_map>

#include "replay/report.h"
#include "replay/report_json.h"
#include "replay/timing_model.h"

namespace replay {
namespace {

// The one place that reads a node's tier (the classifier's per-node recipes).
Tier tier_of(const Analysis& analysis, std::uint32_t node) {
    return analysis.recipes.decision(node).tier;
}

std::string lower(std::string_view text) {
    std::string out(text);
    for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::optional<Tier> tier_named(std::string_view text) {
    const std::string t = lower(text);
    if (t == "1" || t == "tier1" || t == "copy" || t == "memcpy") return Tier::Copy;
    if (t == "2" || t == "tier2" || t == "gemm") return Tier::Gemm;
    if (t == "3" || t == "tier3" || t == "aten" || t == "op") return Tier::AtenOp;
    if (t == "4" || t == "tier4" || t == "collective" || t == "nccl") return Tier::Collective;
    return std::nullopt;
}

Nanos to_nanos(double us) {
    return static_cast<Nanos>(std::llround(us * 1000.0));
}

double median_of(std::vector<double> v) {
    return v.empty() ? NAN : summarize(std::move(v)).median;
}

// A kernel's time per recorded instance from a report: unique mode measured the kernel, so every
// instance gets its median; a sequential report has one sample per instance and iteration, in
// launch order, iteration after iteration.
std::vector<double> instance_times(const KernelResult& k, std::size_t instances,
                                   const std::string& mode, bool& by_median) {
    by_median = false;
    const double median = k.replayed_us.count > 0 ? k.replayed_us.median : median_of(k.samples_us);
    const std::size_t samples = k.samples_us.size();
    if (mode != "unique" && samples >= instances && instances > 0 && samples % instances == 0) {
        std::vector<double> out(instances);
        const std::size_t passes = samples / instances;
        for (std::size_t j = 0; j < instances; ++j) {
            std::vector<double> per_pass;
            for (std::size_t it = 0; it < passes; ++it)
                per_pass.push_back(k.samples_us[it * instances + j]);
            out[j] = median_of(std::move(per_pass));
        }
        return out;
    }
    by_median = mode != "unique";
    return std::vector<double>(instances, median);
}

TimesSource apply_report(const Analysis& analysis, const Report& report, const std::string& path,
                         std::vector<Nanos>& durations, std::vector<std::string>& notes) {
    TimesSource source;
    source.path = path;
    source.mode = report.mode;
    source.gpu = report.env("gpu");
    std::unordered_map<std::string, const KernelResult*> by_id;
    for (const auto& k : report.kernels) by_id.emplace(k.id, &k);
    std::size_t matched = 0;
    for (const auto& kernel : analysis.kernels) {
        auto it = by_id.find(kernel.id);
        if (it == by_id.end() ||
            (it->second->samples_us.empty() && it->second->replayed_us.count == 0)) {
            ++source.kernels_missing;
            source.activities_recorded += kernel.nodes.size();
            continue;
        }
        ++matched;
        bool by_median = false;
        const auto times = instance_times(*it->second, kernel.nodes.size(), report.mode, by_median);
        source.kernels_by_median += by_median;
        for (std::size_t j = 0; j < kernel.nodes.size(); ++j)
            if (std::isfinite(times[j])) {
                durations[kernel.nodes[j]] = to_nanos(times[j]);
                ++source.activities_from_report;
            } else {
                ++source.activities_recorded;
            }
    }
    source.report_kernels_unmatched =
        report.kernels.size() - std::min(report.kernels.size(), matched);
    const std::string hash = report.input("trace_hash");
    if (!hash.empty() && hash != analysis.trace_hash)
        notes.push_back(path + " was made from another trace (trace_hash " + hash + ", this one " +
                        analysis.trace_hash + "): kernels are matched by id");
    if (matched == 0 && !analysis.kernels.empty())
        notes.push_back(path +
                        ": no kernel of this trace has a time there (another trace, or a report "
                        "made with/without --et or --shapes?): every duration is the recorded one");
    return source;
}

// Kernels that a timing model covers (its family, swept fields masked) get the model's time for
// their recipe; the notes name each one.
std::size_t apply_model(const Analysis& analysis, const std::string& path,
                        std::vector<Nanos>& durations, std::vector<std::string>& notes) {
    const TimingModelFile models = read_timing_model(path);
    std::size_t modelled = 0, companions = 0;
    for (const auto& kernel : analysis.kernels) {
        const KernelTimingModel* model = models.find(kernel.recipe);
        if (model == nullptr || !kernel.recipe.replayable()) continue;
        if (kernel.recipe.issued_with_op) {
            // A split-K reduction: the model times its GEMM's whole issue, which runs it.
            for (auto n : kernel.nodes) durations[n] = 0;
            ++companions;
            continue;
        }
        const auto predicted = model->predict(kernel.recipe);
        if (!predicted) {
            notes.push_back(path + ": " + kernel.id + " " + recipe_short_name(kernel.recipe) +
                            ": the model of kernel " + model->kernel_id +
                            " needs a dim this recipe lacks; it keeps its recorded duration");
            continue;
        }
        const double us = *predicted;
        for (auto n : kernel.nodes) durations[n] = to_nanos(us);
        ++modelled;
        char line[512];
        std::snprintf(line, sizeof line,
                      "modelled by %s: %s %s x%zu: %.3f us (recorded median %.3f us; model %s of "
                      "kernel %s, held-out median error %.1f%%)",
                      path.c_str(), kernel.id.c_str(), recipe_short_name(kernel.recipe).c_str(),
                      kernel.nodes.size(), us, kernel.recorded_us.median, model->kind.c_str(),
                      model->kernel_id.c_str(), model->error().median_pct);
        notes.emplace_back(line);
    }
    if (companions > 0)
        notes.push_back(path + ": " + std::to_string(companions) +
                        " unique kernels issued with a modelled GEMM (split-K reductions) take 0 us: the "
                        "model's time is their GEMM's whole issue");
    notes.push_back(path + ": " + std::to_string(modelled) + " of " +
                    std::to_string(analysis.kernels.size()) +
                    " unique kernels timed by the model; the others keep their " +
                    "recorded (or --times) duration");
    return modelled;
}

std::size_t apply_scale(const Analysis& analysis, const std::vector<ScaleRule>& rules,
                        std::vector<Nanos>& durations) {
    const Trace& trace = analysis.trace();
    const auto& nodes = analysis.graph.nodes();
    std::vector<std::unordered_map<NameId, bool>> name_matches(rules.size());
    std::size_t scaled = 0;
    for (std::uint32_t n = 0; n < nodes.size(); ++n) {
        double factor = 1;
        bool any = false;
        for (std::size_t r = 0; r < rules.size(); ++r) {
            const ScaleRule& rule = rules[r];
            bool match = false;
            if (rule.tier) {
                match = tier_of(analysis, n) == *rule.tier;
            } else {
                const NameId name = analysis.graph.activity(nodes[n]).name;
                auto [it, inserted] = name_matches[r].emplace(name, false);
                if (inserted)
                    it->second = std::regex_search(std::string(trace.names.view(name)), rule.name);
                match = it->second;
            }
            if (match) {
                factor *= rule.factor;
                any = true;
            }
        }
        if (!any) continue;
        durations[n] = static_cast<Nanos>(std::llround(static_cast<double>(durations[n]) * factor));
        ++scaled;
    }
    return scaled;
}

Nanos sum(const std::vector<Nanos>& v) {
    Nanos total = 0;
    for (auto x : v) total += x;
    return total;
}

}  // namespace

ScaleRule parse_scale_rule(std::string_view text) {
    const auto bad = [&](const std::string& why) {
        return std::invalid_argument("--scale " + std::string(text) + ": " + why +
                                     " (expected TIER=FACTOR with TIER 1-4, tier1-tier4, copy, "
                                     "gemm, aten or collective, or name~REGEX=FACTOR)");
    };
    const auto eq = text.rfind('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size()) throw bad("no =FACTOR");
    ScaleRule rule;
    rule.text = std::string(text);
    const std::string factor(text.substr(eq + 1));
    char* end = nullptr;
    rule.factor = std::strtod(factor.c_str(), &end);
    if (end == factor.c_str() || *end != '\0' || !std::isfinite(rule.factor) || rule.factor < 0)
        throw bad("the factor is not a number >= 0");
    const std::string_view what = text.substr(0, eq);
    if (what.starts_with("name~")) {
        if (what.size() == 5) throw bad("empty regular expression");
        try {
            rule.name = std::regex(std::string(what.substr(5)));
        } catch (const std::regex_error& e) {
            throw bad(std::string("not a regular expression: ") + e.what());
        }
        return rule;
    }
    rule.tier = tier_named(what);
    if (!rule.tier) throw bad("unknown tier");
    return rule;
}

const ScenarioResult& StepPrediction::primary() const {
    for (const auto& s : scenarios)
        if (s.what_if && !s.overhead_removed) return s;
    return scenarios.front();
}

StepPrediction predict_step(const Analysis& analysis, const PredictOptions& options,
                            const Trace* host_reference) {
    StepPrediction out;
    out.trace = analysis.trace().source;
    out.trace_hash = analysis.trace_hash;
    out.options = options;
    out.streams = analysis.graph.streams().size();
    const StepSimulator simulator(analysis.graph);
    out.parameters = simulator.estimates();
    if (!std::isnan(options.op_overhead_us)) {
        out.parameters.op_overhead = to_nanos(options.op_overhead_us);
        out.parameters.op_overhead_calibrated = true;
    }

    const auto& nodes = analysis.graph.nodes();
    std::vector<Nanos> recorded(nodes.size());
    for (std::size_t n = 0; n < nodes.size(); ++n)
        recorded[n] = analysis.graph.activity(nodes[n]).dur;
    out.recorded_gpu_time = sum(recorded);

    const auto run = [&](std::string name, const Scenario& scenario, bool what_if) {
        ScenarioResult r;
        r.name = std::move(name);
        r.what_if = what_if;
        r.overhead_removed = scenario.remove_op_overhead;
        r.prediction = simulator.run(scenario, out.parameters);
        out.scenarios.push_back(std::move(r));
    };
    Scenario base;
    run("recorded", base, false);
    base.remove_op_overhead = true;
    run("recorded, profiler overhead removed", base, false);

    out.what_if_gpu_time = out.recorded_gpu_time;
    if (options.what_if()) {
        Scenario what_if;
        what_if.gpu_durations = recorded;
        // Measured times (--times) override modelled ones: the model is for kernels not run.
        if (!options.model_path.empty())
            out.modelled_kernels =
                apply_model(analysis, options.model_path, what_if.gpu_durations, out.notes);
        if (!options.times_path.empty())
            out.times = apply_report(analysis, read_report_json(options.times_path),
                                     options.times_path, what_if.gpu_durations, out.notes);
        out.scaled_activities = apply_scale(analysis, options.scale, what_if.gpu_durations);
        if (!std::isnan(options.launch_us)) what_if.launch_call = to_nanos(options.launch_us);
        if (!options.host_reference_path.empty()) {
            if (host_reference == nullptr)
                throw std::invalid_argument("predict_step: --host-reference without its trace");
            out.host = estimate_host_scale(analysis.trace(), *host_reference,
                                           options.host_reference_path);
            what_if.cpu_scale = out.host->scale;
        }
        out.what_if_gpu_time = sum(what_if.gpu_durations);
        run("what-if", what_if, true);
        what_if.remove_op_overhead = true;
        run("what-if, profiler overhead removed", what_if, true);
    }

    const SimulationStats& s = out.scenarios.front().prediction.stats;
    if (s.dropped_dependencies > 0)
        out.notes.push_back(std::to_string(s.dropped_dependencies) +
                            " dependencies contradicted the recorded times (a sync waiting on "
                            "work launched after it: clocks apart?) and were dropped");
    if (s.syncs_without_target > 0)
        out.notes.push_back(std::to_string(s.syncs_without_target) +
                            " host synchronisations returned before the GPU work they seem to "
                            "wait for ended; they keep their recorded duration");
    if (s.unlinked_activities > 0)
        out.notes.push_back(std::to_string(s.unlinked_activities) +
                            " GPU activities have no launch in the trace: they start no earlier "
                            "than recorded");
    if (out.parameters.launch_latency_samples == 0 && s.kernel_launch_calls > 0)
        out.notes.push_back(
            "no kernel was launched onto an idle stream (the GPU was always "
            "behind): the launch latency is taken as 0");
    if (out.parameters.launch_latency < 0)
        out.notes.push_back(
            "kernels start before their launch calls in this trace (the GPU and "
            "CPU clocks disagree): the launch latency estimate absorbs the offset");
    if (out.parameters.op_overhead == 0 && !out.parameters.op_overhead_calibrated)
        out.notes.push_back(
            "too few leaf ops to estimate the profiler overhead: none is removed "
            "(give --op-overhead-us)");
    return out;
}

}  // namespace replay
