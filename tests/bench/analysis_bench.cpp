// Stage benchmark of what every command waits for: replay::analyze() (parse, graph, classify,
// reuse, unique kernels; the trace hash is part of the parse) and the teardown of its result,
// with the memory each stage leaves behind.
//
//   analysis_bench TRACE [--et FILE] [--repeat N] [--stats] [--json] [--threads N]
//                  [--check-classifier]
//
// Each run happens in a forked child, so that its peak RSS (getrusage ru_maxrss) belongs to that
// run alone. Per stage it prints the wall seconds (best of the runs), the MB/s of decompressed JSON
// that the stage alone would sustain, the RSS when the stage ended and the peak RSS up to then.
// --stats also prints what each part of the trace model and of the engine's structures costs, in
// bytes per trace event (see model_stats.h). --json prints the figures as one JSON object instead
// of the table (run_bench.py reads it). Under valgrind --tool=callgrind the bench dumps the
// instruction counts of each stage as it ends (callgrind.out.PID.N, one per stage, in stage order;
// give --threads 1 there, so that no worker thread's instructions land in whichever stage happened
// to be running): run_bench.py --callgrind prints them per stage. --check-classifier classifies
// every activity alone as well and fails when a shared decision differs (ClassifyCheck).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define REPLAY_BENCH_CALLGRIND 1
#endif

#include "bench_support.h"
#include "model_stats.h"
#include "replay/analysis.h"

namespace {

using replay::bench::cpu_seconds;
using replay::bench::current_rss;
using replay::bench::now;
using replay::bench::peak_rss;

constexpr int kMaxStages = 16;

struct Stage {
    char name[32] = {};
    double seconds = 0;
    double cpu_seconds = 0;
    std::uint64_t rss = 0;   // when the stage ended
    std::uint64_t peak = 0;  // peak RSS of the process up to then
};

// What one run sends back to the parent through a pipe (plain bytes: no pointers).
struct Run {
    bool ok = false;
    char error[256] = {};
    std::uint64_t json_bytes = 0;
    std::uint64_t events = 0;
    std::uint64_t rss_start = 0;
    int stages = 0;
    Stage stage[kMaxStages];
};

void add_stage(Run& run, const char* name, double seconds, double cpu) {
    if (run.stages >= kMaxStages) return;
    Stage& s = run.stage[run.stages++];
    std::snprintf(s.name, sizeof s.name, "%s", name);
    s.seconds = seconds;
    s.cpu_seconds = cpu;
    s.rss = current_rss();
    s.peak = peak_rss();
}

Run run_once(const replay::AnalysisOptions& base, bool stats) {
    Run run;
    run.rss_start = current_rss();
    try {
        replay::AnalysisOptions options = base;
        double t = now(), c = cpu_seconds();
        options.on_stage = [&](std::string_view stage) {
            const double t1 = now(), c1 = cpu_seconds();
            add_stage(run, std::string(stage).c_str(), t1 - t, c1 - c);
#ifdef REPLAY_BENCH_CALLGRIND
            CALLGRIND_DUMP_STATS_AT(std::string(stage).c_str());
#endif
            t = now();
            c = cpu_seconds();
        };
        auto analysis = replay::analyze(options);
        run.json_bytes = analysis->parsed.stats.json_bytes;
        run.events = analysis->parsed.stats.events;
        if (stats) replay::bench::print_model_stats(*analysis, stdout);
        t = now();
        c = cpu_seconds();
        analysis.reset();
        add_stage(run, "teardown", now() - t, cpu_seconds() - c);
#ifdef REPLAY_BENCH_CALLGRIND
        CALLGRIND_DUMP_STATS_AT("teardown");
#endif
        run.ok = true;
    } catch (const std::exception& e) {
        std::snprintf(run.error, sizeof run.error, "%s", e.what());
    }
    return run;
}

Run run_in_child(const replay::AnalysisOptions& options, bool stats) {
    Run run;
    int status = 0;
    if (!replay::bench::run_in_child([&] { return run_once(options, stats); }, run, status))
        std::snprintf(run.error, sizeof run.error, "child died (%d)", status);
    return run;
}

double mib(std::uint64_t bytes) {
    return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

void usage() {
    std::fprintf(
        stderr,
        "usage: analysis_bench TRACE [--et FILE] [--repeat N] [--stats] [--json] [--threads N]\n"
        "       [--check-classifier]\n");
    std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
    replay::AnalysisOptions options;
    int repeat = 3;
    bool stats = false, json = false;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) usage();
            return argv[++i];
        };
        if (arg == "--et")
            options.execution_trace_path = next();
        else if (arg == "--repeat")
            repeat = std::max(1, std::atoi(next().c_str()));
        else if (arg == "--stats")
            stats = true;
        else if (arg == "--json")
            json = true;
        else if (arg == "--check-classifier")
            options.classify_check = replay::ClassifyCheck::EveryActivity;
        else if (arg == "--threads")
            options.parse.threads = static_cast<unsigned>(std::max(1, std::atoi(next().c_str())));
        else if (!arg.starts_with("--") && options.trace_path.empty())
            options.trace_path = arg;
        else
            usage();
    }
    if (options.trace_path.empty()) usage();
    std::setvbuf(stdout, nullptr, _IOLBF, 0);

    std::vector<Run> runs;
    for (int r = 0; r < repeat; ++r) {
        runs.push_back(run_in_child(options, stats && r == 0));
        if (!runs.back().ok) {
            std::printf("analysis_bench %s: FAILED: %s\n", options.trace_path.c_str(),
                        runs.back().error);
            return 1;
        }
    }
    const Run& first = runs.front();
    const double mb = static_cast<double>(first.json_bytes) / 1e6;
    double best_run = 1e30;
    std::uint64_t peak = 0;
    for (const Run& run : runs) {
        double total = 0;
        for (int s = 0; s < run.stages; ++s) total += run.stage[s].seconds;
        best_run = std::min(best_run, total);
        peak = std::max(peak, run.stage[run.stages - 1].peak);
    }
    if (json) {
        std::printf("{\"trace\": \"%s\", \"json_bytes\": %llu, \"events\": %llu, \"runs\": %d, ",
                    options.trace_path.c_str(), static_cast<unsigned long long>(first.json_bytes),
                    static_cast<unsigned long long>(first.events), repeat);
        std::printf("\"best_run_seconds\": %.6f, \"peak_rss\": %llu, \"stages\": [", best_run,
                    static_cast<unsigned long long>(peak));
    } else {
        std::printf(
            "analysis_bench %s: %.1f MB JSON, %llu events, %d run(s), each in its own process\n",
            options.trace_path.c_str(), mb, static_cast<unsigned long long>(first.events), repeat);
        std::printf("  %-16s %9s %9s %9s %10s %10s %10s\n", "stage", "best s", "mean s", "cpu s",
                    "MB/s", "RSS MiB", "peak MiB");
    }
    double best_total = 0, mean_total = 0;
    for (int s = 0; s < first.stages; ++s) {
        double best = 1e30, sum = 0, cpu = 0;
        for (const Run& run : runs) {
            if (run.stage[s].seconds < best) cpu = run.stage[s].cpu_seconds;
            best = std::min(best, run.stage[s].seconds);
            sum += run.stage[s].seconds;
        }
        const double mean = sum / static_cast<double>(runs.size());
        best_total += best;
        mean_total += mean;
        if (json)
            std::printf(
                "%s{\"stage\": \"%s\", \"best_seconds\": %.6f, \"mean_seconds\": %.6f, "
                "\"cpu_seconds\": %.6f, \"rss\": %llu, \"peak_rss\": %llu}",
                s ? ", " : "", first.stage[s].name, best, mean, cpu,
                static_cast<unsigned long long>(first.stage[s].rss),
                static_cast<unsigned long long>(first.stage[s].peak));
        else
            std::printf("  %-16s %9.3f %9.3f %9.3f %10.0f %10.1f %10.1f\n", first.stage[s].name,
                        best, mean, cpu, best > 0 ? mb / best : 0.0, mib(first.stage[s].rss),
                        mib(first.stage[s].peak));
    }
    if (json) {
        std::printf("]}\n");
        return 0;
    }
    std::printf(
        "  total: best run %.3f s (%.0f MB/s), sum of best stages %.3f s, mean %.3f s; peak RSS "
        "%.1f MiB (%.0f MB per GB of JSON), RSS before %.1f MiB\n",
        best_run, mb / best_run, best_total, mean_total, mib(peak),
        static_cast<double>(peak) / 1e6 / (mb / 1e3), mib(first.rss_start));
    return 0;
}
