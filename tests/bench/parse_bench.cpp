// Parse-to-model benchmark for the Kineto parser (no Google Benchmark needed).
//
//   parse_bench --plain big.json [--zst big.json.zst] [--python-doc small.json] [--repeat N]
//
// Each parse runs in a forked child so that its peak RSS (getrusage ru_maxrss) belongs to that
// parse alone. For each input it prints the throughput (decompressed JSON bytes / wall seconds of
// parse_kineto, best of --repeat), the peak RSS, the parser's own buffers (stats.peak_buffer_bytes)
// and the peak RSS minus the RSS before the parse minus an estimate of the model's size (the typed
// vectors, the op shapes and the string pool, with malloc overheads). --python-doc times
// `python3 -c 'import json;json.loads(open(p,"rb").read())'` (whole process, as `time` would) on a
// smaller document and parses the same document here too, for a like-for-like ratio.
// Targets: >= 1000 MB/s plain, >= 700 MB/s .zst (both for the mean of the repeats), <= 64 MiB
// parser memory beyond the model, >= 20x Python.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_support.h"
#include "replay/kineto_parser.h"

namespace {

constexpr double kTargetPlain = 1000.0;    // MB/s
constexpr double kTargetZst = 700.0;       // MB/s
constexpr double kTargetParserMiB = 64.0;  // beyond the model
constexpr double kTargetVsPython = 20.0;

using replay::bench::cpu_seconds;
using replay::bench::current_rss;
using replay::bench::heap;
using replay::bench::load_average;
using replay::bench::now;
using replay::bench::peak_rss;
template <typename T>
std::uint64_t vec(const std::vector<T>& v) {
    return replay::bench::heap_of(v);
}

// The size of the model in memory (what a parser cannot avoid allocating). The big top-level
// vectors count by size, not capacity: their unused tail is never touched, so never resident
// (`allocated` gets the capacity-based figure). Small heap blocks count whole, with malloc's
// overhead.
template <typename T>
std::uint64_t used(const std::vector<T>& v) {
    return v.size() * sizeof(T);
}
std::uint64_t model_bytes(const replay::Trace& t, std::uint64_t* allocated = nullptr) {
    if (allocated)
        *allocated = vec(t.cpu_ops) + vec(t.runtime_calls) + vec(t.activities) + vec(t.op_shapes);
    std::uint64_t total =
        used(t.cpu_ops) + used(t.runtime_calls) + used(t.activities) + used(t.op_shapes);
    if (allocated) *allocated -= total;
    for (const auto& s : t.op_shapes) {
        total += vec(s.inputs);
        for (const auto& a : s.inputs) total += vec(a.dims) + vec(a.strides) + vec(a.list_ranks);
    }
    total += t.storages.bytes();
    // StringPool: a std::string in a deque, a pointer in a vector, an unordered_map node
    // (next, string_view, id, cached hash) and its bucket, plus the text when it is not inline.
    const std::size_t strings = t.names.size();
    total += strings * (sizeof(std::string) + sizeof(void*) + heap(8 + 16 + 4 + 8) + sizeof(void*));
    for (std::size_t i = 0; i < strings; ++i) {
        const std::size_t n = t.names.view(static_cast<replay::NameId>(i)).size();
        if (n > 15) total += heap(n + 1);
    }
    for (const auto& d : t.meta.devices)
        total += sizeof(d) + (d.name.size() > 15 ? heap(d.name.size() + 1) : 0);
    if (allocated) *allocated += total;
    return total;
}

struct Result {
    bool ok = false;
    char error[256] = {};
    double seconds = 0;  // best of the repeats
    double mean_seconds = 0;
    double first_seconds = 0;  // the first parse in the process
    double cpu_seconds = 0;    // user + system of the best run (both threads)
    std::uint64_t json_bytes = 0;
    std::uint64_t raw_bytes = 0;
    std::uint64_t events = 0;
    std::uint64_t malformed = 0;
    std::uint64_t kernels = 0;
    std::uint64_t cpu_ops = 0;
    std::uint64_t peak_buffer = 0;
    std::uint64_t rss_before = 0;
    std::uint64_t peak_rss = 0;
    std::uint64_t rss_after = 0;  // model still alive, parser gone
    std::uint64_t model = 0;
    std::uint64_t model_allocated = 0;  // with the vectors' capacity
};

// Parses `path` `repeat` times in a forked child; the child's peak RSS covers these parses only.
Result measure(const std::string& path, int repeat) {
    const auto parse = [&] {
        Result r;
        r.rss_before = current_rss();
        try {
            double total = 0;
            r.seconds = 1e30;
            for (int i = 0; i < repeat; ++i) {
                const double c0 = cpu_seconds();
                const double t0 = now();
                replay::ParseResult parsed = replay::parse_kineto(path);
                const double s = now() - t0;
                const double c = cpu_seconds() - c0;
                total += s;
                if (s < r.seconds) r.cpu_seconds = c;
                r.seconds = std::min(r.seconds, s);
                if (i == 0) {
                    // Memory figures from the first parse in a fresh process: later ones also see
                    // what malloc kept from the previous parse.
                    r.peak_rss = peak_rss();
                    r.first_seconds = s;
                    r.json_bytes = parsed.stats.json_bytes;
                    r.raw_bytes = parsed.stats.raw_bytes;
                    r.events = parsed.stats.events;
                    r.malformed = parsed.stats.malformed;
                    r.kernels = parsed.trace.activity_totals().count(replay::ActivityKind::Kernel);
                    r.cpu_ops = parsed.trace.cpu_ops.size();
                    r.peak_buffer = parsed.stats.peak_buffer_bytes;
                    r.model = model_bytes(parsed.trace, &r.model_allocated);
                    r.rss_after = current_rss();
                }
            }
            r.mean_seconds = total / repeat;
            r.ok = true;
        } catch (const std::exception& e) {
            std::snprintf(r.error, sizeof r.error, "%s", e.what());
        }
        return r;
    };
    Result r;
    int status = 0;
    if (!replay::bench::run_in_child(parse, r, status))
        std::snprintf(r.error, sizeof r.error, "child died (status %d)", status);
    return r;
}

struct PythonRun {
    bool ok = false;
    double seconds = 0;
    std::uint64_t peak_rss = 0;
};

PythonRun time_python(const std::string& python, const std::string& path) {
    PythonRun run;
    const double t0 = now();
    const pid_t pid = fork();
    if (pid == 0) {
        const char* code = "import json,sys;json.loads(open(sys.argv[1],'rb').read())";
        execlp(python.c_str(), python.c_str(), "-c", code, path.c_str(),
               static_cast<char*>(nullptr));
        _exit(127);
    }
    int status = 0;
    rusage usage{};
    wait4(pid, &status, 0, &usage);
    run.seconds = now() - t0;
    run.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    run.peak_rss = static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;
    return run;
}

double mib(std::uint64_t bytes) {
    return static_cast<double>(bytes) / (1024.0 * 1024.0);
}
double mbps(const Result& r) {
    return r.json_bytes / r.seconds / 1e6;
}
double mean_mbps(const Result& r) {
    return r.json_bytes / r.mean_seconds / 1e6;
}
const char* verdict(bool ok) {
    return ok ? "MET" : "NOT MET";
}

// Returns the parser's memory beyond the model, in MiB.
double report(const char* label, const std::string& path, const Result& r) {
    if (!r.ok) {
        std::printf("%-6s %s: FAILED: %s\n", label, path.c_str(), r.error);
        return -1;
    }
    const double beyond = (static_cast<double>(r.peak_rss) - static_cast<double>(r.rss_before) -
                           static_cast<double>(r.model)) /
                          (1024.0 * 1024.0);
    std::printf("%-6s %s\n", label, path.c_str());
    std::printf(
        "       %.1f MB JSON (%.1f MB on disk), %llu events (%llu malformed), %llu kernels, %llu "
        "cpu_ops\n",
        r.json_bytes / 1e6, r.raw_bytes / 1e6, static_cast<unsigned long long>(r.events),
        static_cast<unsigned long long>(r.malformed), static_cast<unsigned long long>(r.kernels),
        static_cast<unsigned long long>(r.cpu_ops));
    std::printf(
        "       parse-to-model: %.3f s best, %.3f s mean, %.3f s first -> %.0f MB/s (best), %.0f "
        "MB/s (mean), "
        "%.0f MB/s (first)\n",
        r.seconds, r.mean_seconds, r.first_seconds, mbps(r), r.json_bytes / r.mean_seconds / 1e6,
        r.json_bytes / r.first_seconds / 1e6);
    std::printf(
        "       CPU time of the best run %.3f s (user+sys, all threads) = %.0f MB per CPU-second; "
        "parallelism %.2f\n",
        r.cpu_seconds, r.json_bytes / r.cpu_seconds / 1e6, r.cpu_seconds / r.seconds);
    std::printf(
        "       peak RSS %.1f MiB, first parse (RSS before parse %.1f MiB, after parse with model "
        "%.1f MiB)\n",
        mib(r.peak_rss), mib(r.rss_before), mib(r.rss_after));
    std::printf(
        "       model estimate %.1f MiB (%.1f MiB allocated, counting vector capacity); parser "
        "buffers "
        "(stats.peak_buffer_bytes) %.1f MiB; peak RSS - before - model = %.1f MiB\n",
        mib(r.model), mib(r.model_allocated), mib(r.peak_buffer), beyond);
    return std::max(beyond, mib(r.peak_buffer));
}

void usage() {
    std::fprintf(stderr,
                 "usage: parse_bench --plain FILE [--zst FILE] [--python-doc FILE] [--python EXE] "
                 "[--repeat N]\n");
    std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
    std::string plain, zst, python_doc, python = "python3";
    int repeat = 3;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) usage();
            return argv[++i];
        };
        if (arg == "--plain")
            plain = next();
        else if (arg == "--zst")
            zst = next();
        else if (arg == "--python-doc")
            python_doc = next();
        else if (arg == "--python")
            python = next();
        else if (arg == "--repeat")
            repeat = std::max(1, std::atoi(next().c_str()));
        else
            usage();
    }
    if (plain.empty()) usage();
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    std::printf(
        "parse_bench: %ld online cores, %u parser threads, best of %d parse(s) per input, each "
        "input in its own process\n",
        sysconf(_SC_NPROCESSORS_ONLN), replay::parse_threads({}), repeat);
    const double load = load_average();
    std::printf(
        "load average (1 min) at start: %.2f%s\n", load,
        load > 0.5 ? "  -- WARNING: other work is running; wall-clock figures will be low" : "");

    const Result p = measure(plain, repeat);
    double parser_mem = report("plain", plain, p);
    Result z;
    if (!zst.empty()) {
        z = measure(zst, repeat);
        parser_mem = std::max(parser_mem, report("zst", zst, z));
    }
    Result small;
    PythonRun py;
    if (!python_doc.empty()) {
        small = measure(python_doc, repeat);
        report("small", python_doc, small);
        py = time_python(python, python_doc);
        if (py.ok && small.ok) {
            std::printf(
                "python `json.loads(open(p,'rb').read())` (whole process) on the same %.1f MB: "
                "%.2f s -> "
                "%.1f MB/s, peak RSS %.0f MiB\n",
                small.json_bytes / 1e6, py.seconds, small.json_bytes / py.seconds / 1e6,
                mib(py.peak_rss));
        } else {
            std::printf("python run FAILED\n");
        }
    }

    const double load_end = load_average();
    std::printf("\nsummary (targets)\n");
    if (load_end > 0.8)
        std::printf(
            "  WARNING: load average %.2f at the end: other work shared the cores, wall-clock "
            "figures are low\n",
            load_end);
    // Throughput targets hold for the mean of the repeats (the first parse in a process
    // included), not just for the best one.
    if (p.ok)
        std::printf(
            "  plain throughput   %7.0f MB/s mean (%.0f best)  target %4.0f MB/s  ratio %.2f  %s\n",
            mean_mbps(p), mbps(p), kTargetPlain, mean_mbps(p) / kTargetPlain,
            verdict(mean_mbps(p) >= kTargetPlain));
    if (z.ok)
        std::printf(
            "  zst throughput     %7.0f MB/s mean (%.0f best)  target %4.0f MB/s  ratio %.2f  %s\n",
            mean_mbps(z), mbps(z), kTargetZst, mean_mbps(z) / kTargetZst,
            verdict(mean_mbps(z) >= kTargetZst));
    if (p.ok)
        std::printf(
            "  parser memory      %7.1f MiB   target <= %.0f MiB beyond the model  ratio %.2f  "
            "%s\n",
            parser_mem, kTargetParserMiB, parser_mem / kTargetParserMiB,
            verdict(parser_mem <= kTargetParserMiB));
    if (py.ok && small.ok && p.ok) {
        const double py_mbps = small.json_bytes / py.seconds / 1e6;
        const double same_doc = mbps(small) / py_mbps;
        const double big = mbps(p) / py_mbps;
        std::printf(
            "  vs python          %7.1fx        target %4.0fx (same %.0f MB document; %.1fx using "
            "the "
            "1 GB plain MB/s against Python's MB/s on the small one)  ratio %.2f  %s\n",
            same_doc, kTargetVsPython, small.json_bytes / 1e6, big, same_doc / kTargetVsPython,
            verdict(same_doc >= kTargetVsPython));
    }
    return p.ok && (zst.empty() || z.ok) ? 0 : 1;
}
