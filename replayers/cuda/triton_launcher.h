// Triton kernels launched from their compiled cubin through the CUDA driver API, which is loaded
// with dlopen("libcuda.so.1") on first use: the backend module never links libcuda (or its stub),
// so that it still loads, and says why it cannot start, on a machine without a driver.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace replay::cuda {

class TritonKernel {
  public:
    // Loads `cubin` into the current context and finds `name`; nullptr with `why` on failure (no
    // driver, an image for another architecture, too much shared memory).
    static std::unique_ptr<TritonKernel> load(const std::string& cubin, const std::string& name,
                                              int shared_bytes, std::string& why);
    ~TritonKernel();
    TritonKernel(const TritonKernel&) = delete;
    TritonKernel& operator=(const TritonKernel&) = delete;

    // `args`: one value per parameter, each as its bytes (a device pointer or an integer).
    void launch(const std::int32_t grid[3], int threads, int shared_bytes,
                const std::vector<std::uint64_t>& args, const std::vector<int>& arg_bytes,
                cudaStream_t stream) const;

  private:
    TritonKernel() = default;
    void* module_ = nullptr;
    void* function_ = nullptr;
};

}  // namespace replay::cuda
