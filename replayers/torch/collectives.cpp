#include "collectives.h"

#include <stdexcept>

#if REPLAY_C10D_GLOO
#include <algorithm>
#include <chrono>
#include <csignal>
#include <map>
#include <sstream>
#include <stdexcept>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "replay/ranks.h"
#include "torch_values.h"

namespace replay {
namespace {

std::vector<std::uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }
std::string text_of(const std::vector<std::uint8_t>& b) { return {b.begin(), b.end()}; }

std::vector<std::string> split_lines(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

struct ScheduleLine {
    std::string op;
    std::int64_t in = -1, out = -1;
    int group = -1;
};
ScheduleLine parse_line(const std::string& line) {
    ScheduleLine l;
    std::istringstream(line) >> l.op >> l.in >> l.out >> l.group;
    return l;
}

// The first word where two identities differ, for an error a person can act on.
std::string first_difference(const std::string& a, const std::string& b) {
    std::istringstream x(a), y(b);
    for (std::string u, v;;) {
        const bool more_x = static_cast<bool>(x >> u), more_y = static_cast<bool>(y >> v);
        if (!more_x && !more_y) return "";
        if (!more_x || !more_y || u != v)
            return "'" + (more_x ? u : std::string("(end)")) + "' against '" +
                   (more_y ? v : std::string("(end)")) + "'";
    }
}

// libtorch's messages carry a C++ backtrace after their first line.
std::string first_line(const std::exception& e) {
    std::string why = e.what();
    if (const auto nl = why.find('\n'); nl != std::string::npos) why.resize(nl);
    return why;
}

// Element i's share when n elements are cut into `parts` nearly equal parts.
std::int64_t share(std::int64_t n, int parts, int i) {
    return n / parts + (i < n % parts ? 1 : 0);
}

}  // namespace

struct Communicator::State {
    DistributedOptions o;
    std::chrono::milliseconds timeout;
    c10::intrusive_ptr<c10d::Store> store;
    std::map<int, c10::intrusive_ptr<c10d::ProcessGroupGloo>> groups;  // by group size
    std::vector<std::vector<ScheduleLine>> schedules;                  // by rank
    std::vector<ScheduleLine> mine;
    struct Op {
        std::string op, label;
        int group_size = 1, group_rank = 0, group_start = 0;
        at::Tensor in, out;
        std::vector<at::Tensor> gathered;
        std::vector<std::int64_t> in_splits, out_splits;
    };
    std::vector<Op> ops;
    std::uint64_t calls = 0;
    std::uint64_t exchanges = 0;  // all_gather_text rounds
    std::string broken;

    std::string who() const { return "rank " + std::to_string(o.rank); }

    c10::intrusive_ptr<c10d::ProcessGroupGloo> group(int size) {
        auto it = groups.find(size);
        if (it != groups.end()) return it->second;
        auto options = c10d::ProcessGroupGloo::Options::create(timeout);
        const bool loopback = o.master_addr == "127.0.0.1" || o.master_addr == "localhost";
        options->devices.push_back(
            loopback ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
                     : c10d::ProcessGroupGloo::createDefaultDevice());
        const int start = o.rank / size * size;
        auto prefixed = c10::make_intrusive<c10d::PrefixStore>(
            "replay/group/" + std::to_string(start) + "x" + std::to_string(size), store);
        auto pg = c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, o.rank - start, size,
                                                              options);
        return groups.emplace(size, pg).first->second;
    }
};

Communicator::Communicator(const DistributedOptions& options) : state_(std::make_unique<State>()) {
    // Gloo and the store write to their peers' sockets without MSG_NOSIGNAL: a rank that died
    // would end this one by SIGPIPE, with no error and no report (seen when a rank was killed
    // mid-replay). Ignored, the write fails with EPIPE and the collective fails with its reason.
    std::signal(SIGPIPE, SIG_IGN);
    State& s = *state_;
    s.o = options;
    s.timeout = std::chrono::milliseconds(options.timeout_ms);
    const std::string where = options.master_addr + ":" + std::to_string(options.master_port);
    try {
        c10d::TCPStoreOptions store_options;
        store_options.port = static_cast<std::uint16_t>(options.master_port);
        store_options.isServer = options.rank == 0;
        store_options.numWorkers = static_cast<std::size_t>(options.world_size);
        store_options.waitWorkers = true;
        store_options.timeout = s.timeout;
        s.store = c10::make_intrusive<c10d::TCPStore>(options.master_addr, store_options);
    } catch (const std::exception& e) {
        throw std::runtime_error(s.who() + ": the rendezvous at " + where + " did not gather " +
                                 std::to_string(options.world_size) + " ranks within " +
                                 std::to_string(options.timeout_ms / 1000) +
                                 " s (a rank did not start or died): " + first_line(e));
    }
    std::string schedule;
    for (const auto& line : options.schedule) schedule += line + "\n";
    s.mine.clear();
    for (const auto& line : options.schedule) s.mine.push_back(parse_line(line));
    const std::string me = std::to_string(options.rank);
    s.store->set("replay/identity/" + me, bytes_of(options.trace + "\n" + options.run_identity));
    s.store->set("replay/schedule/" + me, bytes_of(schedule));
    std::vector<std::pair<std::string, std::string>> identities;  // trace, identity
    for (int r = 0; r < options.world_size; ++r) {
        const std::string peer = std::to_string(r);
        try {
            const std::string text = text_of(s.store->get("replay/identity/" + peer));
            const auto nl = text.find('\n');
            identities.emplace_back(text.substr(0, nl),
                                    nl == std::string::npos ? "" : text.substr(nl + 1));
            std::vector<ScheduleLine> lines;
            for (const auto& line : split_lines(text_of(s.store->get("replay/schedule/" + peer))))
                lines.push_back(parse_line(line));
            s.schedules.push_back(std::move(lines));
        } catch (const std::exception& e) {
            throw std::runtime_error(s.who() + ": rank " + peer +
                                     " did not publish its trace's identity within " +
                                     std::to_string(options.timeout_ms / 1000) +
                                     " s (it failed to load its trace, or died): " + first_line(e));
        }
    }
    // Rank 0 holds the store: it waits until every rank has read what it needs, so that a rank
    // about to stop with the message below does not see the store vanish first.
    s.store->set("replay/checked/" + me, bytes_of("1"));
    if (options.rank == 0) {
        std::vector<std::string> keys;
        for (int r = 0; r < options.world_size; ++r)
            keys.push_back("replay/checked/" + std::to_string(r));
        try {
            s.store->wait(keys, s.timeout);
        } catch (const std::exception& e) {
            throw std::runtime_error(s.who() + ": not every rank read the run's identities within " +
                                     std::to_string(options.timeout_ms / 1000) + " s: " + first_line(e));
        }
    }
    // Every rank checks every rank, so that all of them stop with the same message.
    for (const auto& [trace, identity] : identities)
        if (identity.starts_with(kRankTraceProblem))
            throw std::runtime_error(identity.substr(std::string_view(kRankTraceProblem).size()));
    for (int r = 1; r < options.world_size; ++r) {
        const auto& [trace, identity] = identities[static_cast<std::size_t>(r)];
        if (identity != identities[0].second)
            throw std::runtime_error(
                "rank " + std::to_string(r) + "'s trace " + trace +
                " is not from the run of rank 0's " + identities[0].first + ": " +
                first_difference(identity, identities[0].second) + " (rank " + std::to_string(r) +
                " against rank 0; world size, backend, profiled step and the recorded "
                "collectives in order must agree)");
    }
}

Communicator::~Communicator() = default;

Prepared Communicator::prepare(const CollectiveRecipe& recipe) {
    State& s = *state_;
    Prepared p;
    const std::string op = canonical_collective(recipe.collective);
    const int world = s.o.world_size;
    const int size = recipe.group_size > 0 ? recipe.group_size : world;
    if (op.empty()) {
        p.reason = "collective '" + recipe.collective + "' has no c10d counterpart";
        return p;
    }
    if (recipe.in_nelems < 0 && op != "barrier") {
        p.reason = "the trace does not record this collective's message size";
        return p;
    }
    if (size > world || world % size != 0) {
        p.reason = "a group of " + std::to_string(size) + " ranks does not tile a world of " +
                   std::to_string(world);
        return p;
    }
    auto dtype = torch_detail::scalar_type_of(recipe.dtype).value_or(at::kByte);
    // Gloo sums no bfloat16: the same bytes as half.
    if (dtype == at::kBFloat16) dtype = at::kHalf;
    State::Op o;
    o.op = op;
    o.group_size = size;
    o.group_start = s.o.rank / size * size;
    o.group_rank = s.o.rank - o.group_start;
    const auto tensor = [&](std::int64_t n) {
        return at::zeros({std::max<std::int64_t>(n, 1)}, at::TensorOptions().dtype(dtype));
    };
    try {
        const std::int64_t in = recipe.in_nelems, out = recipe.out_nelems;
        if (op == "all_gather") {
            const std::int64_t each = out > in && in > 0 ? out / size : in;
            o.in = tensor(each);
            for (int r = 0; r < size; ++r) o.gathered.push_back(tensor(each));
        } else if (op == "reduce_scatter") {
            // Gloo has no reduce_scatter: an all_to_all of the input moves the same bytes over
            // every link; the local sum of what arrives is the reduction.
            const std::int64_t total = std::max(in, out * size);
            const std::int64_t each = (total + size - 1) / size;
            o.in = tensor(each * size);
            o.out = tensor(each * size);
        } else if (op == "all_to_all") {
            // Splits are not recorded: each rank cuts its input evenly; what it receives from a
            // peer is that peer's cut, from the peer's recorded size at the same position.
            std::size_t position = 0;
            while (position < s.mine.size() &&
                   !(s.mine[position].op == "all_to_all" && s.mine[position].in == in &&
                     s.mine[position].out == out))
                ++position;
            for (int r = 0; r < size; ++r) {
                const auto& peer = s.schedules[static_cast<std::size_t>(o.group_start + r)];
                const std::int64_t peer_in = position < peer.size() ? peer[position].in : in;
                o.in_splits.push_back(share(in, size, r));
                o.out_splits.push_back(share(peer_in, size, o.group_rank));
            }
            o.in = tensor(in);
            std::int64_t received = 0;
            for (auto n : o.out_splits) received += n;
            o.out = tensor(received);
        } else {
            o.in = tensor(in);
        }
        s.group(size);
    } catch (const std::exception& e) {
        p.disposition = Disposition::Failed;
        p.reason = s.who() + ": " + op + ": " + first_line(e);
        return p;
    }
    o.label = op + " " + std::to_string(recipe.in_nelems) + " x " + to_string(recipe.dtype) +
              " over " + std::to_string(size) + " ranks";
    s.ops.push_back(std::move(o));
    p.disposition = Disposition::Ready;
    p.handle = static_cast<std::uint32_t>(s.ops.size() - 1);
    return p;
}

void Communicator::run(std::uint32_t handle) {
    State& s = *state_;
    State::Op& o = s.ops.at(handle);
    const std::uint64_t call = ++s.calls;
    const std::string what = s.who() + ": " + o.op + " (collective #" + std::to_string(call) +
                             " of this replay, " + o.label + ")";
    if (!s.broken.empty()) throw std::runtime_error(what + " not run: " + s.broken);
    auto pg = s.group(o.group_size);
    try {
        std::vector<at::Tensor> tensors{o.in};
        std::vector<c10::intrusive_ptr<c10d::Work>> works;
        const int next = (o.group_rank + 1) % o.group_size;
        const int previous = (o.group_rank + o.group_size - 1) % o.group_size;
        if (o.op == "all_reduce") {
            works.push_back(pg->allreduce(tensors));
        } else if (o.op == "broadcast") {
            works.push_back(pg->broadcast(tensors));
        } else if (o.op == "reduce") {
            works.push_back(pg->reduce(tensors));
        } else if (o.op == "all_gather") {
            std::vector<std::vector<at::Tensor>> outputs{o.gathered};
            works.push_back(pg->allgather(outputs, tensors));
        } else if (o.op == "reduce_scatter") {
            std::vector<std::int64_t> even;
            works.push_back(pg->alltoall_base(o.out, o.in, even, even));
        } else if (o.op == "all_to_all") {
            works.push_back(pg->alltoall_base(o.out, o.in, o.out_splits, o.in_splits));
        } else if (o.op == "barrier") {
            works.push_back(pg->barrier());
        } else {
            // Point to point: the trace names no peer; a pipeline passes to the next rank.
            std::vector<at::Tensor> received{o.in.clone()};
            if (o.op != "recv") works.push_back(pg->send(tensors, next, 0));
            if (o.op != "send") works.push_back(pg->recv(received, previous, 0));
        }
        for (auto& work : works) work->wait(s.timeout);
        if (o.op == "reduce_scatter") (void)o.out.view({o.group_size, -1}).sum(0);
    } catch (const std::exception& e) {
        const std::string why = first_line(e);
        s.broken = what + " failed: " + why;
        throw std::runtime_error(what + " failed within the " +
                                 std::to_string(s.o.timeout_ms / 1000) +
                                 " s timeout: a peer died or replays another trace: " + why);
    }
}

std::string Communicator::label(std::uint32_t handle) const { return state_->ops.at(handle).label; }

std::vector<std::string> Communicator::all_gather_text(const std::string& mine) {
    State& s = *state_;
    const std::string round = std::to_string(++s.exchanges);
    s.store->set("replay/text/" + round + "/" + std::to_string(s.o.rank), bytes_of(mine));
    std::vector<std::string> all;
    for (int r = 0; r < s.o.world_size; ++r) {
        try {
            all.push_back(text_of(s.store->get("replay/text/" + round + "/" + std::to_string(r))));
        } catch (const std::exception& e) {
            throw std::runtime_error(s.who() + ": rank " + std::to_string(r) +
                                     " did not send its results within " +
                                     std::to_string(s.o.timeout_ms / 1000) +
                                     " s (it stopped or died): " + first_line(e));
        }
    }
    return all;
}

std::string Communicator::description() const {
    return "c10d Gloo, rank " + std::to_string(state_->o.rank) + " of " +
           std::to_string(state_->o.world_size) + ", rendezvous " + state_->o.master_addr + ":" +
           std::to_string(state_->o.master_port) + ", timeout " +
           std::to_string(state_->o.timeout_ms / 1000) + " s";
}

}  // namespace replay
#else  // no Gloo headers at build time: several ranks cannot replay with this build

namespace replay {

struct Communicator::State {};

Communicator::Communicator(const DistributedOptions& options) {
    throw std::runtime_error("rank " + std::to_string(options.rank) +
                             ": several ranks need c10d's Gloo process group, and this build "
                             "found no Gloo headers (Debian: apt-get install libgloo-dev, then "
                             "rebuild)");
}
Communicator::~Communicator() = default;
Prepared Communicator::prepare(const CollectiveRecipe&) { return {}; }
void Communicator::run(std::uint32_t) {}
std::string Communicator::label(std::uint32_t) const { return {}; }
std::vector<std::string> Communicator::all_gather_text(const std::string& mine) { return {mine}; }
std::string Communicator::description() const { return {}; }

}  // namespace replay
#endif
