// The measurements behind --energy (energy.h): the probe of the idle board, windows of work
// between changes of the energy counter, and the background power sampler.
#include "replay/energy.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "replay/stats.h"

namespace replay {
namespace {

// The times between successive changes of a reading, and the changes themselves.
struct Changes {
    std::vector<MeterReading> at;  // the first reading after each change
    std::vector<double> read_gaps_s;
};

double robust_spread(const std::vector<double>& values) {
    if (values.size() < 2) return NAN;
    const double m = stats::median(values);
    std::vector<double> deviations;
    for (double v : values) deviations.push_back(std::fabs(v - m));
    return 1.4826 * stats::median(deviations);
}

std::vector<double> gaps(const std::vector<MeterReading>& at) {
    std::vector<double> out;
    for (std::size_t i = 1; i < at.size(); ++i) out.push_back(at[i].t_s - at[i - 1].t_s);
    return out;
}

}  // namespace

EnergyProbe probe_energy(EnergyMeter& meter, const ProbeOptions& options) {
    EnergyProbe p;
    p.method = meter.method();
    p.power_limit_w = meter.power_limit_w();
    auto first = meter.energy();
    if (!first) {
        p.why = meter.method() + " cannot be read on this device";
        return p;
    }
    Changes energy, power;
    energy.at.push_back(*first);  // not a change: the reference the first change is seen against
    std::optional<MeterReading> last_power = meter.power();
    MeterReading previous = *first;
    std::vector<double> steps;
    const double deadline_gap = options.timeout_s;
    // The first change starts the idle window; counter_changes more end it.
    std::size_t seen = 0;
    while (seen < static_cast<std::size_t>(options.counter_changes) + 1) {
        const auto e = meter.energy();
        if (!e) {
            p.why = meter.method() + " failed while probing";
            return p;
        }
        energy.read_gaps_s.push_back(e->t_s - previous.t_s);
        if (e->value != previous.value) {
            steps.push_back(e->value - previous.value);
            if (seen == 0) energy.at.clear();
            energy.at.push_back(*e);
            ++seen;
        } else if (e->t_s - energy.at.back().t_s > deadline_gap) {
            p.why = meter.method() + " did not change in " + std::to_string(deadline_gap) +
                    " s: this device has no working energy counter";
            return p;
        }
        previous = *e;
        if (const auto w = meter.power()) {
            if (!last_power || w->value != last_power->value) power.at.push_back(*w);
            last_power = w;
        }
    }
    const std::vector<double> periods = gaps(energy.at);
    p.available = true;
    p.counter_changes = periods.size();
    p.counter_period_ms = stats::median(periods) * 1000.0;
    p.counter_jitter_ms = robust_spread(periods) * 1000.0;
    p.counter_read_ms = stats::median(energy.read_gaps_s) * 1000.0;
    p.counter_step_mj = *std::min_element(steps.begin(), steps.end());
    // Readings of the power that changed; the first one may be a stale value seen late.
    if (power.at.size() > 2) {
        power.at.erase(power.at.begin());
        p.power_period_ms = stats::median(gaps(power.at)) * 1000.0;
    }
    const MeterReading& from = energy.at.front();
    const MeterReading& to = energy.at.back();
    p.idle_window_ms = (to.t_s - from.t_s) * 1000.0;
    p.idle_power_w = p.idle_window_ms > 0 ? (to.value - from.value) / p.idle_window_ms : NAN;
    return p;
}

int updates_per_window(const EnergyProbe& probe, double window_ms, std::string& rule) {
    const double period = probe.counter_period_ms;
    // Never fewer than kMinWindowPeriods: on an H100 (scripts/gpu_energy.sh, one 100 ms period
    // per window) the windows of one kernel in one process alternated by up to 2x from one
    // counter period to the next (a 4.5 us GEMM: 3770, 1876, 3936, 1862, 3883 uJ), the window
    // spread of the largest BLOOM GEMM was 5.4%, so regress's threshold (3 x spread) rose to 16%
    // and hid a kernel 11% hungrier, and the medians of five processes disagreed by 2-41%. An
    // even number of periods averages out a period-to-period alternation.
    int n = 0;
    if (window_ms > 0) {
        // A window asked as a whole number of periods keeps that number: the probe measures the
        // nominal 100 ms period as 99.99 one time and 100.21 the next (two H200 processes), and
        // 400 ms became 5 periods in the first and 4 in the second, so the processes measured
        // different windows (and 5 is odd: see above).
        constexpr double kPeriodTolerance = 0.05;  // of a period
        n = std::max(1, static_cast<int>(std::ceil(window_ms / period - kPeriodTolerance)));
        rule = "--energy-window " + std::to_string(window_ms) + " ms: " + std::to_string(n) +
               " counter periods";
    } else {
        // Each end of a window is placed within the counter's jitter plus one read.
        const double jitter = std::isfinite(probe.counter_jitter_ms) ? probe.counter_jitter_ms : 0;
        const double uncertainty_ms = 2 * (jitter + probe.counter_read_ms);
        n = std::max(1, static_cast<int>(std::ceil(uncertainty_ms / (0.01 * period))));
        rule = "auto: timing uncertainty " + std::to_string(uncertainty_ms) +
               " ms (2 x (jitter + read)) below 1% of " + std::to_string(n) + " counter periods";
    }
    if (n < kMinWindowPeriods) {
        n = kMinWindowPeriods;
        rule += ", raised to the minimum of " + std::to_string(kMinWindowPeriods) +
                " (one period's energy varies too much from the next)";
    }
    return n;
}

WindowRun run_windows(EnergyMeter& meter, const EnergyProbe& probe, int windows, int updates,
                      const std::function<double()>& issue_some,
                      const std::function<void()>& drain) {
    WindowRun run;
    const auto start = meter.energy();
    if (!start) {
        run.failure = meter.method() + " failed";
        return run;
    }
    // A change normally comes every period; ten periods without one is a dead counter.
    const double timeout_s = 10 * probe.counter_period_ms / 1000.0;
    const std::size_t edges_needed = static_cast<std::size_t>(windows * updates) + 1;
    std::vector<MeterReading> edges;
    // limits[k + 1]: the clock limits read between edges k and k + 1 (limits[0]: before the
    // first edge).
    std::vector<std::uint32_t> limits(1, 0);
    bool reads_limits = true;
    // states[k + 1]: sums of the board's SM clock and temperature read between edges k and k + 1.
    struct StateSum {
        double mhz = 0, celsius = 0;
        int mhz_reads = 0, celsius_reads = 0;
    };
    std::vector<StateSum> states(1);
    bool reads_state = true;
    MeterReading previous = *start;
    while (edges.size() < edges_needed) {
        run.units += issue_some();
        const auto e = meter.energy();
        if (!e) {
            run.failure = meter.method() + " failed during a window";
            break;
        }
        if (e->value != previous.value) {
            // The change happened between the last reading that did not see it and this one:
            // the midpoint halves the error of timing the edge at the later read (a read took
            // 2.4 ms on the H100, and a poll waits for a batch of launches to be issued).
            edges.push_back({e->value, 0.5 * (previous.t_s + e->t_s)});
            limits.push_back(0);
            states.emplace_back();
        } else if (e->t_s - (edges.empty() ? start->t_s : edges.back().t_s) > timeout_s) {
            run.failure = meter.method() + " stopped changing during a window";
            break;
        }
        if (reads_limits) {
            const auto l = meter.clock_limits();
            reads_limits = l.has_value();
            if (l) limits.back() |= *l;
        }
        if (reads_state) {
            const auto b = meter.board_state();
            reads_state = b.has_value();
            if (b && std::isfinite(b->sm_clock_mhz)) {
                states.back().mhz += b->sm_clock_mhz;
                ++states.back().mhz_reads;
            }
            if (b && std::isfinite(b->temperature_c)) {
                states.back().celsius += b->temperature_c;
                ++states.back().celsius_reads;
            }
        }
        previous = *e;
    }
    drain();
    if (const auto end = meter.energy()) run.busy_seconds = end->t_s - start->t_s;
    if (!run.failure.empty()) return run;
    for (int w = 0; w < windows; ++w) {
        const auto first = static_cast<std::size_t>(w * updates);
        const auto last = static_cast<std::size_t>((w + 1) * updates);
        EnergyWindow window{edges[last].value - edges[first].value,
                            edges[last].t_s - edges[first].t_s, 0};
        StateSum state;
        for (std::size_t i = first + 1; i <= last && i < limits.size(); ++i) {
            window.clock_limits |= limits[i];
            state.mhz += states[i].mhz;
            state.mhz_reads += states[i].mhz_reads;
            state.celsius += states[i].celsius;
            state.celsius_reads += states[i].celsius_reads;
        }
        if (state.mhz_reads > 0) window.sm_clock_mhz = state.mhz / state.mhz_reads;
        if (state.celsius_reads > 0) window.temperature_c = state.celsius / state.celsius_reads;
        run.windows.push_back(window);
    }
    return run;
}

namespace {

// The ClockLimit bits in words.
std::string describe_clock_limits(std::uint32_t limits) {
    std::string out;
    auto add = [&](std::uint32_t bit, const char* what) {
        if ((limits & bit) == 0) return;
        if (!out.empty()) out += ", ";
        out += what;
    };
    add(kClockPowerCap, "power cap");
    add(kClockThermal, "thermal slowdown");
    add(kClockHardware, "hardware slowdown");
    return out;
}

}  // namespace

ClockLimitCount count_clock_limits(const WindowRun& run) {
    std::uint32_t all = 0;
    ClockLimitCount count;
    for (const EnergyWindow& w : run.windows) {
        count.windows += w.clock_limits != 0;
        all |= w.clock_limits;
    }
    count.by = describe_clock_limits(all);
    return count;
}

WindowRun run_windows_apart(EnergyMeter& meter, const EnergyProbe& probe, int windows, int updates,
                            const std::function<double()>& issue_some,
                            const std::function<void()>& drain,
                            const std::function<void(int)>& between) {
    WindowRun run;
    for (int w = 0; w < windows && run.failure.empty(); ++w) {
        if (w > 0) between(w);
        WindowRun one = run_windows(meter, probe, 1, updates, issue_some, drain);
        run.units += one.units;
        run.busy_seconds += one.busy_seconds;
        run.failure = one.failure;
        for (EnergyWindow window : one.windows) {
            window.seconds_per_unit = one.seconds_per_unit();
            run.windows.push_back(window);
        }
    }
    return run;
}

BoardState median_board_state(const WindowRun& run) {
    std::vector<double> mhz, celsius;
    for (const EnergyWindow& w : run.windows) {
        if (std::isfinite(w.sm_clock_mhz)) mhz.push_back(w.sm_clock_mhz);
        if (std::isfinite(w.temperature_c)) celsius.push_back(w.temperature_c);
    }
    return {mhz.empty() ? NAN : stats::median(mhz), celsius.empty() ? NAN : stats::median(celsius)};
}

std::vector<double> dynamic_uj_per_unit(const WindowRun& run, double idle_power_w) {
    std::vector<double> out;
    const double unit_s = run.seconds_per_unit();
    if (!(unit_s > 0)) return out;
    for (const auto& w : run.windows) {
        const double s = std::isfinite(w.seconds_per_unit) ? w.seconds_per_unit : unit_s;
        out.push_back((w.power_w() - idle_power_w) * s * 1e6);
    }
    return out;
}

PowerSampler::PowerSampler(EnergyMeter& meter, double period_s)
    : meter_(meter), period_s_(period_s > 0 ? period_s : 0.1) {
    thread_ = std::thread([this] {
        while (!stop_.load()) {
            if (const auto w = meter_.power()) {
                const std::lock_guard<std::mutex> lock(mutex_);
                samples_.push_back(*w);
            }
            std::this_thread::sleep_for(std::chrono::duration<double>(period_s_));
        }
    });
}

PowerSampler::~PowerSampler() {
    stop();
}

std::vector<MeterReading> PowerSampler::stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
    const std::lock_guard<std::mutex> lock(mutex_);
    return samples_;
}

}  // namespace replay
