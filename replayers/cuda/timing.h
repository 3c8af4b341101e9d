// How the CUDA backend times what it issues. One implementation per method: CUPTI activity
// records (one record per kernel, memcpy and memset, with the kernel's name) and CUDA event pairs
// (one interval per issue). The backend brackets the CUDA calls of each issue, and of each step's
// warm-up reads, with begin/end.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "replay/backend.h"

namespace replay::cuda {

// What one begin/end pair brackets: a step's work or its warm-up reads.
struct IssueMark {
    std::uint64_t tag = 0;
    int stream_index = 0;  // the driver's stream
    bool warm_read = false;
};

class IssueTimer {
  public:
    virtual ~IssueTimer() = default;
    virtual const char* method() const = 0;  // Environment::timing: "cupti" | "cuda-events"
    // Backend::set_phase: in the Timed phase a timer may drop per-issue bookkeeping and return
    // untagged records (backend.h).
    virtual void set_phase(Phase phase) = 0;
    // Backend::set_recording: off, nothing is recorded until it is on again.
    virtual void set_recording(bool on) { (void)on; }
    // The backend's streams, by the driver's index.
    virtual void set_streams(const std::vector<cudaStream_t>& streams) = 0;
    // Brackets the CUDA calls of one issue on `stream`.
    virtual void begin(const IssueMark& mark, cudaStream_t stream) = 0;
    virtual void end(const IssueMark& mark, cudaStream_t stream, const std::string& label) = 0;

    // Graphs: empty when this timer can tie the kernels of a captured graph to the issues that
    // were captured, else why it cannot. While capturing, begin/end mark what each issue adds to
    // the graph instead of timing it.
    virtual std::string graph_support() const = 0;
    virtual void set_capturing(bool capturing) = 0;

    // Activities of the issues since the last call; the device must be synchronized first.
    virtual std::vector<TimedActivity> collect() = 0;
    // Notes for Environment::notes (dropped records, ...); may be empty.
    virtual std::vector<std::string> notes() const { return {}; }
    // What the timer saw allocated or loaded since set_phase(Timed) (Backend::first_uses).
    virtual std::vector<std::string> first_uses() { return {}; }
};

// CUPTI activity records, correlated to tags with external correlation ids (Plan phase), by
// stream order (Timed phase: the driver matches them) or by graph node (graphs). Returns nullptr
// with `why` when CUPTI cannot be initialized or another CUPTI timer is alive in this process.
std::unique_ptr<IssueTimer> make_cupti_timer(std::string& why);

// A timing-enabled CUDA event pair around each issue.
std::unique_ptr<IssueTimer> make_event_timer();

}  // namespace replay::cuda
