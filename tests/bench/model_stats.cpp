#include "model_stats.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace replay::bench {
namespace {

// A heap block of n bytes as glibc malloc holds it (8-byte header, 16-byte granules, 32 minimum).
std::uint64_t heap(std::uint64_t n) {
    if (n == 0) return 0;
    return std::max<std::uint64_t>(32, (n + 8 + 15) / 16 * 16);
}
template <typename T>
std::uint64_t heap_of(const std::vector<T>& v) {
    return heap(v.capacity() * sizeof(T));
}
std::uint64_t heap_of(const std::string& s) {
    return s.size() > 15 ? heap(s.capacity() + 1) : 0;
}

std::uint64_t heap_of(const TensorSpec& t) {
    return heap_of(t.dims) + heap_of(t.strides);
}

std::uint64_t heap_of(const Recipe& r) {
    std::uint64_t total = heap_of(r.rule) + heap_of(r.reason);
    if (const auto* g = std::get_if<GemmRecipe>(&r.detail)) total += heap_of(g->op);
    if (const auto* c = std::get_if<CollectiveRecipe>(&r.detail)) total += heap_of(c->collective);
    if (const auto* a = std::get_if<AtenRecipe>(&r.detail)) {
        total += heap_of(a->op) + heap_of(a->overload) + heap_of(a->schema) + heap_of(a->args);
        for (const auto& arg : a->args) {
            total += heap_of(arg.type) + heap_of(arg.value) + heap_of(arg.tensors);
            for (const auto& t : arg.tensors) total += heap_of(t);
        }
    }
    return total;
}

struct Row {
    std::string name;
    std::uint64_t count = 0;
    std::uint64_t element = 0;  // sizeof, 0 for rows that are heap only
    std::uint64_t bytes = 0;    // everything the row holds: elements, slack and heap
};

void print_rows(std::FILE* out, const char* title, const std::vector<Row>& rows, double events) {
    std::fprintf(out, "  %s\n", title);
    std::fprintf(out, "    %-44s %12s %8s %12s %10s\n", "structure", "count", "sizeof", "MiB",
                 "B/event");
    std::uint64_t total = 0;
    for (const Row& r : rows) {
        total += r.bytes;
        std::fprintf(
            out, "    %-44s %12llu %8llu %12.1f %10.2f\n", r.name.c_str(),
            static_cast<unsigned long long>(r.count), static_cast<unsigned long long>(r.element),
            static_cast<double>(r.bytes) / (1 << 20), static_cast<double>(r.bytes) / events);
    }
    std::fprintf(out, "    %-44s %12s %8s %12.1f %10.2f\n", "total", "", "",
                 static_cast<double>(total) / (1 << 20), static_cast<double>(total) / events);
}

template <typename T>
Row vector_row(const char* name, const std::vector<T>& v) {
    return {name, v.size(), sizeof(T), heap_of(v)};
}

void model_rows(const Trace& t, std::vector<Row>& rows) {
    rows.push_back(vector_row("Trace::cpu_ops (CpuOp)", t.cpu_ops));
    rows.push_back(vector_row("Trace::runtime_calls (RuntimeCall)", t.runtime_calls));
    rows.push_back(vector_row("Trace::activities (GpuActivity)", t.activities));
    Row shapes = vector_row("Trace::op_shapes (OpShapes, shared)", t.op_shapes);
    Row args{"  OpArgument + dims/strides/lists", 0, sizeof(OpArgument), 0};
    for (const auto& s : t.op_shapes) {
        shapes.bytes += heap_of(s.output_storage_ids) + heap_of(s.output_dims);
        for (const auto& d : s.output_dims) shapes.bytes += heap_of(d);
        args.count += s.inputs.size();
        args.bytes += heap_of(s.inputs);
        for (const auto& a : s.inputs)
            args.bytes += heap_of(a.dims) + heap_of(a.strides) + heap_of(a.list_ranks) +
                          heap_of(a.list_storage_ids);
    }
    rows.push_back(shapes);
    rows.push_back(args);
    // StringPool: a std::string in a deque, a pointer in a vector, an unordered_map node (next,
    // string_view, id, cached hash) and its bucket, plus the text when it is not inline.
    Row names{"Trace::names (StringPool)", t.names.size(),
              sizeof(std::string) + sizeof(void*) + 48 + sizeof(void*), 0};
    names.bytes = names.count * names.element;
    for (std::size_t i = 0; i < t.names.size(); ++i) {
        const std::size_t n = t.names.view(static_cast<NameId>(i)).size();
        if (n > 15) names.bytes += heap(n + 1);
    }
    rows.push_back(names);
}

void engine_rows(const Analysis& a, std::vector<Row>& rows) {
    const KernelGraph& g = a.graph;
    rows.push_back(vector_row("KernelGraph nodes (GraphNode)", g.nodes()));
    Row streams = vector_row("KernelGraph streams + node lists", g.streams());
    for (const auto& s : g.streams()) streams.bytes += heap_of(s.nodes);
    rows.push_back(streams);
    rows.push_back(vector_row("KernelGraph waits (StreamWait)", g.waits()));
    rows.push_back(vector_row("KernelGraph host syncs (HostSync)", g.host_syncs()));
    const std::vector<Recipe>& table = a.recipes.table();
    Row recipes = vector_row("Analysis::recipes table (Recipe)", table);
    for (const auto& r : table) recipes.bytes += heap_of(r);
    rows.push_back(recipes);
    rows.push_back({"Analysis::recipes per-node index", a.recipes.size(), sizeof(std::uint32_t),
                    a.recipes.size() * sizeof(std::uint32_t)});
    Row kernels = vector_row("Analysis::kernels (UniqueKernel)", a.kernels);
    for (const auto& k : a.kernels)
        kernels.bytes += heap_of(k.id) + heap_of(k.name) + heap_of(k.nodes) + heap_of(k.recipe);
    rows.push_back(kernels);
}

// Counts behind the compact-model plan: which records and fields the engine needs.
void usage_counts(const Analysis& a, std::FILE* out) {
    const Trace& t = a.trace();
    const KernelGraph& g = a.graph;
    // Ops on some activity's op chain (innermost op and its ancestors): the only ones the
    // classifier, the reuse sweep and the replayers read.
    std::vector<bool> on_chain(t.cpu_ops.size(), false);
    for (const GraphNode& n : g.nodes())
        for (std::uint32_t op = n.op; op != kNoIndex && !on_chain[op]; op = t.cpu_ops[op].parent)
            on_chain[op] = true;
    std::uint64_t chain_ops = 0, by_category[3] = {0, 0, 0}, with_shapes = 0, with_ext = 0,
                  with_rf = 0, with_seq = 0;
    std::set<std::pair<std::int64_t, std::int64_t>> threads;
    for (std::size_t i = 0; i < t.cpu_ops.size(); ++i) {
        const CpuOp& op = t.cpu_ops[i];
        chain_ops += on_chain[i];
        by_category[std::min<std::uint8_t>(op.category, 2)]++;
        with_shapes += op.shapes != kNoIndex;
        with_ext += op.external_id != kNoId;
        with_rf += op.record_function_id != kNoId;
        with_seq += op.sequence_number != kNoId;
        threads.insert({op.pid, op.tid});
    }
    std::vector<bool> launches(t.runtime_calls.size(), false);
    for (const GraphNode& n : g.nodes())
        if (n.launch != kNoIndex) launches[n.launch] = true;
    std::uint64_t launch_calls = 0, with_correlation = 0, with_wait = 0;
    for (std::size_t i = 0; i < t.runtime_calls.size(); ++i) {
        const RuntimeCall& c = t.runtime_calls[i];
        launch_calls += launches[i];
        with_correlation += c.correlation != kNoId;
        with_wait += c.wait_on_stream != kNoId || c.wait_on_event_correlation != kNoId;
        threads.insert({c.pid, c.tid});
    }
    std::uint64_t collectives = 0, sized = 0;
    std::set<std::pair<std::int64_t, std::int64_t>> streams;
    for (const GpuActivity& x : t.activities) {
        collectives += x.collective != StringPool::kEmpty || x.in_nelems >= 0;
        sized += x.bytes >= 0;
        streams.insert({x.device, x.stream});
    }
    const auto n = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
    std::fprintf(out, "  usage\n");
    std::fprintf(out,
                 "    cpu_ops %llu: %llu cpu_op, %llu user_annotation, %llu python_function; "
                 "%llu on an activity's op chain; %llu with shapes, %llu with External id, %llu "
                 "with Record function id, %llu with Sequence number\n",
                 n(t.cpu_ops.size()), n(by_category[0]), n(by_category[1]), n(by_category[2]),
                 n(chain_ops), n(with_shapes), n(with_ext), n(with_rf), n(with_seq));
    std::fprintf(out,
                 "    runtime_calls %llu: %llu launch an activity, %llu carry a correlation, %llu "
                 "carry wait args; %llu host syncs\n",
                 n(t.runtime_calls.size()), n(launch_calls), n(with_correlation), n(with_wait),
                 n(g.host_syncs().size()));
    std::fprintf(out,
                 "    activities %llu: %llu with collective args, %llu with bytes; %llu streams; "
                 "%llu CPU threads; %llu names; %llu op_shapes entries; %llu flow events "
                 "(counted, not kept)\n",
                 n(t.activities.size()), n(collectives), n(sized), n(streams.size()),
                 n(threads.size()), n(t.names.size()), n(t.op_shapes.size()), n(t.flow_events));
    std::fprintf(out, "    recipe table %llu entries for %llu activities; %llu unique kernels\n",
                 n(a.recipes.table().size()), n(a.recipes.size()), n(a.kernels.size()));
}

}  // namespace

void print_model_stats(const Analysis& analysis, std::FILE* out) {
    const double events =
        static_cast<double>(std::max<std::uint64_t>(1, analysis.parsed.stats.events));
    std::fprintf(out, "model stats (%llu events; B/event = bytes per trace event)\n",
                 static_cast<unsigned long long>(analysis.parsed.stats.events));
    std::vector<Row> model, engine;
    model_rows(analysis.trace(), model);
    print_rows(out, "trace model (parsers/trace_model.h)", model, events);
    engine_rows(analysis, engine);
    print_rows(out, "engine structures", engine, events);
    usage_counts(analysis, out);
}

}  // namespace replay::bench
