// CUDA event timing: one timing-enabled event pair around each issue, read back at collect().
// Times are placed on the host's steady clock through the first event of each collect period.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "cuda_raii.h"
#include "timing.h"

namespace replay::cuda {
namespace {

std::int64_t host_now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

class EventTimer final : public IssueTimer {
  public:
    const char* method() const override { return "cuda-events"; }
    void set_phase(Phase) override {}  // an event pair per issue in every phase
    void set_streams(const std::vector<cudaStream_t>&) override {}

    std::string graph_support() const override {
        return "CUDA events cannot time the kernels inside a graph (CUPTI's per-kernel records "
               "can: CUPTI unavailable, or --no-cupti)";
    }
    void set_capturing(bool) override {}

    void begin(const IssueMark& mark, cudaStream_t stream) override {
        if (!origin_recorded_) {
            if (!origin_) origin_ = Event::timing();
            REPLAY_CUDA_CALL(cudaEventRecord(origin_.get(), stream));
            origin_host_ns_ = host_now_ns();
            origin_recorded_ = true;
        }
        Pending p;
        p.mark = mark;
        p.start = take();
        p.end = take();
        REPLAY_CUDA_CALL(cudaEventRecord(p.start.get(), stream));
        pending_.push_back(std::move(p));
    }

    void end(const IssueMark& mark, cudaStream_t stream, const std::string& label) override {
        // The matching begin is the last pending one with this mark (issues do not nest).
        for (auto it = pending_.rbegin(); it != pending_.rend(); ++it) {
            if (it->mark.tag != mark.tag || it->mark.warm_read != mark.warm_read || it->ended)
                continue;
            REPLAY_CUDA_CALL(cudaEventRecord(it->end.get(), stream));
            it->name = label;
            it->ended = true;
            return;
        }
    }

    std::vector<TimedActivity> collect() override {
        std::vector<TimedActivity> out;
        out.reserve(pending_.size());
        for (auto& p : pending_) {
            if (p.ended) {
                float from_origin = 0, duration = 0;
                REPLAY_CUDA_CALL(cudaEventElapsedTime(&from_origin, origin_.get(), p.start.get()));
                REPLAY_CUDA_CALL(cudaEventElapsedTime(&duration, p.start.get(), p.end.get()));
                const std::int64_t start =
                    origin_host_ns_ + std::llround(static_cast<double>(from_origin) * 1e6);
                out.push_back({p.mark.tag, std::move(p.name), start,
                               start + std::llround(static_cast<double>(duration) * 1e6),
                               p.mark.stream_index, false, p.mark.warm_read});
            }
            free_.push_back(std::move(p.start));
            free_.push_back(std::move(p.end));
        }
        pending_.clear();
        origin_recorded_ = false;
        std::stable_sort(
            out.begin(), out.end(),
            [](const TimedActivity& x, const TimedActivity& y) { return x.start_ns < y.start_ns; });
        return out;
    }

  private:
    struct Pending {
        IssueMark mark;
        bool ended = false;
        std::string name;
        Event start, end;
    };

    Event take() {
        if (free_.empty()) return Event::timing();
        Event e = std::move(free_.back());
        free_.pop_back();
        return e;
    }

    std::vector<Pending> pending_;
    std::vector<Event> free_;  // pool: events are reused once collected
    Event origin_;
    bool origin_recorded_ = false;
    std::int64_t origin_host_ns_ = 0;
};

}  // namespace

std::unique_ptr<IssueTimer> make_event_timer() {
    return std::make_unique<EventTimer>();
}

}  // namespace replay::cuda
