// The CUDA backend: prepares recipes into launches (buffers from the pool, GEMM descriptors,
// libtorch ops, the warm-up reads of each) and issues them on the driver's streams, bracketed by
// the timer, or captures them into graphs launched whole.
#include "replay/cuda_backend.h"

#include <algorithm>
#include <optional>
#include <map>
#include <stdexcept>
#include <variant>

#include "aten_runner.h"
#include "buffer_pool.h"
#include "cuda_check.h"
#include "cuda_raii.h"
#include "device_kernels.h"
#include "gemm.h"
#include "nvml.h"
#include "nvtx_range.h"
#include "replay/energy.h"
#include "replay/tensor_budget.h"
#include "timing.h"
#include "triton_launcher.h"

namespace replay {
namespace cuda {
namespace {

// Buffer-pool roles at and above this hold one recorded storage each (GEMM dataflow).
constexpr int kStorageRoleBase = 1000;

std::string cuda_version_text(int version) {
    return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

const char* memcpy_name(cudaMemcpyKind kind) {
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

Prepared skipped(std::string reason) {
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
    void warm_inputs(std::uint32_t handle, int stream, std::uint64_t tag) override;
    void name_next_issue(const std::string& range) override { next_range_ = range; }
    std::vector<TimedActivity> collect() override;
    std::unique_ptr<EnergyMeter> energy_meter(std::string& why) override;
    void set_phase(Phase phase) override;
    std::vector<std::string> first_uses() override;
    std::string capture_blocker(std::uint32_t handle, int stream) override;
    void begin_capture(int home, bool all_streams) override;
    std::uint32_t end_capture(std::string& why) override;
    void launch_graph(std::uint32_t graph) override;

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
    void* workspace_at(int index);
    // A filled (GEMM operand) or raw (copy) buffer; nullptr with `why` on shortage.
    void* buffer(MemoryKind kind, int role, std::optional<FillType> fill, std::size_t elements,
                 std::size_t element_size, std::string& why);

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
    std::vector<Launch> launches_;  // handle h is launches_[h - 1]
    std::vector<std::vector<TouchList>> warm_reads_;  // per handle, decided when prepared
    std::uint64_t fills_ = 0;

    std::vector<CapturedGraph> graphs_;  // graph g is graphs_[g - 1]
    struct Capture {
        int home = 0;
        bool all_streams = false;
    };
    std::optional<Capture> capture_;
    std::optional<MadeCounts> sealed_at_;  // counts when the plan was sealed (Phase::Timed)
};

// Selects the device and returns the device memory the pool leaves free (2%, at least 256 MiB).
std::size_t select_device(int device) {
    REPLAY_CUDA_CALL(cudaSetDevice(device));
    cudaDeviceProp p{};
    REPLAY_CUDA_CALL(cudaGetDeviceProperties(&p, device));
    return std::max<std::size_t>(std::size_t{256} << 20, p.totalGlobalMem / 50);
}

CudaBackend::CudaBackend(const BackendOptions& options)
    : options_(options), pool_(select_device(options.device)) {
    REPLAY_CUDA_CALL(cudaFree(nullptr));  // create the context now, not inside a timed call
    REPLAY_CUDA_CALL(cudaGetDeviceProperties(&properties_, options_.device));
    REPLAY_CUDA_CALL(cudaDeviceGetAttribute(&clock_khz_, cudaDevAttrClockRate, options_.device));
    REPLAY_CUDA_CALL(cudaDeviceGetAttribute(&l2_bytes_, cudaDevAttrL2CacheSize, options_.device));
    REPLAY_CUDA_CALL(cudaDeviceGetAttribute(&memory_clock_khz_, cudaDevAttrMemoryClockRate,
                                            options_.device));
    REPLAY_CUDA_CALL(cudaDeviceGetAttribute(&memory_bus_width_, cudaDevAttrGlobalMemoryBusWidth,
                                            options_.device));
    char bus_id[32] = {};
    if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, options_.device) == cudaSuccess)
        pci_bus_id_ = bus_id;
    cudaGetLastError();

    setup_stream_ = Stream::non_blocking();
    blas_ = CublasHandle::create();
    lt_ = CublasLtHandle::create();
    blas_context_ = blas_options_from_environment();
    blas_context_.blas = blas_.get();
    blas_context_.lt = lt_.get();
    set_stream_count(1);
    if (l2_bytes_ > 0) {
        l2_flush_bytes_ = 2 * static_cast<std::size_t>(l2_bytes_);
        std::string why;
        if (auto lease = pool_.acquire(MemoryKind::Device, 21, -1, sizeof(unsigned), why))
            touch_sink_ = lease->data;
        if (auto lease = pool_.acquire(MemoryKind::Device, 20, -1, l2_flush_bytes_, why);
            lease && touch_sink_ != nullptr) {
            l2_flush_buffer_ = lease->data;
            REPLAY_CUDA_CALL(cudaMemset(l2_flush_buffer_, 0, l2_flush_bytes_));
        } else {
            l2_flush_note_ = "L2 flush and input warming unavailable: " + why;
        }
    }

    if (options_.use_cupti) {
        std::string why;
        timer_ = make_cupti_timer(why);
        if (!timer_) timer_note_ = "CUPTI unavailable (" + why + "): timing with CUDA events";
    } else {
        timer_note_ = "CUPTI off by request: timing with CUDA events";
    }
    if (!timer_) timer_ = make_event_timer();
    set_stream_count(static_cast<int>(streams_.size()));  // tells the timer the streams

    std::string why;
    nvml_ = Nvml::open(pci_bus_id_, options_.device, why);
    if (!nvml_) nvml_note_ = "NVML unavailable: " + why;
}

CudaBackend::~CudaBackend() {
    cudaSetDevice(options_.device);
    REPLAY_CUDA_CALL_NOEXCEPT(cudaDeviceSynchronize());
    graphs_.clear();
    launches_.clear();
    aten_.reset();
    timer_.reset();
}

Prepared CudaBackend::prepare(const Recipe& recipe) {
    try {
        REPLAY_CUDA_CALL(cudaSetDevice(options_.device));
        std::size_t free_bytes = 0, total_bytes = 0;
        REPLAY_CUDA_CALL(cudaMemGetInfo(&free_bytes, &total_bytes));
        const TensorBudget budget = tensor_budget(
            options_.max_tensor_bytes, static_cast<std::int64_t>(free_bytes), "free device memory");
        if (auto why = over_budget(recipe, budget)) return skipped(std::move(*why));
        return std::visit(
            [&](const auto& detail) -> Prepared {
                using T = std::decay_t<decltype(detail)>;
                if constexpr (std::is_same_v<T, CopyRecipe>) {
                    return prepare_copy(detail);
                } else if constexpr (std::is_same_v<T, GemmRecipe>) {
                    return prepare_gemm(detail);
                } else if constexpr (std::is_same_v<T, AtenRecipe>) {
                    return prepare_aten(detail);
                } else if constexpr (std::is_same_v<T, CollectiveRecipe>) {
                    return skipped("collectives (tier 4) are not replayed by the CUDA backend");
                } else if constexpr (std::is_same_v<T, TritonRecipe>) {
                    return prepare_triton(detail);
                } else {
                    return skipped(recipe.reason.empty() ? "no replay recipe" : recipe.reason);
                }
            },
            recipe.detail);
    } catch (const std::exception& e) {
        return {Disposition::Failed, e.what(), 0};
    }
}

void* CudaBackend::buffer(MemoryKind kind, int role, std::optional<FillType> fill,
                          std::size_t elements, std::size_t element_size, std::string& why) {
    const int content = fill ? static_cast<int>(*fill) : -1;
    auto lease = pool_.acquire(kind, role, content, elements * element_size, why);
    if (!lease) return nullptr;
    if (lease->created && fill) {
        // Fill the whole buffer: a later, larger recipe of the same dtype may reuse it.
        const std::uint64_t seed = options_.seed * 0x9E3779B97F4A7C15ull + ++fills_;
        REPLAY_CUDA_CALL(launch_fill_uniform(lease->data, lease->bytes / element_size, *fill, seed,
                                             setup_stream_.get()));
    }
    return lease->data;
}

Prepared CudaBackend::prepare_copy(const CopyRecipe& c) {
    if (c.bytes <= 0) return skipped("copy of 0 bytes");
    const auto bytes = static_cast<std::size_t>(c.bytes);
    const MemoryKind host = c.host_pinned ? MemoryKind::Pinned : MemoryKind::Pageable;
    const char* host_name = c.host_pinned ? "Pinned" : "Pageable";
    std::string why, note;
    CopyLaunch launch;
    launch.bytes = bytes;
    auto get = [&](MemoryKind kind, int role) {
        return buffer(kind, role, std::nullopt, bytes, 1, why);
    };

    if (c.is_memset) {
        launch.memset = true;
        launch.value = c.value;
        launch.dst = get(MemoryKind::Device, 10);
        launch.label = "Memset (Device)";
        if (launch.dst == nullptr) return skipped(why);
        return {Disposition::Ready, note, add(std::move(launch), {})};
    }
    MemoryKind src = MemoryKind::Device, dst = MemoryKind::Device;
    launch.pageable = !c.host_pinned && c.direction != CopyDirection::DeviceToDevice &&
                      c.direction != CopyDirection::Device && c.direction != CopyDirection::PeerToPeer;
    switch (c.direction) {
        case CopyDirection::HostToDevice:
            src = host, launch.kind = cudaMemcpyHostToDevice;
            break;
        case CopyDirection::DeviceToHost:
            dst = host, launch.kind = cudaMemcpyDeviceToHost;
            break;
        case CopyDirection::HostToHost:
            src = dst = host, launch.kind = cudaMemcpyHostToHost;
            break;
        case CopyDirection::PeerToPeer:
            note = "peer copy replayed as device-to-device on one GPU";
            launch.kind = cudaMemcpyDeviceToDevice;
            break;
        case CopyDirection::DeviceToDevice:
        case CopyDirection::Device:
            launch.kind = cudaMemcpyDeviceToDevice;
            break;
    }
    void* from = get(src, 10);
    if (from == nullptr) return skipped(why);
    void* to = get(dst, 11);
    if (to == nullptr) return skipped(why);
    launch.src = from;
    launch.dst = to;
    auto kind_name = [&](MemoryKind k) { return k == MemoryKind::Device ? "Device" : host_name; };
    launch.label = std::string("Memcpy ") + memcpy_name(launch.kind) + " (" + kind_name(src) +
                   " -> " + kind_name(dst) + ")";
    return {Disposition::Ready, note, add(std::move(launch), {})};
}

Prepared CudaBackend::prepare_gemm(const GemmRecipe& recipe) {
    GemmRecipe g = recipe;
    if (auto why = normalize_gemm(g)) return skipped(*why);
    const GemmExtents extents = gemm_extents(g);
    const std::size_t ab_size = element_size(g.a_type), c_size = element_size(g.c_type);
    std::string why;
    CudaGemmBuffers buffers;
    // A recorded storage gets a buffer of its own (shared by every recipe that read it), so each
    // layer's weights are distinct memory as they were in the recording; else buffers by slot.
    auto role = [](int slot, std::int64_t storage) {
        return storage >= 0 ? kStorageRoleBase + static_cast<int>(storage % (1 << 29)) : slot;
    };
    buffers.a = buffer(MemoryKind::Device, role(0, g.a_storage), fill_type(g.a_type), extents.a,
                       ab_size, why);
    if (buffers.a == nullptr) return skipped(why);
    buffers.b = buffer(MemoryKind::Device, role(1, g.b_storage), fill_type(g.b_type), extents.b,
                       ab_size, why);
    if (buffers.b == nullptr) return skipped(why);
    buffers.c = buffer(MemoryKind::Device, role(2, g.bias ? -1 : g.c_storage), fill_type(g.c_type),
                       extents.c, c_size, why);
    if (buffers.c == nullptr) return skipped(why);
    if (g.bias) {
        buffers.bias = buffer(MemoryKind::Device, role(3, g.c_storage), fill_type(g.bias_type),
                              extents.bias, element_size(g.bias_type), why);
        if (buffers.bias == nullptr) return skipped(why);
    }
    buffers.a_elements = extents.a, buffers.b_elements = extents.b, buffers.c_elements = extents.c;
    buffers.bias_elements = extents.bias;
    REPLAY_CUDA_CALL(cudaStreamSynchronize(setup_stream_.get()));

    GemmLaunch launch(g, blas_context_, buffers.a, buffers.b, buffers.c, buffers.bias);
    switch (launch.api()) {
        case GemmLaunch::Api::LtMatmul:
            buffers.api = "cublasLt";
            break;
        case GemmLaunch::Api::Gemm:
            buffers.api = "cublas gemm";
            break;
        case GemmLaunch::Api::GemmStridedBatched:
            buffers.api = "cublas strided batched";
            break;
    }
    // PyTorch's linear/addmm/mm take the weight as the second operand and the bias as `self`;
    // the parameter flags only matter when the trace has no reuse distances.
    const bool weight_b = g.op != "aten::bmm" && g.op != "aten::baddbmm";
    std::vector<InputRegion> inputs{{buffers.a, extents.a * ab_size, g.a_reuse_bytes, false},
                                    {buffers.b, extents.b * ab_size, g.b_reuse_bytes, weight_b}};
    if (g.bias)
        inputs.push_back(
            {buffers.bias, extents.bias * element_size(g.bias_type), g.c_reuse_bytes, true});
    else if (g.beta != 0)
        inputs.push_back({buffers.c, extents.c * c_size, g.c_reuse_bytes, weight_b});
    std::string note = launch.note();
    const std::vector<InputRegion> warm = inputs;
    return {Disposition::Ready, std::move(note),
            add(GemmEntry{std::move(launch), std::move(buffers), std::move(inputs)}, warm)};
}

Prepared CudaBackend::prepare_aten(const AtenRecipe& recipe) {
    if (!aten_tried_) {
        aten_tried_ = true;
        aten_ = AtenRunner::create(options_.device, options_.seed, options_.dataflow, aten_why_);
    }
    if (!aten_) return skipped(aten_why_);
    Prepared p = aten_->prepare(recipe);
    if (p.disposition != Disposition::Ready) return p;
    return {Disposition::Ready, std::move(p.reason),
            add(AtenLaunch{p.handle, aten_->label(p.handle)}, aten_->inputs(p.handle))};
}

Prepared CudaBackend::prepare_triton(const TritonRecipe& t) {
    if (t.cubin.empty()) return skipped("Triton kernel " + t.kernel + ": no compiled image");
    auto& kernel = triton_kernels_[t.variant];
    if (!kernel) {
        std::string why;
        kernel = TritonKernel::load(t.cubin, t.kernel, t.shared_bytes, why);
        if (!kernel) {
            triton_kernels_.erase(t.variant);
            return skipped(why);
        }
    }
    TritonLaunch launch;
    launch.kernel = kernel;
    std::copy(std::begin(t.grid), std::end(t.grid), launch.grid);
    launch.threads = t.num_warps * 32;
    launch.shared_bytes = t.shared_bytes;
    launch.label = t.kernel;
    // One buffer per wrapper buffer the launch names (an in-place kernel passes one twice).
    std::map<std::string, void*> buffers;
    std::string why;
    for (const auto& a : t.args) {
        launch.arg_bytes.push_back(a.pointer || a.bits == 64 ? 8 : 4);
        if (!a.pointer) {
            launch.args.push_back(static_cast<std::uint64_t>(a.value));
            continue;
        }
        void* data = nullptr;
        if (a.bytes > 0) {
            auto [it, added] = buffers.emplace(a.buffer, nullptr);
            if (added) {
                const std::optional<FillType> fill = fill_type(a.dtype);
                const std::size_t size = fill ? element_size(a.dtype) : 1;
                const auto elements = (static_cast<std::size_t>(a.bytes) + size - 1) / size;
                it->second = buffer(MemoryKind::Device, 2000 + static_cast<int>(buffers.size()),
                                    fill, elements, size, why);
                if (it->second == nullptr) return skipped(why);
                // Integers (indices, offsets) are zeros: always in range.
                if (!fill) REPLAY_CUDA_CALL(cudaMemsetAsync(it->second, 0, elements, setup_stream_.get()));
            }
            data = it->second;
        }
        launch.args.push_back(reinterpret_cast<std::uintptr_t>(data));
    }
    REPLAY_CUDA_CALL(cudaStreamSynchronize(setup_stream_.get()));
    return {Disposition::Ready, "", add(std::move(launch), {})};
}

std::uint32_t CudaBackend::add(Launch launch, const std::vector<InputRegion>& inputs) {
    // Which inputs the step reads into L2 first is decided here, once: warming a step is then
    // one launch with its ranges as arguments.
    std::vector<TouchList> warm;
    for (const InputRegion& in : inputs) {
        if (l2_bytes_ <= 0 || !cached_in_recording(in, static_cast<std::size_t>(l2_bytes_)))
            continue;
        if (warm.empty() || warm.back().count == TouchList::kCapacity) warm.emplace_back();
        TouchList& list = warm.back();
        list.data[list.count] = in.data;
        list.bytes[list.count] = in.bytes;
        ++list.count;
    }
    launches_.push_back(std::move(launch));
    warm_reads_.push_back(std::move(warm));
    return static_cast<std::uint32_t>(launches_.size());
}

const Launch& CudaBackend::launch_at(std::uint32_t handle) const {
    if (handle == 0 || handle > launches_.size())
        throw std::out_of_range("CUDA backend: unknown handle " + std::to_string(handle));
    return launches_[handle - 1];
}

cudaStream_t CudaBackend::stream_at(int index) const {
    if (index < 0 || static_cast<std::size_t>(index) >= streams_.size())
        throw std::out_of_range("CUDA backend: stream " + std::to_string(index) + " of " +
                                std::to_string(streams_.size()));
    return streams_[static_cast<std::size_t>(index)].get();
}

void* CudaBackend::workspace_at(int index) {
    auto& workspace = workspaces_.at(static_cast<std::size_t>(index));
    if (workspace.data() == nullptr && blas_context_.workspace_bytes > 0)
        workspace = Memory(MemoryKind::Device, blas_context_.workspace_bytes);
    return workspace.data();
}

void CudaBackend::set_stream_count(int count) {
    count = std::max(count, 1);
    REPLAY_CUDA_CALL(cudaSetDevice(options_.device));
    if (static_cast<std::size_t>(count) < streams_.size())
        REPLAY_CUDA_CALL(cudaDeviceSynchronize());
    streams_.resize(static_cast<std::size_t>(count));
    stream_events_.resize(streams_.size());
    workspaces_.resize(streams_.size());
    for (std::size_t i = 0; i < streams_.size(); ++i) {
        if (!streams_[i]) streams_[i] = Stream::non_blocking();
        if (!stream_events_[i]) stream_events_[i] = Event::sync_only();
        workspace_at(static_cast<int>(i));  // now, not during the first timed GEMM
    }
    if (timer_) {
        std::vector<cudaStream_t> streams;
        for (const auto& stream : streams_) streams.push_back(stream.get());
        timer_->set_streams(streams);
    }
}

void CudaBackend::run(const Launch& launch, int stream_index, cudaStream_t stream) {
    if (const auto* copy = std::get_if<CopyLaunch>(&launch)) {
        if (copy->memset)
            REPLAY_CUDA_CALL(cudaMemsetAsync(copy->dst, copy->value, copy->bytes, stream));
        else
            REPLAY_CUDA_CALL(cudaMemcpyAsync(copy->dst, copy->src, copy->bytes, copy->kind, stream));
    } else if (const auto* gemm = std::get_if<GemmEntry>(&launch)) {
        gemm->launch.run(blas_context_, stream, workspace_at(stream_index));
    } else if (const auto* aten = std::get_if<AtenLaunch>(&launch)) {
        aten_->run(aten->runner_handle, stream);
    } else if (const auto* t = std::get_if<TritonLaunch>(&launch)) {
        t->kernel->launch(t->grid, t->threads, t->shared_bytes, t->args, t->arg_bytes, stream);
    }
}

void CudaBackend::issue(std::uint32_t handle, int stream_index, std::uint64_t tag) {
    const Launch& launch = launch_at(handle);
    cudaStream_t stream = stream_at(stream_index);
    const std::string& label = std::visit(
        [](const auto& l) -> const std::string& {
            using T = std::decay_t<decltype(l)>;
            if constexpr (std::is_same_v<T, GemmEntry>)
                return l.launch.label();
            else
                return l.label;
        },
        launch);

    const NvtxRange range(next_range_);
    next_range_.clear();
    const IssueMark mark{tag, stream_index, false};
    timer_->begin(mark, stream);
    try {
        run(launch, stream_index, stream);
    } catch (...) {
        try {
            timer_->end(mark, stream, label);
        } catch (...) {
        }
        throw;
    }
    timer_->end(mark, stream, label);
}

void CudaBackend::stream_wait(int waiter, int producer) {
    if (waiter == producer) return;
    cudaStream_t w = stream_at(waiter), p = stream_at(producer);
    cudaEvent_t event = stream_events_[static_cast<std::size_t>(producer)].get();
    // Waiting captures the event's state now; recording it again later does not affect this wait.
    REPLAY_CUDA_CALL(cudaEventRecord(event, p));
    REPLAY_CUDA_CALL(cudaStreamWaitEvent(w, event, 0));
}

void CudaBackend::synchronize() {
    REPLAY_CUDA_CALL(cudaDeviceSynchronize());
}

void CudaBackend::flush_l2() {
    if (l2_flush_buffer_ == nullptr)
        return;  // no L2 size known, or no memory for the buffer (see notes)
    // Join every stream into stream 0, read 2x L2 there, then let every stream wait for it.
    // Reading, not writing: a memset leaves L2 full of dirty lines, and the next kernel then pays
    // their write-back while it streams its weights in (+15% on BLOOM's weight-bound GEMMs),
    // where a recorded step's L2 holds mostly clean lines of weights read before.
    for (int s = 1; s < static_cast<int>(streams_.size()); ++s) stream_wait(0, s);
    REPLAY_CUDA_CALL(launch_l2_touch(l2_flush_buffer_, l2_flush_bytes_,
                                     static_cast<unsigned*>(touch_sink_), stream_at(0)));
    for (int s = 1; s < static_cast<int>(streams_.size()); ++s) stream_wait(s, 0);
}

void CudaBackend::warm_inputs(std::uint32_t handle, int stream_index, std::uint64_t tag) {
    launch_at(handle);  // a handle check
    const std::vector<TouchList>& warm = warm_reads_[handle - 1];
    if (touch_sink_ == nullptr || warm.empty()) return;
    cudaStream_t stream = stream_at(stream_index);
    const IssueMark mark{tag, stream_index, true};
    timer_->begin(mark, stream);
    try {
        for (const TouchList& list : warm)
            REPLAY_CUDA_CALL(
                launch_l2_touch_list(list, static_cast<unsigned*>(touch_sink_), stream));
    } catch (...) {
        try {
            timer_->end(mark, stream, kWarmReadLabel);
        } catch (...) {
        }
        throw;
    }
    timer_->end(mark, stream, kWarmReadLabel);
}

std::unique_ptr<EnergyMeter> CudaBackend::energy_meter(std::string& why) {
    if (!nvml_) {
        why = nvml_note_;
        return nullptr;
    }
    return make_nvml_meter(*nvml_, why);
}

std::vector<TimedActivity> CudaBackend::collect() {
    return timer_->collect();
}

void CudaBackend::set_phase(Phase phase) {
    timer_->set_phase(phase);
    if (phase == Phase::Timed)
        sealed_at_ = made_counts();
    else
        sealed_at_.reset();
}

std::vector<std::string> CudaBackend::first_uses() {
    std::vector<std::string> lines;
    if (sealed_at_) {
        const MadeCounts now = made_counts(), then = *sealed_at_;
        auto line = [&](std::uint64_t made, const char* what) {
            if (made > 0) lines.push_back(std::to_string(made) + " " + what);
        };
        line(now.allocations - then.allocations, "buffers allocated by the backend");
        line(now.streams - then.streams, "streams created");
        line(now.events - then.events, "CUDA events created");
        line(now.graphs - then.graphs, "graphs instantiated");
    }
    for (auto& line : timer_->first_uses()) lines.push_back(std::move(line));
    return lines;
}

std::string CudaBackend::capture_blocker(std::uint32_t handle, int stream_index) {
    if (std::string why = timer_->graph_support(); !why.empty()) return why;
    const Launch& launch = launch_at(handle);
    if (const auto* copy = std::get_if<CopyLaunch>(&launch); copy != nullptr && copy->pageable)
        return "a copy with pageable host memory, which the runtime stages synchronously, "
               "cannot be captured";
    // A trial capture on the step's own stream: what it records is discarded, nothing runs.
    cudaStream_t stream = stream_at(stream_index);
    REPLAY_CUDA_CALL(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    std::string why;
    try {
        run(launch, stream_index, stream);
    } catch (const std::exception& e) {
        why = e.what();
    }
    cudaGraph_t raw = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream, &raw);
    const Graph discarded(raw);
    if (why.empty() && ended != cudaSuccess)
        why = std::string("cudaStreamEndCapture: ") + cudaGetErrorString(ended);
    cudaGetLastError();  // a failed capture leaves no error for the next call
    return why.empty() ? why : "it cannot be captured in a CUDA graph: " + why;
}

void CudaBackend::begin_capture(int home, bool all_streams) {
    if (capture_) throw std::logic_error("CUDA backend: a graph capture is already open");
    REPLAY_CUDA_CALL(cudaStreamBeginCapture(stream_at(home), cudaStreamCaptureModeThreadLocal));
    capture_ = Capture{home, all_streams};
    timer_->set_capturing(true);
    // Every other stream joins the capture by waiting for the home stream.
    if (all_streams)
        for (int s = 0; s < static_cast<int>(streams_.size()); ++s)
            if (s != home) stream_wait(s, home);
}

std::uint32_t CudaBackend::end_capture(std::string& why) {
    if (!capture_) {
        why = "no graph capture is open";
        return 0;
    }
    const Capture capture = *capture_;
    capture_.reset();
    timer_->set_capturing(false);
    std::string joined;
    try {  // the streams rejoin the home stream: a capture ends where it began
        if (capture.all_streams)
            for (int s = 0; s < static_cast<int>(streams_.size()); ++s)
                if (s != capture.home) stream_wait(capture.home, s);
    } catch (const std::exception& e) {
        joined = e.what();
    }
    cudaGraph_t raw = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream_at(capture.home), &raw);
    const Graph graph(raw);
    if (!joined.empty() || ended != cudaSuccess) {
        cudaGetLastError();
        why = !joined.empty() ? joined
                              : std::string("cudaStreamEndCapture: ") + cudaGetErrorString(ended);
        return 0;
    }
    try {
        GraphExec exec = GraphExec::instantiate(graph);
        // Uploaded now: a first launch would do it inside the timed step.
        REPLAY_CUDA_CALL(cudaGraphUpload(exec.get(), stream_at(capture.home)));
        graphs_.push_back({std::move(exec), capture.home, capture.all_streams});
    } catch (const std::exception& e) {
        why = e.what();
        return 0;
    }
    return static_cast<std::uint32_t>(graphs_.size());
}

void CudaBackend::launch_graph(std::uint32_t graph) {
    if (graph == 0 || graph > graphs_.size())
        throw std::out_of_range("CUDA backend: unknown graph " + std::to_string(graph));
    const CapturedGraph& g = graphs_[graph - 1];
    const int count = g.all_streams ? static_cast<int>(streams_.size()) : 0;
    // After what every stream it captured has so far, before what they get after it.
    for (int s = 0; s < count; ++s)
        if (s != g.home) stream_wait(g.home, s);
    REPLAY_CUDA_CALL(cudaGraphLaunch(g.exec.get(), stream_at(g.home)));
    for (int s = 0; s < count; ++s)
        if (s != g.home) stream_wait(s, g.home);
}

Environment CudaBackend::environment() const {
    Environment e;
    e.backend = "cuda";
    e.device_name = properties_.name;
    e.compute_major = properties_.major;
    e.compute_minor = properties_.minor;
    e.total_memory = static_cast<std::int64_t>(properties_.totalGlobalMem);

    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    const std::string nvml_driver = nvml_ ? nvml_->driver_version() : std::string();
    e.driver_version = nvml_driver.empty()
                           ? "CUDA " + cuda_version_text(driver)
                           : nvml_driver + " (CUDA " + cuda_version_text(driver) + ")";
    e.cuda_runtime_version = cuda_version_text(runtime);
    int major = 0, minor = 0, patch = 0;
    cublasGetProperty(MAJOR_VERSION, &major);
    cublasGetProperty(MINOR_VERSION, &minor);
    cublasGetProperty(PATCH_LEVEL, &patch);
    e.cublas_version = std::to_string(major) + "." + std::to_string(minor) + "." +
                       std::to_string(patch) + " (cublasLt " +
                       std::to_string(cublasLtGetVersion()) + ")";
    e.libtorch_version = AtenRunner::libtorch_version();
    e.timing = timer_->method();
    if (nvml_) {
        e.sm_clock_mhz = nvml_->sm_clock_mhz().value_or(0);
        e.memory_clock_mhz = nvml_->memory_clock_mhz().value_or(0);
        e.max_sm_clock_mhz = nvml_->max_sm_clock_mhz().value_or(0);
    }
    if (e.max_sm_clock_mhz == 0) e.max_sm_clock_mhz = clock_khz_ / 1000;
    e.sm_count = properties_.multiProcessorCount;
    e.memory_bus_width_bits = memory_bus_width_;
    e.peaks = device_peaks({properties_.major, properties_.minor, properties_.multiProcessorCount,
                            static_cast<double>(e.max_sm_clock_mhz), memory_clock_khz_ / 1000.0,
                            memory_bus_width_});

    e.notes.push_back("device " + std::to_string(options_.device) + " (" + pci_bus_id_ + "), " +
                      std::to_string(properties_.multiProcessorCount) + " SMs, L2 " +
                      std::to_string(l2_bytes_ >> 20) + " MiB");
    if (!timer_note_.empty()) e.notes.push_back(timer_note_);
    for (auto& note : timer_->notes()) e.notes.push_back(std::move(note));
    if (!nvml_note_.empty()) e.notes.push_back(nvml_note_);
    if (!l2_flush_note_.empty()) e.notes.push_back(l2_flush_note_);
    e.notes.push_back("cuBLAS workspace " + std::to_string(blas_context_.workspace_bytes >> 20) +
                      " MiB per stream" +
                      (blas_context_.prefer_lt
                           ? "; TORCH_BLAS_PREFER_CUBLASLT: every GEMM through cuBLASLt"
                           : "") +
                      (blas_context_.allow_tf32 ? "; TF32 allowed for fp32 GEMMs" : ""));
    e.notes.push_back("buffers are reused by size and role, not by recorded storage");
    if (aten_tried_ && !aten_) e.notes.push_back("tier 3 unavailable: " + aten_why_);
    if (aten_)
        for (auto& note : aten_->notes()) e.notes.push_back("libtorch: " + note);
    return e;
}

bool CudaBackend::gemm_buffers(std::uint32_t handle, CudaGemmBuffers& out) const {
    if (handle == 0 || handle > launches_.size()) return false;
    const auto* gemm = std::get_if<GemmEntry>(&launches_[handle - 1]);
    if (gemm == nullptr) return false;
    out = gemm->buffers;
    return true;
}

}  // namespace
}  // namespace cuda

std::unique_ptr<Backend> create_cuda_backend(const BackendOptions& options, std::string& why) {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
        cudaGetLastError();
        why = std::string("no usable CUDA driver or GPU: ") + cudaGetErrorName(status) + " (" +
              cudaGetErrorString(status) + ")";
        return nullptr;
    }
    if (count == 0) {
        why = "no CUDA device";
        return nullptr;
    }
    if (options.device < 0 || options.device >= count) {
        why = "CUDA device " + std::to_string(options.device) + " does not exist (" +
              std::to_string(count) + " device" + (count == 1 ? "" : "s") + ")";
        return nullptr;
    }
    try {
        return std::make_unique<cuda::CudaBackend>(options);
    } catch (const std::exception& e) {
        why = std::string("CUDA backend could not start: ") + e.what();
        return nullptr;
    }
}

bool cuda_gemm_buffers(Backend& backend, std::uint32_t handle, CudaGemmBuffers& out) {
    const auto* cuda = dynamic_cast<const cuda::CudaBackend*>(&backend);
    return cuda != nullptr && cuda->gemm_buffers(handle, out);
}

}  // namespace replay
