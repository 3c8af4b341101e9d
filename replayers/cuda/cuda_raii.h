// Owning wrappers for every CUDA runtime, cuBLAS and cuBLASLt object the backend creates: one
// owner each, copies deleted, moves allowed, released with a logged (never thrown) error.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>

#include "cuda_check.h"

namespace replay::cuda {

// How many CUDA objects this backend module made so far. Taken when the plan is sealed and again
// after the timed iterations: what was made in between is a first use the plan missed.
struct MadeCounts {
    std::uint64_t allocations = 0;  // Memory: device, pinned and pageable buffers
    std::uint64_t allocated_bytes = 0;
    std::uint64_t streams = 0;
    std::uint64_t events = 0;
    std::uint64_t graphs = 0;  // instantiated
};
inline MadeCounts& made_counts() {
    static MadeCounts counts;
    return counts;
}

// A handle of type T released by Destroy(T) (a noexcept function).
template <typename T, void (*Destroy)(T) noexcept>
class UniqueHandle {
  public:
    UniqueHandle() = default;
    explicit UniqueHandle(T handle) : handle_(handle) {}
    ~UniqueHandle() { reset(); }
    UniqueHandle(const UniqueHandle&) = delete;
    UniqueHandle& operator=(const UniqueHandle&) = delete;
    UniqueHandle(UniqueHandle&& other) noexcept : handle_(std::exchange(other.handle_, T{})) {}
    UniqueHandle& operator=(UniqueHandle&& other) noexcept {
        if (this != &other) {
            reset();
            handle_ = std::exchange(other.handle_, T{});
        }
        return *this;
    }
    T get() const { return handle_; }
    explicit operator bool() const { return handle_ != T{}; }
    void reset() noexcept {
        if (handle_ != T{}) Destroy(std::exchange(handle_, T{}));
    }

  private:
    T handle_{};
};

namespace detail {
inline void destroy_stream(cudaStream_t s) noexcept {
    REPLAY_CUDA_CALL_NOEXCEPT(cudaStreamDestroy(s));
}
inline void destroy_event(cudaEvent_t e) noexcept {
    REPLAY_CUDA_CALL_NOEXCEPT(cudaEventDestroy(e));
}
inline void destroy_cublas(cublasHandle_t h) noexcept {
    REPLAY_CUBLAS_CALL_NOEXCEPT(cublasDestroy(h));
}
inline void destroy_cublaslt(cublasLtHandle_t h) noexcept {
    REPLAY_CUBLAS_CALL_NOEXCEPT(cublasLtDestroy(h));
}
inline void destroy_matmul_desc(cublasLtMatmulDesc_t d) noexcept {
    REPLAY_CUBLAS_CALL_NOEXCEPT(cublasLtMatmulDescDestroy(d));
}
inline void destroy_layout(cublasLtMatrixLayout_t d) noexcept {
    REPLAY_CUBLAS_CALL_NOEXCEPT(cublasLtMatrixLayoutDestroy(d));
}
inline void destroy_preference(cublasLtMatmulPreference_t d) noexcept {
    REPLAY_CUBLAS_CALL_NOEXCEPT(cublasLtMatmulPreferenceDestroy(d));
}
inline void destroy_graph(cudaGraph_t g) noexcept {
    REPLAY_CUDA_CALL_NOEXCEPT(cudaGraphDestroy(g));
}
inline void destroy_graph_exec(cudaGraphExec_t g) noexcept {
    REPLAY_CUDA_CALL_NOEXCEPT(cudaGraphExecDestroy(g));
}
}  // namespace detail

class Stream : public UniqueHandle<cudaStream_t, detail::destroy_stream> {
  public:
    Stream() = default;
    // A stream that does not synchronize with the legacy default stream.
    static Stream non_blocking() {
        cudaStream_t s = nullptr;
        REPLAY_CUDA_CALL(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        ++made_counts().streams;
        return Stream(s);
    }

  private:
    explicit Stream(cudaStream_t s) : UniqueHandle(s) {}
};

class Event : public UniqueHandle<cudaEvent_t, detail::destroy_event> {
  public:
    Event() = default;
    static Event timing() { return create(cudaEventDefault); }
    static Event sync_only() { return create(cudaEventDisableTiming); }

  private:
    explicit Event(cudaEvent_t e) : UniqueHandle(e) {}
    static Event create(unsigned flags) {
        cudaEvent_t e = nullptr;
        REPLAY_CUDA_CALL(cudaEventCreateWithFlags(&e, flags));
        ++made_counts().events;
        return Event(e);
    }
};

class CublasHandle : public UniqueHandle<cublasHandle_t, detail::destroy_cublas> {
  public:
    static CublasHandle create() {
        cublasHandle_t h = nullptr;
        REPLAY_CUBLAS_CALL(cublasCreate(&h));
        return CublasHandle(h);
    }
    CublasHandle() = default;

  private:
    explicit CublasHandle(cublasHandle_t h) : UniqueHandle(h) {}
};

class CublasLtHandle : public UniqueHandle<cublasLtHandle_t, detail::destroy_cublaslt> {
  public:
    static CublasLtHandle create() {
        cublasLtHandle_t h = nullptr;
        REPLAY_CUBLAS_CALL(cublasLtCreate(&h));
        return CublasLtHandle(h);
    }
    CublasLtHandle() = default;

  private:
    explicit CublasLtHandle(cublasLtHandle_t h) : UniqueHandle(h) {}
};

class LtMatmulDesc : public UniqueHandle<cublasLtMatmulDesc_t, detail::destroy_matmul_desc> {
  public:
    LtMatmulDesc() = default;
    LtMatmulDesc(cublasComputeType_t compute, cudaDataType_t scale) {
        cublasLtMatmulDesc_t d = nullptr;
        REPLAY_CUBLAS_CALL(cublasLtMatmulDescCreate(&d, compute, scale));
        *this = LtMatmulDesc(d);
    }
    template <typename T>
    void set(cublasLtMatmulDescAttributes_t attribute, const T& value) {
        REPLAY_CUBLAS_CALL(cublasLtMatmulDescSetAttribute(get(), attribute, &value, sizeof(T)));
    }

  private:
    explicit LtMatmulDesc(cublasLtMatmulDesc_t d) : UniqueHandle(d) {}
};

class LtMatrixLayout : public UniqueHandle<cublasLtMatrixLayout_t, detail::destroy_layout> {
  public:
    LtMatrixLayout() = default;
    LtMatrixLayout(cudaDataType_t type, std::uint64_t rows, std::uint64_t cols, std::int64_t ld) {
        cublasLtMatrixLayout_t d = nullptr;
        REPLAY_CUBLAS_CALL(cublasLtMatrixLayoutCreate(&d, type, rows, cols, ld));
        *this = LtMatrixLayout(d);
    }
    template <typename T>
    void set(cublasLtMatrixLayoutAttribute_t attribute, const T& value) {
        REPLAY_CUBLAS_CALL(cublasLtMatrixLayoutSetAttribute(get(), attribute, &value, sizeof(T)));
    }

  private:
    explicit LtMatrixLayout(cublasLtMatrixLayout_t d) : UniqueHandle(d) {}
};

class LtMatmulPreference
    : public UniqueHandle<cublasLtMatmulPreference_t, detail::destroy_preference> {
  public:
    static LtMatmulPreference create() {
        cublasLtMatmulPreference_t d = nullptr;
        REPLAY_CUBLAS_CALL(cublasLtMatmulPreferenceCreate(&d));
        return LtMatmulPreference(d);
    }
    LtMatmulPreference() = default;
    template <typename T>
    void set(cublasLtMatmulPreferenceAttributes_t attribute, const T& value) {
        REPLAY_CUBLAS_CALL(
            cublasLtMatmulPreferenceSetAttribute(get(), attribute, &value, sizeof(T)));
    }

  private:
    explicit LtMatmulPreference(cublasLtMatmulPreference_t d) : UniqueHandle(d) {}
};

// A graph as stream capture left it (the template that is instantiated).
class Graph : public UniqueHandle<cudaGraph_t, detail::destroy_graph> {
  public:
    Graph() = default;
    explicit Graph(cudaGraph_t g) : UniqueHandle(g) {}
};

// An instantiated graph, ready to launch.
class GraphExec : public UniqueHandle<cudaGraphExec_t, detail::destroy_graph_exec> {
  public:
    GraphExec() = default;
    // Throws CudaError when the graph cannot be instantiated.
    static GraphExec instantiate(cudaGraph_t graph) {
        cudaGraphExec_t exec = nullptr;
        REPLAY_CUDA_CALL(cudaGraphInstantiate(&exec, graph, 0));
        ++made_counts().graphs;
        return GraphExec(exec);
    }

  private:
    explicit GraphExec(cudaGraphExec_t g) : UniqueHandle(g) {}
};

// Memory: where a buffer lives decides how it is allocated and freed.
enum class MemoryKind : std::uint8_t { Device, Pinned, Pageable };
const char* to_string(MemoryKind kind);

class Memory {
  public:
    Memory() = default;
    // Throws CudaError (device, pinned) or std::bad_alloc (pageable) when it cannot allocate.
    Memory(MemoryKind kind, std::size_t bytes);
    ~Memory() { reset(); }
    Memory(const Memory&) = delete;
    Memory& operator=(const Memory&) = delete;
    Memory(Memory&& other) noexcept
        : kind_(other.kind_),
          data_(std::exchange(other.data_, nullptr)),
          bytes_(std::exchange(other.bytes_, 0)) {}
    Memory& operator=(Memory&& other) noexcept {
        if (this != &other) {
            reset();
            kind_ = other.kind_;
            data_ = std::exchange(other.data_, nullptr);
            bytes_ = std::exchange(other.bytes_, 0);
        }
        return *this;
    }
    void* data() const { return data_; }
    std::size_t bytes() const { return bytes_; }
    MemoryKind kind() const { return kind_; }
    void reset() noexcept;

  private:
    MemoryKind kind_ = MemoryKind::Device;
    void* data_ = nullptr;
    std::size_t bytes_ = 0;
};

}  // namespace replay::cuda
