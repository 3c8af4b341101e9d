// The CUDA backend's class and the launches it prepares, shared by its two sources:
// cuda_backend.cpp (streams, issue, timing, graphs) and cuda_prepare.cpp (recipes into launches).
// Internal to the backend module.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "aten_runner.h"
#include "buffer_pool.h"
#include "cuda_check.h"
#include "cuda_raii.h"
#include "device_kernels.h"
#include "gemm.h"
#include "nvml.h"
#include "nvtx_range.h"
#include "replay/backend.h"
#include "replay/cuda_backend.h"
#include "replay/energy.h"
#include "replay/tensor_budget.h"
#include "timing.h"
#include "triton_launcher.h"

namespace replay::cuda {

// Buffer-pool roles: which recipes may share a buffer (the pool also keys on kind and content).
// Small non-negative roles are a recipe kind's own slots (a GEMM's A/B/C/bias 0-3, a copy's
// 10-11); the ranges below never overlap them or each other.
// One recorded storage each (GEMM dataflow): kStorageRoleBase + storage id.
constexpr int kStorageRoleBase = 1000;
constexpr int kStorageRoleSpan = 1 << 29;
// Buffers no other recipe may share (a Triton launch's integers): above every storage's role.
constexpr int kPrivateRoleBase = kStorageRoleBase + kStorageRoleSpan;
// A Triton launch's n-th floating-point operand: below zero, so that no operand count can reach
// a storage's role (at 2000 + n they met storage 1000 + n).
constexpr int triton_operand_role(std::size_t n) {
    return -1 - static_cast<int>(n);
}
constexpr int storage_role(std::int64_t storage) {
    return kStorageRoleBase + static_cast<int>(storage % kStorageRoleSpan);
}
static_assert(triton_operand_role(0) < 0 && storage_role(0) > 11 &&
              storage_role(kStorageRoleSpan - 1) < kPrivateRoleBase &&
              storage_role(kStorageRoleSpan) == storage_role(0));

inline std::string cuda_version_text(int version) {
    return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi and NVML print a board's UUID.
inline std::string uuid_text(const cudaUUID_t& uuid) {
    std::string out = "GPU-";
    char hex[3];
    for (int i = 0; i < 16; ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
        std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(uuid.bytes[i]));
        out += hex;
    }
    return out;
}

inline const char* memcpy_name(cudaMemcpyKind kind) {
    switch (kind) {
        case cudaMemcpyHostToDevice:
            return "HtoD";
        case cudaMemcpyDeviceToHost:
            return "DtoH";
        case cudaMemcpyDeviceToDevice:
            return "DtoD";
        case cudaMemcpyHostToHost:
            return "HtoH";
        default:
            return "<unknown>";
    }
}

struct CopyLaunch {
    bool memset = false;
    bool pageable = false;  // a host side in pageable memory: the runtime stages it synchronously
    cudaMemcpyKind kind = cudaMemcpyDeviceToDevice;
    void* dst = nullptr;
    const void* src = nullptr;
    std::size_t bytes = 0;
    int value = 0;
    std::string label;  // Kineto's name of the activity
};

struct GemmEntry {
    GemmLaunch launch;
    CudaGemmBuffers buffers;
    std::vector<InputRegion> inputs;  // A, B, C/bias with their recorded reuse distances
};

struct AtenLaunch {
    std::uint32_t runner_handle = 0;
    std::string label;
};

struct TritonLaunch {
    std::shared_ptr<const TritonKernel> kernel;  // one loaded module per compiled variant
    std::int32_t grid[3] = {1, 1, 1};
    int threads = 0;
    int shared_bytes = 0;
    std::vector<std::uint64_t> args;  // device pointers and integers, by value
    std::vector<int> arg_bytes;       // 4 or 8 per argument
    std::string label;                // the kernel's name, as the trace has it
};

using Launch = std::variant<CopyLaunch, GemmEntry, AtenLaunch, TritonLaunch>;

inline Prepared skipped(std::string reason) {
    return {Disposition::Skipped, std::move(reason), 0};
}

constexpr const char* kWarmReadLabel = "L2 warm-up read";

// A captured graph, instantiated, and how it is launched.
struct CapturedGraph {
    GraphExec exec;
    int home = 0;              // the stream it is launched on
    bool all_streams = false;  // every stream joined the capture
};

class CudaBackend final : public Backend {
  public:
    explicit CudaBackend(const BackendOptions& options);
    ~CudaBackend() override;
    CudaBackend(const CudaBackend&) = delete;
    CudaBackend& operator=(const CudaBackend&) = delete;

    Environment environment() const override;
    Prepared prepare(const Recipe& recipe) override;
    void set_stream_count(int count) override;
    void issue(std::uint32_t handle, int stream, std::uint64_t tag) override;
    void stream_wait(int waiter, int producer) override;
    void synchronize() override;
    void flush_l2() override;
    void evict_instruction_caches() override;
    void start_device_clock(int stream) override;
    void hold_after(int stream, std::int64_t after_ns) override;
    void warm_inputs(std::uint32_t handle, int stream, std::uint64_t tag) override;
    void name_next_issue(const std::string& range) override { next_range_ = range; }
    std::vector<TimedActivity> collect() override;
    std::unique_ptr<EnergyMeter> energy_meter(std::string& why) override;
    void set_phase(Phase phase) override;
    void set_recording(bool on) override { timer_->set_recording(on); }
    std::vector<std::string> first_uses() override;
    std::string capture_blocker(std::uint32_t handle, int stream) override;
    void begin_capture(int home, bool all_streams) override;
    std::uint32_t end_capture(std::string& why) override;
    void launch_graph(std::uint32_t graph) override;
    Prepared relocated(std::uint32_t handle) override;
    void release(std::uint32_t handle) override;

    bool gemm_buffers(std::uint32_t handle, CudaGemmBuffers& out) const;

  private:
    Prepared prepare_copy(const CopyRecipe& recipe);
    Prepared prepare_gemm(const GemmRecipe& recipe);
    Prepared prepare_aten(const AtenRecipe& recipe);
    Prepared prepare_triton(const TritonRecipe& recipe);
    // `inputs`: the work's inputs; those the recording had in L2 become its warm-up reads.
    std::uint32_t add(Launch launch, const std::vector<InputRegion>& inputs);
    const Launch& launch_at(std::uint32_t handle) const;
    // The work's CUDA calls on `stream`, untimed.
    void run(const Launch& launch, int stream_index, cudaStream_t stream);
    cudaStream_t stream_at(int index) const;
    // A graph capture on `stream`: with `try_libtorch`, through libtorch when tier-3 ops run here
    // (its generator and allocator must know of it, or ops that draw random numbers refuse to be
    // captured), else through the runtime alone; true when through libtorch. close_capture()
    // returns the graph, held by `owned` when it is the backend's own; it throws CudaError when
    // the capture failed.
    bool open_capture(cudaStream_t stream, bool try_libtorch);
    // capture_blocker()'s trial: why the launch cannot be captured ("" when it can).
    std::string trial_capture(const Launch& launch, int stream_index, bool try_libtorch);
    cudaGraph_t close_capture(cudaStream_t stream, bool through_libtorch, Graph& owned);
    // Joins every stream into stream 0, calls `launch(stream 0)` to issue work there, then lets
    // every stream wait for it: work that must see, and be seen by, all streams.
    template <class Issue>
    void on_joined_streams(const Issue& launch) {
        for (int s = 1; s < static_cast<int>(streams_.size()); ++s) stream_wait(0, s);
        launch(stream_at(0));
        for (int s = 1; s < static_cast<int>(streams_.size()); ++s) stream_wait(s, 0);
    }
    void* workspace_at(int index);
    // A filled (GEMM operand, kernel argument) or raw (copy) buffer; nullptr with `why` on
    // shortage.
    void* buffer(MemoryKind kind, int role, std::optional<FillType> fill, std::size_t elements,
                 std::size_t element_size, std::string& why, FillRange range = FillRange::Signed);

    BackendOptions options_;
    cudaDeviceProp properties_{};
    int clock_khz_ = 0;
    int l2_bytes_ = 0;
    int memory_clock_khz_ = 0;
    int memory_bus_width_ = 0;
    std::string next_range_;  // name_next_issue()
    std::string pci_bus_id_;

    BufferPool pool_;
    Stream setup_stream_;  // fills; synchronized before prepare() returns
    std::vector<Stream> streams_;
    std::vector<Event> stream_events_;  // the last point of each stream that others may wait for
    std::vector<Memory> workspaces_;   // cuBLAS/cuBLASLt workspace per stream, made with the stream
    void* l2_flush_buffer_ = nullptr;  // 2x L2, held by the pool, allocated up front
    std::size_t l2_flush_bytes_ = 0;
    std::string l2_flush_note_;
    void* touch_sink_ = nullptr;  // 4 bytes the L2 touch kernel may write
    // Per stream (the first kClockStreams; later ones are not held), the time its last hold let
    // go (start_device_clock(): when the clock started).
    static constexpr int kClockStreams = 64;
    void* clock_let_go_ = nullptr;

    CublasHandle blas_;
    CublasLtHandle lt_;
    BlasContext blas_context_;

    std::unique_ptr<IssueTimer> timer_;
    std::string timer_note_;
    std::unique_ptr<Nvml> nvml_;
    std::string nvml_note_;
    std::unique_ptr<AtenRunner> aten_;
    std::string aten_why_;
    bool aten_tried_ = false;

    std::map<std::string, std::shared_ptr<const TritonKernel>> triton_kernels_;  // by variant
    std::vector<Launch> launches_;                    // handle h is launches_[h - 1]
    std::vector<std::vector<TouchList>> warm_reads_;  // per handle, decided when prepared
    // Per handle: it has run outside a capture (capture_blocker() makes sure it has before its
    // trial capture).
    std::vector<bool> ran_uncaptured_;
    std::uint64_t fills_ = 0;
    // Each fill's own seed, from --seed: a replay draws the same data run after run.
    std::uint64_t next_fill_seed() { return options_.seed * 0x9E3779B97F4A7C15ull + ++fills_; }
    int private_roles_ = 0;  // integer buffers of Triton launches: one each (prepare_triton)

    std::vector<CapturedGraph> graphs_;  // graph g is graphs_[g - 1]
    struct Capture {
        int home = 0;
        bool all_streams = false;
        bool through_libtorch = false;
    };
    std::optional<Capture> capture_;
    std::string libtorch_capture_why_;     // why a capture went without libtorch, the first time
    std::optional<MadeCounts> sealed_at_;  // counts when the plan was sealed (Phase::Timed)
};

}  // namespace replay::cuda
