// How the CUDA backend turns a GEMM recipe (PyTorch's row-major view: C (m x n) = op(A) op(B))
// into column-major cuBLAS arguments, the way PyTorch's cublasCommonArgs does: cuBLAS computes
// C^T = op(B)^T op(A)^T, i.e. it is called with (n, m, k) and A and B swapped. Pure functions, no
// CUDA headers, so they can be tested anywhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "replay/recipe.h"

namespace replay::cuda {

// Checks a recipe and completes it (output dtype, leading dims at least what the shapes need,
// batch stride of C). Returns the reason when the CUDA backend cannot run it.
std::optional<std::string> normalize_gemm(GemmRecipe& recipe);

// Elements each operand's storage must hold (row-major recipe names; batch strides included).
struct GemmExtents {
    std::int64_t a = 0, b = 0, c = 0, bias = 0;
};
GemmExtents gemm_extents(const GemmRecipe& normalized);

// Column-major cuBLAS arguments of a normalized recipe, after the swap and PyTorch's adjustment of
// leading dims for degenerate sizes (_cublasAdjustLdLevel3). `transa`: cuBLAS's A (the recipe's B)
// is read transposed (CUBLAS_OP_T).
struct BlasArgs {
    bool transa = false, transb = false;
    std::int64_t m = 0, n = 0, k = 0;
    std::int64_t lda = 0, ldb = 0, ldc = 0;
    std::int64_t stride_a = 0, stride_b = 0, stride_c = 0;
    std::int64_t batch = 1;
};
BlasArgs column_major_args(const GemmRecipe& normalized);

// The workspaces PyTorch gives cuBLAS and cuBLASLt, from the same environment variables:
// `cublas`: CUBLAS_WORKSPACE_CONFIG's ":KIB:COUNT" pairs summed, by default 32 MiB on compute
// capability 9, 10 and 12 and 8 MiB + 128 KiB before; `lt`: CUBLASLT_WORKSPACE_SIZE KiB, by
// default 1 MiB, or cuBLAS's size with TORCH_CUBLASLT_UNIFIED_WORKSPACE=1.
struct BlasWorkspaces {
    std::size_t cublas = 0, lt = 0;
};
BlasWorkspaces blas_workspaces_from_environment(int compute_major);

}  // namespace replay::cuda
