#include "replay/execution_trace.h"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

#include "replay/source.h"

namespace replay {
namespace {

namespace od = simdjson::ondemand;

// A small owned JSON tree for argument values, shapes and strides: what they mean depends on the
// node's `types`, which may come after them in the node.
struct Json {
    enum class Kind : std::uint8_t { Null, Bool, Number, String, Array, Object };
    Kind kind = Kind::Null;
    bool boolean = false;
    bool is_integer = false;
    std::int64_t integer = 0;
    std::string text;  // number token or string content
    std::vector<Json> items;
};

// Argument values nest at most a few levels (lists of tensors); this only bounds the recursion.
constexpr int kMaxDepth = 64;

std::string_view trim(std::string_view text) {
    while (!text.empty() && (text.back() == ' ' || text.back() == '\n' || text.back() == '\r' ||
                             text.back() == '\t'))
        text.remove_suffix(1);
    return text;
}

simdjson::error_code read_json(od::value value, Json& out, int depth) {
    if (depth > kMaxDepth) return simdjson::DEPTH_ERROR;
    od::json_type type{};
    if (auto e = value.type().get(type)) return e;
    switch (type) {
        case od::json_type::array: {
            out.kind = Json::Kind::Array;
            od::array array;
            if (auto e = value.get_array().get(array)) return e;
            for (auto element : array) {
                od::value v;
                if (auto e = element.get(v)) return e;
                out.items.emplace_back();
                if (auto e = read_json(v, out.items.back(), depth + 1)) return e;
            }
            return simdjson::SUCCESS;
        }
        case od::json_type::object:
            // No known argument is an object; on-demand skips it when the parent moves on.
            out.kind = Json::Kind::Object;
            return simdjson::SUCCESS;
        case od::json_type::number: {
            out.kind = Json::Kind::Number;
            out.text = trim(value.raw_json_token());
            od::number_type number{};
            if (auto e = value.get_number_type().get(number)) return e;
            if (number == od::number_type::signed_integer) {
                out.is_integer = !value.get_int64().get(out.integer);
            } else if (number == od::number_type::unsigned_integer) {
                // Ids above 2^63 keep their bits.
                std::uint64_t v = 0;
                out.is_integer = !value.get_uint64().get(v);
                out.integer = static_cast<std::int64_t>(v);
            } else {
                double v = 0;
                if (!value.get_double().get(v) && std::isfinite(v) && v == std::floor(v) &&
                    std::fabs(v) < 9.2e18) {
                    out.is_integer = true;
                    out.integer = static_cast<std::int64_t>(v);
                }
            }
            return simdjson::SUCCESS;
        }
        case od::json_type::string: {
            out.kind = Json::Kind::String;
            std::string_view text;
            if (auto e = value.get_string().get(text)) return e;
            out.text = text;
            return simdjson::SUCCESS;
        }
        case od::json_type::boolean:
            out.kind = Json::Kind::Bool;
            return value.get_bool().get(out.boolean);
        case od::json_type::null: {
            bool is_null = false;
            return value.is_null().get(is_null);
        }
    }
    return simdjson::INCORRECT_TYPE;
}

// Kineto writes scalars and scalar lists as Python would print them: "1", "True", "[5, 1024]".
void append_value_text(const Json& value, std::string& out) {
    switch (value.kind) {
        case Json::Kind::Number:
            out += value.text;
            break;
        case Json::Kind::Bool:
            out += value.boolean ? "True" : "False";
            break;
        case Json::Kind::String:
            if (value.text != "<None>") out += value.text;
            break;
        case Json::Kind::Array:
            out += '[';
            for (std::size_t i = 0; i < value.items.size(); ++i) {
                if (i) out += ", ";
                append_value_text(value.items[i], out);
            }
            out += ']';
            break;
        default:
            break;
    }
}

bool is_tensor_type(std::string_view type) {
    return type == "Tensor" || type.starts_with("Tensor(");
}
bool is_tensor_list_type(std::string_view type) {
    return type == "TensorList" ||
           (type.starts_with("GenericList[") && type.find("Tensor") != std::string_view::npos);
}
bool is_undefined_tensor_type(std::string_view type) {
    return type.starts_with("Tensor(nullptr");
}

// [tensor_id, storage_id, offset, numel, itemsize, device]; older writers omit the device.
bool read_tensor_value(const Json& value, EtArgument& arg) {
    if (value.kind != Json::Kind::Array || value.items.size() < 5) return false;
    for (std::size_t i = 0; i < 5; ++i)
        if (!value.items[i].is_integer) return false;
    arg.tensor_id = value.items[0].integer;
    arg.storage_id = value.items[1].integer;
    arg.storage_offset = value.items[2].integer;
    arg.numel = value.items[3].integer;
    arg.itemsize = value.items[4].integer;
    if (value.items.size() > 5 && value.items[5].kind == Json::Kind::String)
        arg.device = value.items[5].text;
    return true;
}

// A flat list of integers, appended to `out`; false (and nothing appended) for anything else.
bool append_ints(const Json& list, std::vector<std::int64_t>& out) {
    if (list.kind != Json::Kind::Array) return false;
    for (const Json& item : list.items)
        if (!item.is_integer) return false;
    for (const Json& item : list.items) out.push_back(item.integer);
    return true;
}

// One TensorList shape or stride list: a list of integer lists, flattened with their ranks.
void append_nested(const Json& list, std::vector<std::int64_t>& out,
                   std::vector<std::uint8_t>* ranks) {
    if (list.kind != Json::Kind::Array) return;
    for (const Json& item : list.items) {
        const std::size_t before = out.size();
        append_ints(item, out);
        if (ranks) ranks->push_back(static_cast<std::uint8_t>(out.size() - before));
    }
}

// The pieces of a node's inputs or outputs, collected before their types are known.
struct RawArguments {
    Json values, shapes, types, strides;
    bool has_strides = false;
};

const Json* item(const Json& list, std::size_t i) {
    return list.kind == Json::Kind::Array && i < list.items.size() ? &list.items[i] : nullptr;
}

std::vector<EtArgument> build_arguments(const RawArguments& raw) {
    const std::size_t count = std::max(raw.types.items.size(), raw.values.items.size());
    std::vector<EtArgument> args(count);
    for (std::size_t i = 0; i < count; ++i) {
        EtArgument& arg = args[i];
        if (const Json* t = item(raw.types, i); t && t->kind == Json::Kind::String)
            arg.type = t->text;
        arg.has_strides = raw.has_strides;
        const Json* value = item(raw.values, i);
        const Json* shape = item(raw.shapes, i);
        const Json* stride = item(raw.strides, i);
        if (is_tensor_list_type(arg.type)) {
            if (value && value->kind == Json::Kind::Array)
                for (const Json& element : value->items) {
                    EtArgument one;
                    arg.list_storage_ids.push_back(read_tensor_value(element, one) ? one.storage_id
                                                                                   : kNoId);
                }
            if (shape) append_nested(*shape, arg.dims, &arg.list_ranks);
            if (stride) append_nested(*stride, arg.strides, nullptr);
        } else if (is_tensor_type(arg.type)) {
            if (!is_undefined_tensor_type(arg.type) && value && !read_tensor_value(*value, arg)) {
                arg.tensor_id = kNoId;
                arg.storage_id = kNoId;
            }
            if (shape) append_ints(*shape, arg.dims);
            if (stride) append_ints(*stride, arg.strides);
        } else if (value) {
            append_value_text(*value, arg.value);
        }
    }
    return args;
}

class EtReader {
  public:
    EtReader(std::string file, const char* base) : file_(std::move(file)), base_(base) {}

    [[noreturn]] void fail(std::uint64_t offset, const std::string& what) const {
        throw InputError(file_, offset, what);
    }
    std::uint64_t offset_of(const char* at) const {
        return at ? static_cast<std::uint64_t>(at - base_) : 0;
    }
    std::uint64_t here(od::document& doc, std::uint64_t fallback) const {
        const char* at = nullptr;
        return doc.current_location().get(at) ? fallback : offset_of(at);
    }

    // Reads one element of `nodes`; throws with the node's offset for JSON that does not parse.
    EtNode node(od::value value, std::uint64_t offset) const;

  private:
    void arguments(od::value value, RawArguments& raw, std::uint64_t offset) const;
    void check(simdjson::error_code error, std::uint64_t offset, std::string_view what) const {
        if (error)
            fail(offset, "Execution Trace node: " + std::string(what) + ": " +
                             simdjson::error_message(error));
    }
    Json json(od::value value, std::uint64_t offset, std::string_view what) const {
        Json out;
        check(read_json(value, out, 0), offset, what);
        return out;
    }
    std::string file_;
    const char* base_;
};

// Schema 1.1.x: {"values": [...], "shapes": [...], "types": [...], "strides": [...]}.
void EtReader::arguments(od::value value, RawArguments& raw, std::uint64_t offset) const {
    od::object object;
    check(value.get_object().get(object), offset, "inputs/outputs");
    for (auto field : object) {
        std::string_view key;
        check(field.unescaped_key().get(key), offset, "member name");
        od::value v;
        check(field.value().get(v), offset, key);
        if (key == "values")
            raw.values = json(v, offset, key);
        else if (key == "shapes")
            raw.shapes = json(v, offset, key);
        else if (key == "types")
            raw.types = json(v, offset, key);
        else if (key == "strides") {
            raw.strides = json(v, offset, key);
            raw.has_strides = raw.strides.kind == Json::Kind::Array;
        }
    }
}

EtNode EtReader::node(od::value value, std::uint64_t offset) const {
    EtNode node;
    node.offset = offset;
    RawArguments inputs, outputs;
    od::object object;
    check(value.get_object().get(object), offset, "not a JSON object");
    // Scalars may sit at the top level (1.0.x) or in `attrs` (1.1.x); both land here.
    auto apply = [&](std::string_view key, const Json& v) {
        if (key == "rf_id" && v.is_integer)
            node.rf_id = v.integer;
        else if (key == "seq_id" && v.is_integer)
            node.seq_id = v.integer;
        else if (key == "tid" && v.is_integer)
            node.tid = v.integer;
        else if (key == "op_schema" && v.kind == Json::Kind::String)
            node.schema = v.text;
    };
    for (auto field : object) {
        std::string_view key;
        check(field.unescaped_key().get(key), offset, "member name");
        od::value v;
        check(field.value().get(v), offset, key);
        if (key == "inputs" || key == "outputs") {
            RawArguments& raw = key == "inputs" ? inputs : outputs;
            od::json_type type{};
            check(v.type().get(type), offset, key);
            if (type == od::json_type::object)
                arguments(v, raw, offset);
            else
                raw.values = json(v, offset, key);  // 1.0.x: the values alone
        } else if (key == "input_shapes" || key == "output_shapes") {
            (key[0] == 'i' ? inputs : outputs).shapes = json(v, offset, key);
        } else if (key == "input_types" || key == "output_types") {
            (key[0] == 'i' ? inputs : outputs).types = json(v, offset, key);
        } else if (key == "input_strides" || key == "output_strides") {
            RawArguments& raw = key[0] == 'i' ? inputs : outputs;
            raw.strides = json(v, offset, key);
            raw.has_strides = raw.strides.kind == Json::Kind::Array;
        } else if (key == "attrs") {
            od::array attrs;
            check(v.get_array().get(attrs), offset, "attrs");
            for (auto element : attrs) {
                od::object attr;
                check(element.get_object().get(attr), offset, "attrs element");
                std::string name;
                Json attr_value;
                for (auto member : attr) {
                    std::string_view k;
                    check(member.unescaped_key().get(k), offset, "attrs member name");
                    od::value mv;
                    check(member.value().get(mv), offset, k);
                    if (k == "name") {
                        std::string_view text;
                        check(mv.get_string().get(text), offset, "attrs name");
                        name = text;
                    } else if (k == "value") {
                        attr_value = json(mv, offset, "attrs value");
                    }
                }
                apply(name, attr_value);
            }
        } else if (key == "id" || key == "ctrl_deps" || key == "parent") {
            const Json id = json(v, offset, key);
            if (id.is_integer) (key == "id" ? node.id : node.parent) = id.integer;
        } else if (key == "name") {
            std::string_view text;
            check(v.get_string().get(text), offset, "name");
            node.name = text;
        } else if (key == "rf_id" || key == "seq_id" || key == "tid" || key == "op_schema") {
            apply(key, json(v, offset, key));
        }
    }
    node.inputs = build_arguments(inputs);
    node.outputs = build_arguments(outputs);
    return node;
}

bool names_equal(const Trace& trace, const CpuOp& op, std::string_view name) {
    return trace.names.view(op.name) == name;
}

OpArgument argument_from(Trace& trace, const EtArgument& in) {
    OpArgument arg;
    const std::string_view type = kineto_input_type(in.type);
    arg.type = trace.names.intern(type);
    arg.dims = in.dims;
    arg.strides = in.strides;
    arg.list_ranks = in.list_ranks;
    arg.has_strides = in.has_strides;
    if (type == "Scalar" || type == "ScalarList") arg.concrete = trace.names.intern(in.value);
    arg.storage_offset = in.storage_offset;
    // "GenericList[Tensor(c10::BFloat16),...]": the elements' dtype.
    if (const auto open = in.type.find("Tensor(");
        type == "TensorList" && open != std::string::npos) {
        const auto close = in.type.find(')', open);
        if (close != std::string::npos)
            arg.element_type =
                trace.names.intern(std::string_view(in.type).substr(open + 7, close - open - 7));
    }
    return arg;
}

// Copies what the ET node knows onto op `index`: its shapes (shared with the ops recorded alike)
// and its storage ids (Trace::storages, the op's own).
void apply_node(Trace& trace, std::uint32_t index, const EtNode& node, AttachStats& stats) {
    CpuOp& op = trace.cpu_ops[index];
    OpShapes shapes = trace.shapes_of(op);
    OpStorages::Record ids = trace.storages.get(index);  // a node joined to the op before
    const auto take_ids = [&](std::size_t i, const EtArgument& in, bool list) {
        if (ids.inputs.size() <= i) ids.inputs.resize(i + 1, kNoId);
        ids.inputs[i] = in.storage_id;
        if (!list) return;
        if (ids.lists.size() <= i) ids.lists.resize(i + 1);
        ids.lists[i] = in.list_storage_ids;
    };
    if (!node.schema.empty()) shapes.schema = trace.names.intern(node.schema);
    if (shapes.inputs.empty()) {
        // Recorded without record_shapes: the ET is the only source of the arguments.
        for (const EtArgument& in : node.inputs) {
            take_ids(shapes.inputs.size(), in, true);
            shapes.inputs.push_back(argument_from(trace, in));
        }
        if (!node.inputs.empty()) ++stats.shapes_filled;
    } else if (shapes.inputs.size() == node.inputs.size()) {
        for (std::size_t i = 0; i < node.inputs.size(); ++i) {
            OpArgument& arg = shapes.inputs[i];
            // Kineto records a tensor list as an empty list and a list of floats as nothing at
            // all; the ET has the tensors and the values.
            const EtArgument& in = node.inputs[i];
            const bool kineto_empty = arg.dims.empty() && arg.list_ranks.empty();
            const bool et_knows = !in.list_ranks.empty() || (arg.type == StringPool::kEmpty &&
                                                             !kineto_input_type(in.type).empty());
            if (kineto_empty && et_knows) {
                arg = argument_from(trace, in);
                take_ids(i, in, true);
                ++stats.lists_filled;
                continue;
            }
            arg.storage_offset = in.storage_offset;
            // Kineto recorded the list's element dims but has no element dtype or storages.
            const bool same_list = !arg.list_ranks.empty() && arg.list_ranks == in.list_ranks;
            if (same_list) arg.element_type = argument_from(trace, in).element_type;
            take_ids(i, in, same_list);
        }
    } else {
        // Positions cannot be trusted to line up; a wrong storage id would fake dataflow.
        ++stats.arity_mismatches;
    }
    ids.outputs.clear();
    for (const EtArgument& out : node.outputs) {
        if (is_tensor_list_type(out.type)) {
            std::size_t at = 0;
            for (std::size_t i = 0; i < out.list_storage_ids.size(); ++i) {
                const std::size_t rank = i < out.list_ranks.size() ? out.list_ranks[i] : 0;
                const std::size_t end = std::min(out.dims.size(), at + rank);
                const std::span<const std::int64_t> dims(out.dims.data() + at, end - at);
                ids.outputs.push_back({out.list_storage_ids[i], trace.storages.intern_dims(dims)});
                at = end;
            }
        } else if (is_tensor_type(out.type) && !is_undefined_tensor_type(out.type)) {
            ids.outputs.push_back({out.storage_id, trace.storages.intern_dims(out.dims)});
        }
    }
    trace.set_shapes(op, std::move(shapes));
    trace.storages.set(index, ids);
}

void join_on_record_function_id(Trace& trace, const ExecutionTrace& et,
                                const std::vector<std::uint32_t>& scope, AttachStats& stats) {
    std::vector<std::pair<std::int64_t, std::uint32_t>> by_rf;
    for (std::uint32_t i : scope)
        if (trace.cpu_ops[i].record_function_id != kNoId)
            by_rf.emplace_back(trace.cpu_ops[i].record_function_id, i);
    std::sort(by_rf.begin(), by_rf.end());
    std::vector<bool> used(trace.cpu_ops.size(), false);
    for (const EtNode& node : et.nodes) {
        if (is_et_root(node)) continue;
        auto [lo, hi] =
            std::equal_range(by_rf.begin(), by_rf.end(), std::pair{node.rf_id, std::uint32_t{0}},
                             [](const auto& a, const auto& b) { return a.first < b.first; });
        std::uint32_t match = kNoIndex;
        std::size_t candidates = 0;
        for (auto it = lo; it != hi; ++it)
            if (!used[it->second] && names_equal(trace, trace.cpu_ops[it->second], node.name)) {
                match = it->second;
                ++candidates;
            }
        // Several same-named ops with one rf_id (several processes in one file): no safe choice.
        if (node.rf_id == kNoId || candidates != 1) {
            if (node.rf_id != kNoId && lo != hi && candidates == 0) ++stats.name_mismatches;
            ++stats.unmatched_nodes;
            continue;
        }
        used[match] = true;
        apply_node(trace, match, node, stats);
        ++stats.matched;
    }
    for (const auto& [rf, i] : by_rf) stats.unmatched_ops += !used[i];
}

// See EtJoin::SequenceAlignment.
void join_on_sequence(Trace& trace, const ExecutionTrace& et,
                      const std::vector<std::uint32_t>& scope, AttachStats& stats) {
    std::map<std::int64_t, std::vector<std::uint32_t>> threads;  // Kineto tid -> ops by External id
    for (std::uint32_t i : scope) {
        const CpuOp& op = trace.cpu_ops[i];
        if (op.external_id != kNoId && op.category <= 1) threads[op.tid].push_back(i);
    }
    struct Place {
        const std::vector<std::uint32_t>* thread;
        std::size_t pos;
    };
    std::unordered_map<std::int64_t, std::vector<Place>> by_sequence;
    for (auto& [tid, ops] : threads) {
        std::sort(ops.begin(), ops.end(), [&](std::uint32_t a, std::uint32_t b) {
            return trace.cpu_ops[a].external_id < trace.cpu_ops[b].external_id;
        });
        for (std::size_t pos = 0; pos < ops.size(); ++pos)
            if (trace.cpu_ops[ops[pos]].sequence_number != kNoId)
                by_sequence[trace.cpu_ops[ops[pos]].sequence_number].push_back({&ops, pos});
    }
    std::map<std::int64_t, std::vector<const EtNode*>> groups;  // ET tid -> nodes by rf_id
    for (const EtNode& node : et.nodes)
        if (!is_et_root(node)) groups[node.tid].push_back(&node);

    // Each distinct placement costs a pass over the group; a real placement is found at the
    // first anchor, so a few dozen failed ones mean there is none.
    constexpr std::size_t kMaxPlacementsTried = 64;
    for (auto& [tid, nodes] : groups) {
        std::stable_sort(nodes.begin(), nodes.end(), [](const EtNode* a, const EtNode* b) {
            return a->rf_id != b->rf_id ? a->rf_id < b->rf_id : a->id < b->id;
        });
        std::set<std::pair<const std::vector<std::uint32_t>*, std::size_t>> tried, found;
        for (std::size_t k = 0; k < nodes.size() && tried.size() < kMaxPlacementsTried; ++k) {
            if (nodes[k]->seq_id < 0) continue;
            auto anchors = by_sequence.find(nodes[k]->seq_id);
            if (anchors == by_sequence.end()) continue;
            for (const Place& place : anchors->second) {
                const auto& ops = *place.thread;
                if (place.pos < k || place.pos - k + nodes.size() > ops.size()) continue;
                if (!names_equal(trace, trace.cpu_ops[ops[place.pos]], nodes[k]->name)) continue;
                const std::size_t start = place.pos - k;
                if (!tried.insert({place.thread, start}).second) continue;
                bool all = true;
                for (std::size_t j = 0; j < nodes.size() && all; ++j)
                    all = names_equal(trace, trace.cpu_ops[ops[start + j]], nodes[j]->name);
                if (all) found.insert({place.thread, start});
            }
        }
        if (found.size() != 1) {
            stats.unmatched_nodes += nodes.size();
            continue;
        }
        const auto& [ops, start] = *found.begin();
        for (std::size_t j = 0; j < nodes.size(); ++j) {
            apply_node(trace, (*ops)[start + j], *nodes[j], stats);
            ++stats.matched;
        }
    }
}

}  // namespace

std::string_view kineto_input_type(std::string_view type) {
    if (is_tensor_list_type(type)) return "TensorList";
    if (type.starts_with("GenericList[")) return "ScalarList";
    if (type.starts_with("Tensor(") && type.ends_with(")")) {
        if (is_undefined_tensor_type(type)) return "";
        return type.substr(7, type.size() - 8);
    }
    static constexpr std::string_view kScalars[] = {"Int",           "Double",  "Bool",  "SymInt",
                                                    "SymFloat",      "SymBool", "Float", "Long",
                                                    "ComplexDouble", "Scalar"};
    for (std::string_view scalar : kScalars)
        if (type == scalar) return "Scalar";
    return "";
}

bool is_et_root(const EtNode& node) {
    return node.name.starts_with("[pytorch|profiler|execution_") && node.name.ends_with("]");
}

const char* to_string(EtJoin join) {
    switch (join) {
        case EtJoin::None:
            return "none";
        case EtJoin::RecordFunctionId:
            return "record function id";
        case EtJoin::SequenceAlignment:
            return "sequence alignment";
    }
    return "?";
}

ExecutionTrace read_execution_trace(const std::string& path) {
    ExecutionTrace et;
    et.source = path;
    // Padding in place rather than a simdjson::padded_string copy: ETs of large models are big.
    std::string data = read_all(path);
    const std::size_t size = data.size();
    data.resize(size + simdjson::SIMDJSON_PADDING, ' ');
    const std::string file = path == "-" ? "<stdin>" : path;
    EtReader reader(file, data.data());

    od::parser parser;
    od::document doc;
    if (auto e = parser.iterate(data.data(), size, data.size()).get(doc))
        reader.fail(0, std::string("not an Execution Trace: ") + simdjson::error_message(e));
    od::object root;
    if (auto e = doc.get_object().get(root)) {
        // On-demand sees unbalanced brackets up front: that is a cut-short file, not a wrong one.
        if (e == simdjson::INCOMPLETE_ARRAY_OR_OBJECT)
            reader.fail(size, "truncated JSON: brackets left open at the end");
        reader.fail(reader.here(doc, 0),
                    std::string("not an Execution Trace (expected a JSON object): ") +
                        simdjson::error_message(e));
    }
    bool saw_nodes = false;
    auto check = [&](simdjson::error_code e, std::string_view what) {
        if (e)
            reader.fail(reader.here(doc, size), "not an Execution Trace: " + std::string(what) +
                                                    ": " + simdjson::error_message(e));
    };
    for (auto field : root) {
        std::string_view key;
        check(field.unescaped_key().get(key), "unreadable member name");
        od::value value;
        check(field.value().get(value), "unreadable value");
        if (key == "schema") {
            std::string_view text;
            if (!value.get_string().get(text)) et.schema_version = text;
        } else if (key == "pid") {
            std::int64_t pid = 0;
            if (!value.get_int64().get(pid)) et.pid = pid;
        } else if (key == "nodes") {
            od::array nodes;
            check(value.get_array().get(nodes), "\"nodes\" is not an array");
            saw_nodes = true;
            for (auto element : nodes) {
                od::value node;
                check(element.get(node), "unreadable node");
                const char* at = nullptr;
                const std::uint64_t offset =
                    node.current_location().get(at) ? reader.here(doc, 0) : reader.offset_of(at);
                et.nodes.push_back(reader.node(node, offset));
            }
        }
    }
    if (!saw_nodes) reader.fail(size, "not an Execution Trace: no \"nodes\" array");
    return et;
}

AttachStats attach_execution_trace(Trace& trace, const ExecutionTrace& et) {
    AttachStats stats;
    // Record function ids and External ids are per process; with several processes in one file
    // only the ET's own may match.
    const bool has_pid = std::any_of(trace.cpu_ops.begin(), trace.cpu_ops.end(),
                                     [&](const CpuOp& op) { return op.pid == et.pid; });
    std::vector<std::uint32_t> scope;
    bool any_rf = false;
    for (std::uint32_t i = 0; i < trace.cpu_ops.size(); ++i) {
        const CpuOp& op = trace.cpu_ops[i];
        if (has_pid && op.pid != et.pid) continue;
        scope.push_back(i);
        any_rf |= op.record_function_id != kNoId;
    }
    if (any_rf) {
        stats.join = EtJoin::RecordFunctionId;
        join_on_record_function_id(trace, et, scope, stats);
    } else if (!scope.empty()) {
        stats.join = EtJoin::SequenceAlignment;
        join_on_sequence(trace, et, scope, stats);
    } else {
        for (const EtNode& node : et.nodes) stats.unmatched_nodes += !is_et_root(node);
    }
    return stats;
}

}  // namespace replay
