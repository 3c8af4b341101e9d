#include "replay/event_splitter.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define REPLAY_SPLITTER_SSE2 1
#endif

namespace replay {
namespace {

constexpr std::uint64_t kOddBits = 0xAAAAAAAAAAAAAAAAULL;

bool is_space(char c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

// Characters escaped by a backslash run of odd length (simdjson's json_escape_scanner).
inline std::uint64_t escaped_bits(std::uint64_t backslash, std::uint64_t& next_is_escaped) {
    if (backslash == 0) {
        std::uint64_t escaped = next_is_escaped;
        next_is_escaped = 0;
        return escaped;
    }
    const std::uint64_t potential_escape = backslash & ~next_is_escaped;
    const std::uint64_t maybe_escaped = potential_escape << 1;
    const std::uint64_t escape_and_terminal_code =
        ((maybe_escaped | kOddBits) - potential_escape) ^ kOddBits;
    const std::uint64_t escaped = escape_and_terminal_code ^ (backslash | next_is_escaped);
    const std::uint64_t escape = escape_and_terminal_code & backslash;
    next_is_escaped = escape >> 63;
    return escaped;
}

// Bit i set when an odd number of quote bits are at or below i: the bytes inside strings.
inline std::uint64_t prefix_xor(std::uint64_t x) {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    return x;
}

// Carry between 64-byte blocks: inside a string, and whether the next byte is escaped.
struct StringState {
    std::uint64_t in_string = 0;  // all ones when the last block ended inside a string
    std::uint64_t escaped = 0;    // 1 when the next block's first byte is escaped
};

// One block's structural characters outside strings: '{' and '}' in `braces`, ']' in `brackets`.
struct BlockIndex {
    std::uint64_t braces;
    std::uint64_t brackets;
};

inline BlockIndex outside_strings(std::uint64_t braces, std::uint64_t brackets,
                                  std::uint64_t quote_prefix, StringState& state) {
    const std::uint64_t in_string = quote_prefix ^ state.in_string;
    state.in_string = static_cast<std::uint64_t>(static_cast<std::int64_t>(in_string) >> 63);
    return {braces & ~in_string, brackets & ~in_string};
}

// Indexes `blocks` full 64-byte blocks of `buf`. One function per instruction set, picked once at
// run time; it is called for runs of blocks, so the indirect call costs nothing per block.
using IndexFn = void (*)(const char* buf, std::size_t blocks, BlockIndex* out, StringState& state);

void index_generic(const char* buf, std::size_t blocks, BlockIndex* out, StringState& state) {
    for (std::size_t b = 0; b < blocks; ++b) {
        const char* block = buf + 64 * b;
        std::uint64_t quote = 0, backslash = 0, braces = 0, brackets = 0;
#ifdef REPLAY_SPLITTER_SSE2
        for (int i = 0; i < 4; ++i) {
            const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 16 * i));
            auto mask = [&](char c) {
                return static_cast<std::uint64_t>(static_cast<std::uint16_t>(
                    _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(c)))));
            };
            quote |= mask('"') << (16 * i);
            backslash |= mask('\\') << (16 * i);
            braces |= (mask('{') | mask('}')) << (16 * i);
            brackets |= mask(']') << (16 * i);
        }
#else
        for (int i = 0; i < 64; ++i) {
            const std::uint64_t bit = 1ULL << i;
            switch (block[i]) {
                case '"':
                    quote |= bit;
                    break;
                case '\\':
                    backslash |= bit;
                    break;
                case '{':
                case '}':
                    braces |= bit;
                    break;
                case ']':
                    brackets |= bit;
                    break;
                default:
                    break;
            }
        }
#endif
        const std::uint64_t escaped = escaped_bits(backslash, state.escaped);
        out[b] = outside_strings(braces, brackets, prefix_xor(quote & ~escaped), state);
    }
}

#ifdef REPLAY_SPLITTER_SSE2
__attribute__((target("avx2"))) inline std::uint64_t movemask64(__m256i lo, __m256i hi) {
    return static_cast<std::uint64_t>(static_cast<std::uint32_t>(_mm256_movemask_epi8(lo))) |
           (static_cast<std::uint64_t>(static_cast<std::uint32_t>(_mm256_movemask_epi8(hi))) << 32);
}

// prefix_xor with one carry-less multiplication by all ones.
__attribute__((target("pclmul"))) inline std::uint64_t prefix_xor_clmul(std::uint64_t x) {
    return static_cast<std::uint64_t>(_mm_cvtsi128_si64(
        _mm_clmulepi64_si128(_mm_set_epi64x(0, static_cast<long long>(x)), _mm_set1_epi8(-1), 0)));
}

__attribute__((target("avx2,pclmul"))) void index_avx2(const char* buf, std::size_t blocks,
                                                       BlockIndex* out, StringState& state) {
    const __m256i q = _mm256_set1_epi8('"'), bs = _mm256_set1_epi8('\\');
    const __m256i ob = _mm256_set1_epi8('{'), cb = _mm256_set1_epi8('}'),
                  cbr = _mm256_set1_epi8(']');
    for (std::size_t b = 0; b < blocks; ++b) {
        const char* block = buf + 64 * b;
        const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block));
        const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 32));
        const std::uint64_t braces =
            movemask64(_mm256_or_si256(_mm256_cmpeq_epi8(lo, ob), _mm256_cmpeq_epi8(lo, cb)),
                       _mm256_or_si256(_mm256_cmpeq_epi8(hi, ob), _mm256_cmpeq_epi8(hi, cb)));
        const std::uint64_t brackets =
            movemask64(_mm256_cmpeq_epi8(lo, cbr), _mm256_cmpeq_epi8(hi, cbr));
        const std::uint64_t quote = movemask64(_mm256_cmpeq_epi8(lo, q), _mm256_cmpeq_epi8(hi, q));
        const std::uint64_t backslash =
            movemask64(_mm256_cmpeq_epi8(lo, bs), _mm256_cmpeq_epi8(hi, bs));
        const std::uint64_t escaped = escaped_bits(backslash, state.escaped);
        out[b] = outside_strings(braces, brackets, prefix_xor_clmul(quote & ~escaped), state);
    }
}

__attribute__((target("avx512f,avx512bw,pclmul"))) void index_avx512(const char* buf,
                                                                     std::size_t blocks,
                                                                     BlockIndex* out,
                                                                     StringState& state) {
    const __m512i q = _mm512_set1_epi8('"'), bs = _mm512_set1_epi8('\\');
    const __m512i ob = _mm512_set1_epi8('{'), cb = _mm512_set1_epi8('}'),
                  cbr = _mm512_set1_epi8(']');
    for (std::size_t b = 0; b < blocks; ++b) {
        const __m512i v = _mm512_loadu_si512(buf + 64 * b);
        const std::uint64_t quote = _mm512_cmpeq_epi8_mask(v, q);
        const std::uint64_t backslash = _mm512_cmpeq_epi8_mask(v, bs);
        const std::uint64_t braces = _mm512_cmpeq_epi8_mask(v, ob) | _mm512_cmpeq_epi8_mask(v, cb);
        const std::uint64_t brackets = _mm512_cmpeq_epi8_mask(v, cbr);
        const std::uint64_t escaped = escaped_bits(backslash, state.escaped);
        out[b] = outside_strings(braces, brackets, prefix_xor_clmul(quote & ~escaped), state);
    }
}
#endif

IndexFn pick_index() {
#ifdef REPLAY_SPLITTER_SSE2
    __builtin_cpu_init();
    const char* force = std::getenv("REPLAY_SPLITTER_ISA");  // for tests: generic, avx2
    const std::string_view isa(force ? force : "");
    if (isa == "generic") return index_generic;
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("pclmul");
    if (isa != "avx2" && avx2 && __builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512bw"))
        return index_avx512;
    if (avx2) return index_avx2;
#endif
    return index_generic;
}

const IndexFn index_blocks = pick_index();

// Finds the end of a JSON string starting at buf[i] == '"'; returns the index just past the
// closing quote, or 0 when the buffer ends first.
std::size_t string_end(const char* buf, std::size_t i, std::size_t size) {
    for (++i; i < size; ++i) {
        if (buf[i] == '\\') {
            ++i;
        } else if (buf[i] == '"') {
            return i + 1;
        }
    }
    return 0;
}

// Finds the end of any JSON value starting at buf[i]; 0 when the buffer ends first.
std::size_t value_end(const char* buf, std::size_t i, std::size_t size) {
    if (buf[i] == '"') return string_end(buf, i, size);
    if (buf[i] == '{' || buf[i] == '[') {
        std::int64_t depth = 0;
        while (i < size) {
            const char c = buf[i];
            if (c == '"') {
                i = string_end(buf, i, size);
                if (i == 0) return 0;
                continue;
            }
            if (c == '{' || c == '[') ++depth;
            if (c == '}' || c == ']') {
                if (--depth == 0) return i + 1;
            }
            ++i;
        }
        return 0;
    }
    while (i < size && buf[i] != ',' && buf[i] != '}' && buf[i] != ']' && !is_space(buf[i])) ++i;
    return i < size ? i : 0;
}

}  // namespace

std::size_t EventSplitter::scan(const char* buf, std::size_t size, bool eof,
                                std::vector<Span>& out) {
    while (true) {
        if (state_ == State::Events) {
            scan_events(buf, size, eof, out);
            if (state_ == State::Events) break;  // needs more input
        } else if (!scan_top(buf, size, eof, out)) {
            break;
        }
    }
    if (eof) {
        // Bytes after the last event of an unclosed traceEvents are stray too, as they are when a
        // chunk boundary falls after them: the counts do not depend on how the input was chunked.
        if (state_ == State::Events && depth_ == 0 && gap_begin_ < size) {
            on_event_gap(buf, gap_begin_, size);
            gap_begin_ = size;
        }
        return size;
    }
    std::size_t keep = pos_;
    if (state_ == State::Events && depth_ > 0) keep = event_begin_;
    if ((state_ == State::RootColon || state_ == State::RootValue)) keep = key_begin_ - 1;
    if (state_ == State::Events && depth_ == 0 && gap_begin_ < keep) {
        on_event_gap(buf, gap_begin_, keep);
        gap_begin_ = keep;
    }
    pos_ -= keep;
    if (event_begin_ >= keep) event_begin_ -= keep;
    if (gap_begin_ >= keep) gap_begin_ -= keep;
    if (key_begin_ >= keep) key_begin_ -= keep;
    base_ += keep;
    return keep;
}

void EventSplitter::on_event_gap(const char* buf, std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) {
        if (!is_space(buf[i]) && buf[i] != ',') {
            if (stray_bytes_ == 0) first_stray_ = base_ + i;
            ++stray_bytes_;
        }
    }
}

// Returns false when more input is needed.
bool EventSplitter::scan_top(const char* buf, std::size_t size, bool eof, std::vector<Span>& out) {
    while (true) {
        while (pos_ < size && is_space(buf[pos_])) ++pos_;
        if (pos_ >= size) {
            if (eof && state_ == State::Start)
                throw SplitError{base_ + pos_, "a JSON object or array (the input is empty)"};
            return false;
        }
        const char c = buf[pos_];
        switch (state_) {
            case State::Start:
                if (c == '{') {
                    state_ = State::RootKey;
                } else if (c == '[') {
                    bare_array_ = true;
                    saw_events_ = true;
                    state_ = State::Events;
                    gap_begin_ = pos_ + 1;
                    ++pos_;
                    return true;
                } else {
                    throw SplitError{base_ + pos_, "'{' or '[' at the start of a JSON trace"};
                }
                ++pos_;
                break;
            case State::RootKey: {
                if (c == '}') {
                    state_ = State::Done;
                    ++pos_;
                    break;
                }
                if (c != '"') throw SplitError{base_ + pos_, "a member name or '}'"};
                const std::size_t end = string_end(buf, pos_, size);
                // At the end of the input a member cut short is a truncation (the profiler died
                // while writing it), reported as such by the caller: complete() stays false.
                if (end == 0) return false;
                key_begin_ = pos_ + 1;
                key_length_ = end - pos_ - 2;
                pos_ = end;
                state_ = State::RootColon;
                break;
            }
            case State::RootColon:
                if (c != ':') throw SplitError{base_ + pos_, "':' after a member name"};
                ++pos_;
                state_ = State::RootValue;
                break;
            case State::RootValue: {
                const std::string_view key(buf + key_begin_, key_length_);
                if (key == "traceEvents") {
                    if (c != '[') throw SplitError{base_ + pos_, "'[' after \"traceEvents\":"};
                    saw_events_ = true;
                    state_ = State::Events;
                    depth_ = 0;
                    prev_in_string_ = 0;
                    prev_escaped_ = 0;
                    gap_begin_ = pos_ + 1;
                    ++pos_;
                    return true;
                }
                const std::size_t end = value_end(buf, pos_, size);
                if (end == 0) {
                    if (eof) return false;  // cut short: a truncation, as above
                    pos_ = key_begin_ - 1;
                    state_ = State::RootKey;
                    return false;
                }
                Span span;
                span.begin = static_cast<std::uint32_t>(pos_);
                span.length = static_cast<std::uint32_t>(end - pos_);
                span.metadata = true;
                span.key_begin = static_cast<std::uint32_t>(key_begin_);
                span.key_length = static_cast<std::uint32_t>(key_length_);
                out.push_back(span);
                last_end_abs_ = base_ + end;
                pos_ = end;
                state_ = State::RootComma;
                break;
            }
            case State::RootComma:
                if (c == ',') {
                    state_ = State::RootKey;
                } else if (c == '}') {
                    state_ = State::Done;
                } else {
                    throw SplitError{base_ + pos_, "',' or '}' between top-level members"};
                }
                ++pos_;
                break;
            case State::Done:
                // Text after the document is skipped and counted (but not its whitespace, so that
                // the count does not depend on where chunks end), not fatal.
                if (stray_bytes_ == 0) first_stray_ = base_ + pos_;
                for (; pos_ < size; ++pos_) stray_bytes_ += !is_space(buf[pos_]);
                return false;
            case State::Events:
                return true;
        }
    }
}

// Bits [from, 64) of a 64-bit mask (from <= 64).
inline std::uint64_t bits_from(std::size_t from) {
    return from >= 64 ? 0 : ~0ULL << from;
}

void EventSplitter::scan_events(const char* buf, std::size_t size, bool eof,
                                std::vector<Span>& out) {
    constexpr std::size_t kRun = 64;  // blocks indexed per call (4 KiB)
    BlockIndex index[kRun];
    alignas(64) char tail[64];
    StringState strings{prev_in_string_, prev_escaped_};
    // ']' matters only between events (depth 0), where it closes traceEvents: inside a block, the
    // brackets from `zero_from` up to the next '{' are looked at, the others never.
    auto close_array = [&](std::uint64_t brackets) {
        const std::size_t at = pos_ + static_cast<std::size_t>(__builtin_ctzll(brackets));
        on_event_gap(buf, gap_begin_, at);
        last_end_abs_ = base_ + at + 1;
        pos_ = at + 1;
        state_ = bare_array_ ? State::Done : State::RootComma;
        prev_in_string_ = strings.in_string;
        prev_escaped_ = strings.escaped;
    };
    while (pos_ < size) {
        std::size_t blocks = std::min<std::size_t>((size - pos_) / 64, kRun);
        std::size_t valid = 64;
        if (blocks == 0) {
            if (!eof) break;
            valid = size - pos_;
            std::memset(tail, ' ', sizeof tail);
            std::memcpy(tail, buf + pos_, valid);
            index_blocks(tail, 1, index, strings);
            blocks = 1;
        } else {
            // Hardware prefetchers stop at page boundaries, and input read in place arrives
            // page by page: ask for the run after next while this one is indexed.
            const std::size_t ahead = pos_ + 2 * kRun * 64;
            for (std::size_t at = ahead; at < std::min(size, ahead + kRun * 64); at += 64)
                __builtin_prefetch(buf + at);
            index_blocks(buf + pos_, blocks, index, strings);
        }
        for (std::size_t b = 0; b < blocks; ++b, pos_ += valid) {
            std::uint64_t braces = index[b].braces;
            const std::uint64_t brackets = index[b].brackets;
            std::size_t zero_from = depth_ == 0 ? 0 : 64;  // depth is 0 from this bit on
            while (braces != 0) {
                const std::size_t bit = static_cast<std::size_t>(__builtin_ctzll(braces));
                const std::size_t at = pos_ + bit;
                braces &= braces - 1;
                if (buf[at] == '{') {
                    if (depth_ == 0) {
                        if (const std::uint64_t before =
                                brackets & bits_from(zero_from) & ~bits_from(bit)) {
                            close_array(before);
                            return;
                        }
                        on_event_gap(buf, gap_begin_, at);
                        event_begin_ = at;
                    }
                    ++depth_;
                } else {
                    if (depth_ == 0) {
                        if (const std::uint64_t before =
                                brackets & bits_from(zero_from) & ~bits_from(bit)) {
                            close_array(before);
                            return;
                        }
                        throw SplitError{base_ + at, "'{' or ']' in traceEvents, not '}'"};
                    }
                    if (--depth_ == 0) {
                        out.push_back(Span{static_cast<std::uint32_t>(event_begin_),
                                           static_cast<std::uint32_t>(at + 1 - event_begin_), false,
                                           0, 0});
                        gap_begin_ = at + 1;
                        last_end_abs_ = base_ + at + 1;
                        zero_from = bit + 1;
                    }
                }
            }
            if (depth_ == 0) {
                if (const std::uint64_t rest = brackets & bits_from(zero_from)) {
                    close_array(rest);
                    return;
                }
            }
        }
    }
    prev_in_string_ = strings.in_string;
    prev_escaped_ = strings.escaped;
}

}  // namespace replay
