// The CUDA backend: sets up the device, its streams, cuBLAS handles, timer and NVML, and issues
// the launches that cuda_prepare.cpp made from recipes on the driver's streams, bracketed by the
// timer, or captures them into graphs launched whole.
#include "replay/cuda_backend.h"

#include <algorithm>
#include <stdexcept>

#include "cuda_backend_impl.h"

namespace replay {
namespace cuda {
namespace {

// Selects the device and returns the device memory the pool leaves free (2%, at least 256 MiB).
std::size_t select_device(int device) {
    REPLAY_CUDA_CALL(cudaSetDevice(device));
    cudaDeviceProp p{};
    REPLAY_CUDA_CALL(cudaGetDeviceProperties(&p, device));
    return std::max<std::size_t>(std::size_t{256} << 20, p.totalGlobalMem / 50);
}

}  // namespace

CudaBackend::CudaBackend(const BackendOptions& options)
    : options_(options), pool_(select_device(options.device)) {
    REPLAY_CUDA_CALL(cudaFree(nullptr));  // create the context now, not inside a timed call
    REPLAY_CUDA_CALL(cudaGetDeviceProperties(&properties_, options_.device));
    REPLAY_CUDA_CALL(cudaDeviceGetAttribute(&clock_khz_, cudaDevAttrClockRate, options_.device));
    REPLAY_CUDA_CALL(cudaDeviceGetAttribute(&l2_bytes_, cudaDevAttrL2CacheSize, options_.device));
    REPLAY_CUDA_CALL(
        cudaDeviceGetAttribute(&memory_clock_khz_, cudaDevAttrMemoryClockRate, options_.device));
    REPLAY_CUDA_CALL(cudaDeviceGetAttribute(&memory_bus_width_, cudaDevAttrGlobalMemoryBusWidth,
                                            options_.device));
    char bus_id[32] = {};
    if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, options_.device) == cudaSuccess)
        pci_bus_id_ = bus_id;
    cudaGetLastError();

    setup_stream_ = Stream::non_blocking();
    blas_ = CublasHandle::create();
    lt_ = CublasLtHandle::create();
    int compute_major = 0;
    REPLAY_CUDA_CALL(
        cudaDeviceGetAttribute(&compute_major, cudaDevAttrComputeCapabilityMajor, options_.device));
    blas_context_ = blas_options_from_environment(compute_major);
    blas_context_.blas = blas_.get();
    blas_context_.lt = lt_.get();
    set_stream_count(1);
    {
        std::string why;  // without it, --pace recorded is the host's waits alone
        if (auto lease = pool_.acquire(MemoryKind::Device, 22, -1,
                                       kClockStreams * sizeof(std::uint64_t), why))
            clock_let_go_ = lease->data;
    }
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

void* CudaBackend::workspace_at(int index) {
    auto& workspace = workspaces_.at(static_cast<std::size_t>(index));
    // One buffer per stream for cuBLAS and cuBLASLt (stream order keeps their uses apart).
    const std::size_t bytes =
        std::max(blas_context_.workspace_bytes, blas_context_.lt_workspace_bytes);
    if (workspace.data() == nullptr && bytes > 0) workspace = Memory(MemoryKind::Device, bytes);
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
            REPLAY_CUDA_CALL(
                cudaMemcpyAsync(copy->dst, copy->src, copy->bytes, copy->kind, stream));
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
    if (!capture_) {
        if (ran_uncaptured_.size() < handle) ran_uncaptured_.resize(handle, false);
        ran_uncaptured_[handle - 1] = true;
    }
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
    // Reading, not writing: a memset leaves L2 full of dirty lines, and the next kernel then pays
    // their write-back while it streams its weights in (+15% on BLOOM's weight-bound GEMMs),
    // where a recorded step's L2 holds mostly clean lines of weights read before.
    on_joined_streams([&](cudaStream_t stream) {
        REPLAY_CUDA_CALL(launch_l2_touch(l2_flush_buffer_, l2_flush_bytes_,
                                         static_cast<unsigned*>(touch_sink_), stream));
    });
}

void CudaBackend::evict_instruction_caches() {
    if (touch_sink_ == nullptr) return;  // no memory for the sink (see notes)
    on_joined_streams([&](cudaStream_t stream) {
        REPLAY_CUDA_CALL(launch_instruction_cache_evict(properties_.multiProcessorCount,
                                                        static_cast<float*>(touch_sink_), stream));
    });
}

void CudaBackend::start_device_clock(int stream_index) {
    if (clock_let_go_ == nullptr) return;
    const int streams = std::min(static_cast<int>(streams_.size()), kClockStreams);
    REPLAY_CUDA_CALL(launch_clock_start(static_cast<unsigned long long*>(clock_let_go_), streams,
                                        stream_at(stream_index)));
}

void CudaBackend::hold_after(int stream_index, std::int64_t after_ns) {
    if (clock_let_go_ == nullptr || stream_index >= kClockStreams) return;
    REPLAY_CUDA_CALL(
        launch_clock_hold(static_cast<unsigned long long*>(clock_let_go_) + stream_index, after_ns,
                          stream_at(stream_index)));
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
    // A libtorch op's first run outside a capture: libtorch plans a cuDNN launch on first use
    // and keeps the plan, and one made while capturing can be another. Planned first in a trial
    // capture, a UNet's persistent cuDNN convolutions kept a fallback that launched 126 CTAs
    // where the recording had 128 or 132, and ran 1.3x slow in every graph after (30 -> 39.7 us,
    // H200). Only libtorch's ops: our own cuBLAS GEMMs run first outside a capture were timed
    // 15-25% fast inside graphs (decode GEMMs, 8.6 -> 6.4 us; 8.35 recorded, 8.3 direct), for
    // reasons not found (tests/gpu/VALIDATION.md, thirty-first session).
    if (std::holds_alternative<AtenLaunch>(launch) &&
        (handle > ran_uncaptured_.size() || !ran_uncaptured_[handle - 1])) {
        try {
            issue(handle, stream_index, 0);
        } catch (const std::exception& e) {
            return std::string("it failed when issued outside a capture: ") + e.what();
        }
    }
    // A trial capture on the step's own stream: what it records is discarded, nothing runs.
    // First without libtorch: a capture through libtorch that fails (an op that synchronizes)
    // is what can leave libtorch's generator in capture mode. Only an op that failed for want
    // of that generator is tried again through libtorch.
    std::string why = trial_capture(launch, stream_index, false);
    if (!why.empty() && aten_ && std::holds_alternative<AtenLaunch>(launch) &&
        why.find(kGeneratorNotCapturing) != std::string::npos)
        why = trial_capture(launch, stream_index, true);
    return why.empty() ? why : "it cannot be captured in a CUDA graph: " + why;
}

std::string CudaBackend::trial_capture(const Launch& launch, int stream_index, bool try_libtorch) {
    cudaStream_t stream = stream_at(stream_index);
    const bool through_libtorch = open_capture(stream, try_libtorch);
    std::string why;
    try {
        run(launch, stream_index, stream);
    } catch (const std::exception& e) {
        why = e.what();
    }
    try {
        Graph discarded;
        close_capture(stream, through_libtorch, discarded);
    } catch (const std::exception& e) {
        // The op's own failure says why; what ending the capture then left broken is news.
        const std::string ended = e.what();
        if (why.empty() || ended.find(kNotRestored) != std::string::npos)
            why += (why.empty() ? "" : "; ") + ended;
    }
    cudaGetLastError();  // a failed capture leaves no error for the next call
    return why;
}

bool CudaBackend::open_capture(cudaStream_t stream, bool try_libtorch) {
    if (try_libtorch && aten_) {
        std::string why = aten_->begin_capture(stream);
        if (why.empty()) return true;
        if (libtorch_capture_why_.empty()) libtorch_capture_why_ = std::move(why);
    }
    REPLAY_CUDA_CALL(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    return false;
}

cudaGraph_t CudaBackend::close_capture(cudaStream_t stream, bool through_libtorch, Graph& owned) {
    if (through_libtorch) return aten_->end_capture(stream);
    cudaGraph_t raw = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream, &raw);
    owned = Graph(raw);
    if (ended != cudaSuccess) {
        cudaGetLastError();
        throw CudaError(std::string("cudaStreamEndCapture: ") + cudaGetErrorString(ended));
    }
    return raw;
}

void CudaBackend::begin_capture(int home, bool all_streams) {
    if (capture_) throw std::logic_error("CUDA backend: a graph capture is already open");
    const bool through_libtorch = open_capture(stream_at(home), true);
    capture_ = Capture{home, all_streams, through_libtorch};
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
    Graph owned;
    cudaGraph_t graph = nullptr;
    std::string ended;
    try {
        graph = close_capture(stream_at(capture.home), capture.through_libtorch, owned);
    } catch (const std::exception& e) {
        ended = e.what();
    }
    if (!joined.empty() || !ended.empty()) {
        cudaGetLastError();
        why = !joined.empty() ? joined : ended;
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
    e.device_uuid = uuid_text(properties_.uuid);
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
    e.device_clock = clock_let_go_ != nullptr;
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
    if (!libtorch_capture_why_.empty())
        e.notes.push_back(
            "CUDA graphs captured without libtorch, so ops that draw random numbers "
            "are issued outside them: " +
            libtorch_capture_why_);
    auto kib = [](std::size_t bytes) { return std::to_string(bytes >> 10) + " KiB"; };
    e.notes.push_back("cuBLAS workspace " + kib(blas_context_.workspace_bytes) +
                      ", cuBLASLt workspace " + kib(blas_context_.lt_workspace_bytes) +
                      " per stream, as PyTorch's defaults (CUBLAS_WORKSPACE_CONFIG, "
                      "CUBLASLT_WORKSPACE_SIZE)" +
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
