// One rank of a multi-process replay (`torchrun ... replay 'rank{rank}.json.gz' ...`): the rank
// from the launcher's environment, this rank's trace, its check against the run, the backend's
// DistributedOptions, and the merged collectives report that rank 0 writes.
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "replay/analysis.h"
#include "replay/backend.h"
#include "replay/ranks.h"
#include "replay/report.h"

namespace replay::cli {

// The launcher's rank, when a launcher started this process with a world of more than one.
std::optional<RankEnv> launched_rank();

// What the backend needs to join the other ranks; throws naming the rank when the trace is not
// this rank's of a world this size.
DistributedOptions distributed_options(const RankEnv& env, const Analysis& analysis,
                                       int timeout_seconds);

// The first collective that failed on this rank (its reason names rank and op), or "".
std::string failed_collective(const Report& report);

// Every rank's collectives, gathered on rank 0 through the backend (every rank must call this):
// per recorded collective position, each rank's recorded and replayed median, the slowest rank,
// and nccl-tests' bus bandwidth of the replay next to the recording's. Written by rank 0 only.
void gather_collectives(const RankEnv& env, const Analysis& analysis, const Report& report,
                        Backend& backend, std::ostream* rank0_out);

}  // namespace replay::cli
