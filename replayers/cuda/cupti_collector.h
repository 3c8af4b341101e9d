// What CUPTI delivers, process-wide as its activity buffers and callbacks are: activity records,
// external correlation ids, the issues that added each node of a captured graph, and what was
// allocated or loaded after the plan was sealed. CUPTI calls in on its own threads (buffers) and
// on the launching thread (resource callbacks); everything here is under one mutex. Used by the
// CUPTI timer (cupti_timer.cpp) only.
#pragma once

#include <cupti.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace replay::cuda::cupti {

// The external correlation ids the timer pushes around its issues.
constexpr CUpti_ExternalCorrelationKind kExternalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;

// A GPU activity as CUPTI reported it, before it is tied to an issue.
struct RawActivity {
    std::uint32_t correlation = 0;
    std::uint32_t stream_id = 0;   // CUPTI's id of the stream it ran on
    std::uint64_t graph_node = 0;  // the graph node that ran it; 0 outside graphs
    std::string name;
    std::int64_t start_ns = 0;
    std::int64_t end_ns = 0;
    std::array<std::int32_t, 3> grid{};  // kernels
};

// The issue that added a node to a graph while it was captured.
struct NodeOwner {
    std::uint64_t tag = 0;
    int stream_index = 0;
    bool warm_read = false;
};

// What was made after seal(true): first uses the plan missed.
struct LateUses {
    std::uint64_t allocations = 0;  // device and pinned memory, whoever asked (CUPTI's MEMORY2)
    std::uint64_t allocated_bytes = 0;
    std::uint64_t module_loads = 0;
    std::uint64_t buffers = 0;  // activity buffers CUPTI asked for beyond the reserved ones
};

// Records and correlation ids delivered since the last take().
struct Delivered {
    std::vector<RawActivity> activities;
    std::unordered_map<std::uint32_t, std::uint64_t> external;  // correlation id -> external id
    std::uint64_t dropped = 0;                                  // records CUPTI had to drop
};

class Collector {
  public:
    // Never destroyed: CUPTI may deliver a last buffer while the process exits.
    static Collector& instance();

    // One timer at a time: false when another holds CUPTI. release() forgets everything.
    bool claim();
    void release();

    // Once per process: the activity buffer callbacks, and a subscriber to the resource callbacks
    // (graph nodes created and cloned, modules loaded). Each returns why it failed, or "".
    std::string register_buffers();
    std::string subscribe();

    Delivered take();

    // The issue that the graph nodes created from now on belong to; nullopt: none.
    void set_capture_owner(std::optional<NodeOwner> owner);
    // The owner of a node of a graph or of an instantiated graph (a clone of a captured node).
    std::optional<NodeOwner> owner_of_node(std::uint64_t node) const;

    // Sealed: allocations, module loads and new buffers from now on are counted (late()).
    void seal(bool sealed);
    LateUses late() const;
    // Keeps `count` activity buffers ready, their pages touched, so that CUPTI's requests in the
    // timed iterations allocate nothing.
    void reserve_buffers(std::size_t count);

  private:
    Collector() = default;
    static void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size,
                                          std::size_t* max_records);
    static void CUPTIAPI buffer_completed(CUcontext context, std::uint32_t stream_id,
                                          std::uint8_t* buffer, std::size_t size,
                                          std::size_t valid_size);
    static void CUPTIAPI resource_callback(void* userdata, CUpti_CallbackDomain domain,
                                           CUpti_CallbackId cbid, const void* data);
    void keep_buffer(std::uint8_t* buffer);

    mutable std::mutex mutex_;
    std::atomic<bool> in_use_{false};
    std::atomic<bool> sealed_{false};
    bool buffers_registered_ = false;
    bool subscribe_tried_ = false;
    std::string subscribe_error_;
    CUpti_SubscriberHandle subscriber_ = nullptr;
    Delivered delivered_;
    std::optional<NodeOwner> capture_owner_;
    std::unordered_map<std::uint64_t, NodeOwner> node_owner_;      // captured node -> issue
    std::unordered_map<std::uint64_t, std::uint64_t> original_of_;  // cloned node -> original
    LateUses late_;
    std::vector<std::uint8_t*> free_buffers_;
};

}  // namespace replay::cuda::cupti
