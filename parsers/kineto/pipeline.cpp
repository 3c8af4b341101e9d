// The parse pipeline's workers: reading and splitting under one lock, parsing on every worker,
// committing in input order (pipeline.h).
#include "kineto/pipeline.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "kineto/event_parser.h"
#include "kineto/metadata.h"

namespace replay::kineto {

std::string cut_short_before_events(const ByteSource& source, std::uint64_t json_bytes) {
    return std::string("the ") + to_string(source.compression()) +
           " stream was cut short before any event (" + std::to_string(json_bytes) +
           " bytes of JSON decompressed from the first " + std::to_string(source.raw_offset()) +
           " bytes)";
}

void Pipeline::worker() {
    EventParser parser;
    std::uint64_t at = 0;  // where the chunk in hand starts, for an out-of-memory error
    try {
        while (Slot* slot = acquire()) {
            if (!read(*slot)) {
                release(slot);
                break;
            }
            at = slot->base;
            slot->batch.reset();
            parser.set_output(slot->batch);
            parse(*slot, parser);
            complete(slot);
        }
    } catch (const std::bad_alloc&) {
        fail(std::make_exception_ptr(
            InputError(file_, at,
                       "out of memory while reading the events from here on (the trace model "
                       "of this input does not fit)")));
    } catch (...) {
        fail(std::current_exception());
    }
}

void Pipeline::fail(std::exception_ptr error) {
    std::lock_guard lock(mutex_);
    if (!fatal_) fatal_ = std::move(error);
    aborted_ = true;
    cv_.notify_all();
}

void Pipeline::finish() {
    if (fatal_) std::rethrow_exception(fatal_);
    if (read_error_) std::rethrow_exception(read_error_);
    // In strict mode damaged text is an error too; the first in the input wins.
    if (options_.strict && splitter_.damaged_places() != 0 &&
        (!strict_error_ || splitter_.first_damage_offset() < strict_error_->offset()))
        throw InputError(file_, splitter_.first_damage_offset(),
                         "damaged text up to byte " +
                             std::to_string(splitter_.first_damage_resumed()) +
                             " (--strict: not skipped)");
    if (strict_error_) throw *strict_error_;
    stats_.json_bytes = json_bytes_;
    std::uint64_t peak = carry_.capacity();
    for (const Slot& slot : slots_) peak += slot.bytes();
    stats_.peak_buffer_bytes = peak;
}

Slot* Pipeline::acquire() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return !free_.empty() || aborted_ || reading_done_; });
    if (aborted_ || reading_done_) return nullptr;
    Slot* slot = free_.back();
    free_.pop_back();
    return slot;
}

void Pipeline::release(Slot* slot) {
    std::lock_guard lock(mutex_);
    free_.push_back(slot);
    cv_.notify_all();
}

void Pipeline::complete(Slot* slot) {
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

bool Pipeline::read(Slot& chunk) {
    std::lock_guard lock(read_mutex_);
    if (read_finished_) return false;
    try {
        // At least one tar header (512 bytes), so that the first chunk can tell a tar
        // archive from a broken trace whatever the chunk size. An item longer than half a chunk
        // is carried over into a buffer a chunk longer, and the buffer of a slot that held one
        // shrinks back afterwards: memory stays near the longest item's size, which the splitter
        // bounds.
        const std::size_t chunk_bytes = std::max(options_.chunk_bytes, kTarHeader);
        const std::size_t want =
            carry_.size() * 2 > chunk_bytes ? carry_.size() + chunk_bytes : chunk_bytes;
        const std::size_t bytes = want + simdjson::SIMDJSON_PADDING;
        if (chunk.data.size() < bytes || chunk.data.size() > 2 * bytes)
            chunk.data = std::vector<char>(bytes);
        std::size_t size = carry_.size();
        if (size != 0) std::memcpy(chunk.data.data(), carry_.data(), size);
        bool eof = false;
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
        chunk.size = size;
        chunk.base = splitter_.base_offset();
        chunk.spans.clear();
        std::size_t keep = 0;
        try {
            keep = splitter_.scan(chunk.text, size, eof, chunk.spans);
        } catch (const EventSplitter::SplitError& e) {
            // Nothing but the end of a cut-short stream: not an empty input.
            if (eof && source_.truncated() && e.offset == chunk.base + size)
                throw InputError(file_, source_.raw_offset(),
                                 cut_short_before_events(source_, chunk.base + size));
            if (e.kind == EventSplitter::SplitError::Kind::TooLarge)
                throw InputError(file_, e.offset,
                                 e.expected + " longer than " +
                                     std::to_string(splitter_.max_item_bytes()) +
                                     " bytes starts here (the limit; --max-event-bytes raises it)");
            // Multi-rank traces are often shared as .tar.gz: say so rather than only what
            // byte 0 should have been (a tar header has "ustar" at offset 257).
            const bool tar = e.offset == 0 && chunk.base == 0 && size >= 262 &&
                             std::string_view(chunk.text + 257, 5) == "ustar";
            throw InputError(file_, e.offset,
                             tar ? "a tar archive, not a JSON trace: unpack it and pass one "
                                   "rank's trace"
                                 : "not a JSON trace: expected " + e.expected);
        }
        carry_.assign(chunk.text + keep, chunk.text + size);
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

void Pipeline::finish_reading() {  // read_mutex_ held
    read_finished_ = true;
    std::lock_guard lock(mutex_);
    reading_done_ = true;
    cv_.notify_all();
}

void Pipeline::parse(Slot& chunk, EventParser& parser) {
    Batch& batch = chunk.batch;
    // In strict mode nothing after the first malformed event matters: parse_kineto throws.
    bool skip = skip_parsing_.load(std::memory_order_relaxed);
    for (const Span& span : chunk.spans) {
        if (span.metadata) continue;  // parsed at commit time
        ++batch.events;
        if (skip) continue;
        const char* at = chunk.text + span.begin;
        const std::uint64_t offset = chunk.base + span.begin;
        if (auto bad = parser.event(at, span.length, offset)) {
            batch.malformed_bytes += span.length;
            if (batch.malformed++ == 0) {
                batch.first_malformed_offset = offset;
                batch.first_malformed_reason = std::move(bad->reason);
            }
            if (options_.strict) skip = true;
        }
    }
}

void Pipeline::commit(Slot& chunk) {
    Batch& batch = chunk.batch;
    for (const Span& span : chunk.spans) {
        if (!span.metadata) continue;
        parse_metadata(meta_parser_, trace_.meta,
                       std::string_view(chunk.text + span.key_begin, span.key_length),
                       chunk.text + span.begin, span.length);
    }
    stats_.events += batch.events;
    if (!strict_error_) {
        merger_.merge(batch, InputProgress{chunk.base + chunk.size, chunk.raw_offset,
                                           chunk.raw_size, chunk.last});
        if (batch.malformed) {
            if (stats_.malformed == 0) {
                stats_.first_malformed_offset = batch.first_malformed_offset;
                stats_.first_malformed_reason = batch.first_malformed_reason;
            }
            stats_.malformed += batch.malformed;
            stats_.malformed_bytes += batch.malformed_bytes;
            if (options_.strict) {
                strict_error_.emplace(file_, batch.first_malformed_offset,
                                      "malformed event: " + batch.first_malformed_reason);
                skip_parsing_ = true;
            }
        }
    }
}

}  // namespace replay::kineto
