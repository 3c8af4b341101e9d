// Timing models of kernels, fitted on sweep CSVs (`replay fit`) and used by `replay predict
// --model` to time kernels that were not run. The model is simple and explainable first:
// piecewise linear in the work (GFLOP for GEMMs, else elements) and the bytes, above a launch
// floor; gradient-boosted trees on the log of the same features replace it only when k-fold
// cross-validation says they predict held-out points better. schemas/timing_model.schema.json.
#pragma once

#include <cmath>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "replay/boosted_trees.h"
#include "replay/recipe.h"
#include "replay/recipe_dims.h"

namespace replay {

// One measured point.
struct TimingPoint {
    RecipeWork work;
    double time_us = 0;
};

// t = max(floor, c0 + sum_j c_j * basis_j): basis are the work (GFLOP or G-elements) and the
// bytes (MB), each also as hinges max(0, x - knot) at its quartiles.
struct PiecewiseLinear {
    double floor_us = 0;
    std::vector<double> work_knots, bytes_knots;  // in basis units
    std::vector<double> coefficients;             // intercept, work, bytes, work hinges, bytes hinges
    double predict(const RecipeWork& work) const;
};

struct HeldOutError {
    std::size_t points = 0;
    double median_pct = NAN, p90_pct = NAN;  // |predicted - measured| / measured
};

struct KernelTimingModel {
    std::string kernel_id, name, op, dtype, csv;
    std::string family;                       // recipe_family with `masked` fields
    std::vector<std::string> masked;          // the fields the sweep varied
    std::string kind = "piecewise_linear";    // or "boosted_trees"
    std::size_t points = 0;
    PiecewiseLinear linear;
    std::optional<BoostedTrees> trees;        // when kind is boosted_trees
    HeldOutError linear_error, trees_error;   // k-fold cross-validation of each
    double predict(const RecipeWork& work) const;
    const HeldOutError& error() const { return kind == "boosted_trees" ? trees_error : linear_error; }
};

struct FitOptions {
    int folds = 5;
    // The trees are used only when their held-out median error is below this share of the
    // linear model's and their p90 is no higher.
    double trees_must_beat = 0.9;
    BoostedTreesOptions trees;
};

PiecewiseLinear fit_piecewise_linear(const std::vector<TimingPoint>& points);
// The trees' features: log of GFLOP, MB and elements (1 added so that 0 stays 0).
std::vector<double> tree_features(const RecipeWork& work);
// Cross-validates both models, picks one, fits it on every point. Throws std::invalid_argument
// with fewer than 4 points.
KernelTimingModel fit_kernel_model(const std::vector<TimingPoint>& points,
                                   const FitOptions& options);

struct TimingModelFile {
    std::string schema = "replay.timing_model/1";
    std::string gpu;
    std::vector<KernelTimingModel> kernels;
    // The model whose family the recipe has (its swept fields masked), the one with the lowest
    // held-out median error when several do; nullptr when none.
    const KernelTimingModel* find(const Recipe& recipe) const;
};

void write_timing_model(std::ostream& out, const TimingModelFile& file);
// Throws InputError naming the file and the byte offset.
TimingModelFile read_timing_model(const std::string& path);

}  // namespace replay
