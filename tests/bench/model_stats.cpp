#include "model_stats.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "bench_support.h"

namespace replay::bench {
namespace {

using bench::heap_of;  // vectors; strings and recipes below
std::uint64_t heap_of(const std::string& s) {
    return s.size() > 15 ? heap(s.capacity() + 1) : 0;
}

std::uint64_t heap_of(const Recipe& r) {
    std::uint64_t total = heap_of(r.rule) + heap_of(r.reason);
    if (const auto* g = std::get_if<GemmRecipe>(&r.detail)) total += heap_of(g->op);
    if (const auto* c = std::get_if<CollectiveRecipe>(&r.detail)) total += heap_of(c->collective);
    if (const auto* a = std::get_if<AtenRecipe>(&r.detail)) {
        total += heap_of(a->op) + heap_of(a->overload) + heap_of(a->schema) + heap_of(a->args);
        for (const auto& arg : a->args) {
            total += heap_of(arg.type) + heap_of(arg.value) + heap_of(arg.tensors);
            for (const auto& t : arg.tensors) total += heap_of(t.dims) + heap_of(t.strides);
        }
    }
    return total;
}

struct Row {
    std::string name;
    std::uint64_t count = 0;
    std::uint64_t element = 0;  // sizeof, 0 for rows that are heap only
    std::uint64_t bytes = 0;    // the elements in use and their heap blocks (what is resident)
    std::uint64_t slack = 0;    // capacity beyond the size (allocated, never touched)
};

template <typename T>
Row vector_row(const char* name, const std::vector<T>& v) {
    return {name, v.size(), sizeof(T), v.size() * sizeof(T), (v.capacity() - v.size()) * sizeof(T)};
}

void print_rows(std::FILE* out, const char* title, const std::vector<Row>& rows, double events) {
    std::fprintf(out, "  %s\n", title);
    std::fprintf(out, "    %-46s %10s %7s %9s %8s %9s\n", "structure", "count", "sizeof", "MiB",
                 "B/event", "slack MiB");
    std::uint64_t total = 0, slack = 0;
    for (const Row& r : rows) {
        total += r.bytes;
        slack += r.slack;
        std::fprintf(
            out, "    %-46s %10llu %7llu %9.1f %8.2f %9.1f\n", r.name.c_str(),
            static_cast<unsigned long long>(r.count), static_cast<unsigned long long>(r.element),
            static_cast<double>(r.bytes) / (1 << 20), static_cast<double>(r.bytes) / events,
            static_cast<double>(r.slack) / (1 << 20));
    }
    std::fprintf(out, "    %-46s %10s %7s %9.1f %8.2f %9.1f\n", "total", "", "",
                 static_cast<double>(total) / (1 << 20), static_cast<double>(total) / events,
                 static_cast<double>(slack) / (1 << 20));
}

void model_rows(const Trace& t, std::vector<Row>& rows) {
    rows.push_back(vector_row("Trace::cpu_ops (CpuOp)", t.cpu_ops));
    rows.push_back(vector_row("Trace::runtime_calls (RuntimeCall)", t.runtime_calls));
    rows.push_back(vector_row("Trace::activities (GpuActivity)", t.activities));
    Row shapes = vector_row("Trace::op_shapes (OpShapes, shared)", t.op_shapes);
    Row args{"  their OpArgument + dims/strides/lists", 0, sizeof(OpArgument), 0, 0};
    for (const auto& s : t.op_shapes) {
        args.count += s.inputs.size();
        args.bytes += heap_of(s.inputs);
        for (const auto& a : s.inputs)
            args.bytes += heap_of(a.dims) + heap_of(a.strides) + heap_of(a.list_ranks);
    }
    rows.push_back(shapes);
    rows.push_back(args);
    rows.push_back({"Trace::storages (OpStorages, per op with ids)", t.storages.records(), 0,
                    t.storages.bytes(), 0});
    // StringPool: a std::string in a deque, a pointer in a vector, an unordered_map node (next,
    // string_view, id, cached hash) and its bucket, plus the text when it is not inline.
    Row names{"Trace::names (StringPool)", t.names.size(),
              sizeof(std::string) + sizeof(void*) + 48 + sizeof(void*), 0, 0};
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
    Row recipes = vector_row("Analysis::recipes table (Recipe)", a.recipes.table());
    for (const auto& r : a.recipes.table()) recipes.bytes += heap_of(r);
    rows.push_back(recipes);
    // Per node: its entry and where its storage ids and reuse distances start in the pools.
    rows.push_back({"Analysis::recipes per-node entry", a.recipes.size(), 3 * sizeof(std::uint32_t),
                    a.recipes.size() * 3 * sizeof(std::uint32_t), 0});
    rows.push_back({"Analysis::recipes storage/reuse pools", a.recipes.pooled_values(),
                    sizeof(std::int64_t), a.recipes.pooled_values() * sizeof(std::int64_t), 0});
    Row kernels = vector_row("Analysis::kernels (UniqueKernel)", a.kernels);
    for (const auto& k : a.kernels)
        kernels.bytes += heap_of(k.id) + heap_of(k.name) + heap_of(k.nodes) + heap_of(k.recipe);
    rows.push_back(kernels);
}

// What the trace model's records hold, counted: which fields are set, which records the engine
// reaches. The compact layout below is sized from these counts.
struct Usage {
    std::uint64_t ops_on_chain = 0, op_category[3] = {0, 0, 0}, ops_with_shapes = 0,
                  ops_with_external = 0, ops_with_rf = 0, ops_with_sequence = 0;
    std::uint64_t launch_calls = 0, calls_with_correlation = 0, calls_with_wait = 0;
    std::uint64_t collectives = 0, sized = 0;
    std::size_t threads = 0, streams = 0;
};

Usage usage_of(const Analysis& a) {
    const Trace& t = a.trace();
    const KernelGraph& g = a.graph;
    Usage u;
    // Ops on some activity's op chain (innermost op and its ancestors): the only ones the
    // classifier, the reuse sweep and the replayers read.
    std::vector<bool> on_chain(t.cpu_ops.size(), false);
    for (const GraphNode& n : g.nodes())
        for (std::uint32_t op = n.op; op != kNoIndex && !on_chain[op]; op = t.cpu_ops[op].parent)
            on_chain[op] = true;
    std::set<std::pair<std::int64_t, std::int64_t>> threads, streams;
    for (std::size_t i = 0; i < t.cpu_ops.size(); ++i) {
        const CpuOp& op = t.cpu_ops[i];
        u.ops_on_chain += on_chain[i];
        u.op_category[std::min<std::uint8_t>(op.category, 2)]++;
        u.ops_with_shapes += op.shapes != kNoIndex;
        u.ops_with_external += op.external_id != kNoId;
        u.ops_with_rf += op.record_function_id != kNoId;
        u.ops_with_sequence += op.sequence_number != kNoId;
        threads.insert({op.pid, op.tid});
    }
    std::vector<bool> launches(t.runtime_calls.size(), false);
    for (const GraphNode& n : g.nodes())
        if (n.launch != kNoIndex) launches[n.launch] = true;
    for (std::size_t i = 0; i < t.runtime_calls.size(); ++i) {
        const RuntimeCall& c = t.runtime_calls[i];
        u.launch_calls += launches[i];
        u.calls_with_correlation += c.correlation != kNoId;
        u.calls_with_wait += c.wait_on_stream != kNoId || c.wait_on_event_correlation != kNoId;
        threads.insert({c.pid, c.tid});
    }
    for (const GpuActivity& x : t.activities) {
        u.collectives += x.collective != StringPool::kEmpty || x.in_nelems >= 0;
        u.sized += x.bytes >= 0;
        streams.insert({x.device, x.stream});
    }
    u.threads = threads.size();
    u.streams = streams.size();
    return u;
}

void print_usage(const Analysis& a, const Usage& u, std::FILE* out) {
    const Trace& t = a.trace();
    const auto n = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
    std::fprintf(out, "  usage\n");
    std::fprintf(out,
                 "    cpu_ops %llu: %llu cpu_op, %llu user_annotation, %llu python_function; "
                 "%llu on an activity's op chain; %llu with shapes, %llu with External id, %llu "
                 "with Record function id, %llu with Sequence number\n",
                 n(t.cpu_ops.size()), n(u.op_category[0]), n(u.op_category[1]), n(u.op_category[2]),
                 n(u.ops_on_chain), n(u.ops_with_shapes), n(u.ops_with_external), n(u.ops_with_rf),
                 n(u.ops_with_sequence));
    std::fprintf(out,
                 "    runtime_calls %llu: %llu launch an activity, %llu carry a correlation, %llu "
                 "carry wait args; %llu host syncs\n",
                 n(t.runtime_calls.size()), n(u.launch_calls), n(u.calls_with_correlation),
                 n(u.calls_with_wait), n(a.graph.host_syncs().size()));
    std::fprintf(out,
                 "    activities %llu: %llu with collective args, %llu with bytes; %llu streams; "
                 "%llu CPU threads; %llu names; %llu op_shapes entries; %llu flow events "
                 "(counted, not kept)\n",
                 n(t.activities.size()), n(u.collectives), n(u.sized), n(u.streams), n(u.threads),
                 n(t.names.size()), n(t.op_shapes.size()), n(t.flow_events));
    std::fprintf(out, "    recipe table %llu entries for %llu activities; %llu unique kernels\n",
                 n(a.recipes.table().size()), n(a.recipes.size()), n(a.kernels.size()));
}

// The compact layout of RESULTS.md ("Trace model: what each part costs and what could go"),
// sized from this trace's counts: fixed-size records with a thread or stream slot instead of
// (pid, tid) / (device, stream), and the fields most records lack in side tables of
// (record index, value) pairs.
void print_compact_plan(const Analysis& a, const Usage& u, std::FILE* out, double events) {
    const Trace& t = a.trace();
    constexpr std::uint64_t kOp = 40, kCall = 40, kActivity = 72, kSide = 16;
    constexpr std::uint64_t kCollective = 4 + 4 + 4 + 8 + 8 + 4;  // index, names, nelems, group
    const std::vector<Row> rows = {
        {"CpuOp 80 -> 40 B", t.cpu_ops.size(), kOp, t.cpu_ops.size() * kOp, 0},
        {"  + Record function id / Sequence number side", u.ops_with_rf + u.ops_with_sequence,
         kSide, (u.ops_with_rf + u.ops_with_sequence) * kSide, 0},
        {"RuntimeCall 80 -> 40 B", t.runtime_calls.size(), kCall, t.runtime_calls.size() * kCall,
         0},
        {"  + stream wait args side", u.calls_with_wait, 24, u.calls_with_wait * 24, 0},
        {"GpuActivity 136 -> 72 B", t.activities.size(), kActivity, t.activities.size() * kActivity,
         0},
        {"  + collective args side", u.collectives, kCollective, u.collectives * kCollective, 0},
        {"thread and stream tables", u.threads + u.streams, 16, (u.threads + u.streams) * 16, 0},
    };
    print_rows(out, "compact layout (plan for the parser side; see RESULTS.md)", rows, events);
    const std::uint64_t after_linking = u.ops_on_chain * kOp;
    std::fprintf(out,
                 "    after the graph is built, CPU ops on no activity's op chain replaced by a "
                 "per-runtime-call count of ops started since the thread's previous call: "
                 "cpu_ops %.1f MiB -> %.1f MiB\n",
                 static_cast<double>(t.cpu_ops.size() * kOp) / (1 << 20),
                 static_cast<double>(after_linking + t.runtime_calls.size() * 4) / (1 << 20));
}

}  // namespace

void print_model_stats(const Analysis& analysis, std::FILE* out) {
    const double events =
        static_cast<double>(std::max<std::uint64_t>(1, analysis.parsed.stats.events));
    std::fprintf(out,
                 "model stats (%llu events; MiB resident, B/event = bytes per trace event, slack "
                 "= vector capacity never touched)\n",
                 static_cast<unsigned long long>(analysis.parsed.stats.events));
    std::vector<Row> model, engine;
    model_rows(analysis.trace(), model);
    print_rows(out, "trace model (parsers/trace_model.h)", model, events);
    engine_rows(analysis, engine);
    print_rows(out, "engine structures", engine, events);
    const Usage usage = usage_of(analysis);
    print_usage(analysis, usage, out);
    print_compact_plan(analysis, usage, out, events);
}

}  // namespace replay::bench
