// One event's text to a record in the batch: the raw reader (event_raw, event_parser.cpp) takes
// nearly every event straight from its strict, plain JSON text; whatever it does not accept it
// undoes and hands to the simdjson reader (event_parser_ondemand.cpp), which decides what the
// event is. Both fill the same EventFields and share its checks, records and id readers.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kineto/batch.h"
#include "kineto/categories.h"
#include "kineto/json_values.h"
#include "kineto/scanner.h"
#include "kineto/shape_lists.h"

namespace replay::kineto {

// A malformed event: why, and where inside the event.
struct Malformed {
    std::string reason;
};

// The raw texts of a cpu_op's record_shapes args. Ops with byte-identical texts share one
// entry: only the first of them in a batch is parsed, the others are only skipped over.
struct ShapeTexts {
    enum Field : std::uint8_t { kDims, kStrides, kTypes, kConcrete };
    std::array<std::string_view, 4> text;  // by Field
    std::array<Field, 4> order{};          // the fields present, in the event's order
    std::uint8_t count = 0;
    // The field an args member name stands for (both readers), -1 for any other name.
    [[gnu::always_inline]] static int field_of(std::string_view key) {
        return is(key, "Input Dims") || is(key, "Input dims") ? kDims
               : is(key, "Input Strides")                     ? kStrides
               : is(key, "Input type")                        ? kTypes
               : is(key, "Concrete Inputs")                   ? kConcrete
                                                              : -1;
    }
    bool operator==(const ShapeTexts& other) const { return text == other.text; }
    std::uint64_t hash() const {
        std::uint64_t h = 0x6A09E667F3BCC909ULL;
        for (std::string_view t : text)
            h = std::rotl(h * 0x9E3779B97F4A7C15ULL, 23) ^ hash_text(t) ^ t.size();
        return h;
    }
};

// A batch's op_shapes entry and the texts it was read from.
struct CachedShapes {
    ShapeTexts texts;
    std::uint32_t index;
};

// What one event says about itself, member by member, in either reader.
struct EventFields {
    std::string_view ph, cat, name;
    bool has_cat = false;
    std::uint8_t known_cat = 0;
    Category category = Category::Missing;
    Category record_category = Category::Missing;  // the kind of the record made for this event
    std::int64_t pid = 0, tid = 0, ts = 0, dur = -1;
    bool pid_label = false, tid_label = false;
    bool has_ts = false, has_name = false;
    std::size_t index = kNoIndex;  // the record made for this event

    [[gnu::always_inline]] void set_cat(std::string_view text) {
        cat = text;
        has_cat = true;
        known_cat = known_category(cat);
        category = categorize(cat, known_cat);
    }
    // An "X" event of a kind the model has records for (others are only counted).
    bool recorded() const {
        return is(ph, "X") && category != Category::Missing && category != Category::Other &&
               category != Category::PythonFunction;
    }
    // Why a recorded event cannot be kept; nullptr when it can.
    const char* missing() const {
        if (!has_name) return "missing \"name\"";
        if (!has_ts) return "missing \"ts\"";
        if (dur < 0) return "missing or negative \"dur\"";
        return nullptr;
    }
};

class EventParser {
  public:
    // Events parsed from now on go to `out`.
    void set_output(Batch& out) {
        out_ = &out;
        shape_cache_.clear();
    }

    // Returns an empty optional on success, else why the event was skipped. Reads nothing past
    // json + length.
    std::optional<Malformed> event(const char* json, std::size_t length, std::uint64_t offset);

  private:
    // The whole event read straight from its text when it is strict, plain JSON and well formed
    // (nearly all events): true once it is added to the batch. Otherwise false with nothing
    // changed, and event() reads it through simdjson, which then decides what it is.
    bool event_raw(const char* json, std::size_t length, std::uint64_t offset);
    // The simdjson reader (event_parser_ondemand.cpp): every event event_raw() hands back.
    std::optional<Malformed> event_ondemand(const char* json, std::size_t length,
                                            std::size_t capacity, std::uint64_t offset);
    bool parse_args_raw(const char*& p, const char* end, Category category, std::size_t index);
    std::optional<Malformed> parse_args(od::object args, Category category, std::size_t index);
    // Makes the typed record for an "X" event once its category and phase are known (nothing for
    // kinds without one), so that "args" can be read in the same pass in the usual member order.
    [[gnu::always_inline]] void ensure_record(EventFields& e, std::uint64_t offset) {
        if (e.index != kNoIndex || !is(e.ph, "X")) return;
        e.index = make_record(e.category, offset);
        if (e.index != kNoIndex) e.record_category = e.category;
    }
    std::size_t make_record(Category category, std::uint64_t offset);
    // Takes back the record ensure_record() made (and the op_shapes entry the event made).
    void discard_record(EventFields& e) {
        if (e.index == kNoIndex) return;
        drop_record(e.record_category);
        e.index = kNoIndex;
    }
    void drop_record(Category record_category);
    void fill_record(const EventFields& e, NameId name);
    // Where the integer arg `key` of a `category` record goes: one table for both readers.
    struct IntSlot {
        std::int64_t* wide = nullptr;
        std::int32_t* narrow = nullptr;
        explicit operator bool() const { return wide != nullptr || narrow != nullptr; }
        void set(std::int64_t v) const {
            if (wide != nullptr)
                *wide = v;
            else
                *narrow = static_cast<std::int32_t>(v);
        }
    };
    IntSlot int_arg(Category category, std::size_t index, std::string_view key);
    OpShapes& shapes_of(CpuOp& op) {
        if (op.shapes == kNoIndex) {
            op.shapes = static_cast<std::uint32_t>(out_->op_shapes.size());
            out_->op_shapes.emplace_back();
            shapes_created_ = true;
        }
        return out_->op_shapes[op.shapes];
    }
    // Points `op` at the batch's entry for `texts`, reading it from them when it is new.
    bool resolve_shapes(CpuOp& op, const ShapeTexts& texts, const char* end);
    // Sets each input's type (or concrete value) from raw_texts_.
    void set_raw_texts(std::vector<OpArgument>& inputs, bool is_type) {
        if (inputs.empty()) inputs.reserve(raw_texts_.size());
        if (inputs.size() < raw_texts_.size()) inputs.resize(raw_texts_.size());
        for (std::size_t i = 0; i < raw_texts_.size(); ++i)
            (is_type ? inputs[i].type : inputs[i].concrete) = intern(raw_texts_[i], true);
    }
    // A complete event (recorded or not) in the batch's totals: events, by category, flows.
    [[gnu::always_inline]] void count_event(const EventFields& e) {
        ++out_->events_total;
        out_->tally.add(e.has_cat, e.cat, e.known_cat, e.ph);
        if (e.ph.size() == 1 && (e.ph[0] == 's' || e.ph[0] == 'f' || e.ph[0] == 't'))
            ++out_->flow_events;
    }
    // pid/tid: a number, a numeric string, "stream 7", or a label ("Traces", "Spans").
    std::int64_t id_from(od::value value, bool& label);
    // The id a pid/tid string stands for: its number ("7", "stream 7"), else a label with a
    // stable negative id, so that labels never collide with real thread ids.
    std::int64_t id_from_text(std::string_view text, bool in_input, bool& label);
    NameId intern(std::string_view text, bool in_input) {
        return out_->names.intern(in_input ? in_chunk(text) : text, !in_input);
    }
    // A view into ondemand_copy_ as the same bytes of the chunk it was copied from: interned text
    // of the input must stay readable until the batch is committed, and the copy is reused by the
    // next event.
    std::string_view in_chunk(std::string_view text) const {
        const char* copy = ondemand_copy_.data();
        if (copied_from_ == nullptr || text.data() < copy || text.data() >= copy + copied_length_)
            return text;
        return {copied_from_ + (text.data() - copy), text.size()};
    }
    // Appends raw_dims_ (one entry per input) like for_each_input() with read_dims() would.
    void add_raw_dims(std::vector<OpArgument>& inputs, bool strides) {
        const std::size_t n = raw_dims_.ends.size() / 2;
        if (inputs.empty()) inputs.reserve(n);
        if (inputs.size() < n) inputs.resize(n);
        std::uint32_t values = 0, ranks = 0;
        for (std::size_t i = 0; i < n; ++i) {
            OpArgument& arg = inputs[i];
            const std::uint32_t values_end = raw_dims_.ends[2 * i];
            const std::uint32_t ranks_end = raw_dims_.ends[2 * i + 1];
            const auto* v = raw_dims_.values.data();
            if (strides) {
                arg.has_strides = true;
                arg.strides.insert(arg.strides.end(), v + values, v + values_end);
            } else {
                arg.dims.insert(arg.dims.end(), v + values, v + values_end);
                const auto* r = raw_dims_.ranks.data();
                arg.list_ranks.insert(arg.list_ranks.end(), r + ranks, r + ranks_end);
            }
            values = values_end;
            ranks = ranks_end;
        }
    }
    Batch* out_ = nullptr;
    const char* doc_end_ = nullptr;            // end of the current event's text
    std::string ondemand_copy_;                // the event, padded, for event_ondemand()
    const char* copied_from_ = nullptr;        // where ondemand_copy_ was copied from
    std::size_t copied_length_ = 0;
    RawDims raw_dims_;                         // scratch for the raw-text list readers
    std::vector<std::string_view> raw_texts_;  // (kept to reuse their memory)
    // The current event made its own op_shapes entry (dropping the event drops it).
    bool shapes_created_ = false;
    // This batch's entries by the texts they were read from; an entry joins only once its event
    // has been accepted (pending_shapes_).
    std::unordered_map<std::uint64_t, CachedShapes> shape_cache_;
    std::optional<std::pair<std::uint64_t, CachedShapes>> pending_shapes_;
    od::parser parser_;
    od::parser args_parser_;
};

}  // namespace replay::kineto
