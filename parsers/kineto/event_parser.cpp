// The raw event reader (EventParser::event_raw) and what both readers share: the records an event
// makes, the pid/tid ids, the integer args table, and the record_shapes args read from raw text.
#include "kineto/event_parser.h"

#include <charconv>

#include "kineto/event_keys.h"

namespace replay::kineto {

std::optional<Malformed> EventParser::event(const char* json, std::size_t length,
                                            std::uint64_t offset) {
    doc_end_ = json + length;
    if (event_raw(json, length, offset)) return std::nullopt;
    // simdjson may look past `length` (into the next event of the chunk, or its padding) when the
    // text is malformed, and what lies there depends on where the chunks end: the same event then
    // parsed in one chunking and not in another (found by tests/fuzz). The slow path reads a copy
    // padded with blanks, as the event would be at the very end of the input.
    ondemand_copy_.assign(json, length);
    ondemand_copy_.append(simdjson::SIMDJSON_PADDING, ' ');
    copied_from_ = json;
    copied_length_ = length;
    doc_end_ = ondemand_copy_.data() + length;
    auto result = event_ondemand(ondemand_copy_.data(), length, ondemand_copy_.size(), offset);
    copied_from_ = nullptr;
    return result;
}

// Mirrors event_ondemand() and parse_args() member by member on strict JSON; whatever they would
// reject, and anything out of the ordinary, is undone and handed back to them.
bool EventParser::event_raw(const char* json, std::size_t length, std::uint64_t offset) {
    const char* const end = json + length;
    const char* p = skip_space(json, end);
    if (p >= end || *p != '{') return false;
    const std::size_t names_mark = out_->names.size();
    shapes_created_ = false;
    pending_shapes_.reset();
    EventFields e;
    auto give_up = [&]() {
        discard_record(e);
        out_->names.rollback(names_mark);
        return false;
    };
    // id_from() for plain numbers and strings; other values give 0 there too.
    auto id = [&](std::int64_t& out, bool& label) {
        label = false;
        out = 0;
        if (*p == '"') {
            std::string_view text;
            if (!raw_plain_string(p, end, text)) return false;
            out = id_from_text(text, true, label);
            return true;
        }
        if (*p == '-' || is_digit(*p)) return raw_int(p, end, out);
        return raw_skip(p, end);
    };

    p = skip_space(p + 1, end);
    if (p >= end || *p == '}') return give_up();  // no "ph": malformed
    while (true) {
        EventKey key = known_event_key(p, end);
        if (key == EventKey::Other) {
            std::string_view text;
            if (!raw_plain_string(p, end, text) || !raw_colon(p, end)) return give_up();
            key = event_key(text);
        }
        if (p >= end) return give_up();
        bool read = true;  // the value has been consumed
        switch (key) {
            case EventKey::Ph:
                if (!raw_plain_string(p, end, e.ph)) return give_up();
                ensure_record(e, offset);
                break;
            case EventKey::Ts:
                if (!raw_micros(p, end, e.ts)) return give_up();
                e.has_ts = true;
                break;
            case EventKey::Cat: {
                std::string_view text;
                if (!raw_plain_string(p, end, text)) return give_up();
                e.set_cat(text);
                ensure_record(e, offset);
                break;
            }
            // A plain number nearly always: read here, the rest by id(). A repeated member
            // replaces the first one, label or not, as in id_from().
            case EventKey::Pid:
                e.pid_label = false;
                if (!(is_digit(*p) ? raw_int(p, end, e.pid) : id(e.pid, e.pid_label)))
                    return give_up();
                break;
            case EventKey::Tid:
                e.tid_label = false;
                if (!(is_digit(*p) ? raw_int(p, end, e.tid) : id(e.tid, e.tid_label)))
                    return give_up();
                break;
            case EventKey::Dur:
                if (!raw_micros(p, end, e.dur)) return give_up();
                break;
            case EventKey::Name:
                if (!raw_plain_string(p, end, e.name)) return give_up();
                e.has_name = true;
                break;
            case EventKey::Args:
                if (e.index != kNoIndex) {
                    if (*p != '{' || !parse_args_raw(p, end, e.record_category, e.index))
                        return give_up();
                } else if (e.ph.empty() || !e.has_cat) {
                    return give_up();  // args before ph/cat: event_ondemand() reads them after
                } else {
                    read = false;
                }
                break;
            case EventKey::Other:
                read = false;
                break;
        }
        if (!read && !raw_skip_value(p, end)) return give_up();
        const AfterValue next = raw_after_value(p, end);
        if (next == AfterValue::Close) break;
        if (next == AfterValue::Bad) return give_up();
    }
    if (skip_space(p + 1, end) != end) return give_up();
    if (e.ph.empty()) return give_up();
    const bool recorded = e.recorded();
    if (recorded) {
        ensure_record(e, offset);
        if (e.missing() != nullptr) return give_up();
    }
    count_event(e);
    if (pending_shapes_) shape_cache_.insert(*pending_shapes_);
    if (!recorded) return true;
    fill_record(e, intern(e.name, true));
    return true;
}

std::int64_t EventParser::id_from_text(std::string_view text, bool in_input, bool& label) {
    std::string_view digits = text;
    if (digits.substr(0, 7) == "stream ") digits.remove_prefix(7);
    std::int64_t v = 0;
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    label = !(ec == std::errc() && ptr == digits.data() + digits.size());
    if (!label) return v;
    return -1 - static_cast<std::int64_t>(intern(text, in_input));
}

std::size_t EventParser::make_record(Category category, std::uint64_t offset) {
    std::size_t index = kNoIndex;
    switch (category) {
        case Category::Kernel:
        case Category::Memcpy:
        case Category::Memset:
            index = out_->activities.size();
            out_->activities.emplace_back();
            out_->activity_labels.push_back(0);
            out_->activities.back().kind = category == Category::Kernel   ? ActivityKind::Kernel
                                           : category == Category::Memcpy ? ActivityKind::Memcpy
                                                                          : ActivityKind::Memset;
            out_->activities.back().byte_offset = offset;
            break;
        case Category::CpuOp:
        case Category::Annotation:
            index = out_->cpu_ops.size();
            out_->cpu_ops.emplace_back();
            out_->op_labels.push_back(0);
            out_->cpu_ops.back().category = category == Category::CpuOp ? 0 : 1;
            break;
        case Category::Runtime:
        case Category::Driver:
        case Category::Sync:
            index = out_->runtime_calls.size();
            out_->runtime_calls.emplace_back();
            out_->call_labels.push_back(0);
            out_->runtime_calls.back().is_driver = category == Category::Driver;
            break;
        default:
            break;
    }
    return index;
}

void EventParser::drop_record(Category record_category) {
    switch (record_category) {
        case Category::Kernel:
        case Category::Memcpy:
        case Category::Memset:
            out_->activities.pop_back();
            out_->activity_labels.pop_back();
            break;
        case Category::CpuOp:
        case Category::Annotation:
            if (shapes_created_) {
                out_->op_shapes.pop_back();
                shapes_created_ = false;
            }
            out_->cpu_ops.pop_back();
            out_->op_labels.pop_back();
            break;
        default:
            out_->runtime_calls.pop_back();
            out_->call_labels.pop_back();
            break;
    }
}

// The record keeps the kind it was made with, even when a repeated "cat" said otherwise later.
void EventParser::fill_record(const EventFields& e, NameId name_id) {
    // CpuOp and RuntimeCall: host-side ranges with the same fields.
    const auto fill_host_record = [&](auto& record, std::uint8_t& labels) {
        record.name = name_id;
        record.ts = e.ts;
        record.dur = e.dur;
        record.pid = e.pid;
        record.tid = e.tid;
        labels = static_cast<std::uint8_t>((e.pid_label ? kPidLabel : 0) |
                                           (e.tid_label ? kTidLabel : 0));
    };
    switch (e.record_category) {
        case Category::Kernel:
        case Category::Memcpy:
        case Category::Memset: {
            GpuActivity& a = out_->activities[e.index];
            a.name = name_id;
            a.ts = e.ts;
            a.dur = e.dur;
            if (a.device == 0 && e.pid > 0) a.device = e.pid;
            if (a.stream == 0) {
                a.stream = e.tid;
                if (e.tid_label) out_->activity_labels[e.index] = kTidLabel;
            }
            break;
        }
        case Category::CpuOp:
        case Category::Annotation:
            fill_host_record(out_->cpu_ops[e.index], out_->op_labels[e.index]);
            break;
        default:
            fill_host_record(out_->runtime_calls[e.index], out_->call_labels[e.index]);
            break;
    }
}

EventParser::IntSlot EventParser::int_arg(Category category, std::size_t index,
                                          std::string_view key) {
    const bool external = is(key, "External id") || is(key, "external id");
    switch (category) {
        case Category::Kernel:
        case Category::Memcpy:
        case Category::Memset: {
            GpuActivity& a = out_->activities[index];
            if (is(key, "correlation")) return {&a.correlation, nullptr};
            if (external) return {&a.external_id, nullptr};
            if (is(key, "device")) return {&a.device, nullptr};
            if (is(key, "stream")) return {&a.stream, nullptr};
            if (is(key, "bytes")) return {&a.bytes, nullptr};
            if (is(key, "registers per thread")) return {nullptr, &a.registers};
            if (is(key, "shared memory")) return {nullptr, &a.shared_memory};
            if (is(key, "In msg nelems")) return {&a.in_nelems, nullptr};
            if (is(key, "Out msg nelems")) return {&a.out_nelems, nullptr};
            if (is(key, "Group size")) return {nullptr, &a.group_size};
            return {};
        }
        case Category::CpuOp:
        case Category::Annotation: {
            CpuOp& op = out_->cpu_ops[index];
            if (external) return {&op.external_id, nullptr};
            if (is(key, "Record function id")) return {&op.record_function_id, nullptr};
            if (is(key, "Sequence number")) return {&op.sequence_number, nullptr};
            return {};
        }
        default: {
            RuntimeCall& call = out_->runtime_calls[index];
            if (is(key, "correlation")) return {&call.correlation, nullptr};
            if (external) return {&call.external_id, nullptr};
            if (is(key, "wait_on_stream")) return {&call.wait_on_stream, nullptr};
            if (is(key, "wait_on_cuda_event_record_corr_id"))
                return {&call.wait_on_event_correlation, nullptr};
            return {};
        }
    }
}

bool EventParser::parse_args_raw(const char*& p, const char* end, Category category,
                                 std::size_t index) {
    p = skip_space(p + 1, end);  // past '{'
    if (p < end && *p == '}') {
        ++p;
        return true;
    }
    ShapeTexts shape_texts;
    while (true) {
        std::string_view key;
        if (!raw_plain_string(p, end, key) || !raw_colon(p, end)) return false;
        bool read = true;  // the value has been consumed
        if (const IntSlot slot = int_arg(category, index, key)) {
            std::int64_t v;
            if (!raw_int(p, end, v)) return false;
            slot.set(v);
        } else if (category == Category::Kernel || category == Category::Memcpy ||
                   category == Category::Memset) {
            GpuActivity& a = out_->activities[index];
            if (is(key, "grid") || is(key, "block")) {
                std::int32_t* out = is(key, "grid") ? a.grid : a.block;
                if (*p != '[') return false;
                p = skip_space(p + 1, end);
                if (p < end && *p != ']') {
                    for (int i = 0;;) {
                        std::int64_t v;
                        if (!raw_int(p, end, v)) return false;
                        if (i < 3) out[i++] = static_cast<std::int32_t>(v);
                        if (!raw_separator(p, end)) return false;
                        if (*p == ']') break;
                    }
                }
                if (p >= end) return false;
                ++p;
            } else if (is(key, "Collective name") || is(key, "dtype")) {
                std::string_view text;
                if (!raw_plain_string(p, end, text)) return false;
                (is(key, "dtype") ? a.collective_dtype : a.collective) = intern(text, true);
            } else {
                read = false;
            }
        } else if (category == Category::CpuOp || category == Category::Annotation) {
            const int field = ShapeTexts::field_of(key);
            if (field < 0) {
                read = false;
            } else if (!shape_texts.text[field].empty()) {
                return false;  // repeated: simdjson reads both, as it always has
            } else {
                const char* start = p;
                if (const char* stop = array_end(p, end))
                    p = stop;
                else if (!raw_skip(p, end))
                    return false;
                shape_texts.text[field] =
                    std::string_view(start, static_cast<std::size_t>(p - start));
                shape_texts.order[shape_texts.count++] = static_cast<ShapeTexts::Field>(field);
            }
        } else {
            read = false;
        }
        if (!read && !raw_skip_value(p, end)) return false;
        const AfterValue next = raw_after_value(p, end);
        if (next == AfterValue::Bad) return false;
        if (next == AfterValue::Close) {
            ++p;
            return shape_texts.count == 0 || resolve_shapes(out_->cpu_ops[index], shape_texts, end);
        }
    }
}

bool EventParser::resolve_shapes(CpuOp& op, const ShapeTexts& texts, const char* end) {
    // A second "args" object adds to the first one's shapes: simdjson does that, as it always has.
    if (op.shapes != kNoIndex) return false;
    const std::uint64_t key = texts.hash();
    if (auto it = shape_cache_.find(key); it != shape_cache_.end() && it->second.texts == texts) {
        op.shapes = it->second.index;
        return true;
    }
    // Each text is read in full here (in the event's order, which is the order their names are
    // interned in), and must end where array_end() said it does.
    OpShapes& shapes = shapes_of(op);
    for (std::uint8_t i = 0; i < texts.count; ++i) {
        const ShapeTexts::Field field = texts.order[i];
        const std::string_view text = texts.text[field];
        const char* stop = nullptr;
        const bool dims = field == ShapeTexts::kDims || field == ShapeTexts::kStrides;
        if (!(dims ? read_dims_lists_raw(text.data(), end, raw_dims_, &stop)
                   : read_text_list_raw(text.data(), end, raw_texts_, &stop)) ||
            stop != text.data() + text.size())
            return false;
        if (dims)
            add_raw_dims(shapes.inputs, field == ShapeTexts::kStrides);
        else
            set_raw_texts(shapes.inputs, field == ShapeTexts::kTypes);
    }
    // A colliding hash keeps the entry it has; this one is simply not shared within the batch.
    if (!shape_cache_.contains(key)) pending_shapes_.emplace(key, CachedShapes{texts, op.shapes});
    return true;
}

}  // namespace replay::kineto
