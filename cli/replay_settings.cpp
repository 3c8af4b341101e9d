#include "replay_settings.h"

#include <cstdio>
#include <limits>
#include <stdexcept>

#include "replay/report_energy.h"
#include "replay/worker_backend.h"

namespace replay::cli {
namespace {

// --warmup-ms on a GPU by default: the compiled MLP recorded at its 700 W limit on an H200 replayed
// -6.6% after 3 iterations, -2.8% over 30 (100 ms) and -1.1% over 200 (700 ms) without a warm-up:
// the clocks of a sustained load take a few hundred milliseconds to settle. (With this one, on
// another H200: +4.2%, +3.4%, +0.4%; at the power limit chips differ by a few percent.)
constexpr double kGpuWarmupMs = 1000;

}  // namespace

void ReplaySettings::add_options(CLI::App& app, bool with_out) {
    app.add_option("--mode", mode,
                   "sequential: every activity in recorded order on the recorded streams; "
                   "unique: each unique kernel alone")
        ->check(CLI::IsMember({"sequential", "unique"}))
        ->capture_default_str();
    add_backend_option(app);
    if (with_out)
        app.add_option("--out", out_dir,
                       "Output folder: report.json, kernels.csv and, in sequential mode, "
                       "replay_trace.json")
            ->capture_default_str();
    app.add_option("--pace", pace,
                   "sequential: none (each step as soon as the host gets to it) or recorded "
                   "(the host issues each step at its recorded launch time, counted from the "
                   "step's first launch: the recorded gaps on every stream)")
        ->check(CLI::IsMember({"none", "recorded"}))
        ->capture_default_str();
    app.add_option("--pace-clock", pace_clock,
                   "sequential, --pace recorded: which steps are also held on the GPU's own "
                   "timer until their recorded start after the step before them, by a "
                   "one-thread kernel spinning before each, so that a launch the host made a "
                   "little late still starts on the recorded timeline. auto: the steps launched "
                   "from CUDA graphs (--graph); device: every step (a direct step's hold is one "
                   "launch more, which a host with no time to spare between recorded launches "
                   "pays in lateness); host: none, the host's waits alone (as before "
                   "2026-11-28). The cpu backend has no such clock")
        ->check(CLI::IsMember({"auto", "device", "host"}))
        ->capture_default_str();
    app.add_option("--iterations", iterations,
                   "sequential: replay the whole trace N times (after one untimed pass that "
                   "does every first-use set-up)")
        ->check(CLI::Range(1, 1000000))
        ->capture_default_str();
    app.add_option("--warmup-ms", warmup_ms,
                   "sequential: after the untimed plan pass, repeat the step untimed for at least "
                   "this long before the timed iterations, so that they run at the clocks of a "
                   "sustained load, as a recording taken in the middle of a run did (a GPU at its "
                   "power limit clocks down); 0: the plan pass only. Default: " +
                       std::to_string(static_cast<int>(kGpuWarmupMs)) +
                       " on a GPU, 0 on the cpu backend")
        ->check(CLI::Range(0.0, 600000.0));
    auto* graph_on = app.add_flag(
        "--graph", graph,
        "sequential: capture the steps (warm-up reads included) in CUDA graphs once and launch "
        "them per iteration: the whole step as one graph with --pace none, one graph per step "
        "with --pace recorded; steps that cannot be captured are issued directly (report.json's "
        "options say which path ran, its notes why). The default when the recording launched "
        "most of its kernel time through cudaGraphLaunch. unique: a kernel recorded inside a "
        "CUDA graph right after another of its nodes is timed inside one (unless --no-graph), "
        "after its recorded predecessor (a node's record is longer than the kernel launched "
        "alone)");
    app.add_flag("--no-graph", no_graph,
                 "sequential: issue every step directly, also when the recording ran as CUDA "
                 "graphs; unique: time kernels recorded inside CUDA graphs as launched alone")
        ->excludes(graph_on);
    app.add_option("--trace-iterations", trace_iterations,
                   "sequential: the replayed iterations in replay_trace.json, each its own "
                   "profiler step after the recorded one (iteration N: ProfilerStep#N+1): last "
                   "or all")
        ->check(CLI::IsMember({"last", "all"}))
        ->capture_default_str();
    add_unique_options(app);
    auto* warm =
        app.add_option("--warm-inputs", warm_inputs,
                       "sequential: before a step, read into L2 the inputs the recording had "
                       "cached (a replayed op that allocates its output writes another buffer "
                       "than its consumer reads). all: before every step; needed: only before "
                       "steps with an input no earlier replayed step read or wrote in its "
                       "recorded storage's buffer (dataflow: fewer reads, but kernels about 1 "
                       "point slower on the H200); none")
            ->check(CLI::IsMember({"needed", "all", "none"}))
            ->capture_default_str();
    app.add_flag("--no-warm-inputs", no_warm_inputs, "sequential: --warm-inputs none")
        ->excludes(warm);
    app.add_flag("--no-sequential-check", no_sequential_check,
                 "unique: skip the sequential pass that the predicted total is compared with");
    app.add_option("--collective-timeout", collective_timeout,
                   "several ranks (started by torchrun, mpirun or srun): seconds that the "
                   "rendezvous and every collective may wait for the other ranks before the "
                   "replay stops with an error naming the rank and the op")
        ->check(CLI::Range(1, 86400))
        ->capture_default_str();
    add_device_options(app);
    add_energy_options(app);
}

void ReplaySettings::add_energy_options(CLI::App& app) {
    app.add_flag("--energy", energy,
                 "Measure energy with the board's counter (NVML): unique: joules per launch of "
                 "each kernel, launched back to back through windows of counter changes, and of "
                 "the sequential pass's step; sequential: joules per step and the board's power "
                 "in replay_trace.json. Costs about (windows x window) per kernel. The cpu "
                 "backend and GPUs without the counter report energy n/a with the reason");
    app.add_option("--energy-window", energy_window_ms,
                   "Window length in ms, rounded up to whole counter periods; 0: the fewest "
                   "periods whose timing uncertainty is below 1% of the window; never fewer "
                   "than 4 periods")
        ->check(CLI::Range(0.0, 600000.0))
        ->capture_default_str();
    app.add_option("--energy-windows", energy_windows,
                   "Windows per kernel or step: the samples of its statistics (regress --energy "
                   "needs >= 5 per side for the rank test)")
        ->check(CLI::Range(1, 1000))
        ->capture_default_str();
    app.add_option("--energy-min-us", energy_min_us,
                   "unique: measure no energy for kernels whose recorded median is shorter")
        ->check(CLI::Range(0.0, 1e9))
        ->capture_default_str();
    app.add_option("--timing-json", timing_json,
                   "The real step's timing.json (examples/capture_trace.py) to hold the replayed "
                   "energy against; default: <trace stem>.timing.json beside the trace, if any")
        ->check(CLI::ExistingFile);
}

void ReplaySettings::add_model_energy(Report& report) const {
    if (!report.energy.requested) return;
    std::string path = timing_json;
    if (path.empty()) {
        const auto beside = timing_file_beside(report.input("trace"));
        if (!beside) {
            report.energy.notes.push_back(
                "no timing.json beside the trace (--timing-json): the real step's energy is n/a");
            return;
        }
        path = *beside;
    }
    replay::add_model_energy(report, read_model_timing(path));
    report.inputs.emplace_back("timing_json", path);
}

void ReplaySettings::add_sweep_options(CLI::App& app) {
    add_backend_option(app);
    add_unique_options(app);
    add_device_options(app);
}

void ReplaySettings::add_backend_option(CLI::App& app) {
    app.add_option("--backend", backend,
                   "cuda (GPU), cpu (libtorch on the CPU, for testing without a GPU) or auto "
                   "(cuda when a GPU is usable)")
        ->check(CLI::IsMember({"auto", "cuda", "cpu"}))
        ->capture_default_str();
}

void ReplaySettings::add_unique_options(CLI::App& app) {
    app.add_option("--warmup", warmup, "unique: untimed runs per kernel")
        ->check(CLI::Range(0, 1000000))
        ->capture_default_str();
    app.add_option("--runs", runs, "unique: timed runs per kernel")
        ->check(CLI::Range(1, 1000000))
        ->capture_default_str();
    app.add_flag("--l2-flush", l2_flush,
                 "unique: flush the L2 cache before every timed run (cold timing)");
    app.add_option("--context", context,
                   "unique: what runs untimed before each timed run. recorded: the L2 is "
                   "evicted, the step recorded just before the instance runs, then the inputs "
                   "the recording had in L2 are read in (weights come from memory, as in the "
                   "recording); previous: that step without eviction or reads; none: nothing "
                   "(back to back, warm); auto: recorded on the GPU, none on the cpu backend "
                   "(whose timings do not model a GPU's L2, and for which an eviction costs "
                   "tens of milliseconds per run)")
        ->check(CLI::IsMember({"auto", "recorded", "previous", "none"}))
        ->capture_default_str();
    app.add_option("--instruction-cache", instruction_cache,
                   "unique, --context recorded: cold: the SMs' instruction caches are emptied "
                   "with the L2 eviction before each timed run, so the kernel fetches its code "
                   "again, as after the dozens of other kernels between its recorded instances; "
                   "warm: its code stays there from the run before (back to back with itself: "
                   "small kernels time fast); auto: warm for kernels recorded inside a CUDA "
                   "graph after another node (a graph launch readies its nodes ahead), cold for "
                   "the others")
        ->check(CLI::IsMember({"auto", "cold", "warm"}))
        ->capture_default_str();
}

void ReplaySettings::add_device_options(CLI::App& app) {
    app.add_flag("--no-cupti", no_cupti,
                 "Time with CUDA events instead of CUPTI activity records (no per-kernel names)");
    app.add_option("--device", device, "GPU index")->capture_default_str();
    app.add_option("--seed", seed, "Seed of the random input data")->capture_default_str();
    app.add_option("--max-tensor-bytes", max_tensor_bytes,
                   "Largest a recipe's tensors may be, together and any one view (dims x "
                   "element size, overlapping strides included); a recipe over it is skipped "
                   "with the reason. 0: the device's free memory (3/4 of the available RAM "
                   "on the cpu backend)")
        ->transform(CLI::AsSizeValue(false))
        ->check(CLI::Range(std::int64_t{0}, std::numeric_limits<std::int64_t>::max()))
        ->capture_default_str();
    app.add_option("--isolation", isolation,
                   "worker: the device work runs in a worker process, so that a device fault "
                   "(a device-side assert, an illegal address, a crash) or a run past its time "
                   "limit fails that kernel, the worker is restarted and the replay goes on; "
                   "none: in this process (a fault ends the replay). Several ranks always "
                   "replay in this process")
        ->check(CLI::IsMember({"worker", "none"}))
        ->capture_default_str();
    kernel_timeout_option =
        app.add_option(
               "--kernel-timeout", kernel_timeout_s,
               "With --isolation worker: a run that takes longer than max(SECONDS, 1000 x "
               "its recorded time) is failed with the reason, the worker restarted and the "
               "replay goes on (a wait for queued work: 1000 x the recorded time of all of "
               "it); 0: no limit. The cpu backend's runs are limited only when it is given "
               "(a slow CPU op is not a hung kernel, and a restart prepares every step again)")
            ->type_name("SECONDS")
            ->check(CLI::Range(0.0, 1e9))
            ->capture_default_str();
    app.add_flag("--nvtx", nvtx,
                 "Run every replayed issue inside an NVTX range named by its unique-kernel id, "
                 "recorded name and iteration (\"ID NAME (iteration N)\"), for nsys and ncu "
                 "--nvtx-include; cuda backend. Off by default");
    app.add_option("--only", only,
                   "unique: time only these unique kernels (ids, repeatable); the others are "
                   "skipped. `replay ncu-cmd` uses it");
}

DriverOptions ReplaySettings::driver_options(bool quiet, const Backend& backend) const {
    DriverOptions o;
    o.pace = pace == "recorded" ? Pace::Recorded : Pace::None;
    o.pace_clock = pace_clock == "device" ? PaceClock::Device
                   : pace_clock == "host" ? PaceClock::Host
                                          : PaceClock::Auto;
    o.iterations = iterations;
    if (graph) o.graph = true;
    if (no_graph) o.graph = false;
    o.trace_all_iterations = trace_iterations == "all";
    o.warmup = warmup;
    o.runs = runs;
    o.l2_flush = l2_flush;
    const bool on_cpu = backend.environment().backend == "cpu";
    o.warmup_ms = warmup_ms >= 0 ? warmup_ms : on_cpu ? 0 : kGpuWarmupMs;
    o.context = context == "none" || (context == "auto" && on_cpu) ? Context::None
                : context == "previous"                            ? Context::Previous
                                                                   : Context::Recorded;
    for (auto cache : {InstructionCache::Auto, InstructionCache::Cold, InstructionCache::Warm})
        if (instruction_cache == to_string(cache)) o.instruction_cache = cache;
    o.sequential_check = !no_sequential_check;
    for (auto mode : {DriverOptions::WarmInputs::None, DriverOptions::WarmInputs::Needed,
                      DriverOptions::WarmInputs::All})
        if (warm_inputs == to_string(mode)) o.warm_inputs = mode;
    if (no_warm_inputs) o.warm_inputs = DriverOptions::WarmInputs::None;
    o.nvtx = nvtx;
    o.only = only;
    o.energy = energy;
    o.energy_window_ms = energy_window_ms;
    o.energy_windows = energy_windows;
    o.energy_min_us = energy_min_us;
    if (!quiet)
        o.progress = [](const std::string& line) {
            std::fprintf(stderr, "replay: %s\n", line.c_str());
        };
    return o;
}

std::unique_ptr<Backend> ReplaySettings::make_backend() const {
    // --energy polls the board's counter between launches: in this process, beside the device.
    // Several ranks: the backend joins its peers' c10d group when it is made, and a worker
    // restarted after a fault would have to rejoin a group whose other ranks are inside a
    // collective. The group lives in this process instead: a crash ends this rank, and its peers
    // fail their next collective at once, naming it.
    if (isolation == "none" || energy || distributed.world_size > 1) return make_backend_here();
    WorkerOptions worker;
    worker.kernel_timeout_s = kernel_timeout_s;
    worker.limit_host_clock_runs =
        kernel_timeout_option != nullptr && kernel_timeout_option->count() > 0;
    std::string why;
    // The worker makes the backend: this process never initialises the device, so that it can
    // start a fresh worker after a fault.
    auto backend = make_worker_backend(
        [settings = *this](std::string& why_not) -> std::unique_ptr<Backend> {
            try {
                return settings.make_backend_here();
            } catch (const std::exception& e) {
                why_not = e.what();
                return nullptr;
            }
        },
        worker, why);
    if (backend == nullptr) throw std::runtime_error(why);
    return backend;
}

std::unique_ptr<Backend> ReplaySettings::make_backend_here() const {
    BackendOptions options;
    options.device = device;
    options.seed = seed;
    options.use_cupti = !no_cupti;
    options.max_tensor_bytes = max_tensor_bytes;
    options.distributed = distributed;
    std::string why_cuda, why_cpu;
    if (backend == "cuda" || backend == "auto") {
        auto b = make_cuda_backend(options, why_cuda);
        if (b) return b;
        if (backend == "cuda") throw std::runtime_error("CUDA backend unavailable: " + why_cuda);
    }
    auto b = make_cpu_backend(options, why_cpu);
    if (b) {
        if (backend == "auto")
            std::fprintf(stderr, "replay: no usable GPU (%s); using the CPU backend\n",
                         why_cuda.c_str());
        return b;
    }
    throw std::runtime_error("no backend available: " + (why_cuda.empty() ? "" : why_cuda + "; ") +
                             why_cpu);
}

Report ReplaySettings::run(const Analysis* analysis, const SignatureFile* kernels, Backend& backend,
                           bool quiet, Timeline* timeline) const {
    if (!only.empty() && mode != "unique")
        throw std::runtime_error("--only selects kernels in --mode unique");
    if (nvtx && backend.environment().backend != "cuda" && !quiet)
        std::fprintf(stderr, "replay: --nvtx: the %s backend has no NVTX ranges\n",
                     backend.environment().backend.c_str());
    const DriverOptions options = driver_options(quiet, backend);
    Report report = analysis == nullptr ? replay_unique(*kernels, backend, options)
                    : mode == "sequential"
                        ? replay_sequential(*analysis, backend, options, timeline)
                        : replay_unique(*analysis, backend, options);
    add_model_energy(report);
    return report;
}

}  // namespace replay::cli
