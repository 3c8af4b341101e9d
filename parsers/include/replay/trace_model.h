// The in-memory trace model: compact, typed events produced by the parsers and consumed by the
// graph builder, the classifier and the replayers. Times are int64 nanoseconds on the trace's own
// clock (Kineto `ts` converted exactly; `base_time_ns` is kept separately).
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace replay {

using Nanos = std::int64_t;
using NameId = std::uint32_t;
inline constexpr std::int64_t kNoId = std::numeric_limits<std::int64_t>::min();
inline constexpr std::uint32_t kNoIndex = std::numeric_limits<std::uint32_t>::max();

// Interns strings so that events hold 4-byte ids; views stay valid for the pool's lifetime.
class StringPool {
  public:
    StringPool();
    NameId intern(std::string_view text);
    std::string_view view(NameId id) const { return *strings_[id]; }
    std::size_t size() const { return strings_.size(); }
    static constexpr NameId kEmpty = 0;

  private:
    std::deque<std::string> storage_;
    std::vector<const std::string*> strings_;
    std::unordered_map<std::string_view, NameId> index_;
};

enum class ActivityKind : std::uint8_t { Kernel, Memcpy, Memset };
const char* to_string(ActivityKind kind);

// One record_shapes argument of a cpu_op (or of an Execution Trace node).
struct OpArgument {
    // Kineto `Input type` text ("c10::Half", "Scalar", "TensorList", "ScalarList", "" ...).
    NameId type = StringPool::kEmpty;
    // Dims of a tensor, or of each element of a TensorList, flattened with `shape_sizes`.
    std::vector<std::int64_t> dims;
    std::vector<std::int64_t> strides;
    // Ranks of the tensors in a TensorList (empty for a plain tensor: rank = dims.size()).
    std::vector<std::uint8_t> list_ranks;
    // Storage id of each TensorList element (Execution Trace), empty when unknown.
    std::vector<std::int64_t> list_storage_ids;
    // Element dtype of a TensorList ("c10::BFloat16"), from the Execution Trace; Kineto has none.
    NameId element_type = StringPool::kEmpty;
    // `Concrete Inputs` text for scalars ("1", "0.125", "True", "[1024]"), empty when unknown.
    NameId concrete = StringPool::kEmpty;
    // Execution Trace tensor storage id, kNoId when unknown.
    std::int64_t storage_id = kNoId;
    std::int64_t storage_offset = 0;
    bool has_strides = false;

    bool operator==(const OpArgument&) const = default;
};

struct OpShapes {
    std::vector<OpArgument> inputs;
    // Full schema from the Execution Trace ("aten::addmm(Tensor self, ...) -> Tensor"), else empty.
    NameId schema = StringPool::kEmpty;
    // ET output tensor ids, for dataflow-faithful replay.
    std::vector<std::int64_t> output_storage_ids;
    std::vector<std::vector<std::int64_t>> output_dims;

    bool operator==(const OpShapes&) const = default;
};

// A CPU-side annotated range: cpu_op / Operator / user_annotation / python_function.
struct CpuOp {
    NameId name = 0;
    Nanos ts = 0;
    Nanos dur = 0;
    std::int64_t pid = 0;
    std::int64_t tid = 0;
    std::int64_t external_id = kNoId;
    std::int64_t record_function_id = kNoId;
    std::int64_t sequence_number = kNoId;
    std::uint32_t shapes = kNoIndex;  // index into Trace::op_shapes (possibly shared)
    std::uint32_t parent = kNoIndex;  // enclosing op on the same thread (graph builder)
    std::uint8_t category = 0;        // 0 cpu_op, 1 user_annotation, 2 python_function
};

// A CUDA/HIP runtime or driver API call (cudaLaunchKernel, cuLaunchKernelEx, cudaGraphLaunch...).
struct RuntimeCall {
    NameId name = 0;
    Nanos ts = 0;
    Nanos dur = 0;
    std::int64_t pid = 0;
    std::int64_t tid = 0;
    std::int64_t correlation = kNoId;
    std::int64_t external_id = kNoId;
    // cudaStreamWaitEvent / cuda_sync args where present.
    std::int64_t wait_on_stream = kNoId;
    std::int64_t wait_on_event_correlation = kNoId;
    bool is_driver = false;
};

// A GPU activity: kernel, memcpy or memset.
struct GpuActivity {
    ActivityKind kind = ActivityKind::Kernel;
    NameId name = 0;
    Nanos ts = 0;
    Nanos dur = 0;
    std::int64_t device = 0;
    std::int64_t stream = 0;
    std::int64_t correlation = kNoId;
    std::int64_t external_id = kNoId;
    std::int64_t bytes = -1;  // memcpy/memset
    std::int32_t grid[3] = {0, 0, 0};
    std::int32_t block[3] = {0, 0, 0};
    std::int32_t shared_memory = -1;
    std::int32_t registers = -1;
    // NCCL collective metadata from kernel args (2024+ traces); 0 when absent.
    NameId collective = StringPool::kEmpty;
    NameId collective_dtype = StringPool::kEmpty;
    std::int64_t in_nelems = -1;
    std::int64_t out_nelems = -1;
    std::int32_t group_size = -1;
    std::uint64_t byte_offset = 0;  // where the event starts in the (decompressed) input
};

struct DeviceInfo {
    std::int64_t id = 0;
    std::string name;
    std::int64_t total_global_mem = 0;
    int compute_major = 0;
    int compute_minor = 0;
    int num_sms = 0;
};

struct TraceMetadata {
    std::int64_t base_time_ns = 0;
    std::string display_time_unit;
    std::vector<DeviceInfo> devices;
    int rank = -1;
    int world_size = -1;
    std::string distributed_backend;
    bool record_shapes = false;
    std::string runtime_version;  // cuda_runtime_version or hip_runtime_version
    std::string driver_version;
    bool is_hip = false;
};

struct Trace {
    std::string source;  // file name as given
    TraceMetadata meta;
    StringPool names;
    std::vector<CpuOp> cpu_ops;
    std::vector<RuntimeCall> runtime_calls;
    std::vector<GpuActivity> activities;
    // Distinct argument lists: ops recorded with the same shapes share one entry (real traces
    // repeat a few hundred shape sets over every step, so the model stays small). Change an op's
    // entry only through own_shapes().
    std::vector<OpShapes> op_shapes;
    // Flow events (ac2g / async / async_cpu_to_gpu): id -> start's (pid, tid, ts) so launches can
    // be tied to activities when correlation args are missing.
    std::size_t flow_events = 0;
    std::size_t events_total = 0;

    // The op's own entry, ready to change: a new empty one when it has none, a private copy of
    // the one it shares otherwise (entries are never changed in place under other ops).
    OpShapes& own_shapes(CpuOp& op);

    std::size_t count(ActivityKind kind) const;
    Nanos total_time(ActivityKind kind) const;
};

}  // namespace replay
