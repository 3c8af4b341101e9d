// The drivers' plans (internal to replayers/): sequential mode's launch plan (every step with what
// its issue needs, decided before the clock starts) and unique mode's templates (which recorded
// issues are timed alone, with which instances and predecessors).
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "replay/drivers.h"

namespace replay::detail {

class Session;

// What `issues()` issues, captured into one CUDA graph whose home is stream `home` (every stream
// joins it when `all_streams`): the graph's handle, or 0 with `why` where an issue threw or the
// capture failed. The capture is ended either way, so the backend can go on.
template <class Issues>
std::uint32_t capture_graph(Backend& backend, int home, bool all_streams, const Issues& issues,
                            std::string& why) {
    try {
        backend.begin_capture(home, all_streams);
        issues();
    } catch (const std::exception& e) {
        why = e.what();
        try {
            std::string ended;
            backend.end_capture(ended);
        } catch (const std::exception&) {  // begin_capture() failed: nothing was open
        }
        return 0;
    }
    return backend.end_capture(why);
}

// ---- sequential mode ----

// A step whose recipe is ready, with everything its issue needs.
struct PlannedStep {
    std::size_t step = 0;          // index in plan_steps()
    std::string label;             // what notes call it: its op ("aten::mm"), memcpy, memset
    Prepared* prepared = nullptr;  // the session's
    int stream = 0;
    std::uint64_t tag = 0;  // step + 1: the tag of its issue, warm-up reads and records
    std::vector<int> waits;  // producer streams it waits for first (recorded cross-stream waits)
    // Its recorded launch (for an op's kernels, the op's first launch) from the recorded step's
    // first launch: where --pace recorded issues it.
    std::int64_t offset_ns = 0;
    // Its first activity's recorded start from the recorded step's first activity start: where
    // --pace recorded holds it on the device's clock (Backend::hold_after).
    std::int64_t start_offset_ns = 0;
    std::vector<std::uint32_t> nodes;  // the recorded graph nodes it re-creates, in order
    std::vector<std::size_t> kernels;  // the report's kernel per re-created node
    std::vector<double> recorded_us;   // the recorded duration per re-created node
    // Whether its warm-up reads go out under --warm-inputs needed: false when an earlier ready
    // step of the pass read or wrote every input it has, in the one buffer of its recorded
    // storage (dataflow), so the L2 holds them as the recorded step's did, with the traffic in
    // between evicting what it evicted then (needs_warm_up).
    bool warm = true;
};

// Recorded storages whose replayed buffer is the storage's own (shared by every step that names
// it), as the backends share them: GEMM operands and output, floating-point tensors of aten ops.
// Integer tensors are synthesised per op (their values must suit each op's ranges).
std::vector<std::int64_t> shared_storages(const Recipe& recipe);

// Whether a step must read its inputs into L2 first: some input lacks a shared storage (no
// dataflow), or its storage was not touched by an earlier ready step (`touched`).
bool needs_warm_up(const Recipe& recipe, const std::unordered_set<std::int64_t>& touched);

// Prepares every step's recipe (marking the kernels of those that cannot run) and returns the
// ready ones in recorded order. `progress` (when set) gets a line every few seconds: preparing a
// step of large tensors fills them with random data, and a trace of thousands takes minutes.
std::vector<PlannedStep> plan_sequential(
    const Analysis& analysis, Session& session, const std::vector<std::size_t>& kernel_of,
    const std::function<void(const std::string&)>& progress = {});

// What the loop launches, in order: one step issued by the host, or a captured graph of steps.
struct LaunchUnit {
    enum class Kind : std::uint8_t { Direct, Graph };
    Kind kind = Kind::Direct;
    std::size_t first = 0, last = 0;  // the planned steps it covers, [first, last)
    std::uint32_t graph = 0;          // Graph: the backend's handle
    int stream = 0;                   // Direct: the step's stream; Graph: the one it launches on
    std::int64_t offset_ns = 0;       // its first step's
    std::vector<int> waits;           // issued before it, outside any graph
};

// One direct unit per planned step.
std::vector<LaunchUnit> direct_units(const std::vector<PlannedStep>& plan);

// Which planned steps go into one captured graph: maximal runs of capturable steps (`per_step`:
// each capturable step alone, so that recorded pacing can launch it at its offset), as
// [first, last) ranges in order. capturable[i] says whether step i can be captured.
std::vector<std::pair<std::size_t, std::size_t>> graph_segments(
    const std::vector<bool>& capturable, bool per_step);

// ---- unique mode ----

// A recipe and the kernels its issue re-creates, timed alone.
struct Template {
    // The recorded instances (same work, different tensors: layer 3's and layer 7's weights),
    // cycled through run after run so caches see what the recording saw, not one hot buffer.
    std::vector<Recipe> instances;
    // Per instance, the step recorded just before it on its stream: issued untimed before each
    // run so the kernel starts with the caches its predecessor left, as in the recording.
    std::vector<std::optional<Recipe>> predecessors;
    std::vector<std::size_t> positions;  // kernel index per produced activity
    std::vector<double> recorded_us;     // recorded duration per position (first instance)
    // Per instance: it ran inside a CUDA graph right after the kernel before it on the stream, of
    // the same cudaGraphLaunch. Such a node's record is longer than the same kernel's launched
    // alone (on the H200 by 0.13 us, 10-25% of a 1 us kernel), so unique mode times it inside a
    // graph after its predecessor.
    std::vector<bool> in_graph;
};

// Instances kept per template, at most.
constexpr std::size_t kMaxInstances = 64;

// One template per distinct sequence of unique kernels an issue re-creates, in recorded order;
// a sequence whose kernels earlier templates already time adds none. Its instances are the
// recorded issues of that sequence with distinct instance keys. `kernel_of`: the report's kernel
// index of every graph node.
std::vector<Template> plan_unique(const Analysis& analysis,
                                  const std::vector<std::size_t>& kernel_of);

}  // namespace replay::detail
