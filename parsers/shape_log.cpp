#include "replay/shape_log.h"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "replay/source.h"

namespace replay {
namespace {

namespace od = simdjson::ondemand;

// A schema violation on the current line; turned into an InputError naming file, line and offset.
struct LineError {
    std::string what;
};

void check(simdjson::error_code error, std::string_view what) {
    if (error) throw LineError{std::string(what) + ": " + simdjson::error_message(error)};
}

std::int64_t read_id(od::value value, std::string_view key) {
    od::number_type type{};
    check(value.get_number_type().get(type), std::string(key) + " must be an integer");
    if (type == od::number_type::signed_integer) {
        std::int64_t v = 0;
        check(value.get_int64().get(v), key);
        return v;
    }
    if (type == od::number_type::unsigned_integer) {
        std::uint64_t v = 0;  // ids above 2^63 keep their bits, as in the Kineto parser
        check(value.get_uint64().get(v), key);
        return static_cast<std::int64_t>(v);
    }
    // JSON Schema's "integer" admits 141.0 too.
    double v = 0;
    check(value.get_double().get(v), key);
    if (v != std::floor(v) || std::fabs(v) >= 9.2e18)
        throw LineError{std::string(key) + " must be an integer"};
    return static_cast<std::int64_t>(v);
}

std::string read_string(od::value value, std::string_view key) {
    std::string_view text;
    check(value.get_string().get(text), std::string(key) + " must be a string");
    return std::string(text);
}

// [3072] for a tensor, or [[2, 3], [4]] for a TensorList (then `ranks` gets one rank per tensor).
void read_dims(od::value value, std::string_view key, std::vector<std::int64_t>& out,
               std::vector<std::uint8_t>* ranks) {
    const std::string what = std::string(key) + " must be a list of integers or of integer lists";
    od::array array;
    check(value.get_array().get(array), what);
    bool nested = false, flat = false;
    for (auto element : array) {
        od::value v;
        check(element.get(v), what);
        od::json_type type{};
        check(v.type().get(type), what);
        if (type == od::json_type::array) {
            nested = true;
            od::array inner;
            check(v.get_array().get(inner), what);
            std::size_t rank = 0;
            for (auto d : inner) {
                std::int64_t n = 0;
                check(d.get_int64().get(n), what);
                out.push_back(n);
                ++rank;
            }
            if (rank > 255) throw LineError{std::string(key) + ": a tensor of rank above 255"};
            if (ranks) ranks->push_back(static_cast<std::uint8_t>(rank));
        } else {
            flat = true;
            std::int64_t n = 0;
            check(v.get_int64().get(n), what);
            out.push_back(n);
        }
    }
    if (nested && flat) throw LineError{what + ", not both"};
}

ShapeLogArgument read_argument(od::value value) {
    ShapeLogArgument arg;
    od::object object;
    check(value.get_object().get(object), "an inputs element must be an object");
    bool has_type = false;
    std::vector<std::uint8_t> stride_ranks;
    for (auto field : object) {
        std::string_view key;
        check(field.unescaped_key().get(key), "unreadable member name");
        od::value v;
        check(field.value().get(v), key);
        if (key == "type") {
            arg.type = read_string(v, "inputs[].type");
            has_type = true;
        } else if (key == "dims") {
            read_dims(v, "inputs[].dims", arg.dims, &arg.list_ranks);
        } else if (key == "strides") {
            read_dims(v, "inputs[].strides", arg.strides, &stride_ranks);
            arg.has_strides = true;
        } else if (key == "value") {
            od::json_type type{};
            check(v.type().get(type), "inputs[].value");
            if (type == od::json_type::string) {
                arg.value = read_string(v, "inputs[].value");
            } else if (type == od::json_type::boolean) {
                bool b = false;
                check(v.get_bool().get(b), "inputs[].value");
                arg.value = b ? "True" : "False";  // as Kineto's Concrete Inputs print it
            } else if (type == od::json_type::number) {
                std::string_view token = v.raw_json_token();
                while (!token.empty() && (token.back() == ' ' || token.back() == '\t'))
                    token.remove_suffix(1);
                arg.value = token;
            } else {
                throw LineError{"inputs[].value must be a string, number or boolean"};
            }
        }
    }
    if (!has_type) throw LineError{"an inputs element has no \"type\""};
    // A TensorList's strides must describe the same tensors as its dims.
    if (arg.has_strides && !arg.list_ranks.empty() && stride_ranks != arg.list_ranks)
        throw LineError{"inputs[].strides do not match inputs[].dims"};
    if (arg.has_strides && arg.list_ranks.empty() && arg.strides.size() != arg.dims.size())
        throw LineError{"inputs[].strides do not match inputs[].dims"};
    return arg;
}

ShapeLogEntry read_entry(od::parser& parser, const char* line, std::size_t length,
                         std::size_t capacity) {
    od::document doc;
    check(parser.iterate(line, length, capacity).get(doc), "not JSON");
    od::object object;
    check(doc.get_object().get(object), "not a JSON object");
    ShapeLogEntry entry;
    bool has_name = false;
    for (auto field : object) {
        std::string_view key;
        check(field.unescaped_key().get(key), "unreadable member name");
        od::value value;
        check(field.value().get(value), key);
        if (key == "external_id") {
            entry.external_id = read_id(value, key);
        } else if (key == "rf_id") {
            entry.rf_id = read_id(value, key);
        } else if (key == "name") {
            entry.name = read_string(value, key);
            has_name = true;
        } else if (key == "schema") {
            entry.schema = read_string(value, key);
        } else if (key == "inputs") {
            od::array inputs;
            check(value.get_array().get(inputs), "inputs must be a list");
            for (auto element : inputs) {
                od::value v;
                check(element.get(v), "inputs");
                entry.inputs.push_back(read_argument(v));
            }
        }
    }
    // On-demand stops at the closing brace; a location past it means more JSON on the line.
    const char* rest = nullptr;
    if (!doc.current_location().get(rest)) throw LineError{"more than one JSON value on the line"};
    if (!has_name || entry.name.empty()) throw LineError{"missing \"name\""};
    if (entry.external_id == kNoId && entry.rf_id == kNoId)
        throw LineError{"needs \"external_id\" or \"rf_id\""};
    return entry;
}

bool blank(const char* begin, const char* end) {
    for (const char* p = begin; p < end; ++p)
        if (*p != ' ' && *p != '\t' && *p != '\r') return false;
    return true;
}

using IdIndex = std::vector<std::pair<std::int64_t, std::uint32_t>>;

IdIndex index_ops(const Trace& trace, std::int64_t CpuOp::*id) {
    IdIndex index;
    for (std::uint32_t i = 0; i < trace.cpu_ops.size(); ++i)
        if (trace.cpu_ops[i].*id != kNoId) index.emplace_back(trace.cpu_ops[i].*id, i);
    std::sort(index.begin(), index.end());
    return index;
}

struct Lookup {
    bool id_seen = false;    // some op has the id
    bool name_seen = false;  // and some of those the name
};

// The one op with this id and name; kNoIndex when there is none or several (several processes
// in one file).
std::uint32_t find_op(const Trace& trace, const IdIndex& index, std::int64_t id,
                      std::string_view name, Lookup& lookup) {
    if (id == kNoId) return kNoIndex;
    auto [lo, hi] =
        std::equal_range(index.begin(), index.end(), std::pair{id, std::uint32_t{0}},
                         [](const auto& a, const auto& b) { return a.first < b.first; });
    lookup.id_seen |= lo != hi;
    std::uint32_t match = kNoIndex;
    for (auto it = lo; it != hi; ++it) {
        if (trace.names.view(trace.cpu_ops[it->second].name) != name) continue;
        lookup.name_seen = true;
        if (match != kNoIndex) return kNoIndex;
        match = it->second;
    }
    return match;
}

}  // namespace

ShapeLog read_shape_log(const std::string& path) {
    ShapeLog log;
    log.source = path;
    const std::string file = path == "-" ? "<stdin>" : path;
    // Lines are parsed in place; the padding after the last one keeps simdjson inside the buffer.
    std::string data = read_all(path);
    const std::size_t size = data.size();
    data.resize(size + simdjson::SIMDJSON_PADDING, ' ');
    od::parser parser;
    std::uint64_t line_number = 0;
    for (std::size_t begin = 0; begin < size;) {
        const char* start = data.data() + begin;
        const void* newline = std::memchr(start, '\n', size - begin);
        const std::size_t end =
            newline ? static_cast<std::size_t>(static_cast<const char*>(newline) - data.data())
                    : size;
        ++line_number;
        if (!blank(start, data.data() + end)) {
            try {
                ShapeLogEntry entry = read_entry(parser, start, end - begin, data.size() - begin);
                entry.line = line_number;
                entry.offset = begin;
                log.entries.push_back(std::move(entry));
            } catch (const LineError& e) {
                throw InputError(file, begin,
                                 "shape log line " + std::to_string(line_number) + ": " + e.what);
            }
        }
        begin = end + 1;
    }
    return log;
}

ShapeLogStats attach_shape_log(Trace& trace, const ShapeLog& log) {
    ShapeLogStats stats;
    const IdIndex by_rf = index_ops(trace, &CpuOp::record_function_id);
    const IdIndex by_external = index_ops(trace, &CpuOp::external_id);
    for (const ShapeLogEntry& entry : log.entries) {
        Lookup lookup;
        std::uint32_t index = find_op(trace, by_rf, entry.rf_id, entry.name, lookup);
        if (index != kNoIndex) {
            ++stats.matched_by_rf_id;
        } else if ((index = find_op(trace, by_external, entry.external_id, entry.name, lookup)) !=
                   kNoIndex) {
            ++stats.matched_by_external_id;
        } else {
            stats.name_mismatches += lookup.id_seen && !lookup.name_seen;
            ++stats.unmatched;
            continue;
        }
        CpuOp& op = trace.cpu_ops[index];
        const OpShapes* recorded = op.shapes == kNoIndex ? nullptr : &trace.op_shapes[op.shapes];
        const bool adds_schema = !entry.schema.empty() &&
                                 (recorded == nullptr || recorded->schema == StringPool::kEmpty);
        const bool adds_inputs =
            !entry.inputs.empty() && (recorded == nullptr || recorded->inputs.empty());
        if (!adds_schema && !adds_inputs) continue;
        OpShapes shapes = trace.shapes_of(op);
        if (adds_schema) {
            shapes.schema = trace.names.intern(entry.schema);
            ++stats.schemas_set;
        }
        if (!adds_inputs) {
            trace.set_shapes(op, std::move(shapes));
            continue;
        }
        for (const ShapeLogArgument& in : entry.inputs) {
            OpArgument arg;
            arg.type = trace.names.intern(in.type);
            arg.dims = in.dims;
            arg.strides = in.strides;
            arg.list_ranks = in.list_ranks;
            arg.has_strides = in.has_strides;
            arg.concrete = trace.names.intern(in.value);
            shapes.inputs.push_back(std::move(arg));
        }
        trace.set_shapes(op, std::move(shapes));
        ++stats.shapes_filled;
    }
    return stats;
}

}  // namespace replay
