// Error checks for CUDA runtime, cuBLAS/cuBLASLt and CUPTI calls: a throwing macro that names the
// file, line and call text, and a noexcept one for destructors and clean-up paths that only logs.
#pragma once

#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <cupti_result.h>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace replay::cuda {

class CudaError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

namespace detail {

inline const char* status_text(cudaError_t status) {
    return cudaGetErrorString(status);
}
inline const char* status_text(cublasStatus_t status) {
    return cublasGetStatusString(status);
}
inline const char* status_text(CUptiResult status) {
    const char* text = nullptr;
    if (cuptiGetResultString(status, &text) != CUPTI_SUCCESS || text == nullptr)
        return "unknown CUPTI result";
    return text;
}
inline bool ok(cudaError_t status) {
    return status == cudaSuccess;
}
inline bool ok(cublasStatus_t status) {
    return status == CUBLAS_STATUS_SUCCESS;
}
inline bool ok(CUptiResult status) {
    return status == CUPTI_SUCCESS;
}

inline std::string describe(const char* call, const char* file, int line, const char* text,
                            int code) {
    return std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " + text +
           " (" + std::to_string(code) + ")";
}

template <typename Status>
void check(Status status, const char* call, const char* file, int line) {
    if (ok(status)) return;
    if constexpr (std::is_same_v<Status, cudaError_t>)
        cudaGetLastError();  // clear a sticky-free error
    throw CudaError(describe(call, file, line, status_text(status), static_cast<int>(status)));
}

template <typename Status>
bool check_noexcept(Status status, const char* call, const char* file, int line) noexcept {
    if (ok(status)) return true;
    if constexpr (std::is_same_v<Status, cudaError_t>) cudaGetLastError();
    std::fprintf(stderr, "replay: %s:%d: %s failed: %s (%d)\n", file, line, call,
                 status_text(status), static_cast<int>(status));
    return false;
}

}  // namespace detail
}  // namespace replay::cuda

// Throw replay::cuda::CudaError when the call does not succeed.
#define REPLAY_CUDA_CALL(call) ::replay::cuda::detail::check((call), #call, __FILE__, __LINE__)
#define REPLAY_CUBLAS_CALL(call) ::replay::cuda::detail::check((call), #call, __FILE__, __LINE__)
#define REPLAY_CUPTI_CALL(call) ::replay::cuda::detail::check((call), #call, __FILE__, __LINE__)
// Log to stderr and evaluate to false; for destructors and best-effort clean-up.
#define REPLAY_CUDA_CALL_NOEXCEPT(call) \
    ::replay::cuda::detail::check_noexcept((call), #call, __FILE__, __LINE__)
#define REPLAY_CUBLAS_CALL_NOEXCEPT(call) \
    ::replay::cuda::detail::check_noexcept((call), #call, __FILE__, __LINE__)
#define REPLAY_CUPTI_CALL_NOEXCEPT(call) \
    ::replay::cuda::detail::check_noexcept((call), #call, __FILE__, __LINE__)
