// The recorded GPU activities' content hash, which archived reports are matched by (`regress
// --baseline DIR`): FNV-1a over the text "name:dur:stream;" per activity, in trace order, the text
// so far replaced by its own hash each time it grows past 1 MiB. The parser feeds it batch by
// batch as it commits them, so that nothing after the parse has to walk the activities again.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "replay/id_map.h"
#include "replay/trace_model.h"

namespace replay {

// FNV-1a of `text`, as 16 hex digits.
std::string hash_hex(std::string_view text);

// The hash of activities fed in trace order, in as many pieces as one likes.
class ContentHasher {
  public:
    // Feeds trace.activities[first, last) (their names looked up in trace.names).
    void add(const Trace& trace, std::size_t first, std::size_t last);
    // The hash of what was fed so far.
    std::string hex() const;
    // The fed activities' counts and times per kind (Trace::activity_totals() of them).
    const ActivityTotals& totals() const { return totals_; }

  private:
    // FNV-1a over a text that repeats (a kernel's name, once per launch), fed at the cost of a
    // multiply-add: see content_hash.cpp. Per name: P^n, 0 until first fed; per (name << 8 | low
    // byte of the state): the term the name adds.
    std::uint64_t feed_name(std::uint64_t h, NameId id, std::string_view text);
    std::vector<std::uint64_t> power_;
    IdMap<std::uint64_t> add_{1024};

    std::uint64_t state_ = 1469598103934665603ULL;  // FNV-1a's offset basis
    std::size_t length_ = 0;                        // bytes of text since the last roll-over
    ActivityTotals totals_;
};

// Content hash of a whole trace's activities (ContentHasher over all of them): the same for a
// trace and its compressed copies. `totals`, when given, gets the activities' counts and times per
// kind from the same pass.
std::string trace_content_hash(const Trace& trace, ActivityTotals* totals = nullptr);

}  // namespace replay
