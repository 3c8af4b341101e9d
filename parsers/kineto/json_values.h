// Readers of single values through simdjson's on-demand API, for the events (and parts of
// events) that the raw scanner hands back: member names, strings, integers and dims lists, each
// read in place from the padded text where it is plain and through simdjson otherwise.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "kineto/scanner.h"
#include "kineto/shape_lists.h"
#include "replay/trace_model.h"

namespace replay::kineto {

namespace od = simdjson::ondemand;

// A member name. Names without escapes (all of them in practice) are used in place; others are
// unescaped by simdjson, which then consumes the key.
inline bool field_key(od::field& field, std::string_view& key) {
    const char* raw = field.key().raw();  // just past the opening quote
    const std::size_t n = quote_or_backslash(raw);
    if (raw[n] == '"') {
        key = std::string_view(raw, n);
        return true;
    }
    return !field.unescaped_key().get(key);
}

// value.get_string(), out of line: the rare string with escapes.
bool get_unescaped(od::value& value, std::string_view& out);

// A string value, like value.get_string(): in place when it has no escapes (`in_input` is then
// true and the view lives as long as the input), else unescaped into the parser's buffer.
inline bool get_text(od::value& value, std::string_view& out, bool& in_input) {
    const char* token = value.raw_json_token().data();
    if (*token == '"') {
        const std::size_t n = quote_or_backslash(token + 1);
        if (token[1 + n] == '"') {
            out = std::string_view(token + 1, n);
            in_input = true;
            return true;
        }
    }
    in_input = false;
    return get_unescaped(value, out);
}
inline bool get_text(od::value& value, std::string_view& out) {
    bool in_input;
    return get_text(value, out, in_input);
}

// Integers may be written as floats ("device": 0.0) or exceed int64 (ids above 2^63 keep their
// bits).
std::optional<std::int64_t> as_int_slow(od::value value);

// The common case, a plain integer of up to 16 digits (no sign: "-0" and the like are left to
// simdjson), read straight from the token; anything else goes through simdjson as before.
// Values come from documents in our padded chunks, so reading 16 bytes from a token is safe.
inline std::optional<std::int64_t> as_int(od::value value) {
    const std::string_view token = value.raw_json_token();
    const char* p = token.data();
    const std::size_t n = token.size();
    const std::size_t digits = std::min(leading_digits(p), n);
    if (digits > 0 && (p[0] != '0' || digits == 1)) {
        std::size_t j = digits;
        while (j < n && is_json_space(p[j])) ++j;
        if (j == n) {
            return static_cast<std::int64_t>(parse_digits16(p, digits));
        }
    }
    return as_int_slow(value);
}

// A list of integers and of nested integer lists (a TensorList: one nested list per tensor),
// flattened into `dims`, with each nested list's length in `ranks`.
bool read_dims(od::value value, std::vector<std::int64_t>& dims, std::vector<std::uint8_t>& ranks);

// Applies one list-valued record_shapes key to the per-input arguments. `end` bounds the event's
// text (for sizing `inputs` once instead of growing it element by element).
template <typename Fn>
bool for_each_input(od::value value, std::vector<OpArgument>& inputs, const char* end, Fn&& fn) {
    if (inputs.empty()) inputs.reserve(count_elements_raw(value.raw_json_token().data(), end));
    od::array array;
    if (value.get_array().get(array)) return false;
    std::size_t i = 0;
    for (auto element : array) {
        od::value v;
        if (element.get(v)) return false;
        if (inputs.size() <= i) inputs.resize(i + 1);
        if (!fn(v, inputs[i])) return false;
        ++i;
    }
    return true;
}

}  // namespace replay::kineto
