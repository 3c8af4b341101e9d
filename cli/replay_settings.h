// The settings every replaying command shares (`replay TRACE`, `replay regress`): mode, backend,
// the drivers' options; the backend they choose and the replay itself.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "replay/analysis.h"
#include "replay/backend.h"
#include "replay/drivers.h"
#include "replay/recipe_json.h"
#include "replay/report.h"

namespace replay::cli {

struct ReplaySettings {
    std::string mode = "unique";
    std::string backend = "auto";
    std::string out_dir = "replay_out";
    std::string pace = "none";
    std::string pace_clock = "auto";
    int iterations = 1;
    double warmup_ms = -1;                 // unset: kGpuWarmupMs on a GPU, 0 on the cpu backend
    bool graph = false, no_graph = false;  // neither: DriverOptions::graph decides
    std::string trace_iterations = "last";
    int warmup = 10;
    int runs = 50;
    bool l2_flush = false;
    std::string context = "auto";
    std::string instruction_cache = "auto";
    bool no_sequential_check = false;
    std::string warm_inputs = "all";
    bool no_warm_inputs = false;  // the same as --warm-inputs none
    bool no_cupti = false;
    int device = 0;
    std::uint64_t seed = 0;
    std::int64_t max_tensor_bytes = 0;  // 0: the device's free memory
    bool energy = false;
    double energy_window_ms = 0;
    int energy_windows = 5;
    double energy_min_us = 0;
    std::string timing_json;  // the real step's timing.json; "": the one beside the trace, if any
    std::string isolation = "worker";
    double kernel_timeout_s = 10;
    const CLI::Option* kernel_timeout_option = nullptr;  // given: it limits cpu runs too
    bool nvtx = false;
    std::vector<std::string> only;   // unique mode: these unique-kernel ids alone
    int collective_timeout = 60;     // seconds; every rendezvous and collective (several ranks)
    DistributedOptions distributed;  // set by the replay command when a launcher started it

    // `with_out`: --out is offered with this command's meaning of it (regress has its own).
    void add_options(CLI::App& app, bool with_out = true);
    // `replay sweep`: the backend, unique mode's and the device's options.
    void add_sweep_options(CLI::App& app);
    DriverOptions driver_options(bool quiet, const Backend& backend) const;
    // The backend asked for; `auto` falls back to the cpu backend, saying why. Throws when none.
    // With --isolation worker, the backend runs in a worker process (worker_backend.h).
    std::unique_ptr<Backend> make_backend() const;
    // A trace (`analysis`) in the chosen mode, or a signature file (`kernels`) in unique mode.
    Report run(const Analysis* analysis, const SignatureFile* kernels, Backend& backend, bool quiet,
               Timeline* timeline) const;

  private:
    std::unique_ptr<Backend> make_backend_here() const;
    void add_backend_option(CLI::App& app);
    void add_unique_options(CLI::App& app);
    void add_device_options(CLI::App& app);
    void add_energy_options(CLI::App& app);
    // --energy: the real model's step from its timing.json joins the report.
    void add_model_energy(Report& report) const;
};

}  // namespace replay::cli
