// One trace, read and understood: parsed model, kernel graph, recipes and unique kernels.
// Every command starts here.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "replay/classifier.h"
#include "replay/dataflow.h"
#include "replay/kernel_graph.h"
#include "replay/kineto_parser.h"
#include "replay/shape_rewrite.h"
#include "replay/signatures.h"
#include "replay/tensor_lists.h"

namespace replay {

struct AnalysisOptions {
    std::string trace_path;
    std::string execution_trace_path;  // --et: PyTorch Execution Trace of the same run
    std::string shape_log_path;        // --shapes: JSONL shape log
    std::optional<DimsRequest> set_dims;  // --set-dims: the trace rewritten to another shape
    ParseOptions parse;  // parse.threads also bounds the threads of the stages after parsing
    // EveryActivity: also classify each activity alone and throw if a shared decision differs
    // (slow; tests and benchmarks).
    ClassifyCheck classify_check = ClassifyCheck::None;
    // Called as each stage ends ("parse", "graph", "classify", ...), for benchmarks that time the
    // stages and sample memory between them.
    std::function<void(std::string_view stage)> on_stage;
    bool infer_dataflow = true;  // false: storage ids only from an Execution Trace
    // --recipes: kernel_signatures.json files or traces of other runs whose recipes serve the
    // kernels without an op (recipe_library.h)
    std::vector<std::string> recipe_libraries;
    // --inductor-cache: torch.compile's cache folder (or a tar of it) for the Triton kernels
    std::string inductor_cache;
};

struct Analysis {
    ParseResult parsed;
    KernelGraph graph;
    NodeRecipes recipes;  // decision(node) / recipe(node): those of graph node `node`
    std::vector<UniqueKernel> kernels;
    double coverage = 0;  // share of recorded kernel time with a recipe
    DataflowSummary dataflow;  // where the inputs' storage ids came from
    // True when the inferred parameters did not fit the replay's memory and the storage ids
    // were dropped (fit_dataflow).
    bool dataflow_dropped = false;
    TensorListSummary tensor_lists;  // tensor lists Kineto recorded as [], recovered
    std::string
        trace_hash;  // content hash of the recorded GPU activities (compression-independent)
    ActivityTotals activity_totals;  // the activities' counts and times per kind
    std::vector<std::string> notes;
    std::string execution_trace;  // the --et file, when one was joined
    std::string shape_log;        // the --shapes file, when one was joined
    std::vector<std::string> recipe_libraries;  // the --recipes files
    // Kernels without an op that took the storage ids of the eager instance they were matched
    // to (recipe_library.h): their buffers follow that instance's dataflow.
    std::size_t library_storage_kernels = 0;
    std::string inductor_cache;                 // the --inductor-cache folder or tar
    std::optional<ShapeRewriteReport> dims_rewrite;  // --set-dims: what was rewritten
    double parse_seconds = 0;
    const Trace& trace() const { return parsed.trace; }
};

// "et", "inferred", "none", or "inferred-fallback" after fit_dataflow dropped the storage ids.
std::string dataflow_label(const Analysis& analysis);

// Keeps a replay's memory bounded: when the parameters inferred without an Execution Trace need
// more than `budget_bytes` (described by `budget_what`), drops the storage ids (buffers reused by
// shape, as without dataflow) and says so in the notes. Returns true when it dropped them.
bool fit_dataflow(Analysis& analysis, std::int64_t budget_bytes, const std::string& budget_what);

// Throws InputError for unusable input. The result is not movable: the graph points into it.
std::unique_ptr<Analysis> analyze(const AnalysisOptions& options);

}  // namespace replay
