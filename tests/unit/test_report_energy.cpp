// report.json, kernels.csv and the summary with --energy: figures per kernel, tier and step, the
// comparisons, round trips, and the n/a path without a counter.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "report_fixtures.h"

namespace {

// ---- energy (--energy) --------------------------------------------------------------------------

// hand_made() with energy as a unique run with a working counter measured it: the first GEMM and
// the aten op have samples, the second GEMM was below --energy-min-us.
Report with_energy() {
    Report r = hand_made();
    r.energy.requested = true;
    replay::EnergyProbe& p = r.energy.probe;
    p.available = true;
    p.method = "nvmlDeviceGetTotalEnergyConsumption";
    p.counter_period_ms = 100;
    p.counter_jitter_ms = 0.5;
    p.counter_read_ms = 0.02;
    p.power_period_ms = 100;
    p.idle_power_w = 100;
    r.energy.window_ms = 200;
    r.energy.window_updates = 2;
    r.energy.windows = 5;
    r.kernels[0].energy.samples_uj = {5000, 5100, 4900, 5050, 4950};
    r.kernels[0].energy.dynamic_uj = 3900;
    r.kernels[0].energy.flops = 2.0 * 1024 * 1024 * 1024;
    r.kernels[1].energy.why = "recorded median below --energy-min-us 6";
    r.kernels[2].energy.samples_uj = {600, 620, 610, 590, 605};
    r.kernels[2].energy.dynamic_uj = 300;
    r.kernels[2].energy.limited_windows = 3;
    r.kernels[2].energy.limited_by = "power cap";
    r.kernels[2].energy.loop_us = 7.5;
    r.kernels[2].energy.loop_power_w = 420;  // power_w follows it (kernel 0: energy / median)
    r.kernels[2].energy.sm_clock_mhz = 1755;
    r.kernels[2].energy.temperature_c = 61.5;
    r.energy.step.samples_mj = {30, 31, 29, 30.5, 29.5};
    r.energy.step.sm_clock_mhz = 1980;
    r.energy.step.temperature_c = 48;
    r.energy.step.limited_windows = 1;
    r.energy.step.limited_by = "power cap, thermal slowdown";
    r.energy.step.step_us = 200;
    r.energy.model.mj = 32;
    r.energy.model.step_us = 210;
    r.energy.model.idle_power_w = 100;
    return r;
}

TEST(ReportEnergy, FiguresPerKernelPerTierAndPerStep) {
    Report r = with_energy();
    replay::finalize_report(r);
    const auto& g = r.kernels[0].energy;
    EXPECT_EQ(g.uj.count, 5u);
    EXPECT_EQ(g.uj.median, 5000);
    EXPECT_DOUBLE_EQ(g.power_w, 5000 / 11.0);  // uJ / replayed us = W
    EXPECT_DOUBLE_EQ(g.edp_uj_us, 5000 * 11.0);
    EXPECT_DOUBLE_EQ(g.pj_per_flop, 5000 * 1e6 / (2.0 * 1024 * 1024 * 1024));
    EXPECT_TRUE(std::isnan(r.kernels[2].energy.pj_per_flop));  // not a GEMM
    // Tiers: count x median per launch; the GEMM tier has one measured kernel of its two.
    for (const auto& t : r.tiers) {
        if (t.tier == Tier::Gemm) {
            EXPECT_DOUBLE_EQ(t.energy_mj, 3 * 5000 / 1000.0);
        } else if (t.tier == Tier::AtenOp) {
            EXPECT_DOUBLE_EQ(t.energy_mj, 4 * 605 / 1000.0);
        } else if (t.tier == Tier::Copy) {
            EXPECT_TRUE(std::isnan(t.energy_mj));  // none measured: n/a
        }
    }
    EXPECT_DOUBLE_EQ(r.energy.predicted_mj, (3 * 5000 + 4 * 605) / 1000.0);
    EXPECT_DOUBLE_EQ(r.energy.predicted_dynamic_mj, (3 * 3900 + 4 * 300) / 1000.0);
    // The step: median 30 mJ, of which the idle power over 200 us is 20 mJ.
    EXPECT_EQ(r.energy.step.mj, 30);
    EXPECT_DOUBLE_EQ(r.energy.step.static_mj, 20);
    EXPECT_DOUBLE_EQ(r.energy.step.dynamic_mj, 10);
    EXPECT_NEAR(r.energy.predicted_vs_step_pct, 29, 1e-9);  // dynamic: 12.9 mJ vs 10 mJ
    EXPECT_DOUBLE_EQ(r.energy.step_vs_model_pct, (30.0 - 32) / 32 * 100);
    EXPECT_DOUBLE_EQ(r.energy.step_vs_model_dynamic_pct, (10.0 - 11) / 11 * 100);
    // The kernels measured had (3 x 10 + 4 x 2) us of the 70 us recorded (copies included).
    EXPECT_DOUBLE_EQ(r.energy.coverage, 38.0 / 70.0);
}

// The capture probed its own idle power (104 W) where this run probed 100 W: the comparisons at a
// reference step's duration use this run's idle power on both sides.
TEST(ReportEnergy, ComparisonsAtTheReferenceStepsDurationUseOneIdlePower) {
    Report r = with_energy();
    r.energy.model.idle_power_w = 104;
    replay::finalize_report(r);
    const double idle_w = 100, step_us = 200, model_us = 210, model_mj = 32;
    const double step_mj = 30;  // median of the step's samples
    const double step_dynamic = step_mj - idle_w * step_us / 1000;
    const double sum_dynamic = (3 * 3900 + 4 * 300) / 1000.0;
    // The sum over kernels on the replayed step's footing.
    const double sum_at_step = sum_dynamic + idle_w * step_us / 1000;
    EXPECT_DOUBLE_EQ(r.energy.predicted_at_step_mj, sum_at_step);
    EXPECT_DOUBLE_EQ(r.energy.predicted_at_step_vs_step_pct,
                     (sum_at_step - step_mj) / step_mj * 100);
    EXPECT_DOUBLE_EQ(r.energy.predicted_at_step_w, (sum_at_step - step_mj) / step_us * 1000);
    // The replayed step on the real step's footing.
    const double step_at_model = step_dynamic + idle_w * model_us / 1000;
    EXPECT_DOUBLE_EQ(r.energy.step_at_model_mj, step_at_model);
    EXPECT_DOUBLE_EQ(r.energy.step_at_model_vs_model_pct,
                     (step_at_model - model_mj) / model_mj * 100);
    EXPECT_DOUBLE_EQ(r.energy.step_at_model_w, (step_at_model - model_mj) / model_us * 1000);
    const double sum_at_model = sum_dynamic + idle_w * model_us / 1000;
    EXPECT_DOUBLE_EQ(r.energy.predicted_at_model_mj, sum_at_model);
    EXPECT_DOUBLE_EQ(r.energy.predicted_at_model_vs_model_pct,
                     (sum_at_model - model_mj) / model_mj * 100);
    // Dynamic against dynamic: with the capture's idle power, and with this run's.
    const double model_dynamic_own = model_mj - 104 * model_us / 1000;
    const double model_dynamic_same = model_mj - idle_w * model_us / 1000;
    EXPECT_DOUBLE_EQ(r.energy.step_vs_model_dynamic_pct,
                     (step_dynamic - model_dynamic_own) / model_dynamic_own * 100);
    EXPECT_DOUBLE_EQ(r.energy.model_dynamic_same_idle_mj, model_dynamic_same);
    EXPECT_DOUBLE_EQ(r.energy.step_vs_model_dynamic_same_idle_pct,
                     (step_dynamic - model_dynamic_same) / model_dynamic_same * 100);
    // Same absolute difference either way: whole at the real step's duration, or dynamic with
    // one idle power.
    EXPECT_NEAR(step_at_model - model_mj, step_dynamic - model_dynamic_same, 1e-12);
}

TEST(ReportEnergy, ComparisonsAreNaWithoutTheirInputs) {
    Report r = with_energy();
    r.energy.model = {};    // no timing.json
    r.mode = "sequential";  // no sum over kernels
    replay::finalize_report(r);
    EXPECT_DOUBLE_EQ(r.energy.step.dynamic_mj, 10);
    for (const double x : {r.energy.predicted_at_step_mj, r.energy.predicted_at_step_vs_step_pct,
                           r.energy.predicted_at_step_w, r.energy.step_at_model_mj,
                           r.energy.step_at_model_vs_model_pct, r.energy.step_at_model_w,
                           r.energy.predicted_at_model_mj, r.energy.model_dynamic_same_idle_mj,
                           r.energy.step_vs_model_dynamic_same_idle_pct})
        EXPECT_TRUE(std::isnan(x));
}

TEST(ReportEnergy, JsonAndCsvRoundTrip) {
    Report r = with_energy();
    replay::finalize_report(r);
    std::ostringstream first;
    replay::write_report_json(first, r);
    const std::string path = temp_path("energy.json");
    write_file(path, first.str());
    const Report back = replay::read_report_json(path);
    ASSERT_TRUE(back.energy.requested);
    EXPECT_TRUE(back.energy.probe.available);
    EXPECT_EQ(back.energy.probe.counter_period_ms, 100);
    ASSERT_EQ(back.kernels.size(), r.kernels.size());
    for (std::size_t i = 0; i < r.kernels.size(); ++i) {
        EXPECT_EQ(back.kernels[i].energy.samples_uj, r.kernels[i].energy.samples_uj);
        EXPECT_EQ(back.kernels[i].energy.why, r.kernels[i].energy.why);
        EXPECT_EQ(back.kernels[i].energy.limited_windows, r.kernels[i].energy.limited_windows);
        EXPECT_EQ(back.kernels[i].energy.limited_by, r.kernels[i].energy.limited_by);
        expect_same_double(back.kernels[i].energy.power_w, r.kernels[i].energy.power_w);
        expect_same_double(back.kernels[i].energy.loop_us, r.kernels[i].energy.loop_us);
        expect_same_double(back.kernels[i].energy.loop_power_w, r.kernels[i].energy.loop_power_w);
        expect_same_double(back.kernels[i].energy.sm_clock_mhz, r.kernels[i].energy.sm_clock_mhz);
        expect_same_double(back.kernels[i].energy.temperature_c, r.kernels[i].energy.temperature_c);
    }
    EXPECT_DOUBLE_EQ(back.kernels[2].energy.power_w, 420);
    EXPECT_DOUBLE_EQ(back.energy.step.sm_clock_mhz, 1980);
    EXPECT_DOUBLE_EQ(back.energy.step.temperature_c, 48);
    EXPECT_EQ(back.energy.step.samples_mj, r.energy.step.samples_mj);
    EXPECT_EQ(back.energy.step.limited_windows, 1);
    EXPECT_EQ(back.energy.step.limited_by, "power cap, thermal slowdown");
    expect_same_double(back.energy.predicted_mj, r.energy.predicted_mj);
    expect_same_double(back.energy.step_at_model_mj, r.energy.step_at_model_mj);
    expect_same_double(back.energy.predicted_at_step_w, r.energy.predicted_at_step_w);
    EXPECT_NE(first.str().find("\"why\": \"recorded median below --energy-min-us 6\""),
              std::string::npos);

    std::ostringstream csv;
    replay::write_kernels_csv(csv, r);
    const auto rows = parse_csv(csv.str());
    const auto& header = rows[0];
    const auto col = [&](const std::string& name) {
        return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) -
                                        header.begin());
    };
    ASSERT_LT(col("energy_why"), header.size());
    EXPECT_EQ(std::stod(rows[1][col("energy_median_uj")]), 5000);
    EXPECT_EQ(std::stod(rows[1][col("energy_windows")]), 5);
    EXPECT_EQ(rows[2][col("energy_median_uj")], "");  // not measured: empty, and why
    EXPECT_EQ(rows[2][col("energy_why")], "recorded median below --energy-min-us 6");
}

TEST(ReportEnergy, WithoutACounterEveryFigureIsNullAndTheReasonIsGiven) {
    Report r = hand_made();
    r.energy.requested = true;
    r.energy.probe.why = "the cpu backend measures no energy (no board energy counter)";
    replay::finalize_report(r);
    std::ostringstream json;
    replay::write_report_json(json, r);
    const std::string text = json.str();
    EXPECT_NE(text.find("\"available\": false"), std::string::npos);
    EXPECT_NE(text.find("\"predicted_mj\": null"), std::string::npos);
    EXPECT_NE(text.find("\"energy_mj\": null"), std::string::npos);
    EXPECT_EQ(text.find("\"energy_mj\": 0"), std::string::npos);  // never 0
    std::ostringstream csv;
    replay::write_kernels_csv(csv, r);
    const auto rows = parse_csv(csv.str());
    for (std::size_t i = 1; i < rows.size(); ++i) {
        EXPECT_EQ(rows[i][20], "");  // energy_median_uj
        EXPECT_EQ(rows[i].back(), r.energy.probe.why);
    }
    // A report made without --energy has no energy at all.
    std::ostringstream plain;
    replay::write_report_json(plain, hand_made());
    EXPECT_EQ(plain.str().find("\"energy\""), std::string::npos);
}

TEST(ReportEnergy, TheRealStepComesFromTheCapturesTimingJson) {
    const std::string trace = "traces/h200/bloom_b1.json.gz";
    const auto beside = replay::timing_file_beside(trace);
    ASSERT_TRUE(beside.has_value());
    EXPECT_EQ(*beside, "traces/h200/bloom_b1.timing.json");
    EXPECT_FALSE(replay::timing_file_beside("traces/h200/bloom560m_fp16_b1_s5.json.gz"));
    const replay::ModelTiming t = replay::read_model_timing(*beside);
    EXPECT_NEAR(t.median_us, 13571.66, 0.01);
    ASSERT_TRUE(t.energy.measured());
    EXPECT_NEAR(t.energy.mj, 1806.217, 0.001);
    EXPECT_NEAR(t.energy.step_us, 2.002792339999999e6 / 152, 1e-6);
    EXPECT_EQ(t.energy.gpu, "NVIDIA H200");

    Report r = with_energy();
    replay::finalize_report(r);
    replay::add_model_energy(r, t);
    EXPECT_EQ(r.energy.model.mj, t.energy.mj);
    EXPECT_DOUBLE_EQ(r.energy.model.static_mj, 127.838 * t.energy.step_us / 1000.0);
    // Replayed on an H100: the real step is another GPU's, and the report says so.
    ASSERT_FALSE(r.energy.notes.empty());
    EXPECT_NE(r.energy.notes.back().find("measured on NVIDIA H200"), std::string::npos);

    const std::string no_energy = temp_path("no_energy.timing.json");
    write_file(no_energy, R"({"median_us": 10, "energy_note": "NVML not loadable"})");
    const replay::ModelTiming n = replay::read_model_timing(no_energy);
    EXPECT_FALSE(n.energy.measured());
    EXPECT_EQ(n.why_no_energy, "NVML not loadable");
    const std::string bad = temp_path("bad.timing.json");
    write_file(bad, R"({"median_us": 10, "energy_mj_per_step": -1})");
    EXPECT_THROW(replay::read_model_timing(bad), replay::InputError);
}

TEST(ReportSummary, EnergyIsPrintedOrSaidToBeNotAvailable) {
    Report none = hand_made();
    none.energy.requested = true;
    none.energy.probe.why = "the cpu backend measures no energy (no board energy counter)";
    replay::finalize_report(none);
    std::ostringstream a;
    replay::write_report_summary(a, none);
    EXPECT_NE(a.str().find("energy                             n/a (the cpu backend measures"),
              std::string::npos)
        << a.str();
    Report measured = with_energy();
    replay::finalize_report(measured);
    std::ostringstream b;
    replay::write_report_summary(b, measured);
    EXPECT_NE(b.str().find("100.0 ms period"), std::string::npos) << b.str();
    EXPECT_NE(b.str().find("sum of count x J/launch          17.42 mJ"), std::string::npos)
        << b.str();
    EXPECT_EQ(b.str().find("nan"), std::string::npos);
    std::ostringstream c;
    replay::write_report_summary(c, hand_made());  // without --energy: no energy lines
    EXPECT_EQ(c.str().find("energy"), std::string::npos);
}

}  // namespace
