// Gradient-boosted regression trees (squared loss, shallow trees, shrinkage): the richer model
// that a kernel's timing model is held against (timing_model.h). Small and exact: the sweeps it
// learns from have hundreds to thousands of rows and a handful of features.
#pragma once

#include <cstdint>
#include <vector>

namespace replay {

struct TreeNode {
    int feature = -1;  // -1: a leaf
    double threshold = 0;  // go left when x[feature] <= threshold
    int left = -1, right = -1;
    double value = 0;  // a leaf's output
};

struct BoostedTreesOptions {
    int rounds = 300;
    int depth = 3;
    int min_leaf = 3;
    double learning_rate = 0.1;
};

struct BoostedTrees {
    double base = 0;
    double learning_rate = 0.1;
    std::vector<std::vector<TreeNode>> trees;  // node 0 is each tree's root
    double predict(const std::vector<double>& x) const;
};

// Fits rows `x` (one feature vector each, all of one length) to targets `y`.
BoostedTrees fit_boosted_trees(const std::vector<std::vector<double>>& x,
                               const std::vector<double>& y, const BoostedTreesOptions& options);

}  // namespace replay
