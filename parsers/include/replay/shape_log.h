// A JSONL side file of op argument shapes, for traces recorded without record_shapes (which
// costs too much to leave on) and without an Execution Trace. One JSON object per line, described
// by schemas/shape_log.schema.json:
//
//   {"external_id": 141, "rf_id": 141, "name": "aten::addmm",
//    "schema": "aten::addmm(Tensor self, ...) -> Tensor",
//    "inputs": [{"type": "c10::Half", "dims": [3072], "strides": [1]}, {"type": "Scalar", "value":
//    "1"}]}
//
// `name` and one of `external_id` / `rf_id` are required. Argument types use Kineto's `Input type`
// words ("c10::Half", "Scalar", "ScalarList", "TensorList", ""); TensorList dims are nested lists.
// Blank lines are skipped; unknown members are ignored so that writers can add more.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "replay/trace_model.h"

namespace replay {

struct ShapeLogArgument {
    std::string type;
    std::vector<std::int64_t> dims;  // TensorList: flattened, with list_ranks
    std::vector<std::int64_t> strides;
    std::vector<std::uint8_t> list_ranks;
    bool has_strides = false;
    std::string value;  // Concrete value text of a scalar ("1", "True", "[5, 1024]")
};

struct ShapeLogEntry {
    std::int64_t external_id = kNoId;
    std::int64_t rf_id = kNoId;
    std::string name;
    std::string schema;
    std::vector<ShapeLogArgument> inputs;
    std::uint64_t line = 0;    // 1-based
    std::uint64_t offset = 0;  // byte offset of the line in the (decompressed) file
};

struct ShapeLog {
    std::string source;
    std::vector<ShapeLogEntry> entries;
};

// Plain, .gz or .zst. Throws InputError naming the line, with the byte offset of its start, for a
// line that is not a JSON object or breaks the schema.
ShapeLog read_shape_log(const std::string& path);

struct ShapeLogStats {
    std::size_t matched_by_rf_id = 0;
    std::size_t matched_by_external_id = 0;
    std::size_t unmatched = 0;        // entries that found no op, or several equally good ones
    std::size_t name_mismatches = 0;  // an id matched but the name did not: refused
    std::size_t shapes_filled = 0;    // ops without recorded inputs that got them from the log
    std::size_t schemas_set = 0;
};

// Joins entries to trace.cpu_ops on rf_id (Record function id) first, then on external_id; the
// names must match. The log fills what the trace lacks: an op's inputs when it has none recorded
// and its schema when empty; recorded shapes are never replaced.
ShapeLogStats attach_shape_log(Trace& trace, const ShapeLog& log);

}  // namespace replay
