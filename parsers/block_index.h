// The event splitter's block indexer: the structural characters of 64-byte blocks of JSON text,
// told apart from the same characters inside strings (escape aware, with the state carried from
// block to block), 64 bytes a step with SSE2, AVX2 or AVX-512.
#pragma once

#include <cstddef>
#include <cstdint>

namespace replay {

// Carry between 64-byte blocks: inside a string, and whether the next byte is escaped.
struct StringState {
    std::uint64_t in_string = 0;  // all ones when the last block ended inside a string
    std::uint64_t escaped = 0;    // 1 when the next block's first byte is escaped
};

// One block's structural characters, one bit per byte.
struct BlockIndex {
    std::uint64_t braces;         // '{' and '}' outside strings
    std::uint64_t brackets;       // ']' outside strings
    std::uint64_t string_braces;  // '{' and '}' inside strings (where damage may show)
};

// Indexes `blocks` full 64-byte blocks of `buf`. One function per instruction set, picked once at
// run time (REPLAY_SPLITTER_ISA=generic or avx2 forces one, for tests); it is called for runs of
// blocks, so the indirect call costs nothing per block.
using IndexFn = void (*)(const char* buf, std::size_t blocks, BlockIndex* out, StringState& state);
extern const IndexFn index_blocks;

}  // namespace replay
