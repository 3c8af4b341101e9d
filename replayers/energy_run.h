// What a driver with --energy holds for the whole run (internal to replayers/): the backend's
// meter probed before any work, the window length chosen from that probe, and the background
// power sampler. Without a meter every figure stays n/a with the reason in report.energy.
#pragma once

#include <memory>

#include "replay/drivers.h"
#include "replay/energy.h"

namespace replay::detail {

class EnergyRun {
  public:
    // Opens and probes the meter; fills `energy` (requested, the probe or why not).
    EnergyRun(Backend& backend, const DriverOptions& options, ReportEnergy& energy);
    ~EnergyRun();
    EnergyRun(const EnergyRun&) = delete;
    EnergyRun& operator=(const EnergyRun&) = delete;

    bool available() const { return meter_ != nullptr && probe_.available; }
    const EnergyProbe& probe() const { return probe_; }
    WindowRun windows(const std::function<double()>& issue_some,
                      const std::function<void()>& drain) const;
    // One window at a time, `between(w)` before each window w > 0 (run_windows_apart).
    WindowRun windows_apart(const std::function<double()>& issue_some,
                            const std::function<void()>& drain,
                            const std::function<void(int)>& between) const;
    // The meter's clock now (for aligning power samples with replayed work); NaN without one.
    double now_s() const;
    // Stops the sampler; its readings, and their summary into `energy`.
    std::vector<MeterReading> finish(ReportEnergy& energy);

  private:
    Backend& backend_;  // submit()s each batch of the windows' work
    std::unique_ptr<EnergyMeter> meter_;
    EnergyProbe probe_;
    int windows_ = 0, updates_ = 0;
    std::unique_ptr<PowerSampler> sampler_;
};

// Fills a report's copy of the run's settings (several reports can share one run).
void describe_energy_run(const EnergyRun& run, const DriverOptions& options, ReportEnergy& energy);

// The whole step looped back to back through the windows: `issue_some` issues part of a step and
// returns the fraction of a step it issued.
void measure_step_energy(const EnergyRun& run, const std::function<double()>& issue_some,
                         const std::function<void()>& drain, ReportEnergy& energy);

// The step's L2 warm-up reads alone, looped through the windows (`issue_some` as above): their
// dynamic energy per step goes to energy.step.warm_read_mj and out of its samples, which
// measure_step_energy filled first. The recording had no such reads: they stand for cache
// state that cost it nothing.
void take_out_warm_read_energy(const EnergyRun& run, const std::function<double()>& issue_some,
                               const std::function<void()>& drain, ReportEnergy& energy);

// Sequential mode; `energy`, when given, measures the step looped through its windows, and
// `last_iteration_s` receives the meter's clock when the last timed iteration started.
Report replay_sequential(const Analysis& analysis, Backend& backend, const DriverOptions& options,
                         Timeline* timeline, const EnergyRun* energy, double* last_iteration_s);

}  // namespace replay::detail
