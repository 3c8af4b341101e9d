#include "energy_run.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>

#include "replay/stats.h"

namespace replay::detail {

EnergyRun::EnergyRun(Backend& backend, const DriverOptions& options, ReportEnergy& energy)
    : backend_(backend) {
    std::string why;
    meter_ = backend.energy_meter(why);
    if (!meter_) {
        probe_.why = why;
    } else {
        if (options.progress) options.progress("energy: probing the idle board's counters");
        probe_ = probe_energy(*meter_);
    }
    if (available()) {
        std::string rule;
        updates_ = updates_per_window(probe_, options.energy_window_ms, rule);
        windows_ = std::max(1, options.energy_windows);
        const double period_ms = std::isfinite(probe_.power_period_ms) ? probe_.power_period_ms
                                                                       : probe_.counter_period_ms;
        sampler_ = std::make_unique<PowerSampler>(*meter_, period_ms / 1000.0);
    }
    describe_energy_run(*this, options, energy);
}

EnergyRun::~EnergyRun() = default;

void describe_energy_run(const EnergyRun& run, const DriverOptions& options, ReportEnergy& e) {
    e.requested = true;
    e.probe = run.probe();
    e.min_us = options.energy_min_us;
    if (!run.available()) return;
    std::string rule;
    e.window_updates = updates_per_window(run.probe(), options.energy_window_ms, rule);
    e.window_rule = rule;
    e.window_ms = e.window_updates * run.probe().counter_period_ms;
    e.windows = std::max(1, options.energy_windows);
}

namespace {

// Nothing is recorded while a loop runs: nobody reads the loops' timings, and recording them
// cost the device time that varied from one process to the next. On the H200, CUPTI's records of
// GPT-2's graph-launched 5-12 us kernels (some 100,000 a second) stretched six loops to 1.5-3.2x
// the kernels' replayed time instead of 1.1-1.5x, and their joules per launch differed by up to
// 24% between three processes; with recording off, by 0.3-2.8%.
class RecordingOff {
  public:
    explicit RecordingOff(Backend& backend) : backend_(backend) { backend_.set_recording(false); }
    ~RecordingOff() {
        try {
            backend_.set_recording(true);
        } catch (const std::exception&) {
            // Not thrown from a destructor: the timings after it then come back without
            // records, and each kernel fails with that reason.
        }
    }
    RecordingOff(const RecordingOff&) = delete;
    RecordingOff& operator=(const RecordingOff&) = delete;

  private:
    Backend& backend_;
};

}  // namespace

WindowRun EnergyRun::windows(const std::function<double()>& issue_some,
                             const std::function<void()>& drain) const {
    const RecordingOff off(backend_);
    // Each batch goes to the device before the counter is read: a backend that batches its
    // calls (the worker's, 16 KiB at a time) would otherwise hold hundreds of launches through
    // a read of 2.3 ms, and the device would idle in the windows between bursts.
    return run_windows(
        *meter_, probe_, windows_, updates_,
        [&] {
            const double units = issue_some();
            backend_.submit();
            return units;
        },
        drain);
}

WindowRun EnergyRun::windows_apart(const std::function<double()>& issue_some,
                                   const std::function<void()>& drain,
                                   const std::function<void(int)>& between) const {
    const RecordingOff off(backend_);
    return run_windows_apart(
        *meter_, probe_, windows_, updates_,
        [&] {
            const double units = issue_some();
            backend_.submit();
            return units;
        },
        drain, between);
}

double EnergyRun::now_s() const {
    if (!meter_) return NAN;
    const auto r = meter_->energy();
    return r ? r->t_s : NAN;
}

std::vector<MeterReading> EnergyRun::finish(ReportEnergy& energy) {
    if (!sampler_) return {};
    auto samples = sampler_->stop();
    sampler_.reset();
    std::vector<double> watts;
    for (const auto& s : samples) watts.push_back(s.value);
    energy.power_w = summarize(watts);
    return samples;
}

void measure_step_energy(const EnergyRun& run, const std::function<double()>& issue_some,
                         const std::function<void()>& drain, ReportEnergy& energy) {
    StepEnergy& step = energy.step;
    if (!run.available()) return;
    const WindowRun w = run.windows(issue_some, drain);
    if (!w.failure.empty()) {
        energy.notes.push_back("the replayed step's energy is n/a: " + w.failure);
        return;
    }
    const double idle = run.probe().idle_power_w;
    step.samples_mj.clear();
    double watts = 0;
    for (double dyn : dynamic_uj_per_unit(w, idle)) {
        // The whole step's time is its own: static energy over the step back to back.
        step.samples_mj.push_back((dyn + idle * w.seconds_per_unit() * 1e6) / 1000.0);
    }
    for (const auto& win : w.windows)
        watts += win.power_w() / static_cast<double>(w.windows.size());
    step.step_us = w.seconds_per_unit() * 1e6;
    step.power_w = watts;
    step.steps = w.units;
    const ClockLimitCount limited = count_clock_limits(w);
    step.limited_windows = limited.windows;
    step.limited_by = limited.by;
    const BoardState board = median_board_state(w);
    step.sm_clock_mhz = board.sm_clock_mhz;
    step.temperature_c = board.temperature_c;
    if (limited.windows > 0)
        energy.notes.push_back("the looped step ran with the board's clocks held down (" +
                               limited.by + ") in " + std::to_string(limited.windows) + " of " +
                               std::to_string(w.windows.size()) + " windows");
}

void take_out_warm_read_energy(const EnergyRun& run, const std::function<double()>& issue_some,
                               const std::function<void()>& drain, ReportEnergy& energy) {
    StepEnergy& step = energy.step;
    if (!run.available() || step.samples_mj.empty()) return;
    const WindowRun w = run.windows(issue_some, drain);
    if (!w.failure.empty()) {
        energy.notes.push_back("the step's warm-up reads were not measured alone (" + w.failure +
                               "): the step's energy includes them");
        return;
    }
    const std::vector<double> reads = dynamic_uj_per_unit(w, run.probe().idle_power_w);
    if (reads.empty()) {
        energy.notes.push_back(
            "the step's warm-up reads were not measured alone (none ran): the step's energy "
            "includes them");
        return;
    }
    step.warm_read_mj = stats::median(reads) / 1000.0;
    for (double& s : step.samples_mj) s -= step.warm_read_mj;
    char line[256];
    std::snprintf(line, sizeof line,
                  "the step's L2 warm-up reads, looped alone (%.1f us per step), took %.2f mJ of "
                  "dynamic energy per step: left out of the step's energy, as the recording had "
                  "no such reads",
                  w.seconds_per_unit() * 1e6, step.warm_read_mj);
    energy.notes.push_back(line);
}

}  // namespace replay::detail
