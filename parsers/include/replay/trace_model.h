// The in-memory trace model: compact, typed events produced by the parsers and consumed by the
// graph builder, the classifier and the replayers. Times are int64 nanoseconds on the trace's own
// clock (Kineto `ts` converted exactly; `base_time_ns` is kept separately).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <span>
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
    // A copy interns the same names under the same ids in storage of its own (the views and
    // pointers of the original point into the original's). Moves keep the storage.
    StringPool(const StringPool& other);
    StringPool& operator=(const StringPool& other);
    StringPool(StringPool&&) = default;
    StringPool& operator=(StringPool&&) = default;
    ~StringPool() = default;
    NameId intern(std::string_view text);
    // The id of `text` if it was interned, else kNoIndex (the pool unchanged).
    NameId find(std::string_view text) const;
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
// A CUDA graph's memset node, which CUPTI records as a kernel named by its word size
// ("memset32"): a memset's work under a kernel's name.
bool is_graph_memset_kernel(std::string_view name);

// One record_shapes argument of a cpu_op (or of an Execution Trace node). Storage ids are not
// here: they belong to one op instance (OpStorages), the argument to every op recorded alike.
struct OpArgument {
    // Kineto `Input type` text ("c10::Half", "Scalar", "TensorList", "ScalarList", "" ...).
    NameId type = StringPool::kEmpty;
    // Dims of a tensor, or of each element of a TensorList, flattened with `shape_sizes`.
    std::vector<std::int64_t> dims;
    std::vector<std::int64_t> strides;
    // Ranks of the tensors in a TensorList (empty for a plain tensor: rank = dims.size()).
    std::vector<std::uint8_t> list_ranks;
    // Element dtype of a TensorList ("c10::BFloat16"), from the Execution Trace or inferred from
    // the producers of its elements (dataflow.h); Kineto records none.
    NameId element_type = StringPool::kEmpty;
    // `Concrete Inputs` text for scalars ("1", "0.125", "True", "[1024]"), empty when unknown.
    NameId concrete = StringPool::kEmpty;
    // Execution Trace: where the tensor starts in its storage, in elements.
    std::int64_t storage_offset = 0;
    bool has_strides = false;

    bool operator==(const OpArgument&) const = default;
};

struct OpShapes {
    std::vector<OpArgument> inputs;
    // Full schema from the Execution Trace ("aten::addmm(Tensor self, ...) -> Tensor"), else empty.
    NameId schema = StringPool::kEmpty;

    bool operator==(const OpShapes&) const = default;
};
// A hash of everything OpShapes::operator== compares.
std::uint64_t content_hash(const OpShapes& shapes);

// Lists of dims, interned: equal lists share one id.
class DimsTable {
  public:
    static constexpr std::uint32_t kEmpty = 0;  // the empty list's id
    DimsTable();
    std::uint32_t intern(std::span<const std::int64_t> dims);
    std::span<const std::int64_t> operator[](std::uint32_t id) const {
        return {values_.data() + at_[id], at_[id + 1] - at_[id]};
    }
    std::size_t size() const { return at_.size() - 1; }
    std::size_t bytes() const;  // held, for statistics

  private:
    std::vector<std::int64_t> values_;
    std::vector<std::uint32_t> at_{0};  // list i is values_[at_[i], at_[i + 1])
    std::unordered_multimap<std::uint64_t, std::uint32_t> index_;  // hash of the values -> id
};

// The storage ids of each op instance's tensors, beside the ops' shared OpShapes: an Execution
// Trace records them and dataflow inference (engine/dataflow.h) infers them, one set per op
// instance, so that ops recorded with equal shapes keep sharing one OpShapes entry. Every reader
// and writer of storage ids goes through this table. An op has at most one record: one id per
// input (in OpShapes::inputs order), the element ids of its TensorList inputs, and its outputs
// (storage id and dims). Ids are kept in 32-bit words (wider ones in a side vector).
class OpStorages {
  public:
    // A run of ids of one record (an input's TensorList elements).
    class Ids {
      public:
        std::size_t size() const { return size_; }
        bool empty() const { return size_ == 0; }
        std::int64_t operator[](std::size_t i) const { return table_->decode(words_[i]); }

      private:
        friend class OpStorages;
        Ids(const OpStorages* table, const std::uint32_t* words, std::size_t size)
            : table_(table), words_(words), size_(size) {}
        const OpStorages* table_ = nullptr;
        const std::uint32_t* words_ = nullptr;
        std::size_t size_ = 0;
    };
    struct Output {
        std::int64_t storage = kNoId;
        std::span<const std::int64_t> dims;
    };
    // What a writer gives for one output.
    struct OutputIds {
        std::int64_t storage = kNoId;
        std::uint32_t dims = DimsTable::kEmpty;  // intern_dims()
    };

    // No op has a record: the trace has no storage ids.
    bool empty() const { return records_ == 0; }
    std::size_t records() const { return records_; }
    bool has(std::uint32_t op) const { return op < at_.size() && at_[op] != kNone; }
    // Storage id of input `input` of op `op` (an index into Trace::cpu_ops): kNoId when unknown,
    // for non-tensors and for TensorLists (their elements have ids of their own).
    std::int64_t input(std::uint32_t op, std::size_t input) const;
    // The storage ids of the elements of TensorList input `input`; empty when unknown.
    Ids list(std::uint32_t op, std::size_t input) const;
    // The op's outputs: storage id (kNoId: not known) and dims (valid until the next write).
    std::size_t outputs(std::uint32_t op) const;
    Output output(std::uint32_t op, std::size_t k) const;

    // All of an op's ids at once (Execution Trace joins): `lists` per input, shorter or empty
    // where inputs have no element ids.
    struct Record {
        std::vector<std::int64_t> inputs;
        std::vector<std::vector<std::int64_t>> lists;
        std::vector<OutputIds> outputs;
    };
    Record get(std::uint32_t op) const;  // empty when the op has no record
    // Gives op `op` this record, in place of any it had.
    void set(std::uint32_t op, const Record& record);
    // Gives op `op` a record of these input ids and `outputs` outputs, not known yet, in place of
    // any it had; set_output() fills them in.
    void add(std::uint32_t op, std::span<const std::int64_t> inputs, std::size_t outputs);
    void set_output(std::uint32_t op, std::size_t k, OutputIds output);
    // Room for the records of ops [0, ops) and `words` 32-bit words of ids, ahead of add().
    // Touch::Now also touches every page of it (the page faults taken here, on the calling
    // thread, not by the add()s that fill it).
    enum class Touch { Later, Now };
    void reserve(std::size_t ops, std::size_t words, Touch touch = Touch::Later);
    // The table of the outputs' dims (OutputIds::dims), for writers to intern dims in.
    std::uint32_t intern_dims(std::span<const std::int64_t> dims) { return dims_.intern(dims); }
    std::span<const std::int64_t> dims(std::uint32_t id) const { return dims_[id]; }
    std::size_t bytes() const;  // held, for statistics

  private:
    static constexpr std::uint32_t kNone = 0xFFFFFFFFu;
    static constexpr std::uint32_t kWide = 0x80000000u;  // words from here: wide_[word - kWide]
    std::uint32_t encode(std::int64_t id);
    std::int64_t decode(std::uint32_t word) const {
        return word < kWide ? word : word == kNone ? kNoId : wide_[word - kWide];
    }
    const std::uint32_t* record(std::uint32_t op) const {
        return has(op) ? words_.data() + at_[op] : nullptr;
    }
    std::uint32_t* record(std::uint32_t op) { return has(op) ? words_.data() + at_[op] : nullptr; }
    // A new record of op `op` (in place of any it had), ids unknown, dims empty.
    std::uint32_t* allocate(std::uint32_t op, std::size_t inputs, std::size_t outputs,
                            std::span<const std::uint32_t> list_sizes);

    std::vector<std::uint32_t> at_;     // per op: where its record starts in words_, kNone for none
    std::vector<std::uint32_t> words_;  // the records, one after the other
    std::vector<std::int64_t> wide_;    // ids that do not fit a word below kWide
    DimsTable dims_;
    std::size_t records_ = 0;
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

// What a pass over the GPU activities totals per kind.
struct ActivityTotals {
    std::array<std::size_t, 3> counts{};
    std::array<Nanos, 3> times{};
    std::size_t count(ActivityKind kind) const { return counts[static_cast<std::size_t>(kind)]; }
    Nanos time(ActivityKind kind) const { return times[static_cast<std::size_t>(kind)]; }
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

// Dense indices for (pid, tid) pairs, in the order they were first asked for. Consecutive asks
// are mostly one thread's, so the last answer is kept.
class ThreadIndex {
  public:
    std::uint32_t slot(std::int64_t pid, std::int64_t tid);
    std::size_t size() const { return slots_.size(); }

  private:
    std::map<std::pair<std::int64_t, std::int64_t>, std::uint32_t> slots_;
    std::int64_t last_pid_ = 0, last_tid_ = 0;
    std::uint32_t last_ = kNoIndex;
};

// Each CPU op's thread as a ThreadIndex slot, in order of first appearance over the ops. The
// parser adds each op as it merges it (the op is in the cache then); the graph builder groups the
// ops by it instead of reading the whole op array once more. Only as good as it is complete: ops
// added, removed or moved to another thread since make it stale, and covers() says so.
class OpThreads {
  public:
    void add(const CpuOp& op);
    void reserve(std::size_t ops) { of_op_.reserve(ops); }
    bool covers(const std::vector<CpuOp>& cpu_ops) const { return of_op_.size() == cpu_ops.size(); }
    const ThreadIndex& threads() const { return threads_; }
    // Per thread slot: how many ops.
    const std::vector<std::uint32_t>& counts() const { return counts_; }
    // The index, the counts and each op's slot, taken out: this is empty after.
    struct Taken {
        ThreadIndex threads;
        std::vector<std::uint32_t> counts, of_op;
    };
    Taken take();

  private:
    ThreadIndex threads_;
    std::vector<std::uint32_t> counts_;
    std::vector<std::uint32_t> of_op_;
};

struct Trace {
    std::string source;  // file name as given
    TraceMetadata meta;
    StringPool names;
    std::vector<CpuOp> cpu_ops;
    std::vector<RuntimeCall> runtime_calls;
    std::vector<GpuActivity> activities;
    // Distinct argument lists: ops recorded with the same shapes share one entry (real traces
    // repeat a few hundred shape sets over every step, so the model stays small). Entries are
    // never changed in place under their ops: an op gets another shapes through set_shapes().
    std::vector<OpShapes> op_shapes;
    // Storage ids per op instance (Execution Trace, dataflow inference).
    OpStorages storages;
    // Each op's thread, as the parser merged them.
    OpThreads op_threads;
    // Flow events (ac2g / async / async_cpu_to_gpu) are counted, not kept: correlation args link
    // launches and activities.
    std::size_t flow_events = 0;
    std::size_t events_total = 0;

    // The index of an op_shapes entry equal to `shapes`, added when there is none.
    std::uint32_t share_shapes(OpShapes shapes);
    // Gives `op` these shapes: an equal entry where there is one, else a new one.
    void set_shapes(CpuOp& op, OpShapes shapes) { op.shapes = share_shapes(std::move(shapes)); }
    // A copy of the op's shapes to change and give back with set_shapes() (empty when none).
    OpShapes shapes_of(const CpuOp& op) const {
        return op.shapes == kNoIndex ? OpShapes{} : op_shapes[op.shapes];
    }

    // The count and recorded time of each kind of GPU activity, from one pass over them.
    ActivityTotals activity_totals() const;

  private:
    // share_shapes()'s index: content hash -> entry, over op_shapes[0, shapes_indexed_). An entry
    // changed or replaced behind it is at worst not found (the lookup compares contents).
    std::unordered_multimap<std::uint64_t, std::uint32_t> shapes_index_;
    std::size_t shapes_indexed_ = 0;
};

}  // namespace replay
