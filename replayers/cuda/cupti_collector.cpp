// CUPTI's process-wide deliveries: activity buffers parsed into raw records, resource callbacks
// that say which issue each captured graph node belongs to, and late first uses. See
// cupti_collector.h.
#include "cupti_collector.h"

#include <cxxabi.h>

#include <cstdlib>
#include <cstring>
#include <memory>

namespace replay::cuda::cupti {
namespace {

constexpr std::size_t kBufferBytes = 8u << 20;
constexpr std::size_t kBufferAlignment = 8;
constexpr std::size_t kKeptBuffers = 16;  // free buffers kept for reuse; more are freed

// Kineto's names, so that replayed copies read like recorded ones ("Memcpy HtoD (Pinned ->
// Device)").
const char* memcpy_kind(std::uint8_t kind) {
    switch (kind) {
        case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
            return "HtoD";
        case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
            return "DtoH";
        case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
            return "HtoA";
        case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
            return "AtoH";
        case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
            return "AtoA";
        case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
            return "AtoD";
        case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
            return "DtoA";
        case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
            return "DtoD";
        case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
            return "HtoH";
        case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
            return "PtoP";
        default:
            return "<unknown>";
    }
}

const char* memory_kind(std::uint32_t kind) {
    switch (kind) {
        case CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN:
            return "Unknown";
        case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE:
            return "Pageable";
        case CUPTI_ACTIVITY_MEMORY_KIND_PINNED:
            return "Pinned";
        case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
            return "Device";
        case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY:
            return "Array";
        case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
            return "Managed";
        case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC:
            return "Device Static";
        case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC:
            return "Managed Static";
        default:
            return "Unrecognized";
    }
}

// CUPTI gives mangled names; Kineto writes them demangled, and names are compared with the trace.
std::string demangled(const char* name) {
    if (name == nullptr) return "<unnamed kernel>";
    int status = 0;
    std::unique_ptr<char, decltype(&std::free)> text(
        abi::__cxa_demangle(name, nullptr, nullptr, &status), &std::free);
    return status == 0 && text ? std::string(text.get()) : std::string(name);
}

std::string result_text(CUptiResult status) {
    const char* text = nullptr;
    cuptiGetResultString(status, &text);
    return text != nullptr ? text : "unknown CUPTI error";
}

std::uint8_t* new_buffer() {
    auto* buffer = static_cast<std::uint8_t*>(std::aligned_alloc(kBufferAlignment, kBufferBytes));
    if (buffer != nullptr) std::memset(buffer, 0, kBufferBytes);  // its pages, now
    return buffer;
}

std::uint64_t node_id(CUgraphNode node) {
    std::uint64_t id = 0;
    return node != nullptr && cuptiGetGraphNodeId(node, &id) == CUPTI_SUCCESS ? id : 0;
}

}  // namespace

Collector& Collector::instance() {
    static Collector* collector = new Collector();
    return *collector;
}

bool Collector::claim() {
    bool expected = false;
    return in_use_.compare_exchange_strong(expected, true);
}

void Collector::release() {
    {
        std::lock_guard lock(mutex_);
        delivered_ = {};
        capture_owner_.reset();
        node_owner_.clear();
        original_of_.clear();
        late_ = {};
    }
    sealed_.store(false);
    in_use_.store(false);
}

std::string Collector::register_buffers() {
    if (buffers_registered_) return {};
    if (auto s = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
        s != CUPTI_SUCCESS)
        return "cuptiActivityRegisterCallbacks: " + result_text(s);
    buffers_registered_ = true;
    return {};
}

std::string Collector::subscribe() {
    if (subscribe_tried_) return subscribe_error_;
    subscribe_tried_ = true;
    if (auto s = cuptiSubscribe(&subscriber_, resource_callback, this); s != CUPTI_SUCCESS) {
        subscribe_error_ = "cuptiSubscribe: " + result_text(s);
        return subscribe_error_;
    }
    for (CUpti_CallbackId cbid :
         {CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED,
          CUPTI_CBID_RESOURCE_MODULE_LOADED})
        if (auto s = cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, cbid);
            s != CUPTI_SUCCESS) {
            subscribe_error_ = "cuptiEnableCallback: " + result_text(s);
            break;
        }
    return subscribe_error_;
}

Delivered Collector::take() {
    std::lock_guard lock(mutex_);
    Delivered out = std::move(delivered_);
    delivered_ = {};
    return out;
}

void Collector::set_capture_owner(std::optional<NodeOwner> owner) {
    std::lock_guard lock(mutex_);
    capture_owner_ = owner;
}

std::optional<NodeOwner> Collector::owner_of_node(std::uint64_t node) const {
    std::lock_guard lock(mutex_);
    auto it = node_owner_.find(node);
    if (it == node_owner_.end())
        if (auto original = original_of_.find(node); original != original_of_.end())
            it = node_owner_.find(original->second);
    if (it == node_owner_.end()) return std::nullopt;
    return it->second;
}

void Collector::seal(bool sealed) {
    std::lock_guard lock(mutex_);
    late_ = {};
    sealed_.store(sealed);
}

LateUses Collector::late() const {
    std::lock_guard lock(mutex_);
    return late_;
}

void Collector::reserve_buffers(std::size_t count) {
    for (;;) {
        {
            std::lock_guard lock(mutex_);
            if (free_buffers_.size() >= count) return;
        }
        std::uint8_t* buffer = new_buffer();
        if (buffer == nullptr) return;  // CUPTI will ask, and count it late
        std::lock_guard lock(mutex_);
        free_buffers_.push_back(buffer);
    }
}

void Collector::keep_buffer(std::uint8_t* buffer) {
    std::lock_guard lock(mutex_);
    if (free_buffers_.size() < kKeptBuffers) {
        free_buffers_.push_back(buffer);
        return;
    }
    std::free(buffer);
}

void CUPTIAPI Collector::buffer_requested(std::uint8_t** buffer, std::size_t* size,
                                         std::size_t* max_records) {
    Collector& c = instance();
    *buffer = nullptr;
    {
        std::lock_guard lock(c.mutex_);
        if (!c.free_buffers_.empty()) {
            *buffer = c.free_buffers_.back();
            c.free_buffers_.pop_back();
        } else if (c.sealed_.load()) {
            ++c.late_.buffers;
        }
    }
    if (*buffer == nullptr)
        *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(kBufferAlignment, kBufferBytes));
    *size = *buffer != nullptr ? kBufferBytes : 0;
    *max_records = 0;  // as many as fit
}

void CUPTIAPI Collector::buffer_completed(CUcontext context, std::uint32_t stream_id,
                                          std::uint8_t* buffer, std::size_t,
                                          std::size_t valid_size) {
    Collector& c = instance();
    std::vector<RawActivity> activities;
    std::vector<std::pair<std::uint32_t, std::uint64_t>> external;
    LateUses late;
    CUpti_Activity* record = nullptr;
    while (valid_size > 0 &&
           cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
        switch (record->kind) {
            case CUPTI_ACTIVITY_KIND_KERNEL:
            case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
                const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
                activities.push_back({k->correlationId,
                                      k->streamId,
                                      k->graphNodeId,
                                      demangled(k->name),
                                      static_cast<std::int64_t>(k->start),
                                      static_cast<std::int64_t>(k->end),
                                      {k->gridX, k->gridY, k->gridZ}});
                break;
            }
            case CUPTI_ACTIVITY_KIND_MEMCPY: {
                const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
                activities.push_back(
                    {m->correlationId, m->streamId, m->graphNodeId,
                     std::string("Memcpy ") + memcpy_kind(m->copyKind) + " (" +
                         memory_kind(m->srcKind) + " -> " + memory_kind(m->dstKind) + ")",
                     static_cast<std::int64_t>(m->start), static_cast<std::int64_t>(m->end)});
                break;
            }
            case CUPTI_ACTIVITY_KIND_MEMSET: {
                const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
                activities.push_back({m->correlationId, m->streamId, m->graphNodeId,
                                      std::string("Memset (") + memory_kind(m->memoryKind) + ")",
                                      static_cast<std::int64_t>(m->start),
                                      static_cast<std::int64_t>(m->end)});
                break;
            }
            case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
                const auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
                if (e->externalKind == kExternalKind)
                    external.emplace_back(e->correlationId, e->externalId);
                break;
            }
            case CUPTI_ACTIVITY_KIND_MEMORY2: {
                const auto* m = reinterpret_cast<const CUpti_ActivityMemory4*>(record);
                if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION) {
                    ++late.allocations;
                    late.allocated_bytes += m->bytes;
                }
                break;
            }
            default:
                break;  // runtime/driver API records: enabled only so that correlations are emitted
        }
    }
    std::size_t dropped = 0;
    cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped);
    c.keep_buffer(buffer);

    if (!c.in_use_.load()) return;  // no timer alive: nobody will ask
    std::lock_guard lock(c.mutex_);
    c.delivered_.dropped += dropped;
    for (auto& a : activities) c.delivered_.activities.push_back(std::move(a));
    for (const auto& [correlation, tag] : external) c.delivered_.external[correlation] = tag;
    if (c.sealed_.load()) {
        c.late_.allocations += late.allocations;
        c.late_.allocated_bytes += late.allocated_bytes;
    }
}

void CUPTIAPI Collector::resource_callback(void* userdata, CUpti_CallbackDomain domain,
                                           CUpti_CallbackId cbid, const void* data) {
    auto& c = *static_cast<Collector*>(userdata);
    if (domain != CUPTI_CB_DOMAIN_RESOURCE || !c.in_use_.load()) return;
    const auto* resource = static_cast<const CUpti_ResourceData*>(data);
    switch (cbid) {
        case CUPTI_CBID_RESOURCE_MODULE_LOADED: {
            std::lock_guard lock(c.mutex_);
            if (c.sealed_.load()) ++c.late_.module_loads;
            break;
        }
        case CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED: {
            // Stream capture creates the nodes on the capturing thread, inside the calls.
            const auto* graph = static_cast<const CUpti_GraphData*>(resource->resourceDescriptor);
            const std::uint64_t id = node_id(graph->node);
            std::lock_guard lock(c.mutex_);
            if (c.capture_owner_ && id != 0) c.node_owner_[id] = *c.capture_owner_;
            break;
        }
        case CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED: {
            // Instantiation clones every node: the kernels of a launch carry the clones' ids.
            const auto* graph = static_cast<const CUpti_GraphData*>(resource->resourceDescriptor);
            const std::uint64_t clone = node_id(graph->node), original = node_id(graph->originalNode);
            std::lock_guard lock(c.mutex_);
            if (clone != 0 && original != 0) c.original_of_[clone] = original;
            break;
        }
        default:
            break;
    }
}

}  // namespace replay::cuda::cupti
