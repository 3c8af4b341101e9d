// Multi-rank replay, the parts without a communication library: which rank this process is (from
// the launcher's environment), which trace is this rank's, whether the ranks' traces belong to one
// run, the recorded collectives in each rank's order, and nccl-tests' bus-bandwidth arithmetic.
// The collectives themselves run in a backend module through c10d (DistributedOptions).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "replay/recipe.h"

namespace replay {

struct Analysis;
struct Trace;

// This process's place in a multi-process run, as its launcher told it.
struct RankEnv {
    std::string launcher;  // "torchrun", "mpirun", "srun"
    int rank = 0;
    int world_size = 1;
    int local_rank = 0;
    std::string master_addr = "127.0.0.1";
    int master_port = 29500;
    // torchrun's agent already serves its own TCPStore at MASTER_ADDR:MASTER_PORT
    // (TORCHELASTIC_USE_AGENT_STORE=True), from a Python torch whose store protocol may not be
    // this libtorch's: the replay's store is then rank 0's at MASTER_PORT + 1.
    bool agent_store = false;
};

using GetEnv = std::function<const char*(const char*)>;
// torchrun (RANK, WORLD_SIZE, LOCAL_RANK), mpirun (OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK), srun
// (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID), in that order; MASTER_ADDR/MASTER_PORT for every
// launcher (mpirun and srun do not set them: the defaults are one host's). nullopt when none of them
// started this process. Throws std::invalid_argument for a value that is not a number or a rank
// outside the world.
std::optional<RankEnv> discover_rank(const GetEnv& getenv);

// The trace of `rank`: `{rank}` in `spec` replaced by the rank; a folder: its trace files (.json,
// .json.gz, .json.zst) in natural order ("worker2" before "worker10"), which must be `world_size`
// of them, the rank-th; anything else is one trace for every rank. Throws std::runtime_error.
std::string rank_trace_path(const std::string& spec, int rank, int world_size);

// What every rank's trace of one run shares: the recorded world size and distributed backend, the
// profiled step, and the collectives' kinds and groups in recorded order (sizes may differ between
// ranks: an all_to_all's do). Published by each rank and compared with rank 0's.
std::string run_identity(const Analysis& analysis);

// Throws std::runtime_error naming the rank when the trace's distributedInfo does not say it is
// this rank of a world of this size.
void check_rank_trace(const Trace& trace, const RankEnv& env);

// Node `node`'s recipe; for a collective whose kernel args record no message size (PyTorch before
// 2.1), with the sizes and dtype of the `nccl:<op>` annotation around it (the input) and c10d's
// *_base_ op (output, input), and the recorded world as its group.
Recipe collective_recipe(const Analysis& analysis, std::uint32_t node);

// A recorded collective on one rank, in that rank's issue order.
struct CollectiveCall {
    std::uint32_t node = 0;       // graph node of its kernel
    std::string kernel_id;        // its unique kernel
    std::string op;               // canonical: all_reduce, all_gather, reduce_scatter, ...
    CollectiveRecipe recipe;
    double recorded_us = 0;
    std::int64_t recorded_start_ns = 0;
};
std::vector<CollectiveCall> collective_schedule(const Analysis& analysis);

// all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce, send, recv, send_recv,
// barrier; "" for a name none of these.
std::string canonical_collective(std::string_view recorded);

// nccl-tests (doc/PERFORMANCE.md): the bytes whose transfer time gives algbw, and busbw's factor
// over algbw for `ranks` ranks: all_reduce 2(n-1)/n; all_gather, reduce_scatter, all_to_all
// (n-1)/n; broadcast, reduce, send/recv 1.
std::int64_t algorithm_bytes(const CollectiveRecipe& recipe, std::string_view op, int ranks);
double bus_bandwidth_factor(std::string_view op, int ranks);
// GB/s (1e9 bytes) on the bus; 0 when the time is 0.
double bus_bandwidth_gbps(const CollectiveRecipe& recipe, std::string_view op, int ranks,
                          double microseconds);

}  // namespace replay
