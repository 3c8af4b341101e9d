// Timing models on synthetic sweeps whose truth is known: the piecewise-linear model recovers a
// piecewise-linear truth with a launch floor, the trees take over only where they predict better,
// and model.json reads back to the same predictions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "replay/recipe_dims.h"
#include "replay/source.h"
#include "replay/stats.h"
#include "replay/timing_model.h"
#include "test_support.h"

namespace replay {
namespace {

// Truth: a 5 us launch floor; 2 us + 40 us/GFLOP, steeper (+60 us/GFLOP) past 1 GFLOP; 0.3 us/MB.
double truth(const RecipeWork& w) {
    const double u = w.flops * 1e-9, v = w.bytes * 1e-6;
    return std::max(5.0, 2.0 + 40.0 * u + 60.0 * std::max(0.0, u - 1.0) + 0.3 * v);
}

std::vector<TimingPoint> synthetic(std::size_t n, std::uint32_t seed, double noise) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> log_flops(std::log(1e5), std::log(1e10));
    std::uniform_real_distribution<double> log_bytes(std::log(1e4), std::log(1e8));
    std::normal_distribution<double> jitter(0.0, noise);
    std::vector<TimingPoint> points;
    for (std::size_t i = 0; i < n; ++i) {
        TimingPoint p;
        p.work.flops = std::exp(log_flops(rng));
        p.work.bytes = std::exp(log_bytes(rng));
        p.work.elements = p.work.bytes / 2;
        p.time_us = truth(p.work) * (1.0 + jitter(rng));
        points.push_back(p);
    }
    return points;
}

HeldOutError errors_on(const KernelTimingModel& model, const std::vector<TimingPoint>& test) {
    std::vector<double> e;
    for (const auto& p : test) e.push_back(std::abs(model.predict(p.work) / truth(p.work) - 1.0));
    std::sort(e.begin(), e.end());
    return {e.size(), 100 * stats::percentile(e, 0.5), 100 * stats::percentile(e, 0.9)};
}

TEST(TimingModel, PiecewiseLinearTruthWithNoiseIsRecoveredOnHeldOutPoints) {
    const auto train = synthetic(300, 1, 0.03);
    const auto test = synthetic(200, 2, 0.0);  // never seen: other shapes, noise-free truth
    const KernelTimingModel model = fit_kernel_model(train, FitOptions{});
    const HeldOutError held_out = errors_on(model, test);
    EXPECT_LE(held_out.median_pct, 5.0) << model.kind;
    EXPECT_LE(held_out.p90_pct, 15.0) << model.kind;
    // The cross-validated figures the model reports agree with that.
    EXPECT_LE(model.error().median_pct, 5.0);
    EXPECT_LE(model.error().p90_pct, 15.0);
    // Explainable: the floor is the launch floor of the data.
    EXPECT_NEAR(model.linear.floor_us, 5.0, 0.5);
    EXPECT_EQ(model.kind, "piecewise_linear") << "linear " << model.linear_error.median_pct << "/" << model.linear_error.p90_pct << " trees " << model.trees_error.median_pct << "/" << model.trees_error.p90_pct;
}

TEST(TimingModel, TreesAreUsedOnlyWhenTheyWin) {
    // A step function of the work (a kernel switching tiles): no line fits it, trees do.
    std::vector<TimingPoint> points;
    for (int i = 0; i < 200; ++i) {
        TimingPoint p;
        p.work.flops = 1e6 * (1 + i);
        p.work.bytes = 1e5;
        p.work.elements = 1e3;
        p.time_us = (i / 25) % 2 == 0 ? 10.0 : 40.0;
        points.push_back(p);
    }
    const KernelTimingModel model = fit_kernel_model(points, FitOptions{});
    EXPECT_EQ(model.kind, "boosted_trees");
    EXPECT_LT(model.trees_error.median_pct, model.linear_error.median_pct);
    EXPECT_LE(model.error().median_pct, 5.0);
}

TEST(TimingModel, TooFewPointsIsAnError) {
    EXPECT_THROW(fit_kernel_model(synthetic(3, 1, 0), FitOptions{}), std::invalid_argument);
}

TEST(TimingModel, ModelJsonRoundTripsPredictions) {
    TimingModelFile file;
    file.gpu = "test GPU";
    for (int trees = 0; trees < 2; ++trees) {
        KernelTimingModel m = fit_kernel_model(synthetic(120, 3, 0.02), FitOptions{});
        if (trees) {
            m.kind = "boosted_trees";
            m.trees = fit_boosted_trees({{0.0}, {1.0}, {2.0}, {3.0}, {4.0}, {5.0}, {6.0}},
                                        {1, 1, 1, 5, 5, 5, 5}, BoostedTreesOptions{});
        }
        m.kernel_id = trees ? "b" : "a";
        m.family = "tier=2 op=aten::mm m=*";
        m.masked = {"m"};
        file.kernels.push_back(std::move(m));
    }
    const std::string path =
        (std::filesystem::temp_directory_path() / ("replay_model_" + std::to_string(::getpid()) + ".json")).string();
    {
        std::ofstream out(path);
        write_timing_model(out, file);
    }
    const TimingModelFile back = read_timing_model(path);
    ASSERT_EQ(back.kernels.size(), 2u);
    for (const auto& p : synthetic(20, 4, 0))
        for (std::size_t k = 0; k < 2; ++k)
            EXPECT_NEAR(back.kernels[k].predict(p.work), file.kernels[k].predict(p.work),
                        1e-6 * file.kernels[k].predict(p.work));
    EXPECT_EQ(back.kernels[1].kind, "boosted_trees");
    std::filesystem::remove(path);

    testing::TempFile broken("broken_model.json", R"({"schema": "replay.timing_model/1", "gpu": "x", "kernels": [{"kernel_id": 1}]})");
    try {
        read_timing_model(broken.path());
        FAIL() << "a broken model was read";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("/kernels/0/kernel_id"), std::string::npos) << e.what();
    }
}

// A layer norm's time follows its shape, not its bytes: one block per row, so rows x cols with
// the same bytes take different times (a power law in each dim, as on the H200). The model on
// the swept dims must be chosen, predict held-out points well, and survive the JSON.
TEST(TimingModel, DimsFeaturesWinWhereTheShapeMattersAndRoundTrip) {
    std::vector<TimingPoint> points;
    std::mt19937 rng(5);
    std::normal_distribution<double> noise(0.0, 0.02);
    for (double rows = 1; rows <= 2048; rows *= 2)
        for (double cols = 256; cols <= 4352; cols += 256) {
            TimingPoint p;
            p.work.bytes = 4 * rows * cols;
            p.work.elements = rows * cols;
            p.dims = {rows, cols};
            p.time_us = 2.0 * std::pow(cols / 256, 0.6) * std::pow(rows, 0.15) * std::exp(noise(rng));
            points.push_back(p);
        }
    FitOptions options;
    options.dim_names = {"arg0.d1", "arg0.d2"};
    const KernelTimingModel model = fit_kernel_model(points, options);
    EXPECT_EQ(model.kind, "log_quadratic");
    ASSERT_TRUE(model.quadratic);
    EXPECT_EQ(model.features().back(), "log:arg0.d2");
    EXPECT_LT(model.dims_quadratic_error.median_pct, 5.0);
    EXPECT_LT(model.dims_quadratic_error.p90_pct, 15.0);
    EXPECT_LT(model.dims_quadratic_error.median_pct, model.linear_error.median_pct);

    TimingModelFile file;
    file.kernels.push_back(model);
    std::ostringstream text;
    write_timing_model(text, file);
    const auto path = std::filesystem::temp_directory_path() / "replay_dims_model.json";
    std::ofstream(path) << text.str();
    const TimingModelFile back = read_timing_model(path.string());
    std::filesystem::remove(path);
    ASSERT_EQ(back.kernels.size(), 1u);
    ASSERT_TRUE(back.kernels[0].quadratic);
    EXPECT_EQ(back.kernels[0].quadratic->features, model.quadratic->features);
    const auto z = log_features(model.features(), points[40].work, {{"arg0.d1", 8}, {"arg0.d2", 2560}});
    ASSERT_TRUE(z);
    EXPECT_NEAR(back.kernels[0].quadratic->predict(*z), model.quadratic->predict(*z), 1e-9 * model.quadratic->predict(*z));
    EXPECT_FALSE(log_features(model.features(), points[40].work, {{"arg0.d1", 8}}));  // a dim missing
}

// A warp softmax pads each row to the next power of two: its time steps up where the row length
// passes one (513 columns cost what 1024 do), which neither the bytes nor the elements show. The
// model on the padded elements must win the cross-validation there, predict held-out points
// well, survive the JSON, and not be chosen where the padding says nothing.
TEST(TimingModel, PaddedElementsWinWhereRowsArePaddedToPowersOfTwo) {
    // The attention softmax of a sweep of batch x sequence: [b, 16, s, s], rows of s.
    std::mt19937 rng(11);
    std::normal_distribution<double> noise(0.0, 0.015);
    const auto point = [&](double b, double s, bool padded_truth) {
        TimingPoint p;
        const double rows = 16 * b * s;
        p.work.elements = rows * s;
        p.work.padded_elements = rows * static_cast<double>(next_power_of_two(static_cast<std::int64_t>(s)));
        p.work.bytes = 4 * p.work.elements;
        const double touched = padded_truth ? p.work.padded_elements : p.work.elements;
        p.time_us = (1.2 + 1.4e-6 * touched + 0.4e-6 * p.work.elements) * std::exp(noise(rng));
        return p;
    };
    std::vector<TimingPoint> padded, plain;
    for (double b = 1; b <= 8; b *= 2)
        for (double s = 16; s <= 1024; s += 16) {
            padded.push_back(point(b, s, true));
            plain.push_back(point(b, s, false));
        }
    const KernelTimingModel model = fit_kernel_model(padded, FitOptions{});
    EXPECT_EQ(model.kind, "log_quadratic");
    EXPECT_EQ(model.features().back(), "log_mpadded");
    EXPECT_LT(model.padded_quadratic_error.median_pct, 5.0);
    EXPECT_LT(model.padded_quadratic_error.p90_pct, 15.0);
    EXPECT_LT(model.padded_quadratic_error.median_pct, 0.5 * model.work_quadratic_error.median_pct);
    EXPECT_EQ(&model.error(), &model.padded_quadratic_error);

    TimingModelFile file;
    file.kernels.push_back(model);
    std::ostringstream text;
    write_timing_model(text, file);
    const testing::TempFile path("padded_model.json", text.str());
    const TimingModelFile back = read_timing_model(path.path());
    ASSERT_EQ(back.kernels.size(), 1u);
    EXPECT_EQ(back.kernels[0].padded_quadratic_error.median_pct, model.padded_quadratic_error.median_pct);
    const RecipeWork w = padded[17].work;
    EXPECT_NEAR(back.kernels[0].predict(w), model.predict(w), 1e-9 * model.predict(w));

    // Rows that are not padded: the padded elements add nothing the work does not say.
    const KernelTimingModel other = fit_kernel_model(plain, FitOptions{});
    EXPECT_NE(other.features().back(), "log_mpadded") << other.kind;
    // A CSV without the column (NaN): the candidate is n/a, the others fit as before.
    for (auto& p : padded) p.work.padded_elements = NAN;
    const KernelTimingModel old_csv = fit_kernel_model(padded, FitOptions{});
    EXPECT_EQ(old_csv.padded_quadratic_error.points, 0u);
    EXPECT_NE(old_csv.features().back(), "log_mpadded");
}

}  // namespace
}  // namespace replay
