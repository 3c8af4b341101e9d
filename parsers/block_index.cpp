// The block indexers of block_index.h, one per instruction set, and the pick between them.
#include "block_index.h"

#include <cstdlib>
#include <string_view>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define REPLAY_SPLITTER_SSE2 1
#endif

namespace replay {
namespace {

constexpr std::uint64_t kOddBits = 0xAAAAAAAAAAAAAAAAULL;

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

inline BlockIndex outside_strings(std::uint64_t braces, std::uint64_t brackets,
                                  std::uint64_t quote_prefix, StringState& state) {
    const std::uint64_t in_string = quote_prefix ^ state.in_string;
    state.in_string = static_cast<std::uint64_t>(static_cast<std::int64_t>(in_string) >> 63);
    return {braces & ~in_string, brackets & ~in_string, braces & in_string};
}

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

}  // namespace

const IndexFn index_blocks = pick_index();

}  // namespace replay
