// PyTorch Execution Trace (ET, `*.et.json[.gz|.zst]`) reader, and the join that copies what an ET
// knows (op schemas, tensor storage ids, and shapes when the profiler ran without record_shapes)
// onto the cpu_ops of a Kineto trace.
//
// Both ET layouts are read: schema 1.0.x keeps rf_id/op_schema/tid at the top level of a node and
// splits its arguments into `inputs` (values), `input_shapes` and `input_types`; schema 1.1.x
// nests {values, shapes, types, strides} under `inputs`/`outputs` and moves the scalars into an
// `attrs` list of {name, type, value}.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "replay/trace_model.h"

namespace replay {

// One input or output of an ET node.
struct EtArgument {
    std::string
        type;  // ET type text: "Tensor(c10::Half)", "Int", "GenericList[Int,Int]", "None"...
    // Tensor dims, or each TensorList element's dims flattened with `list_ranks` (as OpArgument).
    std::vector<std::int64_t> dims;
    std::vector<std::int64_t> strides;
    std::vector<std::uint8_t> list_ranks;
    bool has_strides = false;  // schema 1.0.x records no strides
    // From the tensor value [tensor_id, storage_id, offset, numel, itemsize, device]; kNoId for
    // non-tensors, undefined tensors and TensorLists (see `list_storage_ids`).
    std::int64_t tensor_id = kNoId;
    std::int64_t storage_id = kNoId;
    std::int64_t storage_offset = 0;  // in elements
    std::int64_t numel = -1;
    std::int64_t itemsize = -1;
    std::string device;                          // "cuda:0", "cpu"
    std::vector<std::int64_t> list_storage_ids;  // one per TensorList element
    // A non-tensor value as Kineto's `Concrete Inputs` writes it: "1", "1e-05", "True", "[5,
    // 1024]"; a string argument's text; empty for None and tensors.
    std::string value;
};

struct EtNode {
    std::int64_t id = kNoId;
    std::int64_t rf_id = kNoId;   // RecordFunction handle: Kineto's `Record function id`
    std::int64_t parent = kNoId;  // `ctrl_deps` (1.1.x) or `parent` (1.0.x)
    std::int64_t seq_id = -1;     // autograd sequence number, -1 when none
    std::int64_t tid = 0;         // ET thread index (1, 2, ...), not an OS thread id
    std::string name;
    std::string schema;  // "aten::addmm(Tensor self, ...) -> Tensor", empty for non-aten nodes
    std::vector<EtArgument> inputs;
    std::vector<EtArgument> outputs;
    std::uint64_t offset = 0;  // byte offset of the node in the (decompressed) file
};

struct ExecutionTrace {
    std::string source;
    std::string schema_version;  // "1.0.1", "1.1.1-chakra.0.0.4"
    std::int64_t pid = -1;
    std::vector<EtNode> nodes;
};

// Throws InputError (file + byte offset) when the input is not JSON or has no `nodes` array.
ExecutionTrace read_execution_trace(const std::string& path);

// Kineto's `Input type` for an ET type: "Tensor(c10::Half)" -> "c10::Half"; "Int", "Double",
// "Bool" -> "Scalar"; "GenericList[Tensor(...),...]" -> "TensorList"; other lists -> "ScalarList";
// undefined tensors, None, Device, strings -> "".
std::string_view kineto_input_type(std::string_view et_type);

// True for the `[pytorch|profiler|execution_trace|thread]` style roots, which are no operator.
bool is_et_root(const EtNode& node);

enum class EtJoin : std::uint8_t {
    None,              // nothing to join on
    RecordFunctionId,  // Kineto `Record function id` == ET rf_id (torch >= 2.1 or so)
    // Older Kineto traces have no record function id. Per thread, the ET nodes in rf_id order
    // then equal a contiguous run of the Kineto ops in External-id order; the run is located
    // through the autograd sequence numbers, which both sides record, and taken only when exactly
    // one placement matches every name.
    SequenceAlignment,
};
const char* to_string(EtJoin join);

struct AttachStats {
    EtJoin join = EtJoin::None;
    std::size_t matched = 0;          // ET nodes joined to a cpu_op
    std::size_t unmatched_nodes = 0;  // ET nodes (roots excluded) that found no op
    std::size_t unmatched_ops = 0;    // ops with a record_function_id that no ET node matched
    std::size_t name_mismatches = 0;  // same rf_id, different name: refused
    std::size_t shapes_filled = 0;    // ops without recorded shapes that got them from the ET
    std::size_t lists_filled =
        0;  // tensor-list arguments Kineto recorded empty, filled from the ET
    // Ops whose recorded inputs differ in number from the ET node's: storage ids left unset.
    std::size_t arity_mismatches = 0;
};

// Joins `et` onto `trace.cpu_ops` (names must match) and, for each match, sets OpShapes::schema,
// each input's storage_offset and, when the op has no recorded inputs, the inputs'
// type/dims/strides/concrete values (the op's shapes stay shared with the ops recorded alike), and
// gives the op its storage ids in `trace.storages`: one per input, the elements' of its
// TensorLists, and its outputs' with their dims (one per output tensor, TensorList outputs
// flattened, non-tensor outputs skipped). Only ops of the ET's process are considered when the
// trace holds any.
AttachStats attach_execution_trace(Trace& trace, const ExecutionTrace& et);

// An Execution Trace usually records one iteration, the Kineto trace beside it many (PARAM's
// linear_et.json covers 1 of the 40 in linear_kineto.json). Per thread, the ops that the join
// gave storage ids (first to last, in start order) are the ET's iteration; every other run of that
// thread's ops whose names are the same sequence is a repeat of it. A repeat's ops that have no
// shapes (record_shapes off) take the iteration's op's shapes and storage ids, as the caching
// allocator hands a steady loop the same blocks each time. Ops with shapes of their own are left
// alone. Wrong only where an iteration of the same ops ran on other shapes (record_shapes off
// cannot tell): the analysis says that it lent them.
struct LentIteration {
    std::size_t threads = 0;      // threads with ops of the ET's iteration
    std::size_t pattern_ops = 0;  // the iteration's ops, over those threads
    std::size_t repeats = 0;      // runs found again, over those threads
    std::size_t ops = 0;          // ops that took shapes and storage ids
    std::size_t unshaped = 0;     // ops (cpu_op) still without shapes afterwards
};
LentIteration lend_execution_trace_iteration(Trace& trace);

}  // namespace replay
