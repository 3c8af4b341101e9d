// Tensor lists Kineto recorded as [] (record_shapes sees no element shapes): the lists of an
// optimizer's _foreach_* ops recovered from the model's parameters (dataflow.h) and checked
// against the blocks of the op's recorded multi_tensor_apply launches; torch.stack's from the
// unsqueeze ops it ran.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "replay/classifier.h"
#include "replay/dataflow.h"
#include "replay/kernel_graph.h"

namespace replay {

struct Recipe;

struct TensorListSummary {
    std::vector<std::uint32_t> ops;  // Trace::cpu_ops whose lists were recovered
    std::vector<std::string> how;    // per recovered op: where the list came from
    std::size_t unrecovered = 0;     // ops with kernels and an empty list left as they were
};

// multi_tensor_apply's chunk: one block per 65536 elements of each tensor (PyTorch kChunkSize).
constexpr std::int64_t kMultiTensorChunk = 65536;
// The blocks multi_tensor_apply launches for these tensors.
std::int64_t multi_tensor_blocks(const std::vector<ParameterShape>& tensors);

// What the recovery reads of the graph: per op, the blocks of the multi_tensor_apply kernels it
// launched (its own, not its children's: a _foreach op is a leaf) and how many. It reads only the
// nodes' op links and the activities, so it can run beside the end of the graph build.
struct MultiTensorLaunches {
    std::unordered_map<std::uint32_t, std::pair<std::int64_t, std::size_t>> by_op;
};
MultiTensorLaunches multi_tensor_launches(const KernelGraph& graph);

// Fills the empty TensorList arguments of each _foreach_* op that launched kernels with the
// parameter list when the blocks of its recorded launches equal what that list needs (dropping
// repeated shapes from the end first: tied weights are one parameter used twice). Needs the
// graph's op links; changes the ops' OpShapes before the classifier reads them.
// `launches` is multi_tensor_launches() of the graph the ops are linked in.
TensorListSummary recover_tensor_lists(const MultiTensorLaunches& launches, Trace& trace,
                                       const std::vector<ParameterShape>& parameters);

// Fills the empty TensorList of each aten::stack (and of the aten::cat inside it) from the
// aten::unsqueeze ops it ran, one per element: Kineto records a long list (64 tensors) as [].
// Needs the ops' nesting (CpuOp::parent); changes their OpShapes before the classifier reads them.
TensorListSummary recover_stack_lists(Trace& trace);

// Says in the reason of each recovered op's recipes how its list was recovered.
void explain_recovered_lists(const KernelGraph& graph, const TensorListSummary& lists,
                             NodeRecipes& recipes);

}  // namespace replay
