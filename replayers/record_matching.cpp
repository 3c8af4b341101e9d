#include "record_matching.h"

#include <algorithm>

namespace replay::detail {

std::map<std::uint64_t, StepRecords> records_by_step(const std::vector<TimedActivity>& records) {
    std::vector<const TimedActivity*> tagged;
    for (const auto& r : records)
        if (r.tag != 0) tagged.push_back(&r);
    std::stable_sort(tagged.begin(), tagged.end(), [](const auto* a, const auto* b) {
        return a->start_ns < b->start_ns;
    });
    std::map<std::uint64_t, StepRecords> out;
    for (const auto* r : tagged) {
        StepRecords& s = out[r->tag];
        if (r->warm_read) {
            s.warm_reads.push_back(r->name);
            continue;
        }
        s.work_by_lane[lane_of(*r)].push_back(r->name);
    }
    return out;
}

namespace {

// Whether issue `i` finds its names at records [r, r + names): nullptr names never match.
bool fits(const std::vector<ExpectedIssue>& issues, std::size_t i,
          const std::vector<TimedActivity*>& records, std::size_t r) {
    if (i >= issues.size() || issues[i].names == nullptr) return false;
    const auto& names = *issues[i].names;
    if (records.size() - std::min(r, records.size()) < names.size()) return false;
    for (std::size_t k = 0; k < names.size(); ++k)
        if (records[r + k]->name != names[k]) return false;
    return true;
}

// Resuming at (i, r) needs issue i and the one after it (or the end of both) to fit: one name
// alone recurs too often on a stream (elementwise kernels) to say where we are.
bool resumes(const std::vector<ExpectedIssue>& issues, std::size_t i,
             const std::vector<TimedActivity*>& records, std::size_t r) {
    if (!fits(issues, i, records, r)) return false;
    const std::size_t next = r + issues[i].names->size();
    if (i + 1 == issues.size()) return true;
    return fits(issues, i + 1, records, next);
}

std::string describe(const ExpectedIssue& issue, const std::vector<TimedActivity*>& records,
                     std::size_t r) {
    const std::string what = std::string(issue.warm_read ? "the warm-up reads of step " : "step ") +
                             std::to_string(issue.tag);
    if (issue.names == nullptr)
        return what + " failed part way: what it left on the stream is unknown";
    const auto& names = *issue.names;
    if (records.size() - std::min(r, records.size()) < names.size())
        return what + " expected " + std::to_string(names.size()) + " records, " +
               std::to_string(records.size() - std::min(r, records.size())) + " were left";
    for (std::size_t k = 0; k < names.size(); ++k)
        if (records[r + k]->name != names[k])
            return what + " expected '" + names[k] + "', the stream ran '" + records[r + k]->name +
                   "'";
    return what + " did not fit";
}

}  // namespace

StreamMatch match_in_order(const std::vector<ExpectedIssue>& issues,
                           const std::vector<TimedActivity*>& records, std::size_t window) {
    StreamMatch m;
    std::size_t i = 0, r = 0;
    while (i < issues.size()) {
        if (fits(issues, i, records, r)) {
            const std::size_t count = issues[i].names->size();
            for (std::size_t k = 0; k < count; ++k, ++r) {
                records[r]->tag = issues[i].tag;
                records[r]->warm_read = issues[i].warm_read;
            }
            m.tied += count;
            ++i;
            continue;
        }
        if (m.why.empty()) m.why = describe(issues[i], records, r);
        // The nearest resumption: fewest issues plus records skipped, issues first.
        bool found = false;
        for (std::size_t d = 1; d <= window && !found; ++d)
            for (std::size_t skip_issues = 0; skip_issues <= d && !found; ++skip_issues) {
                const std::size_t ni = i + skip_issues, nr = r + (d - skip_issues);
                if (ni > issues.size() || nr > records.size()) continue;
                if (ni < issues.size() && !resumes(issues, ni, records, nr)) continue;
                if (ni == issues.size() && nr != records.size()) continue;
                for (std::size_t k = i; k < ni; ++k) m.unmatched_issues.push_back(k);
                i = ni;
                r = nr;
                found = true;
            }
        if (!found) {
            for (std::size_t k = i; k < issues.size(); ++k) m.unmatched_issues.push_back(k);
            i = issues.size();
        }
    }
    if (r < records.size() && m.why.empty())
        m.why = std::to_string(records.size() - r) +
                " records after the last issue matched none: '" + records[r]->name + "' first";
    return m;
}

}  // namespace replay::detail
