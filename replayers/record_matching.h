// Tying timed records to the sequential driver's steps (internal to replayers/). A backend times
// the Timed phase without correlation ids where that is cheaper (CUPTI): its records come back
// untagged, each stream's in the order the GPU ran them. Each issue on a stream is expected to
// produce the records (by kernel name) that the same issue produced, tagged, in the untimed pass;
// matching walks both in order. At a disagreement (an issue that ran other kernels this time, a
// library's one-off memset) it resumes at the nearest point where an issue and the one after it
// both find their exact names again: the issues skipped get no records and the records skipped
// tie to nothing, so a record is tied to the issue that made it or to none, never to a neighbour,
// and one odd issue costs its own timing, not the rest of the stream.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "replay/backend.h"

namespace replay::detail {

// Where records run in order: a driver's stream (index, -1), or a library's own stream
// (-1, the timer's id of it; TimedActivity::lane).
using Lane = std::pair<std::int64_t, std::int64_t>;
inline Lane lane_of(const TimedActivity& r) {
    return r.lane < 0 ? Lane{r.stream, -1} : Lane{-1, r.lane};
}

// The records one step produced when it was tagged: its warm-up reads' kernel names in start
// order, and its work's in start order per lane that ran them.
struct StepRecords {
    std::vector<std::string> warm_reads;
    std::map<Lane, std::vector<std::string>> work_by_lane;
    std::size_t work_records() const {
        std::size_t n = 0;
        for (const auto& [lane, names] : work_by_lane) n += names.size();
        return n;
    }
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
    std::vector<std::size_t> unmatched_issues;  // indices of issues that got no records
    std::size_t tied = 0;                       // records tied to an issue
    std::string why;  // the first disagreement (empty when every issue and record matched)
};

// Ties `records` (one stream's, in start order) to `issues`, setting tag and warm_read of those it
// ties. `window` bounds how far (issues plus records skipped) a resumption looks ahead.
StreamMatch match_in_order(const std::vector<ExpectedIssue>& issues,
                           const std::vector<TimedActivity*>& records, std::size_t window = 64);

}  // namespace replay::detail
