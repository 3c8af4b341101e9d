#include "replay/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace replay {

DurationStats summarize(std::vector<double> samples) {
    DurationStats s;
    s.count = samples.size();
    if (samples.empty()) return s;
    std::sort(samples.begin(), samples.end());
    s.min = samples.front();
    s.max = samples.back();
    s.sum = std::accumulate(samples.begin(), samples.end(), 0.0);
    s.mean = s.sum / static_cast<double>(s.count);
    s.median = stats::percentile(samples, 0.5);
    s.p95 = stats::percentile(samples, 0.95);
    s.p99 = stats::percentile(samples, 0.99);
    double var = 0;
    for (double x : samples) var += (x - s.mean) * (x - s.mean);
    s.stddev = s.count > 1 ? std::sqrt(var / static_cast<double>(s.count - 1)) : 0.0;
    return s;
}

namespace stats {

double median(std::vector<double> v) {
    if (v.empty()) return NAN;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    // Halves first: the same result as 0.5 * (a + b) for any two durations, without the
    // overflow of a + b near the largest double.
    return n % 2 ? v[n / 2] : 0.5 * v[n / 2 - 1] + 0.5 * v[n / 2];
}

double percentile(const std::vector<double>& sorted, double p) {
    if (sorted.empty()) return 0;
    const double rank = p * static_cast<double>(sorted.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(rank));
    const auto hi = std::min(lo + 1, sorted.size() - 1);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - static_cast<double>(lo));
}

std::vector<ValueGroup> two_groups(std::vector<double> v, double least_gap) {
    constexpr std::size_t kLeast = 8;
    constexpr double kLeastShare = 0.15, kLeastD = 4.0, kLeastRatio = 1.10;
    // A side's spread is taken as at least 1% of its mean: timers tick in steps, and a side of
    // equal values would otherwise make any split infinitely separated.
    constexpr double kSpreadFloor = 0.01;
    const std::size_t n = v.size();
    if (n < kLeast) return {};
    std::sort(v.begin(), v.end());
    const auto side = std::max<std::size_t>(
        2, static_cast<std::size_t>(std::ceil(kLeastShare * static_cast<double>(n))));
    if (2 * side > n) return {};
    // Prefix sums of the values and their squares, shifted by the median against cancellation.
    const double shift = v[n / 2];
    std::vector<double> sum(n + 1, 0.0), squares(n + 1, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
        sum[i + 1] = sum[i] + (v[i] - shift);
        squares[i + 1] = squares[i] + (v[i] - shift) * (v[i] - shift);
    }
    auto moments = [&](std::size_t from, std::size_t to) {  // mean and variance of v[from, to)
        const double k = static_cast<double>(to - from);
        const double mean = (sum[to] - sum[from]) / k;
        const double var = std::max(0.0, (squares[to] - squares[from]) / k - mean * mean);
        return std::pair{mean + shift, var};
    };
    double best_d = 0;
    std::size_t best = 0;
    for (std::size_t i = side; i + side <= n; ++i) {
        const auto [m0, v0] = moments(0, i);
        const auto [m1, v1] = moments(i, n);
        const double f0 = kSpreadFloor * std::fabs(m0), f1 = kSpreadFloor * std::fabs(m1);
        const double spread = std::max(v0, f0 * f0) + std::max(v1, f1 * f1);
        if (!(spread > 0)) continue;
        const double d = std::sqrt(2.0) * (m1 - m0) / std::sqrt(spread);
        if (d > best_d) best_d = d, best = i;
    }
    if (best == 0 || best_d < kLeastD) return {};
    auto middle = [&](std::size_t from, std::size_t to) {
        const std::size_t k = to - from;
        return k % 2 ? v[from + k / 2] : 0.5 * v[from + k / 2 - 1] + 0.5 * v[from + k / 2];
    };
    const ValueGroup low{middle(0, best), best}, high{middle(best, n), n - best};
    if (!(low.median > 0) || high.median < kLeastRatio * low.median ||
        high.median - low.median < least_gap)
        return {};
    return {low, high};
}

double median_of_counted(std::vector<std::pair<double, std::int64_t>> v) {
    std::erase_if(v, [](const auto& p) { return p.second <= 0; });
    if (v.empty()) return NAN;
    std::sort(v.begin(), v.end());
    std::int64_t n = 0;
    for (const auto& p : v) n += p.second;
    auto at_rank = [&](std::int64_t rank) {
        for (const auto& [value, count] : v) {
            if (rank < count) return value;
            rank -= count;
        }
        return v.back().first;
    };
    return 0.5 * at_rank((n - 1) / 2) + 0.5 * at_rank(n / 2);
}

double robust_relative_spread(const std::vector<double>& a, const std::vector<double>& b) {
    std::vector<double> deviations;
    for (const auto* side : {&a, &b}) {
        if (side->size() < 2) continue;
        const double m = median(*side);
        if (!(m > 0)) continue;
        for (double x : *side) deviations.push_back((x - m) / m);
    }
    if (deviations.empty()) return 0;
    for (double& d : deviations) d = std::fabs(d);
    return 1.4826 * median(std::move(deviations));
}

namespace {

// Null distribution of U for sizes m, n without ties: the coefficients of the Gaussian binomial
// [m+n choose m]_q; c[u] / C(m+n, m) = P(U = u). Exact in doubles while C(m+n, m) < 2^53.
std::vector<double> u_distribution(std::size_t m, std::size_t n) {
    std::vector<double> c(m * n + 1, 0.0);
    c[0] = 1;
    for (std::size_t i = 1; i <= m; ++i) {
        const std::size_t s = n + i;  // multiply by (1 - q^(n+i))
        for (std::size_t u = c.size(); u-- > s;) c[u] -= c[u - s];
        for (std::size_t u = i; u < c.size(); ++u) c[u] += c[u - i];  // divide by (1 - q^i)
    }
    return c;
}

}  // namespace

RankTest mann_whitney(const std::vector<double>& a, const std::vector<double>& b) {
    RankTest r;
    const std::size_t n1 = a.size(), n2 = b.size(), n = n1 + n2;
    if (n1 == 0 || n2 == 0) return r;
    std::vector<std::pair<double, bool>> all;  // value, from a
    all.reserve(n);
    for (double x : a) all.emplace_back(x, true);
    for (double x : b) all.emplace_back(x, false);
    std::sort(all.begin(), all.end(),
              [](const auto& x, const auto& y) { return x.first < y.first; });
    double rank_sum_a = 0, tie_term = 0;
    bool ties = false;
    for (std::size_t i = 0; i < n;) {
        std::size_t j = i;
        while (j < n && all[j].first == all[i].first) ++j;
        const double t = static_cast<double>(j - i);
        const double avg_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2.0;
        for (std::size_t q = i; q < j; ++q)
            if (all[q].second) rank_sum_a += avg_rank;
        if (t > 1) {
            ties = true;
            tie_term += t * t * t - t;
        }
        i = j;
    }
    const double m1 = static_cast<double>(n1), m2 = static_cast<double>(n2),
                 N = static_cast<double>(n);
    r.u = rank_sum_a - m1 * (m1 + 1) / 2.0;
    if (!ties && n <= 40) {
        const auto c = u_distribution(n1, n2);
        const double total = std::accumulate(c.begin(), c.end(), 0.0);
        const auto u = static_cast<std::size_t>(std::llround(r.u));
        double lower = 0, upper = 0;
        for (std::size_t v = 0; v < c.size(); ++v) {
            if (v <= u) lower += c[v];
            if (v >= u) upper += c[v];
        }
        r.p = std::min(1.0, 2.0 * std::min(lower, upper) / total);
        r.exact = true;
        return r;
    }
    const double mu = m1 * m2 / 2.0;
    const double var = m1 * m2 / 12.0 * ((N + 1) - tie_term / (N * (N - 1)));
    if (!(var > 0)) {  // every value equal
        r.z = 0;
        r.p = 1;
        return r;
    }
    r.z = std::max(0.0, std::fabs(r.u - mu) - 0.5) / std::sqrt(var);
    r.p = std::min(1.0, std::erfc(r.z / std::sqrt(2.0)));
    if (r.u < mu) r.z = -r.z;
    return r;
}

}  // namespace stats
}  // namespace replay
