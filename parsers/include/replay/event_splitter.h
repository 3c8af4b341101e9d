// Cuts complete event objects out of a Chrome-trace JSON document that arrives in chunks.
// Only the `traceEvents` array is split event by event (with 64-byte SIMD-style masks, string
// and escape aware); the small top-level members around it are returned whole as metadata.
// A bare array of events (`[{...}, ...]`) is accepted too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace replay {

struct Span {
    std::uint32_t begin = 0;  // offset in the buffer given to scan()
    std::uint32_t length = 0;
    // Metadata member (`"deviceProperties": [...]`): the key is [key_begin, key_begin+key_length).
    bool metadata = false;
    std::uint32_t key_begin = 0;
    std::uint32_t key_length = 0;
};

class EventSplitter {
  public:
    // Scans buf[0, size). `buf` must be readable up to size + 64 bytes. Complete items are
    // appended to `out` (offsets relative to buf). Returns `keep`: the caller must move
    // buf[keep, size) to the front of the next buffer before the next call; the splitter's own
    // positions are shifted accordingly. With `eof`, everything is scanned.
    // Throws SplitError for a document that is not a JSON object or array of events.
    std::size_t scan(const char* buf, std::size_t size, bool eof, std::vector<Span>& out);

    // Absolute (decompressed) offset of buf[0] for the current call.
    std::uint64_t base_offset() const { return base_; }
    // After the final scan(eof=true): was the document complete?
    bool complete() const { return state_ == State::Done; }
    // Offset just past the last complete item (to report how many bytes a truncation lost).
    std::uint64_t last_complete_end() const { return last_end_abs_; }
    // Stray bytes between events (skipped): count and the first one's absolute offset.
    std::uint64_t stray_bytes() const { return stray_bytes_; }
    std::uint64_t first_stray_offset() const { return first_stray_; }
    bool saw_events_array() const { return saw_events_; }

    struct SplitError {
        std::uint64_t offset;
        std::string expected;
    };

  private:
    enum class State { Start, RootKey, RootColon, RootValue, RootComma, Events, Done };
    bool scan_top(const char* buf, std::size_t size, bool eof, std::vector<Span>& out);
    void scan_events(const char* buf, std::size_t size, bool eof, std::vector<Span>& out);
    void on_event_gap(const char* buf, std::size_t from, std::size_t to);

    State state_ = State::Start;
    bool bare_array_ = false;
    bool saw_events_ = false;
    std::size_t pos_ = 0;        // next byte to look at, relative to the current buffer
    std::size_t key_begin_ = 0;  // current root key (RootColon/RootValue)
    std::size_t key_length_ = 0;
    std::size_t event_begin_ = 0;  // valid while depth_ > 0
    std::size_t gap_begin_ = 0;    // end of the previous event
    std::int64_t depth_ = 0;
    std::uint64_t prev_in_string_ = 0;  // all ones when the last block ended inside a string
    std::uint64_t prev_escaped_ = 0;    // 1 when the next block's first byte is escaped
    std::uint64_t base_ = 0;
    std::uint64_t last_end_abs_ = 0;
    std::uint64_t stray_bytes_ = 0;
    std::uint64_t first_stray_ = 0;
};

}  // namespace replay
