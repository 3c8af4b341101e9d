// The CUDA backend: tier 1 copies through the CUDA runtime, tier 2 GEMMs through cuBLAS/cuBLASLt
// (mirroring PyTorch's calls), tier 3 aten ops through libtorch when this build has it; timing from
// CUPTI activity records, or CUDA events when CUPTI is off or unavailable.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "replay/backend.h"

namespace replay {

// nullptr with `why` when there is no CUDA driver or device (the program still starts without
// either: only the CUDA runtime, cuBLAS and CUPTI libraries are linked, never libcuda).
std::unique_ptr<Backend> create_cuda_backend(const BackendOptions& options, std::string& why);

// Test and debugging access to the device buffers behind a prepared GEMM, named as in the recipe
// (row-major A, B, C and the bias), with the elements each holds for the recipe's shape.
struct CudaGemmBuffers {
    void* a = nullptr;
    void* b = nullptr;
    void* c = nullptr;
    void* bias = nullptr;
    std::int64_t a_elements = 0, b_elements = 0, c_elements = 0, bias_elements = 0;
    std::string api;  // "cublasLt" | "cublas gemm" | "cublas strided batched"
};
// False when `backend` is not a CUDA backend or `handle` is not one of its prepared GEMMs.
bool cuda_gemm_buffers(Backend& backend, std::uint32_t handle, CudaGemmBuffers& out);

}  // namespace replay
