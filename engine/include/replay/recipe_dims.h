// The named dimensions of a recipe, for sweeps and timing models: reading and setting them
// (a GEMM's m, n, k, batch; a dispatcher op's argument dims by position), the work a recipe
// does (FLOPs, bytes, elements: the features of a timing model), and the recipe's family (its
// description with the swept fields masked), which tells the kernels a model may time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "replay/recipe.h"

namespace replay {

// Names a recipe's settable dims:
//   GEMM (tier 2): m, n, k, batch
//   dispatcher op (tier 3): argI.dJ (dim J of the tensor, or entry J of the integer list, that
//   is argument I of the recipe, both from 0), argI (an integer scalar argument)
// Copies and collectives have none.
std::vector<std::string> recipe_dim_names(const Recipe& recipe);
// nullopt when the recipe has no such dim.
std::optional<std::int64_t> recipe_dim(const Recipe& recipe, const std::string& name);

// The recipe with the named dims set. A GEMM's leading dimensions and batch strides follow its
// new shape where they were tight, and are kept where the recording padded them (a slice of a
// fused projection). A dispatcher op's dim is "tied": every other tensor dim and integer-list
// entry of the recipe with the same recorded value (> 1) is set with it, so that an elementwise
// op's operands, a layer norm's weight and its normalized_shape stay consistent. Strides of
// contiguous tensors become contiguous for the new dims; others keep their dim order and gaps.
// Recorded storage ids and reuse distances are dropped (they describe the recorded tensors).
// Throws std::invalid_argument naming the dim and the recipe's dims when a name is unknown or a
// value is < 1.
Recipe with_dims(const Recipe& recipe,
                 const std::vector<std::pair<std::string, std::int64_t>>& dims);

// Strides for `new_dims` that keep the layout of (`dims`, `strides`): contiguous stays
// contiguous; otherwise the order of the dims by stride and the gap between each stride and the
// extent of the smaller ones (a selected slice, a fused projection) are kept; 0 (broadcast)
// stays 0.
std::vector<std::int64_t> restride(const std::vector<std::int64_t>& dims,
                                   const std::vector<std::int64_t>& strides,
                                   const std::vector<std::int64_t>& new_dims);

// What a recipe does, as a timing model's features. flops: a GEMM's 2 m n k batch (0 for other
// work); bytes: what its tensors hold (a GEMM's A, B, C; an op's tensor arguments plus an output
// the size of its largest one; a copy's bytes); elements: the largest tensor's element count
// (a GEMM's m n batch); padded_elements: the same with that tensor's innermost dim rounded up to
// a power of two (a GEMM's m x pow2(n) x batch), the elements that a kernel giving each row a
// power-of-two tile touches (PyTorch's warp softmax pads a row to the next power of two: a
// softmax over 513 columns costs what one over 1024 does, per row).
struct RecipeWork {
    double flops = 0;
    double bytes = 0;
    double elements = 0;
    double padded_elements = 0;
};
// The next power of two >= n (n >= 1; 0 for n <= 0).
std::int64_t next_power_of_two(std::int64_t n);
RecipeWork recipe_work(const Recipe& recipe);

// "fp16", "bf16", "fp32", ... of the recipe's first floating-point operand ("mixed" never):
// for file names.
std::string recipe_dtype_label(const Recipe& recipe);
// A short name for files and tables: "addmm", "native_layer_norm", "memcpy".
std::string recipe_short_name(const Recipe& recipe);

// The recipe as (field, value) pairs, every field that tells two pieces of work apart except
// layouts (leading dims, strides) and recorded storages: op, overload, dtypes, ranks, dims,
// scalar values.
std::vector<std::pair<std::string, std::string>> recipe_fields(const Recipe& recipe);
// The family of a recipe: its fields joined, those named in `masked` written as "*".
std::string recipe_family(const Recipe& recipe, const std::vector<std::string>& masked);
// The fields whose values differ among `recipes` (the fields a sweep varied).
std::vector<std::string> varying_fields(const std::vector<Recipe>& recipes);

}  // namespace replay
