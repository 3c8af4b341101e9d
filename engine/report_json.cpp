#include "replay/report_json.h"

#include <algorithm>
#include <cmath>
#include <ostream>

#include "replay/json_writer.h"
#include "replay/recipe_json.h"

namespace replay {
namespace {

void write_pairs(JsonWriter& json, std::string_view name,
                 const std::vector<std::pair<std::string, std::string>>& pairs) {
    json.key(name).begin_object();
    for (const auto& [k, v] : pairs) json.field(k, v);
    json.end_object();
}

// Written only where a sample splits in two (stats::two_groups()).
void write_groups(JsonWriter& json, std::string_view name, const std::vector<ValueGroup>& groups) {
    if (groups.empty()) return;
    json.objects(name, groups, [&](const ValueGroup& g) {
        json.field("median_us", g.median).field("count", static_cast<std::uint64_t>(g.count));
    });
}

void write_kernel_energy(JsonWriter& json, const KernelEnergy& e) {
    json.key("energy").begin_object();
    json.array("samples_uj", e.samples_uj);
    json.key("uj");
    write_duration_stats(json, e.uj);
    json.field("dynamic_uj", e.dynamic_uj).field("launches", e.launches);
    json.field("power_w", e.power_w).field("edp_uj_us", e.edp_uj_us);
    json.field("flops", e.flops).field("pj_per_flop", e.pj_per_flop);
    json.field("limited_windows", e.limited_windows).field("limited_by", e.limited_by);
    json.field("loop_us", e.loop_us).field("loop_power_w", e.loop_power_w);
    json.field("sm_clock_mhz", e.sm_clock_mhz).field("temperature_c", e.temperature_c);
    json.field("why", e.measured() ? std::string() : e.why);
    json.end_object();
}

void write_step_energy(JsonWriter& json, std::string_view name, const StepEnergy& s) {
    json.key(name).begin_object();
    json.array("samples_mj", s.samples_mj);
    json.field("mj", s.mj).field("dynamic_mj", s.dynamic_mj).field("static_mj", s.static_mj);
    json.field("step_us", s.step_us).field("power_w", s.power_w);
    json.field("idle_power_w", s.idle_power_w).field("steps", s.steps);
    json.field("warm_read_mj", s.warm_read_mj);
    json.field("limited_windows", s.limited_windows).field("limited_by", s.limited_by);
    json.field("sm_clock_mhz", s.sm_clock_mhz).field("temperature_c", s.temperature_c);
    json.field("source", s.source).field("gpu", s.gpu);
    json.end_object();
}

void write_energy(JsonWriter& json, const ReportEnergy& e) {
    json.key("energy").begin_object();
    const EnergyProbe& p = e.probe;
    json.field("available", p.available).field("why", p.available ? std::string() : p.why);
    json.field("method", p.method);
    json.field("counter_period_ms", p.counter_period_ms);
    json.field("counter_jitter_ms", p.counter_jitter_ms);
    json.field("counter_read_ms", p.counter_read_ms);
    json.field("counter_step_mj", p.counter_step_mj);
    json.field("counter_changes", static_cast<std::uint64_t>(p.counter_changes));
    json.field("power_period_ms", p.power_period_ms);
    json.field("idle_power_w", p.idle_power_w).field("idle_window_ms", p.idle_window_ms);
    json.field("power_limit_w", p.power_limit_w);
    json.field("window_ms", e.window_ms);
    json.field("window_updates", static_cast<std::int64_t>(e.window_updates));
    json.field("windows", static_cast<std::int64_t>(e.windows));
    json.field("window_rule", e.window_rule).field("min_us", e.min_us);
    json.key("power_w");
    write_duration_stats(json, e.power_w);
    write_step_energy(json, "step", e.step);
    write_step_energy(json, "model", e.model);
    json.field("predicted_mj", e.predicted_mj);
    json.field("predicted_dynamic_mj", e.predicted_dynamic_mj).field("coverage", e.coverage);
    json.field("predicted_vs_step_pct", e.predicted_vs_step_pct);
    json.field("step_vs_model_pct", e.step_vs_model_pct);
    json.field("step_vs_model_dynamic_pct", e.step_vs_model_dynamic_pct);
    json.field("predicted_vs_model_pct", e.predicted_vs_model_pct);
    json.field("predicted_at_step_mj", e.predicted_at_step_mj);
    json.field("predicted_at_step_vs_step_pct", e.predicted_at_step_vs_step_pct);
    json.field("predicted_at_step_w", e.predicted_at_step_w);
    json.field("step_at_model_mj", e.step_at_model_mj);
    json.field("step_at_model_vs_model_pct", e.step_at_model_vs_model_pct);
    json.field("step_at_model_w", e.step_at_model_w);
    json.field("predicted_at_model_mj", e.predicted_at_model_mj);
    json.field("predicted_at_model_vs_model_pct", e.predicted_at_model_vs_model_pct);
    json.field("model_dynamic_same_idle_mj", e.model_dynamic_same_idle_mj);
    json.field("step_vs_model_dynamic_same_idle_pct", e.step_vs_model_dynamic_same_idle_pct);
    json.array("notes", e.notes);
    json.end_object();
}

void write_figures(JsonWriter& json, const TimelineFigures& f) {
    for (const auto& field : timeline_figures_fields()) json.field(field.name, f.*field.member);
    json.field("activities", static_cast<std::uint64_t>(f.activities));
    json.field("gaps", static_cast<std::uint64_t>(f.gaps));
}

void write_timeline(JsonWriter& json, const ReportTimeline& t) {
    json.key("timeline").begin_object();
    json.field("issue_path", t.issue_path);
    json.key("recorded").begin_object();
    write_figures(json, t.recorded);
    json.end_object();
    json.objects("iterations", t.iterations, [&](const IterationResult& i) {
        json.field("iteration", i.iteration);
        write_figures(json, i.replayed);
        for (const auto& field : iteration_fields()) json.field(field.name, i.*field.member);
        json.field("unattributed", static_cast<std::uint64_t>(i.unattributed));
    });
    json.field("first_to_last_max_gap", t.first_to_last_max_gap);
    json.array("first_uses", t.first_uses);
    json.end_object();
}

}  // namespace

const std::vector<TotalsField>& totals_fields() {
    using T = ReportTotals;
    using R = NumberRange;
    static const std::vector<TotalsField> fields = {
        {"recorded_kernel_us", &T::recorded_kernel_us, R::Sum, true},
        {"recipe_coverage", &T::recipe_coverage, R::Share, true},
        {"replayed_coverage", &T::replayed_coverage, R::Share, true},
        {"replayed_kernel_us", &T::replayed_kernel_us, R::Sum, true},
        {"replayed_recorded_us", &T::replayed_recorded_us, R::Sum, true},
        {"total_error_pct", &T::total_error_pct, R::Signed, true},
        {"median_abs_error_pct", &T::median_abs_error_pct, R::NonNegative, true},
        {"median_abs_error_pct_per_launch", &T::median_abs_error_pct_per_launch, R::NonNegative,
         false},
        {"weighted_abs_error_pct", &T::weighted_abs_error_pct, R::NonNegative, false},
        {"gemm_name_match", &T::gemm_name_match, R::ShareOrNull, true},
        {"predicted_total_us", &T::predicted_total_us, R::NonNegative, true},
        {"sequential_kernel_us", &T::sequential_kernel_us, R::NonNegative, true},
        {"recorded_span_us", &T::recorded_span_us, R::NonNegative, false},
        {"replayed_span_us", &T::replayed_span_us, R::NonNegative, false},
        {"span_ratio", &T::span_ratio, R::NonNegative, false},
        {"wall_seconds", &T::wall_seconds, R::Sum, true},
    };
    return fields;
}

const std::vector<FiguresField>& timeline_figures_fields() {
    using F = TimelineFigures;
    static const std::vector<FiguresField> fields = {
        {"span_us", &F::span_us},
        {"kernel_us", &F::kernel_us},
        {"warm_read_us", &F::warm_read_us},
        {"median_gap_us", &F::median_gap_us},
        {"max_gap_us", &F::max_gap_us},
        {"median_kernel_gap_us", &F::median_kernel_gap_us, false},
    };
    return fields;
}

const std::vector<IterationField>& iteration_fields() {
    using I = IterationResult;
    static const std::vector<IterationField> fields = {
        {"span_ratio", &I::span_ratio},
        {"stretch", &I::stretch},
        {"median_gap_ratio", &I::median_gap_ratio},
        {"kernel_gap_ratio", &I::kernel_gap_ratio, false},
        {"issue_host_us", &I::issue_host_us},
    };
    return fields;
}

void write_kernel_identity(JsonWriter& json, const std::string& id, const std::string& name,
                           const std::string& kind, Tier tier) {
    json.field("id", id).field("name", name).field("kind", kind);
    write_tier(json, tier);
}

void write_tier_and_label(JsonWriter& json, Tier tier) {
    write_tier(json, tier);
    json.field("label", tier_label(tier));
}

void write_report_json(std::ostream& out, const Report& r) {
    JsonWriter json(out);
    json.begin_object();
    json.field("schema", r.schema).field("tool_version", r.tool_version);
    json.field("mode", r.mode).field("backend", r.backend);
    write_pairs(json, "environment", r.environment);
    write_pairs(json, "inputs", r.inputs);
    write_pairs(json, "options", r.options);

    json.key("totals").begin_object();
    for (const auto& f : totals_fields()) json.field(f.name, r.totals.*f.member);
    json.end_object();

    json.objects("tiers", r.tiers, [&](const TierResult& tr) {
        write_tier_and_label(json, tr.tier);
        json.field("unique", static_cast<std::uint64_t>(tr.unique));
        json.field("activities", static_cast<std::uint64_t>(tr.activities));
        json.field("recorded_us", tr.recorded_us).field("replayed_us", tr.replayed_us);
        json.field("replayed_recorded_us", tr.replayed_recorded_us);
        if (r.energy.requested)
            json.field("energy_mj", tr.energy_mj).field("dynamic_energy_mj", tr.dynamic_energy_mj);
    });
    json.objects("kernels", r.kernels, [&](const KernelResult& k) {
        write_kernel_identity(json, k.id, k.name, k.kind, k.tier);
        json.field("rule", k.rule).field("disposition", to_string(k.outcome));
        json.field("reason", k.reason);
        json.field("count", static_cast<std::uint64_t>(k.count));
        json.key("recorded_us");
        write_duration_stats(json, k.recorded_us);
        json.key("replayed_us");
        write_duration_stats(json, k.replayed_us);
        json.array("samples_us", k.samples_us);
        write_groups(json, "recorded_groups", k.recorded_groups);
        write_groups(json, "replayed_groups", k.replayed_groups);
        json.field("error_pct", k.error_pct);
        json.array("replayed_names", k.replayed_names);
        json.field("name_match", k.name_match);
        if (!k.replayed_grids.empty()) {
            json.key("replayed_grids").begin_array();
            for (const auto& g : k.replayed_grids) {
                json.begin_array();
                for (std::int32_t d : g) json.value(static_cast<std::int64_t>(d));
                json.end_array();
            }
            json.end_array();
        }
        json.field("gflops_per_s", k.gflops_per_s).field("gb_per_s", k.gb_per_s);
        json.field("flops", k.flops).field("bytes", k.bytes);
        json.field("flop_dtype", to_string(k.flop_dtype));
        json.field("pct_peak_flops", k.pct_peak_flops);
        json.field("pct_peak_bandwidth", k.pct_peak_bandwidth);
        if (r.energy.requested) write_kernel_energy(json, k.energy);
    });
    if (r.energy.requested) write_energy(json, r.energy);
    json.array("notes", r.notes);
    if (r.timeline) write_timeline(json, *r.timeline);
    json.end_object();
    out << '\n';
}

}  // namespace replay
