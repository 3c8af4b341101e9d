// Tier-4 recipes as c10d collectives: one rank of a multi-process replay joins its peers through a
// TCPStore rendezvous, checks that every rank replays a trace of the same run, and runs each
// recorded collective with its recorded sizes and dtype on a process group (Gloo on the cpu
// backend). Sub-groups of `group_size` ranks are the contiguous blocks (tensor-parallel groups
// as Megatron and torchrun's examples lay them out): Kineto's args before PyTorch 2.1 do not name
// a group's ranks. Every wait has the run's timeout; a failure names the rank and the op.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "replay/backend.h"

namespace replay {

class Communicator {
  public:
    // Joins the rendezvous and the default group; throws std::runtime_error naming the rank whose
    // trace is from another run, or the rank that did not arrive within the timeout.
    explicit Communicator(const DistributedOptions& options);
    ~Communicator();
    Communicator(const Communicator&) = delete;
    Communicator& operator=(const Communicator&) = delete;

    // Tensors for the collective (reused by every recipe of the same sizes). Never throws.
    Prepared prepare(const CollectiveRecipe& recipe);
    // Runs prepared collective `handle` and waits for it; throws std::runtime_error naming this
    // rank, the op and its position when it fails or times out (a peer died, or its trace
    // differs). After a failure every later call throws at once: the group is broken.
    void run(std::uint32_t handle);
    std::string label(std::uint32_t handle) const;
    std::vector<std::string> all_gather_text(const std::string& mine);
    std::string description() const;

  private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace replay
