// CUPTI activity timing: kernels, memcpys and memsets as the GPU ran them, each tied to the tag of
// the issue that launched it through an external correlation id pushed around the issue's calls.
#include <cupti.h>
#include <cxxabi.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "cuda_check.h"
#include "timing.h"

namespace replay::cuda {
namespace {

constexpr std::size_t kBufferBytes = 8u << 20;
constexpr std::size_t kBufferAlignment = 8;
constexpr CUpti_ExternalCorrelationKind kExternalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;

// A GPU activity as CUPTI reported it, before it is tied to a tag.
struct RawActivity {
    std::uint32_t correlation = 0;
    std::string name;
    std::int64_t start_ns = 0;
    std::int64_t end_ns = 0;
};

// CUPTI's activity buffers are process-wide; so is what they deliver. Callbacks run on CUPTI's
// own thread. Never destroyed: CUPTI may deliver a last buffer while the process exits.
struct Collector {
    std::mutex mutex;
    std::vector<RawActivity> activities;
    std::unordered_map<std::uint32_t, std::uint64_t> external;  // correlation id -> tag
    std::uint64_t dropped = 0;
    bool callbacks_registered = false;
    std::atomic<bool> in_use{false};
};

Collector& collector() {
    static Collector* instance = new Collector();
    return *instance;
}

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

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
    *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(kBufferAlignment, kBufferBytes));
    *size = *buffer != nullptr ? kBufferBytes : 0;
    *max_records = 0;  // as many as fit
}

// CUPTI gives mangled names; Kineto writes them demangled, and names are compared with the trace.
std::string demangled(const char* name) {
    if (name == nullptr) return "<unnamed kernel>";
    int status = 0;
    std::unique_ptr<char, decltype(&std::free)> text(
        abi::__cxa_demangle(name, nullptr, nullptr, &status), &std::free);
    return status == 0 && text ? std::string(text.get()) : std::string(name);
}

void CUPTIAPI buffer_completed(CUcontext context, std::uint32_t stream_id, std::uint8_t* buffer,
                               std::size_t, std::size_t valid_size) {
    Collector& c = collector();
    std::vector<RawActivity> activities;
    std::vector<std::pair<std::uint32_t, std::uint64_t>> external;
    CUpti_Activity* record = nullptr;
    while (valid_size > 0 &&
           cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
        switch (record->kind) {
            case CUPTI_ACTIVITY_KIND_KERNEL:
            case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
                const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
                activities.push_back({k->correlationId, demangled(k->name),
                                      static_cast<std::int64_t>(k->start),
                                      static_cast<std::int64_t>(k->end)});
                break;
            }
            case CUPTI_ACTIVITY_KIND_MEMCPY: {
                const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
                activities.push_back(
                    {m->correlationId,
                     std::string("Memcpy ") + memcpy_kind(m->copyKind) + " (" +
                         memory_kind(m->srcKind) + " -> " + memory_kind(m->dstKind) + ")",
                     static_cast<std::int64_t>(m->start), static_cast<std::int64_t>(m->end)});
                break;
            }
            case CUPTI_ACTIVITY_KIND_MEMSET: {
                const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
                activities.push_back(
                    {m->correlationId, std::string("Memset (") + memory_kind(m->memoryKind) + ")",
                     static_cast<std::int64_t>(m->start), static_cast<std::int64_t>(m->end)});
                break;
            }
            case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
                const auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
                if (e->externalKind == kExternalKind)
                    external.emplace_back(e->correlationId, e->externalId);
                break;
            }
            default:
                break;  // runtime/driver API records: enabled only so that correlations are emitted
        }
    }
    std::size_t dropped = 0;
    cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped);
    std::free(buffer);

    if (!c.in_use.load()) return;  // no timer alive: nobody will ask
    std::lock_guard lock(c.mutex);
    c.dropped += dropped;
    for (auto& a : activities) c.activities.push_back(std::move(a));
    for (const auto& [correlation, tag] : external) c.external[correlation] = tag;
}

constexpr CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
    // External correlation records are emitted for API records: runtime calls (copies, our
    // kernels) and driver calls (cuBLAS and libtorch launch some kernels through the driver API).
    CUPTI_ACTIVITY_KIND_RUNTIME,
    CUPTI_ACTIVITY_KIND_DRIVER,
};

class CuptiTimer final : public IssueTimer {
  public:
    CuptiTimer() = default;
    ~CuptiTimer() override {
        REPLAY_CUPTI_CALL_NOEXCEPT(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
        for (auto kind : kKinds) REPLAY_CUPTI_CALL_NOEXCEPT(cuptiActivityDisable(kind));
        Collector& c = collector();
        {
            std::lock_guard lock(c.mutex);
            c.activities.clear();
            c.external.clear();
            c.dropped = 0;
        }
        c.in_use.store(false);
    }
    CuptiTimer(const CuptiTimer&) = delete;
    CuptiTimer& operator=(const CuptiTimer&) = delete;

    const char* method() const override { return "cupti"; }

    void begin(std::uint64_t tag, int stream_index, cudaStream_t) override {
        REPLAY_CUPTI_CALL(cuptiActivityPushExternalCorrelationId(kExternalKind, tag));
        streams_[tag] = stream_index;
    }

    void end(std::uint64_t, int, cudaStream_t, const std::string&) override {
        std::uint64_t last = 0;
        REPLAY_CUPTI_CALL(cuptiActivityPopExternalCorrelationId(kExternalKind, &last));
    }

    std::vector<TimedActivity> collect() override {
        REPLAY_CUPTI_CALL(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
        Collector& c = collector();
        std::vector<RawActivity> activities;
        std::unordered_map<std::uint32_t, std::uint64_t> external;
        {
            std::lock_guard lock(c.mutex);
            activities.swap(c.activities);
            external.swap(c.external);
            dropped_ = c.dropped;
        }
        std::vector<TimedActivity> out;
        out.reserve(activities.size());
        for (auto& a : activities) {
            const auto e = external.find(a.correlation);
            if (e == external.end()) continue;  // not issued by us (fills, delays, L2 flushes)
            const auto s = streams_.find(e->second);
            if (s == streams_.end()) continue;
            out.push_back({e->second, std::move(a.name), a.start_ns, a.end_ns, s->second, true});
        }
        std::stable_sort(
            out.begin(), out.end(),
            [](const TimedActivity& x, const TimedActivity& y) { return x.start_ns < y.start_ns; });
        streams_.clear();
        return out;
    }

    std::vector<std::string> notes() const override {
        if (dropped_ == 0) return {};
        return {"CUPTI dropped " + std::to_string(dropped_) + " activity records"};
    }

  private:
    std::unordered_map<std::uint64_t, int> streams_;  // tag -> stream index, since the last collect
    std::uint64_t dropped_ = 0;
};

}  // namespace

std::unique_ptr<IssueTimer> make_cupti_timer(std::string& why) {
    Collector& c = collector();
    bool expected = false;
    if (!c.in_use.compare_exchange_strong(expected, true)) {
        why = "another CUDA backend in this process holds CUPTI";
        return nullptr;
    }
    auto fail = [&](CUptiResult status, const char* what) {
        const char* text = nullptr;
        cuptiGetResultString(status, &text);
        why = std::string(what) + ": " + (text != nullptr ? text : "unknown CUPTI error");
        for (auto kind : kKinds) cuptiActivityDisable(kind);
        c.in_use.store(false);
        return nullptr;
    };
    if (!c.callbacks_registered) {
        if (auto s = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
            s != CUPTI_SUCCESS)
            return fail(s, "cuptiActivityRegisterCallbacks");
        c.callbacks_registered = true;
    }
    for (auto kind : kKinds)
        if (auto s = cuptiActivityEnable(kind); s != CUPTI_SUCCESS)
            return fail(s, "cuptiActivityEnable");
    {
        std::lock_guard lock(c.mutex);
        c.activities.clear();
        c.external.clear();
        c.dropped = 0;
    }
    return std::make_unique<CuptiTimer>();
}

}  // namespace replay::cuda
