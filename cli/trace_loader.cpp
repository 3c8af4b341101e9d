#include "trace_loader.h"

#include <unistd.h>

#include <cstdio>

namespace replay::cli {

CLI::Option* add_trace_argument(CLI::App& app, std::string& path) {
    return app.add_option("trace", path,
                          "Kineto trace: .json, .json.gz or .json.zst (by content), - for stdin");
}

void add_load_options(CLI::App& app, LoadOptions& o, SideFiles side_files) {
    if (side_files != SideFiles::NotOffered) {
        const std::string one =
            side_files == SideFiles::OneTraceOnly ? " (a single trace only)" : "";
        app.add_option(
            "--et", o.et,
            "PyTorch Execution Trace of the same run (.et.json[.gz]): op schemas and tensor ids" +
                one);
        app.add_option("--shapes", o.shapes,
                       "JSONL shape log for traces recorded without record_shapes "
                       "(schemas/shape_log.schema.json)" +
                           one);
        app.add_flag("--no-dataflow", o.no_dataflow,
                     "Without --et, do not infer parameters and producer -> consumer buffers from "
                     "the trace: reuse buffers by size and role (as before the inference; for "
                     "comparing the two)");
        app.add_option("--recipes", o.recipes,
                       "kernel_signatures.json files or traces of other runs of the same workload "
                       "whose recipes serve the kernels without an op (cudaGraphLaunch, no "
                       "record_shapes), matched by name, grid, block and neighbours; repeat "
                       "for several" +
                           one)
            ->allow_extra_args(false);
        app.add_option("--inductor-cache", o.inductor_cache,
                       "torch.compile's cache folder of the run (TORCHINDUCTOR_CACHE_DIR) or a "
                       ".tar[.gz] of it: its Triton kernels' binaries, launch metadata and wrapper "
                       "code replay the trace's Triton kernels (tier triton), and the wrapper's "
                       "library calls (mm, addmm, bmm, convolution, attention) give the kernels "
                       "without an op between them their recipes (rule inductor-extern: a "
                       "reduce-overhead CUDA graph's, a trace without record_shapes)" +
                           one);
    }
    app.add_flag("--strict", o.strict,
                 "Treat a malformed event as an error instead of skipping it");
    app.add_flag("-q,--quiet", o.quiet, "No progress or warnings on stderr");
    app.add_option("--max-event-bytes", o.max_event_bytes,
                   "Longest event (or string in one, top-level value, run of blanks) read; a "
                   "longer one is an error naming its offset, so that memory stays bounded")
        ->check(CLI::Range(std::uint64_t{1} << 10, kMaxEventBytesLimit))
        ->capture_default_str();
}

void add_set_dims_option(CLI::App& app, LoadOptions& o) {
    app.add_option("--set-dims", o.set_dims,
                   "What if the model input had another shape: batch=N,seq=N (either alone). "
                   "Every recorded size that traces back to the input's batch or sequence length "
                   "(aten::embedding's [batch, seq] indices, followed op to op) is rewritten; "
                   "what was rewritten and what was ambiguous is printed");
}

std::unique_ptr<Analysis> load_trace(const std::string& path, const LoadOptions& o) {
    AnalysisOptions options;
    options.trace_path = path;
    options.execution_trace_path = o.et;
    options.shape_log_path = o.shapes;
    options.infer_dataflow = !o.no_dataflow;
    options.recipe_libraries = o.recipes;
    options.inductor_cache = o.inductor_cache;
    options.parse.strict = o.strict;
    options.parse.max_event_bytes = o.max_event_bytes;
    if (!o.set_dims.empty()) options.set_dims = parse_set_dims(o.set_dims);
    const bool tty = ::isatty(STDERR_FILENO) != 0;
    if (!o.quiet && tty) {
        options.parse.progress = [](std::uint64_t done, std::uint64_t total) {
            if (total > (64u << 20))
                std::fprintf(stderr, "\rreading %.0f%% (%llu MB)",
                             100.0 * static_cast<double>(done) / static_cast<double>(total),
                             static_cast<unsigned long long>(done >> 20));
        };
    }
    auto analysis = analyze(options);
    if (!o.quiet) {
        if (tty && analysis->parsed.stats.raw_bytes > (64u << 20))
            std::fprintf(stderr, "\r%40s\r", "");
        for (const auto& w : analysis->parsed.warnings)
            std::fprintf(stderr, "warning: %s\n", w.c_str());
        if (analysis->dims_rewrite)
            std::fprintf(stderr, "%s\n", describe(*analysis->dims_rewrite).c_str());
    }
    return analysis;
}

void keep_until_exit(std::unique_ptr<Analysis> analysis) {
    // A plain pointer: no destructor of it runs at exit. One analysis is kept (a command ends
    // once); another would be freed here as usual.
    static const Analysis* kept = nullptr;
    if (kept == nullptr) kept = analysis.release();
}

}  // namespace replay::cli
