#include "replay/record_match.h"

#include <algorithm>
#include <set>

#include "replay/shorten.h"

namespace replay {
namespace {

bool starts_with(const std::string& s, const char* prefix) {
    return s.rfind(prefix, 0) == 0;
}

// What came back, for a miss's reason: "2 kernel records (a, b) and a Memset (Device)".
std::string came_back(const std::vector<TimedActivity>& records) {
    if (records.empty()) return "no timing record came back for its issue";
    std::set<std::string> names;
    for (const auto& r : records) names.insert(r.name);
    std::string text = "its issue's records were ";
    bool first = true;
    for (const auto& n : names) {
        if (!first) text += ", ";
        text.append("\"").append(shorten(n, 120)).append("\"");
        first = false;
        if (text.size() > 600) {
            text += ", ...";
            break;
        }
    }
    return text;
}

// None of the kernels came back under its recorded name, and the replay ran another
// number of kernels: the library chose another algorithm for this work. The kernel records
// together time the kernels, each taking its recorded share.
void share_out(const std::vector<ExpectedActivity>& expected, const std::vector<std::size_t>& left,
               const std::vector<std::size_t>& free, const std::vector<TimedActivity>& records,
               std::vector<RecordMatch>& out) {
    double total = 0;
    for (std::size_t i : left) total += std::max(0.0, expected[i].recorded_us);
    const std::string why = "its issue ran " + std::to_string(free.size()) + " kernel(s) for the " +
                            std::to_string(left.size()) + " recorded, none under a recorded name (" +
                            came_back(records) + "): their summed time is shared by the recorded durations";
    for (std::size_t i : left) {
        RecordMatch& m = out[i];
        m.shared = free;
        m.share = total > 0 ? std::max(0.0, expected[i].recorded_us) / total
                            : 1.0 / static_cast<double>(left.size());
        m.reason = why;
    }
}

}  // namespace

ActivityKind record_kind(const std::string& name) {
    if (starts_with(name, "Memcpy ")) return ActivityKind::Memcpy;
    if (starts_with(name, "Memset ")) return ActivityKind::Memset;
    if (is_graph_memset_kernel(name)) return ActivityKind::Memset;
    return ActivityKind::Kernel;
}

std::vector<RecordMatch> match_records(const std::vector<ExpectedActivity>& expected,
                                       const std::vector<TimedActivity>& records) {
    std::vector<RecordMatch> out(expected.size());
    std::vector<ActivityKind> kinds;
    kinds.reserve(records.size());
    for (const auto& r : records) kinds.push_back(record_kind(r.name));
    std::vector<bool> used(records.size(), false);

    // Grids compare where both sides know theirs.
    auto same_grid = [&](std::size_t i, std::size_t j) {
        const auto& a = expected[i].grid;
        const auto& b = records[j].grid;
        return a == std::array<std::int32_t, 3>{} || b == std::array<std::int32_t, 3>{} || a == b;
    };
    for (bool by_grid : {true, false})
        for (std::size_t i = 0; i < expected.size(); ++i) {
            if (out[i].record != RecordMatch::kNone) continue;
            for (std::size_t j = 0; j < records.size(); ++j)
                if (!used[j] && kinds[j] == expected[i].kind &&
                    records[j].name == expected[i].name && (!by_grid || same_grid(i, j))) {
                    out[i].record = j;
                    out[i].same_name = true;
                    used[j] = true;
                    break;
                }
        }

    for (ActivityKind kind : {ActivityKind::Kernel, ActivityKind::Memcpy, ActivityKind::Memset}) {
        std::vector<std::size_t> left, free;
        for (std::size_t i = 0; i < expected.size(); ++i)
            if (expected[i].kind == kind && out[i].record == RecordMatch::kNone) left.push_back(i);
        for (std::size_t j = 0; j < records.size(); ++j)
            if (!used[j] && kinds[j] == kind) free.push_back(j);
        if (left.empty()) continue;
        // A copy's name says which memories it joined, and pinned or pageable host memory is the
        // replay's choice: any copy of the issue times a copy. Kernels pair only one to one.
        const bool pair = kind != ActivityKind::Kernel || left.size() == free.size();
        std::size_t expected_of_kind = 0;
        for (const auto& e : expected) expected_of_kind += e.kind == kind;
        if (!pair && !free.empty() && left.size() == expected_of_kind) {
            share_out(expected, left, free, records, out);
            continue;
        }
        for (std::size_t n = 0; n < left.size(); ++n) {
            RecordMatch& m = out[left[n]];
            if (pair && n < free.size()) {
                m.record = free[n];
                used[free[n]] = true;
                continue;
            }
            const char* what = kind == ActivityKind::Kernel ? "kernel" : to_string(kind);
            m.reason = std::string("no ") + what + " record of its own came back (" +
                       came_back(records) + ")";
            if (kind == ActivityKind::Kernel && !free.empty())
                m.reason += ": " + std::to_string(free.size()) + " kernel record(s) of other names for " +
                            std::to_string(left.size()) + " kernel(s), none can be told apart";
        }
    }
    return out;
}

}  // namespace replay
