// What a run of events adds to the trace, built without touching it so that batches can be parsed
// on several threads: the records, the strings they use (interned per batch) and the events per
// category; then merged into the trace strictly in input order, so that the result is the one a
// single thread reading event after event would give.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kineto/categories.h"
#include "kineto/scanner.h"
#include "replay/content_hash.h"
#include "replay/kineto_parser.h"
#include "replay/trace_model.h"

namespace replay::kineto {

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
    void merge_into(std::map<std::string, std::uint64_t>& out) const;

  private:
    static std::string key(bool has_cat, std::string_view cat, std::string_view ph);
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
    std::uint64_t malformed_bytes = 0;
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
        events = events_total = flow_events = malformed = malformed_bytes = 0;
        first_malformed_offset = 0;
        first_malformed_reason.clear();
    }
    std::size_t bytes() const {
        return activities.capacity() * sizeof(GpuActivity) + cpu_ops.capacity() * sizeof(CpuOp) +
               runtime_calls.capacity() * sizeof(RuntimeCall) +
               op_shapes.capacity() * sizeof(OpShapes) + activity_labels.capacity() +
               op_labels.capacity() + call_labels.capacity() + names.bytes();
    }
};

// Where the input stands after a batch's chunk, to size the trace's vectors ahead.
struct InputProgress {
    std::uint64_t json_done = 0;   // decompressed bytes up to the end of the chunk
    std::uint64_t raw_offset = 0;  // the source's raw_offset() and raw_size() after the chunk
    std::uint64_t raw_size = 0;
    bool last = false;  // the input ends with this chunk
};

// Merges batches into the trace, one after the other in input order: batch name ids become the
// trace's, labels become negative trace name ids, and equal op shapes share one entry.
class BatchMerger {
  public:
    BatchMerger(Trace& trace, ParseStats& stats) : trace_(trace), stats_(stats) {}
    void merge(Batch& batch, const InputProgress& progress);
    // The content hash of the activities merged so far (fed as each batch is merged, while its
    // activities are in the cache, on the worker that commits it).
    const ContentHasher& content_hash() const { return hasher_; }

  private:
    Trace& trace_;
    ParseStats& stats_;
    ContentHasher hasher_;
    std::vector<NameId> map_;                // batch name id -> trace name id
    std::vector<std::uint32_t> shapes_map_;  // batch op_shapes index -> trace op_shapes index
};

}  // namespace replay::kineto
