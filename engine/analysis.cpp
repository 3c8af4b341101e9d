#include "replay/analysis.h"

#include <malloc.h>

#include <chrono>
#include <future>
#include <sstream>

#include "replay/document_kind.h"
#include "replay/execution_trace.h"
#include "replay/format_bytes.h"
#include "replay/inductor_cache.h"
#include "replay/recipe_library.h"
#include "replay/reuse.h"
#include "replay/shape_log.h"

namespace replay {
namespace {

// `read()`'s result; its InputError, where `path` is a document of another kind than `wanted`
// (an Execution Trace or a report as the trace), says what the file is instead of where the
// reader gave up on it.
template <class Read>
auto read_as(const std::string& path, DocumentKind wanted, Read read) {
    try {
        return read();
    } catch (const InputError&) {
        const std::string misplaced = misplaced_document(path, wanted);
        if (misplaced.empty()) throw;
        throw InputError(path, 0, misplaced);
    }
}

}  // namespace

std::string dataflow_label(const Analysis& analysis) {
    std::string label = to_string(analysis.dataflow.source);
    if (analysis.library_storage_kernels > 0 && !analysis.dataflow_dropped)
        label = analysis.dataflow.source == DataflowSource::None ? "library" : label + "+library";
    return label + (analysis.dataflow_dropped ? "-fallback" : "");
}

bool fit_dataflow(Analysis& analysis, std::int64_t budget_bytes, const std::string& budget_what) {
    if (analysis.dataflow.source != DataflowSource::Inferred || analysis.dataflow_dropped ||
        budget_bytes <= 0 || analysis.dataflow.persistent_bytes <= budget_bytes)
        return false;
    analysis.recipes.drop_storage_ids();
    for (auto& kernel : analysis.kernels) {
        std::vector<Recipe> one{kernel.recipe};
        drop_storage_ids(one);
        kernel.recipe = std::move(one.front());
    }
    analysis.dataflow_dropped = true;
    std::ostringstream note;
    note << "dataflow inferred, but its " << format_bytes(analysis.dataflow.persistent_bytes)
         << " of distinct parameter buffers exceed the " << format_bytes(budget_bytes) << " of "
         << budget_what << ": buffers are reused by shape instead (weights may stay in L2)";
    analysis.notes.push_back(note.str());
    return true;
}

std::unique_ptr<Analysis> analyze(const AnalysisOptions& options) {
    auto analysis = std::make_unique<Analysis>();
    auto stage_done = [&](std::string_view stage) {
        if (options.on_stage) options.on_stage(stage);
    };
    const auto start = std::chrono::steady_clock::now();
    analysis->parsed = read_as(options.trace_path, DocumentKind::Trace,
                               [&] { return parse_kineto(options.trace_path, options.parse); });
    analysis->parse_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    Trace& trace = analysis->parsed.trace;
    stage_done("parse");
    if (!options.execution_trace_path.empty()) {
        const ExecutionTrace et =
            read_as(options.execution_trace_path, DocumentKind::ExecutionTrace,
                    [&] { return read_execution_trace(options.execution_trace_path); });
        const AttachStats s = attach_execution_trace(trace, et);
        analysis->execution_trace = options.execution_trace_path;
        std::ostringstream note;
        note << "execution trace " << options.execution_trace_path << ": joined " << s.matched
             << " nodes by " << to_string(s.join) << " (" << s.unmatched_nodes << " unmatched, "
             << s.shapes_filled << " ops got shapes)";
        analysis->notes.push_back(note.str());
        // An ET of another run joins a few ops by coincidence of ids; say so rather than quietly
        // replaying with half-attached schemas.
        const std::size_t nodes = s.matched + s.unmatched_nodes;
        if (nodes > 0 && s.matched * 2 < nodes) {
            std::ostringstream warning;
            warning << options.execution_trace_path << ": only " << s.matched << " of " << nodes
                    << " execution trace nodes matched an op of " << options.trace_path;
            if (s.name_mismatches > 0)
                warning << " (" << s.name_mismatches << " had an op's id but another name)";
            warning << ": is it from the same run?";
            analysis->parsed.warnings.push_back(warning.str());
        } else if (const LentIteration lent = lend_execution_trace_iteration(trace); lent.ops > 0) {
            std::ostringstream lent_note;
            lent_note << "execution trace of one iteration (" << lent.pattern_ops << " ops on "
                      << lent.threads << (lent.threads == 1 ? " thread" : " threads")
                      << "): its op sequence recurs " << lent.repeats
                      << " times in the trace (each thread's part counted apart), whose "
                      << lent.ops
                      << " ops without shapes took the iteration's shapes and storage ids "
                         "(record_shapes was off: an iteration that ran other shapes would "
                         "replay with these); "
                      << lent.unshaped << " ops are still without shapes";
            analysis->notes.push_back(lent_note.str());
        }
        stage_done("execution trace");
    }
    if (!options.shape_log_path.empty()) {
        const ShapeLog log = read_shape_log(options.shape_log_path);
        const ShapeLogStats s = attach_shape_log(trace, log);
        analysis->shape_log = options.shape_log_path;
        std::ostringstream note;
        note << "shape log " << options.shape_log_path << ": "
             << s.matched_by_rf_id + s.matched_by_external_id << " ops matched, " << s.unmatched
             << " records unmatched, " << s.shapes_filled << " ops got shapes";
        analysis->notes.push_back(note.str());
        stage_done("shape log");
    }
    const unsigned threads = parse_threads(options.parse);
    // The inference needs only the ops' nesting: it runs beside the rest of the graph build,
    // unless --set-dims rewrites the shapes in between.
    const bool dataflow = options.infer_dataflow || !options.execution_trace_path.empty();
    const bool dataflow_beside = dataflow && !options.set_dims;
    const auto infer = [&] { analysis->dataflow = infer_dataflow(trace); };
    // Its look over every op and its records' storage are prepared on the calling thread while
    // the ops are nested, the passes run after, beside the launches' linking.
    std::optional<DataflowPrep> prep;
    std::promise<void> prepared;  // set (or broken with the prep's exception) before build ends
    std::shared_future<void> prep_done = prepared.get_future().share();
    const auto prepare = [&] {
        try {
            prep.emplace(trace);
            prepared.set_value();
        } catch (...) {
            prepared.set_exception(std::current_exception());
            throw;
        }
    };
    const auto infer_beside = [&](const ThreadOps& ops) {
        prep_done.get();
        analysis->dataflow = infer_dataflow(trace, ops, *prep);
        // The inference's transient memory was freed into this thread's malloc arena, which the
        // calling thread's later allocations do not reuse: give its pages back.
        malloc_trim(0);
    };
    // The tensor lists' look at the launches reads only the graph: it runs on the calling thread
    // once the launches are linked, while the inference may still run on the other.
    MultiTensorLaunches multi_tensor;
    const auto read_launches = [&](const KernelGraph& graph) {
        multi_tensor = multi_tensor_launches(graph);
    };
    using AfterNesting = std::function<void(const ThreadOps&)>;
    using BesideNesting = std::function<void()>;
    using OnceLinked = std::function<void(const KernelGraph&)>;
    analysis->graph = KernelGraph::build(
        trace, threads, dataflow_beside ? AfterNesting(infer_beside) : nullptr,
        dataflow_beside ? BesideNesting(prepare) : nullptr, OnceLinked(read_launches));
    stage_done("graph");
    if (options.set_dims) {  // after the graph: the rewrite reads the ops' nesting
        analysis->dims_rewrite = ShapeRewriter(trace).apply(trace, *options.set_dims);
        analysis->notes.push_back(describe(*analysis->dims_rewrite));
        // The copies the new shape makes are kernels the graph must hold.
        if (analysis->dims_rewrite->reshape_copies > 0)
            analysis->graph =
                KernelGraph::build(trace, threads, nullptr, nullptr, OnceLinked(read_launches));
    }
    // Before the classifier: it copies the storage ids and tensor lists into the recipes. With an
    // ET: its storage ids, summarised.
    if (dataflow && !dataflow_beside) infer();
    if (analysis->dataflow.source == DataflowSource::Inferred)
        analysis->notes.push_back(describe(analysis->dataflow));
    analysis->tensor_lists =
        recover_tensor_lists(multi_tensor, trace, analysis->dataflow.parameters);
    TensorListSummary stacks = recover_stack_lists(trace);
    for (std::size_t i = 0; i < stacks.ops.size(); ++i) {
        analysis->tensor_lists.ops.push_back(stacks.ops[i]);
        analysis->tensor_lists.how.push_back(std::move(stacks.how[i]));
    }
    analysis->tensor_lists.unrecovered += stacks.unrecovered;
    // The classifier walks the op chains on a second thread; what the walk found is kept for the
    // reuse annotation.
    std::vector<std::uint32_t> shaped_ops;
    analysis->recipes = classify(analysis->graph, options.classify_check, threads, &shaped_ops);
    explain_recovered_lists(analysis->graph, analysis->tensor_lists, analysis->recipes);
    // Triton kernels take their compiled variants; the library calls between them in the
    // wrapper code serve the kernels without an op there, before any recipe library.
    if (!options.inductor_cache.empty()) {
        const InductorCache cache = read_inductor_cache(options.inductor_cache);
        const InductorStats s = apply_inductor_cache(analysis->graph, analysis->recipes, cache);
        analysis->inductor_cache = options.inductor_cache;
        std::ostringstream note;
        note << "inductor cache " << options.inductor_cache << ": " << s.matched << " of "
             << s.triton_kernels << " Triton launches got a compiled variant ("
             << cache.variants.size() << " variants, " << cache.calls.size() << " call sites)";
        for (const auto& why : s.unmatched_reasons) note << "; " << why;
        analysis->notes.push_back(note.str());
        const ExternStats e = apply_inductor_externs(analysis->graph, analysis->recipes, cache, s);
        if (e.candidates > 0) {
            std::ostringstream externs;
            externs << "inductor cache: " << e.matched << " of " << e.candidates
                    << " kernels without an op between Triton launches took the library call "
                       "there in the wrapper code ("
                    << cache.externs.size() << " library calls)";
            for (const auto& why : e.unmatched_reasons) externs << "; " << why;
            analysis->notes.push_back(externs.str());
        }
    }
    // Kernels without an op: a graph's take the recipes of their eager instances in this trace,
    // then those of the --recipes files.
    if (!options.recipe_libraries.empty() || analysis->graph.stats().graph_launched_activities > 0) {
        RecipeLibrary library;
        for (const auto& path : options.recipe_libraries) library.add_file(path);
        const LibraryStats s = apply_recipe_library(analysis->graph, analysis->recipes, library);
        analysis->recipe_libraries = options.recipe_libraries;
        std::ostringstream note;
        note << "recipe library: " << s.matched << " of " << s.candidates
             << " kernels without an op got a recipe (" << s.from_own_trace
             << " from this trace's eager instances, " << s.by_neighbours
             << " issues told apart by their neighbours; " << library.size()
             << " library entries; " << s.with_storages
             << " with the buffers of the eager instance matched, in recorded order)";
        analysis->library_storage_kernels = s.with_storages;
        if (s.matched > 0 || !options.recipe_libraries.empty())
            analysis->notes.push_back(note.str());
    }
    stage_done("classify");
    // The unique kernels are grouped by the nodes' decisions, which the reuse distances leave
    // alone, as does the coverage: the grouping runs beside them (the coverage after them, the
    // shorter of the two), the kernels take their recipes after.
    auto kernels = std::async(threads > 1 ? std::launch::async : std::launch::deferred, [&] {
        return unique_kernels_by_decision(analysis->graph, analysis->recipes, threads);
    });
    annotate_reuse(analysis->graph, analysis->recipes, shaped_ops);
    analysis->coverage = kernel_time_coverage(analysis->graph, analysis->recipes);
    stage_done("reuse");
    analysis->kernels = kernels.get();
    take_first_instance_recipes(analysis->kernels, analysis->recipes);
    stage_done("unique kernels");
    // The parse hashed the activities as it merged them: the recorded trace's, whatever
    // --set-dims adds (its copies are activities too, counted in the totals).
    analysis->trace_hash = analysis->parsed.content_hash;
    analysis->activity_totals =
        options.set_dims ? trace.activity_totals() : analysis->parsed.activity_totals;
    return analysis;
}

}  // namespace replay
