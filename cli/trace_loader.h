// The one way every command reads a trace: the same options (--et, --shapes, --recipes, --strict, --quiet,
// --max-event-bytes),
// the same progress line and the same parse warnings on stderr.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "replay/analysis.h"

namespace replay::cli {

struct LoadOptions {
    std::string et;      // --et: Execution Trace of the same run
    std::string shapes;  // --shapes: JSONL shape log
    std::vector<std::string> recipes;  // --recipes: recipe libraries (recipe_library.h)
    std::string inductor_cache;        // --inductor-cache: Triton binaries (inductor_cache.h)
    std::string set_dims;  // --set-dims batch=N,seq=N
    bool strict = false;
    bool quiet = false;
    bool no_dataflow = false;  // --no-dataflow: no inference without --et (buffers by shape)
    std::uint64_t max_event_bytes = ParseOptions{}.max_event_bytes;
};

// Which of the side-file options a command offers: they belong to one trace, so a command that
// reads two (compare) offers only --strict and --quiet, and one that reads several (regress)
// takes them with a single trace.
enum class SideFiles { Offered, OneTraceOnly, NotOffered };

// Adds the positional TRACE argument.
CLI::Option* add_trace_argument(CLI::App& app, std::string& path);

// Adds --et, --shapes and --no-dataflow (when offered), --strict and -q/--quiet.
void add_load_options(CLI::App& app, LoadOptions& options, SideFiles side_files);

// Adds --set-dims (classify, predict, the replay and sweep): the trace rewritten to another
// batch and sequence length (shape_rewrite.h).
void add_set_dims_option(CLI::App& app, LoadOptions& options);

// Parses and analyses one trace; prints the parse warnings unless quiet. Throws InputError.
std::unique_ptr<Analysis> load_trace(const std::string& path, const LoadOptions& options);

// For a command about to end: the analysis is left to the process's exit, which returns its
// memory at once, instead of being freed piece by piece (~20 ms for a 1 GB trace). It stays
// reachable from a static pointer (not a leak to LeakSanitizer); nothing it holds is open.
void keep_until_exit(std::unique_ptr<Analysis> analysis);

}  // namespace replay::cli
