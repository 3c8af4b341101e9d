// The simdjson reader (EventParser::event_ondemand) for every event the raw reader hands back:
// escapes, unusual layouts and member orders, and malformed events, whose reason it names.
#include "kineto/event_keys.h"
#include "kineto/event_parser.h"

namespace replay::kineto {

std::optional<Malformed> EventParser::event_ondemand(const char* json, std::size_t length,
                                                     std::size_t capacity, std::uint64_t offset) {
    shapes_created_ = false;
    od::document doc;
    if (parser_.iterate(json, length, capacity).get(doc)) return Malformed{"not valid JSON"};
    od::object object;
    if (doc.get_object().get(object)) return Malformed{"an event is not a JSON object"};

    EventFields e;
    bool name_in_input = true;
    bool args_deferred = false;
    auto fail = [&](std::string reason) {
        discard_record(e);
        return Malformed{std::move(reason)};
    };

    for (auto result : object) {
        std::string_view key;
        if (result.error()) return fail("unreadable member name");
        od::field& field =
            result.value_unsafe();  // no copy: copying a field stalls on store forwarding
        if (!field_key(field, key)) return fail("unreadable member name");
        od::value& value = field.value();
        switch (event_key(key)) {
            case EventKey::Ph:
                if (!get_text(value, e.ph)) return fail("\"ph\" is not a string");
                ensure_record(e, offset);
                break;
            case EventKey::Ts:
                if (!micros_to_nanos_padded(value.raw_json_token(), e.ts))
                    return fail("\"ts\" is not a number");
                e.has_ts = true;
                break;
            case EventKey::Cat: {
                std::string_view text;
                if (!get_text(value, text)) return fail("\"cat\" is not a string");
                e.set_cat(text);
                ensure_record(e, offset);
                break;
            }
            case EventKey::Pid:
                e.pid = id_from(value, e.pid_label);
                break;
            case EventKey::Tid:
                e.tid = id_from(value, e.tid_label);
                break;
            case EventKey::Dur:
                if (!micros_to_nanos_padded(value.raw_json_token(), e.dur))
                    return fail("\"dur\" is not a number");
                break;
            case EventKey::Name:
                if (!get_text(value, e.name, name_in_input))
                    return fail("\"name\" is not a string");
                // An unescaped name stays in the parser's string buffer until the next document.
                e.has_name = true;
                break;
            case EventKey::Args:
                if (e.index != kNoIndex) {
                    od::object args;
                    if (value.get_object().get(args)) return fail("\"args\" is not an object");
                    if (auto bad = parse_args(args, e.record_category, e.index))
                        return fail(bad->reason);
                } else if (e.ph.empty() || !e.has_cat) {
                    // Rare member order (args before ph/cat): read the event again afterwards.
                    args_deferred = true;
                }
                break;
            case EventKey::Other:
                break;
        }
    }
    if (e.ph.empty()) return fail("missing \"ph\"");
    count_event(e);
    if (!e.recorded()) return std::nullopt;
    ensure_record(e, offset);
    if (const char* why = e.missing()) return fail(why);
    if (args_deferred) {
        od::document again;
        od::object args;
        if (args_parser_.iterate(json, length, capacity).get(again) ||
            again["args"].get_object().get(args))
            return fail("\"args\" is not an object");
        if (auto bad = parse_args(args, e.record_category, e.index)) return fail(bad->reason);
    }
    fill_record(e, intern(e.name, name_in_input));
    return std::nullopt;
}

std::int64_t EventParser::id_from(od::value value, bool& label) {
    label = false;
    od::json_type type;
    if (value.type().get(type)) return 0;
    if (type == od::json_type::number) return as_int(value).value_or(0);
    std::string_view text;
    bool in_input = false;
    if (type != od::json_type::string || !get_text(value, text, in_input)) return 0;
    return id_from_text(text, in_input, label);
}

std::optional<Malformed> EventParser::parse_args(od::object args, Category category,
                                                 std::size_t index) {
    auto bad = [](std::string_view key) {
        return Malformed{"wrong type for args \"" + std::string(key) + "\""};
    };
    for (auto result : args) {
        std::string_view key;
        if (result.error()) return Malformed{"unreadable args member name"};
        od::field& field = result.value_unsafe();
        if (!field_key(field, key)) return Malformed{"unreadable args member name"};
        od::value& value = field.value();
        if (const IntSlot slot = int_arg(category, index, key)) {
            auto v = as_int(value);
            if (!v) return bad(key);
            slot.set(*v);
            continue;
        }
        switch (category) {
            case Category::Kernel:
            case Category::Memcpy:
            case Category::Memset: {
                GpuActivity& a = out_->activities[index];
                if (is(key, "grid") || is(key, "block")) {
                    od::array dims;
                    if (value.get_array().get(dims)) return bad(key);
                    std::int32_t* out = is(key, "grid") ? a.grid : a.block;
                    int i = 0;
                    for (auto d : dims) {
                        od::value dv;
                        if (d.get(dv)) return bad(key);
                        auto n = as_int(dv);
                        if (!n) return bad(key);
                        if (i < 3) out[i++] = static_cast<std::int32_t>(*n);
                    }
                } else if (is(key, "Collective name") || is(key, "dtype")) {
                    std::string_view text;
                    bool in_input = false;
                    if (!get_text(value, text, in_input)) return bad(key);
                    (is(key, "dtype") ? a.collective_dtype : a.collective) = intern(text, in_input);
                }
                break;
            }
            case Category::CpuOp:
            case Category::Annotation: {
                CpuOp& op = out_->cpu_ops[index];
                const int field = ShapeTexts::field_of(key);
                if (field == ShapeTexts::kDims || field == ShapeTexts::kStrides) {
                    const bool strides = field == ShapeTexts::kStrides;
                    if (read_dims_lists_raw(value.raw_json_token().data(), doc_end_, raw_dims_)) {
                        add_raw_dims(shapes_of(op).inputs, strides);
                        continue;
                    }
                    if (!for_each_input(value, shapes_of(op).inputs, doc_end_,
                                        [strides](od::value v, OpArgument& arg) {
                                            if (!strides)
                                                return read_dims(v, arg.dims, arg.list_ranks);
                                            std::vector<std::uint8_t> ranks;
                                            arg.has_strides = true;
                                            return read_dims(v, arg.strides, ranks);
                                        }))
                        return bad(key);
                } else if (field == ShapeTexts::kTypes || field == ShapeTexts::kConcrete) {
                    const bool is_type = field == ShapeTexts::kTypes;
                    if (read_text_list_raw(value.raw_json_token().data(), doc_end_, raw_texts_)) {
                        set_raw_texts(shapes_of(op).inputs, is_type);
                        continue;
                    }
                    if (!for_each_input(value, shapes_of(op).inputs, doc_end_,
                                        [&](od::value v, OpArgument& arg) {
                                            std::string_view text;
                                            bool in_input = false;
                                            if (!get_text(v, text, in_input)) return false;
                                            (is_type ? arg.type : arg.concrete) =
                                                intern(text, in_input);
                                            return true;
                                        }))
                        return bad(key);
                }
                break;
            }
            default:
                break;
        }
    }
    return std::nullopt;
}

}  // namespace replay::kineto
