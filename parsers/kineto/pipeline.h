// The parse pipeline: reads, splits, parses and commits chunks of the input on symmetric worker
// threads, in bounded memory, with batches committed strictly in input order.
#pragma once

#include <simdjson.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kineto/batch.h"
#include "replay/event_splitter.h"
#include "replay/kineto_parser.h"
#include "replay/source.h"

namespace replay::kineto {

class EventParser;

// The error for a compressed stream that ends before its first event (it was cut short, which an
// "empty input" or "no traceEvents" would hide), at its compressed offset.
std::string cut_short_before_events(const ByteSource& source, std::uint64_t json_bytes);

// A buffer of input: `size` bytes plus simdjson::SIMDJSON_PADDING readable ones, the items the
// splitter cut out of it, and what its events add to the trace. Slots are recycled.
struct Slot {
    std::vector<char> data;
    const char* text = nullptr;  // data.data()
    std::size_t size = 0;
    std::uint64_t base = 0;  // absolute offset of data[0]
    std::uint64_t seq = 0;   // position in the input: batches are committed in this order
    std::vector<Span> spans;
    std::uint64_t raw_offset =
        0;  // the source's raw_offset() and raw_size() after reading this chunk
    std::uint64_t raw_size = 0;
    bool last = false;  // the input ends with this chunk
    Batch batch;
    std::size_t bytes() const {
        return data.capacity() + spans.capacity() * sizeof(Span) + batch.bytes();
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
          splitter_(std::min(options.max_event_bytes, kMaxEventBytesLimit)),
          slots_(workers + 1),
          merger_(trace, stats) {
        for (auto& slot : slots_) free_.push_back(&slot);
    }

    // Runs on each worker thread (the caller's included) until the input is done or has failed.
    void worker();

    // After every worker is done: the first error wins as before (a fatal one, then input and
    // splitting errors, then a strict-mode malformed event).
    void finish();

    const EventSplitter& splitter() const { return splitter_; }
    const ContentHasher& content_hash() const { return merger_.content_hash(); }

  private:
    // A free slot, once one is free; nullptr when the parse is over or aborted.
    Slot* acquire();
    void release(Slot* slot);
    // Marks the slot's batch as parsed and commits every batch that is now next in input order.
    void complete(Slot* slot);
    // Fills `slot` with the carried-over bytes and the next input, and splits it. False at the
    // end of the input or after an error (kept for finish()).
    bool read(Slot& chunk);
    static constexpr std::size_t kTarHeader = 512;
    void finish_reading();  // read_mutex_ held
    // Ends the parse with `error` (the first one wins).
    void fail(std::exception_ptr error);
    void parse(Slot& chunk, EventParser& parser);
    // Adds a slot's batch (and its metadata members) to the trace; mutex_ held, in input order.
    void commit(Slot& chunk);

    ByteSource& source_;
    const ParseOptions& options_;
    Trace& trace_;
    ParseStats& stats_;
    const std::string file_;

    // Reading and splitting (read_mutex_).
    std::mutex read_mutex_;
    EventSplitter splitter_;
    std::vector<char> carry_;  // an unfinished item, moved to the front of the next chunk
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
    simdjson::ondemand::parser meta_parser_;
    BatchMerger merger_;
};

}  // namespace replay::kineto
