// report.json / kernels.csv: round trip, CSV quoting, finalize_report figures, read errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "replay/kernels_csv.h"
#include "replay/report.h"
#include "replay/report_energy.h"
#include "replay/report_json.h"
#include "replay/report_summary.h"
#include "replay/source.h"
#include "replay/timeline.h"
#include "report_fixtures.h"

namespace {

TEST(Report, PerLaunchMedianWeighsKernelsByTheirCount) {
    Report r = hand_made();
    // Eight launches of the +50% aten kernel: 10 x 3, 20 x 2, 50 x 8 -> the seventh of 13 is 50,
    // while the median over unique kernels stays 20.
    r.kernels[2].recorded_us = replay::summarize(std::vector<double>(8, 2.0));
    r.kernels[2].count = 8;
    replay::finalize_report(r);
    EXPECT_NEAR(r.totals.median_abs_error_pct, 20.0, 1e-9);
    EXPECT_NEAR(r.totals.median_abs_error_pct_per_launch, 50.0, 1e-9);
    // An even number of launches averages the two middle ones: 10 x 3, 20 x 3 -> 15.
    r.kernels = {r.kernels[0], r.kernels[1]};
    r.kernels[1].recorded_us = replay::summarize(std::vector<double>(3, 5.0));
    r.kernels[1].count = 3;
    replay::finalize_report(r);
    EXPECT_NEAR(r.totals.median_abs_error_pct_per_launch, 15.0, 1e-9);
}

TEST(Report, FinalizeFigures) {
    Report r = hand_made();
    replay::finalize_report(r);
    const auto& k = r.kernels;
    EXPECT_EQ(k[0].replayed_us.count, 3u);
    EXPECT_DOUBLE_EQ(k[0].replayed_us.median, 11);
    EXPECT_NEAR(k[0].error_pct, 10.0, 1e-9);
    EXPECT_TRUE(k[0].name_match);
    EXPECT_NEAR(k[1].error_pct, -20.0, 1e-9);
    EXPECT_FALSE(k[1].name_match);
    EXPECT_NEAR(k[2].error_pct, 50.0, 1e-9);
    EXPECT_DOUBLE_EQ(k[2].replayed_us.mean, 3);
    EXPECT_TRUE(std::isnan(k[3].error_pct));
    EXPECT_EQ(k[3].replayed_us.count, 0u);
    EXPECT_NEAR(k[4].error_pct, 50.0, 1e-9);

    const auto& t = r.totals;
    // Kernel-kind recorded time: 30 + 10 + 8 + 20 = 68 (the memcpy is not kernel time).
    EXPECT_DOUBLE_EQ(t.recorded_kernel_us, 68);
    EXPECT_DOUBLE_EQ(t.recipe_coverage, 40.0 / 60.0);  // kept as the driver set it
    EXPECT_NEAR(t.replayed_coverage, 48.0 / 68.0, 1e-12);
    // Replayed unique kernels (all kinds): mean x count = 33 + 8 + 12 + 3 = 56 against 30 + 10 + 8
    // + 2 = 50.
    EXPECT_NEAR(t.replayed_kernel_us, 56, 1e-9);
    EXPECT_NEAR(t.replayed_recorded_us, 50, 1e-9);
    EXPECT_NEAR(t.total_error_pct, 12.0, 1e-9);
    // |error| of the replayed kernels of kind kernel: 10, 20, 50 -> 20. Per launch: 10 x 3,
    // 20 x 2, 50 x 4 -> the fifth of nine, 20.
    EXPECT_NEAR(t.median_abs_error_pct, 20.0, 1e-9);
    EXPECT_NEAR(t.median_abs_error_pct_per_launch, 20.0, 1e-9);
    // |replayed - recorded| kernel by kernel: 3 + 2 + 4 + 1 of 50.
    EXPECT_NEAR(t.weighted_abs_error_pct, 20.0, 1e-9);
    // GEMM time with a matching name: 30 of 40.
    EXPECT_NEAR(t.gemm_name_match, 0.75, 1e-12);
    // Without CUPTI the replay knows no kernel names (only its recipes' labels): no share.
    Report untimed_names = hand_made();
    for (auto& [key, value] : untimed_names.environment)
        if (key == "timing") value = "host-clock";
    replay::finalize_report(untimed_names);
    EXPECT_TRUE(std::isnan(untimed_names.totals.gemm_name_match));
    // Unique mode: count x replayed median = 33 + 8 + 12 + 3.
    EXPECT_NEAR(t.predicted_total_us, 56, 1e-9);
    EXPECT_DOUBLE_EQ(t.wall_seconds, 1.5);

    ASSERT_EQ(r.tiers.size(), 4u);  // none, 1, 2, 3
    EXPECT_EQ(r.tiers[0].tier, Tier::NotReplayable);
    EXPECT_DOUBLE_EQ(r.tiers[0].recorded_us, 20);
    EXPECT_DOUBLE_EQ(r.tiers[0].replayed_us, 0);
    EXPECT_EQ(r.tiers[2].tier, Tier::Gemm);
    EXPECT_EQ(r.tiers[2].unique, 2u);
    EXPECT_EQ(r.tiers[2].activities, 5u);
    EXPECT_DOUBLE_EQ(r.tiers[2].recorded_us, 40);
    EXPECT_NEAR(r.tiers[2].replayed_us, 41, 1e-9);
    EXPECT_DOUBLE_EQ(r.tiers[2].replayed_recorded_us, 40);
}

// Errors of opposite sign offset in the total, not in the time-weighted |error|: a GEMM 3 us
// slow and another 3 us fast replay at 0% in total, 15% of their 40 us kernel by kernel (the
// Llama decode whose total moved from -1.1% to -2.1% while its kernels got closer:
// tests/gpu/VALIDATION.md, thirtieth session).
TEST(Report, WeightedErrorDoesNotLetErrorsOffset) {
    Report r = hand_made();
    r.kernels = {r.kernels[0], r.kernels[1]};
    r.kernels[1].samples_us = {3.5, 3.5, 3.5};
    replay::finalize_report(r);
    EXPECT_NEAR(r.totals.total_error_pct, 0.0, 1e-9);
    EXPECT_NEAR(r.totals.weighted_abs_error_pct, 15.0, 1e-9);
}

TEST(Report, RecordedKernelTimeFromDriverIsKept) {
    Report r = hand_made();
    r.totals.recorded_kernel_us = 100;
    replay::finalize_report(r);
    EXPECT_DOUBLE_EQ(r.totals.recorded_kernel_us, 100);
    EXPECT_NEAR(r.totals.replayed_coverage, 0.48, 1e-12);
}

TEST(Report, SequentialModeHasNoPrediction) {
    Report r = hand_made();
    r.mode = "sequential";
    replay::finalize_report(r);
    EXPECT_TRUE(std::isnan(r.totals.predicted_total_us));
}

TEST(Report, NothingReplayed) {
    Report r;
    r.mode = "unique";
    r.kernels = {kernel("a", "k", "kernel", Tier::Gemm, {1, 2}, {})};
    replay::finalize_report(r);
    EXPECT_DOUBLE_EQ(r.totals.recorded_kernel_us, 3);
    EXPECT_DOUBLE_EQ(r.totals.replayed_coverage, 0);
    EXPECT_TRUE(std::isnan(r.totals.total_error_pct));
    EXPECT_TRUE(std::isnan(r.totals.median_abs_error_pct));
    EXPECT_TRUE(std::isnan(r.totals.gemm_name_match));
    EXPECT_TRUE(std::isnan(r.totals.predicted_total_us));
}

void expect_same_stats(const replay::DurationStats& a, const replay::DurationStats& b) {
    EXPECT_EQ(a.count, b.count);
    EXPECT_EQ(a.min, b.min);
    EXPECT_EQ(a.median, b.median);
    EXPECT_EQ(a.mean, b.mean);
    EXPECT_EQ(a.max, b.max);
    EXPECT_EQ(a.sum, b.sum);
    EXPECT_EQ(a.stddev, b.stddev);
    EXPECT_EQ(a.p95, b.p95);
    EXPECT_EQ(a.p99, b.p99);
}

TEST(Report, JsonRoundTrip) {
    Report r = hand_made();
    r.kernels[0].samples_us = {11.000000000000002, 10.9,
                               11.123456789};  // exact digits must survive
    r.kernels[2].name = "tab\there, \\backslash and \xce\xbc unicode";
    r.kernels[1].replayed_grids = {{1568, 1, 16}, {2, 1, 64}};
    replay::finalize_report(r);
    std::ostringstream first;
    replay::write_report_json(first, r);
    const std::string path = temp_path("roundtrip.json");
    write_file(path, first.str());

    const Report back = replay::read_report_json(path);
    EXPECT_EQ(back.schema, "replay.report/1");
    EXPECT_EQ(back.tool_version, r.tool_version);
    EXPECT_EQ(back.mode, r.mode);
    EXPECT_EQ(back.backend, r.backend);
    EXPECT_EQ(back.environment, r.environment);
    EXPECT_EQ(back.inputs, r.inputs);
    EXPECT_EQ(back.options, r.options);
    EXPECT_EQ(back.notes, r.notes);
    EXPECT_EQ(back.input("trace_hash"), "0123456789abcdef");
    EXPECT_EQ(back.env("gpu"), "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(back.env("nope"), "");
    expect_same_double(back.totals.total_error_pct, r.totals.total_error_pct);
    expect_same_double(back.totals.gemm_name_match, r.totals.gemm_name_match);
    expect_same_double(back.totals.weighted_abs_error_pct, r.totals.weighted_abs_error_pct);
    expect_same_double(back.totals.sequential_kernel_us, r.totals.sequential_kernel_us);
    EXPECT_EQ(back.totals.recorded_kernel_us, r.totals.recorded_kernel_us);
    EXPECT_EQ(back.totals.replayed_coverage, r.totals.replayed_coverage);
    ASSERT_EQ(back.tiers.size(), r.tiers.size());
    for (std::size_t i = 0; i < r.tiers.size(); ++i) {
        EXPECT_EQ(back.tiers[i].tier, r.tiers[i].tier);
        EXPECT_EQ(back.tiers[i].unique, r.tiers[i].unique);
        EXPECT_EQ(back.tiers[i].replayed_us, r.tiers[i].replayed_us);
    }
    ASSERT_EQ(back.kernels.size(), r.kernels.size());
    for (std::size_t i = 0; i < r.kernels.size(); ++i) {
        const auto& a = r.kernels[i];
        const auto& b = back.kernels[i];
        EXPECT_EQ(b.id, a.id);
        EXPECT_EQ(b.name, a.name);
        EXPECT_EQ(b.kind, a.kind);
        EXPECT_EQ(b.tier, a.tier);
        EXPECT_EQ(b.rule, a.rule);
        EXPECT_EQ(b.outcome, a.outcome);
        EXPECT_EQ(b.reason, a.reason);
        EXPECT_EQ(b.count, a.count);
        expect_same_stats(b.recorded_us, a.recorded_us);
        expect_same_stats(b.replayed_us, a.replayed_us);
        EXPECT_EQ(b.samples_us, a.samples_us);
        expect_same_double(b.error_pct, a.error_pct);
        EXPECT_EQ(b.replayed_names, a.replayed_names);
        EXPECT_EQ(b.name_match, a.name_match);
        EXPECT_EQ(b.replayed_grids, a.replayed_grids);
        expect_same_double(b.gflops_per_s, a.gflops_per_s);
        expect_same_double(b.gb_per_s, a.gb_per_s);
        EXPECT_EQ(b.flops, a.flops);
        EXPECT_EQ(b.bytes, a.bytes);
        EXPECT_EQ(b.flop_dtype, a.flop_dtype);
        expect_same_double(b.pct_peak_flops, a.pct_peak_flops);
        expect_same_double(b.pct_peak_bandwidth, a.pct_peak_bandwidth);
    }
    // Writing what was read gives the same bytes.
    std::ostringstream second;
    replay::write_report_json(second, back);
    EXPECT_EQ(second.str(), first.str());
    // NaN is written as null, the not-replayable tier as null.
    EXPECT_NE(first.str().find("\"error_pct\": null"), std::string::npos);
    EXPECT_NE(first.str().find("\"tier\": null"), std::string::npos);
}

TEST(Report, KernelsTimedByAnotherLaunchGridAreCountedInTheSummary) {
    Report r = hand_made();
    replay::finalize_report(r);
    std::ostringstream none;
    replay::write_report_summary(none, r);
    EXPECT_EQ(none.str().find("another launch grid"), std::string::npos) << none.str();
    r.kernels[0].replayed_grids = {{126, 1, 1}};
    std::ostringstream summary;
    replay::write_report_summary(summary, r);
    const double share = 100 * r.kernels[0].recorded_us.sum / r.totals.recorded_kernel_us;
    char expected[96];
    std::snprintf(expected, sizeof expected,
                  "another launch grid                  1 kernel(s), %.1f%%", share);
    EXPECT_NE(summary.str().find(expected), std::string::npos) << summary.str();
}

TEST(Report, KernelsRecordedAtTwoSpeedsAreNamedInANoteAndKeepTheirGroups) {
    Report r = hand_made();
    // The GEMM's 8 instances ran at 5.5 and 7.1 us (their inputs' placement); the replay's eight
    // samples split 2 : 6, the other way.
    const std::vector<double> recorded = {5.5, 7.1, 5.4, 7.0, 5.6, 7.1, 5.5, 7.2};
    r.kernels[0].count = recorded.size();
    r.kernels[0].recorded_us = replay::summarize(recorded);
    r.kernels[0].recorded_groups =
        replay::stats::two_groups(recorded, replay::stats::kTwoSpeedsLeastGapUs);
    r.kernels[0].samples_us = {5.8, 7.9, 7.8, 5.9, 8.0, 7.9, 7.8, 7.9};
    replay::finalize_report(r);
    replay::finalize_report(r);  // the note is not repeated
    const auto& k = r.kernels[0];
    ASSERT_EQ(k.replayed_groups.size(), 2u);
    EXPECT_EQ(k.replayed_groups[0].count, 2u);
    EXPECT_EQ(k.replayed_groups[1].count, 6u);
    EXPECT_TRUE(r.kernels[2].replayed_groups.empty());  // 2, 3, 4: one group
    const auto notes = std::count_if(r.notes.begin(), r.notes.end(), [](const std::string& n) {
        return n.find("two speeds") != std::string::npos;
    });
    ASSERT_EQ(notes, 1);
    const std::string& note = r.notes.back();
    EXPECT_NE(note.find("1 kernel "), std::string::npos) << note;
    EXPECT_NE(note.find(k.name + ": recorded 4 near 5.50 us and 4 near 7.10 us, replayed 2 near "
                                 "5.85 us and 6 near 7.90 us"),
              std::string::npos)
        << note;

    std::ostringstream summary;
    replay::write_report_summary(summary, r);
    EXPECT_NE(summary.str().find("recorded at two speeds               1 kernel(s)"),
              std::string::npos)
        << summary.str();

    std::ostringstream first;
    replay::write_report_json(first, r);
    EXPECT_EQ(first.str().find("\"recorded_groups\"", first.str().find("\"bbbb\"")),
              std::string::npos);  // written only where a sample splits
    const std::string path = temp_path("two_speeds.json");
    write_file(path, first.str());
    const Report back = replay::read_report_json(path);
    ASSERT_EQ(back.kernels[0].recorded_groups.size(), 2u);
    EXPECT_DOUBLE_EQ(back.kernels[0].recorded_groups[1].median, 7.1);
    EXPECT_EQ(back.kernels[0].replayed_groups[1].count, 6u);
    EXPECT_TRUE(back.kernels[1].recorded_groups.empty());
    std::ostringstream second;
    replay::write_report_json(second, back);
    EXPECT_EQ(second.str(), first.str());
}

TEST(Report, TimelineRoundTrip) {
    Report r = hand_made();
    r.mode = "sequential";
    replay::ReportTimeline t;
    t.issue_path = "graph+direct";
    t.recorded.span_us = 33900.5;
    t.recorded.kernel_us = 2559.0;
    t.recorded.median_gap_us = 20.5;
    t.recorded.max_gap_us = 830.25;
    t.recorded.median_kernel_gap_us = 20.5;
    t.recorded.activities = 1127;
    t.recorded.gaps = 1126;
    for (int i = 1; i <= 2; ++i) {
        replay::TimelineFigures f;
        f.span_us = 3000.0 + i;
        f.kernel_us = 2600.125;
        f.warm_read_us = 310.5;
        f.median_gap_us = 1.5;
        f.max_gap_us = 12.0 * i;
        f.median_kernel_gap_us = 2.25;
        f.activities = 1127;
        f.gaps = 1126;
        replay::IterationResult it = replay::iteration_result(i, f, t.recorded);
        it.issue_host_us = 45.25;
        it.unattributed = static_cast<std::size_t>(i - 1);
        t.iterations.push_back(it);
    }
    t.first_to_last_max_gap = 0.5;
    t.first_uses = {"2 CUDA modules loaded"};
    r.timeline = t;
    r.totals.recorded_span_us = 33900.5;
    r.totals.replayed_span_us = 3002;
    r.totals.span_ratio = 3002 / 33900.5;
    replay::finalize_report(r);
    std::ostringstream first;
    replay::write_report_json(first, r);
    const std::string path = temp_path("timeline.json");
    write_file(path, first.str());
    const Report back = replay::read_report_json(path);
    ASSERT_TRUE(back.timeline.has_value());
    EXPECT_EQ(back.timeline->issue_path, "graph+direct");
    EXPECT_EQ(back.timeline->recorded.activities, 1127u);
    ASSERT_EQ(back.timeline->iterations.size(), 2u);
    EXPECT_EQ(back.timeline->iterations[1].iteration, 2);
    EXPECT_EQ(back.timeline->iterations[1].unattributed, 1u);
    EXPECT_EQ(back.timeline->iterations[1].replayed.max_gap_us, 24.0);
    EXPECT_EQ(back.timeline->iterations[1].replayed.median_kernel_gap_us, 2.25);
    EXPECT_DOUBLE_EQ(back.timeline->iterations[1].kernel_gap_ratio, 2.25 / 20.5);
    EXPECT_EQ(back.timeline->first_uses, t.first_uses);
    EXPECT_EQ(back.totals.span_ratio, r.totals.span_ratio);
    std::ostringstream second;
    replay::write_report_json(second, back);
    EXPECT_EQ(second.str(), first.str());
    // A report without a timeline (unique mode) has none after reading either; a broken one is
    // an error that names the field.
    Report plain = hand_made();
    replay::finalize_report(plain);
    std::ostringstream none;
    replay::write_report_json(none, plain);
    EXPECT_EQ(none.str().find("\"timeline\""), std::string::npos);
    // A report written before the end-to-next-start gap existed still reads, without it.
    std::string older = first.str();
    for (const std::string key : {"\"median_kernel_gap_us\"", "\"kernel_gap_ratio\""})
        for (auto at = older.find(key); at != std::string::npos; at = older.find(key)) {
            const auto line = older.rfind('\n', at);
            older.erase(line, older.find('\n', at) - line);
        }
    ASSERT_EQ(older.find("kernel_gap"), std::string::npos);
    const std::string older_path = temp_path("older_timeline.json");
    write_file(older_path, older);
    const Report old_back = replay::read_report_json(older_path);
    ASSERT_TRUE(old_back.timeline.has_value());
    EXPECT_TRUE(std::isnan(old_back.timeline->recorded.median_kernel_gap_us));
    EXPECT_TRUE(std::isnan(old_back.timeline->iterations[0].kernel_gap_ratio));
    EXPECT_EQ(old_back.timeline->iterations[0].replayed.median_gap_us, 1.5);
    std::string broken = first.str();
    broken.replace(broken.find("\"gaps\": 1126"), 13, "\"gaps\": -1");
    const std::string bad = temp_path("bad_timeline.json");
    write_file(bad, broken);
    try {
        replay::read_report_json(bad);
        ADD_FAILURE() << "a negative count was read";
    } catch (const replay::InputError& e) {
        EXPECT_NE(std::string(e.what()).find("/timeline/recorded/gaps"), std::string::npos)
            << e.what();
    }
}

TEST(Report, ReadIgnoresUnknownFields) {
    Report r = hand_made();
    replay::finalize_report(r);
    std::ostringstream out;
    replay::write_report_json(out, r);
    std::string text = out.str();
    // A later version's additions, at the top level and in a kernel, are passed over.
    text.insert(text.find("\"tool_version\""), "\"future_field\": {\"x\": [1, 2]},\n ");
    text.insert(text.find("\"rule\""), "\"future_kernel_field\": [null, \"y\"],\n    ");
    const std::string path = temp_path("future.json");
    write_file(path, text);
    const Report back = replay::read_report_json(path);
    ASSERT_EQ(back.kernels.size(), r.kernels.size());
    EXPECT_EQ(back.kernels[0].rule, r.kernels[0].rule);
    EXPECT_EQ(back.kernels[0].samples_us, r.kernels[0].samples_us);
}

// The report's JSON text, an edit of it, and the error its reading gives.
struct Broken {
    std::string text;
    replay::InputError error{"", 0, ""};
};
std::string report_text(const Report& r) {
    std::ostringstream out;
    replay::write_report_json(out, r);
    return out.str();
}
Broken read_broken(const std::string& name, const std::string& text) {
    const std::string path = temp_path(name);
    write_file(path, text);
    try {
        replay::read_report_json(path);
    } catch (const replay::InputError& e) {
        EXPECT_EQ(e.file(), path);
        return {text, e};
    }
    ADD_FAILURE() << name << ": read without an error";
    return {text, replay::InputError("", 0, "")};
}
// Offset of the `n`th (from 0) occurrence of `needle`, plus `skip`.
std::uint64_t at(const std::string& text, const std::string& needle, std::size_t n = 0,
                 std::size_t skip = 0) {
    std::size_t pos = text.find(needle);
    while (n-- > 0 && pos != std::string::npos) pos = text.find(needle, pos + 1);
    EXPECT_NE(pos, std::string::npos) << needle;
    return pos + skip;
}
void expect_error(const Broken& b, const std::string& pointer, const std::string& what,
                  std::uint64_t offset) {
    const std::string message = b.error.what();
    EXPECT_NE(message.find(": " + pointer + ": "), std::string::npos) << message;
    EXPECT_NE(message.find(what), std::string::npos) << message;
    EXPECT_EQ(b.error.offset(), offset) << message;
}

TEST(Report, ReadRejectsDurationsThatAreNoMeasurement) {
    Report r = hand_made();
    replay::finalize_report(r);
    Report negative = r;
    negative.kernels[1].samples_us[2] = -1.25;
    auto b = read_broken("negative.json", report_text(negative));
    expect_error(b, "/kernels/1/samples_us/2", "-1.25 is negative", at(b.text, "-1.25"));

    Report huge = r;
    huge.kernels[2].samples_us[0] = 1e308;  // its median used to overflow to inf
    b = read_broken("huge.json", report_text(huge));
    expect_error(b, "/kernels/2/samples_us/0", "beyond any", at(b.text, "1e+308"));

    Report nan = r;
    nan.kernels[0].samples_us[1] = NAN;  // written as null
    b = read_broken("nan.json", report_text(nan));
    expect_error(b, "/kernels/0/samples_us/1", "null where a number is required",
                 b.text.find("null", b.text.find("\"samples_us\"")));

    Report stats = r;
    stats.kernels[4].recorded_us.median = -2.5;
    b = read_broken("stats.json", report_text(stats));
    expect_error(b, "/kernels/4/recorded_us/median", "negative", at(b.text, "-2.5"));

    Report share = r;
    share.totals.recipe_coverage = 1.5;
    b = read_broken("share.json", report_text(share));
    expect_error(b, "/totals/recipe_coverage", "above 1", at(b.text, "1.5"));
}

TEST(Report, ReadRejectsWhatTheSchemaDoesNotAllow) {
    Report r = hand_made();
    replay::finalize_report(r);

    Report duplicate = r;
    duplicate.kernels[3].id = duplicate.kernels[1].id;
    auto b = read_broken("duplicate.json", report_text(duplicate));
    expect_error(b, "/kernels/3/id", "is also /kernels/1/id", at(b.text, "\"id\": \"bbbb\"", 1, 6));

    Report version = r;
    version.schema = "replay.report/2";
    b = read_broken("version.json", report_text(version));
    expect_error(b, "/schema", "this build reads replay.report/1",
                 at(b.text, "\"replay.report/2\""));

    Report running = r;
    running.kernels[0].outcome = KernelOutcome::Pending;  // never in a finished report
    b = read_broken("pending.json", report_text(running));
    expect_error(b, "/kernels/0/disposition", "\"pending\" is not one of",
                 at(b.text, "\"pending\""));

    std::string text = report_text(r);
    const std::size_t line = text.find("\"name_match\"", text.find("\"kernels\""));
    text.erase(line, text.find('\n', line) - line + 1);
    b = read_broken("missing.json", text);
    // At the start of the kernel's object.
    expect_error(b, "/kernels/0", "no \"name_match\"", text.find('{', text.find("\"kernels\"")));

    text = report_text(r);
    text.replace(text.find("\"count\": 3,"), 11, "\"count\": \"3\",");
    b = read_broken("type.json", text);
    expect_error(b, "/kernels/0/count", "expected a count", at(text, "\"count\": \"3\"", 0, 9));

    text = report_text(r);
    text.erase(text.find("\"schema\": \"replay.report/1\","), 28);
    b = read_broken("no_schema.json", text);
    expect_error(b, "/", "no \"schema\"", 0);
}

TEST(Report, TruncatedReportIsReportedWhereItEnds) {
    Report r = hand_made();
    replay::finalize_report(r);
    const std::string text = report_text(r);
    // Between members, inside a string, inside a number, right after "kernels": [.
    for (std::size_t cut : {text.find("\"totals\""), text.find("sm90_xmma") + 4,
                            text.find("512.5") + 2, text.find("\"kernels\": [") + 12}) {
        const auto b = read_broken("truncated.json", text.substr(0, cut));
        EXPECT_EQ(b.error.offset(), cut) << b.error.what();
        EXPECT_NE(std::string(b.error.what()).find("truncated"), std::string::npos)
            << b.error.what();
    }
    const auto empty = read_broken("empty.json", "");
    EXPECT_NE(std::string(empty.error.what()).find("empty file"), std::string::npos);
}

TEST(Report, ReadErrors) {
    const std::string not_json = temp_path("not_json.json");
    write_file(not_json, "this is not JSON at all");
    EXPECT_THROW(replay::read_report_json(not_json), replay::InputError);

    const std::string no_kernels = temp_path("no_kernels.json");
    write_file(no_kernels, R"({"schema": "replay.report/1", "mode": "unique"})");
    try {
        replay::read_report_json(no_kernels);
        FAIL() << "expected InputError";
    } catch (const replay::InputError& e) {
        EXPECT_EQ(e.file(), no_kernels);
        EXPECT_NE(std::string(e.what()).find("kernels"), std::string::npos);
    }

    const std::string other_schema = temp_path("signatures.json");
    write_file(other_schema, R"({"schema": "replay.kernel_signatures/1", "kernels": []})");
    EXPECT_THROW(replay::read_report_json(other_schema), replay::InputError);

    const std::string array = temp_path("array.json");
    write_file(array, "[1, 2, 3]");
    EXPECT_THROW(replay::read_report_json(array), replay::InputError);

    // Truncated in the middle of the kernels: an error with an offset inside the file.
    std::ostringstream full;
    Report r = hand_made();
    replay::finalize_report(r);
    replay::write_report_json(full, r);
    const std::string text = full.str();
    const std::string truncated = temp_path("truncated.json");
    const std::size_t cut = text.find("\"kernels\"") + 200;
    write_file(truncated, text.substr(0, cut));
    try {
        replay::read_report_json(truncated);
        FAIL() << "expected InputError";
    } catch (const replay::InputError& e) {
        EXPECT_LE(e.offset(), cut);
    }

    const std::string no_id = temp_path("no_id.json");
    write_file(no_id, R"({"kernels": [{"name": "x"}]})");
    EXPECT_THROW(replay::read_report_json(no_id), replay::InputError);

    EXPECT_THROW(replay::read_report_json(temp_path("does_not_exist.json")), replay::InputError);
}

// ---- the printed summary ---------------------------------------------------------------------

std::string summary_of(const Report& r) {
    std::ostringstream out;
    replay::write_report_summary(out, r);
    return out.str();
}

TEST(ReportSummary, NothingReplayedSaysWhyAndPrintsNoNan) {
    Report r;
    r.mode = "unique";
    r.backend = "cuda";
    auto gemm = kernel("a", "gemm_k", "kernel", Tier::Gemm, {4, 4}, {});
    gemm.outcome = KernelOutcome::Skipped;
    gemm.reason = "cuBLASLt has no algorithm for it";
    auto triton = kernel("b", "triton_k", "kernel", Tier::NotReplayable, {30}, {});
    triton.reason = "a Triton kernel without its binary";
    r.kernels = {gemm, triton};
    replay::finalize_report(r);
    const std::string text = summary_of(r);
    EXPECT_EQ(text.find("nan"), std::string::npos) << text;
    EXPECT_NE(text.find("n/a (nothing replayed)"), std::string::npos) << text;
    const std::string why = replay::why_nothing_was_replayed(r);
    // Largest recorded time first.
    EXPECT_NE(why.find("nothing was replayed: 2 unique kernels"), std::string::npos) << why;
    EXPECT_LT(why.find("Triton"), why.find("cuBLASLt")) << why;
    Report replayed = hand_made();
    replay::finalize_report(replayed);
    EXPECT_TRUE(replay::why_nothing_was_replayed(replayed).empty());
}

// The cpu backend's replays take many times as long on the reference BLAS: the summary says so
// (and how to get OpenBLAS), and says nothing of a BLAS that is not the reference one.
TEST(ReportSummary, TheCpuBackendOnTheReferenceBlasIsSaid) {
    Report r = hand_made();
    r.backend = "cpu";
    replay::finalize_report(r);
    r.notes = {"BLAS: /usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblasp-r0.3.21.so"};
    EXPECT_EQ(summary_of(r).find("BLAS"), std::string::npos) << summary_of(r);
    r.notes = {
        "BLAS: /usr/lib/x86_64-linux-gnu/blas/libblas.so.3 (the reference BLAS: CPU GEMMs "
        "some 30x slower than OpenBLAS's; on Debian, apt-get install libopenblas0-openmp "
        "selects OpenBLAS)"};
    EXPECT_NE(summary_of(r).find("note: BLAS: /usr/lib/x86_64-linux-gnu/blas/libblas.so.3"),
              std::string::npos)
        << summary_of(r);
    r.backend = "cuda";
    EXPECT_EQ(summary_of(r).find("BLAS"), std::string::npos) << summary_of(r);
}

// A recording whose activities ran back to back (a 4 ns median gap) gets no gap ratio: the
// summary says why, never "x2113" nor "xn/a".
TEST(ReportSummary, ABackToBackRecordingGetsNoGapRatio) {
    const auto summary_with = [](double recorded_gap_us) {
        Report r = hand_made();
        r.mode = "sequential";
        replay::ReportTimeline t;
        t.issue_path = "direct";
        t.recorded = {.span_us = 1000,
                      .kernel_us = 900,
                      .median_gap_us = recorded_gap_us,
                      .median_kernel_gap_us = recorded_gap_us};
        const replay::TimelineFigures f{.span_us = 1100,
                                        .kernel_us = 900,
                                        .warm_read_us = 50,
                                        .median_gap_us = 8,
                                        .median_kernel_gap_us = 8.452};
        t.iterations.push_back(replay::iteration_result(1, f, t.recorded));
        r.timeline = t;
        replay::finalize_report(r);
        return summary_of(r);
    };
    const std::string back_to_back = summary_with(0.004);
    EXPECT_NE(back_to_back.find("(recorded 0.0, n/a (no ratio: recorded back to back))"),
              std::string::npos)
        << back_to_back;
    EXPECT_EQ(back_to_back.find("x2113"), std::string::npos) << back_to_back;
    EXPECT_EQ(back_to_back.find("xn/a"), std::string::npos) << back_to_back;
    EXPECT_NE(back_to_back.find("(x1.100)"), std::string::npos) << back_to_back;  // the span's
    const std::string spaced = summary_with(4.0);
    EXPECT_NE(spaced.find("(recorded 4.0, x2.113)"), std::string::npos) << spaced;
}

TEST(ReportSummary, FiguresWithoutAValueAreNotApplicableNotNan) {
    // Only a copy replayed: no per-kernel error, no GEMM; a sequential pass of 0 us.
    Report r = hand_made();
    r.kernels = {r.kernels[3], r.kernels[4]};
    r.totals.sequential_kernel_us = 0;
    replay::finalize_report(r);
    const std::string text = summary_of(r);
    EXPECT_EQ(text.find("nan"), std::string::npos) << text;
    EXPECT_EQ(text.find("inf"), std::string::npos) << text;
    EXPECT_NE(text.find("median |error| per kernel          n/a (no kernel replayed"),
              std::string::npos)
        << text;
    // With every figure present, the numbers.
    Report full = hand_made();
    replay::finalize_report(full);
    const std::string all = summary_of(full);
    EXPECT_EQ(all.find("n/a"), std::string::npos) << all;
    EXPECT_NE(all.find("(+12.00%)"), std::string::npos) << all;
}

TEST(Report, KernelsCsv) {
    Report r = hand_made();
    r.kernels[3].reason = "line one\nline two, with \"quotes\"";
    replay::finalize_report(r);
    std::ostringstream out;
    replay::write_kernels_csv(out, r);
    const auto rows = parse_csv(out.str());
    ASSERT_EQ(rows.size(), 1 + r.kernels.size());
    const std::vector<std::string> header = {"id",
                                             "name",
                                             "kind",
                                             "tier",
                                             "rule",
                                             "disposition",
                                             "count",
                                             "recorded_median_us",
                                             "recorded_sum_us",
                                             "replayed_median_us",
                                             "replayed_min_us",
                                             "replayed_mean_us",
                                             "replayed_stddev_us",
                                             "replayed_p95_us",
                                             "replayed_p99_us",
                                             "error_pct",
                                             "name_match",
                                             "gflops_per_s",
                                             "gb_per_s",
                                             "flops",
                                             "bytes",
                                             "pct_peak_flops",
                                             "pct_peak_bandwidth",
                                             "reason",
                                             "energy_median_uj",
                                             "energy_min_uj",
                                             "energy_max_uj",
                                             "energy_windows",
                                             "energy_dynamic_uj",
                                             "energy_power_w",
                                             "energy_edp_uj_us",
                                             "energy_pj_per_flop",
                                             "energy_why"};
    EXPECT_EQ(rows[0], header);
    for (const auto& row : rows) EXPECT_EQ(row.size(), header.size());
    // The comma and the quotes in the GEMM's name survive.
    EXPECT_EQ(rows[1][1], "sm90_xmma_gemm_f16f16_f16f32, \"tn\"");
    EXPECT_NE(out.str().find("\"sm90_xmma_gemm_f16f16_f16f32, \"\"tn\"\"\""), std::string::npos);
    EXPECT_EQ(rows[1][3], "2");
    EXPECT_EQ(rows[1][6], "3");
    EXPECT_EQ(std::stod(rows[1][7]), 10);
    EXPECT_EQ(std::stod(rows[1][9]), 11);
    EXPECT_NEAR(std::stod(rows[1][15]), 10, 1e-9);
    EXPECT_EQ(rows[1][16], "true");
    EXPECT_EQ(std::stod(rows[1][17]), 512.5);
    EXPECT_EQ(rows[1][18], "");  // NaN: empty
    EXPECT_EQ(rows[3][1], "vectorized_elementwise_kernel<4, at::native::add>");
    // Not replayed: empty tier, replayed figures, error and name_match; the multi-line reason
    // intact.
    EXPECT_EQ(rows[4][3], "");
    EXPECT_EQ(rows[4][9], "");
    EXPECT_EQ(rows[4][15], "");
    EXPECT_EQ(rows[4][16], "");
    EXPECT_EQ(rows[4][23], "line one\nline two, with \"quotes\"");
    EXPECT_EQ(rows[5][2], "memcpy");
    EXPECT_EQ(std::stod(rows[5][18]), 12.25);
}

}  // namespace
