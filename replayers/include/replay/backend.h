// The device backend interface shared by the CUDA and CPU backends. Drivers (sequential,
// unique) prepare recipes once, then issue them on streams; backends report what ran and when.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "replay/recipe.h"
#include "replay/roofline.h"

namespace replay {

class EnergyMeter;  // energy.h

// A recipe that cannot run is data, not an exception (CUTLASS's Disposition).
enum class Disposition : std::uint8_t { Ready, Skipped, Failed };
const char* to_string(Disposition disposition);

struct Prepared {
    Disposition disposition = Disposition::Skipped;
    std::string reason;        // why skipped/failed, or a note ("fp16 computed as float on CPU")
    std::uint32_t handle = 0;  // backend-owned launch object, valid when Ready
};

// A replayed GPU activity as the backend observed it (CUPTI record, CUDA event pair or host clock).
struct TimedActivity {
    // The tag given to issue() or warm_inputs(): step index of the driver. In the Timed phase a
    // backend may leave it 0 (untagged): the driver then ties the record to its issue by stream
    // order and name (see Phase).
    std::uint64_t tag = 0;
    std::string name;  // kernel name (CUPTI) or the recipe's label when names are unknown
    std::int64_t start_ns = 0;
    std::int64_t end_ns = 0;
    std::int64_t stream = 0;  // the driver's stream index
    bool per_kernel = false;  // true: one record per kernel (CUPTI); false: whole issue
    bool warm_read = false;   // an L2 warm-up read of warm_inputs(), not the work itself
    // A kernel record's launch grid (CUPTI); zeros where the backend does not know it.
    std::array<std::int32_t, 3> grid{};
    // -1: it ran on the stream `stream` names. Otherwise the timer's id of a stream the driver
    // did not make, where a library ran part of an issue (cuDNN's RNNs run layers on internal
    // streams of their own): `stream` is then the issuing stream's index, and untagged records
    // are tied to issues in the order of this lane.
    std::int64_t lane = -1;
};

// Sequential mode's phases. Plan: recipes are prepared, streams made, graphs captured, and the
// whole plan issued once untimed, so that everything used for the first time (lazy module loads,
// library heuristics and workspaces, libtorch's first calls, allocations) happens here; collect()
// tags every record. Timed: the plan is sealed; the driver only issues, waits and launches. A
// backend may then time without correlation ids (cheaper per issue): its records come back
// untagged, in the order each stream ran them, and the driver matches them to its issues by the
// kernel names the same issues produced in the Plan phase. What a backend still allocates or
// loads in the Timed phase is a first use the plan missed: first_uses() lists it.
enum class Phase : std::uint8_t { Plan, Timed };

// An input of prepared work as the replay holds it, for cache warming (unique mode's
// --context recorded).
struct InputRegion {
    const void* data = nullptr;
    std::size_t bytes = 0;
    std::int64_t reuse_bytes = kReuseUnknown;  // recorded reuse distance (recipe.h)
    bool parameter = false;  // a weight or bias by the op's signature: used when reuse is unknown
};

// Whether the recorded step would still have had `input` in a cache of `cache_bytes`: touched
// recently enough that what was touched since, plus the input itself, fits. Without a recorded
// distance: activations (not parameters) that fit in half the cache.
inline bool cached_in_recording(const InputRegion& input, std::size_t cache_bytes) {
    if (input.reuse_bytes >= 0)
        return static_cast<std::size_t>(input.reuse_bytes) + input.bytes <= cache_bytes;
    if (input.reuse_bytes == kReuseUnknown)
        return !input.parameter && input.bytes <= cache_bytes / 2;
    return false;  // first touch in the recorded step: it came from memory
}

struct Environment {
    std::string backend;  // "cuda" | "cpu"
    std::string device_name;
    // The board itself ("GPU-" and the UUID, as nvidia-smi prints it; "" on the cpu backend):
    // boards of one model differ in energy at the same speed, and regress --energy says so.
    std::string device_uuid;
    std::string driver_version;
    std::string cuda_runtime_version;
    std::string cublas_version;
    std::string libtorch_version;
    std::string timing;  // "cupti" | "cuda-events" | "host-clock"
    int sm_clock_mhz = 0;
    int memory_clock_mhz = 0;
    int max_sm_clock_mhz = 0;
    std::int64_t total_memory = 0;
    int compute_major = 0, compute_minor = 0;
    int sm_count = 0;
    int memory_bus_width_bits = 0;
    // start_device_clock() and hold_after() keep work to times on the device's own clock.
    bool device_clock = false;
    DevicePeaks peaks;  // none on the cpu backend: its report says "n/a"
    std::vector<std::string> notes;
};

// Prepared work found to have failed after issue() returned: a backend that runs the device
// work elsewhere (worker_backend.h) learns of it when it synchronizes.
struct IssueFailure {
    std::uint32_t handle = 0;
    std::string reason;
};
struct FaultReport {
    std::vector<IssueFailure> failures;
    std::vector<std::string> notes;  // what the report should say (restarts, faults not pinned)
    // Times the device work moved to a new process: whatever it ran next was a first use
    // (sequential mode issues its plan untimed again).
    int restarts = 0;
};

// One rank of a multi-process replay (ranks.h): the backend joins the others through a TCPStore
// at master_addr:master_port and runs tier-4 recipes as c10d collectives. world_size 1: no
// collectives run.
inline constexpr const char* kRankTraceProblem = "!problem: ";
struct DistributedOptions {
    int rank = 0;
    int world_size = 1;
    std::string master_addr = "127.0.0.1";
    int master_port = 29500;
    int timeout_ms = 60000;  // every rendezvous and every collective waits at most this long
    std::string trace;       // this rank's trace file, named in errors
    // ranks.h run_identity(); every rank's must equal rank 0's. kRankTraceProblem and a message:
    // this rank's trace is not its own (check_rank_trace); every rank stops with the message.
    std::string run_identity;
    // One line per recorded collective in issue order: "op in_nelems out_nelems group_size"; peers
    // size an all_to_all's splits from each other's lines.
    std::vector<std::string> schedule;
};

struct BackendOptions {
    DistributedOptions distributed;
    int device = 0;
    std::uint64_t seed = 0;
    bool dataflow = true;  // reuse one buffer per recorded storage id where known
    bool use_cupti = true;
    // The most one recipe's tensors may allocate, and any one of its tensor views span
    // (tensor_budget.h); 0: the device's free memory (3/4 of the available RAM on the CPU).
    std::int64_t max_tensor_bytes = 0;
};

class Backend {
  public:
    virtual ~Backend() = default;
    virtual Environment environment() const = 0;

    // Allocates what the recipe needs (by storage, reused across recipes), fills inputs with
    // random valid data and checks that it can run. Never throws for a recipe it cannot run.
    virtual Prepared prepare(const Recipe& recipe) = 0;

    // Streams are numbered 0..n-1 by the driver (one per recorded stream).
    virtual void set_stream_count(int count) = 0;
    // Enqueues the prepared work on `stream`; activities it produces carry `tag`.
    virtual void issue(std::uint32_t handle, int stream, std::uint64_t tag) = 0;
    // Makes later work on `waiter` wait for everything issued so far on `producer`.
    virtual void stream_wait(int waiter, int producer) = 0;
    virtual void synchronize() = 0;
    // Evicts the L2 cache (cold runs); a no-op where there is none to flush.
    virtual void flush_l2() = 0;
    // Empties the processors' instruction caches, so that the next kernel fetches its code again
    // (unique mode's --instruction-cache cold); a no-op where there are none to model.
    virtual void evict_instruction_caches() {}
    // Loads into the L2 cache, on `stream`, the inputs of prepared work that the recording would
    // still have had there (cached_in_recording); a no-op where there is no cache to model. Its
    // time comes back as activities with warm_read set and `tag`.
    virtual void warm_inputs(std::uint32_t handle, int stream, std::uint64_t tag) = 0;
    // --nvtx: the NVTX range the next issue() runs in, so that Nsight tools show and filter the
    // replayed work by unique kernel; "" for none. Backends without NVTX (cpu) ignore it.
    virtual void name_next_issue(const std::string& range) { (void)range; }
    // Hands everything issued so far to the device now. A backend that batches its calls (the
    // worker's writes them to its process 16 KiB at a time) would otherwise hold a launch that
    // --pace recorded made at its recorded time until the batch filled, and the GPU would run
    // the step in bursts instead of on the host's schedule. A no-op where issue() launches.
    virtual void submit() {}
    // Whether the backend records the timings of what runs from now on (on at the start). The
    // energy loops turn it off: nobody reads their timings, and tracing each of their kernels
    // costs the device time (see EnergyRun). A no-op where recording costs nothing.
    virtual void set_recording(bool on) { (void)on; }
    // ---- --pace recorded on the device's clock (Environment::device_clock) ----
    // start_device_clock() notes the device's time when `stream` gets there, for every stream
    // (later work on other streams must wait for it: stream_wait). hold_after() keeps the next
    // work on `stream` from starting before `after_ns` past the moment the previous hold on that
    // stream let go (the clock's start, for the first); a hold reached later than that lets go at
    // once, and the next counts from then. So the recorded start-to-start intervals are kept
    // wherever the host launched in time, and a stall (a host synchronisation, a slow first
    // launch) delays what follows instead of squeezing it. No-ops without a device clock.
    virtual void start_device_clock(int stream) { (void)stream; }
    virtual void hold_after(int stream, std::int64_t after_ns) { (void)stream, (void)after_ns; }

    // Timed activities since the last call (after synchronize()).
    virtual std::vector<TimedActivity> collect() = 0;

    // The device's energy counter and power reading (--energy), valid while the backend lives;
    // nullptr with `why` where there is none (the default: the host has no board counter).
    virtual std::unique_ptr<EnergyMeter> energy_meter(std::string& why);
    // ---- energy: the same work at other addresses ----
    // A copy of prepared work on freshly allocated memory with the same contents: a new handle,
    // or Skipped with why where the backend cannot move it (the default). --energy runs each
    // window of a kernel's loop on a copy of its own, because a memory-bound kernel's energy per
    // launch depends on where its data lies (on the H200 it moved by several percent between
    // processes at the same speed, while one process's windows agreed within 1%). release()
    // frees such a copy; the handle must not be issued again.
    virtual Prepared relocated(std::uint32_t handle) {
        (void)handle;
        return {Disposition::Skipped, "this backend does not move prepared work", 0};
    }
    virtual void release(std::uint32_t handle) { (void)handle; }

    // ---- sequential mode's plan (see Phase) ----
    virtual void set_phase(Phase phase) = 0;
    // What was allocated, created or loaded since set_phase(Phase::Timed), one line per kind
    // ("2 device allocations (3.1 MiB)"); empty when nothing was.
    virtual std::vector<std::string> first_uses() = 0;

    // ---- CUDA graphs ----
    // Why prepared work cannot be captured into a graph on `stream` (a libtorch op that
    // synchronises, a copy from pageable memory, a backend without graphs); empty when it can.
    // A libtorch op that has not run yet runs once first, outside any capture (untimed, tag 0),
    // so that the plans libtorch keeps are not made inside one.
    virtual std::string capture_blocker(std::uint32_t handle, int stream) = 0;
    // From here to end_capture(), issue(), warm_inputs() and stream_wait() are recorded into a
    // graph instead of run. `home` is the stream the graph will be launched on; with
    // `all_streams`, every other stream joins the capture from `home` and rejoins it at the end
    // (else only `home` is captured).
    virtual void begin_capture(int home, bool all_streams) = 0;
    // The captured graph, instantiated and uploaded: a handle for launch_graph(), or 0 with
    // `why`. Ends the capture in any case.
    virtual std::uint32_t end_capture(std::string& why) = 0;
    // Launches a captured graph on its home stream, after everything issued so far on every
    // stream it captured, and before anything issued after it. Its activities come back tagged
    // with the tags their issues had when captured.
    virtual void launch_graph(std::uint32_t graph) = 0;

    // ---- fault isolation (worker_backend.h) ----
    // The recorded duration of one issue of prepared work, for a watchdog on its runs.
    virtual void set_recorded_ns(std::uint32_t /*handle*/, std::int64_t /*ns*/) {}
    // Failures found since the last call (drivers ask after synchronize()); a backend that
    // runs in this process reports failures by throwing from issue() instead.
    virtual FaultReport take_faults() { return {}; }

    // ---- several ranks (DistributedOptions) ----
    // Whether prepare() takes tier-4 recipes: true once the backend has joined its peers.
    virtual bool runs_collectives() const { return false; }
    // Every rank's `mine`, by rank (through the rendezvous store); {mine} for a single process.
    virtual std::vector<std::string> all_gather_text(const std::string& mine) { return {mine}; }
};

// Factories; return nullptr with `why` filled when the backend is not available in this build
// or on this machine (no GPU, no libtorch). Each loads its backend module (backend_loader.h) on
// first use; the backend returned keeps the module loaded.
std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options, std::string& why);
std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& options, std::string& why);

// ---- backend modules ----------------------------------------------------------------------------
// The CUDA and cpu backends are shared libraries that the core loads only to replay, so that
// inspect, classify and compare start without libtorch or the CUDA libraries. A module exports
// one extern "C" function named kBackendModuleEntryPoint (a BackendModuleEntry); the loader reads
// abi_version and layout before anything else in what it returns, so a module built from other
// sources than the core is refused with a clear error instead of crashing.

// Bump when the Backend interface or the types crossing it change meaning (layout changes are
// caught by backend_abi_layout() too).
// 11: start_device_clock(), hold_after(), Environment::device_clock; 10:
// evict_instruction_caches(); 9: EnergyMeter::board_state(), relocated(), release(); 8: submit();
// 7: DistributedOptions in BackendOptions, runs_collectives(), all_gather_text() (several ranks);
// 6: TritonRecipe; 5: energy_meter(); 4: name_next_issue(), device peaks
inline constexpr std::uint32_t kBackendAbiVersion = 11;

// A fingerprint of the sizes of the types that cross the module boundary.
constexpr std::uint32_t backend_abi_layout() {
    std::uint32_t hash = 2166136261u;  // FNV-1a over the sizes
    for (std::size_t size :
         {sizeof(BackendOptions), sizeof(Prepared), sizeof(TimedActivity), sizeof(InputRegion),
          sizeof(Environment), sizeof(Recipe), sizeof(RecipeDetail), sizeof(CopyRecipe),
          sizeof(GemmRecipe), sizeof(AtenRecipe), sizeof(AtenArgument), sizeof(TensorSpec),
          sizeof(CollectiveRecipe), sizeof(TritonRecipe), sizeof(TritonArgument),
          sizeof(DistributedOptions), sizeof(std::string), sizeof(std::vector<std::string>)}) {
        hash = (hash ^ static_cast<std::uint32_t>(size)) * 16777619u;
    }
    return hash;
}

using BackendFactory = std::unique_ptr<Backend> (*)(const BackendOptions& options,
                                                    std::string& why);

struct BackendModuleInfo {
    std::uint32_t abi_version = kBackendAbiVersion;  // first: read before anything else
    std::uint32_t layout = backend_abi_layout();
    const char* name = nullptr;       // "cuda" | "cpu"
    BackendFactory create = nullptr;  // nullptr with `why` when the machine cannot run it
};

inline constexpr const char* kBackendModuleEntryPoint = "replay_backend_module";
using BackendModuleEntry = const BackendModuleInfo* (*)();

}  // namespace replay

// Defines a module's entry point, in a source of the module itself (not of a static library that
// it links: those symbols are hidden), e.g. REPLAY_BACKEND_MODULE("cpu",
// replay::create_cpu_backend).
#define REPLAY_BACKEND_MODULE(name, factory)                                                  \
    extern "C" __attribute__((visibility("default"))) const ::replay::BackendModuleInfo*      \
    replay_backend_module() {                                                                 \
        static constexpr ::replay::BackendModuleInfo info{                                    \
            ::replay::kBackendAbiVersion, ::replay::backend_abi_layout(), (name), (factory)}; \
        return &info;                                                                         \
    }
