// --nvtx: an NVTX push/pop range around one issue, so that `nsys profile` shows the replayed work
// by unique kernel and `ncu --nvtx --nvtx-include "<range>/"` selects one. NVTX 3 from the CUDA
// toolkit is header-only: without a tool attached (NVTX_INJECTION64_PATH unset) a push is a
// branch on a null function pointer.
#pragma once

#include <nvtx3/nvToolsExt.h>

#include <string>

namespace replay::cuda {

class NvtxRange {
  public:
    // An empty name pushes nothing.
    explicit NvtxRange(const std::string& name) : pushed_(!name.empty()) {
        if (pushed_) nvtxRangePushA(name.c_str());
    }
    ~NvtxRange() {
        if (pushed_) nvtxRangePop();
    }
    NvtxRange(const NvtxRange&) = delete;
    NvtxRange& operator=(const NvtxRange&) = delete;

  private:
    bool pushed_;
};

}  // namespace replay::cuda
