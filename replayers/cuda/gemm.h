// Tier 2: a GEMM recipe as PyTorch would have issued it. The recipe is in PyTorch's row-major view
// (C = op(A) op(B), C m x n); cuBLAS is column-major, so like PyTorch we compute C^T = op(B)^T
// op(A)^T: the call gets (n, m, k) with A and B swapped. Which API runs mirrors at::cuda::blas:
//  - addmm/linear with a 1-D bias (beta 1): cublasLtMatmul with the BIAS epilogue (gemm_and_bias);
//  - mm/addmm/matmul/linear otherwise: cublasGemmEx (fp16/bf16), cublasSgemm, cublasDgemm;
//  - bmm/baddbmm (or batch > 1): cublasGemmStridedBatchedEx / cublasSgemmStridedBatched / ...
//  - TORCH_BLAS_PREFER_CUBLASLT=1 (PyTorch's switch) sends every GEMM through cublasLtMatmul;
//    TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 lets fp32 GEMMs use TF32, as it does in PyTorch; a GEMM
//    whose recorded kernel ran on TF32 tensor cores uses it too (GemmRecipe::tf32_recorded).
// cuBLASLt falls back to cuBLAS when its heuristic offers no algorithm, as PyTorch does.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>

#include <cstdint>
#include <optional>
#include <string>

#include "cuda_raii.h"
#include "device_kernels.h"
#include "replay/cuda_gemm_args.h"
#include "replay/recipe.h"

namespace replay::cuda {

// Library state shared by all GEMMs of a backend.
struct BlasContext {
    cublasHandle_t blas = nullptr;
    cublasLtHandle_t lt = nullptr;
    std::size_t workspace_bytes = 0;     // cuBLAS's, per stream (CUBLAS_WORKSPACE_CONFIG)
    std::size_t lt_workspace_bytes = 0;  // cuBLASLt's, the same buffer's first bytes
    bool prefer_lt = false;              // TORCH_BLAS_PREFER_CUBLASLT
    bool allow_tf32 = false;             // TORCH_ALLOW_TF32_CUBLAS_OVERRIDE: every fp32 GEMM
};
// PyTorch's workspace sizes and switches, read from the same environment variables;
// `compute_major`: the device's compute capability (the cuBLAS default depends on it).
BlasContext blas_options_from_environment(int compute_major);

std::optional<cudaDataType_t> cuda_data_type(DType dtype);
std::optional<FillType> fill_type(DType dtype);

// One prepared GEMM: descriptors, algorithm and scalars chosen once, launched many times.
class GemmLaunch {
  public:
    enum class Api : std::uint8_t { LtMatmul, Gemm, GemmStridedBatched };

    // a, b, c, bias: device buffers of the recipe's A, B, C and bias (row-major names). Throws
    // CudaError on library errors.
    GemmLaunch(const GemmRecipe& normalized, const BlasContext& context, const void* a,
               const void* b, void* c, const void* bias);
    GemmLaunch(const GemmLaunch&) = delete;
    GemmLaunch& operator=(const GemmLaunch&) = delete;
    GemmLaunch(GemmLaunch&&) = default;
    GemmLaunch& operator=(GemmLaunch&&) = default;

    void run(const BlasContext& context, cudaStream_t stream, void* workspace) const;

    Api api() const { return api_; }
    const std::string& label() const { return label_; }
    const std::string& note() const { return note_; }  // e.g. why cuBLASLt was not used

  private:
    bool try_lt(const BlasContext& context, bool with_bias);
    bool tf32(const BlasContext& context) const;  // TF32 math: allowed, or as recorded

    GemmRecipe recipe_;
    BlasArgs args_;
    Api api_ = Api::Gemm;
    const void* a_ = nullptr;  // cuBLAS's A: the recipe's B
    const void* b_ = nullptr;  // cuBLAS's B: the recipe's A
    void* c_ = nullptr;
    const void* bias_ = nullptr;
    // Scalars in the compute precision: float for fp32/fp16/bf16 compute, double for fp64.
    float alpha_f_ = 1, beta_f_ = 0;
    double alpha_d_ = 1, beta_d_ = 0;
    // cuBLASLt objects (LtMatmul only).
    LtMatmulDesc desc_;
    LtMatrixLayout a_layout_, b_layout_, c_layout_;
    cublasLtMatmulAlgo_t algo_{};
    std::string label_;
    std::string note_;
};

}  // namespace replay::cuda
