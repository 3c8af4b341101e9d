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
        (r->warm_read ? s.warm_reads : s.work).push_back(r->name);
    }
    return out;
}

StreamMatch match_in_order(const std::vector<ExpectedIssue>& issues,
                           const std::vector<TimedActivity*>& records) {
    StreamMatch m;
    for (; m.issues < issues.size(); ++m.issues) {
        const ExpectedIssue& issue = issues[m.issues];
        const std::string what = std::string(issue.warm_read ? "the warm-up reads of step " : "step ") +
                                 std::to_string(issue.tag);
        if (issue.names == nullptr) {
            m.why = what + " failed part way: what it left on the stream is unknown";
            return m;
        }
        const auto& names = *issue.names;
        if (records.size() - m.records < names.size()) {
            m.why = what + " expected " + std::to_string(names.size()) + " records, " +
                    std::to_string(records.size() - m.records) + " were left";
            return m;
        }
        for (std::size_t k = 0; k < names.size(); ++k)
            if (records[m.records + k]->name != names[k]) {
                m.why = what + " expected '" + names[k] + "', the stream ran '" +
                        records[m.records + k]->name + "'";
                return m;
            }
        for (std::size_t k = 0; k < names.size(); ++k) {
            records[m.records + k]->tag = issue.tag;
            records[m.records + k]->warm_read = issue.warm_read;
        }
        m.records += names.size();
    }
    if (m.records < records.size())
        m.why = std::to_string(records.size() - m.records) +
                " records after the last issue matched none: '" + records[m.records]->name +
                "' first";
    return m;
}

}  // namespace replay::detail
