#include "replay/inspect_report.h"

#include <algorithm>
#include <array>
#include <iomanip>
#include <map>
#include <string>
#include <vector>

#include "replay/format_bytes.h"
#include "replay/json_writer.h"
#include "replay/recipe_json.h"
#include "replay/shorten.h"

namespace replay {
namespace {

struct TierTotals {
    std::array<double, 6> time_us{};
    std::array<std::size_t, 6> activities{};
    std::array<std::size_t, 6> unique{};
};

TierTotals tier_totals(const Analysis& a) {
    TierTotals t;
    for (const auto& k : a.kernels) {
        const auto i = static_cast<std::size_t>(k.recipe.tier);
        t.time_us[i] += k.recorded_us.sum;
        t.activities[i] += k.recorded_us.count;
        ++t.unique[i];
    }
    return t;
}

constexpr std::array<const char*, 6> kTierLabels = {
    "not replayable",           "tier 1 copy/memset (CUDA runtime)", "tier 2 GEMM (cuBLASLt)",
    "tier 3 dispatcher op (libtorch)", "tier 4 collective (NCCL)",  "triton (Inductor cache)"};
constexpr std::size_t kTriton = static_cast<std::size_t>(Tier::Triton);

// Share of recorded kernel time whose recipe one process can replay: tier 4 collectives need
// every rank.
double single_process_coverage(const Analysis& a, const ActivityTotals& totals) {
    const double kernel_ns = static_cast<double>(totals.time(ActivityKind::Kernel));
    if (!(kernel_ns > 0)) return a.coverage;
    double collective_ns = 0;
    for (const auto& k : a.kernels)
        if (k.kind == ActivityKind::Kernel && k.recipe.tier == Tier::Collective)
            collective_ns += k.recorded_us.sum * 1000.0;
    return std::max(0.0, a.coverage - collective_ns / kernel_ns);
}

// Not-replayable GPU time grouped by reason, for the "why not" table. Per activity, not per
// unique kernel: instances of one kernel can be unreplayable for different reasons (one launched
// inside an op, another from a thread with no op around it), and a unique kernel keeps only the
// first instance's.
std::map<std::string, std::pair<std::size_t, double>> reasons(const Analysis& a) {
    std::map<std::string, std::pair<std::size_t, double>> out;
    const auto& nodes = a.graph.nodes();
    for (std::size_t n = 0; n < nodes.size() && n < a.recipes.size(); ++n) {
        const Recipe& recipe = a.recipes.decision(n);
        if (recipe.replayable()) continue;
        auto& slot = out[recipe.rule + ": " + shorten(recipe.reason, 90)];
        slot.first += 1;
        slot.second += static_cast<double>(a.trace().activities[nodes[n].activity].dur) / 1000.0;
    }
    return out;
}

}  // namespace

void print_inspect(std::ostream& out, const Analysis& a, int top) {
    const Trace& t = a.trace();
    const ParseStats& s = a.parsed.stats;
    const ActivityTotals& totals = a.activity_totals;
    out << std::fixed;
    out << "trace      " << t.source << " (" << to_string(s.compression) << ", "
        << std::setprecision(1) << static_cast<double>(s.json_bytes) / 1e6 << " MB JSON, parsed in "
        << std::setprecision(2) << a.parse_seconds << " s)\n";
    if (!t.meta.devices.empty())
        out << "recorded   " << t.meta.devices.front().name << " x" << t.meta.devices.size()
            << (t.meta.world_size > 0 ? ", rank " + std::to_string(t.meta.rank) + " of " +
                                            std::to_string(t.meta.world_size)
                                      : "")
            << (t.meta.is_hip ? " (ROCm/HIP)" : "") << "\n";
    out << "events     " << s.events << " (" << t.cpu_ops.size() << " CPU ops/annotations, "
        << t.runtime_calls.size() << " runtime calls, " << t.flow_events << " flow events";
    if (s.malformed > 0) out << "; " << s.malformed << " malformed, skipped";
    out << ")\n";
    out << "\nevents by category\n";
    for (const auto& [cat, n] : s.by_category)
        out << "  " << std::left << std::setw(28) << cat << std::right << std::setw(10) << n
            << "\n";

    const double kernel_us = static_cast<double>(totals.time(ActivityKind::Kernel)) / 1000.0;
    out << "\nGPU activities\n";
    for (ActivityKind kind : {ActivityKind::Kernel, ActivityKind::Memcpy, ActivityKind::Memset})
        out << "  " << std::left << std::setw(8) << to_string(kind) << std::right << std::setw(10)
            << totals.count(kind) << std::setw(16) << std::setprecision(1)
            << static_cast<double>(totals.time(kind)) / 1000.0 << " us\n";

    const TierTotals tiers = tier_totals(a);
    out << "\nGPU time by tier                         activities   unique        time us   "
           "share\n";
    double all = 0;
    for (double x : tiers.time_us) all += x;
    for (std::size_t i = 1; i <= 6; ++i) {
        const std::size_t tier = i % 6;  // tiers 1..4, triton, "not replayable" last
        if (tier == kTriton && tiers.activities[tier] == 0) continue;  // only with --inductor-cache
        out << "  " << std::left << std::setw(38) << kTierLabels[tier] << std::right
            << std::setw(11) << tiers.activities[tier] << std::setw(9) << tiers.unique[tier]
            << std::setw(15) << std::setprecision(1) << tiers.time_us[tier] << std::setw(7)
            << std::setprecision(1) << (all > 0 ? 100.0 * tiers.time_us[tier] / all : 0.0) << "%\n";
    }
    out << "  coverage: " << std::setprecision(2) << 100.0 * a.coverage << "% of "
        << std::setprecision(1) << kernel_us << " us kernel time has a recipe";
    if (const double single = single_process_coverage(a, totals); single < a.coverage)
        out << " (" << std::setprecision(2) << 100.0 * single
            << "% without the tier 4 collectives, which need every rank)";
    out << "\n  dataflow: " << to_string(a.dataflow.source);
    if (a.dataflow.source != DataflowSource::None)
        out << ", " << a.dataflow.persistent_inputs << " inputs from before the step ("
            << a.dataflow.persistent_storages << " storages, "
            << format_bytes(a.dataflow.persistent_bytes) << "), " << a.dataflow.activation_inputs
            << " produced by an earlier op";
    if (!a.tensor_lists.ops.empty())
        out << "; tensor lists recovered for " << a.tensor_lists.ops.size() << " ops";
    out << "\n";
    const auto by_reason = reasons(a);
    std::vector<std::pair<std::string, std::pair<std::size_t, double>>> why(by_reason.begin(),
                                                                            by_reason.end());
    std::stable_sort(why.begin(), why.end(), [](const auto& x, const auto& y) {
        return x.second.second > y.second.second;  // largest time first
    });
    if (!why.empty()) {
        out << "\nnot replayable, by reason (largest first)                                        "
               "activities   time us\n";
        for (const auto& [reason, v] : why)
            out << "  " << std::left << std::setw(92) << shorten(reason, 92) << std::right
                << std::setw(8) << v.first << std::setw(12) << std::setprecision(1) << v.second
                << "\n";
    }

    out << "\nstreams    device  stream  activities       busy us\n";
    for (const auto& st : a.graph.streams())
        out << "         " << std::setw(7) << st.device << std::setw(8) << st.stream
            << std::setw(12) << st.nodes.size() << std::setw(14) << std::setprecision(1)
            << static_cast<double>(st.busy) / 1000.0 << "\n";
    const GraphStats& g = a.graph.stats();
    out << "graph      " << g.linked << " linked, " << g.no_launch << " without launch, " << g.no_op
        << " outside any op; " << g.waits << " cross-stream waits, " << g.host_syncs
        << " host syncs, " << g.graph_launches << " cudaGraphLaunch ("
        << g.graph_launched_activities << " activities), " << g.driver_launches
        << " driver launches\n";

    out << "\ntop unique kernels (" << a.kernels.size() << " in all)\n";
    out << "     count     total us    median us  tier  rule                 name\n";
    int shown = 0;
    for (const auto& k : a.kernels) {
        if (shown++ >= top) break;
        out << std::setw(10) << k.recorded_us.count << std::setw(13) << std::setprecision(1)
            << k.recorded_us.sum << std::setw(13) << std::setprecision(2) << k.recorded_us.median
            << "  " << std::left << std::setw(5) << to_string(k.recipe.tier) << " " << std::setw(20)
            << k.recipe.rule << " " << shorten(k.name, 70) << std::right << "\n";
    }
    for (const auto& note : a.notes) out << "note: " << note << "\n";
}

void write_inspect_json(std::ostream& out, const Analysis& a, int top) {
    const Trace& t = a.trace();
    const ParseStats& s = a.parsed.stats;
    const ActivityTotals& totals = a.activity_totals;
    JsonWriter json(out);
    json.begin_object();
    json.field("trace", t.source).field("trace_hash", a.trace_hash);
    json.key("counts").begin_object();
    for (ActivityKind kind : {ActivityKind::Kernel, ActivityKind::Memcpy, ActivityKind::Memset})
        json.field(to_string(kind), static_cast<std::uint64_t>(totals.count(kind)));
    json.end_object();
    json.field("kernel_time_us", static_cast<double>(totals.time(ActivityKind::Kernel)) / 1000.0);
    json.field("kernel_time_ns", static_cast<std::int64_t>(totals.time(ActivityKind::Kernel)));
    json.field("memcpy_time_us", static_cast<double>(totals.time(ActivityKind::Memcpy)) / 1000.0);
    json.field("memset_time_us", static_cast<double>(totals.time(ActivityKind::Memset)) / 1000.0);
    json.field("unique_kernels", static_cast<std::uint64_t>(a.kernels.size()));
    json.field("coverage", a.coverage);
    json.field("coverage_single_process", single_process_coverage(a, totals));
    json.key("dataflow").begin_object();
    json.field("source", to_string(a.dataflow.source))
        .field("persistent_inputs", static_cast<std::uint64_t>(a.dataflow.persistent_inputs))
        .field("activation_inputs", static_cast<std::uint64_t>(a.dataflow.activation_inputs))
        .field("persistent_storages", static_cast<std::uint64_t>(a.dataflow.persistent_storages))
        .field("persistent_bytes", a.dataflow.persistent_bytes)
        .field("parameters", static_cast<std::uint64_t>(a.dataflow.parameters.size()))
        .field("tensor_lists_recovered", static_cast<std::uint64_t>(a.tensor_lists.ops.size()))
        .field("tensor_lists_unrecovered", static_cast<std::uint64_t>(a.tensor_lists.unrecovered));
    json.end_object();
    json.key("parse").begin_object();
    json.field("compression", to_string(s.compression))
        .field("json_bytes", s.json_bytes)
        .field("raw_bytes", s.raw_bytes);
    json.field("events", s.events).field("malformed", s.malformed).field("truncated", s.truncated);
    json.field("truncated_lost_bytes", s.truncated_lost_bytes).field("seconds", a.parse_seconds);
    json.key("by_category").begin_object();
    for (const auto& [cat, n] : s.by_category) json.field(cat, n);
    json.end_object();
    json.array("warnings", a.parsed.warnings);
    json.end_object();
    const TierTotals tiers = tier_totals(a);
    json.key("tiers").begin_array();
    for (std::size_t i = 0; i < 6; ++i) {
        if (i == kTriton && tiers.activities[i] == 0) continue;
        json.begin_object();
        if (i == 0)
            json.key("tier").null();
        else
            json.field("tier", static_cast<int>(i));
        json.field("label", kTierLabels[i])
            .field("activities", static_cast<std::uint64_t>(tiers.activities[i]));
        json.field("unique", static_cast<std::uint64_t>(tiers.unique[i]))
            .field("time_us", tiers.time_us[i]);
        json.end_object();
    }
    json.end_array();
    json.key("streams").begin_array();
    for (const auto& st : a.graph.streams())
        json.begin_object()
            .field("device", st.device)
            .field("stream", st.stream)
            .field("activities", static_cast<std::uint64_t>(st.nodes.size()))
            .field("busy_us", static_cast<double>(st.busy) / 1000.0)
            .end_object();
    json.end_array();
    const GraphStats& g = a.graph.stats();
    json.key("graph").begin_object();
    json.field("linked", g.linked).field("no_launch", g.no_launch).field("no_op", g.no_op);
    json.field("waits", g.waits)
        .field("host_syncs", g.host_syncs)
        .field("graph_launches", g.graph_launches);
    json.field("driver_launches", g.driver_launches);
    json.end_object();
    json.key("top_kernels").begin_array();
    int shown = 0;
    for (const auto& k : a.kernels) {
        if (shown++ >= top) break;
        json.begin_object()
            .field("id", k.id)
            .field("name", k.name)
            .field("kind", to_string(k.kind));
        if (k.recipe.tier == Tier::NotReplayable)
            json.key("tier").null();
        else
            json.field("tier", static_cast<int>(k.recipe.tier));
        json.field("rule", k.recipe.rule);
        json.key("recorded_us");
        write_duration_stats(json, k.recorded_us);
        json.end_object();
    }
    json.end_array();
    json.array("notes", a.notes);
    json.end_object();
    out << '\n';
}

}  // namespace replay
