// `replay regress` / `replay compare` statistics on reports with known, injected changes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "replay/baseline.h"
#include "replay/regression.h"
#include "replay/regression_printers.h"
#include "replay/report.h"
#include "replay/report_json.h"
#include "replay/source.h"

namespace {

using replay::KernelComparison;
using replay::Regression;
using replay::RegressionOptions;
using replay::Report;
using replay::Tier;
using replay::Verdict;

// Standard normal variates from mt19937_64 (whose output the standard fixes) by Box-Muller, so that
// the samples are the same with every standard library (std::normal_distribution is not).
class Noise {
  public:
    explicit Noise(std::uint64_t seed) : rng_(seed) {}
    double uniform() { return (static_cast<double>(rng_() >> 11) + 0.5) * 0x1.0p-53; }
    double normal() {
        const double u1 = uniform(), u2 = uniform();
        return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
    }

  private:
    std::mt19937_64 rng_;
};

struct Spec {
    std::string id;
    double median_us = 10;
    double sigma = 0.02;  // lognormal noise, relative
    Tier tier = Tier::AtenOp;
    std::size_t count = 10;
};

// 20 stable kernels with 1% to 3% run-to-run noise, medians from 3 us to 600 us.
std::vector<Spec> stable_kernels() {
    std::vector<Spec> specs;
    for (int i = 0; i < 20; ++i) {
        Spec s;
        s.id = "k";
        s.id += std::to_string(i);  // not "k" + ...: GCC 12 -Wrestrict false positive
        s.median_us = 3.0 * std::pow(1.32, i);
        s.sigma = 0.01 + 0.02 * i / 19.0;
        s.tier = i % 4 == 0 ? Tier::Gemm : i % 7 == 3 ? Tier::Copy : Tier::AtenOp;
        s.count = 1 + static_cast<std::size_t>(i) * 3;
        specs.push_back(s);
    }
    return specs;
}

Report make_report(const std::vector<Spec>& specs, std::uint64_t seed, std::size_t samples = 50,
                   const std::vector<std::pair<std::string, double>>& factors = {}) {
    Noise noise(seed);
    Report r;
    r.tool_version = "test";
    r.mode = "unique";
    r.backend = "cuda";
    r.environment = {{"gpu", "NVIDIA H200"}, {"driver", "570.86.15"}, {"cuda", "12.8"},
                     {"cublas", "12.8.3"},   {"libtorch", "2.6.0"},   {"sm_clock_mhz", "1980"}};
    r.inputs = {{"trace", "bloom.json.gz"}, {"trace_hash", "feedfacecafebeef"}};
    for (const auto& s : specs) {
        replay::KernelResult k;
        k.id = s.id;
        k.name = "kernel_" + s.id + "<float, 4>";
        k.kind = s.tier == Tier::Copy ? "memcpy" : "kernel";
        k.tier = s.tier;
        k.outcome = replay::KernelOutcome::Replayed;
        k.count = s.count;
        k.recorded_us = replay::summarize(std::vector<double>(s.count, s.median_us));
        double factor = 1;
        for (const auto& [id, f] : factors)
            if (id == s.id) factor = f;
        for (std::size_t i = 0; i < samples; ++i)
            k.samples_us.push_back(s.median_us * factor * std::exp(s.sigma * noise.normal()));
        r.kernels.push_back(std::move(k));
    }
    replay::finalize_report(r);
    return r;
}

// An empty folder of this name (and this process) under the temp directory.
std::filesystem::path fresh_dir(const std::string& name) {
    const auto dir =
        std::filesystem::temp_directory_path() / (name + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

void write_report(const std::filesystem::path& path, const Report& report) {
    std::ofstream out(path);
    replay::write_report_json(out, report);
}

const KernelComparison& find(const Regression& r, const std::string& id) {
    for (const auto& k : r.kernels)
        if (k.id == id) return k;
    throw std::runtime_error("no kernel " + id);
}

double stats_median(const Report& r, const std::string& id) {
    for (const auto& k : r.kernels)
        if (k.id == id) return replay::stats::median(k.samples_us);
    return NAN;
}

std::vector<std::string> flagged(const Regression& r, Verdict v) {
    std::vector<std::string> ids;
    for (const auto& k : r.kernels)
        if (k.verdict == v) ids.push_back(k.id);
    return ids;
}

// ---- the statistics themselves ----------------------------------------------------------------

TEST(RegressionStats, MannWhitneyExactSmallSamples) {
    // Complete separation, 5 vs 5: the smallest two-sided p there is, 2 / C(10, 5).
    auto t = replay::stats::mann_whitney({1.1, 2.3, 3.5, 4.2, 5.9}, {6.1, 7.2, 8.3, 9.4, 10.5});
    EXPECT_TRUE(t.exact);
    EXPECT_DOUBLE_EQ(t.u, 0);
    EXPECT_NEAR(t.p, 2.0 / 252.0, 1e-12);
    // References by brute-force enumeration of every split (Python, itertools.combinations).
    t = replay::stats::mann_whitney({1.1, 2.3, 6.5, 4.2, 5.9, 12.0},
                                    {3.1, 7.2, 8.3, 9.4, 10.5, 11.0, 0.5});
    EXPECT_TRUE(t.exact);
    EXPECT_DOUBLE_EQ(t.u, 15);
    EXPECT_NEAR(t.p, 0.44522144522144524, 1e-12);
    t = replay::stats::mann_whitney({1.1, 2.3, 6.5, 4.2},
                                    {3.1, 7.2, 8.3, 9.4, 10.5, 11.0, 0.5, 13, 14});
    EXPECT_DOUBLE_EQ(t.u, 6);
    EXPECT_NEAR(t.p, 0.07552447552447553, 1e-12);
    // Symmetric in its arguments.
    auto swapped = replay::stats::mann_whitney({3.1, 7.2, 8.3, 9.4, 10.5, 11.0, 0.5, 13, 14},
                                               {1.1, 2.3, 6.5, 4.2});
    EXPECT_NEAR(swapped.p, t.p, 1e-12);
}

TEST(RegressionStats, MannWhitneyNormalApproximationWithTies) {
    // Reference: U and the tie- and continuity-corrected normal approximation, computed by hand.
    auto t = replay::stats::mann_whitney({1, 2, 2, 3, 3, 3, 4, 5}, {3, 4, 4, 5, 5, 6, 7, 8, 9});
    EXPECT_FALSE(t.exact);
    EXPECT_DOUBLE_EQ(t.u, 7.5);
    EXPECT_NEAR(t.p, 0.006406285296812042, 1e-12);
    // All equal: no evidence at all.
    t = replay::stats::mann_whitney({2, 2, 2, 2, 2}, {2, 2, 2, 2, 2, 2});
    EXPECT_DOUBLE_EQ(t.p, 1);
}

TEST(RegressionStats, MannWhitneyLargeSamplesUseTheNormalApproximation) {
    Noise noise(7);
    std::vector<double> a, b;
    for (int i = 0; i < 50; ++i) a.push_back(10 * std::exp(0.02 * noise.normal()));
    for (int i = 0; i < 50; ++i) b.push_back(10.2 * std::exp(0.02 * noise.normal()));
    const auto t = replay::stats::mann_whitney(b, a);
    EXPECT_FALSE(t.exact);
    EXPECT_GT(t.z, 0);  // b is the larger
    EXPECT_LT(t.p, 1e-3);
}

TEST(RegressionStats, RobustSpread) {
    // Relative deviations 0, +-1%, +-2% on each side: MAD 1% -> 1.4826%; a shift between the sides
    // does not inflate it.
    const std::vector<double> a = {100, 99, 101, 98, 102};
    const std::vector<double> b = {200, 198, 202, 196, 204};
    EXPECT_NEAR(replay::stats::robust_relative_spread(a, b), 0.014826, 1e-12);
    EXPECT_NEAR(replay::stats::robust_relative_spread(a, {}), 0.014826, 1e-12);
    EXPECT_DOUBLE_EQ(replay::stats::robust_relative_spread({5}, {6}), 0);
    EXPECT_DOUBLE_EQ(replay::stats::median({3, 1, 2, 10}), 2.5);
}

TEST(RegressionStats, TwoSpeedsSplitWhereOneSpreadDoesNot) {
    using replay::stats::two_groups;
    // BLOOM's dense GEMM, 24 instances recorded on an H200 (traces/h200/bloom_b1.json.gz): the
    // layers alternate between two placements of its input, 5.3-5.9 us and 7.0-7.2 us.
    const std::vector<double> bloom = {5.89, 5.31, 7.14, 5.50, 7.07, 5.54, 7.07, 5.44,
                                       7.14, 5.54, 7.07, 5.60, 7.04, 5.57, 7.07, 5.54,
                                       7.20, 5.63, 7.04, 5.50, 7.07, 5.47, 7.10, 5.54};
    const auto split = two_groups(bloom);
    ASSERT_EQ(split.size(), 2u);
    EXPECT_EQ(split[0].count, 13u);
    EXPECT_DOUBLE_EQ(split[0].median, 5.54);
    EXPECT_EQ(split[1].count, 11u);
    EXPECT_DOUBLE_EQ(split[1].median, 7.07);
    // One spread, however wide, is one group: evenly spaced values, and a bell of them.
    std::vector<double> even, bell;
    for (int i = 0; i < 48; ++i) even.push_back(5.0 + 3.0 * i / 47.0);
    std::mt19937 random(7);
    std::normal_distribution<double> normal(6.0, 0.8);
    for (int i = 0; i < 200; ++i) bell.push_back(normal(random));
    EXPECT_TRUE(two_groups(even).empty());
    EXPECT_TRUE(two_groups(bell).empty());
    // A few slow outliers are not a second speed (each group needs 15% of the values).
    std::vector<double> outliers(30, 4.0);
    outliers[3] = outliers[17] = 9.0;
    EXPECT_TRUE(two_groups(outliers).empty());
    // Two timer ticks 1% apart are separated but not two speeds (medians 10% apart).
    std::vector<double> ticks;
    for (int i = 0; i < 20; ++i) ticks.push_back(i % 2 ? 4.416 : 4.448);
    EXPECT_TRUE(two_groups(ticks).empty());
    // Timer steps: four 32 ns steps apart is one speed for kernel durations.
    std::vector<double> steps(24, 0.896);
    for (int i = 0; i < 8; ++i) steps[3 * i] = 1.024;
    EXPECT_EQ(two_groups(steps).size(), 2u);
    EXPECT_TRUE(two_groups(steps, replay::stats::kTwoSpeedsLeastGapUs).empty());
    EXPECT_EQ(two_groups(bloom, replay::stats::kTwoSpeedsLeastGapUs).size(), 2u);
    // Too few values to tell.
    EXPECT_TRUE(two_groups({5.5, 5.5, 5.5, 7.1, 7.1, 7.1, 7.1}).empty());
    EXPECT_EQ(two_groups({5.5, 5.5, 5.5, 5.5, 7.1, 7.1, 7.1, 7.1}).size(), 2u);
}

// ---- kernels with injected changes -----------------------------------------------------------

TEST(Regression, TenPercentSlowdownIsTheOnlyOneFlagged) {
    auto specs = stable_kernels();
    specs.push_back(Spec{"slow", 42.0, 0.02, Tier::AtenOp, 12});
    const Report baseline = make_report(specs, 1);
    const Report current = make_report(specs, 2, 50, {{"slow", 1.10}});
    const Regression r = replay::compare_reports(baseline, current);
    EXPECT_EQ(flagged(r, Verdict::Regressed), std::vector<std::string>{"slow"});
    EXPECT_TRUE(flagged(r, Verdict::Improved).empty());
    EXPECT_EQ(r.summary.regressed, 1u);
    EXPECT_EQ(r.summary.unchanged, 20u);
    EXPECT_EQ(r.summary.added + r.summary.missing, 0u);
    const auto& slow = find(r, "slow");
    EXPECT_NEAR(slow.change_pct, 10.0, 1.5);
    EXPECT_TRUE(slow.rank_test);
    EXPECT_LT(slow.p_value, 1e-10);
    EXPECT_GE(slow.threshold_pct, 5.0);
    EXPECT_NEAR(slow.spread_pct, 2.0, 0.6);
    EXPECT_EQ(slow.baseline_samples, 50u);
    EXPECT_EQ(replay::regression_exit_code(r), 1);
    EXPECT_TRUE(r.same_machine);
    // Totals: count x median over the 21 matched kernels.
    EXPECT_EQ(r.totals.matched, 21u);
    double b = 0, c = 0;
    for (const auto& k : r.kernels) {
        b += static_cast<double>(k.baseline_count) * k.baseline_median_us;
        c += static_cast<double>(k.current_count) * k.current_median_us;
    }
    EXPECT_NEAR(r.totals.baseline_us, b, 1e-9 * b);
    EXPECT_NEAR(r.totals.current_us, c, 1e-9 * c);
    EXPECT_NEAR(r.totals.change_pct, (c - b) / b * 100.0, 1e-9);

    std::ostringstream md;
    replay::write_regression_markdown(md, r);
    EXPECT_NE(md.str().find("| regressed | `kernel_slow<float, 4>` (slow) |"), std::string::npos)
        << md.str();
    EXPECT_NE(md.str().find("1 regressed, 0 improved, 20 unchanged, 0 new, 0 missing"),
              std::string::npos);
    std::ostringstream json;
    replay::write_regression_json(json, r);
    EXPECT_NE(json.str().find("\"schema\": \"replay.regression/1\""), std::string::npos);
    EXPECT_NE(json.str().find("\"verdict\": \"regressed\""), std::string::npos);
}

TEST(Regression, SameNoiseWithoutChangeFlagsNothing) {
    // Many independent baseline/current pairs: no false alarm in any of them.
    const auto specs = stable_kernels();
    for (std::uint64_t seed = 10; seed < 30; seed += 2) {
        const Regression r =
            replay::compare_reports(make_report(specs, seed), make_report(specs, seed + 1));
        EXPECT_EQ(r.summary.regressed, 0u) << "seed " << seed;
        EXPECT_EQ(r.summary.improved, 0u) << "seed " << seed;
        EXPECT_EQ(r.summary.unchanged, 20u);
        EXPECT_EQ(replay::regression_exit_code(r), 0);
        EXPECT_NEAR(r.totals.change_pct, 0, 1.0);
    }
}

// What a fresh process did on an H100: a 2.2 us kernel, steady within each run, 0.26 us faster
// in one of five. The rank test alone would call that a change (p ~ 1e-19).
TEST(Regression, ProcessToProcessShiftOfAMicrosecondKernelIsNoise) {
    const std::vector<Spec> specs = {Spec{"tiny", 2.176, 0.01, Tier::AtenOp, 24},
                                     Spec{"gemm", 36.0, 0.01, Tier::Gemm, 24}};
    const Regression r = replay::compare_reports(make_report(specs, 41),
                                                 make_report(specs, 42, 50, {{"tiny", 0.882}}));
    const auto& tiny = find(r, "tiny");
    EXPECT_LT(tiny.p_value, 1e-10);  // the runs do differ
    EXPECT_NEAR(tiny.change_pct, -11.8, 1.0);
    EXPECT_EQ(tiny.verdict, Verdict::Unchanged);
    EXPECT_EQ(r.summary.improved + r.summary.regressed, 0u);
}

TEST(Regression, SmallChangeUnderThresholdIsUnchanged) {
    // 2% noise, 3% slower: the rank test sees it (p tiny), but 3% < max(5%, 3 x 2%).
    const std::vector<Spec> specs = {Spec{"g", 25.0, 0.02, Tier::Gemm, 8}};
    const Regression r =
        replay::compare_reports(make_report(specs, 3), make_report(specs, 4, 50, {{"g", 1.03}}));
    const auto& g = find(r, "g");
    EXPECT_EQ(g.verdict, Verdict::Unchanged);
    EXPECT_NEAR(g.change_pct, 3.0, 1.5);
    EXPECT_LT(g.p_value, 0.01);
    EXPECT_GE(g.threshold_pct, 5.0);
    // With a 1% threshold and k = 1 the same data is a regression.
    RegressionOptions loose;
    loose.threshold_pct = 1;
    loose.k = 1;
    const Regression r2 = replay::compare_reports(make_report(specs, 3),
                                                  make_report(specs, 4, 50, {{"g", 1.03}}), loose);
    EXPECT_EQ(find(r2, "g").verdict, Verdict::Regressed);
}

TEST(Regression, NoisyKernelNeedsABiggerChange) {
    // 8% noise: threshold 3 x ~8% = ~24%, so a 15% change is not enough, a 40% one is.
    const std::vector<Spec> specs = {Spec{"noisy", 5.0, 0.08, Tier::AtenOp, 100},
                                     Spec{"noisy2", 5.0, 0.08}};
    const Regression r = replay::compare_reports(
        make_report(specs, 5), make_report(specs, 6, 50, {{"noisy", 1.15}, {"noisy2", 1.4}}));
    EXPECT_EQ(find(r, "noisy").verdict, Verdict::Unchanged);
    EXPECT_GT(find(r, "noisy").threshold_pct, 18.0);
    EXPECT_EQ(find(r, "noisy2").verdict, Verdict::Regressed);
}

TEST(Regression, ImprovementIsSymmetric) {
    auto specs = stable_kernels();
    specs.push_back(Spec{"fast", 80.0, 0.015, Tier::Gemm, 4});
    const Regression r =
        replay::compare_reports(make_report(specs, 8), make_report(specs, 9, 50, {{"fast", 0.88}}));
    EXPECT_EQ(flagged(r, Verdict::Improved), std::vector<std::string>{"fast"});
    EXPECT_TRUE(flagged(r, Verdict::Regressed).empty());
    EXPECT_NEAR(find(r, "fast").change_pct, -12.0, 1.5);
    EXPECT_EQ(replay::regression_exit_code(r), 0);
    std::ostringstream md;
    replay::write_regression_markdown(md, r);
    EXPECT_NE(md.str().find("| improved | `kernel_fast<float, 4>`"), std::string::npos) << md.str();
}

TEST(Regression, LoweredGemmMedianInBaselineIsARegression) {
    // The baseline's GEMM is 15% faster than it is now: the current run regressed by ~17.6%.
    auto specs = stable_kernels();
    const Report baseline = make_report(specs, 11, 50, {{"k4", 0.85}});
    const Report current = make_report(specs, 12);
    ASSERT_EQ(find(replay::compare_reports(current, current), "k4").verdict, Verdict::Unchanged);
    const Regression r = replay::compare_reports(baseline, current);
    EXPECT_EQ(flagged(r, Verdict::Regressed), std::vector<std::string>{"k4"});
    const auto& g = find(r, "k4");
    EXPECT_EQ(g.tier, Tier::Gemm);
    EXPECT_NEAR(g.change_pct, 100.0 / 85.0 * 100.0 - 100.0, 1.5);
    // The tier row carries it.
    bool seen = false;
    for (const auto& t : r.tiers)
        if (t.tier == Tier::Gemm) {
            seen = true;
            EXPECT_EQ(t.summary.regressed, 1u);
            EXPECT_GT(t.totals.change_pct, 0);
        } else {
            EXPECT_EQ(t.summary.regressed, 0u);
        }
    EXPECT_TRUE(seen);
}

TEST(Regression, MissingAndNewKernels) {
    auto specs = stable_kernels();
    auto base_specs = specs;
    base_specs.push_back(Spec{"gone", 7.0});
    auto cur_specs = specs;
    cur_specs.push_back(Spec{"fresh", 9.0});
    Report baseline = make_report(base_specs, 13);
    Report current = make_report(cur_specs, 14);
    // k1 failed in the current run (no samples), k2 was not replayed in the baseline.
    current.kernels[1].samples_us.clear();
    current.kernels[1].replayed_us = {};
    current.kernels[1].outcome = replay::KernelOutcome::Failed;
    current.kernels[1].reason = "cublasLt heuristic returned no algorithm";
    baseline.kernels[2].samples_us.clear();
    baseline.kernels[2].replayed_us = {};
    baseline.kernels[2].outcome = replay::KernelOutcome::Skipped;
    // k3 replayed in neither: not compared at all.
    baseline.kernels[3].samples_us.clear();
    baseline.kernels[3].replayed_us = {};
    current.kernels[3].samples_us.clear();
    current.kernels[3].replayed_us = {};
    replay::finalize_report(baseline);
    replay::finalize_report(current);

    const Regression r = replay::compare_reports(baseline, current);
    EXPECT_EQ(flagged(r, Verdict::Missing), (std::vector<std::string>{"k1", "gone"}));
    EXPECT_EQ(flagged(r, Verdict::New), (std::vector<std::string>{"k2", "fresh"}));
    EXPECT_TRUE(flagged(r, Verdict::Regressed).empty());
    EXPECT_EQ(r.summary.missing, 2u);
    EXPECT_EQ(r.summary.added, 2u);
    EXPECT_EQ(r.summary.unchanged, 17u);  // k0, k4..k19
    EXPECT_EQ(r.totals.matched, 17u);
    EXPECT_NE(find(r, "k1").note.find("failed: cublasLt heuristic"), std::string::npos);
    EXPECT_EQ(find(r, "gone").note, "not in the current report");
    EXPECT_EQ(find(r, "fresh").note, "not in the baseline report");
    EXPECT_DOUBLE_EQ(find(r, "fresh").current_median_us, stats_median(current, "fresh"));
    EXPECT_EQ(r.kernels.size(), 21u);  // k3 is left out
    bool noted = false;
    for (const auto& n : r.notes)
        noted |= n == "1 kernels replayed in neither report were not compared";
    EXPECT_TRUE(noted);
    EXPECT_EQ(replay::regression_exit_code(r), 0);
    std::ostringstream md;
    replay::write_regression_markdown(md, r);
    EXPECT_NE(md.str().find("- missing `kernel_gone<float, 4>` (gone): not in the current report"),
              std::string::npos)
        << md.str();
}

// Each process of a kernel sits at its own offset, its windows tight around it (GPT-2's
// power-hungry GEMM on one H200: windows 0.2-0.4 % apart, processes up to 5.2 %). Against one
// process, another one is "+5.5 %"; against two pooled, it is within what processes do, and a
// real 10 % change still is not.
TEST(Regression, PooledBaselinesCountProcessOffsetsAsNoise) {
    const std::vector<Spec> specs = {{"g", 2400.0, 0.003, Tier::Gemm, 12}, {"k", 30.0, 0.01}};
    const Report first = make_report(specs, 51, 5);
    const Report second = make_report(specs, 52, 5, {{"g", 1.035}});
    const Report fresh = make_report(specs, 53, 5, {{"g", 1.055}});
    EXPECT_EQ(flagged(replay::compare_reports(first, fresh), Verdict::Regressed),
              std::vector<std::string>{"g"});

    std::vector<std::string> notes;
    const Report pooled = replay::pool_baselines({first, second}, {"a.json", "b.json"}, notes);
    ASSERT_EQ(pooled.kernels.size(), 2u);
    EXPECT_EQ(pooled.kernels[0].samples_us.size(), 10u);
    EXPECT_EQ(pooled.kernels[0].replayed_us.count, 10u);
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("pooled from 2 reports"), std::string::npos);
    const Regression r = replay::compare_reports(pooled, fresh);
    EXPECT_TRUE(flagged(r, Verdict::Regressed).empty()) << find(r, "g").change_pct;

    const Report slower = make_report(specs, 54, 5, {{"g", 1.12}});
    EXPECT_EQ(flagged(replay::compare_reports(pooled, slower), Verdict::Regressed),
              std::vector<std::string>{"g"});
}

TEST(Regression, PoolsEnergySamplesAndRefusesOtherTraces) {
    const std::vector<Spec> specs = {{"g", 100.0, 0.01}};
    Report first = make_report(specs, 61, 5), second = make_report(specs, 62, 5);
    first.kernels[0].energy.samples_uj = {10, 11, 12};
    second.kernels[0].energy.samples_uj = {13, 14};
    second.environment.emplace_back("gpu_uuid", "GPU-2");
    std::vector<std::string> notes;
    const Report pooled = replay::pool_baselines({first, second}, {"a.json", "b.json"}, notes);
    EXPECT_EQ(pooled.kernels[0].energy.samples_uj, (std::vector<double>{10, 11, 12, 13, 14}));
    EXPECT_DOUBLE_EQ(pooled.kernels[0].energy.uj.median, 12.0);
    ASSERT_EQ(notes.size(), 2u);  // the pooling, and the boards that differ
    EXPECT_NE(notes[1].find("gpu_uuid"), std::string::npos);

    for (auto& [key, value] : second.inputs)
        if (key == "trace_hash") value = "0123456789abcdef";
    try {
        replay::pool_baselines({first, second}, {"a.json", "b.json"}, notes);
        FAIL() << "pooled reports of two traces";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("b.json 0123456789abcdef"), std::string::npos)
            << e.what();
    }
}

TEST(Regression, DifferentMachineIsFlaggedButStillCompared) {
    auto specs = stable_kernels();
    specs.push_back(Spec{"slow", 42.0, 0.02});
    const Report baseline = make_report(specs, 15);
    Report current = make_report(specs, 16, 50, {{"slow", 1.2}});
    for (auto& [k, v] : current.environment) {
        if (k == "driver") v = "575.51.03";
        if (k == "sm_clock_mhz") v = "1755";  // not a machine key
    }
    current.environment.erase(current.environment.begin() + 3);  // no cublas
    const Regression r = replay::compare_reports(baseline, current, {}, "base.json", "cur.json");
    EXPECT_FALSE(r.same_machine);
    ASSERT_EQ(r.machine_differences.size(), 2u);
    EXPECT_EQ(r.machine_differences[0].key, "driver");
    EXPECT_EQ(r.machine_differences[0].baseline, "570.86.15");
    EXPECT_EQ(r.machine_differences[0].current, "575.51.03");
    EXPECT_EQ(r.machine_differences[1].key, "cublas");
    EXPECT_EQ(r.machine_differences[1].current, "");
    EXPECT_EQ(flagged(r, Verdict::Regressed), std::vector<std::string>{"slow"});
    std::ostringstream json;
    replay::write_regression_json(json, r);
    EXPECT_NE(json.str().find("\"same_machine\": false"), std::string::npos);
    EXPECT_NE(json.str().find("\"machine_differences\": [\n  \"driver\",\n  \"cublas\"\n ]"),
              std::string::npos)
        << json.str().substr(0, 400);
    std::ostringstream md;
    replay::write_regression_markdown(md, r);
    EXPECT_NE(md.str().find("not the same machine"), std::string::npos);

    const Regression same = replay::compare_reports(baseline, baseline);
    EXPECT_TRUE(same.same_machine);
    EXPECT_TRUE(same.machine_differences.empty());
}

TEST(Regression, OtherReplayOptionsAreNoted) {
    const auto specs = stable_kernels();
    Report baseline = make_report(specs, 31), current = make_report(specs, 32);
    auto note_of = [](const Regression& r) {
        for (const auto& n : r.notes)
            if (n.find("the replays ran with other options") != std::string::npos) return n;
        return std::string();
    };
    baseline.options = {{"context", "recorded"}, {"instruction_cache", "cold"}};
    current.options = baseline.options;
    EXPECT_EQ(note_of(replay::compare_reports(baseline, current)), "");
    current.options[1].second = "warm";
    EXPECT_NE(
        note_of(replay::compare_reports(baseline, current)).find("instruction_cache cold vs warm"),
        std::string::npos);
    // A unique-mode report made before the option ran warm.
    baseline.options = {{"context", "recorded"}};
    current.options = {{"context", "recorded"}, {"instruction_cache", "cold"}};
    EXPECT_NE(
        note_of(replay::compare_reports(baseline, current)).find("instruction_cache warm vs cold"),
        std::string::npos);
    current.options = {{"context", "none"}};
    EXPECT_NE(note_of(replay::compare_reports(baseline, current)).find("context recorded vs none"),
              std::string::npos);
    // Graph-recorded kernels timed inside a graph against a report that timed them alone.
    baseline.options = {{"context", "recorded"}, {"instruction_cache", "cold"}};
    current.options = baseline.options;
    current.options.emplace_back("graph_nodes", "in-graph");
    EXPECT_NE(
        note_of(replay::compare_reports(baseline, current)).find("graph_nodes alone vs in-graph"),
        std::string::npos);
    current.options.back().second = "alone";
    EXPECT_EQ(note_of(replay::compare_reports(baseline, current)), "");
    // An option one report does not state is not compared.
    baseline.mode = current.mode = "sequential";
    baseline.options = {{"pace", "recorded"}};
    current.options = {{"pace", "recorded"}, {"warm_inputs", "all"}};
    EXPECT_EQ(note_of(replay::compare_reports(baseline, current)), "");
}

TEST(Regression, FewSamplesAreInconclusiveNotFlagged) {
    const std::vector<Spec> specs = {Spec{"a", 10.0, 0.01}, Spec{"b", 10.0, 0.01}};
    const Regression r = replay::compare_reports(make_report(specs, 17, 3),
                                                 make_report(specs, 18, 3, {{"a", 1.10}}));
    const auto& a = find(r, "a");
    EXPECT_EQ(a.verdict, Verdict::Unchanged);
    EXPECT_TRUE(a.inconclusive);
    EXPECT_FALSE(a.rank_test);
    EXPECT_TRUE(std::isnan(a.p_value));
    EXPECT_NE(a.note.find("inconclusive"), std::string::npos);
    EXPECT_EQ(find(r, "b").verdict, Verdict::Unchanged);
    EXPECT_FALSE(find(r, "b").inconclusive);
    EXPECT_EQ(r.summary.inconclusive, 1u);
    EXPECT_EQ(replay::regression_exit_code(r), 0);
    bool noted = false;
    for (const auto& n : r.notes) noted |= n.find("without the rank test") != std::string::npos;
    EXPECT_TRUE(noted);
    // Five per side is enough for the exact test to reach p < 0.01 on a clear change.
    const Regression r5 = replay::compare_reports(make_report(specs, 17, 5),
                                                  make_report(specs, 18, 5, {{"a", 1.10}}));
    EXPECT_TRUE(find(r5, "a").rank_test);
    EXPECT_TRUE(find(r5, "a").exact);
    EXPECT_EQ(find(r5, "a").verdict, Verdict::Regressed);
}

TEST(Regression, RecordedTimesCompare) {
    // `replay compare` of two traces: recorded medians, no samples.
    const std::vector<Spec> specs = {Spec{"a", 10.0}, Spec{"b", 10.0}};
    Report base = make_report(specs, 19, 0);
    Report cur = make_report(specs, 20, 0);
    cur.kernels[0].recorded_us = replay::summarize(std::vector<double>(10, 12.0));
    RegressionOptions o;
    o.recorded = true;
    const Regression r = replay::compare_reports(base, cur, o);
    EXPECT_EQ(find(r, "a").verdict, Verdict::Regressed);
    EXPECT_NEAR(find(r, "a").change_pct, 20.0, 1e-9);
    EXPECT_EQ(find(r, "b").verdict, Verdict::Unchanged);
    // Without `recorded` nothing was replayed: nothing to compare.
    EXPECT_TRUE(replay::compare_reports(base, cur).kernels.empty());

    // With the recorded instances as samples (what `compare` of two traces builds), the rank
    // test applies: a kernel whose 10 instances all got 20% slower is flagged with a p-value, one
    // whose instances merely came out in another order is not.
    const std::vector<double> instances = {10.0, 10.2, 9.9, 10.1, 10.0, 9.8, 10.3, 10.0, 9.9, 10.1};
    for (auto* report : {&base, &cur})
        for (auto& k : report->kernels) {
            k.samples_us = instances;
            k.recorded_us = replay::summarize(instances);
        }
    std::vector<double> slower = instances, shuffled(instances.rbegin(), instances.rend());
    for (double& x : slower) x *= 1.2;
    cur.kernels[0].samples_us = slower;
    cur.kernels[0].recorded_us = replay::summarize(slower);
    cur.kernels[1].samples_us = shuffled;
    const Regression with_samples = replay::compare_reports(base, cur, o);
    EXPECT_EQ(find(with_samples, "a").verdict, Verdict::Regressed);
    EXPECT_TRUE(find(with_samples, "a").rank_test);
    EXPECT_LT(find(with_samples, "a").p_value, 0.01);
    EXPECT_EQ(find(with_samples, "b").verdict, Verdict::Unchanged);
    EXPECT_TRUE(find(with_samples, "b").rank_test);
}

// ---- broken sides --------------------------------------------------------------------------

// Every sample of every kernel of `r` replaced by `value`.
Report with_samples(Report r, double value) {
    for (auto& k : r.kernels) std::fill(k.samples_us.begin(), k.samples_us.end(), value);
    replay::finalize_report(r);
    return r;
}

TEST(Regression, BaselineOfZerosComparesNothing) {
    // A current run 10x slower against a baseline whose samples are all 0 used to be "ok, all
    // unchanged": a 0 us median gives no relative change. No kernel is compared now.
    const auto specs = stable_kernels();
    const Report zeros = with_samples(make_report(specs, 31), 0.0);
    const Report slow = make_report(specs, 32, 50, {});
    Report ten_times = slow;
    for (auto& k : ten_times.kernels)
        for (double& x : k.samples_us) x *= 10;
    replay::finalize_report(ten_times);
    const Regression r = replay::compare_reports(zeros, ten_times);
    EXPECT_EQ(r.totals.matched, 0u);
    EXPECT_EQ(r.summary.unchanged, 0u);
    EXPECT_EQ(r.summary.added, specs.size());
    EXPECT_NE(find(r, "k3").note.find("median of 0 us"), std::string::npos) << find(r, "k3").note;
    bool noted = false;
    for (const auto& n : r.notes)
        noted |= n.find("20 kernels have a median of 0 us in the baseline report") == 0;
    EXPECT_TRUE(noted);
    // The other way round: a current run of zeros is missing everywhere, not improved.
    const Regression back = replay::compare_reports(slow, zeros);
    EXPECT_EQ(back.totals.matched, 0u);
    EXPECT_EQ(back.summary.improved, 0u);
    EXPECT_EQ(back.summary.missing, specs.size());
}

TEST(RegressionStats, MediansOfHugeDurationsDoNotOverflow) {
    EXPECT_DOUBLE_EQ(replay::stats::median({1e308, 1.5e308}), 1.25e308);
    EXPECT_DOUBLE_EQ(replay::stats::median_of_counted({{1e308, 1}, {1.5e308, 1}}), 1.25e308);
    // And the same value as (a + b) / 2 where that does not overflow.
    EXPECT_EQ(replay::stats::median({0.1, 0.2, 0.7, 0.3}), (0.2 + 0.3) / 2);
}

// ---- find_baseline ---------------------------------------------------------------------------

TEST(Regression, FindBaselineInAFolder) {
    namespace fs = std::filesystem;
    const fs::path dir = fresh_dir("replay_test_baselines");
    fs::create_directories(dir / "h200" / "deeper");
    const auto write = write_report;
    const auto specs = stable_kernels();
    Report a = make_report(specs, 21);
    a.inputs = {{"trace_hash", "aaaaaaaaaaaaaaaa"}};
    Report b = make_report(specs, 22);
    b.inputs = {{"trace_hash", "bbbbbbbbbbbbbbbb"}};
    Report b_old = b;
    b_old.tool_version = "old";
    Report deep = make_report(specs, 23);
    deep.inputs = {{"trace_hash", "dddddddddddddddd"}};
    write(dir / "a.json", a);
    write(dir / "h200" / "b_old.json", b_old);
    write(dir / "h200" / "b.json", b);
    write(dir / "h200" / "deeper" / "d.json", deep);  // two levels down: not searched
    std::ofstream(dir / "notes.json") << "{\"schema\": \"replay.report/1\", broken";
    std::ofstream(dir / "other.json") << "{\"traceEvents\": []}";
    const auto past = fs::file_time_type::clock::now() - std::chrono::hours(1);
    fs::last_write_time(dir / "h200" / "b_old.json", past);

    const auto found_a = replay::find_baseline(dir.string(), "aaaaaaaaaaaaaaaa");
    EXPECT_EQ(fs::path(found_a.path).filename(), "a.json");
    EXPECT_EQ(found_a.report.kernels.size(), 20u);
    const auto found_b = replay::find_baseline(dir.string(), "bbbbbbbbbbbbbbbb");
    EXPECT_EQ(fs::path(found_b.path).filename(), "b.json");  // the newer of the two
    EXPECT_EQ(found_b.report.tool_version, "test");
    EXPECT_THROW(replay::find_baseline(dir.string(), "dddddddddddddddd"), replay::InputError);
    EXPECT_THROW(replay::find_baseline(dir.string(), "0000000000000000"), replay::InputError);
    // A file is read as it is.
    const auto file = replay::find_baseline((dir / "a.json").string(), "whatever");
    EXPECT_EQ(file.report.input("trace_hash"), "aaaaaaaaaaaaaaaa");
    EXPECT_THROW(replay::find_baseline((dir / "other.json").string(), "x"), replay::InputError);
    fs::remove_all(dir);
}

TEST(Regression, FindPooledBaselineTakesEveryRunOfTheModeNewestFirst) {
    namespace fs = std::filesystem;
    const fs::path dir = fresh_dir("replay_test_pooled");
    fs::create_directories(dir / "runs");
    const auto write = write_report;
    const std::vector<Spec> specs = {{"g", 100.0, 0.01}};
    Report first = make_report(specs, 71, 5), second = make_report(specs, 72, 5);
    Report sequential = make_report(specs, 73, 5), other = make_report(specs, 74, 5);
    sequential.mode = "sequential";
    other.inputs = {{"trace_hash", "0000000000000000"}};
    write(dir / "runs" / "1.json", first);
    write(dir / "runs" / "2.json", second);
    write(dir / "seq.json", sequential);
    write(dir / "other.json", other);
    fs::last_write_time(dir / "runs" / "1.json",
                        fs::file_time_type::clock::now() - std::chrono::hours(1));

    const auto pooled = replay::find_pooled_baseline(dir.string(), "feedfacecafebeef", "unique");
    EXPECT_EQ(pooled.report.kernels.at(0).samples_us.size(), 10u);
    EXPECT_EQ(pooled.path,
              (dir / "runs" / "2.json").string() + " + " + (dir / "runs" / "1.json").string());
    EXPECT_NE(pooled.chosen.find("2 reports of this trace in unique mode, pooled"),
              std::string::npos)
        << pooled.chosen;
    ASSERT_FALSE(pooled.notes.empty());
    EXPECT_NE(pooled.notes[0].find("pooled from 2 reports"), std::string::npos);
    const auto one = replay::find_pooled_baseline(dir.string(), "feedfacecafebeef", "sequential");
    EXPECT_EQ(one.report.kernels.at(0).samples_us.size(), 5u);
    EXPECT_THROW(replay::find_pooled_baseline(dir.string(), "feedfacecafebeef", "sweep"),
                 replay::InputError);
    EXPECT_THROW(replay::find_pooled_baseline((dir / "seq.json").string(), "x", "unique"),
                 replay::InputError);
    fs::remove_all(dir);
}

TEST(Regression, FindBaselineNamesWhatItCouldNotRead) {
    namespace fs = std::filesystem;
    const fs::path dir = fresh_dir("replay_test_broken_baselines");
    fs::create_directories(dir / "older");
    const auto specs = stable_kernels();
    Report good = make_report(specs, 41);
    good.inputs = {{"trace_hash", "aaaaaaaaaaaaaaaa"}};
    Report old = good;
    Report negative = make_report(specs, 42);
    negative.inputs = good.inputs;
    negative.kernels[5].samples_us[3] = -4.5;
    for (const auto& [path, report] :
         {std::pair{dir / "good.json", &good}, std::pair{dir / "older" / "old.json", &old},
          std::pair{dir / "negative.json", &negative}}) {
        std::ofstream out(path);
        replay::write_report_json(out, *report);
    }
    fs::last_write_time(dir / "older" / "old.json",
                        fs::file_time_type::clock::now() - std::chrono::hours(1));
    std::ofstream(dir / "garbage.json") << "no JSON here";
    std::ofstream(dir / "trace.json") << R"({"schemaVersion": 1, "traceEvents": []})";
    std::ofstream(dir / "signatures.json") << R"({"schema": "replay.kernel_signatures/1"})";

    std::vector<std::string> warnings;
    const auto found = replay::find_baseline(dir.string(), "aaaaaaaaaaaaaaaa",
                                             [&](const std::string& w) { warnings.push_back(w); });
    EXPECT_EQ(fs::path(found.path).filename(), "good.json");
    EXPECT_NE(found.chosen.find("the newest of 2 reports of this trace"), std::string::npos)
        << found.chosen;
    EXPECT_NE(found.chosen.find("2 unreadable"), std::string::npos) << found.chosen;
    // The broken report and the file that is no JSON, each named; the trace and the signature
    // file are not reports and pass quietly.
    ASSERT_EQ(warnings.size(), 2u);
    EXPECT_NE(warnings[0].find("garbage.json: byte 0: "), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[1].find("negative.json: byte "), std::string::npos) << warnings[1];
    EXPECT_NE(warnings[1].find("/kernels/5/samples_us/3: -4.5 is negative"), std::string::npos)
        << warnings[1];
    fs::remove_all(dir);
}

}  // namespace
