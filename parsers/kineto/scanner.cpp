// The scanner's out-of-line pieces: microsecond numbers to nanoseconds (the exact reader and its
// fast twin for padded text) and skipping a whole value.
#include "kineto/scanner.h"

#include <charconv>
#include <cmath>

#include "replay/kineto_parser.h"

namespace replay {
namespace kineto {

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

bool raw_skip(const char*& p, const char* end, int depth) {
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

}  // namespace kineto

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

}  // namespace replay
