// Kineto (PyTorch profiler) Chrome-trace reader: every schema variant from 2021 on, plain, .gz or
// .zst, streamed in bounded memory on several threads (each reads, splits and parses chunks in
// turn; batches are committed in input order, so the result never depends on the thread count).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "replay/source.h"
#include "replay/trace_model.h"

namespace replay {

struct ParseOptions {
    // A malformed event or damaged text becomes an InputError instead of a skipped count.
    bool strict = false;
    // Called now and then with (raw bytes consumed, raw size or 0 when unknown).
    std::function<void(std::uint64_t, std::uint64_t)> progress;
    std::size_t chunk_bytes = 4u << 20;
    // Parser threads; 0: one per CPU this process may run on, from 2 up to kMaxParseThreads.
    unsigned threads = 0;
    // The longest event (or string in one, top-level value, run of blanks, stretch of damaged
    // text) read; a longer one is an InputError, so that memory stays bounded whatever the
    // input. At most kMaxEventBytesLimit (larger values count as that).
    std::uint64_t max_event_bytes = std::uint64_t{64} << 20;
};

inline constexpr std::uint64_t kMaxEventBytesLimit = std::uint64_t{1} << 30;

inline constexpr unsigned kMaxParseThreads = 4;

// The thread count a parse with these options uses.
unsigned parse_threads(const ParseOptions& options);

// Named import statistics, Perfetto style: what was read, skipped and why.
struct ParseStats {
    std::uint64_t raw_bytes = 0;        // bytes of the file (compressed for .gz/.zst)
    std::uint64_t json_bytes = 0;       // decompressed JSON bytes
    std::uint64_t events = 0;           // complete event objects in traceEvents
    std::uint64_t malformed = 0;        // events skipped (not objects, or unreadable members)
    std::uint64_t malformed_bytes = 0;  // their text
    std::uint64_t first_malformed_offset = 0;
    std::string first_malformed_reason;
    bool truncated = false;                  // the input ends early (not in damaged text)
    std::uint64_t truncated_lost_bytes = 0;  // decompressed bytes after the last complete event
    // Damaged text inside traceEvents (bytes lost, added or changed in the middle), skipped up to
    // the next event start: in how many places, how many bytes, where the first place starts and
    // where reading went on after it.
    std::uint64_t damaged_places = 0;
    std::uint64_t damaged_bytes = 0;
    std::uint64_t first_damage_offset = 0;
    std::uint64_t first_damage_resumed = 0;
    std::uint64_t stray_bytes = 0;  // non-blank bytes after the end of the document
    std::uint64_t first_stray_offset = 0;
    std::uint64_t peak_buffer_bytes = 0;  // parser-owned memory (chunks), not the model
    Compression compression = Compression::None;
    std::map<std::string, std::uint64_t> by_category;  // "cat/ph" -> events
};

struct ParseResult {
    Trace trace;
    ParseStats stats;
    std::vector<std::string> warnings;  // one line each, ready to print
    // trace_content_hash(trace) and its activity totals, worked out as the batches were merged.
    std::string content_hash;
    ActivityTotals activity_totals;
};

// Throws InputError (file + byte offset) for input that is not a trace at all.
ParseResult parse_kineto(const std::string& path, const ParseOptions& options = {});

// The same for a JSON document already in memory (plain JSON text, not compressed): the result is
// what parse_kineto() gives for a file holding these bytes, with `name` standing for the file.
ParseResult parse_kineto_buffer(std::string_view json, const ParseOptions& options = {},
                                const std::string& name = "<memory>");

// Parses "123", "123.4567", "1.2e3" microseconds into nanoseconds without going through a double
// where the text allows it. Returns false for text that is not a number.
bool micros_to_nanos(std::string_view text, std::int64_t& out);

}  // namespace replay
