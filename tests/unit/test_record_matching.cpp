// Tying untagged timed records to the sequential driver's issues (replayers/record_matching): a
// record goes to the issue that made it or to none, and one odd issue costs only its own timing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../../replayers/record_matching.h"
#include "../../replayers/step_overlap.h"

namespace {

using replay::TimedActivity;
using replay::detail::ExpectedIssue;
using replay::detail::match_in_order;

struct Stream {
    std::vector<std::vector<std::string>> names;  // per issue
    std::vector<TimedActivity> records;

    std::vector<ExpectedIssue> issues() const {
        std::vector<ExpectedIssue> out;
        for (std::size_t i = 0; i < names.size(); ++i) out.push_back({i + 1, false, &names[i]});
        return out;
    }
    std::vector<TimedActivity*> pointers() {
        std::vector<TimedActivity*> out;
        for (auto& r : records) out.push_back(&r);
        return out;
    }
};

Stream stream(std::vector<std::vector<std::string>> names, const std::vector<std::string>& ran) {
    Stream s{std::move(names), {}};
    for (std::size_t i = 0; i < ran.size(); ++i)
        s.records.push_back({0, ran[i], static_cast<std::int64_t>(i), static_cast<std::int64_t>(i) + 1, 0,
                             true, false});
    return s;
}

std::vector<std::uint64_t> tags(const Stream& s) {
    std::vector<std::uint64_t> out;
    for (const auto& r : s.records) out.push_back(r.tag);
    return out;
}

TEST(RecordMatching, EveryIssueFindsItsRecordsInOrder) {
    auto s = stream({{"gemm"}, {"memset", "add"}, {"softmax"}}, {"gemm", "memset", "add", "softmax"});
    const auto m = match_in_order(s.issues(), s.pointers());
    EXPECT_TRUE(m.why.empty()) << m.why;
    EXPECT_EQ(m.tied, 4u);
    EXPECT_TRUE(m.unmatched_issues.empty());
    EXPECT_EQ(tags(s), (std::vector<std::uint64_t>{1, 2, 2, 3}));
}

TEST(RecordMatching, AnIssueThatRanNothingThisTimeCostsOnlyItself) {
    // The untimed pass saw a library's memset before the attention kernel; the timed one did not.
    auto s = stream({{"gemm"}, {"memset"}, {"attention"}, {"add"}, {"gemm"}},
                    {"gemm", "attention", "add", "gemm"});
    const auto m = match_in_order(s.issues(), s.pointers());
    EXPECT_NE(m.why.find("step 2 expected 'memset', the stream ran 'attention'"), std::string::npos)
        << m.why;
    EXPECT_EQ(m.unmatched_issues, (std::vector<std::size_t>{1}));
    EXPECT_EQ(m.tied, 4u);
    EXPECT_EQ(tags(s), (std::vector<std::uint64_t>{1, 3, 4, 5}));
}

TEST(RecordMatching, AnUnexpectedRecordIsTiedToNoneAndTheRestGoOn) {
    auto s = stream({{"gemm"}, {"add"}, {"mul"}}, {"gemm", "Memset (Device)", "add", "mul"});
    const auto m = match_in_order(s.issues(), s.pointers());
    EXPECT_FALSE(m.why.empty());
    EXPECT_TRUE(m.unmatched_issues.empty());
    EXPECT_EQ(m.tied, 3u);
    EXPECT_EQ(tags(s), (std::vector<std::uint64_t>{1, 0, 2, 3}));
}

TEST(RecordMatching, ANameThatRecursIsNotEnoughToResume) {
    // Issue 2 ran 'other' instead of 'add'; issue 3 is an 'add' too. Resuming at record 'add' as
    // issue 2 would tie issue 3's record to issue 2: a neighbour. The pair rule resumes at issue 3.
    auto s = stream({{"gemm"}, {"add"}, {"add"}, {"mul"}}, {"gemm", "other", "add", "mul"});
    const auto m = match_in_order(s.issues(), s.pointers());
    EXPECT_EQ(m.unmatched_issues, (std::vector<std::size_t>{1}));
    EXPECT_EQ(tags(s), (std::vector<std::uint64_t>{1, 0, 3, 4}));
}

TEST(RecordMatching, AnIssueThatFailedPartWayIsSkippedWhenTheStreamResumes) {
    Stream s = stream({{"gemm"}, {}, {"add"}, {"mul"}}, {"gemm", "half", "add", "mul"});
    auto issues = s.issues();
    issues[1].names = nullptr;  // unknown: its issue failed part way
    const auto m = match_in_order(issues, s.pointers());
    EXPECT_NE(m.why.find("failed part way"), std::string::npos) << m.why;
    EXPECT_EQ(m.unmatched_issues, (std::vector<std::size_t>{1}));
    EXPECT_EQ(tags(s), (std::vector<std::uint64_t>{1, 0, 3, 4}));
}

TEST(RecordMatching, NothingWithinTheWindowLeavesTheRestUntimed) {
    auto s = stream({{"a"}, {"b"}, {"c"}}, {"x", "y", "z"});
    const auto m = match_in_order(s.issues(), s.pointers(), 2);
    EXPECT_EQ(m.unmatched_issues, (std::vector<std::size_t>{0, 1, 2}));
    EXPECT_EQ(m.tied, 0u);
    EXPECT_EQ(tags(s), (std::vector<std::uint64_t>{0, 0, 0}));
}

}  // namespace

TEST(StepOverlap, CountsTheTimeTwoOrMoreSpansRun) {
    using replay::detail::overlapped_ns;
    EXPECT_EQ(overlapped_ns({}), 0);
    EXPECT_EQ(overlapped_ns({{0, 10}, {10, 20}}), 0);  // back to back
    EXPECT_EQ(overlapped_ns({{0, 10}, {5, 20}}), 5);
    EXPECT_EQ(overlapped_ns({{0, 100}, {10, 20}, {15, 30}}), 20);  // 10-30 has two or three
    EXPECT_EQ(overlapped_ns({{5, 20}, {0, 10}, {7, 7}}), 5);       // unsorted; an empty span
}

TEST(StepOverlap, TheNoteGivesReplayedAndRecordedOverlapOfTheLastIteration) {
    replay::detail::StepOverlap overlap;
    std::vector<TimedActivity> ran(2);
    ran[0].start_ns = 0, ran[0].end_ns = 4000;
    ran[1].start_ns = 1000, ran[1].end_ns = 5000;
    overlap.add({{0, 2000}, {2000, 4000}}, ran);  // recorded apart, replayed 3 us together
    EXPECT_NE(overlap.note().find("1 op ran"), std::string::npos) << overlap.note();
    EXPECT_NE(overlap.note().find("for 3 us of 5 us busy, recorded 0 us of 4 us"),
              std::string::npos)
        << overlap.note();
    overlap.clear();
    EXPECT_TRUE(overlap.empty());
}
