// Tying timed records to the sequential driver's steps (internal to replayers/). A backend times
// the Timed phase without correlation ids where that is cheaper (CUPTI): its records come back
// untagged, each stream's in the order the GPU ran them. Each issue on a stream is expected to
// produce the records (by kernel name) that the same issue produced, tagged, in the untimed pass;
// matching walks both in order and stops at the first disagreement, so that a record is either
// tied to the issue that made it or to none: never to a neighbour.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "replay/backend.h"

namespace replay::detail {

// The records one step produced when it was tagged: its warm-up reads' and its work's kernel
// names, each in start order.
struct StepRecords {
    std::vector<std::string> warm_reads;
    std::vector<std::string> work;
};
// By tag, from tagged records (untagged ones are left out).
std::map<std::uint64_t, StepRecords> records_by_step(const std::vector<TimedActivity>& records);

// One issue on a stream, in the order the driver made them.
struct ExpectedIssue {
    std::uint64_t tag = 0;
    bool warm_read = false;
    // The names it should produce; nullptr: unknown (its issue failed part way), so nothing after
    // it on the stream can be matched either.
    const std::vector<std::string>* names = nullptr;
};

struct StreamMatch {
    std::size_t issues = 0;   // issues [0, issues) got their records
    std::size_t records = 0;  // records [0, records) were tied to them
    std::string why;          // why matching stopped before the last issue or record
};

// Ties `records` (one stream's, in start order) to `issues`, setting tag and warm_read of those it
// ties.
StreamMatch match_in_order(const std::vector<ExpectedIssue>& issues,
                           const std::vector<TimedActivity*>& records);

}  // namespace replay::detail
