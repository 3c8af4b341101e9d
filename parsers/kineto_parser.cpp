#include "replay/kineto_parser.h"

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#if defined(__linux__)
#include <sched.h>
#endif

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "replay/event_splitter.h"

namespace replay {
namespace {

namespace od = simdjson::ondemand;

enum class Category : std::uint8_t {
    Kernel,
    Memcpy,
    Memset,
    CpuOp,
    Annotation,
    PythonFunction,
    Runtime,
    Driver,
    Sync,
    Other,
    Missing
};

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

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
        if (x != y) return false;
    }
    return true;
}

// The "cat" spellings Kineto writes, matched exactly (index + 1 is the spelling's number).
struct KnownCategory {
    std::string_view text;
    Category category;
};
constexpr std::array<KnownCategory, 16> kKnownCategories{{
    {"kernel", Category::Kernel},
    {"Kernel", Category::Kernel},
    {"cpu_op", Category::CpuOp},
    {"Operator", Category::CpuOp},
    {"cuda_runtime", Category::Runtime},
    {"Runtime", Category::Runtime},
    {"gpu_memcpy", Category::Memcpy},
    {"Memcpy", Category::Memcpy},
    {"gpu_memset", Category::Memset},
    {"Memset", Category::Memset},
    {"python_function", Category::PythonFunction},
    {"user_annotation", Category::Annotation},
    {"cuda_driver", Category::Driver},
    {"ac2g", Category::Other},
    {"async", Category::Other},
    {"async_cpu_to_gpu", Category::Other},
}};

// A known spelling's number, checked against the table when compiling.
template <std::size_t N>
consteval std::uint8_t spelling_number(const char (&text)[N]) {
    for (std::size_t i = 0; i < kKnownCategories.size(); ++i)
        if (kKnownCategories[i].text == std::string_view(text, N - 1))
            return static_cast<std::uint8_t>(i + 1);
    throw "not in kKnownCategories";
}

// The number of a known spelling (1..kKnownCategories.size()), 0 for any other text.
inline std::uint8_t known_category(std::string_view cat) {
    switch (cat.size()) {
        case 4:
            return is(cat, "ac2g") ? spelling_number("ac2g") : 0;
        case 5:
            return is(cat, "async") ? spelling_number("async") : 0;
        case 6:
            return is(cat, "kernel")   ? spelling_number("kernel")
                   : is(cat, "Kernel") ? spelling_number("Kernel")
                   : is(cat, "cpu_op") ? spelling_number("cpu_op")
                   : is(cat, "Memcpy") ? spelling_number("Memcpy")
                   : is(cat, "Memset") ? spelling_number("Memset")
                                       : 0;
        case 7:
            return is(cat, "Runtime") ? spelling_number("Runtime") : 0;
        case 8:
            return is(cat, "Operator") ? spelling_number("Operator") : 0;
        case 10:
            return is(cat, "gpu_memcpy")   ? spelling_number("gpu_memcpy")
                   : is(cat, "gpu_memset") ? spelling_number("gpu_memset")
                                           : 0;
        case 11:
            return is(cat, "cuda_driver") ? spelling_number("cuda_driver") : 0;
        case 12:
            return is(cat, "cuda_runtime") ? spelling_number("cuda_runtime") : 0;
        case 15:
            return is(cat, "python_function")   ? spelling_number("python_function")
                   : is(cat, "user_annotation") ? spelling_number("user_annotation")
                                                : 0;
        case 16:
            return is(cat, "async_cpu_to_gpu") ? spelling_number("async_cpu_to_gpu") : 0;
        default:
            return 0;
    }
}

Category categorize(std::string_view cat, std::uint8_t known) {
    if (known != 0) return kKnownCategories[known - 1].category;
    if (iequals(cat, "kernel")) return Category::Kernel;
    if (iequals(cat, "cpu_op") || iequals(cat, "operator")) return Category::CpuOp;
    if (iequals(cat, "cuda_runtime") || iequals(cat, "runtime")) return Category::Runtime;
    if (iequals(cat, "gpu_memcpy") || iequals(cat, "memcpy")) return Category::Memcpy;
    if (iequals(cat, "gpu_memset") || iequals(cat, "memset")) return Category::Memset;
    if (iequals(cat, "cuda_driver")) return Category::Driver;
    if (iequals(cat, "user_annotation")) return Category::Annotation;
    if (iequals(cat, "python_function")) return Category::PythonFunction;
    if (iequals(cat, "cuda_sync")) return Category::Sync;
    return Category::Other;
}

// A malformed event: why, and where inside the event.
struct Malformed {
    std::string reason;
};

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

[[gnu::noinline]] bool get_unescaped(od::value& value, std::string_view& out) {
    return !value.get_string().get(out);
}

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
[[gnu::noinline]] std::optional<std::int64_t> as_int_slow(od::value value) {
    od::number_type type;
    if (value.get_number_type().get(type)) return std::nullopt;
    switch (type) {
        case od::number_type::signed_integer: {
            std::int64_t v;
            if (!value.get_int64().get(v)) return v;
            return std::nullopt;
        }
        case od::number_type::unsigned_integer: {
            std::uint64_t v;
            if (!value.get_uint64().get(v)) return static_cast<std::int64_t>(v);
            return std::nullopt;
        }
        default: {
            // A float outside int64's range is not an id (casting it would be undefined).
            double v;
            if (!value.get_double().get(v) && std::isfinite(v) && v >= -9223372036854775808.0 &&
                v < 9223372036854775808.0)
                return static_cast<std::int64_t>(v);
            return std::nullopt;
        }
    }
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

// micros_to_nanos for a token inside one of our padded chunks (16 bytes past it are readable):
// the usual "123", "123.456", "-1.5" forms with SIMD digit runs, all else through micros_to_nanos.
// Both give the same answer for every input.
bool micros_to_nanos_padded(std::string_view text, std::int64_t& out) {
    const char* p = text.data();
    const std::size_t n = text.size();
    std::size_t i = (n > 0 && p[0] == '-') ? 1 : 0;
    const std::size_t whole_digits = leading_digits(p + i);
    if (whole_digits == 0 || i + whole_digits > n) return micros_to_nanos(text, out);
    if (whole_digits == 16 && p[i + 16] >= '0' && p[i + 16] <= '9')
        return micros_to_nanos(text, out);
    std::int64_t whole = static_cast<std::int64_t>(parse_digits16(p + i, whole_digits));
    // micros_to_nanos's overflow check: it gives up when the digits before the last one exceed
    // this.
    constexpr std::int64_t kMaxPrefix = (std::numeric_limits<std::int64_t>::max() - 9) / 10 / 1000;
    if (whole_digits == 16 && whole / 10 > kMaxPrefix) return micros_to_nanos(text, out);
    i += whole_digits;
    std::int64_t frac = 0;
    if (i < n && p[i] == '.') {
        const std::size_t f = leading_digits(p + i + 1);
        if (f == 0 || f >= 16 || i + 1 + f > n) return micros_to_nanos(text, out);
        const char* d = p + i + 1;
        frac = (d[0] - '0') * 100 + (f > 1 ? (d[1] - '0') * 10 : 0) + (f > 2 ? d[2] - '0' : 0);
        if (f > 3 && d[3] >= '5') ++frac;
        i += 1 + f;
    }
    while (i < n && is_json_space(p[i])) ++i;
    if (i != n) return micros_to_nanos(text, out);  // an exponent, or not a number
    out = whole * 1000 + frac;
    if (p[0] == '-') out = -out;
    return true;
}

bool read_dims(od::value value, std::vector<std::int64_t>& dims, std::vector<std::uint8_t>& ranks) {
    od::array array;
    if (value.get_array().get(array)) return false;
    for (auto element : array) {
        od::value v;
        if (element.get(v)) return false;
        od::json_type type;
        if (v.type().get(type)) return false;
        if (type == od::json_type::array) {  // TensorList: one nested list per tensor
            od::array inner;
            if (v.get_array().get(inner)) return false;
            std::uint8_t rank = 0;
            for (auto d : inner) {
                od::value dv;
                if (d.get(dv)) return false;
                auto n = as_int(dv);
                if (!n) return false;
                dims.push_back(*n);
                ++rank;
            }
            ranks.push_back(rank);
        } else {
            auto n = as_int(v);
            if (!n) return false;
            dims.push_back(*n);
        }
    }
    return true;
}

// Elements of the JSON array whose '[' is at p, counted on the raw text up to `end`; 0 when
// unsure. Only a capacity hint: it never changes what is parsed.
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

// Raw-text readers for the record_shapes lists, most of a cpu_op event's bytes. Plain JSON
// (unsigned integers of up to 15 digits, strings without escapes) is read straight from the text
// instead of element by element through the on-demand iterator; anything else returns false before
// touching the model, and the caller takes the simdjson path, which sees the value untouched and
// reports exactly what it always did. The event's text is padded, so reading 16 bytes past `end` is
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

// The members of an event that the parser reads.
enum class EventKey : std::uint8_t { Other, Ph, Cat, Name, Pid, Tid, Ts, Dur, Args };

inline EventKey event_key(std::string_view key) {
    switch (key.size()) {
        case 2:
            return is(key, "ph") ? EventKey::Ph : is(key, "ts") ? EventKey::Ts : EventKey::Other;
        case 3:
            return is(key, "cat")   ? EventKey::Cat
                   : is(key, "pid") ? EventKey::Pid
                   : is(key, "tid") ? EventKey::Tid
                   : is(key, "dur") ? EventKey::Dur
                                    : EventKey::Other;
        case 4:
            return is(key, "name")   ? EventKey::Name
                   : is(key, "args") ? EventKey::Args
                                     : EventKey::Other;
        default:
            return EventKey::Other;
    }
}

// An event member name written the usual way ("ph": with no blank before the ':'), recognised
// from one 8-byte load: p moves past the ':' and its blanks. Other for anything else, with p
// unchanged, for the general reader.
[[gnu::always_inline]] inline EventKey known_event_key(const char*& p, const char* end) {
    if (end - p < 9) return EventKey::Other;
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    // `pattern` is the name, its quotes and the ':' (length bytes); the usual single blank after
    // it is matched in the same compare.
    const auto match = [&](std::uint64_t pattern, std::size_t length, EventKey key)
        __attribute__((always_inline)) {
        const std::uint64_t with_blank = pattern | (std::uint64_t{' '} << (8 * length));
        const std::uint64_t mask = length + 1 == 8 ? ~0ULL : (1ULL << (8 * (length + 1))) - 1;
        if ((word & mask) == with_blank && static_cast<unsigned char>(p[length + 1]) > ' ') {
            p += length + 1;
            return key;
        }
        if ((word & (mask >> 8)) != pattern) return EventKey::Other;
        p = skip_space(p + length, end);
        return key;
    };
    switch (p[1]) {
        case 'p':
            return p[2] == 'h' ? match(text_word("\"ph\":"), 5, EventKey::Ph)
                               : match(text_word("\"pid\":"), 6, EventKey::Pid);
        case 't':
            return p[2] == 's' ? match(text_word("\"ts\":"), 5, EventKey::Ts)
                               : match(text_word("\"tid\":"), 6, EventKey::Tid);
        case 'c':
            return match(text_word("\"cat\":"), 6, EventKey::Cat);
        case 'd':
            return match(text_word("\"dur\":"), 6, EventKey::Dur);
        case 'n':
            return match(text_word("\"name\":"), 7, EventKey::Name);
        case 'a':
            return match(text_word("\"args\":"), 7, EventKey::Args);
        default:
            return EventKey::Other;
    }
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

// One element of "Input Dims"/"Input Strides" per input: a list of integers and of nested
// integer lists (a TensorList), flattened as read_dims() does.
struct RawDims {
    std::vector<std::int64_t> values;
    std::vector<std::uint8_t> ranks;
    std::vector<std::uint32_t> ends;  // per input: end of its values, then of its ranks
};

// `stop` (if given) receives the end of the list, just past its ']'.
bool read_dims_lists_raw(const char* p, const char* end, RawDims& out,
                         const char** stop = nullptr) {
    out.values.clear();
    out.ranks.clear();
    out.ends.clear();
    if (p >= end || *p != '[') return false;
    p = skip_space(p + 1, end);
    if (p < end && *p == ']') {
        if (stop) *stop = p + 1;
        return true;
    }
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

// A list of plain strings, as views into the text (what get_text() gives for them). `stop` (if
// given) receives the end of the list, just past its ']'.
bool read_text_list_raw(const char* p, const char* end, std::vector<std::string_view>& out,
                        const char** stop = nullptr) {
    out.clear();
    if (p >= end || *p != '[') return false;
    p = skip_space(p + 1, end);
    if (p < end && *p == ']') {
        if (stop) *stop = p + 1;
        return true;
    }
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

// Raw readers for a whole event (EventParser::event_raw): they accept only strict JSON, which
// simdjson reads the same way, and report anything else as false for simdjson to deal with.
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
bool raw_skip(const char*& p, const char* end, int depth = 0) {
    if (p >= end) return false;
    switch (*p) {
        case '"': {
            std::string_view text;
            return raw_plain_string(p, end, text);
        }
        case '{':
        case '[': {
            if (depth >= 64) return false;
            const char close = *p == '{' ? '}' : ']';
            p = skip_space(p + 1, end);
            if (p < end && *p == close) {
                ++p;
                return true;
            }
            while (true) {
                std::string_view key;
                if (close == '}' && (!raw_plain_string(p, end, key) || !raw_colon(p, end)))
                    return false;
                if (!raw_skip(p, end, depth + 1)) return false;
                const AfterValue next = raw_after_value(p, end, close);
                if (next == AfterValue::Bad) return false;
                if (next == AfterValue::Close) {
                    ++p;
                    return true;
                }
            }
        }
        case 't':
        case 'f':
        case 'n': {
            const std::string_view word = *p == 't' ? "true" : *p == 'f' ? "false" : "null";
            if (static_cast<std::size_t>(end - p) <= word.size() ||
                std::memcmp(p, word.data(), word.size()) != 0 || !is_delimiter(p[word.size()]))
                return false;
            p += word.size();
            return true;
        }
        default: {
            std::string_view token;
            return raw_number(p, end, token);
        }
    }
}

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

// The strings one batch of events interns, each once, in the order the events first intern them;
// committing interns them into the trace's pool in that order, so the pool's ids come out exactly
// as if the events had been parsed one after the other. Local id 0 is "" (StringPool::kEmpty).
class LocalNames {
  public:
    LocalNames() { reset(); }
    void reset() {
        views_.assign(1, std::string_view());
        arena_.clear();
        if (slots_.empty())
            slots_.assign(1024, 0);
        else
            std::fill(slots_.begin(), slots_.end(), 0);
    }
    // `text` must stay readable until the batch is committed unless `copy` is set.
    NameId intern(std::string_view text, bool copy) {
        if (text.empty()) return StringPool::kEmpty;
        const std::size_t mask = slots_.size() - 1;
        for (std::size_t slot = hash_text(text) & mask;; slot = (slot + 1) & mask) {
            const std::uint32_t at = slots_[slot];
            if (at == 0) {
                if (copy) text = arena_.emplace_back(text);
                slots_[slot] = static_cast<std::uint32_t>(views_.size());
                views_.push_back(text);
                if (views_.size() * 2 > slots_.size()) grow();
                return static_cast<NameId>(views_.size() - 1);
            }
            if (views_[at] == text) return at;
        }
    }
    std::size_t size() const { return views_.size(); }
    // Forgets the strings interned since size() was `mark` (they were added last, so removing
    // them leaves every other string's probe sequence intact). Only for strings not copied.
    void rollback(std::size_t mark) {
        const std::size_t mask = slots_.size() - 1;
        while (views_.size() > mark) {
            const auto id = static_cast<std::uint32_t>(views_.size() - 1);
            std::size_t slot = hash_text(views_.back()) & mask;
            while (slots_[slot] != id) slot = (slot + 1) & mask;
            slots_[slot] = 0;
            views_.pop_back();
        }
    }
    std::string_view view(std::size_t id) const { return views_[id]; }
    std::size_t bytes() const {
        return views_.capacity() * sizeof(std::string_view) + slots_.capacity() * 4;
    }

  private:
    void grow() {
        slots_.assign(slots_.size() * 2, 0);
        const std::size_t mask = slots_.size() - 1;
        for (std::uint32_t id = 1; id < views_.size(); ++id) {
            std::size_t slot = hash_text(views_[id]) & mask;
            while (slots_[slot] != 0) slot = (slot + 1) & mask;
            slots_[slot] = id;
        }
    }
    std::vector<std::string_view> views_;
    std::vector<std::uint32_t> slots_;  // id, 0 for empty; a power of two, at most half full
    std::deque<std::string> arena_;     // escaped strings (unescaped copies)
};

// Events per "cat/ph" (ParseStats::by_category) without building a string per event: a small
// open-addressing table of (cat, ph) pairs; turned into the map's keys when a batch is committed.
class Tally {
  public:
    Tally() { reset(); }
    void reset() {
        entries_.clear();
        slots_.fill(0);
        overflow_.clear();
        for (auto& counts : known_) counts.fill(0);
    }
    // `known`: known_category(cat). A known "cat" with a one-character ASCII "ph" (nearly every
    // event) is one counter; anything else goes through the table.
    void add(bool has_cat, std::string_view cat, std::uint8_t known, std::string_view ph) {
        if (has_cat && known != 0 && ph.size() == 1 && static_cast<unsigned char>(ph[0]) < 128) {
            ++known_[known - 1][static_cast<unsigned char>(ph[0])];
            return;
        }
        if (!has_cat) cat = std::string_view();
        std::size_t h = (cat.size() * 31 + ph.size() * 7 + has_cat) ^
                        (cat.empty() ? 0
                                     : static_cast<unsigned char>(cat[0]) * 131 +
                                           static_cast<unsigned char>(cat[cat.size() / 2]) * 17 +
                                           static_cast<unsigned char>(cat.back()) * 1031) ^
                        (ph.empty() ? 0 : static_cast<unsigned char>(ph[0]) * 8191);
        h ^= h >> 7;
        for (std::size_t probe = 0; probe < kSlots; ++probe) {
            std::uint16_t& slot = slots_[(h + probe) & (kSlots - 1)];
            if (slot == 0) {
                if (entries_.size() >= kMaxEntries) break;
                entries_.push_back(Entry{std::string(cat), std::string(ph), has_cat, 1});
                slot = static_cast<std::uint16_t>(entries_.size());
                return;
            }
            Entry& e = entries_[slot - 1];
            if (e.has_cat == has_cat && e.cat == cat && e.ph == ph) {
                ++e.count;
                return;
            }
        }
        ++overflow_[key(has_cat, cat, ph)];  // many distinct categories: the slow path
    }
    void merge_into(std::map<std::string, std::uint64_t>& out) const {
        for (std::size_t k = 0; k < known_.size(); ++k)
            for (std::size_t c = 0; c < known_[k].size(); ++c)
                if (known_[k][c] != 0)
                    out[key(true, kKnownCategories[k].text,
                            std::string(1, static_cast<char>(c)))] += known_[k][c];
        for (const Entry& e : entries_) out[key(e.has_cat, e.cat, e.ph)] += e.count;
        for (const auto& [k, n] : overflow_) out[k] += n;
    }

  private:
    static std::string key(bool has_cat, std::string_view cat, std::string_view ph) {
        std::string tally(has_cat ? cat : std::string_view("(none)"));
        tally += '/';
        tally += ph;
        return tally;
    }
    struct Entry {
        std::string cat, ph;
        bool has_cat;
        std::uint64_t count;
    };
    static constexpr std::size_t kSlots = 256;
    static constexpr std::size_t kMaxEntries = 128;
    std::vector<Entry> entries_;
    std::array<std::uint16_t, kSlots> slots_{};
    std::map<std::string, std::uint64_t> overflow_;
    std::array<std::array<std::uint64_t, 128>, kKnownCategories.size()> known_{};
};

// pid/tid (and an activity's stream taken from tid) given as a label: the value is
// -1 - (local name id) until the batch is committed.
constexpr std::uint8_t kPidLabel = 1;
constexpr std::uint8_t kTidLabel = 2;

// What a run of events adds to the trace, built without touching it (so that batches can be parsed
// on several threads) and then committed in input order.
struct Batch {
    std::vector<GpuActivity> activities;
    std::vector<CpuOp> cpu_ops;  // `shapes` indexes `op_shapes` below
    std::vector<RuntimeCall> runtime_calls;
    std::vector<OpShapes> op_shapes;
    std::vector<std::uint8_t> activity_labels, op_labels, call_labels;  // kPidLabel | kTidLabel
    LocalNames names;
    Tally tally;
    std::uint64_t events = 0;  // complete event objects (ParseStats::events)
    std::uint64_t events_total = 0;
    std::uint64_t flow_events = 0;
    std::uint64_t malformed = 0;
    std::uint64_t first_malformed_offset = 0;
    std::string first_malformed_reason;

    void reset() {
        activities.clear();
        cpu_ops.clear();
        runtime_calls.clear();
        op_shapes.clear();
        activity_labels.clear();
        op_labels.clear();
        call_labels.clear();
        names.reset();
        tally.reset();
        events = events_total = flow_events = malformed = first_malformed_offset = 0;
        first_malformed_reason.clear();
    }
    std::size_t bytes() const {
        return activities.capacity() * sizeof(GpuActivity) + cpu_ops.capacity() * sizeof(CpuOp) +
               runtime_calls.capacity() * sizeof(RuntimeCall) +
               op_shapes.capacity() * sizeof(OpShapes) + activity_labels.capacity() +
               op_labels.capacity() + call_labels.capacity() + names.bytes();
    }
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

// A hash of everything OpShapes::operator== compares.
std::uint64_t content_hash(const OpShapes& shapes) {
    std::uint64_t h = 0x243F6A8885A308D3ULL;
    const auto mix = [&](std::uint64_t v) {
        h = std::rotl((h ^ v) * 0x9E3779B97F4A7C15ULL, 27) + 0x632BE59BD9B4E019ULL;
    };
    const auto mix_all = [&](const auto& values) {
        mix(values.size());
        for (const auto v : values) mix(static_cast<std::uint64_t>(v));
    };
    mix(shapes.schema);
    mix(shapes.inputs.size());
    for (const OpArgument& arg : shapes.inputs) {
        mix(arg.type);
        mix(arg.concrete);
        mix(arg.element_type);
        mix(static_cast<std::uint64_t>(arg.storage_id));
        mix(static_cast<std::uint64_t>(arg.storage_offset));
        mix(arg.has_strides);
        mix_all(arg.dims);
        mix_all(arg.strides);
        mix_all(arg.list_ranks);
        mix_all(arg.list_storage_ids);
    }
    mix_all(shapes.output_storage_ids);
    for (const auto& dims : shapes.output_dims) mix_all(dims);
    return h;
}

// A batch's op_shapes entry and the texts it was read from.
struct CachedShapes {
    ShapeTexts texts;
    std::uint32_t index;
};

class EventParser {
  public:
    // Events parsed from now on go to `out`.
    void set_output(Batch& out) {
        out_ = &out;
        shape_cache_.clear();
    }

    // Returns an empty optional on success, else why the event was skipped.
    std::optional<Malformed> event(const char* json, std::size_t length, std::size_t capacity,
                                   std::uint64_t offset);

  private:
    // The whole event read straight from its text when it is strict, plain JSON and well formed
    // (nearly all events): true once it is added to the batch. Otherwise false with nothing
    // changed, and event() reads it through simdjson, which then decides what it is.
    bool event_raw(const char* json, std::size_t length, std::uint64_t offset);
    bool parse_args_raw(const char*& p, const char* end, Category category, std::size_t index);
    // The typed record for an "X" event of `category` (kNoIndex for kinds without one).
    std::size_t make_record(Category category, std::uint64_t offset);
    void drop_record(Category record_category);
    void fill_record(Category record_category, std::size_t index, NameId name, std::int64_t ts,
                     std::int64_t dur, std::int64_t pid, std::int64_t tid, bool pid_label,
                     bool tid_label);
    std::optional<Malformed> parse_args(od::object args, Category category, std::size_t index);
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
    [[gnu::always_inline]] void count_event(bool has_cat, std::string_view cat,
                                            std::uint8_t known_cat, std::string_view ph) {
        ++out_->events_total;
        out_->tally.add(has_cat, cat, known_cat, ph);
        if (ph.size() == 1 && (ph[0] == 's' || ph[0] == 'f' || ph[0] == 't')) ++out_->flow_events;
    }
    // pid/tid: a number, a numeric string, "stream 7", or a label ("Traces", "Spans").
    std::int64_t id_from(od::value value, bool& label);
    NameId intern(std::string_view text, bool in_input) {
        return out_->names.intern(text, !in_input);
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

std::int64_t EventParser::id_from(od::value value, bool& label) {
    label = false;
    od::json_type type;
    if (value.type().get(type)) return 0;
    if (type == od::json_type::number) return as_int(value).value_or(0);
    std::string_view text;
    bool in_input = false;
    if (type != od::json_type::string || !get_text(value, text, in_input)) return 0;
    std::string_view digits = text;
    if (digits.substr(0, 7) == "stream ") digits.remove_prefix(7);
    std::int64_t v = 0;
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (ec == std::errc() && ptr == digits.data() + digits.size()) return v;
    // Labels get stable negative ids so that they never collide with real thread ids.
    label = true;
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
void EventParser::fill_record(Category record_category, std::size_t index, NameId name_id,
                              std::int64_t ts, std::int64_t dur, std::int64_t pid, std::int64_t tid,
                              bool pid_label, bool tid_label) {
    // CpuOp and RuntimeCall: host-side ranges with the same fields.
    const auto fill_host_record = [&](auto& record, std::uint8_t& labels) {
        record.name = name_id;
        record.ts = ts;
        record.dur = dur;
        record.pid = pid;
        record.tid = tid;
        labels =
            static_cast<std::uint8_t>((pid_label ? kPidLabel : 0) | (tid_label ? kTidLabel : 0));
    };
    switch (record_category) {
        case Category::Kernel:
        case Category::Memcpy:
        case Category::Memset: {
            GpuActivity& a = out_->activities[index];
            a.name = name_id;
            a.ts = ts;
            a.dur = dur;
            if (a.device == 0 && pid > 0) a.device = pid;
            if (a.stream == 0) {
                a.stream = tid;
                if (tid_label) out_->activity_labels[index] = kTidLabel;
            }
            break;
        }
        case Category::CpuOp:
        case Category::Annotation:
            fill_host_record(out_->cpu_ops[index], out_->op_labels[index]);
            break;
        default:
            fill_host_record(out_->runtime_calls[index], out_->call_labels[index]);
            break;
    }
}

std::optional<Malformed> EventParser::event(const char* json, std::size_t length,
                                            std::size_t capacity, std::uint64_t offset) {
    doc_end_ = json + length;
    if (event_raw(json, length, offset)) return std::nullopt;
    shapes_created_ = false;
    od::document doc;
    if (parser_.iterate(json, length, capacity).get(doc)) return Malformed{"not valid JSON"};
    od::object object;
    if (doc.get_object().get(object)) return Malformed{"an event is not a JSON object"};

    std::string_view ph, cat, name;
    bool has_cat = false;
    std::uint8_t known_cat = 0;
    bool name_in_input = true;
    Category category = Category::Missing;
    Category record_category = Category::Missing;  // the kind of the record made for this event
    std::int64_t pid = 0, tid = 0, ts = 0, dur = -1;
    bool pid_label = false, tid_label = false;
    bool has_ts = false, has_name = false;
    bool args_deferred = false;
    std::size_t index = kNoIndex;

    // Creates the typed record as soon as the category and phase are known, so that "args" can be
    // parsed in the same pass in the usual field order.
    auto ensure_record = [&]() {
        if (index != kNoIndex || !is(ph, "X")) return;
        index = make_record(category, offset);
        if (index != kNoIndex) record_category = category;
    };
    auto discard_record = [&]() {
        if (index == kNoIndex) return;
        drop_record(record_category);
        index = kNoIndex;
    };
    auto fail = [&](std::string reason) {
        discard_record();
        return Malformed{std::move(reason)};
    };

    for (auto result : object) {
        std::string_view key;
        if (result.error()) return fail("unreadable member name");
        od::field& field =
            result.value_unsafe();  // no copy: copying a field stalls on store forwarding
        if (!field_key(field, key)) return fail("unreadable member name");
        od::value& value = field.value();
        switch (key.size()) {
            case 2:
                if (is(key, "ph")) {
                    if (!get_text(value, ph)) return fail("\"ph\" is not a string");
                    ensure_record();
                } else if (is(key, "ts")) {
                    std::int64_t ns = 0;
                    if (!micros_to_nanos_padded(value.raw_json_token(), ns))
                        return fail("\"ts\" is not a number");
                    ts = ns;
                    has_ts = true;
                }
                break;
            case 3:
                if (is(key, "cat")) {
                    if (!get_text(value, cat)) return fail("\"cat\" is not a string");
                    has_cat = true;
                    known_cat = known_category(cat);
                    category = categorize(cat, known_cat);
                    ensure_record();
                } else if (is(key, "pid")) {
                    pid = id_from(value, pid_label);
                } else if (is(key, "tid")) {
                    tid = id_from(value, tid_label);
                } else if (is(key, "dur")) {
                    std::int64_t ns = 0;
                    if (!micros_to_nanos_padded(value.raw_json_token(), ns))
                        return fail("\"dur\" is not a number");
                    dur = ns;
                }
                break;
            case 4:
                if (is(key, "name")) {
                    if (!get_text(value, name, name_in_input))
                        return fail("\"name\" is not a string");
                    // An unescaped name stays in the parser's string buffer until the next
                    // document.
                    has_name = true;
                } else if (is(key, "args")) {
                    if (index != kNoIndex) {
                        od::object args;
                        if (value.get_object().get(args)) return fail("\"args\" is not an object");
                        if (auto bad = parse_args(args, record_category, index))
                            return fail(bad->reason);
                    } else if (ph.empty() || !has_cat) {
                        // Rare field order (args before ph/cat): parse the event again afterwards.
                        args_deferred = true;
                    }
                }
                break;
            default:
                break;
        }
    }
    if (ph.empty()) return fail("missing \"ph\"");
    count_event(has_cat, cat, known_cat, ph);
    if (!is(ph, "X")) return std::nullopt;
    if (category == Category::Missing || category == Category::Other ||
        category == Category::PythonFunction)
        return std::nullopt;
    ensure_record();
    if (!has_name) return fail("missing \"name\"");
    if (!has_ts) return fail("missing \"ts\"");
    if (dur < 0) return fail("missing or negative \"dur\"");
    if (args_deferred) {
        od::document again;
        od::object args;
        if (args_parser_.iterate(json, length, capacity).get(again) ||
            again["args"].get_object().get(args))
            return fail("\"args\" is not an object");
        if (auto bad = parse_args(args, record_category, index)) return fail(bad->reason);
    }
    const NameId name_id = out_->names.intern(name, !name_in_input);
    fill_record(record_category, index, name_id, ts, dur, pid, tid, pid_label, tid_label);
    return std::nullopt;
}

// Mirrors event() and parse_args() member by member on strict JSON; whatever they would reject,
// and anything out of the ordinary, is undone and handed back to them.
bool EventParser::event_raw(const char* json, std::size_t length, std::uint64_t offset) {
    const char* const end = json + length;
    const char* p = skip_space(json, end);
    if (p >= end || *p != '{') return false;
    const std::size_t names_mark = out_->names.size();
    shapes_created_ = false;
    pending_shapes_.reset();
    std::string_view ph, cat, name;
    bool has_cat = false;
    std::uint8_t known_cat = 0;
    Category category = Category::Missing;
    Category record_category = Category::Missing;
    std::int64_t pid = 0, tid = 0, ts = 0, dur = -1;
    bool pid_label = false, tid_label = false;
    bool has_ts = false, has_name = false;
    std::size_t index = kNoIndex;
    auto ensure_record = [&]() {
        if (index != kNoIndex || !is(ph, "X")) return;
        index = make_record(category, offset);
        if (index != kNoIndex) record_category = category;
    };
    auto give_up = [&]() {
        if (index != kNoIndex) drop_record(record_category);
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
            std::string_view digits = text;
            if (digits.substr(0, 7) == "stream ") digits.remove_prefix(7);
            std::int64_t v = 0;
            auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
            if (ec == std::errc() && ptr == digits.data() + digits.size()) {
                out = v;
            } else {
                label = true;
                out = -1 - static_cast<std::int64_t>(intern(text, true));
            }
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
                if (!raw_plain_string(p, end, ph)) return give_up();
                ensure_record();
                break;
            case EventKey::Ts:
                if (!raw_micros(p, end, ts)) return give_up();
                has_ts = true;
                break;
            case EventKey::Cat:
                if (!raw_plain_string(p, end, cat)) return give_up();
                has_cat = true;
                known_cat = known_category(cat);
                category = categorize(cat, known_cat);
                ensure_record();
                break;
            case EventKey::Pid:  // a plain number nearly always: read here, the rest by id()
                if (!(is_digit(*p) ? raw_int(p, end, pid) : id(pid, pid_label))) return give_up();
                break;
            case EventKey::Tid:
                if (!(is_digit(*p) ? raw_int(p, end, tid) : id(tid, tid_label))) return give_up();
                break;
            case EventKey::Dur:
                if (!raw_micros(p, end, dur)) return give_up();
                break;
            case EventKey::Name:
                if (!raw_plain_string(p, end, name)) return give_up();
                has_name = true;
                break;
            case EventKey::Args:
                if (index != kNoIndex) {
                    if (*p != '{' || !parse_args_raw(p, end, record_category, index))
                        return give_up();
                } else if (ph.empty() || !has_cat) {
                    return give_up();  // args before ph/cat: event() parses them afterwards
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
    if (ph.empty()) return give_up();
    const bool x = is(ph, "X");
    const bool recorded = x && category != Category::Missing && category != Category::Other &&
                          category != Category::PythonFunction;
    if (recorded) {
        ensure_record();
        if (!has_name || !has_ts || dur < 0) return give_up();
    }
    count_event(has_cat, cat, known_cat, ph);
    if (pending_shapes_) shape_cache_.insert(*pending_shapes_);
    if (!recorded) return true;
    fill_record(record_category, index, intern(name, true), ts, dur, pid, tid, pid_label,
                tid_label);
    return true;
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

// The top-level members around traceEvents (small; parsed when their batch is committed).
void parse_metadata(od::parser& parser, TraceMetadata& meta, std::string_view key, const char* json,
                    std::size_t length, std::size_t capacity) {
    od::document doc;
    if (parser.iterate(json, length, capacity).get(doc)) return;
    if (key == "baseTimeNanoseconds") {
        std::int64_t v;
        if (!doc.get_int64().get(v)) meta.base_time_ns = v;
    } else if (key == "displayTimeUnit") {
        std::string_view v;
        if (!doc.get_string().get(v)) meta.display_time_unit = v;
    } else if (key == "record_shapes") {
        std::int64_t v;
        if (!doc.get_int64().get(v)) meta.record_shapes = v != 0;
    } else if (key == "cuda_runtime_version" || key == "hip_runtime_version" ||
               key == "cuda_driver_version" || key == "hip_driver_version") {
        std::string_view token;
        if (doc.raw_json_token().get(token)) return;
        if (!token.empty() && token.front() == '"') {
            std::string_view quoted;
            if (!doc.get_string().get(quoted)) token = quoted;
        }
        while (!token.empty() && (token.back() == ' ' || token.back() == '\n'))
            token.remove_suffix(1);
        (key.find("driver") != std::string_view::npos ? meta.driver_version
                                                      : meta.runtime_version) = token;
        if (key.substr(0, 3) == "hip") meta.is_hip = true;
    } else if (key == "roctracer_version") {
        meta.is_hip = true;
    } else if (key == "distributedInfo") {
        od::object object;
        if (doc.get_object().get(object)) return;
        for (auto field : object) {
            std::string_view k;
            if (field.unescaped_key().get(k)) return;
            od::value v;
            if (field.value().get(v)) return;
            if (k == "rank") meta.rank = static_cast<int>(as_int(v).value_or(-1));
            if (k == "world_size") meta.world_size = static_cast<int>(as_int(v).value_or(-1));
            if (k == "backend") {
                std::string_view s;
                if (!v.get_string().get(s)) meta.distributed_backend = s;
            }
        }
    } else if (key == "deviceProperties") {
        od::array array;
        if (doc.get_array().get(array)) return;
        for (auto element : array) {
            od::object object;
            if (element.get_object().get(object)) return;
            DeviceInfo device;
            for (auto field : object) {
                std::string_view k;
                if (field.unescaped_key().get(k)) return;
                od::value v;
                if (field.value().get(v)) return;
                if (k == "id")
                    device.id = as_int(v).value_or(0);
                else if (k == "name") {
                    std::string_view s;
                    if (!v.get_string().get(s)) device.name = s;
                } else if (k == "totalGlobalMem")
                    device.total_global_mem = as_int(v).value_or(0);
                else if (k == "computeMajor")
                    device.compute_major = static_cast<int>(as_int(v).value_or(0));
                else if (k == "computeMinor")
                    device.compute_minor = static_cast<int>(as_int(v).value_or(0));
                else if (k == "numSms")
                    device.num_sms = static_cast<int>(as_int(v).value_or(0));
            }
            meta.devices.push_back(std::move(device));
        }
    }
}

// A buffer of input: `size` bytes plus simdjson::SIMDJSON_PADDING readable ones, the items the
// splitter cut out of it, and what its events add to the trace. Slots are recycled.
struct Slot {
    std::vector<char> data;
    const char* text = nullptr;  // the chunk: data.data(), or the source's bytes in place
    std::size_t size = 0;
    std::uint64_t base = 0;  // absolute offset of data[0]
    std::uint64_t seq = 0;   // position in the input: batches are committed in this order
    std::vector<Span> spans;
    std::uint64_t raw_offset =
        0;  // the source's raw_offset() and raw_size() after reading this chunk
    std::uint64_t raw_size = 0;
    std::uint64_t next_base = 0;  // where the next chunk starts (bytes before it are done with)
    bool last = false;            // the input ends with this chunk
    Batch batch;
    std::size_t bytes() const {
        // Input read in place is memory the parser holds too (until it is released).
        const std::size_t in_place = text != data.data() ? size + simdjson::SIMDJSON_PADDING : 0;
        return data.capacity() + in_place + spans.capacity() * sizeof(Span) + batch.bytes();
    }
};

// Reads, splits, parses and commits on symmetric workers (the calling thread and the others, two
// on a 2-core machine). A worker takes a free slot, reads and splits the next chunk into it
// (serially, under a lock: the splitter carries state from chunk to chunk), then parses the
// chunk's events into the slot's batch on its own. Batches are committed into the trace strictly
// in input order, by whichever worker completes the in-order run: a worker that finishes early
// goes on with the next chunk instead of waiting for its turn. Reading and splitting overlap with
// parsing, and parsing (most of the work) runs on every core. The slots bound the memory: at most
// one chunk per worker, plus one, is in flight.
class Pipeline {
  public:
    // One slot more than workers: a worker that finishes early can go on with the next chunk.
    Pipeline(ByteSource& source, const ParseOptions& options, Trace& trace, ParseStats& stats,
             unsigned workers)
        : source_(source),
          options_(options),
          trace_(trace),
          stats_(stats),
          file_(source.name()),
          slots_(workers + 1) {
        for (auto& slot : slots_) free_.push_back(&slot);
    }

    void worker() {
        EventParser parser;
        try {
            while (Slot* slot = acquire()) {
                if (!read(*slot)) {
                    release(slot);
                    break;
                }
                slot->batch.reset();
                parser.set_output(slot->batch);
                parse(*slot, parser);
                complete(slot);
            }
        } catch (...) {
            std::lock_guard lock(mutex_);
            if (!fatal_) fatal_ = std::current_exception();
            aborted_ = true;
            cv_.notify_all();
        }
    }

    // After both workers are done: the first error wins as before (a fatal one, then input and
    // splitting errors, then a strict-mode malformed event).
    void finish() {
        if (fatal_) std::rethrow_exception(fatal_);
        if (read_error_) std::rethrow_exception(read_error_);
        if (strict_error_) throw *strict_error_;
        stats_.json_bytes = json_bytes_;
        std::uint64_t peak = carry_.capacity();
        for (const Slot& slot : slots_) peak += slot.bytes();
        stats_.peak_buffer_bytes = peak;
    }

    const EventSplitter& splitter() const { return splitter_; }

  private:
    // A free slot, once one is free; nullptr when the parse is over or aborted.
    Slot* acquire() {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return !free_.empty() || aborted_ || reading_done_; });
        if (aborted_ || reading_done_) return nullptr;
        Slot* slot = free_.back();
        free_.pop_back();
        return slot;
    }
    void release(Slot* slot) {
        std::lock_guard lock(mutex_);
        free_.push_back(slot);
        cv_.notify_all();
    }

    // Marks the slot's batch as parsed and commits every batch that is now next in input order.
    void complete(Slot* slot) {
        std::lock_guard lock(mutex_);
        done_.push_back(slot);
        for (bool progress = true; progress && !aborted_;) {
            progress = false;
            for (std::size_t i = 0; i < done_.size(); ++i) {
                if (done_[i]->seq != next_commit_) continue;
                Slot* next = done_[i];
                done_.erase(done_.begin() + static_cast<std::ptrdiff_t>(i));
                commit(*next);
                ++next_commit_;
                free_.push_back(next);
                progress = true;
                break;
            }
        }
        cv_.notify_all();
    }

    // Fills `slot` with the carried-over bytes and the next input, and splits it. False at the
    // end of the input or after an error (kept for finish()).
    bool read(Slot& chunk) {
        std::lock_guard lock(read_mutex_);
        if (read_finished_) return false;
        try {
            // At least one tar header (512 bytes), so that the first chunk can tell a tar
            // archive from a broken trace whatever the chunk size.
            const std::size_t want = std::max({options_.chunk_bytes, carry_size() * 2, kTarHeader});
            const std::span<const char> in_place =
                carry_in_place_ ? source_.read_in_place(want, simdjson::SIMDJSON_PADDING)
                                : std::span<const char>();
            std::size_t size = carry_size();
            bool eof = false;
            if (!in_place.empty()) {
                // The carried-over bytes are those just before `in_place`: nothing to copy.
                chunk.text = in_place.data() - size;
                size += in_place.size();
                json_bytes_ += in_place.size();
            } else {
                if (chunk.data.size() < want + simdjson::SIMDJSON_PADDING)
                    chunk.data.resize(want + simdjson::SIMDJSON_PADDING);
                if (size != 0) std::memcpy(chunk.data.data(), carry_data(), size);
                carry_in_place_ = false;
                const std::size_t capacity = chunk.data.size() - simdjson::SIMDJSON_PADDING;
                while (size < capacity) {
                    std::size_t n =
                        source_.read(std::span<char>(chunk.data.data() + size, capacity - size));
                    if (n == 0) {
                        eof = true;
                        break;
                    }
                    size += n;
                    json_bytes_ += n;
                }
                std::memset(chunk.data.data() + size, ' ', simdjson::SIMDJSON_PADDING);
                chunk.text = chunk.data.data();
            }
            chunk.size = size;
            chunk.base = splitter_.base_offset();
            chunk.spans.clear();
            std::size_t keep = 0;
            try {
                keep = splitter_.scan(chunk.text, size, eof, chunk.spans);
            } catch (const EventSplitter::SplitError& e) {
                // Multi-rank traces are often shared as .tar.gz: say so rather than only what
                // byte 0 should have been (a tar header has "ustar" at offset 257).
                const bool tar = e.offset == 0 && chunk.base == 0 && size >= 262 &&
                                 std::string_view(chunk.text + 257, 5) == "ustar";
                throw InputError(file_, e.offset,
                                 tar ? "a tar archive, not a JSON trace: unpack it and pass one "
                                       "rank's trace"
                                     : "not a JSON trace: expected " + e.expected);
            }
            chunk.next_base = chunk.base + keep;
            if (carry_in_place_) {
                carry_text_ = chunk.text + keep;
                carry_length_ = size - keep;
            } else {
                carry_.assign(chunk.text + keep, chunk.text + size);
            }
            if (eof) finish_reading();
            chunk.last = eof;
            chunk.raw_offset = source_.raw_offset();
            chunk.raw_size = source_.raw_size();
            if (options_.progress) options_.progress(chunk.raw_offset, chunk.raw_size);
            chunk.seq = next_seq_++;
            return true;
        } catch (...) {
            read_error_ = std::current_exception();
            finish_reading();
            return false;
        }
    }

    static constexpr std::size_t kTarHeader = 512;

    void finish_reading() {  // read_mutex_ held
        read_finished_ = true;
        std::lock_guard lock(mutex_);
        reading_done_ = true;
        cv_.notify_all();
    }

    void parse(Slot& chunk, EventParser& parser) {
        Batch& batch = chunk.batch;
        // In strict mode nothing after the first malformed event matters: parse_kineto throws.
        bool skip = skip_parsing_.load(std::memory_order_relaxed);
        for (const Span& span : chunk.spans) {
            if (span.metadata) continue;  // parsed at commit time
            ++batch.events;
            if (skip) continue;
            const char* at = chunk.text + span.begin;
            const std::size_t capacity = chunk.size + simdjson::SIMDJSON_PADDING - span.begin;
            const std::uint64_t offset = chunk.base + span.begin;
            if (auto bad = parser.event(at, span.length, capacity, offset)) {
                if (batch.malformed++ == 0) {
                    batch.first_malformed_offset = offset;
                    batch.first_malformed_reason = std::move(bad->reason);
                }
                if (options_.strict) skip = true;
            }
        }
    }

    // Adds a slot's batch (and its metadata members) to the trace; mutex_ held, in input order.
    void commit(Slot& chunk) {
        Batch& batch = chunk.batch;
        for (const Span& span : chunk.spans) {
            if (!span.metadata) continue;
            parse_metadata(meta_parser_, trace_.meta,
                           std::string_view(chunk.text + span.key_begin, span.key_length),
                           chunk.text + span.begin, span.length,
                           chunk.size + simdjson::SIMDJSON_PADDING - span.begin);
        }
        stats_.events += batch.events;
        if (!strict_error_) {
            merge(chunk);
            if (batch.malformed) {
                if (stats_.malformed == 0) {
                    stats_.first_malformed_offset = batch.first_malformed_offset;
                    stats_.first_malformed_reason = batch.first_malformed_reason;
                }
                stats_.malformed += batch.malformed;
                if (options_.strict) {
                    strict_error_.emplace(file_, batch.first_malformed_offset,
                                          "malformed event: " + batch.first_malformed_reason);
                    skip_parsing_ = true;
                }
            }
        }
        // Only now: the batch's names are views into the chunk until merge() has copied them.
        source_.release_before(chunk.next_base);
    }

    // How many elements a trace vector holding `count` after this chunk should end up with,
    // extrapolated over the whole input (0 when the input size is unknown, e.g. a pipe).
    static std::size_t forecast(std::size_t count, const Slot& chunk) {
        const double done = static_cast<double>(chunk.base + chunk.size);  // JSON bytes so far
        if (chunk.raw_size == 0 || chunk.raw_offset == 0 || done <= 0) return 0;
        const double total =
            static_cast<double>(chunk.raw_size) * done / static_cast<double>(chunk.raw_offset);
        if (total <= done) return 0;
        return static_cast<std::size_t>(static_cast<double>(count) * (total / done) * 1.05) + 1024;
    }

    // Makes room for `adding` more elements: for the whole input at once when its size is known,
    // so that the big vectors are not copied over and over while they double (and do not leave an
    // old and a new copy in memory at the same time); else by doubling. Only capacity changes.
    template <typename T>
    static void make_room(std::vector<T>& v, std::size_t adding, const Slot& chunk) {
        const std::size_t need = v.size() + adding;
        if (need <= v.capacity()) return;
        const std::size_t ahead = forecast(need, chunk);
        if (ahead >= need)
            v.reserve(std::max(ahead, v.capacity() + v.capacity() / 4));
        else
            v.reserve(chunk.last
                          ? need
                          : std::max(need, 2 * v.capacity()));  // nothing more comes after the last
    }

    void merge(Slot& chunk) {
        Batch& b = chunk.batch;
        Trace& t = trace_;
        make_room(t.activities, b.activities.size(), chunk);
        make_room(t.cpu_ops, b.cpu_ops.size(), chunk);
        make_room(t.runtime_calls, b.runtime_calls.size(), chunk);
        map_.resize(b.names.size());
        for (std::size_t i = 0; i < b.names.size(); ++i) map_[i] = t.names.intern(b.names.view(i));
        const auto name = [&](NameId id) { return map_[id]; };
        const auto label = [&](std::int64_t v) {
            return -1 - static_cast<std::int64_t>(map_[static_cast<std::size_t>(-1 - v)]);
        };

        const std::size_t a0 = t.activities.size();
        t.activities.insert(t.activities.end(), b.activities.begin(), b.activities.end());
        for (std::size_t i = 0; i < b.activities.size(); ++i) {
            GpuActivity& a = t.activities[a0 + i];
            a.name = name(a.name);
            a.collective = name(a.collective);
            a.collective_dtype = name(a.collective_dtype);
            if (b.activity_labels[i] & kTidLabel) a.stream = label(a.stream);
        }

        // Each batch entry becomes an equal entry of an earlier batch where there is one (found
        // by a hash of its contents, confirmed by comparing), else a new one: batches share
        // entries, and so do ops whose texts differed only in layout or member order.
        shapes_map_.resize(b.op_shapes.size());
        for (std::size_t i = 0; i < b.op_shapes.size(); ++i) {
            OpShapes& shapes = b.op_shapes[i];
            for (OpArgument& arg : shapes.inputs) {
                arg.type = name(arg.type);
                arg.concrete = name(arg.concrete);
            }
            const auto [it, added] = shared_shapes_.try_emplace(
                content_hash(shapes), static_cast<std::uint32_t>(t.op_shapes.size()));
            if (!added && t.op_shapes[it->second] == shapes) {
                shapes_map_[i] = it->second;
                continue;
            }
            shapes_map_[i] = static_cast<std::uint32_t>(t.op_shapes.size());
            t.op_shapes.push_back(std::move(shapes));
        }
        const std::size_t o0 = t.cpu_ops.size();
        t.cpu_ops.insert(t.cpu_ops.end(), b.cpu_ops.begin(), b.cpu_ops.end());
        for (std::size_t i = 0; i < b.cpu_ops.size(); ++i) {
            CpuOp& op = t.cpu_ops[o0 + i];
            op.name = name(op.name);
            if (op.shapes != kNoIndex) op.shapes = shapes_map_[op.shapes];
            if (b.op_labels[i] & kPidLabel) op.pid = label(op.pid);
            if (b.op_labels[i] & kTidLabel) op.tid = label(op.tid);
        }

        const std::size_t c0 = t.runtime_calls.size();
        t.runtime_calls.insert(t.runtime_calls.end(), b.runtime_calls.begin(),
                               b.runtime_calls.end());
        for (std::size_t i = 0; i < b.runtime_calls.size(); ++i) {
            RuntimeCall& call = t.runtime_calls[c0 + i];
            call.name = name(call.name);
            if (b.call_labels[i] & kPidLabel) call.pid = label(call.pid);
            if (b.call_labels[i] & kTidLabel) call.tid = label(call.tid);
        }

        t.events_total += b.events_total;
        t.flow_events += b.flow_events;
        b.tally.merge_into(stats_.by_category);
    }

    ByteSource& source_;
    const ParseOptions& options_;
    Trace& trace_;
    ParseStats& stats_;
    const std::string file_;

    // Reading and splitting (read_mutex_).
    std::mutex read_mutex_;
    EventSplitter splitter_;
    // An unfinished item, moved to the front of the next chunk; while the input is read in
    // place, it is not copied but left where it is, just before the next bytes.
    std::size_t carry_size() const { return carry_in_place_ ? carry_length_ : carry_.size(); }
    const char* carry_data() const { return carry_in_place_ ? carry_text_ : carry_.data(); }
    std::vector<char> carry_;
    bool carry_in_place_ = true;
    const char* carry_text_ = nullptr;
    std::size_t carry_length_ = 0;
    bool read_finished_ = false;
    std::exception_ptr read_error_;
    std::uint64_t json_bytes_ = 0;
    std::uint64_t next_seq_ = 0;

    // Slots and committing (mutex_).
    std::mutex mutex_;
    std::condition_variable cv_;
    std::vector<Slot> slots_;  // sized once: free_ and done_ point into it
    std::vector<Slot*> free_;
    std::vector<Slot*> done_;  // parsed, waiting for their turn
    std::uint64_t next_commit_ = 0;
    bool reading_done_ = false;
    bool aborted_ = false;
    std::atomic<bool> skip_parsing_{false};
    std::exception_ptr fatal_;
    std::optional<InputError> strict_error_;
    od::parser meta_parser_;
    std::vector<NameId> map_;                // batch name id -> trace name id
    std::vector<std::uint32_t> shapes_map_;  // batch op_shapes index -> trace op_shapes index
    std::unordered_map<std::uint64_t, std::uint32_t> shared_shapes_;  // content hash -> entry
};

}  // namespace

unsigned parse_threads(const ParseOptions& options) {
    if (options.threads != 0) return options.threads;
    unsigned cpus = std::thread::hardware_concurrency();
#if defined(__linux__)
    // taskset, cgroups cpusets and batch schedulers narrow this down; hardware_concurrency() not.
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) cpus = static_cast<unsigned>(CPU_COUNT(&set));
#endif
    return std::clamp(cpus, 2u, kMaxParseThreads);
}

bool micros_to_nanos(std::string_view text, std::int64_t& out) {
    while (!text.empty() && (text.back() == ' ' || text.back() == '\n' || text.back() == '\r' ||
                             text.back() == '\t'))
        text.remove_suffix(1);
    if (text.empty()) return false;
    bool negative = false;
    std::size_t i = 0;
    if (text[0] == '-') {
        negative = true;
        i = 1;
    }
    std::int64_t whole = 0;
    std::size_t digits = 0;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++digits) {
        if (whole > (std::numeric_limits<std::int64_t>::max() - 9) / 10 / 1000) return false;
        whole = whole * 10 + (text[i] - '0');
    }
    if (digits == 0) return false;
    std::int64_t frac = 0;  // nanoseconds
    if (i < text.size() && text[i] == '.') {
        ++i;
        int scale = 100;
        bool round_up = false;
        std::size_t fdigits = 0;
        for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++fdigits) {
            if (scale >= 1) {
                frac += (text[i] - '0') * scale;
                scale /= 10;
            } else if (fdigits == 3) {
                round_up = text[i] >= '5';
            }
        }
        if (fdigits == 0) return false;
        if (round_up) ++frac;
    }
    if (i < text.size()) {
        if (text[i] != 'e' && text[i] != 'E') return false;
        // Exponent notation is rare; a double is exact enough for it.
        double v = 0;
        auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        // Beyond int64 nanoseconds (292 years) llround() has no defined result.
        if (ec != std::errc() || ptr != text.data() + text.size() || !(std::fabs(v) < 9.2e15))
            return false;
        out = std::llround(v * 1000.0);
        return true;
    }
    out = whole * 1000 + frac;
    if (negative) out = -out;
    return true;
}

namespace {

// Plain JSON text held in memory.
class MemorySource final : public ByteSource {
  public:
    MemorySource(std::string name, std::string_view bytes)
        : ByteSource(std::move(name)), bytes_(bytes) {}
    std::size_t read(std::span<char> out) override {
        const std::size_t n = std::min(out.size(), bytes_.size() - pos_);
        if (n > 0) std::memcpy(out.data(), bytes_.data() + pos_, n);
        pos_ += n;
        return n;
    }
    std::uint64_t raw_offset() const override { return pos_; }
    std::uint64_t raw_size() const override { return bytes_.size(); }
    Compression compression() const override { return Compression::None; }

  private:
    std::string_view bytes_;
    std::size_t pos_ = 0;
};

ParseResult parse_source(ByteSource& source, const std::string& path, const ParseOptions& options) {
    ParseResult result;
    Trace& trace = result.trace;
    ParseStats& stats = result.stats;
    trace.source = path;
    stats.compression = source.compression();
    const std::string& file = source.name();

    const unsigned workers = parse_threads(options);
    Pipeline pipeline(source, options, trace, stats, workers);
    {
        std::vector<std::jthread> helpers;
        for (unsigned i = 1; i < workers; ++i) helpers.emplace_back([&] { pipeline.worker(); });
        pipeline.worker();
    }
    pipeline.finish();
    const EventSplitter& splitter = pipeline.splitter();

    stats.raw_bytes = source.raw_offset();
    stats.stray_bytes = splitter.stray_bytes();
    stats.first_stray_offset = splitter.first_stray_offset();
    if (stats.json_bytes == 0)
        throw InputError(file, 0, "empty input (no bytes after decompression)");
    if (!splitter.saw_events_array())
        throw InputError(file, stats.json_bytes,
                         "no \"traceEvents\" array: not a Kineto/Chrome trace");
    if (!splitter.complete() || source.truncated()) {
        stats.truncated = true;
        stats.truncated_lost_bytes = stats.json_bytes - splitter.last_complete_end();
        result.warnings.push_back(
            file + ": truncated input (" +
            (source.truncated()
                 ? std::string(to_string(source.compression())) + " stream cut short; "
                 : "") +
            std::to_string(stats.truncated_lost_bytes) +
            " bytes after the last complete event at byte " +
            std::to_string(splitter.last_complete_end()) + " were lost)");
    }
    const std::uint64_t valid = stats.events - stats.malformed;
    if (valid == 0)
        throw InputError(
            file, stats.malformed ? stats.first_malformed_offset : splitter.last_complete_end(),
            stats.malformed
                ? "no valid event found (first malformed: " + stats.first_malformed_reason + ")"
                : "no valid event found");
    if (stats.malformed)
        result.warnings.push_back(file + ": skipped " + std::to_string(stats.malformed) +
                                  " malformed event(s); the first at byte " +
                                  std::to_string(stats.first_malformed_offset) + ": " +
                                  stats.first_malformed_reason);
    if (stats.stray_bytes)
        result.warnings.push_back(file + ": skipped " + std::to_string(stats.stray_bytes) +
                                  " stray byte(s) outside events; the first at byte " +
                                  std::to_string(stats.first_stray_offset));
    return result;
}

}  // namespace

ParseResult parse_kineto(const std::string& path, const ParseOptions& options) {
    auto source = open_source(path);
    return parse_source(*source, path, options);
}

ParseResult parse_kineto_buffer(std::string_view json, const ParseOptions& options,
                                const std::string& name) {
    MemorySource source(name, json);
    return parse_source(source, name, options);
}

}  // namespace replay
