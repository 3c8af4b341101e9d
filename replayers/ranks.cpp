#include "replay/ranks.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <stdexcept>

#include "replay/analysis.h"

namespace replay {
namespace {

int env_int(const GetEnv& getenv, const char* name, int fallback) {
    const char* text = getenv(name);
    if (text == nullptr || *text == '\0') return fallback;
    int value = 0;
    const char* end = text + std::char_traits<char>::length(text);
    auto [p, ec] = std::from_chars(text, end, value);
    if (ec != std::errc() || p != end)
        throw std::invalid_argument(std::string(name) + "=" + text + " is not a number");
    return value;
}

bool is_trace_file(const std::filesystem::path& p) {
    const std::string name = p.filename().string();
    for (const char* ext : {".json", ".json.gz", ".json.zst"})
        if (name.ends_with(ext)) return true;
    return false;
}

// "worker2" < "worker10": digit runs compare as numbers.
bool natural_less(const std::string& a, const std::string& b) {
    std::size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (std::isdigit(static_cast<unsigned char>(a[i])) &&
            std::isdigit(static_cast<unsigned char>(b[j]))) {
            std::size_t ie = i, je = j;
            while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
            while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
            const std::string_view x(a.data() + i, ie - i), y(b.data() + j, je - j);
            const auto xs = x.find_first_not_of('0'), ys = y.find_first_not_of('0');
            const std::string_view xt = xs == x.npos ? "" : x.substr(xs);
            const std::string_view yt = ys == y.npos ? "" : y.substr(ys);
            if (xt.size() != yt.size()) return xt.size() < yt.size();
            if (xt != yt) return xt < yt;
            i = ie;
            j = je;
        } else {
            if (a[i] != b[j]) return a[i] < b[j];
            ++i;
            ++j;
        }
    }
    return a.size() - i < b.size() - j;
}

std::int64_t elements_of(const OpArgument& a) {
    std::int64_t n = 1;
    for (std::int64_t d : a.dims) n *= d;
    return n;
}

}  // namespace

Recipe collective_recipe(const Analysis& analysis, std::uint32_t node) {
    Recipe recipe = analysis.recipes.recipe(node);
    auto* r = std::get_if<CollectiveRecipe>(&recipe.detail);
    if (r == nullptr || r->in_nelems >= 0) return recipe;
    const Trace& t = analysis.trace();
    const GpuActivity& a = t.activities[analysis.graph.nodes()[node].activity];
    for (std::uint32_t i : analysis.graph.op_chain(analysis.graph.nodes()[node])) {
        const CpuOp& op = t.cpu_ops[i];
        if (op.shapes == kNoIndex) continue;
        const OpShapes& s = t.op_shapes[op.shapes];
        const std::string_view name = t.names.view(op.name);
        if (s.inputs.empty() || s.inputs[0].dims.empty()) continue;
        if (name.starts_with("nccl:") && r->in_nelems < 0) {
            // The kernel's name says less: an all_to_all runs as SendRecv, in int8.
            if (a.collective == StringPool::kEmpty) r->collective = name.substr(5);
            r->in_nelems = r->out_nelems = elements_of(s.inputs[0]);
            if (const DType d = dtype_from_kineto(t.names.view(s.inputs[0].type));
                d != DType::Unknown)
                r->dtype = d;
        } else if (name.starts_with("c10d::") && name.find("_base_") != std::string_view::npos &&
                   s.inputs.size() >= 2 && !s.inputs[1].dims.empty()) {
            r->out_nelems = elements_of(s.inputs[0]);
            r->in_nelems = elements_of(s.inputs[1]);
        }
    }
    if (r->group_size < 0 && r->in_nelems >= 0) r->group_size = t.meta.world_size;
    return recipe;
}

std::optional<RankEnv> discover_rank(const GetEnv& getenv) {
    struct Launcher {
        const char* name;
        const char* rank;
        const char* size;
        const char* local;
    };
    for (const Launcher& l : {Launcher{"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
                              Launcher{"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                                       "OMPI_COMM_WORLD_LOCAL_RANK"},
                              Launcher{"srun", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"}}) {
        if (getenv(l.rank) == nullptr || getenv(l.size) == nullptr) continue;
        RankEnv env;
        env.launcher = l.name;
        env.rank = env_int(getenv, l.rank, 0);
        env.world_size = env_int(getenv, l.size, 1);
        env.local_rank = env_int(getenv, l.local, 0);
        if (const char* addr = getenv("MASTER_ADDR"); addr != nullptr && *addr != '\0')
            env.master_addr = addr;
        env.master_port = env_int(getenv, "MASTER_PORT", env.master_port);
        if (const char* agent = getenv("TORCHELASTIC_USE_AGENT_STORE"))
            env.agent_store = std::string_view(agent) == "True";
        if (env.agent_store) ++env.master_port;
        if (env.world_size < 1 || env.rank < 0 || env.rank >= env.world_size)
            throw std::invalid_argument(std::string(l.name) + " set " + l.rank + "=" +
                                        std::to_string(env.rank) + " outside " + l.size + "=" +
                                        std::to_string(env.world_size));
        if (env.master_port <= 0 || env.master_port > 65535)
            throw std::invalid_argument("MASTER_PORT=" + std::to_string(env.master_port) +
                                        " is not a port");
        return env;
    }
    return std::nullopt;
}

std::string rank_trace_path(const std::string& spec, int rank, int world_size) {
    if (const auto at = spec.find("{rank}"); at != std::string::npos) {
        std::string path = spec;
        for (auto p = at; p != std::string::npos; p = path.find("{rank}"))
            path.replace(p, 6, std::to_string(rank));
        return path;
    }
    std::error_code ec;
    if (!std::filesystem::is_directory(spec, ec)) return spec;
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(spec))
        if (entry.is_regular_file() && is_trace_file(entry.path()))
            files.push_back(entry.path().string());
    std::sort(files.begin(), files.end(), natural_less);
    if (static_cast<int>(files.size()) != world_size)
        throw std::runtime_error(spec + " holds " + std::to_string(files.size()) +
                                 " trace files (.json, .json.gz, .json.zst) for a world of " +
                                 std::to_string(world_size) + " ranks: give one per rank, or a " +
                                 "path with {rank}");
    return files[static_cast<std::size_t>(rank)];
}

void check_rank_trace(const Trace& trace, const RankEnv& env) {
    const TraceMetadata& m = trace.meta;
    const std::string who = "rank " + std::to_string(env.rank) + ": " + trace.source;
    if (m.world_size < 0 || m.rank < 0)
        throw std::runtime_error(who + " has no distributedInfo (rank, world_size): it is not "
                                       "one rank of a multi-process run");
    if (m.world_size != env.world_size)
        throw std::runtime_error(who + " was recorded in a world of " +
                                 std::to_string(m.world_size) + " ranks, this run has " +
                                 std::to_string(env.world_size));
    if (m.rank != env.rank)
        throw std::runtime_error(who + " is rank " + std::to_string(m.rank) +
                                 "'s trace, not rank " + std::to_string(env.rank) + "'s");
}

std::string canonical_collective(std::string_view recorded) {
    std::string s;
    for (char ch : recorded)
        if (ch != '_' && ch != ' ') s += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (s.starts_with("c10d::")) s = s.substr(6);
    struct Name {
        const char* key;
        const char* canonical;
    };
    // Longest first: "reducescatter" before "reduce", "allgatherintotensor" before "allgather".
    for (const Name& n : {Name{"reducescatter", "reduce_scatter"}, Name{"allreduce", "all_reduce"},
                          Name{"allgather", "all_gather"}, Name{"alltoall", "all_to_all"},
                          Name{"broadcast", "broadcast"}, Name{"sendrecv", "send_recv"},
                          Name{"barrier", "barrier"}, Name{"reduce", "reduce"},
                          Name{"send", "send"}, Name{"recv", "recv"}})
        if (s.starts_with(n.key)) return n.canonical;
    return "";
}

std::vector<CollectiveCall> collective_schedule(const Analysis& analysis) {
    std::vector<CollectiveCall> calls;
    const KernelGraph& graph = analysis.graph;
    for (const UniqueKernel& k : analysis.kernels) {
        if (k.recipe.tier != Tier::Collective) continue;
        for (std::uint32_t node : k.nodes) {
            const Recipe recipe = collective_recipe(analysis, node);
            const auto* c = std::get_if<CollectiveRecipe>(&recipe.detail);
            if (c == nullptr) continue;
            const GpuActivity& a = analysis.trace().activities[graph.nodes()[node].activity];
            calls.push_back(CollectiveCall{node, k.id, canonical_collective(c->collective), *c,
                                           static_cast<double>(a.dur) / 1000.0,
                                           graph.launch_time(graph.nodes()[node])});
        }
    }
    // Issue order on the host: the order in which every rank's c10d calls matched.
    std::stable_sort(calls.begin(), calls.end(), [](const auto& a, const auto& b) {
        return a.recorded_start_ns < b.recorded_start_ns;
    });
    return calls;
}

std::string run_identity(const Analysis& analysis) {
    const TraceMetadata& m = analysis.trace().meta;
    std::string id = "world_size=" + std::to_string(m.world_size) +
                     " backend=" + m.distributed_backend;
    const Trace& t = analysis.trace();
    for (const CpuOp& op : t.cpu_ops)
        if (const std::string_view name = t.names.view(op.name); name.starts_with("ProfilerStep#"))
            id += " " + std::string(name);
    id += " collectives=";
    for (const CollectiveCall& c : collective_schedule(analysis))
        id += c.op + "/" + std::to_string(c.recipe.group_size) + ",";
    return id;
}

double bus_bandwidth_factor(std::string_view op, int ranks) {
    const double n = std::max(ranks, 1);
    if (op == "all_reduce") return 2 * (n - 1) / n;
    if (op == "all_gather" || op == "reduce_scatter" || op == "all_to_all") return (n - 1) / n;
    return 1;
}

std::int64_t algorithm_bytes(const CollectiveRecipe& r, std::string_view op, int ranks) {
    const auto size = static_cast<std::int64_t>(element_size(r.dtype));
    const std::int64_t in = std::max<std::int64_t>(r.in_nelems, 0);
    const std::int64_t out = std::max<std::int64_t>(r.out_nelems, in);
    // nccl-tests' size: all_gather's is the gathered output; reduce_scatter's the input; all_to_all's
    // what one rank sends in all (in == out with even splits).
    if (op == "all_gather") return (r.out_nelems > in ? out : in * std::max(ranks, 1)) * size;
    if (op == "reduce_scatter") return std::max(in, out) * size;
    return in * size;
}

double bus_bandwidth_gbps(const CollectiveRecipe& recipe, std::string_view op, int ranks,
                          double microseconds) {
    if (microseconds <= 0) return 0;
    const double algbw = static_cast<double>(algorithm_bytes(recipe, op, ranks)) /
                         (microseconds * 1e-6) / 1e9;
    return algbw * bus_bandwidth_factor(op, ranks);
}

}  // namespace replay
