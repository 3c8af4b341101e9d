#include "replay/timing_model.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>

#include "replay/stats.h"

namespace replay {
namespace {

constexpr double kRidge = 1e-9;

double work_units(const RecipeWork& w) {
    return (w.flops > 0 ? w.flops : w.elements) * 1e-9;
}
double byte_units(const RecipeWork& w) {
    return w.bytes * 1e-6;
}

std::vector<double> quartile_knots(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    std::vector<double> knots;
    if (values.size() < 5) return knots;  // too few distinct values for a bend
    for (double q : {0.25, 0.5, 0.75}) {
        const double k = stats::percentile(values, q);
        if (knots.empty() || k > knots.back()) knots.push_back(k);
    }
    return knots;
}

std::vector<double> basis(const PiecewiseLinear& m, const RecipeWork& w) {
    const double u = work_units(w), v = byte_units(w);
    std::vector<double> b{1.0, u, v};
    for (double k : m.work_knots) b.push_back(std::max(0.0, u - k));
    for (double k : m.bytes_knots) b.push_back(std::max(0.0, v - k));
    return b;
}

// Solves (A + ridge I) x = b by Gaussian elimination with partial pivoting.
std::vector<double> solve(std::vector<std::vector<double>> a, std::vector<double> b) {
    const std::size_t n = b.size();
    for (std::size_t i = 0; i < n; ++i) a[i][i] += kRidge * (1.0 + a[i][i]);
    for (std::size_t c = 0; c < n; ++c) {
        std::size_t pivot = c;
        for (std::size_t r = c + 1; r < n; ++r)
            if (std::abs(a[r][c]) > std::abs(a[pivot][c])) pivot = r;
        std::swap(a[c], a[pivot]);
        std::swap(b[c], b[pivot]);
        if (std::abs(a[c][c]) < 1e-300) continue;
        for (std::size_t r = c + 1; r < n; ++r) {
            const double f = a[r][c] / a[c][c];
            for (std::size_t k = c; k < n; ++k) a[r][k] -= f * a[c][k];
            b[r] -= f * b[c];
        }
    }
    std::vector<double> x(n, 0);
    for (std::size_t c = n; c-- > 0;) {
        if (std::abs(a[c][c]) < 1e-300) continue;
        double s = b[c];
        for (std::size_t k = c + 1; k < n; ++k) s -= a[c][k] * x[k];
        x[c] = s / a[c][c];
    }
    return x;
}

HeldOutError summarize_errors(std::vector<double> errors) {
    HeldOutError e;
    e.points = errors.size();
    if (errors.empty()) return e;
    std::sort(errors.begin(), errors.end());
    e.median_pct = 100.0 * stats::percentile(errors, 0.5);
    e.p90_pct = 100.0 * stats::percentile(errors, 0.9);
    return e;
}

BoostedTrees fit_trees(const std::vector<TimingPoint>& points, const BoostedTreesOptions& options) {
    std::vector<std::vector<double>> x;
    std::vector<double> y;
    for (const auto& p : points) {
        x.push_back(tree_features(p.work));
        y.push_back(std::log(std::max(p.time_us, 1e-6)));
    }
    return fit_boosted_trees(x, y, options);
}

double predict_trees(const BoostedTrees& trees, const RecipeWork& w) {
    return std::exp(trees.predict(tree_features(w)));
}

}  // namespace

double PiecewiseLinear::predict(const RecipeWork& w) const {
    const auto b = basis(*this, w);
    double t = 0;
    for (std::size_t i = 0; i < b.size() && i < coefficients.size(); ++i) t += coefficients[i] * b[i];
    return std::max(floor_us, t);
}

std::vector<double> tree_features(const RecipeWork& w) {
    return {std::log1p(w.flops * 1e-9), std::log1p(w.bytes * 1e-6), std::log1p(w.elements * 1e-6)};
}

namespace {

const std::vector<std::string> kWorkFeatures{"log_gflop", "log_mb", "log_melements"};
// The work and the elements with each row padded to a power of two (recipe_dims.h).
const std::vector<std::string> kPaddedFeatures{"log_gflop", "log_mb", "log_melements", "log_mpadded"};

std::vector<double> quadratic_basis(const std::vector<double>& z) {
    std::vector<double> b{1.0};
    b.insert(b.end(), z.begin(), z.end());
    for (std::size_t i = 0; i < z.size(); ++i)
        for (std::size_t j = i; j < z.size(); ++j) b.push_back(z[i] * z[j]);
    return b;
}

std::vector<std::pair<std::string, double>> named_dims(const std::vector<std::string>& names,
                                                       const std::vector<double>& values) {
    std::vector<std::pair<std::string, double>> out;
    for (std::size_t i = 0; i < names.size() && i < values.size(); ++i) out.emplace_back(names[i], values[i]);
    return out;
}

// Ridge on log time: the penalty keeps the cross terms of a few swept values from swinging.
constexpr double kQuadraticRidge = 1e-4;

LogQuadratic fit_log_quadratic(const std::vector<std::string>& features, const std::vector<TimingPoint>& points,
                               const std::vector<std::string>& dim_names) {
    LogQuadratic m;
    m.features = features;
    std::vector<std::vector<double>> rows;
    std::vector<double> y;
    for (const auto& p : points)
        if (auto z = log_features(features, p.work, named_dims(dim_names, p.dims))) {
            rows.push_back(quadratic_basis(*z));
            y.push_back(std::log(std::max(p.time_us, 1e-6)));
        }
    if (rows.empty()) return m;
    const std::size_t k = rows.front().size();
    std::vector<std::vector<double>> a(k, std::vector<double>(k, 0));
    std::vector<double> b(k, 0);
    for (std::size_t r = 0; r < rows.size(); ++r)
        for (std::size_t i = 0; i < k; ++i) {
            b[i] += rows[r][i] * y[r];
            for (std::size_t j = 0; j < k; ++j) a[i][j] += rows[r][i] * rows[r][j];
        }
    for (std::size_t i = 1; i < k; ++i) a[i][i] += kQuadraticRidge * static_cast<double>(rows.size());
    m.coefficients = solve(std::move(a), std::move(b));
    return m;
}

double predict_quadratic(const LogQuadratic& m, const TimingPoint& p, const std::vector<std::string>& dim_names) {
    const auto z = log_features(m.features, p.work, named_dims(dim_names, p.dims));
    return z ? m.predict(*z) : NAN;
}

}  // namespace

double LogQuadratic::predict(const std::vector<double>& z) const {
    const auto b = quadratic_basis(z);
    double t = 0;
    for (std::size_t i = 0; i < b.size() && i < coefficients.size(); ++i) t += coefficients[i] * b[i];
    return std::exp(t);
}

std::optional<std::vector<double>> log_features(const std::vector<std::string>& names, const RecipeWork& w,
                                                const std::vector<std::pair<std::string, double>>& dims) {
    std::vector<double> z;
    for (const auto& name : names) {
        if (name == "log_gflop") z.push_back(std::log1p(w.flops * 1e-9));
        else if (name == "log_mb") z.push_back(std::log1p(w.bytes * 1e-6));
        else if (name == "log_melements") z.push_back(std::log1p(w.elements * 1e-6));
        else if (name == "log_mpadded") {
            if (!(w.padded_elements >= 0)) return std::nullopt;  // NaN: a CSV without the column
            z.push_back(std::log1p(w.padded_elements * 1e-6));
        }
        else if (name.starts_with("log:")) {
            const auto it = std::find_if(dims.begin(), dims.end(), [&](const auto& d) { return d.first == name.substr(4); });
            if (it == dims.end() || !(it->second > 0)) return std::nullopt;
            z.push_back(std::log(it->second));
        } else {
            return std::nullopt;
        }
    }
    return z;
}

std::vector<std::string> KernelTimingModel::features() const {
    if (kind == "log_quadratic" && quadratic) return quadratic->features;
    return kWorkFeatures;
}

const HeldOutError& KernelTimingModel::error() const {
    if (kind == "boosted_trees") return trees_error;
    if (kind == "log_quadratic" && quadratic) {
        const auto& f = quadratic->features;
        if (std::any_of(f.begin(), f.end(), [](const std::string& n) { return n.starts_with("log:"); }))
            return dims_quadratic_error;
        if (std::find(f.begin(), f.end(), "log_mpadded") != f.end()) return padded_quadratic_error;
        return work_quadratic_error;
    }
    return linear_error;
}

double KernelTimingModel::predict(const RecipeWork& w) const {
    if (kind == "boosted_trees" && trees) return predict_trees(*trees, w);
    if (kind == "log_quadratic" && quadratic)
        if (auto z = log_features(quadratic->features, w, {})) return quadratic->predict(*z);
    return linear.predict(w);
}

std::optional<double> KernelTimingModel::predict(const Recipe& recipe) const {
    const RecipeWork w = recipe_work(recipe);
    if (kind != "log_quadratic" || !quadratic) return predict(w);
    std::vector<std::pair<std::string, double>> dims;
    for (const auto& f : quadratic->features)
        if (f.starts_with("log:"))
            if (auto v = recipe_dim(recipe, f.substr(4))) dims.emplace_back(f.substr(4), static_cast<double>(*v));
    const auto z = log_features(quadratic->features, w, dims);
    if (!z) return std::nullopt;
    return quadratic->predict(*z);
}

namespace {

// Weighted least squares on relative error (weight 1/t^2): a 2 us kernel's 1 us miss counts as
// much as a 2 ms kernel's 1 ms miss.
void fit_line(PiecewiseLinear& m, const std::vector<const TimingPoint*>& points) {
    std::vector<double> us, vs;
    for (const auto* p : points) {
        us.push_back(work_units(p->work));
        vs.push_back(byte_units(p->work));
    }
    m.work_knots = quartile_knots(us);
    m.bytes_knots = quartile_knots(vs);
    const std::size_t k = basis(m, points.front()->work).size();
    std::vector<std::vector<double>> a(k, std::vector<double>(k, 0));
    std::vector<double> b(k, 0);
    for (const auto* p : points) {
        const auto x = basis(m, p->work);
        const double w = 1.0 / std::max(p->time_us * p->time_us, 1e-12);
        for (std::size_t i = 0; i < k; ++i) {
            b[i] += w * x[i] * p->time_us;
            for (std::size_t j = 0; j < k; ++j) a[i][j] += w * x[i] * x[j];
        }
    }
    m.coefficients = solve(std::move(a), std::move(b));
}

}  // namespace

PiecewiseLinear fit_piecewise_linear(const std::vector<TimingPoint>& points) {
    PiecewiseLinear m;
    if (points.empty()) return m;
    // The floor: the typical time of the fastest points (within 20 % of the fastest), not the
    // fastest alone, which the run-to-run noise pulls down.
    double fastest = points.front().time_us;
    for (const auto& p : points) fastest = std::min(fastest, p.time_us);
    std::vector<double> near_floor;
    for (const auto& p : points)
        if (p.time_us <= 1.2 * fastest) near_floor.push_back(p.time_us);
    m.floor_us = stats::median(near_floor);
    // Points at the launch floor say nothing about the slope: the line is fitted to the points
    // above it (measured, or predicted by the previous fit), a few times until that set settles.
    std::vector<const TimingPoint*> above;
    for (const auto& p : points) above.push_back(&p);
    for (int round = 0; round < 4; ++round) {
        fit_line(m, above);
        std::vector<const TimingPoint*> next;
        for (const auto& p : points) {
            const double line = m.predict(p.work);
            if (p.time_us > 1.2 * m.floor_us || line > 1.2 * m.floor_us) next.push_back(&p);
        }
        if (next.size() < m.coefficients.size() + 2 || next == above) break;
        above = std::move(next);
    }
    return m;
}

KernelTimingModel fit_kernel_model(const std::vector<TimingPoint>& points,
                                   const FitOptions& options) {
    if (points.size() < 4)
        throw std::invalid_argument("a timing model needs at least 4 measured points, got " +
                                    std::to_string(points.size()));
    KernelTimingModel model;
    model.points = points.size();
    // Folds from a fixed shuffle: the same CSV gives the same model.
    std::vector<std::size_t> order(points.size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937(20240607));
    const std::size_t folds = std::clamp<std::size_t>(static_cast<std::size_t>(options.folds), 2,
                                                      points.size());
    std::vector<std::string> with_dims = kWorkFeatures;
    for (const auto& d : options.dim_names) with_dims.push_back("log:" + d);
    const bool dims_known = !options.dim_names.empty();
    const bool padded_known = std::all_of(points.begin(), points.end(), [](const TimingPoint& p) {
        return p.work.padded_elements >= 0;  // false for NaN
    });
    std::vector<double> linear_errors, tree_errors, work_errors, padded_errors, dims_errors;
    // A point a model cannot predict counts as a 100 % miss.
    const auto relative = [](double predicted, double measured) {
        return std::isfinite(predicted) ? std::abs(predicted / measured - 1.0) : 1.0;
    };
    for (std::size_t fold = 0; fold < folds; ++fold) {
        std::vector<TimingPoint> train, test;
        for (std::size_t i = 0; i < order.size(); ++i)
            (i % folds == fold ? test : train).push_back(points[order[i]]);
        if (train.size() < 2 || test.empty()) continue;
        const PiecewiseLinear linear = fit_piecewise_linear(train);
        const BoostedTrees trees = fit_trees(train, options.trees);
        const LogQuadratic on_work = fit_log_quadratic(kWorkFeatures, train, options.dim_names);
        std::optional<LogQuadratic> on_dims, on_padded;
        if (dims_known) on_dims = fit_log_quadratic(with_dims, train, options.dim_names);
        if (padded_known) on_padded = fit_log_quadratic(kPaddedFeatures, train, options.dim_names);
        for (const auto& p : test) {
            linear_errors.push_back(relative(linear.predict(p.work), p.time_us));
            tree_errors.push_back(relative(predict_trees(trees, p.work), p.time_us));
            work_errors.push_back(relative(predict_quadratic(on_work, p, options.dim_names), p.time_us));
            if (on_dims) dims_errors.push_back(relative(predict_quadratic(*on_dims, p, options.dim_names), p.time_us));
            if (on_padded)
                padded_errors.push_back(relative(predict_quadratic(*on_padded, p, options.dim_names), p.time_us));
        }
    }
    model.linear_error = summarize_errors(std::move(linear_errors));
    model.trees_error = summarize_errors(std::move(tree_errors));
    model.work_quadratic_error = summarize_errors(std::move(work_errors));
    model.dims_quadratic_error = summarize_errors(std::move(dims_errors));
    model.padded_quadratic_error = summarize_errors(std::move(padded_errors));
    model.linear = fit_piecewise_linear(points);
    // Simplest first; a richer candidate replaces the pick only when it clearly wins held out.
    const HeldOutError* pick = &model.linear_error;
    std::string kind = "piecewise_linear";
    const auto consider = [&](const HeldOutError& e, const char* name) {
        if (e.points > 0 && e.median_pct < options.richer_must_beat * pick->median_pct && e.p90_pct <= pick->p90_pct) {
            pick = &e;
            kind = name;
        }
    };
    consider(model.work_quadratic_error, "log_quadratic_work");
    if (padded_known) consider(model.padded_quadratic_error, "log_quadratic_padded");
    if (dims_known) consider(model.dims_quadratic_error, "log_quadratic_dims");
    consider(model.trees_error, "boosted_trees");
    if (kind == "boosted_trees") {
        model.kind = kind;
        model.trees = fit_trees(points, options.trees);
    } else if (kind != "piecewise_linear") {
        model.kind = "log_quadratic";
        model.quadratic = fit_log_quadratic(kind == "log_quadratic_dims"     ? with_dims
                                            : kind == "log_quadratic_padded" ? kPaddedFeatures
                                                                             : kWorkFeatures,
                                            points, options.dim_names);
    }
    return model;
}

const KernelTimingModel* TimingModelFile::find(const Recipe& recipe) const {
    const KernelTimingModel* best = nullptr;
    for (const auto& k : kernels) {
        if (recipe_family(recipe, k.masked) != k.family) continue;
        if (best == nullptr || k.error().median_pct < best->error().median_pct) best = &k;
    }
    return best;
}

}  // namespace replay
