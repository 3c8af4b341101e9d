// The record_shapes list readers of shape_lists.h.
#include "kineto/shape_lists.h"

#include "kineto/scanner.h"

namespace replay::kineto {

namespace {

// Opens the list at p: false when there is none; else true, with p on its first element, or with
// `empty` set (and `stop` past the ']') for "[]".
bool open_list(const char*& p, const char* end, const char** stop, bool& empty) {
    if (p >= end || *p != '[') return false;
    p = skip_space(p + 1, end);
    empty = p < end && *p == ']';
    if (empty && stop) *stop = p + 1;
    return true;
}

}  // namespace

bool read_dims_lists_raw(const char* p, const char* end, RawDims& out, const char** stop) {
    out.values.clear();
    out.ranks.clear();
    out.ends.clear();
    bool empty = false;
    if (!open_list(p, end, stop, empty)) return false;
    if (empty) return true;
    while (true) {
        if (p >= end || *p != '[') return false;
        p = skip_space(p + 1, end);
        if (p >= end) return false;
        if (*p != ']') {
            while (true) {
                std::int64_t v;
                if (*p == '[') {
                    p = skip_space(p + 1, end);
                    if (p >= end) return false;
                    std::uint8_t rank = 0;  // wraps like read_dims's
                    if (*p != ']') {
                        do {
                            if (!raw_uint(p, end, v)) return false;
                            out.values.push_back(v);
                            ++rank;
                            if (!raw_separator(p, end)) return false;
                        } while (*p != ']');
                    }
                    ++p;
                    out.ranks.push_back(rank);
                } else {
                    if (!raw_uint(p, end, v)) return false;
                    out.values.push_back(v);
                }
                if (!raw_separator(p, end)) return false;
                if (*p == ']') break;
            }
        }
        ++p;
        out.ends.push_back(static_cast<std::uint32_t>(out.values.size()));
        out.ends.push_back(static_cast<std::uint32_t>(out.ranks.size()));
        if (!raw_separator(p, end)) return false;
        if (*p == ']') {
            if (stop) *stop = p + 1;
            return true;
        }
    }
}

bool read_text_list_raw(const char* p, const char* end, std::vector<std::string_view>& out,
                        const char** stop) {
    out.clear();
    bool empty = false;
    if (!open_list(p, end, stop, empty)) return false;
    if (empty) return true;
    while (true) {
        std::string_view text;
        if (!raw_plain_string(p, end, text)) return false;
        out.push_back(text);
        if (!raw_separator(p, end)) return false;
        if (*p == ']') {
            if (stop) *stop = p + 1;
            return true;
        }
    }
}

std::size_t count_elements_raw(const char* p, const char* end) {
    if (p >= end || *p != '[') return 0;
    int depth = 0;
    std::size_t commas = 0;
    bool any = false;
    for (const char* q = p; q < end; ++q) {
        const char c = *q;
        if (c == '"') {
            for (++q; q < end && *q != '"'; ++q)
                if (*q == '\\') ++q;
            if (q >= end) return 0;
            any |= depth == 1;
        } else if (c == '[' || c == '{') {
            any |= depth == 1;
            ++depth;
        } else if (c == ']' || c == '}') {
            if (--depth == 0) return any ? commas + 1 : 0;
        } else if (depth == 1) {
            if (c == ',')
                ++commas;
            else if (!is_json_space(c))
                any = true;
        }
    }
    return 0;
}

}  // namespace replay::kineto
