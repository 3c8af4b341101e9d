#include "replay/boosted_trees.h"

#include <algorithm>
#include <numeric>

namespace replay {
namespace {

struct Builder {
    const std::vector<std::vector<double>>& x;
    const std::vector<double>& residual;
    const BoostedTreesOptions& options;
    std::vector<TreeNode> nodes;

    double mean(const std::vector<std::size_t>& rows) const {
        double s = 0;
        for (auto r : rows) s += residual[r];
        return rows.empty() ? 0 : s / static_cast<double>(rows.size());
    }

    // The split with the largest drop in squared error, by scanning each feature's sorted values.
    int build(std::vector<std::size_t> rows, int depth) {
        const int index = static_cast<int>(nodes.size());
        nodes.push_back(TreeNode{});
        nodes[static_cast<std::size_t>(index)].value = mean(rows);
        const std::size_t n = rows.size();
        const std::size_t min_leaf = static_cast<std::size_t>(std::max(options.min_leaf, 1));
        if (depth >= options.depth || n < 2 * min_leaf) return index;
        double total = 0;
        for (auto r : rows) total += residual[r];
        double best_gain = 1e-12;
        int best_feature = -1;
        double best_threshold = 0;
        const std::size_t features = x[rows[0]].size();
        for (std::size_t f = 0; f < features; ++f) {
            std::sort(rows.begin(), rows.end(),
                      [&](std::size_t a, std::size_t b) { return x[a][f] < x[b][f]; });
            double left = 0;
            for (std::size_t i = 0; i + 1 < n; ++i) {
                left += residual[rows[i]];
                const std::size_t nl = i + 1, nr = n - nl;
                if (nl < min_leaf || nr < min_leaf) continue;
                if (x[rows[i]][f] == x[rows[i + 1]][f]) continue;
                const double right = total - left;
                // Drop in squared error of splitting here: sum^2/n on each side less the parent's.
                const double gain = left * left / static_cast<double>(nl) +
                                    right * right / static_cast<double>(nr) -
                                    total * total / static_cast<double>(n);
                if (gain > best_gain) {
                    best_gain = gain;
                    best_feature = static_cast<int>(f);
                    best_threshold = 0.5 * (x[rows[i]][f] + x[rows[i + 1]][f]);
                }
            }
        }
        if (best_feature < 0) return index;
        std::vector<std::size_t> l, r;
        for (auto row : rows)
            (x[row][static_cast<std::size_t>(best_feature)] <= best_threshold ? l : r).push_back(row);
        const int li = build(std::move(l), depth + 1);
        const int ri = build(std::move(r), depth + 1);
        TreeNode& node = nodes[static_cast<std::size_t>(index)];
        node.feature = best_feature;
        node.threshold = best_threshold;
        node.left = li;
        node.right = ri;
        return index;
    }
};

double evaluate(const std::vector<TreeNode>& tree, const std::vector<double>& x) {
    std::size_t i = 0;
    while (tree[i].feature >= 0) {
        const auto f = static_cast<std::size_t>(tree[i].feature);
        const double v = f < x.size() ? x[f] : 0;
        i = static_cast<std::size_t>(v <= tree[i].threshold ? tree[i].left : tree[i].right);
    }
    return tree[i].value;
}

}  // namespace

double BoostedTrees::predict(const std::vector<double>& x) const {
    double out = base;
    for (const auto& tree : trees) out += learning_rate * evaluate(tree, x);
    return out;
}

BoostedTrees fit_boosted_trees(const std::vector<std::vector<double>>& x,
                               const std::vector<double>& y, const BoostedTreesOptions& options) {
    BoostedTrees model;
    model.learning_rate = options.learning_rate;
    if (y.empty()) return model;
    model.base = std::accumulate(y.begin(), y.end(), 0.0) / static_cast<double>(y.size());
    std::vector<double> prediction(y.size(), model.base), residual(y.size());
    std::vector<std::size_t> all(y.size());
    std::iota(all.begin(), all.end(), 0);
    for (int round = 0; round < options.rounds; ++round) {
        for (std::size_t i = 0; i < y.size(); ++i) residual[i] = y[i] - prediction[i];
        Builder builder{x, residual, options, {}};
        builder.build(all, 0);
        if (builder.nodes.size() == 1 && std::abs(builder.nodes[0].value) < 1e-12) break;
        for (std::size_t i = 0; i < y.size(); ++i)
            prediction[i] += model.learning_rate * evaluate(builder.nodes, x[i]);
        model.trees.push_back(std::move(builder.nodes));
    }
    return model;
}

}  // namespace replay
