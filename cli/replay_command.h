// The replaying commands of the CLI: `replay TRACE --mode ...`, `replay regress`, `replay compare`.
#pragma once

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "replay/analysis.h"
#include "replay/backend.h"
#include "replay/drivers.h"
#include "replay/kernels_csv.h"
#include "replay/recipe_json.h"
#include "replay/report.h"
#include "replay/report_json.h"
#include "replay/report_summary.h"
#include "replay/source.h"

namespace replay::cli {

// Settings every replaying command shares.
struct ReplaySettings {
    std::string mode = "unique";
    std::string backend = "auto";
    std::string out_dir = "replay_out";
    std::string pace = "none";
    int iterations = 1;
    int warmup = 10;
    int runs = 50;
    bool l2_flush = false;
    std::string context = "auto";
    bool no_sequential_check = false;
    bool no_warm_inputs = false;
    bool no_cupti = false;
    int device = 0;
    std::uint64_t seed = 0;

    void add_options(CLI::App& app, bool with_out = true) {
        app.add_option("--mode", mode,
                       "sequential: every activity in recorded order on the recorded streams; "
                       "unique: each unique kernel alone")
            ->check(CLI::IsMember({"sequential", "unique"}))
            ->capture_default_str();
        app.add_option("--backend", backend,
                       "cuda (GPU), cpu (libtorch on the CPU, for testing without a GPU) or auto "
                       "(cuda when a GPU is usable)")
            ->check(CLI::IsMember({"auto", "cuda", "cpu"}))
            ->capture_default_str();
        if (with_out)
            app.add_option("--out", out_dir,
                           "Output folder: report.json, kernels.csv and, in sequential mode, "
                           "replay_trace.json")
                ->capture_default_str();
        app.add_option("--pace", pace,
                       "sequential: none (back to back) or recorded (keep the recorded idle gaps "
                       "on each stream)")
            ->check(CLI::IsMember({"none", "recorded"}))
            ->capture_default_str();
        app.add_option("--iterations", iterations, "sequential: replay the whole trace N times")
            ->check(CLI::Range(1, 1000000))
            ->capture_default_str();
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
        app.add_flag("--no-warm-inputs", no_warm_inputs,
                     "sequential: do not read into L2, before each step, the inputs the recording "
                     "had cached (replayed producers write their own buffers, not their "
                     "consumers', so consumers would read activations from memory)");
        app.add_flag("--no-sequential-check", no_sequential_check,
                     "unique: skip the sequential pass that the predicted total is compared with");
        app.add_flag(
            "--no-cupti", no_cupti,
            "Time with CUDA events instead of CUPTI activity records (no per-kernel names)");
        app.add_option("--device", device, "GPU index")->capture_default_str();
        app.add_option("--seed", seed, "Seed of the random input data")->capture_default_str();
    }

    DriverOptions driver_options(bool quiet, const Backend& backend) const {
        DriverOptions o;
        o.pace = pace == "recorded" ? Pace::Recorded : Pace::None;
        o.iterations = iterations;
        o.warmup = warmup;
        o.runs = runs;
        o.l2_flush = l2_flush;
        const bool on_cpu = backend.environment().backend == "cpu";
        o.context = context == "none" || (context == "auto" && on_cpu) ? Context::None
                    : context == "previous"                            ? Context::Previous
                                                                       : Context::Recorded;
        o.sequential_check = !no_sequential_check;
        o.warm_inputs = !no_warm_inputs;
        if (!quiet)
            o.progress = [](const std::string& line) {
                std::fprintf(stderr, "replay: %s\n", line.c_str());
            };
        return o;
    }

    std::unique_ptr<Backend> make_backend() const {
        BackendOptions options;
        options.device = device;
        options.seed = seed;
        options.use_cupti = !no_cupti;
        std::string why_cuda, why_cpu;
        if (backend == "cuda" || backend == "auto") {
            auto b = make_cuda_backend(options, why_cuda);
            if (b) return b;
            if (backend == "cuda")
                throw std::runtime_error("CUDA backend unavailable: " + why_cuda);
        }
        auto b = make_cpu_backend(options, why_cpu);
        if (b) {
            if (backend == "auto")
                std::fprintf(stderr, "replay: no usable GPU (%s); using the CPU backend\n",
                             why_cuda.c_str());
            return b;
        }
        throw std::runtime_error(
            "no backend available: " + (why_cuda.empty() ? "" : why_cuda + "; ") + why_cpu);
    }

    Report run(const Analysis* analysis, const SignatureFile* kernels, Backend& backend, bool quiet,
               Timeline* timeline) const {
        const DriverOptions options = driver_options(quiet, backend);
        if (analysis == nullptr) return replay_unique(*kernels, backend, options);
        if (mode == "sequential") return replay_sequential(*analysis, backend, options, timeline);
        return replay_unique(*analysis, backend, options);
    }
};

// Writes to a temporary file beside the target and renames it on success, so that a failure
// never leaves a partial output file behind. A symbolic link is followed (renaming over it would
// replace the link); a target that is not a regular file (/dev/stdout, a FIFO) is written in
// place, since renaming over a device node would replace it with a file.
template <typename Fn>
void write_file(const std::filesystem::path& path, Fn&& fn) {
    namespace fs = std::filesystem;
    const auto fail = [&](const std::string& why) {
        throw std::runtime_error("cannot write " + path.string() + ": " + why);
    };
    std::error_code ec;
    fs::path target = path;
    if (fs::is_symlink(fs::symlink_status(path, ec))) {
        target = fs::canonical(path, ec);
        if (ec) target = fs::read_symlink(path, ec);  // a dangling link: create its target
        if (ec) fail(ec.message());
    }
    const fs::file_status status = fs::status(target, ec);
    if (fs::is_directory(status)) fail("it is a directory");
    if (fs::exists(status) && !fs::is_regular_file(status)) {
        std::ofstream out(target, std::ios::binary);
        if (!out) fail("cannot open it");
        fn(out);
        if (!out.flush()) fail("write failed");
        return;
    }
    const auto tmp = target.string() + ".tmp" + std::to_string(::getpid());
    try {
        std::ofstream out(tmp, std::ios::binary);
        if (!out) fail(std::string("cannot create a file there (") + std::strerror(errno) + ")");
        fn(out);
        if (!out.flush()) fail("write failed");
        out.close();
        fs::rename(tmp, target, ec);
        if (ec) fail(ec.message());
    } catch (...) {
        fs::remove(tmp, ec);
        throw;
    }
}

// Creates an output folder, with one line naming it when that is not possible.
inline void make_output_dir(const std::filesystem::path& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec || !std::filesystem::is_directory(dir))
        throw std::runtime_error("cannot create output folder " + dir.string() + ": " +
                                 (ec ? ec.message() : "a file of that name exists"));
}

class ReplayCommand {
  public:
    void add_options(CLI::App& app) {
        settings_.add_options(app);
        app.add_option("--kernels", kernel_file_,
                       "Replay a kernel_signatures.json (from `replay classify`) in unique mode, "
                       "without the trace");
    }
    bool has_kernel_file() const { return !kernel_file_.empty(); }

    int run(const Analysis* analysis, bool quiet) {
        SignatureFile file;
        if (analysis == nullptr) {
            if (settings_.mode != "unique")
                throw std::runtime_error("--kernels replays in --mode unique only");
            file = read_signature_file(kernel_file_);
        }
        auto backend = settings_.make_backend();
        make_output_dir(settings_.out_dir);
        Timeline timeline;
        Report report = settings_.run(analysis, analysis ? nullptr : &file, *backend, quiet,
                                      settings_.mode == "sequential" ? &timeline : nullptr);
        if (analysis == nullptr) report.inputs.emplace_back("kernels", kernel_file_);
        const std::filesystem::path dir(settings_.out_dir);
        write_file(dir / "report.json", [&](std::ostream& out) { write_report_json(out, report); });
        write_file(dir / "kernels.csv", [&](std::ostream& out) { write_kernels_csv(out, report); });
        if (settings_.mode == "sequential") {
            write_file(dir / "replay_trace.json",
                       [&](std::ostream& out) { write_replay_trace(out, timeline); });
        } else {
            // A timeline left by an earlier sequential run in this folder is not this run's.
            std::error_code ec;
            std::filesystem::remove(dir / "replay_trace.json", ec);
        }
        write_report_summary(std::cout, report);
        if (!quiet) std::fprintf(stderr, "replay: wrote %s\n", settings_.out_dir.c_str());
        return 0;
    }

  private:
    ReplaySettings settings_;
    std::string kernel_file_;
};

}  // namespace replay::cli
