// Energy measured on the device (--energy): the board's energy counter and power reading behind
// one interface (the CUDA backend's NVML, a test's simulated board), what a run measures before it
// starts (how often the readings change, the idle power), a background power sampler, and windows
// of work back to back between changes of the counter. Drivers: unique.cpp, sequential.cpp.
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "replay/report.h"

namespace replay {

struct MeterReading {
    double value = 0;  // energy: millijoules since some origin; power: watts
    double t_s = 0;    // when it was read, seconds on the meter's steady clock
};

struct BoardState {
    double sm_clock_mhz = NAN;
    double temperature_c = NAN;
};

// Implementations must allow power() from the sampler thread while the driver calls energy().
class EnergyMeter {
  public:
    virtual ~EnergyMeter() = default;
    virtual std::string method() const = 0;  // "nvmlDeviceGetTotalEnergyConsumption"
    virtual std::optional<MeterReading> energy() = 0;
    virtual std::optional<MeterReading> power() = 0;
    virtual double power_limit_w() const = 0;  // NaN when unknown
    // What holds the board's clocks below what they would be now (ClockLimit bits, 0: nothing),
    // or nullopt where the meter cannot tell. A window of back-to-back launches of a hungry
    // kernel can reach the board's power limit, where the clocks drop and its energy per launch
    // is the controller's, not the kernel's as the recorded step ran it.
    virtual std::optional<std::uint32_t> clock_limits() { return std::nullopt; }
    // The SM clock and the die's temperature now (NaN for what the meter cannot read), or
    // nullopt for neither. A kernel's energy per launch moves with both (voltage follows the
    // clock, leakage the heat) while its time may not: a memory-bound kernel runs as fast at a
    // lower clock. Each window reports their means, so that two runs can be told apart.
    virtual std::optional<BoardState> board_state() { return std::nullopt; }
};

// The bits of EnergyMeter::clock_limits().
enum ClockLimit : std::uint32_t {
    kClockPowerCap = 1,   // the board's power limit (software power cap)
    kClockThermal = 2,    // thermal slowdown (software or hardware)
    kClockHardware = 4,   // hardware slowdown or power brake
};

// How long the probe watches the readings: enough changes for a median period and an idle power
// that the counter's resolution does not limit.
struct ProbeOptions {
    int counter_changes = 12;
    double timeout_s = 5;  // no change in this long: the counter does not work here
};

// Watches the idle board: the counter's and the power reading's periods, the read cost, the
// smallest counter step and the idle power (counter over whole periods). Not available() with
// `why` when the counter does not change.
EnergyProbe probe_energy(EnergyMeter& meter, const ProbeOptions& options = {});

// The fewest counter periods a window spans, whatever --energy-window asks for.
inline constexpr int kMinWindowPeriods = 4;

// The window's length in counter changes: `window_ms` rounded up to whole counter periods, or, for
// 0, the fewest periods whose timing uncertainty (jitter plus a read, at each end) is below 1% of
// the window; never fewer than kMinWindowPeriods (`rule` says when it was raised).
int updates_per_window(const EnergyProbe& probe, double window_ms, std::string& rule);

struct EnergyWindow {
    double mj = 0;       // counter change over the window
    double seconds = 0;  // between the two changes that bound it
    std::uint32_t clock_limits = 0;  // ClockLimit bits seen at any read inside the window
    // Means over the reads inside the window (NaN where the meter cannot tell).
    double sm_clock_mhz = NAN;
    double temperature_c = NAN;
    // The time one unit took in this window's own run (run_windows_apart); NaN: the run's.
    double seconds_per_unit = NAN;
    double power_w() const { return seconds > 0 ? mj / seconds / 1000.0 : NAN; }
};

struct WindowRun {
    std::vector<EnergyWindow> windows;
    double units = 0;         // work issued (launches, steps)
    double busy_seconds = 0;  // from the first issue until the device drained
    std::string failure;      // non-empty: the counter stopped changing, no windows
    double seconds_per_unit() const { return units > 0 ? busy_seconds / units : NAN; }
};

// Keeps the device busy with `issue_some` (issues a little work, returns how many units) from
// before the first change of the counter until `windows` x `updates` changes later, so that each
// window holds the work's steady power only; then `drain` waits for the device.
WindowRun run_windows(EnergyMeter& meter, const EnergyProbe& probe, int windows, int updates,
                      const std::function<double()>& issue_some,
                      const std::function<void()>& drain);

// The same, one window at a time: `between(w)` runs before each window w > 0 (outside every
// window: the work may change, e.g. move to other addresses), and each window keeps its own time
// per unit. Windows measured before a failure are kept, with the failure.
WindowRun run_windows_apart(EnergyMeter& meter, const EnergyProbe& probe, int windows, int updates,
                            const std::function<double()>& issue_some,
                            const std::function<void()>& drain,
                            const std::function<void(int)>& between);

// How many of the run's windows had their clocks held down, and by what ("power cap",
// "power cap, thermal slowdown", ...; "" for none).
struct ClockLimitCount {
    int windows = 0;
    std::string by;
};
ClockLimitCount count_clock_limits(const WindowRun& run);

// The median over the run's windows of their mean SM clock and temperature (NaN where none read).
BoardState median_board_state(const WindowRun& run);

// The dynamic energy (above the idle power) per unit of work of each window, microjoules: the
// window's power less the idle power, over the time one unit took back to back.
std::vector<double> dynamic_uj_per_unit(const WindowRun& run, double idle_power_w);

// Reads the power in a background thread every `period_s` until stopped (RAII: the destructor
// stops it). Samples' times are on the meter's clock.
class PowerSampler {
  public:
    PowerSampler(EnergyMeter& meter, double period_s);
    ~PowerSampler();
    PowerSampler(const PowerSampler&) = delete;
    PowerSampler& operator=(const PowerSampler&) = delete;
    std::vector<MeterReading> stop();  // the samples so far; the thread ends

  private:
    EnergyMeter& meter_;
    double period_s_;
    std::atomic<bool> stop_{false};
    std::mutex mutex_;
    std::vector<MeterReading> samples_;
    std::thread thread_;
};

}  // namespace replay
