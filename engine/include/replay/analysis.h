// One trace, read and understood: parsed model, kernel graph, recipes and unique kernels.
// Every command starts here.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "replay/classifier.h"
#include "replay/kernel_graph.h"
#include "replay/kineto_parser.h"
#include "replay/shape_rewrite.h"
#include "replay/signatures.h"

namespace replay {

struct AnalysisOptions {
    std::string trace_path;
    std::string execution_trace_path;  // --et: PyTorch Execution Trace of the same run
    std::string shape_log_path;        // --shapes: JSONL shape log
    std::optional<DimsRequest> set_dims;  // --set-dims: the trace rewritten to another shape
    ParseOptions parse;
    // --recipes: kernel_signatures.json files or traces of other runs whose recipes serve the
    // kernels without an op (recipe_library.h)
    std::vector<std::string> recipe_libraries;
    // --inductor-cache: torch.compile's cache folder (or a tar of it) for the Triton kernels
    std::string inductor_cache;
};

struct Analysis {
    ParseResult parsed;
    KernelGraph graph;
    std::vector<Recipe> recipes;  // per graph node
    std::vector<UniqueKernel> kernels;
    double coverage = 0;  // share of recorded kernel time with a recipe
    std::string
        trace_hash;  // content hash of the recorded GPU activities (compression-independent)
    std::vector<std::string> notes;
    std::string execution_trace;  // the --et file, when one was joined
    std::string shape_log;        // the --shapes file, when one was joined
    std::vector<std::string> recipe_libraries;  // the --recipes files
    std::string inductor_cache;                 // the --inductor-cache folder or tar
    std::optional<ShapeRewriteReport> dims_rewrite;  // --set-dims: what was rewritten
    double parse_seconds = 0;
    const Trace& trace() const { return parsed.trace; }
};

// Throws InputError for unusable input. The result is not movable: the graph points into it.
std::unique_ptr<Analysis> analyze(const AnalysisOptions& options);

}  // namespace replay
