// The energy figures of a report derived from what the drivers measured (report.h:
// finalize_energy), and the real model's step joined to them.
#include "replay/report_energy.h"

#include <cmath>

namespace replay {
namespace {

double pct_of(double x, double reference) {
    return std::isfinite(x) && std::isfinite(reference) && reference > 0
               ? (x - reference) / reference * 100.0
               : NAN;
}

// Static energy of a step: the idle power over its time (W x us = uJ).
void split_static(StepEnergy& step) {
    if (!step.measured() || !std::isfinite(step.idle_power_w) || !std::isfinite(step.step_us)) {
        step.static_mj = step.dynamic_mj = NAN;
        return;
    }
    step.static_mj = step.idle_power_w * step.step_us / 1000.0;
    step.dynamic_mj = step.mj - step.static_mj;
}

// A dynamic energy put on a reference step's footing: plus this run's idle power over the
// reference's duration, against the reference's whole energy; the difference also as watts over
// that duration. NaN where a figure is missing.
void at_reference(double dynamic_mj, const StepEnergy& reference, double idle_w, double& mj,
                  double& vs_pct, double& diff_w) {
    mj = vs_pct = diff_w = NAN;
    if (!std::isfinite(dynamic_mj) || !reference.measured() || !std::isfinite(idle_w) ||
        !(reference.step_us > 0))
        return;
    mj = dynamic_mj + idle_w * reference.step_us / 1000.0;
    vs_pct = pct_of(mj, reference.mj);
    diff_w = (mj - reference.mj) / reference.step_us * 1000.0;  // mJ / us = kW
}

void finalize_kernel(KernelResult& k) {
    KernelEnergy& e = k.energy;
    e.power_w = e.edp_uj_us = e.pj_per_flop = NAN;
    if (!e.measured()) {
        e.uj = {};
        return;
    }
    e.uj = summarize(e.samples_uj);
    const double us = k.replayed_us.count > 0 ? k.replayed_us.median : NAN;
    if (us > 0) e.edp_uj_us = e.uj.median * us;
    // The loop's own power where it was read: energy / replayed median assumes the loop ran
    // at the timed speed with idle gaps, and reads above the board's limit for a capped kernel
    // (slower in the loop) or a host-issued one (its gaps above idle count as its own).
    if (std::isfinite(e.loop_power_w))
        e.power_w = e.loop_power_w;
    else if (us > 0)
        e.power_w = e.uj.median / us;  // uJ / us = W
    if (e.flops > 0) e.pj_per_flop = e.uj.median * 1e6 / e.flops;
}

}  // namespace

void finalize_energy(Report& r) {
    ReportEnergy& e = r.energy;
    double all_recorded = 0, measured_recorded = 0, total = 0, dynamic = 0;
    bool any = false;
    for (auto& k : r.kernels) {
        finalize_kernel(k);
        all_recorded += k.recorded_us.sum;
        if (!k.energy.measured()) continue;
        any = true;
        const double n = static_cast<double>(k.count);
        measured_recorded += k.recorded_us.sum;
        total += n * k.energy.uj.median / 1000.0;
        if (std::isfinite(k.energy.dynamic_uj)) dynamic += n * k.energy.dynamic_uj / 1000.0;
    }
    for (auto& t : r.tiers) {
        t.energy_mj = t.dynamic_energy_mj = NAN;
        for (const auto& k : r.kernels) {
            if (k.tier != t.tier || !k.energy.measured()) continue;
            const double n = static_cast<double>(k.count);
            t.energy_mj =
                (std::isfinite(t.energy_mj) ? t.energy_mj : 0) + n * k.energy.uj.median / 1000.0;
            if (std::isfinite(k.energy.dynamic_uj))
                t.dynamic_energy_mj =
                    (std::isfinite(t.dynamic_energy_mj) ? t.dynamic_energy_mj : 0) +
                    n * k.energy.dynamic_uj / 1000.0;
        }
    }
    const bool predicted = any && r.mode == "unique";
    e.predicted_mj = predicted ? total : NAN;
    e.predicted_dynamic_mj = predicted ? dynamic : NAN;
    e.coverage = predicted && all_recorded > 0 ? measured_recorded / all_recorded : NAN;

    if (!e.step.samples_mj.empty()) e.step.mj = stats::median(e.step.samples_mj);
    const double idle = e.probe.idle_power_w;
    e.step.idle_power_w = e.probe.idle_power_w;
    split_static(e.step);
    split_static(e.model);
    e.predicted_vs_step_pct = pct_of(e.predicted_dynamic_mj, e.step.dynamic_mj);
    e.step_vs_model_pct = pct_of(e.step.mj, e.model.mj);
    e.step_vs_model_dynamic_pct = pct_of(e.step.dynamic_mj, e.model.dynamic_mj);
    e.predicted_vs_model_pct = pct_of(e.predicted_dynamic_mj, e.model.dynamic_mj);
    at_reference(e.predicted_dynamic_mj, e.step, idle, e.predicted_at_step_mj,
                 e.predicted_at_step_vs_step_pct, e.predicted_at_step_w);
    at_reference(e.step.dynamic_mj, e.model, idle, e.step_at_model_mj,
                 e.step_at_model_vs_model_pct, e.step_at_model_w);
    double unused_w = NAN;
    at_reference(e.predicted_dynamic_mj, e.model, idle, e.predicted_at_model_mj,
                 e.predicted_at_model_vs_model_pct, unused_w);
    e.model_dynamic_same_idle_mj =
        e.model.measured() ? e.model.mj - idle * e.model.step_us / 1000.0 : NAN;
    e.step_vs_model_dynamic_same_idle_pct = pct_of(e.step.dynamic_mj, e.model_dynamic_same_idle_mj);
}

void add_model_energy(Report& r, const ModelTiming& timing) {
    ReportEnergy& e = r.energy;
    e.model = timing.energy;
    if (!timing.energy.measured()) {
        e.notes.push_back(
            "the real step's energy is n/a: " + timing.energy.source + " has none (" +
            (timing.why_no_energy.empty() ? "no energy fields" : timing.why_no_energy) + ")");
    } else if (const std::string gpu = r.env("gpu");
               !timing.energy.gpu.empty() && gpu != timing.energy.gpu) {
        e.notes.push_back("the real step was measured on " + timing.energy.gpu +
                          ", this replay ran on " + (gpu.empty() ? "an unknown device" : gpu) +
                          ": its energy is another GPU's");
    }
    finalize_energy(r);
}

}  // namespace replay
