// Raw-text readers for the record_shapes lists ("Input Dims", "Input Strides", "Input type",
// "Concrete Inputs"), most of a cpu_op event's bytes. Plain JSON (unsigned integers of up to 15
// digits, strings without escapes) is read straight from the text instead of element by element
// through the on-demand iterator; anything else returns false before touching the model, and the
// caller takes the simdjson path, which sees the value untouched and reports exactly what it
// always did. The event's text is padded, so reading 16 bytes past `end` is safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace replay::kineto {

// One element of "Input Dims"/"Input Strides" per input: a list of integers and of nested
// integer lists (a TensorList), flattened as read_dims() does.
struct RawDims {
    std::vector<std::int64_t> values;
    std::vector<std::uint8_t> ranks;
    std::vector<std::uint32_t> ends;  // per input: end of its values, then of its ranks
};

// `stop` (if given) receives the end of the list, just past its ']'.
bool read_dims_lists_raw(const char* p, const char* end, RawDims& out, const char** stop = nullptr);

// A list of plain strings, as views into the text (what get_text() gives for them). `stop` (if
// given) receives the end of the list, just past its ']'.
bool read_text_list_raw(const char* p, const char* end, std::vector<std::string_view>& out,
                        const char** stop = nullptr);

// Elements of the JSON array whose '[' is at p, counted on the raw text up to `end`; 0 when
// unsure. Only a capacity hint: it never changes what is parsed.
std::size_t count_elements_raw(const char* p, const char* end);

}  // namespace replay::kineto
