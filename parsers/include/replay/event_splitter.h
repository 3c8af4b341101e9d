// Cuts complete event objects out of a Chrome-trace JSON document that arrives in chunks.
// Only the `traceEvents` array is split event by event (with 64-byte SIMD-style masks, string
// and escape aware); the small top-level members around it are returned whole as metadata.
// A bare array of events (`[{...}, ...]`) is accepted too. Inside the array, a value that is not
// an object is returned as an item of its own (the parser calls it a malformed event), and
// damaged text (a byte lost, added or changed in the middle) is skipped up to the next event
// start and counted: the rule is explained at the top of event_splitter.cpp.
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
    // The longest event, top-level value, run of blanks or stretch of damaged text accepted;
    // anything longer is a SplitError, so that memory stays bounded whatever the input.
    static constexpr std::uint64_t kDefaultMaxItemBytes = std::uint64_t{64} << 20;
    explicit EventSplitter(std::uint64_t max_item_bytes = kDefaultMaxItemBytes)
        : max_item_bytes_(max_item_bytes) {}

    // Scans buf[0, size). `buf` must be readable up to size + 64 bytes. Complete items are
    // appended to `out` (offsets relative to buf). Returns `keep`: the caller must move
    // buf[keep, size) to the front of the next buffer before the next call; the splitter's own
    // positions are shifted accordingly. With `eof`, everything is scanned.
    // Throws SplitError for a document that is not a JSON object or array of events, or for an
    // item beyond the size limit.
    std::size_t scan(const char* buf, std::size_t size, bool eof, std::vector<Span>& out);

    std::uint64_t max_item_bytes() const { return max_item_bytes_; }
    // Absolute (decompressed) offset of buf[0] for the current call.
    std::uint64_t base_offset() const { return base_; }
    // After the final scan(eof=true): was the document complete?
    bool complete() const { return state_ == State::Done; }
    // Offset just past the last complete item (to report how many bytes a truncation lost).
    std::uint64_t last_complete_end() const { return last_end_abs_; }
    // Non-blank bytes after the end of the document (skipped): count and the first one's offset.
    std::uint64_t stray_bytes() const { return stray_bytes_; }
    std::uint64_t first_stray_offset() const { return first_stray_; }
    bool saw_events_array() const { return saw_events_; }
    // Damaged text skipped inside traceEvents: in how many places, how many bytes, where the
    // first place starts and where reading went on after it.
    std::uint64_t damaged_places() const { return damaged_places_; }
    std::uint64_t damaged_bytes() const { return damaged_bytes_; }
    std::uint64_t first_damage_offset() const { return first_damage_; }
    std::uint64_t first_damage_resumed() const { return first_resumed_; }
    // After the final scan: the input ended inside damaged text (not in a clean cut).
    bool ended_in_damage() const { return ended_in_damage_; }

    struct SplitError {
        enum class Kind {
            NotATrace,  // `expected` is what should have been at `offset`
            TooLarge,   // `expected` names what starts at `offset` and is beyond the limit
        };
        std::uint64_t offset;
        std::string expected;
        Kind kind = Kind::NotATrace;
    };

  private:
    enum class State { Start, RootKey, RootColon, RootValue, RootComma, Events, Resync, Done };
    // Each returns false when it needs more input (or, with eof, when the input is done).
    bool scan_top(const char* buf, std::size_t size, bool eof, std::vector<Span>& out);
    bool scan_events(const char* buf, std::size_t size, bool eof, std::vector<Span>& out);
    bool scan_resync(const char* buf, std::size_t size, bool eof);
    // What the text between events, up to `to`, asks for.
    enum class Gap { Clean, Restart, Pause, Resync };
    Gap check_gap(const char* buf, std::size_t to, std::size_t size, bool eof,
                  std::vector<Span>& out);
    void close_events(std::size_t at);
    void start_resync(std::size_t garbage);
    // A top-level syntax error: damage when it follows the events array, else not a trace.
    bool top_error(std::size_t at, const char* expected);
    void record_damage(std::uint64_t begin, std::uint64_t end);
    void finish(const char* buf, std::size_t size);
    void check_blanks(std::size_t from, std::size_t to, std::size_t size);
    [[noreturn]] void too_large(std::uint64_t offset, const char* what) const;

    std::uint64_t max_item_bytes_;
    State state_ = State::Start;
    bool bare_array_ = false;
    bool saw_events_ = false;
    bool events_closed_ = false;  // the ']' of traceEvents was seen (at close_abs_)
    std::size_t pos_ = 0;         // next byte to look at, relative to the current buffer
    std::size_t key_begin_ = 0;   // current root key (RootColon/RootValue)
    std::size_t key_length_ = 0;
    std::size_t event_begin_ = 0;  // valid while depth_ > 0
    std::size_t gap_begin_ = 0;    // end of the previous event
    std::int64_t depth_ = 0;
    std::uint64_t prev_in_string_ = 0;  // all ones when the last block ended inside a string
    std::uint64_t prev_escaped_ = 0;    // 1 when the next block's first byte is escaped
    std::uint64_t base_ = 0;
    std::uint64_t last_end_abs_ = 0;
    std::uint64_t close_abs_ = 0;
    std::uint64_t blanks_since_ = 0;  // absolute start of the run of blanks being skipped
    bool in_blanks_ = false;
    std::uint64_t stray_bytes_ = 0;
    std::uint64_t first_stray_ = 0;
    std::uint64_t damage_begin_ = 0;  // absolute start of the damaged text being skipped
    bool after_document_ = false;     // ... which follows the end of the document
    std::uint64_t pending_stray_ =
        0;  // non-blank bytes after the end, stray unless an event follows
    std::uint64_t first_pending_stray_ = 0;
    std::uint64_t damaged_places_ = 0;
    std::uint64_t damaged_bytes_ = 0;
    std::uint64_t first_damage_ = 0;
    std::uint64_t first_resumed_ = 0;
    bool ended_in_damage_ = false;
};

}  // namespace replay
