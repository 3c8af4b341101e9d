// The `replay` command line: inspect, classify, replay (sequential | unique), regress, compare.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "regress_command.h"
#include "replay/analysis.h"
#include "replay/inspect_report.h"
#include "replay/recipe_json.h"
#include "replay/source.h"
#include "replay_command.h"

namespace {

struct Common {
    std::string trace;
    std::string et;
    std::string shapes;
    bool strict = false;
    bool quiet = false;
    std::uint64_t max_event_bytes = replay::ParseOptions{}.max_event_bytes;
};

void add_inputs(CLI::App& app, Common& c, bool trace_required = true) {
    auto* opt = app.add_option(
        "trace", c.trace, "Kineto trace: .json, .json.gz or .json.zst (by content), - for stdin");
    if (trace_required) opt->required();
    app.add_option(
        "--et", c.et,
        "PyTorch Execution Trace of the same run (.et.json[.gz]): op schemas and tensor ids");
    app.add_option("--shapes", c.shapes,
                   "JSONL shape log for traces recorded without record_shapes "
                   "(schemas/shape_log.schema.json)");
    app.add_flag("--strict", c.strict,
                 "Treat a malformed event as an error instead of skipping it");
    app.add_flag("-q,--quiet", c.quiet, "No progress or warnings on stderr");
    app.add_option("--max-event-bytes", c.max_event_bytes,
                   "Longest event (or string in one, top-level value, run of blanks) read; a "
                   "longer one is an error naming its offset, so that memory stays bounded")
        ->check(CLI::Range(std::uint64_t{1} << 10, replay::kMaxEventBytesLimit))
        ->capture_default_str();
}

std::unique_ptr<replay::Analysis> load(const Common& c) {
    replay::AnalysisOptions options;
    options.trace_path = c.trace;
    options.execution_trace_path = c.et;
    options.shape_log_path = c.shapes;
    options.parse.strict = c.strict;
    options.parse.max_event_bytes = c.max_event_bytes;
    const bool tty = ::isatty(STDERR_FILENO) != 0;
    if (!c.quiet && tty) {
        options.parse.progress = [](std::uint64_t done, std::uint64_t total) {
            if (total > (64u << 20))
                std::fprintf(stderr, "\rreading %.0f%% (%llu MB)",
                             100.0 * static_cast<double>(done) / static_cast<double>(total),
                             static_cast<unsigned long long>(done >> 20));
        };
    }
    auto analysis = replay::analyze(options);
    if (!c.quiet) {
        if (tty && analysis->parsed.stats.raw_bytes > (64u << 20))
            std::fprintf(stderr, "\r%40s\r", "");
        for (const auto& w : analysis->parsed.warnings)
            std::fprintf(stderr, "warning: %s\n", w.c_str());
    }
    return analysis;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{
        "replay: re-issue the GPU work of a PyTorch profiler (Kineto) trace on this machine and "
        "compare it, kernel "
        "by kernel, with the recording.\n\n"
        "  replay inspect TRACE               what ran on the GPU, by tier, stream and unique "
        "kernel\n"
        "  replay classify TRACE -o FILE      unique kernels with their tiers, rules and recipes\n"
        "  replay TRACE --mode sequential     replay every activity in recorded order\n"
        "  replay TRACE --mode unique         replay each unique kernel alone (warmup + runs)\n"
        "  replay regress --baseline R TRACE  replay and flag kernels slower than a baseline "
        "report\n"
        "  replay compare A B                 compare two reports (or two traces)\n\n"
        "Exit status: 0 ok, 1 regression found (regress/compare), 2 bad input or usage.",
        "replay"};
    app.set_version_flag("--version", "replay 0.1.0");
    app.require_subcommand(0, 1);
    app.fallthrough(false);

    Common inspect_in;
    bool inspect_json = false;
    int inspect_top = 15;
    auto* inspect = app.add_subcommand("inspect",
                                       "Summarise a trace: events by category, GPU time by tier, "
                                       "streams, top unique kernels, coverage");
    add_inputs(*inspect, inspect_in);
    inspect->add_flag("--json", inspect_json,
                      "One JSON object on stdout: counts, kernel_time_us, unique_kernels, "
                      "coverage, tiers, streams, ...");
    inspect->add_option("--top", inspect_top, "How many unique kernels to list")
        ->check(CLI::Range(0, 1000000))
        ->capture_default_str();

    Common classify_in;
    std::string classify_out = "kernel_signatures.json";
    auto* classify = app.add_subcommand(
        "classify",
        "Write the unique kernels with their tiers, the rule that decided and their recipes");
    add_inputs(*classify, classify_in);
    classify
        ->add_option("-o,--output", classify_out,
                     "Output file (schemas/kernel_signatures.schema.json)")
        ->capture_default_str();

    replay::cli::ReplayCommand replay_cmd;
    Common replay_in;
    add_inputs(app, replay_in, false);
    replay_cmd.add_options(app);
    auto* regress = app.add_subcommand(
        "regress",
        "Replay traces and compare with baseline report(s); exit 1 when a kernel regressed, 2 "
        "when no kernel could be compared");
    replay::cli::RegressCommand regress_cmd;
    regress_cmd.add_options(*regress);
    auto* compare = app.add_subcommand("compare",
                                       "Compare two reports (or two traces' recorded times) "
                                       "without replaying; exit 1 when a kernel regressed, 2 "
                                       "when no kernel could be compared");
    replay::cli::CompareCommand compare_cmd;
    compare_cmd.add_options(*compare);

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e);
        return rc == 0 ? 0 : 2;
    }

    try {
        if (*inspect) {
            auto analysis = load(inspect_in);
            if (inspect_json)
                replay::write_inspect_json(std::cout, *analysis, inspect_top);
            else
                replay::print_inspect(std::cout, *analysis, inspect_top);
            return 0;
        }
        if (*classify) {
            auto analysis = load(classify_in);
            replay::SignatureFile file;
            file.trace = analysis->trace().source;
            file.trace_hash = analysis->trace_hash;
            file.kernels = analysis->kernels;
            for (auto& k : file.kernels) k.nodes.clear();
            replay::cli::write_file(
                classify_out, [&](std::ostream& out) { replay::write_signature_file(out, file); });
            if (!classify_in.quiet)
                std::fprintf(stderr,
                             "wrote %s: %zu unique kernels, %.2f%% of kernel time has a recipe\n",
                             classify_out.c_str(), file.kernels.size(), 100.0 * analysis->coverage);
            return 0;
        }
        if (*regress) return regress_cmd.run();
        if (*compare) return compare_cmd.run();
        if (replay_in.trace.empty() && !replay_cmd.has_kernel_file()) {
            std::cerr << app.help();
            return 2;
        }
        if (!replay_in.trace.empty() && replay_cmd.has_kernel_file())
            throw std::runtime_error(
                "give either a TRACE or --kernels FILE, not both (--kernels replays the unique "
                "kernels of a signature file, without the trace)");
        std::unique_ptr<replay::Analysis> analysis;
        if (!replay_in.trace.empty()) analysis = load(replay_in);
        return replay_cmd.run(analysis.get(), replay_in.quiet);
    } catch (const replay::InputError& e) {
        std::fprintf(stderr, "replay: error: %s\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "replay: error: %s\n", e.what());
        return 2;
    }
}
