#include "rank_run.h"

#include <cstdlib>
#include <map>
#include <sstream>

#include "replay/json_writer.h"

namespace replay::cli {

std::optional<RankEnv> launched_rank() {
    auto env = discover_rank([](const char* name) { return std::getenv(name); });
    if (!env || env->world_size < 2) return std::nullopt;
    return env;
}

DistributedOptions distributed_options(const RankEnv& env, const Analysis& analysis,
                                       int timeout_seconds) {
    DistributedOptions o;
    o.rank = env.rank;
    o.world_size = env.world_size;
    o.master_addr = env.master_addr;
    o.master_port = env.master_port;
    o.timeout_ms = timeout_seconds * 1000;
    o.trace = analysis.trace().source;
    try {
        check_rank_trace(analysis.trace(), env);
        o.run_identity = run_identity(analysis);
    } catch (const std::runtime_error& e) {
        // Published instead of an identity, so that every rank stops naming this one, instead of
        // waiting for it at the rendezvous.
        o.run_identity = std::string(kRankTraceProblem) + e.what();
    }
    for (const CollectiveCall& c : collective_schedule(analysis))
        o.schedule.push_back(c.op + " " + std::to_string(c.recipe.in_nelems) + " " +
                             std::to_string(c.recipe.out_nelems) + " " +
                             std::to_string(c.recipe.group_size));
    return o;
}

std::string failed_collective(const Report& report) {
    for (const KernelResult& k : report.kernels)
        if (k.tier == Tier::Collective && k.outcome == KernelOutcome::Failed) return k.reason;
    return "";
}

namespace {

struct Row {  // one collective position on one rank
    std::string op, dtype;
    std::int64_t in = -1, out = -1;
    int group = -1;
    double recorded_us = 0, replayed_us = -1;  // -1: not replayed
};

std::string row_text(const Row& r) {
    std::ostringstream s;
    s << r.op << ' ' << r.dtype << ' ' << r.in << ' ' << r.out << ' ' << r.group << ' '
      << r.recorded_us << ' ' << r.replayed_us;
    return s.str();
}

Row parse_row(const std::string& line) {
    Row r;
    std::istringstream(line) >> r.op >> r.dtype >> r.in >> r.out >> r.group >> r.recorded_us >>
        r.replayed_us;
    return r;
}

}  // namespace

void gather_collectives(const RankEnv& env, const Analysis& analysis, const Report& report,
                        Backend& backend, std::ostream* rank0_out) {
    std::map<std::string, const KernelResult*> by_id;
    for (const KernelResult& k : report.kernels) by_id[k.id] = &k;
    std::string mine;
    for (const CollectiveCall& c : collective_schedule(analysis)) {
        Row r{c.op, to_string(c.recipe.dtype), c.recipe.in_nelems, c.recipe.out_nelems,
              c.recipe.group_size, c.recorded_us, -1};
        if (auto it = by_id.find(c.kernel_id);
            it != by_id.end() && !it->second->samples_us.empty())
            r.replayed_us = it->second->replayed_us.median;
        mine += row_text(r) + "\n";
    }
    const std::vector<std::string> all = backend.all_gather_text(mine);
    if (env.rank != 0 || rank0_out == nullptr) return;
    std::vector<std::vector<Row>> ranks;
    std::size_t positions = 0;
    for (const std::string& text : all) {
        std::vector<Row> rows;
        std::istringstream in(text);
        for (std::string line; std::getline(in, line);) rows.push_back(parse_row(line));
        positions = std::max(positions, rows.size());
        ranks.push_back(std::move(rows));
    }
    JsonWriter w(*rank0_out);
    w.begin_object();
    w.field("schema", "replay.collectives/1");
    w.field("mode", report.mode);
    w.field("world_size", env.world_size);
    w.field("busbw", "nccl-tests: algbw x 2(n-1)/n all_reduce, (n-1)/n all_gather, "
                     "reduce_scatter, all_to_all, 1 otherwise; GB/s of 1e9 bytes; medians");
    w.key("collectives").begin_array();
    for (std::size_t p = 0; p < positions; ++p) {
        const Row* first = nullptr;
        int slowest = -1, slowest_recorded = -1;
        for (std::size_t r = 0; r < ranks.size(); ++r) {
            if (p >= ranks[r].size()) continue;
            const Row& row = ranks[r][p];
            if (first == nullptr) first = &row;
            if (row.replayed_us >= 0 &&
                (slowest < 0 || row.replayed_us > ranks[static_cast<std::size_t>(slowest)][p].replayed_us))
                slowest = static_cast<int>(r);
            if (slowest_recorded < 0 ||
                row.recorded_us > ranks[static_cast<std::size_t>(slowest_recorded)][p].recorded_us)
                slowest_recorded = static_cast<int>(r);
        }
        if (first == nullptr) continue;
        const int group = first->group > 0 ? first->group : env.world_size;
        const auto bandwidth = [&](int rank, bool replayed) {
            const Row& row = ranks[static_cast<std::size_t>(rank)][p];
            CollectiveRecipe recipe;
            recipe.in_nelems = row.in;
            recipe.out_nelems = row.out;
            recipe.dtype = dtype_from_name(row.dtype);
            return bus_bandwidth_gbps(recipe, row.op, group,
                                      replayed ? row.replayed_us : row.recorded_us);
        };
        w.begin_object();
        w.field("position", static_cast<std::int64_t>(p));
        w.field("op", first->op);
        w.field("dtype", first->dtype);
        w.field("group_size", group);
        w.key("ranks").begin_array();
        for (const auto& rows : ranks) {
            w.begin_object();
            if (p < rows.size()) {
                w.field("in_nelems", rows[p].in).field("out_nelems", rows[p].out);
                w.field("recorded_us", rows[p].recorded_us);
                if (rows[p].replayed_us >= 0) w.field("replayed_us", rows[p].replayed_us);
            }
            w.end_object();
        }
        w.end_array();
        w.field("slowest_recorded_rank", slowest_recorded);
        w.field("recorded_busbw_gbps", bandwidth(slowest_recorded, false));
        if (slowest >= 0) {
            w.field("slowest_replayed_rank", slowest);
            w.field("replayed_us", ranks[static_cast<std::size_t>(slowest)][p].replayed_us);
            w.field("replayed_busbw_gbps", bandwidth(slowest, true));
        }
        w.end_object();
    }
    w.end_array();
    w.end_object();
    *rank0_out << "\n";
}

}  // namespace replay::cli
