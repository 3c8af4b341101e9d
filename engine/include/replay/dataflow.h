// Dataflow without an Execution Trace: which recorded tensor inputs are a model's parameters
// (distinct storage per layer, read from memory as in the recording) and which are activations a
// recorded earlier op just wrote, inferred from the Kineto trace alone and written into the trace's
// per-op storage ids (Trace::storages), so that buffer assignment and the L2 reuse distances
// (reuse.h) work as they do with `--et`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "replay/thread_ops.h"
#include "replay/trace_model.h"

namespace replay {

enum class DataflowSource : std::uint8_t {
    None,            // no recorded shapes: buffers by size and role
    Inferred,        // storage ids inferred from the Kineto trace (infer_dataflow)
    ExecutionTrace,  // storage ids from an Execution Trace (--et)
};
const char* to_string(DataflowSource source);  // "none", "inferred", "et"

// A parameter seen in the recorded step: the shape and dtype of a weight-like input that no
// recorded op produced, in the order of first use.
struct ParameterShape {
    std::vector<std::int64_t> dims;
    NameId dtype = StringPool::kEmpty;  // Kineto type text ("float", "c10::BFloat16")
    std::int64_t storage = kNoId;
};

struct DataflowSummary {
    DataflowSource source = DataflowSource::None;
    std::size_t persistent_inputs = 0;  // parameters and other inputs from before the step
    std::size_t activation_inputs = 0;  // produced by a recorded earlier op
    std::size_t persistent_storages = 0;
    std::int64_t persistent_bytes = 0;  // what distinct parameter buffers need together
    // Distinct weight-like persistent storages of the first step, in first-use order.
    std::vector<ParameterShape> parameters;
};

// Is input `index` of `op` a weight-like operand by its op's schema, or its enclosing op's
// (aten::mm under aten::linear: mat2)? Needs CpuOp::parent (KernelGraph::build).
bool weight_like_input(const Trace& trace, std::uint32_t op, std::size_t index);

// When the trace has recorded shapes and no storage ids, gives every tensor input of every op a
// storage id: an input a recorded earlier op of the same thread and step produced (same dims and
// dtype, most recent first; views and in-place ops keep their input's storage) reads that
// storage; any other input (weights, norm weights, KV cache, step inputs) gets a storage of its
// own per op instance, shared by the same op instance of later steps. Gives each op a record in
// Trace::storages: its inputs' ids and its output (id and dims) where its output shape can be
// told. The ops' OpShapes stay shared; an op gets other shapes only where its TensorList's
// element dtype is inferred. Needs CpuOp::parent.
DataflowSummary infer_dataflow(Trace& trace);

// What the inference reads of every op before its passes (which ops it takes, the steps) and
// the storage its records will fill, reserved and touched: none of it needs the ops' nesting,
// so KernelGraph::build can run it on the calling thread while the ops are nested
// (`beside_nesting`), off the inference's path. Not needed where the inference does not run.
class DataflowPrep {
  public:
    explicit DataflowPrep(Trace& trace);
    ~DataflowPrep();
    DataflowPrep(DataflowPrep&&) noexcept;
    DataflowPrep& operator=(DataflowPrep&&) noexcept;
    struct Survey;  // defined in dataflow.cpp

  private:
    friend DataflowSummary infer_dataflow(Trace&, const ThreadOps&, const DataflowPrep&);
    std::unique_ptr<Survey> survey_;  // null: no inference (recorded ids, or no shapes)
};

// infer_dataflow() with the prep done and each thread's ops in start order, as
// KernelGraph::build hands them to its `after_nesting` (not sorted again).
DataflowSummary infer_dataflow(Trace& trace, const ThreadOps& ops, const DataflowPrep& prep);

// One line for the analysis notes: "dataflow inferred: ...".
std::string describe(const DataflowSummary& summary);

// Summary of a trace whose storage ids came from an Execution Trace.
DataflowSummary summarize_dataflow(const Trace& trace, DataflowSource source);

enum class InputOrigin : std::uint8_t { NotTensor, Persistent, Activation };
// Per op and input: Activation when a recorded earlier op of the same step wrote the input's
// storage (views do not write), Persistent otherwise; NotTensor for inputs without a storage id.
// The same rule reads an Execution Trace and an inference, so that the two can be compared.
std::vector<std::vector<InputOrigin>> input_origins(const Trace& trace);

// Drops every storage id from the recipes' tensors (buffers by size and role again): the replay's
// fallback when the inferred parameters do not fit the device.
struct Recipe;
void drop_storage_ids(std::vector<Recipe>& recipes);

}  // namespace replay
