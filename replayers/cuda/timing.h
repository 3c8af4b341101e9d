// How the CUDA backend times what it issues. One implementation per method: CUPTI activity
// records (one record per kernel, memcpy and memset, with the kernel's name) and CUDA event pairs
// (one interval per issue). The backend brackets the CUDA calls of each issue with begin/end.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "replay/backend.h"

namespace replay::cuda {

class IssueTimer {
  public:
    virtual ~IssueTimer() = default;
    virtual const char* method() const = 0;  // Environment::timing: "cupti" | "cuda-events"
    // Brackets the CUDA calls of one issue on `stream` (index `stream_index` of the driver).
    virtual void begin(std::uint64_t tag, int stream_index, cudaStream_t stream) = 0;
    virtual void end(std::uint64_t tag, int stream_index, cudaStream_t stream,
                     const std::string& label) = 0;
    // Activities of the issues since the last call; the device must be synchronized first.
    virtual std::vector<TimedActivity> collect() = 0;
    // Notes for Environment::notes (dropped records, ...); may be empty.
    virtual std::vector<std::string> notes() const { return {}; }
};

// CUPTI activity records, correlated to tags with external correlation ids. Returns nullptr
// with `why` when CUPTI cannot be initialized or another CUPTI timer is alive in this process.
std::unique_ptr<IssueTimer> make_cupti_timer(std::string& why);

// A timing-enabled CUDA event pair around each issue.
std::unique_ptr<IssueTimer> make_event_timer();

}  // namespace replay::cuda
