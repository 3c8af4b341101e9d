// Reuse distances of recorded inputs, so that an isolated replay can start each timed kernel with
// the L2 cache holding what the recorded step's cache held: activations a producer just wrote, but
// not a layer's weights, which the rest of the step pushed out since they were last read.
#pragma once

#include <span>
#include <vector>

#include "replay/classifier.h"
#include "replay/kernel_graph.h"
#include "replay/recipe.h"

namespace replay {

// Sets TensorSpec::reuse_bytes and GemmRecipe::{a,b,c}_reuse_bytes of every recipe whose inputs
// carry recorded storage ids (Execution Trace): GPU ops are swept in launch order, each touching
// its inputs' and outputs' bytes (an LRU stack distance, counting a storage touched twice twice,
// so an upper bound). Inputs without storage ids keep kReuseUnknown. A node whose distances differ
// from those of the other nodes sharing its recipe gets an entry of its own. `shaped_ops`, when
// given (classify()'s), names each node's innermost op with shapes, which is otherwise looked up
// on its op chain.
void annotate_reuse(const KernelGraph& graph, NodeRecipes& recipes,
                    std::span<const std::uint32_t> shaped_ops = {});

}  // namespace replay
