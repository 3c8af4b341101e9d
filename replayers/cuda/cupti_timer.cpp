// CUPTI activity timing: kernels, memcpys and memsets as the GPU ran them. In the Plan phase each
// is tied to the tag of its issue through an external correlation id pushed around the issue's
// calls (which needs CUPTI's runtime and driver API records: a few hundred nanoseconds per CUDA
// call). In the Timed phase those are off and the records come back untagged, each stream's in
// the order it ran them, for the driver to match (backend.h's Phase). The kernels of a captured
// graph are tied to their issues by the graph node that ran them, in both phases.
#include <algorithm>
#include <unordered_map>

#include "cuda_check.h"
#include "cupti_collector.h"
#include "device_kernels.h"
#include "timing.h"

namespace replay::cuda {
namespace {

using cupti::Collector;

// External ids: the issue's tag, with this bit for its warm-up reads.
constexpr std::uint64_t kWarmReadBit = std::uint64_t{1} << 63;
// Activity buffers kept ready for the timed iterations (8 MiB each: some 25,000 records).
constexpr std::size_t kReservedBuffers = 4;

constexpr CUpti_ActivityKind kRecordKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,
};
// Only for correlation ids: external correlation records are emitted for API records, runtime
// calls (copies, our kernels) and driver calls (cuBLAS and libtorch launch some kernels through
// the driver API).
constexpr CUpti_ActivityKind kCorrelationKinds[] = {
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
    CUPTI_ACTIVITY_KIND_RUNTIME,
    CUPTI_ACTIVITY_KIND_DRIVER,
};

std::string mib(std::uint64_t bytes) {
    return std::to_string((bytes + (1u << 19)) >> 20) + " MiB";
}

class CuptiTimer final : public IssueTimer {
  public:
    explicit CuptiTimer(std::string graph_why, std::string memory_note)
        : graph_why_(std::move(graph_why)), memory_note_(std::move(memory_note)) {}
    ~CuptiTimer() override {
        REPLAY_CUPTI_CALL_NOEXCEPT(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
        for (auto kind : kRecordKinds) REPLAY_CUPTI_CALL_NOEXCEPT(cuptiActivityDisable(kind));
        for (auto kind : kCorrelationKinds) REPLAY_CUPTI_CALL_NOEXCEPT(cuptiActivityDisable(kind));
        if (memory_note_.empty())
            REPLAY_CUPTI_CALL_NOEXCEPT(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMORY2));
        Collector::instance().release();
    }
    CuptiTimer(const CuptiTimer&) = delete;
    CuptiTimer& operator=(const CuptiTimer&) = delete;

    const char* method() const override { return "cupti"; }

    void set_phase(Phase phase) override {
        if (phase == phase_) return;
        Collector& c = Collector::instance();
        REPLAY_CUPTI_CALL(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
        if (phase == Phase::Timed) {
            timed_ = true;
            for (auto kind : kCorrelationKinds) REPLAY_CUPTI_CALL(cuptiActivityDisable(kind));
            c.reserve_buffers(kReservedBuffers);
            c.seal(true);
        } else {
            c.seal(false);
            if (recording_)
                for (auto kind : kCorrelationKinds) REPLAY_CUPTI_CALL(cuptiActivityEnable(kind));
        }
        phase_ = phase;
    }

    // Off: no kernel, copy or correlation records at all (what ran before is delivered first).
    void set_recording(bool on) override {
        if (on == recording_) return;
        REPLAY_CUPTI_CALL(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
        const bool correlates = phase_ != Phase::Timed;
        for (auto kind : kRecordKinds)
            REPLAY_CUPTI_CALL(on ? cuptiActivityEnable(kind) : cuptiActivityDisable(kind));
        if (correlates)
            for (auto kind : kCorrelationKinds)
                REPLAY_CUPTI_CALL(on ? cuptiActivityEnable(kind) : cuptiActivityDisable(kind));
        recording_ = on;
    }

    void set_streams(const std::vector<cudaStream_t>& streams) override {
        stream_index_.clear();
        library_streams_.clear();
        for (std::size_t i = 0; i < streams.size(); ++i) {
            std::uint32_t id = 0;
            REPLAY_CUPTI_CALL(
                cuptiGetStreamIdEx(nullptr, reinterpret_cast<CUstream>(streams[i]), 0, &id));
            stream_index_[id] = static_cast<int>(i);
        }
    }

    void begin(const IssueMark& mark, cudaStream_t) override {
        if (capturing_) {
            Collector::instance().set_capture_owner(
                cupti::NodeOwner{mark.tag, mark.stream_index, mark.warm_read});
            return;
        }
        if (phase_ == Phase::Timed) return;  // the driver matches untagged records
        REPLAY_CUPTI_CALL(cuptiActivityPushExternalCorrelationId(
            cupti::kExternalKind, mark.tag | (mark.warm_read ? kWarmReadBit : 0)));
        tag_stream_[mark.tag] = mark.stream_index;
    }

    void end(const IssueMark&, cudaStream_t, const std::string&) override {
        if (capturing_) {
            Collector::instance().set_capture_owner(std::nullopt);
            return;
        }
        if (phase_ == Phase::Timed) return;
        std::uint64_t last = 0;
        REPLAY_CUPTI_CALL(cuptiActivityPopExternalCorrelationId(cupti::kExternalKind, &last));
    }

    std::string graph_support() const override {
        if (graph_why_.empty()) return {};
        return "CUPTI's graph-node callbacks are unavailable (" + graph_why_ +
               "): the kernels of a graph could not be tied to their steps";
    }
    void set_capturing(bool capturing) override {
        capturing_ = capturing;
        if (!capturing) Collector::instance().set_capture_owner(std::nullopt);
    }

    std::vector<TimedActivity> collect() override {
        REPLAY_CUPTI_CALL(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
        Collector& c = Collector::instance();
        cupti::Delivered delivered = c.take();
        dropped_ += delivered.dropped;
        std::vector<TimedActivity> out;
        out.reserve(delivered.activities.size());
        for (auto& a : delivered.activities) {
            if (a.name.find(kClockKernelPrefix) != std::string::npos) continue;  // pacing
            TimedActivity t{0, std::move(a.name), a.start_ns, a.end_ns, 0, true, false, a.grid};
            const auto stream = stream_index_.find(a.stream_id);
            if (a.graph_node != 0) {
                const auto owner = c.owner_of_node(a.graph_node);
                if (!owner) {
                    ++unowned_graph_records_;
                    continue;
                }
                t.tag = owner->tag;
                t.stream = owner->stream_index;
                t.warm_read = owner->warm_read;
            } else if (phase_ == Phase::Plan) {
                const auto e = delivered.external.find(a.correlation);
                if (e == delivered.external.end()) continue;  // not ours: fills, L2 evictions
                t.tag = e->second & ~kWarmReadBit;
                t.warm_read = (e->second & kWarmReadBit) != 0;
                const auto s = tag_stream_.find(t.tag);
                if (stream != stream_index_.end()) {
                    t.stream = stream->second;
                } else if (s != tag_stream_.end()) {  // a library's own stream (cuDNN's RNNs)
                    t.stream = s->second;
                    t.lane = a.stream_id;
                    library_streams_[a.stream_id] = s->second;
                } else {
                    continue;
                }
            } else if (stream != stream_index_.end()) {
                t.stream = stream->second;
            } else {
                // Untagged: a library's own stream that our issues used in the Plan phase, or
                // not ours at all.
                const auto library = library_streams_.find(a.stream_id);
                if (library == library_streams_.end()) continue;
                t.stream = library->second;
                t.lane = a.stream_id;
            }
            out.push_back(std::move(t));
        }
        std::stable_sort(
            out.begin(), out.end(),
            [](const TimedActivity& x, const TimedActivity& y) { return x.start_ns < y.start_ns; });
        tag_stream_.clear();
        return out;
    }

    std::vector<std::string> notes() const override {
        std::vector<std::string> notes;
        if (dropped_ > 0)
            notes.push_back("CUPTI dropped " + std::to_string(dropped_) + " activity records");
        if (unowned_graph_records_ > 0)
            notes.push_back(std::to_string(unowned_graph_records_) +
                            " graph kernel records named a graph node no captured issue made: "
                            "left out");
        if (!memory_note_.empty()) notes.push_back(memory_note_);
        if (timed_)
            notes.push_back(
                "CUPTI: the timed iterations run without correlation ids (no runtime or driver "
                "API records); their records are tied to steps by stream order and kernel name, "
                "a graph's by the node that ran them");
        return notes;
    }

    std::vector<std::string> first_uses() override {
        REPLAY_CUPTI_CALL(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
        const cupti::LateUses late = Collector::instance().late();
        std::vector<std::string> lines;
        if (late.allocations > 0)
            lines.push_back(std::to_string(late.allocations) +
                            " allocations of device or pinned memory seen by CUPTI (" +
                            mib(late.allocated_bytes) + "; libtorch's and cuBLAS's included)");
        if (late.module_loads > 0)
            lines.push_back(std::to_string(late.module_loads) + " CUDA modules loaded");
        if (late.buffers > 0)
            lines.push_back(std::to_string(late.buffers) +
                            " CUPTI activity buffers allocated beyond the reserved ones");
        return lines;
    }

  private:
    Phase phase_ = Phase::Plan;
    bool recording_ = true;
    bool timed_ = false;  // was in the Timed phase at least once
    bool capturing_ = false;
    std::string graph_why_;    // why graph records cannot be tied to issues, or ""
    std::string memory_note_;  // why allocations are not counted, or ""
    std::unordered_map<std::uint32_t, int> stream_index_;  // CUPTI stream id -> driver's index
    std::unordered_map<std::uint64_t, int> tag_stream_;    // tag -> stream, since the last collect
    // CUPTI id of a stream a library made (cuDNN's RNNs) -> the driver's stream that last issued
    // work onto it, as seen in the Plan phase.
    std::unordered_map<std::uint32_t, int> library_streams_;
    std::uint64_t dropped_ = 0;
    std::uint64_t unowned_graph_records_ = 0;
};

}  // namespace

std::unique_ptr<IssueTimer> make_cupti_timer(std::string& why) {
    Collector& c = Collector::instance();
    if (!c.claim()) {
        why = "another CUDA backend in this process holds CUPTI";
        return nullptr;
    }
    auto fail = [&](std::string what) {
        why = std::move(what);
        for (auto kind : kRecordKinds) cuptiActivityDisable(kind);
        for (auto kind : kCorrelationKinds) cuptiActivityDisable(kind);
        c.release();
        return nullptr;
    };
    if (std::string error = c.register_buffers(); !error.empty()) return fail(error);
    for (auto kind : kRecordKinds)
        if (auto s = cuptiActivityEnable(kind); s != CUPTI_SUCCESS)
            return fail("cuptiActivityEnable: " + std::string(detail::status_text(s)));
    for (auto kind : kCorrelationKinds)
        if (auto s = cuptiActivityEnable(kind); s != CUPTI_SUCCESS)
            return fail("cuptiActivityEnable: " + std::string(detail::status_text(s)));
    // Allocations are counted to find first uses in the timed iterations; a CUPTI without it
    // still times.
    std::string memory_note;
    if (auto s = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY2); s != CUPTI_SUCCESS)
        memory_note = "CUPTI cannot record allocations (" + std::string(detail::status_text(s)) +
                      "): first uses of memory in the timed iterations are counted for the "
                      "backend's own buffers only";
    std::string graph_why = c.subscribe();
    c.take();  // nothing from before this timer
    c.reserve_buffers(kReservedBuffers);
    return std::make_unique<CuptiTimer>(std::move(graph_why), std::move(memory_note));
}

}  // namespace replay::cuda
