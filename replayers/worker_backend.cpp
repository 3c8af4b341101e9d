// The parent's side of a backend in a worker process (worker_backend.h). Everything issued since
// the last synchronize() is kept as the batch: when the worker faults during it, the batch is
// what is re-run, first one issue at a time (each followed by a synchronize) to find the issue
// that faults, then whole without it. A new worker gets every ready work prepared again and
// every graph captured again, in the phase the old one was in.
#include "replay/worker_backend.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <utility>

#include "replay/energy.h"
#include "worker_process.h"
#include "worker_wire.h"

namespace replay {
namespace {

using detail::Command;
using detail::Decoder;
using detail::Encoder;
using detail::WorkerProcess;

// Making the backend (CUDA and cuBLAS start, libtorch loads) and preparing one recipe (inputs
// allocated and filled) may take this long whatever the kernel timeout.
constexpr double kStartLimitS = 300;
constexpr double kPrepareLimitS = 300;

struct Step {
    Command command;
    std::uint32_t handle = 0;   // Issue, Warm: the parent's work handle; LaunchGraph: graph's
    std::int64_t a = 0, b = 0;  // Issue, Warm, ClockStart: stream; Wait: waiter, producer;
                                // Hold: stream, interval
    std::uint64_t tag = 0;
    std::string range{};  // Issue: its NVTX range (name_next_issue), "" for none
};

// A captured graph as the parent knows it: what was captured, to capture it again in a new
// worker.
struct Graph {
    int home = 0;
    bool all_streams = false;
    std::vector<Step> steps;
    std::uint32_t remote = 0;  // the current worker's graph; 0: lost (why)
    std::string why;
};

// What one synchronize brought back.
struct Synced {
    std::vector<std::pair<std::uint32_t, std::string>> failures;  // worker handle, why
    std::vector<TimedActivity> activities;
};

class WorkerBackend final : public Backend {
  public:
    WorkerBackend(BackendMaker maker, const WorkerOptions& options)
        : maker_(std::move(maker)), options_(options) {}

    // Starts the first worker; false with `why` when the backend cannot run.
    bool start(std::string& why) {
        auto worker = std::make_unique<WorkerProcess>(maker_, limit(kStartLimitS));
        const auto reply = worker->receive();
        if (!reply) {
            why = "the worker process failed to start: " + worker->failure();
            return false;
        }
        Decoder d(*reply);
        if (d.command() == Command::Unavailable) {
            why = d.str();
            return false;
        }
        if (d.command() != Command::Ready) {
            why = "the worker process failed to start: " + reason_of(d);
            return false;
        }
        env_ = detail::decode_environment(d);
        worker_ = std::move(worker);
        return true;
    }

    Environment environment() const override { return env_; }

    Prepared prepare(const Recipe& recipe) override {
        if (!batch_.empty()) synchronize();  // a fault in it must not take this one along
        Work w;
        w.recipe = recipe;
        if (!dead_.empty()) {
            w.prepared = {Disposition::Failed, dead_, 0};
        } else if (auto p = prepare_remote(recipe)) {
            w.prepared = p->first;
            w.remote = p->second;
        } else {
            // The worker died preparing it: this recipe fails, the others go on in a new one.
            w.prepared = {Disposition::Failed,
                          "preparing it: " + worker_->failure() + "; the worker was restarted", 0};
            restart();
        }
        const auto handle = static_cast<std::uint32_t>(work_.size());
        Prepared local = w.prepared;
        local.handle = handle;
        work_.push_back(std::move(w));
        return local;
    }

    void set_stream_count(int count) override {
        streams_ = count;
        if (worker_) worker_->send(Encoder(Command::Streams).i64(count).take(), limit(0));
    }

    void issue(std::uint32_t handle, int stream, std::uint64_t tag) override {
        const Work& w = work_.at(handle);
        if (w.failed) throw std::runtime_error(w.failure);
        if (w.prepared.disposition != Disposition::Ready)
            throw std::runtime_error("issue of work that is not ready: " + w.prepared.reason);
        if (!dead_.empty()) throw std::runtime_error(dead_);
        push({Command::Issue, handle, stream, 0, tag, std::exchange(next_range_, {})});
    }
    void name_next_issue(const std::string& range) override { next_range_ = range; }
    void submit() override {
        if (worker_ && dead_.empty()) worker_->flush();
    }
    void stream_wait(int waiter, int producer) override {
        push({Command::Wait, 0, waiter, producer, 0});
    }
    void flush_l2() override { push({Command::Flush}); }
    void evict_instruction_caches() override { push({Command::EvictCode}); }
    void start_device_clock(int stream) override { push({Command::ClockStart, 0, stream}); }
    void hold_after(int stream, std::int64_t after_ns) override {
        push({Command::Hold, 0, stream, after_ns});
    }
    void warm_inputs(std::uint32_t handle, int stream, std::uint64_t tag) override {
        if (!work_.at(handle).failed) push({Command::Warm, handle, stream, 0, tag});
    }

    void synchronize() override {
        if (dead_.empty()) {
            if (auto synced = sync_remote(batch_limit(batch_.size()))) {
                accept(std::move(*synced));
                batch_.clear();
                return;
            }
            recover(worker_->failure());
        }
        if (!dead_.empty())
            for (const Step& s : batch_) {
                if (s.command == Command::Issue) fail(s.handle, dead_);
                if (s.command == Command::LaunchGraph)
                    for (const Step& captured : graphs_[s.handle - 1].steps)
                        if (captured.command == Command::Issue) fail(captured.handle, dead_);
            }
        batch_.clear();
    }

    std::vector<TimedActivity> collect() override { return std::exchange(collected_, {}); }

    // The worker process holds the device; a meter would have to cross the wire on every read
    // while the windows poll it.
    std::unique_ptr<EnergyMeter> energy_meter(std::string& why) override {
        why = "energy is measured with --isolation none (the worker process holds the device)";
        return nullptr;
    }

    void set_recorded_ns(std::uint32_t handle, std::int64_t ns) override {
        work_.at(handle).recorded_ns = ns;
    }
    FaultReport take_faults() override { return std::exchange(faults_, {}); }

    // Several ranks replay in their own process (ReplaySettings::make_backend): a worker restarted
    // after a fault could not rejoin a c10d group whose other ranks are inside a collective. So a
    // worker never runs collectives, and its text is its own.
    bool runs_collectives() const override { return false; }
    std::vector<std::string> all_gather_text(const std::string& mine) override { return {mine}; }

    void set_phase(Phase phase) override {
        phase_ = phase;
        if (dead_.empty()) send_phase();
    }
    std::vector<std::string> first_uses() override {
        if (!batch_.empty()) synchronize();
        if (!dead_.empty()) return {};
        worker_->send(Encoder(Command::FirstUses).take(), limit(0));
        auto lines = receive_lines();
        if (!lines) return {};  // the fault shows at the next synchronize
        return std::move(*lines);
    }
    std::string capture_blocker(std::uint32_t handle, int stream) override {
        if (!batch_.empty()) synchronize();
        const Work& w = work_.at(handle);
        if (w.failed) return w.failure;
        if (!dead_.empty()) return dead_;
        worker_->send(Encoder(Command::CaptureBlocker).u32(w.remote).i64(stream).take(), limit(0));
        auto lines = receive_lines();
        if (!lines) return "the worker process faulted asking: " + worker_->failure();
        return lines->empty() ? std::string() : lines->front();
    }
    void begin_capture(int home, bool all_streams) override {
        if (!batch_.empty()) synchronize();  // the graph must not hold a fault of the batch
        capture_ = Graph{home, all_streams, {}, 0, {}};
        if (dead_.empty())
            worker_->send(Encoder(Command::BeginCapture).i64(home).u8(all_streams ? 1 : 0).take(),
                          limit(0));
    }
    std::uint32_t end_capture(std::string& why) override {
        if (!capture_) throw std::logic_error("end_capture() without begin_capture()");
        Graph graph = std::move(*capture_);
        capture_.reset();
        if (!dead_.empty()) {
            why = dead_;
            return 0;
        }
        if (!end_remote_capture(graph)) {
            why = graph.why;
            if (!worker_->failure().empty()) restart();  // the worker died capturing it
            return 0;
        }
        graphs_.push_back(std::move(graph));
        return static_cast<std::uint32_t>(graphs_.size());
    }
    void launch_graph(std::uint32_t graph) override {
        const Graph& g = graphs_.at(graph - 1);
        if (g.remote == 0) {  // lost with a worker: its work fails, once
            for (const Step& s : g.steps)
                if (s.command == Command::Issue) fail(s.handle, g.why);
            return;
        }
        push({Command::LaunchGraph, graph, 0, 0, 0});
    }

  private:
    struct Work {
        Recipe recipe;
        Prepared prepared;         // as the first worker prepared it (handle: its worker's)
        std::uint32_t remote = 0;  // the current worker's handle
        std::int64_t recorded_ns = 0;
        bool failed = false;
        std::string failure;
    };

    double limit(double floor_s) const {
        return options_.kernel_timeout_s > 0 ? std::max(floor_s, options_.kernel_timeout_s)
                                             : INFINITY;
    }
    // run_time_limit(), unless the backend times on the host clock (limit_host_clock_runs).
    double run_limit(std::int64_t recorded_ns) const {
        if (env_.timing == "host-clock" && !options_.limit_host_clock_runs) return INFINITY;
        return run_time_limit(options_, recorded_ns);
    }
    double issue_limit(std::uint32_t handle) const { return run_limit(work_[handle].recorded_ns); }
    // A synchronize waits for the work among the first `steps` of the batch.
    double batch_limit(std::size_t steps) const {
        std::int64_t recorded = 0;
        for (std::size_t i = 0; i < steps; ++i) recorded += recorded_ns(batch_[i]);
        return run_limit(recorded);
    }

    static std::string reason_of(Decoder& d) {
        if (d.command() == Command::Fault) return d.str();
        return "the worker answered out of turn";
    }

    void push(Step step) {
        if (!dead_.empty()) return;
        send(step);
        // Captured work does not run: it is kept with its graph, not in the batch.
        (capture_ ? capture_->steps : batch_).push_back(step);
    }

    bool skipped(const Step& s) const {
        if (s.command == Command::LaunchGraph) return graphs_[s.handle - 1].remote == 0;
        return (s.command == Command::Issue || s.command == Command::Warm) &&
               work_[s.handle].failed;
    }
    // The step runs work that a synchronize after it must wait for.
    static bool runs_work(const Step& s) {
        return s.command == Command::Issue || s.command == Command::LaunchGraph;
    }
    std::int64_t recorded_ns(const Step& s) const {
        if (s.command == Command::Issue) return work_[s.handle].recorded_ns;
        std::int64_t ns = 0;
        if (s.command == Command::LaunchGraph)
            for (const Step& captured : graphs_[s.handle - 1].steps) ns += recorded_ns(captured);
        return ns;
    }

    void send_phase() {
        worker_->send(Encoder(Command::SetPhase).u8(static_cast<std::uint8_t>(phase_)).take(),
                      limit(0));
    }

    // The worker's reply, which must be `expected`; nullopt when the worker died, faulted or
    // answered out of turn (worker_->failure() says which; the worker is gone then).
    std::optional<std::string> reply_of(Command expected) {
        auto reply = worker_->receive();
        if (!reply) return std::nullopt;
        Decoder d(*reply);
        if (d.command() != expected) {
            worker_->abandon(reason_of(d));
            return std::nullopt;
        }
        return reply;
    }

    // Lines of a reply; nullopt when the worker died (or faulted) on the request.
    std::optional<std::vector<std::string>> receive_lines() {
        const auto reply = reply_of(Command::Lines);
        if (!reply) return std::nullopt;
        Decoder d(*reply);
        std::vector<std::string> lines(d.count());
        for (auto& line : lines) line = d.str();
        return lines;
    }

    // Ends the capture begun in the current worker: its graph there, or false with graph.why.
    bool end_remote_capture(Graph& graph) {
        worker_->send(Encoder(Command::EndCapture).take(), limit(kPrepareLimitS));
        const auto reply = reply_of(Command::Captured);
        if (!reply) {
            graph.why = "the worker process faulted capturing it: " + worker_->failure();
            return false;
        }
        Decoder d(*reply);
        graph.remote = d.u32();
        graph.why = d.str();
        return graph.remote != 0;
    }

    // In a new worker: every graph not lost captured again from what it captured.
    bool capture_again() {
        for (Graph& g : graphs_) {
            if (g.remote == 0) continue;
            worker_->send(
                Encoder(Command::BeginCapture).i64(g.home).u8(g.all_streams ? 1 : 0).take(),
                limit(0));
            for (const Step& s : g.steps)
                if (!skipped(s)) send(s);
            if (end_remote_capture(g)) continue;
            g.remote = 0;
            g.why = "capturing it again after a fault: " + g.why;
            if (!worker_->failure().empty()) return false;
        }
        return true;
    }

    void send(const Step& s) {
        switch (s.command) {
            case Command::Issue:
                if (!s.range.empty())
                    worker_->send(Encoder(Command::NameIssue).str(s.range).take(), limit(0));
                worker_->send(Encoder(Command::Issue)
                                  .u32(work_[s.handle].remote)
                                  .i64(s.a)
                                  .i64(static_cast<std::int64_t>(s.tag))
                                  .take(),
                              issue_limit(s.handle));
                return;
            case Command::Warm:
                worker_->send(Encoder(Command::Warm)
                                  .u32(work_[s.handle].remote)
                                  .i64(s.a)
                                  .i64(static_cast<std::int64_t>(s.tag))
                                  .take(),
                              limit(0));
                return;
            case Command::LaunchGraph:
                worker_->send(
                    Encoder(Command::LaunchGraph).u32(graphs_[s.handle - 1].remote).take(),
                    run_limit(recorded_ns(s)));
                return;
            case Command::Wait:
            case Command::Hold:
                worker_->send(Encoder(s.command).i64(s.a).i64(s.b).take(), limit(0));
                return;
            case Command::ClockStart:
                worker_->send(Encoder(s.command).i64(s.a).take(), limit(0));
                return;
            default:
                worker_->send(Encoder(s.command).take(), limit(0));
        }
    }

    // The worker's Prepared and handle, or nullopt when the worker died (or faulted) on it.
    std::optional<std::pair<Prepared, std::uint32_t>> prepare_remote(const Recipe& recipe) {
        Encoder e(Command::Prepare);
        detail::encode(e, recipe);
        worker_->send(e.take(), limit(kPrepareLimitS));
        const auto reply = reply_of(Command::Prepared);
        if (!reply) return std::nullopt;
        Decoder d(*reply);
        Prepared p;
        p.disposition = static_cast<Disposition>(d.u8());
        p.reason = d.str();
        p.handle = d.u32();
        return std::make_pair(std::move(p), p.handle);
    }

    // Synchronizes the worker; nullopt when it faulted (worker_->failure() says why).
    std::optional<Synced> sync_remote(double limit_s) {
        worker_->send(Encoder(Command::Sync).take(), limit_s);
        const auto reply = reply_of(Command::Synced);
        if (!reply) return std::nullopt;
        Decoder d(*reply);
        Synced s;
        s.failures.resize(d.count());
        for (auto& [handle, why] : s.failures) {
            handle = d.u32();
            why = d.str();
        }
        s.activities.resize(d.count());
        for (auto& a : s.activities) a = detail::decode_activity(d);
        return s;
    }

    void accept(Synced synced) {
        for (const auto& [remote, why] : synced.failures)
            for (std::uint32_t h = 0; h < work_.size(); ++h)
                if (!work_[h].failed && work_[h].remote == remote &&
                    work_[h].prepared.disposition == Disposition::Ready)
                    fail(h, why);
        for (auto& a : synced.activities) collected_.push_back(std::move(a));
    }

    void fail(std::uint32_t handle, const std::string& why) {
        Work& w = work_[handle];
        if (w.failed) return;
        w.failed = true;
        w.failure = why;
        faults_.failures.push_back({handle, why});
    }

    // A new worker with every ready, unfailed work prepared again and every graph captured
    // again, in the phase the old one was in; false when none could be started (dead_ says
    // why).
    bool restart() {
        for (;;) {
            if (++restarts_ > options_.max_restarts) {
                dead_ = "the worker process was restarted " + std::to_string(restarts_ - 1) +
                        (restarts_ == 2 ? " time" : " times") +
                        " after faults; the rest of the replay was given up";
                worker_.reset();
                return false;
            }
            worker_.reset();
            std::string why;
            if (!start(why)) {
                dead_ = "the worker process could not be restarted: " + why;
                return false;
            }
            if (streams_ > 0)
                worker_->send(Encoder(Command::Streams).i64(streams_).take(), limit(0));
            bool ok = true;
            for (std::uint32_t h = 0; h < work_.size() && ok; ++h) {
                Work& w = work_[h];
                if (w.failed || w.prepared.disposition != Disposition::Ready) continue;
                auto p = prepare_remote(w.recipe);
                if (!p) {
                    fail(h, "preparing it again after a fault: " + worker_->failure());
                    ok = false;
                } else if (p->first.disposition != Disposition::Ready) {
                    fail(h, "preparing it again after a fault: " + p->first.reason);
                } else {
                    w.remote = p->second;
                }
            }
            if (!ok || !capture_again()) continue;
            if (phase_ != Phase::Plan) send_phase();
            ++faults_.restarts;
            return true;
        }
    }

    // After a fault in the batch: find the issues that fault, fail them, re-run the rest.
    void recover(std::string first) {
        while (restart()) {
            std::size_t culprit = batch_.size();
            std::string why;
            Synced checked;
            for (std::size_t i = 0; i < batch_.size() && culprit == batch_.size(); ++i) {
                const Step& s = batch_[i];
                if (skipped(s)) continue;
                send(s);
                if (!runs_work(s)) continue;
                auto synced = sync_remote(run_limit(recorded_ns(s)));
                if (!synced) {
                    culprit = i;
                    why = worker_->failure();
                    break;
                }
                for (auto& f : synced->failures) checked.failures.push_back(std::move(f));
                for (auto& a : synced->activities) checked.activities.push_back(std::move(a));
            }
            if (culprit == batch_.size()) {
                // Run one issue at a time, the batch went through: keep those timings.
                if (auto rest = sync_remote(batch_limit(batch_.size()))) {
                    accept(std::move(checked));
                    accept(std::move(*rest));
                    faults_.notes.push_back(
                        "a device fault (" + first +
                        ") did not recur when its batch was re-run one issue at a time: that "
                        "batch's timings come from the re-run");
                    return;
                }
                first = worker_->failure();
                continue;
            }
            const std::string at_fault =
                why +
                " (the work in flight when the worker faulted; it was restarted and the replay "
                "went on without it)";
            if (const Step& s = batch_[culprit]; s.command == Command::LaunchGraph) {
                Graph& g = graphs_[s.handle - 1];
                g.remote = 0;
                g.why = "in a CUDA graph: " + at_fault;
                for (const Step& captured : g.steps)
                    if (captured.command == Command::Issue) fail(captured.handle, g.why);
            } else {
                fail(s.handle, at_fault);
            }
            ++faulted_;
            faults_.notes.push_back("the worker process running the device work was restarted " +
                                    std::to_string(faulted_) +
                                    (faulted_ == 1 ? " time" : " times") +
                                    " after a fault; the kernels at fault are failed with why");
            if (!restart()) return;
            for (const Step& s : batch_)
                if (!skipped(s)) send(s);
            if (auto synced = sync_remote(batch_limit(batch_.size()))) {
                accept(std::move(*synced));
                return;
            }
            first = worker_->failure();
        }
    }

    BackendMaker maker_;
    WorkerOptions options_;
    Environment env_;
    std::string next_range_;  // name_next_issue's, for the next Issue pushed
    std::unique_ptr<WorkerProcess> worker_;
    std::vector<Work> work_;  // by the parent's handle
    std::vector<Step> batch_;
    std::vector<Graph> graphs_;     // by the parent's graph handle - 1
    std::optional<Graph> capture_;  // being captured
    Phase phase_ = Phase::Plan;
    int streams_ = 0;
    int restarts_ = 0;
    int faulted_ = 0;
    std::string dead_;  // non-empty: no more workers; why
    std::vector<TimedActivity> collected_;
    FaultReport faults_;
};

}  // namespace

double run_time_limit(const WorkerOptions& options, std::int64_t recorded_ns) {
    if (options.kernel_timeout_s <= 0) return std::numeric_limits<double>::infinity();
    return std::max(options.kernel_timeout_s,
                    options.recorded_factor * static_cast<double>(recorded_ns) * 1e-9);
}

std::unique_ptr<Backend> make_worker_backend(BackendMaker maker, const WorkerOptions& options,
                                             std::string& why) {
    auto backend = std::make_unique<WorkerBackend>(std::move(maker), options);
    try {
        if (!backend->start(why)) return nullptr;
    } catch (const std::system_error& e) {
        why = std::string("no worker process: ") + e.what();
        return nullptr;
    }
    return backend;
}

}  // namespace replay
