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
    std::vector<double> dims;  // the swept dims' values, in FitOptions::dim_names' order
    double time_us = 0;
};

// log t = c . [1, z_i, z_i z_j (i <= j)] over z, the logs of named features: "log_gflop",
// "log_mb", "log_melements", "log_mpadded" (log1p of the work; the last: the elements with each
// row padded to a power of two) and "log:<dim>" (log of a recipe dim, e.g. log:m, log:arg0.d1).
// A power law with bends in log space: a GEMM's tile and wave steps and a layer norm's rows x
// cols shape show up as cross terms the work alone cannot tell apart, a warp softmax's step at
// each power of two of the row length as the padded elements.
// Fitted by ridge least squares on log time, so that every point's relative error counts alike.
struct LogQuadratic {
    std::vector<std::string> features;
    std::vector<double> coefficients;
    double predict(const std::vector<double>& z) const;
};
// The log features `names` of a piece of work and its dims (`dim` gives a dim's value by name,
// nullopt when the recipe has none); nullopt when one cannot be computed.
std::optional<std::vector<double>> log_features(
    const std::vector<std::string>& names, const RecipeWork& work,
    const std::vector<std::pair<std::string, double>>& dims);

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
    std::string kind = "piecewise_linear";    // or "boosted_trees", "log_quadratic"
    std::size_t points = 0;
    PiecewiseLinear linear;
    std::optional<BoostedTrees> trees;        // when kind is boosted_trees
    std::optional<LogQuadratic> quadratic;    // when kind is log_quadratic
    // k-fold cross-validation of each candidate: the log-quadratic model on the work alone, on
    // the work and the padded elements (n/a for a CSV without them), and on the work and the
    // swept recipe dims (n/a when the sweep varied model.* dims, which a recipe does not hold).
    HeldOutError linear_error, trees_error, work_quadratic_error, padded_quadratic_error,
        dims_quadratic_error;
    // The features the model needs: the log features of a log_quadratic model, else the work.
    std::vector<std::string> features() const;
    // nullopt when the recipe lacks a dim the model needs.
    std::optional<double> predict(const Recipe& recipe) const;
    double predict(const RecipeWork& work) const;  // a model of the work alone
    const HeldOutError& error() const;
};

struct FitOptions {
    int folds = 5;
    // The swept dims that a recipe holds (recipe_dims.h names), in TimingPoint::dims' order.
    std::vector<std::string> dim_names;
    // A richer candidate (log-quadratic on the work, then on the work and the padded elements,
    // then on the work and dims, then trees)
    // replaces the model chosen so far only when its held-out median error is below this
    // share of that model's and its p90 is no higher.
    double richer_must_beat = 0.9;
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
