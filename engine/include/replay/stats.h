// Sample statistics, in one place for every figure the tool reports or tests: summaries of
// durations (recorded and replayed), medians, percentiles, the robust run-to-run spread and the
// Mann-Whitney rank test that `regress`/`compare` use.
#pragma once

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace replay {

struct DurationStats {
    std::size_t count = 0;
    double min = 0, median = 0, mean = 0, max = 0, sum = 0, stddev = 0, p95 = 0, p99 = 0;
};
// Statistics of a sample (any unit); the input is copied and sorted. An empty sample gives
// count 0 and zeros.
DurationStats summarize(std::vector<double> samples);

// One of two groups a sample falls into (stats::two_groups()).
struct ValueGroup {
    double median = 0;
    std::size_t count = 0;
};

namespace stats {

// The middle value, or the mean of the two middle ones; NaN for an empty sample.
double median(std::vector<double> values);
// Linear interpolation between the closest ranks of an ascending sample (p in [0, 1]); 0 for an
// empty one.
double percentile(const std::vector<double>& sorted, double p);
// Median of a multiset given as (value, multiplicity) pairs, without expanding it; pairs with a
// multiplicity of 0 or less are left out. NaN when nothing is left.
double median_of_counted(std::vector<std::pair<double, std::int64_t>> values);

// 1.4826 x MAD of the relative deviations of `a` from median(a) and of `b` from median(b), pooled,
// as a fraction (0.02 = 2%): the run-to-run noise of one sample, not shifted by a change between
// the two sides. A side with fewer than 2 samples contributes nothing; 0 when neither has 2.
double robust_relative_spread(const std::vector<double>& a, const std::vector<double>& b);

// The sample split into two well-separated groups, lower first; empty when it does not split so.
// A split counts when each side holds at least 15% of the values (and 2), Ashman's D of the two
// sides is at least 4 (a uniform or normal sample gives at most ~3.5) and their medians are 10%
// apart, and by at least `least_gap` (in the values' unit). Samples of fewer than 8 values never
// split. Why it matters: a kernel whose instances ran at two speeds (on the H200 a small GEMM
// moves by up to 45% with where its input lies in memory) has a median that tells which group
// was larger, not how fast the kernel is.
std::vector<ValueGroup> two_groups(std::vector<double> values, double least_gap = 0);
// two_groups()'s least_gap for kernel durations in microseconds: GPU timestamps come in 32 ns
// steps (Hopper), so a 1 us kernel recorded at 0.896 and 1.024 us is one speed, not two.
inline constexpr double kTwoSpeedsLeastGapUs = 0.25;

struct RankTest {
    double u = NAN;  // U of the first sample
    double z = NAN;  // normal approximation (NaN when exact)
    double p = NAN;  // two-sided
    bool exact = false;
};
// Two-sided Mann-Whitney U test. Exact for tie-free samples with n1 + n2 <= 40; otherwise the
// normal approximation with tie and continuity correction.
RankTest mann_whitney(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace stats
}  // namespace replay
