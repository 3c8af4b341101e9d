// Raw-text scanner for strict, plain JSON inside the parser's padded chunks: the per-byte and
// per-token helpers (fast literal compares, digit runs, strings, separators, numbers, skipping)
// that the event reader runs for every member. They stay inline in this header: out of line, gcc's
// calls to them cost ~10% more instructions per parse. Each accepts only what simdjson reads the
// same way and answers false for anything else, for the simdjson path to deal with.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace replay::kineto {

// `text == literal`, with the length compared first, then a few word compares.
template <std::size_t N>
[[gnu::always_inline]] inline bool is(std::string_view text, const char (&literal)[N]) {
    constexpr std::size_t n = N - 1;
    if (text.size() != n) return false;
    // Two or more words, the last one overlapping (gcc would call memcmp for most lengths).
    const auto same = [&]<typename Word>(Word) {
        const auto word = [](const char* at) {
            Word w;
            std::memcpy(&w, at, sizeof w);
            return w;
        };
        for (std::size_t i = 0; i + sizeof(Word) < n; i += sizeof(Word))
            if (word(text.data() + i) != word(literal + i)) return false;
        return word(text.data() + n - sizeof(Word)) == word(literal + n - sizeof(Word));
    };
    if constexpr (n == 0)
        return true;
    else if constexpr (n == 1)
        return text[0] == literal[0];
    else if constexpr (n < 4)
        return same(std::uint16_t{});
    else if constexpr (n < 8)
        return same(std::uint32_t{});
    else
        return same(std::uint64_t{});
}

// Index of the first '"' or '\\' at or after p; there is one before the end of the buffer, and
// the buffer is readable 16 bytes past it (our chunks are padded).
inline std::size_t quote_or_backslash(const char* p) {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
    for (std::size_t at = 0;; at += 16) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + at));
        const unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(
            _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash))));
        if (mask != 0) return at + static_cast<std::size_t>(__builtin_ctz(mask));
    }
#else
    std::size_t n = 0;
    while (p[n] != '"' && p[n] != '\\') ++n;
    return n;
#endif
}

[[gnu::always_inline]] inline bool is_json_space(char c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

// Up to 8 ASCII digits at p (little-endian load; bytes past `n` are shifted out) as a number.
[[gnu::always_inline]] inline std::uint64_t parse_digits_swar(const char* p,
                                                              std::size_t n) {  // 1 <= n <= 8
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    v -= 0x3030303030303030ULL;  // the digits (bytes below n) never borrow
    v <<= 8 * (8 - n);           // leading zero digits instead of the bytes after the number
    v = (v * 10) + (v >> 8);
    return (((v & 0x000000FF000000FFULL) * (100 + (1000000ULL << 32))) +
            (((v >> 16) & 0x000000FF000000FFULL) * (1 + (10000ULL << 32)))) >>
           32;
}

// Up to 16 ASCII digits at p as a number (1 <= n <= 16; 8 bytes past p + n - 8 are read).
[[gnu::always_inline]] inline std::uint64_t parse_digits16(const char* p, std::size_t n) {
    return n <= 8 ? parse_digits_swar(p, n)
                  : parse_digits_swar(p, n - 8) * 100000000ULL + parse_digits_swar(p + n - 8, 8);
}

// Number of leading ASCII digits in p[0, 16).
inline std::size_t leading_digits(const char* p) {
#if defined(__SSE2__)
    const __m128i v =
        _mm_sub_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), _mm_set1_epi8('0'));
    const __m128i digit = _mm_cmpeq_epi8(_mm_subs_epu8(v, _mm_set1_epi8(9)), _mm_setzero_si128());
    return static_cast<std::size_t>(
        __builtin_ctz(~static_cast<unsigned>(_mm_movemask_epi8(digit))));
#else
    std::size_t n = 0;
    while (n < 16 && p[n] >= '0' && p[n] <= '9') ++n;
    return n;
#endif
}

// micros_to_nanos for a token inside one of our padded chunks (16 bytes past it are readable):
// the usual "123", "123.456", "-1.5" forms with SIMD digit runs, all else through micros_to_nanos.
// Both give the same answer for every input.
bool micros_to_nanos_padded(std::string_view text, std::int64_t& out);

// The text readers below work on an event's text, which is padded: reading 16 bytes past `end` is
// safe.
inline const char* skip_space(const char* p, const char* end) {
    // The text is padded, so *p is readable even at `end`: the usual case (no blank at all) is
    // settled by one compare, as no blank is above ' '.
    if (static_cast<unsigned char>(*p) > ' ') return p;
    // Then the one space after ':' and ',' of the usual single-line events.
    if (p < end && *p == ' ' && static_cast<unsigned char>(p[1]) > ' ') return p + 1;
    while (p < end && is_json_space(*p)) ++p;
    return p;
}

// The first bytes of `text` as one little-endian word (at compile time: built at run time, the
// pattern would go through memory and stall the load that compares it).
template <std::size_t N>
consteval std::uint64_t text_word(const char (&text)[N]) {
    static_assert(N - 1 <= 8);
    std::uint64_t word = 0;
    for (std::size_t i = 0; i + 1 < N; ++i)
        word |= static_cast<std::uint64_t>(static_cast<unsigned char>(text[i])) << (8 * i);
    return word;
}

// p[0..2] as the low bytes of a word (p[3] is readable: the text is padded).
inline std::uint64_t three_bytes(const char* p) {
    std::uint32_t word;
    std::memcpy(&word, p, 4);
    return word & 0xFFFFFFu;
}

// Past the ':' after a member name and the blanks around it; false at the end of the text. The
// usual ": " takes one test.
[[gnu::always_inline]] inline bool raw_colon(const char*& p, const char* end) {
    if (p + 2 < end && (three_bytes(p) & 0xFFFF) == text_word(": ") &&
        static_cast<unsigned char>(p[2]) > ' ') {
        p += 2;
        return true;
    }
    p = skip_space(p, end);
    if (p >= end || *p != ':') return false;
    p = skip_space(p + 1, end);
    return p < end;
}

// After a member's (or element's) value: on the next one (Member), on the `close` that ends the
// object or array (Close), or neither (Bad). The usual ", \"" takes one test.
enum class AfterValue { Member, Close, Bad };
[[gnu::always_inline]] inline AfterValue raw_after_value(const char*& p, const char* end,
                                                         char close = '}') {
    if (p + 2 < end && three_bytes(p) == text_word(", \"")) {
        p += 2;
        return AfterValue::Member;
    }
    p = skip_space(p, end);
    if (p >= end) return AfterValue::Bad;
    if (*p == close) return AfterValue::Close;
    if (*p != ',') return AfterValue::Bad;
    p = skip_space(p + 1, end);
    return AfterValue::Member;
}

// An unsigned integer that as_int() reads the same way: no sign, no leading zero, no fraction.
inline bool raw_uint(const char*& p, const char* end, std::int64_t& out) {
    const std::size_t digits = leading_digits(p);
    if (digits == 0 || digits > 15 || p + digits >= end || (p[0] == '0' && digits > 1))
        return false;
    const char next = p[digits];
    if (next != ',' && next != ']' && !is_json_space(next)) return false;
    out = static_cast<std::int64_t>(parse_digits16(p, digits));
    p += digits;
    return true;
}

// After a list element: true with p on the next element after ',' or on the closing ']'.
inline bool raw_separator(const char*& p, const char* end) {
    p = skip_space(p, end);
    if (p >= end) return false;
    if (*p == ',') {
        p = skip_space(p + 1, end);
        return p < end && *p != ']';
    }
    return *p == ']';
}

// Index of the first '"', '\\', control character or non-ASCII byte at or after p; there is a
// '"' before the end of the buffer, which is readable 16 bytes past it.
[[gnu::always_inline]] inline std::size_t plain_string_stop(const char* p) {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20);
    for (std::size_t at = 0;; at += 16) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + at));
        // A signed compare: bytes from 0x80 up count as negative, so below ' ' as well.
        const unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(
            _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                         _mm_cmplt_epi8(v, space))));
        if (mask != 0) return at + static_cast<std::size_t>(__builtin_ctz(mask));
    }
#else
    std::size_t n = 0;
    while (p[n] != '"' && p[n] != '\\' && static_cast<unsigned char>(p[n]) >= 0x20 &&
           static_cast<unsigned char>(p[n]) < 0x80)
        ++n;
    return n;
#endif
}

// A string at p (its opening quote) that is plain ASCII without escapes or control characters:
// its text in place, with p moved past the closing quote. Such a string means the same to every
// JSON reader, simdjson included; any other string is left to simdjson.
[[gnu::always_inline]] inline bool raw_plain_string(const char*& p, const char* end,
                                                    std::string_view& out) {
    if (p >= end || *p != '"') return false;
    const std::size_t n = plain_string_stop(p + 1);
    if (p + 1 + n >= end || p[1 + n] != '"') return false;
    out = std::string_view(p + 1, n);
    p += n + 2;
    return true;
}

// Just past the ']' that closes the array at p, found from its brackets alone (16 bytes a step;
// strings are stepped over whole): how a shape text already read once is passed over. Nothing in
// between is checked, so only a text that is then read in full, or that is byte for byte one
// read before, may be taken from it. nullptr for anything unusual (an object, an escape, a
// control or non-ASCII byte in a string, no end before `end`): raw_skip() deals with those.
inline const char* array_end(const char* p, const char* end) {
    if (p >= end || *p != '[') return nullptr;
#if defined(__SSE2__)
    const __m128i open = _mm_set1_epi8('['), close = _mm_set1_epi8(']');
    const __m128i quote = _mm_set1_epi8('"'), brace = _mm_set1_epi8('{');
    int depth = 0;
    const char* block = p;
    while (block < end) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block));
        unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(
            _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, open), _mm_cmpeq_epi8(v, close)),
                         _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, brace)))));
        const char* next = block + 16;
        while (mask != 0) {
            const char* c = block + __builtin_ctz(mask);
            mask &= mask - 1;
            if (c >= end) return nullptr;
            if (*c == '[') {
                ++depth;
            } else if (*c == ']') {
                if (--depth == 0) return c + 1;
            } else if (*c == '"') {
                const std::size_t n = plain_string_stop(c + 1);
                if (c + 1 + n >= end || c[1 + n] != '"') return nullptr;
                next = c + n + 2;  // go on after the string, with a fresh load
                break;
            } else {
                return nullptr;
            }
        }
        block = next;
    }
    return nullptr;
#else
    (void)end;
    return nullptr;
#endif
}

inline bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

// What may follow a number: one table lookup (gcc kept the chain of compares out of line, and
// it ran after every number read).
[[gnu::always_inline]] inline bool is_delimiter(char c) {
    static constexpr auto kDelimiter = [] {
        std::array<bool, 256> table{};
        for (const unsigned char d : {',', '}', ']', ' ', '\n', '\r', '\t'}) table[d] = true;
        return table;
    }();
    return kDelimiter[static_cast<unsigned char>(c)];
}

// Past the digits at q, but not past `end` (16 at a time: the text is padded).
inline const char* skip_digits(const char* q, const char* end) {
    std::size_t n;
    do {
        n = leading_digits(q);
        q += n;
    } while (n == 16 && q < end);
    return std::min(q, end);
}

// A JSON number at p, as a token (without the blanks after it); p moves past it.
inline bool raw_number(const char*& p, const char* end, std::string_view& out) {
    const char* q = p;
    if (q < end && *q == '-') ++q;
    if (q >= end) return false;
    if (*q == '0') {
        ++q;
    } else if (*q >= '1' && *q <= '9') {
        q = skip_digits(q, end);
    } else {
        return false;
    }
    if (q < end && *q == '.') {
        const char* digits = ++q;
        q = skip_digits(q, end);
        if (q == digits) return false;
    }
    if (q < end && (*q == 'e' || *q == 'E')) {
        ++q;
        if (q < end && (*q == '+' || *q == '-')) ++q;
        const char* digits = q;
        while (q < end && is_digit(*q)) ++q;
        if (q == digits) return false;
    }
    if (q >= end || !is_delimiter(*q)) return false;
    out = std::string_view(p, static_cast<std::size_t>(q - p));
    p = q;
    return true;
}

// An integer that as_int() reads on its fast path (up to 16 digits, no sign, fraction or
// exponent), with the same value. p must be below `end`, which is readable 16 bytes past it.
[[gnu::always_inline]] inline bool raw_int(const char*& p, const char* end, std::int64_t& out) {
    const std::size_t n = leading_digits(p);
    // With 16 digits, p[16] being a delimiter also rules out a 17th digit.
    if (n == 0 || (p[0] == '0' && n > 1) || p + n >= end || !is_delimiter(p[n])) return false;
    out = static_cast<std::int64_t>(parse_digits16(p, n));
    p += n;
    return true;
}

// micros_to_nanos_padded() of the number at p (ts, dur); p moves past it.
[[gnu::always_inline]] inline bool raw_micros(const char*& p, const char* end, std::int64_t& out) {
    // The usual "123.456", on micros_to_nanos_padded()'s fast path and computed the same way.
    // With 16 digits before the point, the delimiter check below rules out a 17th.
    const char* q = p + (*p == '-');
    const std::size_t whole_digits = leading_digits(q);
    if (whole_digits > 0 && (q[0] != '0' || whole_digits == 1)) {
        auto whole = static_cast<std::int64_t>(parse_digits16(q, whole_digits));
        // micros_to_nanos_padded()'s overflow check.
        constexpr std::int64_t kMaxPrefix =
            (std::numeric_limits<std::int64_t>::max() - 9) / 10 / 1000;
        bool plain = whole_digits < 16 || whole / 10 <= kMaxPrefix;
        q += whole_digits;
        std::int64_t frac = 0;
        if (*q == '.') {
            const std::size_t f = leading_digits(q + 1);
            plain = plain && f > 0 && f < 16;
            const char* d = q + 1;
            frac = (d[0] - '0') * 100 + (f > 1 ? (d[1] - '0') * 10 : 0) + (f > 2 ? d[2] - '0' : 0);
            if (f > 3 && d[3] >= '5') ++frac;
            q += 1 + f;
        }
        if (plain && q < end && is_delimiter(*q)) {
            out = whole * 1000 + frac;
            if (*p == '-') out = -out;
            p = q;
            return true;
        }
    }
    std::string_view token;
    return raw_number(p, end, token) && micros_to_nanos_padded(token, out);
}

// Skips any JSON value (strict, plain strings only, nesting bounded well below simdjson's limit).
bool raw_skip(const char*& p, const char* end, int depth = 0);

// raw_skip() with the usual values (a number, a plain string) passed over inline.
[[gnu::always_inline]] inline bool raw_skip_value(const char*& p, const char* end) {
    if (is_digit(*p) || *p == '-') {
        std::string_view token;
        return raw_number(p, end, token);
    }
    if (*p == '"') {
        std::string_view text;
        return raw_plain_string(p, end, text);
    }
    return raw_skip(p, end);
}

inline std::uint64_t load_bytes(const char* p, std::size_t n) {  // n <= 8
    std::uint64_t v = 0;
    std::memcpy(&v, p, n);
    return v;
}

// A fast hash of the whole text, 16 bytes per step on two independent lanes.
inline std::uint64_t hash_text(std::string_view s) {
    const char* p = s.data();
    const std::size_t n = s.size();
    std::uint64_t a = 0x9E3779B97F4A7C15ULL ^ n, b = 0xC2B2AE3D27D4EB4FULL;
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a = std::rotl((a ^ load_bytes(p + i, 8)) * 0x9FB21C651E98DF25ULL, 29);
        b = std::rotl((b ^ load_bytes(p + i + 8, 8)) * 0xBF58476D1CE4E5B9ULL, 31);
    }
    if (i + 8 <= n) {
        a = std::rotl((a ^ load_bytes(p + i, 8)) * 0x9FB21C651E98DF25ULL, 29);
        i += 8;
    }
    // (An empty view may have no data at all: nothing is loaded from it.)
    b = std::rotl((b ^ (i < n ? load_bytes(p + i, n - i) : 0)) * 0xBF58476D1CE4E5B9ULL, 31);
    std::uint64_t h = a ^ (b * 0x94D049BB133111EBULL);
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 32;
    return h;
}

}  // namespace replay::kineto
