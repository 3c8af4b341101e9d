// Unique mode's plan (internal to replayers/): which recorded issues are timed alone, with which
// instances and predecessors.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "replay/drivers.h"

namespace replay::detail {

// A recipe and the kernels its issue re-creates, timed alone.
struct Template {
    // The recorded instances (same work, different tensors: layer 3's and layer 7's weights),
    // cycled through run after run so caches see what the recording saw, not one hot buffer.
    std::vector<Recipe> instances;
    // Per instance, the step recorded just before it on its stream: issued untimed before each
    // run so the kernel starts with the caches its predecessor left, as in the recording.
    std::vector<std::optional<Recipe>> predecessors;
    std::vector<std::size_t> positions;  // kernel index per produced activity
    std::vector<double> recorded_us;     // recorded duration per position (first instance)
};

// Instances kept per template, at most.
constexpr std::size_t kMaxInstances = 64;

// One template per distinct sequence of unique kernels an issue re-creates, in recorded order;
// a sequence whose kernels earlier templates already time adds none. Its instances are the
// recorded issues of that sequence with distinct instance keys. `kernel_of`: the report's kernel
// index of every graph node.
std::vector<Template> plan_unique(const Analysis& analysis,
                                  const std::vector<std::size_t>& kernel_of);

}  // namespace replay::detail
