// The sequential and unique drivers against a fake backend that records every call and returns
// made-up timings: what each mode issues, in which order, with which context, and how the timed
// activities that come back are attributed to the recorded kernels.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "replay/analysis.h"
#include "replay/drivers.h"
#include "replay/energy.h"
#include "replay/ncu_command.h"
#include "replay/regression.h"
#include "replay/regression_printers.h"
#include "replay/timeline.h"
#include "replay/worker_backend.h"
#include "test_support.h"

namespace {

using replay::Analysis;
using replay::KernelOutcome;
using replay::Recipe;
using replay::Tier;

// ---- a hand-made trace ------------------------------------------------------------------------

// Kineto events of one host thread launching onto the given streams; times in microseconds.
class TraceBuilder {
  public:
    void op(const std::string& name, double ts, double dur) {
        events_.push_back(R"({"ph":"X","cat":"cpu_op","name":")" + name +
                          R"(","pid":1,"tid":1,"ts":)" + num(ts) + R"(,"dur":)" + num(dur) +
                          R"(,"args":{"External id":)" + std::to_string(++external_) + "}}");
    }
    // A runtime call at `launch_ts` and the GPU activity it launched.
    void launch(const std::string& name, double launch_ts, double ts, double dur, int stream = 7,
                bool memcpy = false) {
        const int correlation = ++correlation_;
        events_.push_back(R"({"ph":"X","cat":"cuda_runtime","name":")" +
                          std::string(memcpy ? "cudaMemcpyAsync" : "cudaLaunchKernel") +
                          R"(","pid":1,"tid":1,"ts":)" + num(launch_ts) +
                          R"(,"dur":1,"args":{"correlation":)" + std::to_string(correlation) +
                          "}}");
        events_.push_back(R"({"ph":"X","cat":")" + std::string(memcpy ? "gpu_memcpy" : "kernel") +
                          R"(","name":")" + name + R"(","pid":0,"tid":)" + std::to_string(stream) +
                          R"(,"ts":)" + num(ts) + R"(,"dur":)" + num(dur) +
                          R"(,"args":{"correlation":)" + std::to_string(correlation) +
                          R"(,"stream":)" + std::to_string(stream) +
                          R"(,"device":0,"grid":[1,1,1],"block":[128,1,1],"bytes":4096}})");
    }
    // One cudaGraphLaunch at `launch_ts` and the kernels it ran, back to back from `ts`.
    void graph_launch(const std::vector<std::string>& names, double launch_ts, double ts,
                      double dur, int stream = 7) {
        const int correlation = ++correlation_;
        events_.push_back(R"({"ph":"X","cat":"cuda_runtime","name":"cudaGraphLaunch","pid":1,)"
                          R"("tid":1,"ts":)" +
                          num(launch_ts) + R"(,"dur":1,"args":{"correlation":)" +
                          std::to_string(correlation) + "}}");
        for (const std::string& name : names) {
            events_.push_back(
                R"({"ph":"X","cat":"kernel","name":")" + name + R"(","pid":0,"tid":)" +
                std::to_string(stream) + R"(,"ts":)" + num(ts) + R"(,"dur":)" + num(dur) +
                R"(,"args":{"correlation":)" + std::to_string(correlation) + R"(,"stream":)" +
                std::to_string(stream) + R"(,"device":0,"grid":[1,1,1],"block":[128,1,1]}})");
            ts += dur;
        }
    }
    // A runtime call without a GPU activity (cudaEventRecord, cudaStreamWaitEvent).
    void call(const std::string& name, double ts) {
        events_.push_back(
            R"({"ph":"X","cat":"cuda_runtime","name":")" + name + R"(","pid":1,"tid":1,"ts":)" +
            num(ts) + R"(,"dur":1,"args":{"correlation":)" + std::to_string(++correlation_) + "}}");
    }
    std::string json() const {
        std::string out = R"({"traceEvents":[)";
        for (std::size_t i = 0; i < events_.size(); ++i) out += (i ? ",\n" : "\n") + events_[i];
        return out + "\n]}";
    }

  private:
    static std::string num(double x) {
        std::ostringstream s;
        s << x;
        return s.str();
    }
    std::vector<std::string> events_;
    int external_ = 0;
    int correlation_ = 1000;
};

Recipe aten_op(const std::string& op, std::int64_t storage) {
    Recipe r;
    r.tier = Tier::AtenOp;
    r.rule = "test-aten";
    replay::AtenRecipe a;
    a.op = op;
    replay::AtenArgument arg;
    arg.kind = replay::ArgKind::Tensor;
    arg.type = "float";
    replay::TensorSpec t;
    t.dims = {64, 64};
    t.dtype = replay::DType::Float32;
    t.storage_id = storage;
    arg.tensors.push_back(t);
    a.args.push_back(arg);
    r.detail = a;
    return r;
}

Recipe relu(std::int64_t storage) {
    return aten_op("aten::relu", storage);
}

Recipe gemm(std::int64_t a_storage, bool reduction = false) {
    Recipe r;
    r.tier = Tier::Gemm;
    r.rule = reduction ? "test-splitk" : "test-gemm";
    r.issued_with_op = reduction;
    replay::GemmRecipe g;
    g.op = "aten::mm";
    g.m = reduction ? 1 : 64;
    g.n = g.k = 64;
    g.a_type = g.b_type = g.c_type = replay::DType::Float16;
    g.a_storage = a_storage;
    r.detail = g;
    return r;
}

Recipe copy() {
    Recipe r;
    r.tier = Tier::Copy;
    r.rule = "test-copy";
    replay::CopyRecipe c;
    c.bytes = 4096;
    r.detail = c;
    return r;
}

// Analyses `trace`, then gives its graph nodes the recipes `recipe_of(kernel name, node index)`
// (so that the test decides instances and tiers) and recomputes the unique kernels.
template <typename RecipeOf>
std::unique_ptr<Analysis> analysis_of(const TraceBuilder& trace, const std::string& file,
                                      RecipeOf recipe_of) {
    replay::testing::TempFile json(file, trace.json());
    replay::AnalysisOptions options;
    options.trace_path = json.path();
    auto a = replay::analyze(options);
    for (std::size_t n = 0; n < a->graph.nodes().size(); ++n) {
        const auto name = a->trace().names.view(a->graph.activity(a->graph.nodes()[n]).name);
        a->recipes.set(n, recipe_of(std::string(name), n));
    }
    a->kernels = replay::unique_kernels(a->graph, a->recipes);
    return a;
}

// ---- a simulated board for --energy
// --------------------------------------------------------------

// A board with an energy counter on a simulated clock: reads cost time, each issue runs for its
// duration at the idle power plus its dynamic energy, and the counter (whole millijoules) and the
// power reading change only every `period_s`, as NVML's do (about 100 ms on the H100/H200).
class SimulatedBoard {
  public:
    double idle_w = 60;
    double period_s = 0.01;
    double read_s = 20e-6;
    std::map<std::string, double> dynamic_uj;  // per instance key; default 200 uJ a launch
    // The board's power limit: above it (over the last counter period) the meter says the
    // clocks are held down by the power cap, as NVML's clock event reasons do.
    double cap_w = INFINITY;
    // Added in every other counter period (as the H100's counter alternated under a steady load
    // of short kernels: 213 W, 162 W, 213 W, ...): a window of one period is noise.
    double alternating_w = 0;

    void run(const std::string& key, double seconds) {
        const std::lock_guard<std::mutex> lock(mutex_);
        const auto it = dynamic_uj.find(key);
        t_ += seconds;
        dynamic_j_ += (it != dynamic_uj.end() ? it->second : 200.0) * 1e-6;
        history_.emplace_back(t_, dynamic_j_);
    }
    // The device waiting for the host: `seconds` at `watts` above idle (clocks up, SMs idle).
    void wait_for_host(double seconds, double watts) {
        const std::lock_guard<std::mutex> lock(mutex_);
        t_ += seconds;
        dynamic_j_ += watts * seconds;
        history_.emplace_back(t_, dynamic_j_);
    }
    std::optional<replay::MeterReading> energy() {
        const std::lock_guard<std::mutex> lock(mutex_);
        // A read takes 0.5 to 1.5 x read_s (a fixed pseudo-random sequence): windows differ a
        // little, as on a real board, so that their samples have no ties.
        seed_ = seed_ * 6364136223846793005ull + 1442695040888963407ull;
        t_ += read_s * (0.5 + static_cast<double>(seed_ >> 11) / 9007199254740992.0);
        return replay::MeterReading{std::floor(joules_at(tick(t_)) * 1000.0), t_};
    }
    std::optional<replay::MeterReading> power() {
        const std::lock_guard<std::mutex> lock(mutex_);
        const double end = tick(t_);
        const double watts =
            end >= period_s ? (joules_at(end) - joules_at(end - period_s)) / period_s : idle_w;
        return replay::MeterReading{watts, t_};
    }
    std::uint32_t clock_limits() {
        const auto w = power();
        return w && w->value > cap_w ? replay::kClockPowerCap : 0u;
    }
    // Over the cap the controller lowers the SM clock; the die warms with the power drawn.
    replay::BoardState board_state() {
        const auto w = power();
        const double watts = w ? w->value : idle_w;
        return {watts > cap_w ? 1500.0 : 1980.0, 30.0 + watts / 10.0};
    }

  private:
    double tick(double t) const { return std::floor(t / period_s) * period_s; }
    double joules_at(double t) const {
        double dynamic = 0;
        for (const auto& [at, cumulative] : history_)
            if (at <= t) dynamic = cumulative;
        const auto period_index = static_cast<long long>(std::floor(t / period_s + 1e-9));
        return idle_w * t + dynamic +
               alternating_w * period_s * static_cast<double>(period_index / 2);
    }
    std::mutex mutex_;
    double t_ = 1.0;
    std::uint64_t seed_ = 42;
    double dynamic_j_ = 0;
    std::vector<std::pair<double, double>> history_;  // (time, dynamic joules so far)
};

class BoardMeter final : public replay::EnergyMeter {
  public:
    explicit BoardMeter(SimulatedBoard& board) : board_(board) {}
    std::string method() const override { return "simulated counter"; }
    std::optional<replay::MeterReading> energy() override { return board_.energy(); }
    std::optional<replay::MeterReading> power() override { return board_.power(); }
    double power_limit_w() const override { return 700; }
    std::optional<std::uint32_t> clock_limits() override { return board_.clock_limits(); }
    std::optional<replay::BoardState> board_state() override { return board_.board_state(); }

  private:
    SimulatedBoard& board_;
};

// ---- the fake backend -------------------------------------------------------------------------

struct Call {
    // prepare | streams | issue | wait | sync | flush | evict_code | warm | collect | phase |
    // blocker | begin_capture | end_capture | launch_graph | first_uses | clock | hold | recording
    std::string what;
    std::string recipe;  // prepare, issue, warm, blocker: the recipe's instance key
    int stream = -1;
    std::uint64_t tag = 0;
    // streams: count; wait: producer; phase: 1 Timed; launch_graph: graph; hold: offset (ns);
    // recording: 1 on
    std::int64_t value = 0;
    replay::Phase phase = replay::Phase::Plan;  // the phase the call came in
    bool captured = false;                      // made while a graph was being captured
    std::int64_t host_ns = -1;                  // the test clock at the call, when one is given
};

// A clock the driver's pacing waits on: waiting moves it; so may the fake's issues.
struct TestClock {
    std::int64_t now = 0;
    void attach(replay::DriverOptions& o) {
        o.clock_ns = [this] { return now; };
        o.wait_until_ns = [this](std::int64_t t) { now = std::max(now, t); };
    }
};

class FakeBackend : public replay::Backend {
  public:
    // Per instance key: the activities one issue produces (name, ns); without an entry, one
    // whole-issue record of 1000 ns x (handle + 1).
    std::map<std::string, std::vector<std::pair<std::string, std::int64_t>>> per_kernel;
    // The launch grid of per-kernel records by name (zeros: not known, as before).
    std::map<std::string, std::array<std::int32_t, 3>> grid_of;
    std::set<std::string> skip;        // instance keys whose prepare says Skipped
    std::set<std::string> fail_issue;  // instance keys whose issue throws
    // In a worker process (worker_backend.h): instance keys whose issue kills the process, as
    // a crash would, or never returns, as a hung kernel would.
    std::set<std::string> abort_issue;
    std::set<std::string> hang_issue;
    std::set<std::string> slow_issue;  // ... takes a second, as a big op does on a CPU
    std::set<std::string> abort_prepare;
    std::set<std::string> abort_when_timed;  // ... only when it runs in the Timed phase
    // Instance keys whose issue poisons the fake device as a device-side assert does a CUDA
    // context: the issue returns, every later issue and synchronize throws.
    std::set<std::string> poison_issue;
    std::int64_t warm_ns = 0;  // > 0: warm_inputs gives a record this long
    // Timed phase: records come back untagged, as CUPTI's do without correlation ids.
    bool untag_when_timed = false;
    // Timed phase: this instance key's first record gets another name (a kernel that changed).
    std::map<std::string, std::string> renamed_when_timed;
    // Per-kernel records by name that run on a library's own stream (as cuDNN's RNN kernels do):
    // its lane id, and how long after the issue's records before it the kernel starts (it may
    // start after later issues' records on the issuing stream).
    std::map<std::string, std::pair<std::int64_t, std::int64_t>> library_lane;
    bool graphs = false;                    // capture_blocker says yes (except not_capturable)
    std::set<std::string> not_capturable;   // instance keys that cannot be captured
    bool fail_begin_capture = false;        // begin_capture() throws (and opens nothing)
    int drop_graph_record_in_collect = -1;  // n >= 0: the n-th collect loses a graph record
    TestClock* clock = nullptr;             // when given: stamps calls; each issue advances it
    // Records start at the steady clock of the issue (the same clock in a worker process), as a
    // GPU's would when it runs each launch as it arrives.
    bool stamp_steady_clock = false;
    std::int64_t issue_host_ns = 0;  // by this much
    std::vector<Call> calls;
    SimulatedBoard* board = nullptr;     // --energy: its meter; without one, the default (none)
    bool board_runs_warm_reads = false;  // with a board: a warm-up read runs 1 us there too
    int submits = 0;        // submit() calls (not in `calls`: sequences stay as they were)
    double host_gap_s = 0;  // with a board: each issue from the host (not a graph) idles it first
    // Multiplies every kernel's device time (the board's and the timing records').
    std::int64_t time_scale = 1;
    double host_gap_w = 0;  // ... at this much above idle
    // relocated() makes copies; the board knows copy n of a recipe as its instance key + "@n",
    // so that a test can give each placement an energy of its own.
    bool moves = false;
    bool device_clock = false;  // Environment::device_clock: start_device_clock/hold_after logged

    replay::Environment environment() const override {
        replay::Environment e;
        e.backend = "fake";
        e.device_name = "made-up device";
        e.timing = per_kernel.empty() ? "host-clock" : "cupti";
        e.device_clock = device_clock;
        return e;
    }
    void start_device_clock(int stream) override { add({"clock", "", stream}); }
    void hold_after(int stream, std::int64_t after_ns) override {
        add({"hold", "", stream, 0, after_ns});
    }
    replay::Prepared prepare(const Recipe& recipe) override {
        const std::string key = recipe.instance_key();
        add({"prepare", key});
        if (abort_prepare.count(key)) die();
        if (skip.count(key)) return {replay::Disposition::Skipped, "fake cannot run " + key, 0};
        keys_.push_back(key);
        board_keys_.push_back(key);
        runs_as_.push_back(static_cast<std::uint32_t>(keys_.size() - 1));
        return {replay::Disposition::Ready, "", static_cast<std::uint32_t>(keys_.size() - 1)};
    }
    replay::Prepared relocated(std::uint32_t handle) override {
        if (!moves) return replay::Backend::relocated(handle);
        const std::string key = keys_.at(handle);
        add({"relocate", key});
        keys_.push_back(key);
        board_keys_.push_back(key + "@" + std::to_string(++copies_));
        runs_as_.push_back(runs_as_.at(handle));  // as fast as the original
        return {replay::Disposition::Ready, "", static_cast<std::uint32_t>(keys_.size() - 1)};
    }
    void release(std::uint32_t handle) override { add({"release", board_keys_.at(handle)}); }
    void set_stream_count(int count) override { add({"streams", "", -1, 0, count}); }
    void issue(std::uint32_t handle, int stream, std::uint64_t tag) override {
        const std::string& key = keys_.at(handle);
        add({"issue", key, stream, tag});
        if (clock != nullptr) clock->now += issue_host_ns;
        check_poison();
        if (fail_issue.count(key)) throw std::runtime_error("fake issue failure of " + key);
        if (abort_issue.count(key)) die();
        if (hang_issue.count(key))
            for (;;) pause();
        if (slow_issue.count(key)) std::this_thread::sleep_for(std::chrono::seconds(1));
        if (poison_issue.count(key)) poisoned_ = true;
        if (capturing_) {
            captured_.push_back({handle, stream, tag, false});
            return;
        }
        if (board != nullptr && host_gap_s > 0) board->wait_for_host(host_gap_s, host_gap_w);
        produce(handle, stream, tag);
    }
    void stream_wait(int waiter, int producer) override { add({"wait", "", waiter, 0, producer}); }
    void submit() override { ++submits; }
    void synchronize() override {
        add({"sync", ""});
        check_poison();
    }
    void flush_l2() override { add({"flush", ""}); }
    void evict_instruction_caches() override { add({"evict_code", ""}); }
    void warm_inputs(std::uint32_t handle, int stream, std::uint64_t tag) override {
        add({"warm", keys_.at(handle), stream, tag});
        if (board != nullptr && board_runs_warm_reads && !capturing_)
            board->run("warm-up read", 1e-6);
        if (capturing_)
            captured_.push_back({handle, stream, tag, true});
        else if (warm_ns > 0)
            record(tag, "warm kernel", warm_ns, stream, true, true);
    }
    void name_next_issue(const std::string& range) override { calls.push_back({"range", range}); }
    std::vector<replay::TimedActivity> collect() override {
        add({"collect", ""});
        auto out = std::exchange(pending_, {});
        if (collects_++ == drop_graph_record_in_collect)
            for (auto it = out.begin(); it != out.end(); ++it)
                if (graph_records_.count(it->start_ns)) {
                    out.erase(it);
                    break;
                }
        if (phase_ == replay::Phase::Timed && untag_when_timed)
            for (auto& a : out)
                if (!graph_records_.count(a.start_ns)) a.tag = 0, a.warm_read = false;
        graph_records_.clear();
        return out;
    }
    void set_phase(replay::Phase phase) override {
        add({"phase", "", -1, 0, phase == replay::Phase::Timed ? 1 : 0});
        phase_ = phase;
    }
    // While recording is on, each run's records hold the device this long at this power above
    // idle (as CUPTI's records of graph-launched kernels did); off, runs leave no records.
    double record_gap_s = 0, record_gap_w = 0;
    void set_recording(bool on) override {
        add({"recording", "", -1, 0, on ? 1 : 0});
        recording_ = on;
    }
    // Set-up calls made in the Timed phase: what a real backend would have had to make late.
    std::vector<std::string> first_uses() override {
        add({"first_uses", ""});
        std::vector<std::string> late;
        for (const auto& c : calls)
            if (c.phase == replay::Phase::Timed &&
                (c.what == "prepare" || c.what == "streams" || c.what == "blocker" ||
                 c.what == "begin_capture" || c.what == "end_capture"))
                late.push_back(c.what + " " + c.recipe);
        return late;
    }
    std::string capture_blocker(std::uint32_t handle, int stream) override {
        const std::string& key = keys_.at(handle);
        add({"blocker", key, stream});
        if (!graphs) return "the fake has no graphs";
        return not_capturable.count(key) ? "fake: " + key + " synchronises" : "";
    }
    void begin_capture(int home, bool all_streams) override {
        add({"begin_capture", "", home, 0, all_streams ? 1 : 0});
        if (fail_begin_capture) throw std::runtime_error("fake: the capture could not begin");
        capturing_ = true;
        captured_.clear();
    }
    std::uint32_t end_capture(std::string&) override {
        add({"end_capture", ""});
        if (!capturing_) throw std::logic_error("end_capture() without begin_capture()");
        capturing_ = false;
        graphs_.push_back(std::exchange(captured_, {}));
        return static_cast<std::uint32_t>(graphs_.size());
    }
    // A graph's records are tagged (by the node that ran them) in every phase.
    void launch_graph(std::uint32_t graph) override {
        add({"launch_graph", "", -1, 0, graph});
        for (const Captured& c : graphs_.at(graph - 1)) {
            const std::size_t before = pending_.size();
            if (c.warm) {
                if (board != nullptr && board_runs_warm_reads) board->run("warm-up read", 1e-6);
                if (warm_ns > 0) record(c.tag, "warm kernel", warm_ns, c.stream, true, true);
            } else {
                produce(c.handle, c.stream, c.tag);
            }
            for (std::size_t i = before; i < pending_.size(); ++i)
                graph_records_.insert(pending_[i].start_ns);
        }
    }
    std::unique_ptr<replay::EnergyMeter> energy_meter(std::string& why) override {
        if (board == nullptr) return replay::Backend::energy_meter(why);
        return std::make_unique<BoardMeter>(*board);
    }

    std::vector<Call> of(const std::string& what) const {
        std::vector<Call> out;
        for (const auto& c : calls)
            if (c.what == what) out.push_back(c);
        return out;
    }

  private:
    std::vector<std::string> board_keys_;  // per handle: keys_ or a copy's "@n" key
    std::vector<std::uint32_t> runs_as_;   // per handle: the prepared handle whose time it takes
    int copies_ = 0;
    [[noreturn]] static void die() {
        const rlimit no_core{0, 0};
        setrlimit(RLIMIT_CORE, &no_core);
        std::abort();
    }
    void check_poison() const {
        if (poisoned_) throw std::runtime_error("fake device-side assert triggered (710)");
    }
    bool poisoned_ = false;
    struct Captured {
        std::uint32_t handle;
        int stream;
        std::uint64_t tag;
        bool warm;
    };
    void add(Call c) {
        c.phase = phase_;
        c.captured = capturing_;
        if (clock != nullptr) c.host_ns = clock->now;
        calls.push_back(std::move(c));
    }
    void produce(std::uint32_t handle, int stream, std::uint64_t tag) {
        const std::string& key = keys_.at(handle);
        if (board != nullptr)
            board->run(board_keys_.at(handle),
                       1e-6 * static_cast<double>(time_scale * (runs_as_.at(handle) + 1)));
        if (board != nullptr && recording_ && record_gap_s > 0)
            board->wait_for_host(record_gap_s, record_gap_w);
        if (phase_ == replay::Phase::Timed && abort_when_timed.count(key)) die();
        if (auto it = per_kernel.find(key); it != per_kernel.end()) {
            bool first = true;
            for (const auto& [name, ns] : it->second) {
                std::string n = name;
                if (first && phase_ == replay::Phase::Timed && renamed_when_timed.count(key))
                    n = renamed_when_timed.at(key);
                first = false;
                record(tag, n, ns, stream, true, false);
            }
            return;
        }
        record(tag, "recipe label", time_scale * 1000 * static_cast<std::int64_t>(handle + 1),
               stream, false, false);
    }
    void record(std::uint64_t tag, const std::string& name, std::int64_t ns, int stream,
                bool per_kernel_record, bool warm) {
        if (!recording_) return;
        replay::TimedActivity a;
        a.tag = tag;
        a.name = name;
        if (stamp_steady_clock)
            clock_ = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::steady_clock::now().time_since_epoch())
                         .count();
        a.start_ns = clock_;
        a.end_ns = clock_ + ns;
        a.stream = stream;
        a.per_kernel = per_kernel_record;
        a.warm_read = warm;
        if (auto g = grid_of.find(name); g != grid_of.end() && per_kernel_record)
            a.grid = g->second;
        if (auto l = library_lane.find(name); l != library_lane.end() && per_kernel_record) {
            a.lane = l->second.first;
            a.start_ns = clock_ + l->second.second;
            a.end_ns = a.start_ns + ns;
            pending_.push_back(a);
            return;
        }
        clock_ += ns + 500;
        pending_.push_back(a);
    }
    std::vector<std::string> keys_;  // handle -> instance key
    std::vector<replay::TimedActivity> pending_;
    std::int64_t clock_ = 1'000'000;  // the made-up GPU's
    replay::Phase phase_ = replay::Phase::Plan;
    bool recording_ = true;
    bool capturing_ = false;
    std::vector<Captured> captured_;
    std::vector<std::vector<Captured>> graphs_;
    std::set<std::int64_t> graph_records_;  // start times of records a graph launch made
    int collects_ = 0;
};

const replay::KernelResult& kernel_named(const replay::Report& r, const std::string& name) {
    for (const auto& k : r.kernels)
        if (k.name == name) return k;
    throw std::runtime_error("no kernel " + name);
}

// ---- unique mode ------------------------------------------------------------------------------

// One stream: relu (storage 1), GEMM + split-K reduction (A in storage 10), relu (storage 2),
// GEMM + reduction (storage 11), relu (storage 1 again), a copy.
std::unique_ptr<Analysis> unique_trace() {
    TraceBuilder t;
    t.op("aten::relu", 100, 20);
    t.launch("relu_k", 105, 1000, 3);
    t.op("aten::mm", 130, 20);
    t.launch("gemm_k", 135, 1010, 10);
    t.launch("splitk_reduce", 140, 1021, 1);
    t.op("aten::relu", 160, 20);
    t.launch("relu_k", 165, 1030, 4);
    t.op("aten::mm", 190, 20);
    t.launch("gemm_k", 195, 1040, 12);
    t.launch("splitk_reduce", 200, 1053, 1);
    t.op("aten::relu", 220, 20);
    t.launch("relu_k", 225, 1060, 3);
    t.op("aten::copy_", 250, 20);
    t.launch("Memcpy DtoD (Device -> Device)", 255, 1070, 2, 7, true);
    // Node order is launch order: relu, gemm, reduce, relu, gemm, reduce, relu, copy.
    const std::vector<Recipe> recipes = {relu(1),  gemm(10),       gemm(10, true), relu(2),
                                         gemm(11), gemm(11, true), relu(1),        copy()};
    return analysis_of(t, "unique_trace.json",
                       [&](const std::string&, std::size_t n) { return recipes.at(n); });
}

replay::DriverOptions unique_options(replay::Context context, int warmup = 2, int runs = 3) {
    replay::DriverOptions o;
    o.context = context;
    o.warmup = warmup;
    o.runs = runs;
    o.sequential_check = false;
    return o;
}

// The issues of work (not of predecessors) with the calls that came before each since the last
// one, as "flush evict_code issue(key#tag) warm(key)" lines, per template in order.
std::vector<std::string> timed_sequence(const FakeBackend& b) {
    std::vector<std::string> lines;
    std::string line;
    for (const auto& c : b.calls) {
        if (c.what == "flush" || c.what == "evict_code")
            line += c.what + " ";
        else if (c.what == "warm")
            line += "warm(" + c.recipe + ") ";
        else if (c.what == "issue")
            line += "issue(" + c.recipe + "#" + std::to_string(c.tag) + ") ";
        else
            continue;
        // A run ends with the work's own issue: predecessors are issued with tag 0 before warm.
        if (c.what == "issue" && line.find("warm(" + c.recipe + ")") != std::string::npos) {
            lines.push_back(line);
            line.clear();
        }
    }
    return lines;
}

TEST(Drivers, UniquePlanCyclesInstancesWithTheirPredecessors) {
    auto a = unique_trace();
    ASSERT_EQ(a->kernels.size(), 4u);
    FakeBackend b;
    const replay::Report r =
        replay::replay_unique(*a, b, unique_options(replay::Context::Recorded));

    const std::string relu1 = relu(1).instance_key(), relu2 = relu(2).instance_key();
    const std::string gemm10 = gemm(10).instance_key(), gemm11 = gemm(11).instance_key();
    const std::string cp = copy().instance_key();
    // Three templates in recorded order: relu (two distinct instances: the third relu repeats
    // the first's storage), GEMM + reduction (two instances), the copy. Each work issue comes
    // after an L2 eviction, its recorded predecessor (untimed, tag 0) and the read-in of its
    // inputs; the first relu has no predecessor. The eviction empties the instruction caches
    // too (--instruction-cache cold, the default).
    std::vector<std::string> expected;
    auto run = [&](const std::string& work, const std::string& before, int tag) {
        std::string line = "flush evict_code ";
        if (!before.empty()) line += "issue(" + before + "#0) ";
        line += "warm(" + work + ") issue(" + work + "#" + std::to_string(tag) + ") ";
        expected.push_back(line);
    };
    // Warmup 2 then runs 3, cycling through the instances: 0 1 | 0 1 0.
    for (int tag : {0, 0, 1, 2, 3}) {
        const bool first = tag == 0 ? expected.size() % 2 == 0 : tag % 2 == 1;
        run(first ? relu1 : relu2, first ? "" : gemm10, tag);
    }
    for (int tag : {0, 0, 1, 2, 3}) {
        const bool first = tag == 0 ? expected.size() % 2 == 1 : tag % 2 == 1;
        run(first ? gemm10 : gemm11, first ? relu1 : relu2, tag);
    }
    for (int tag : {0, 0, 1, 2, 3}) run(cp, relu1, tag);
    EXPECT_EQ(timed_sequence(b), expected);

    // One stream; every template ends its warmup and its runs with a synchronize and a collect.
    ASSERT_FALSE(b.of("streams").empty());
    EXPECT_EQ(b.of("streams").front().value, 1);
    EXPECT_EQ(b.of("sync").size(), 6u);
    EXPECT_EQ(b.of("collect").size(), 6u);
    // Each distinct instance is prepared once, whatever the number of runs.
    std::map<std::string, int> prepares;
    for (const auto& c : b.of("prepare")) ++prepares[c.recipe];
    EXPECT_EQ(prepares, (std::map<std::string, int>{
                            {relu1, 1}, {relu2, 1}, {gemm10, 1}, {gemm11, 1}, {cp, 1}}));

    // Whole-issue records: one sample per timed run, the GEMM issue split between the GEMM and
    // its reduction by the first instance's recorded shares (10 : 1).
    const auto& relu_k = kernel_named(r, "relu_k");
    EXPECT_EQ(relu_k.outcome, KernelOutcome::Replayed);
    EXPECT_EQ(relu_k.samples_us.size(), 3u);
    const auto& gemm_k = kernel_named(r, "gemm_k");
    const auto& reduce = kernel_named(r, "splitk_reduce");
    EXPECT_EQ(gemm_k.outcome, KernelOutcome::Replayed);
    EXPECT_EQ(reduce.outcome, KernelOutcome::IssuedWithOp);
    ASSERT_EQ(gemm_k.samples_us.size(), 3u);
    ASSERT_EQ(reduce.samples_us.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i)
        EXPECT_NEAR(gemm_k.samples_us[i] / (gemm_k.samples_us[i] + reduce.samples_us[i]),
                    10.0 / 11.0, 1e-3);
    EXPECT_FALSE(gemm_k.name_match);  // whole-issue records carry the recipe's label
    EXPECT_EQ(kernel_named(r, "Memcpy DtoD (Device -> Device)").samples_us.size(), 3u);
    EXPECT_EQ(r.mode, "unique");
    EXPECT_EQ(r.backend, "fake");
}

TEST(Drivers, UniqueContextDecidesWhatRunsBeforeATimedRun) {
    const std::string relu1 = relu(1).instance_key(), gemm10 = gemm(10).instance_key();
    {  // previous: the predecessor without eviction or read-in
        auto a = unique_trace();
        FakeBackend b;
        replay::replay_unique(*a, b, unique_options(replay::Context::Previous, 0, 2));
        EXPECT_TRUE(b.of("flush").empty());
        EXPECT_TRUE(b.of("warm").empty());
        // Runs 1 and 2 of the GEMM template: each instance after its own predecessor.
        std::vector<std::string> gemm_runs;
        const auto& calls = b.calls;
        for (std::size_t i = 1; i < calls.size(); ++i)
            if (calls[i].what == "issue" && calls[i].recipe.find("aten::mm") != std::string::npos &&
                calls[i].tag > 0)
                gemm_runs.push_back(calls[i - 1].recipe + " -> " + calls[i].recipe);
        EXPECT_EQ(gemm_runs, (std::vector<std::string>{
                                 relu1 + " -> " + gemm10,
                                 relu(2).instance_key() + " -> " + gemm(11).instance_key()}));
    }
    {  // none: the kernel back to back with itself, no predecessor
        auto a = unique_trace();
        FakeBackend b;
        replay::replay_unique(*a, b, unique_options(replay::Context::None, 1, 4));
        EXPECT_TRUE(b.of("flush").empty());
        EXPECT_TRUE(b.of("warm").empty());
        std::vector<std::string> copy_template;  // the issues after the last GEMM one
        for (const auto& c : b.of("issue")) {
            if (c.recipe.find("aten::mm") != std::string::npos)
                copy_template.clear();
            else
                copy_template.push_back(c.recipe);
        }
        // One warmup and four runs of the copy alone (its recorded predecessor is a relu).
        EXPECT_EQ(copy_template, std::vector<std::string>(5, copy().instance_key()));
        EXPECT_EQ(b.of("issue").size(), 15u);
    }
    {  // --l2-flush: an eviction right before every work issue, after the read-in
        auto a = unique_trace();
        FakeBackend b;
        auto o = unique_options(replay::Context::Recorded, 0, 1);
        o.l2_flush = true;
        replay::replay_unique(*a, b, o);
        const auto& calls = b.calls;
        std::size_t work_issues = 0;
        for (std::size_t i = 1; i < calls.size(); ++i)
            if (calls[i].what == "issue" && calls[i].tag > 0) {
                ++work_issues;
                EXPECT_EQ(calls[i - 1].what, "flush");
                EXPECT_EQ(calls[i - 2].what, "warm");
            }
        EXPECT_EQ(work_issues, 3u);
    }
}

TEST(Drivers, UniqueEmptiesTheInstructionCachesUnlessAskedWarmAndSaysWhich) {
    for (auto cache : {replay::InstructionCache::Auto, replay::InstructionCache::Cold,
                       replay::InstructionCache::Warm}) {
        auto a = unique_trace();  // eager kernels: auto is cold
        FakeBackend b;
        auto o = unique_options(replay::Context::Recorded, 1, 2);
        o.instruction_cache = cache;
        const replay::Report r = replay::replay_unique(*a, b, o);
        // Three templates of one warmup and two runs: an eviction before each.
        EXPECT_EQ(b.of("flush").size(), 9u);
        const bool cold = cache != replay::InstructionCache::Warm;
        EXPECT_EQ(b.of("evict_code").size(), cold ? 9u : 0u);
        for (std::size_t i = 0; i < b.calls.size(); ++i)
            if (b.calls[i].what == "evict_code") {
                EXPECT_EQ(b.calls[i - 1].what, "flush");
            }
        std::string said;
        for (const auto& [key, value] : r.options)
            if (key == "instruction_cache") said = value;
        EXPECT_EQ(said, cache == replay::InstructionCache::Auto ? "auto" : cold ? "cold" : "warm");
    }
    {  // --context previous: no eviction of either cache
        auto a = unique_trace();
        FakeBackend b;
        replay::replay_unique(*a, b, unique_options(replay::Context::Previous, 1, 2));
        EXPECT_TRUE(b.of("flush").empty());
        EXPECT_TRUE(b.of("evict_code").empty());
    }
}

// One cudaGraphLaunch of `names` (back to back on stream 7), then an eager relu_k; graph node n
// gets the recipe relu(n + 1).
std::unique_ptr<Analysis> graph_then_eager(const std::vector<std::string>& names,
                                           const std::string& file) {
    TraceBuilder t;
    t.graph_launch(names, 100, 1000, 5);
    t.op("aten::relu", 200, 20);
    t.launch("relu_k", 205, 1100, 5);
    return analysis_of(t, file, [](const std::string&, std::size_t n) {
        return relu(static_cast<std::int64_t>(n) + 1);
    });
}

// The report's first note that holds `part`, or "".
std::string note_with(const replay::Report& r, const std::string& part) {
    for (const auto& n : r.notes)
        if (n.find(part) != std::string::npos) return n;
    return {};
}

// A kernel recorded inside a CUDA graph right after another node of the same launch is timed
// inside a graph after its recorded predecessor (a node's record is longer than the same
// kernel's launched alone); the first node of a launch, an eager launch and --no-graph are
// issued directly, and a backend without graphs issues everything directly, saying so.
TEST(Drivers, UniqueTimesAKernelRecordedInsideAGraphInsideOneAfterItsPredecessor) {
    auto a = graph_then_eager({"relu_k", "gelu_k", "relu_k", "gelu_k"}, "graph_unique.json");
    const auto note_of = [](const replay::Report& r) {
        return note_with(r, "kernels recorded inside a CUDA graph");
    };
    // Every run issued directly, timed all the same, and the note says why.
    const auto all_direct = [&](const replay::Report& r, const std::string& why) {
        EXPECT_EQ(kernel_named(r, "gelu_k").samples_us.size(), 4u);
        EXPECT_NE(note_of(r).find("0 of 2 timed so"), std::string::npos) << note_of(r);
        EXPECT_NE(note_of(r).find("the others were issued directly (" + why + ")"),
                  std::string::npos)
            << note_of(r);
        EXPECT_EQ(r.option("graph_nodes"), "alone");
    };
    const std::string gelu1 = relu(2).instance_key(), gelu3 = relu(4).instance_key();
    {
        FakeBackend b;
        b.graphs = true;
        const replay::Report r =
            replay::replay_unique(*a, b, unique_options(replay::Context::Recorded, 1, 4));
        // relu_k's template comes first: its in-graph instance (node 2, after gelu_k's node 1),
        // then gelu_k's two (nodes 1 and 3, each after a relu_k node). Each is captured once:
        // its predecessor untimed, its warm-up reads, then itself. relu_k's first node (the
        // first of its launch) and its eager launch are issued directly.
        std::vector<std::string> captured;
        for (const auto& c : b.calls)
            if (c.captured && (c.what == "issue" || c.what == "warm"))
                captured.push_back(c.what + " " + c.recipe + (c.tag ? " timed" : ""));
        const std::string relu0 = relu(1).instance_key(), relu2 = relu(3).instance_key();
        const std::vector<std::string> expected = {
            "issue " + gelu1, "warm " + relu2, "issue " + relu2 + " timed",
            "issue " + relu0, "warm " + gelu1, "issue " + gelu1 + " timed",
            "issue " + relu2, "warm " + gelu3, "issue " + gelu3 + " timed"};
        EXPECT_EQ(captured, expected);
        EXPECT_EQ(b.of("begin_capture").size(), 3u);
        // gelu_k: 1 warmup and 4 runs, each a launch of its instance's graph; relu_k's in-graph
        // instance is the second of three, cycled (warmup 0, runs 0 1 2 0): one launch.
        EXPECT_EQ(b.of("launch_graph").size(), 5u + 1u);
        EXPECT_EQ(kernel_named(r, "gelu_k").samples_us.size(), 4u);
        EXPECT_EQ(kernel_named(r, "relu_k").samples_us.size(), 4u);
        EXPECT_NE(note_of(r).find("2 of 2 timed so"), std::string::npos) << note_of(r);
        // --instruction-cache auto: the code stays warm for the graph launches, and is evicted
        // before relu_k's four direct runs (its first-of-launch node, its eager launch).
        EXPECT_EQ(b.of("evict_code").size(), 4u);
        EXPECT_EQ(r.option("graph_nodes"), "in-graph");
    }
    {  // --no-graph
        FakeBackend b;
        b.graphs = true;
        auto o = unique_options(replay::Context::Recorded, 1, 4);
        o.graph = false;
        const replay::Report r = replay::replay_unique(*a, b, o);
        EXPECT_TRUE(b.of("begin_capture").empty());
        all_direct(r, "--no-graph");
    }
    {  // a backend without graphs
        FakeBackend b;
        const replay::Report r =
            replay::replay_unique(*a, b, unique_options(replay::Context::Recorded, 1, 4));
        EXPECT_TRUE(b.of("launch_graph").empty());
        all_direct(r, "the first: the fake has no graphs");
    }
}

TEST(Drivers, UniqueWarmupAndRunCounts) {
    auto a = unique_trace();
    FakeBackend b;
    replay::replay_unique(*a, b, unique_options(replay::Context::None, 4, 7));
    std::map<std::string, std::pair<int, int>> counts;  // key -> warmups, runs
    for (const auto& c : b.of("issue"))
        (c.tag == 0 ? counts[c.recipe].first : counts[c.recipe].second)++;
    // Two relu instances cycled: warmups 0 1 0 1, runs 0 1 0 1 0 1 0.
    EXPECT_EQ(counts[relu(1).instance_key()], std::make_pair(2, 4));
    EXPECT_EQ(counts[relu(2).instance_key()], std::make_pair(2, 3));
    EXPECT_EQ(counts[copy().instance_key()], std::make_pair(4, 7));
    // Tags of the runs: 1..7 per template.
    std::vector<std::uint64_t> copy_tags;
    for (const auto& c : b.of("issue"))
        if (c.recipe == copy().instance_key() && c.tag > 0) copy_tags.push_back(c.tag);
    EXPECT_EQ(copy_tags, (std::vector<std::uint64_t>{1, 2, 3, 4, 5, 6, 7}));
}

TEST(Drivers, PerKernelRecordsAreMatchedByName) {
    auto a = unique_trace();
    FakeBackend b;
    // cuBLAS ran the reduction before a helper kernel and the GEMM: names decide, not order.
    for (auto storage : {10, 11})
        b.per_kernel[gemm(storage).instance_key()] = {
            {"splitk_reduce", 2000}, {"helper_k", 100}, {"gemm_k", 20000}};
    const replay::Report r =
        replay::replay_unique(*a, b, unique_options(replay::Context::None, 0, 2));
    const auto& gemm_k = kernel_named(r, "gemm_k");
    EXPECT_EQ(gemm_k.samples_us, (std::vector<double>{20.0, 20.0}));
    EXPECT_TRUE(gemm_k.name_match);
    EXPECT_EQ(kernel_named(r, "splitk_reduce").samples_us, (std::vector<double>{2.0, 2.0}));
}

TEST(Drivers, ARecordOfAnotherGridIsNamedInTheKernelAndTheNotes) {
    auto a = unique_trace();
    FakeBackend b;
    for (auto storage : {10, 11})
        b.per_kernel[gemm(storage).instance_key()] = {{"splitk_reduce", 2000}, {"gemm_k", 20000}};
    b.grid_of["gemm_k"] = {64, 2, 1};        // the recording launched [1, 1, 1]
    b.grid_of["splitk_reduce"] = {1, 1, 1};  // as recorded
    const replay::Report r =
        replay::replay_unique(*a, b, unique_options(replay::Context::None, 0, 2));
    const auto& gemm_k = kernel_named(r, "gemm_k");
    EXPECT_EQ(gemm_k.outcome, KernelOutcome::Replayed);
    EXPECT_EQ(gemm_k.replayed_grids, (std::vector<std::array<std::int32_t, 3>>{{64, 2, 1}}));
    EXPECT_TRUE(kernel_named(r, "splitk_reduce").replayed_grids.empty());
    const auto note = std::find_if(r.notes.begin(), r.notes.end(), [](const std::string& n) {
        return n.find("another launch grid") != std::string::npos;
    });
    ASSERT_NE(note, r.notes.end());
    EXPECT_NE(note->find("1 kernel(s)"), std::string::npos) << *note;
    EXPECT_NE(note->find("gemm_k ran [64, 2, 1]"), std::string::npos) << *note;
}

TEST(Drivers, AnIssueThatRanOtherKernelsSharesTheirTimeByRecordedDurations) {
    auto a = unique_trace();
    FakeBackend b;
    // At another shape (--set-dims) cuBLASLt runs the split-K GEMM as one kernel of another
    // name: the issue's time is the GEMM's and its reduction's together, shared by their
    // recorded medians, not a failure of both.
    for (auto storage : {10, 11})
        b.per_kernel[gemm(storage).instance_key()] = {{"gemm_64x64_k", 24000}};
    const replay::Report r =
        replay::replay_unique(*a, b, unique_options(replay::Context::None, 0, 2));
    const auto& gemm_k = kernel_named(r, "gemm_k");
    const auto& reduce = kernel_named(r, "splitk_reduce");
    EXPECT_EQ(gemm_k.outcome, KernelOutcome::Replayed);
    ASSERT_EQ(gemm_k.samples_us.size(), 2u);
    ASSERT_EQ(reduce.samples_us.size(), 2u);
    // The first GEMM's recorded 10 us and its reduction's 1 us set the template's shares.
    EXPECT_NEAR(gemm_k.samples_us[0], 24.0 * 10.0 / 11.0, 1e-2);
    EXPECT_NEAR(reduce.samples_us[1], 24.0 * 1.0 / 11.0, 1e-2);
    EXPECT_NEAR(gemm_k.samples_us[0] + reduce.samples_us[0], 24.0, 1e-2);
    EXPECT_FALSE(gemm_k.name_match);
    EXPECT_EQ(gemm_k.replayed_names, (std::vector<std::string>{"gemm_64x64_k"}));
    EXPECT_NE(gemm_k.reason.find("shared by the recorded durations"), std::string::npos)
        << gemm_k.reason;
}

TEST(Drivers, ARecordThatIsNotTheKernelsOwnFailsTheKernel) {
    auto a = unique_trace();
    FakeBackend b;
    // The GEMM's issue came back with its workspace memset only: never a 0.3 us GEMM sample.
    for (auto storage : {10, 11})
        b.per_kernel[gemm(storage).instance_key()] = {{"Memset (Device)", 300}};
    const replay::Report r =
        replay::replay_unique(*a, b, unique_options(replay::Context::None, 0, 2));
    const auto& gemm_k = kernel_named(r, "gemm_k");
    EXPECT_EQ(gemm_k.outcome, KernelOutcome::Failed);
    EXPECT_TRUE(gemm_k.samples_us.empty());
    EXPECT_NE(gemm_k.reason.find("Memset (Device)"), std::string::npos) << gemm_k.reason;
    EXPECT_EQ(kernel_named(r, "relu_k").outcome, KernelOutcome::Replayed);
}

TEST(Drivers, AFailingIssueMarksItsKernelsFailedAndTheRunGoesOn) {
    auto a = unique_trace();
    FakeBackend b;
    b.fail_issue.insert(relu(2).instance_key());
    b.skip.insert(copy().instance_key());
    const replay::Report r = replay::replay_unique(*a, b, unique_options(replay::Context::None));
    const auto& relu_k = kernel_named(r, "relu_k");
    EXPECT_EQ(relu_k.outcome, KernelOutcome::Failed);
    EXPECT_NE(relu_k.reason.find("fake issue failure"), std::string::npos) << relu_k.reason;
    // The second warmup hit the failing instance: the template stopped there, no timed run.
    EXPECT_TRUE(relu_k.samples_us.empty());
    // The failed recipe is not issued again, the GEMM template still runs.
    EXPECT_EQ(kernel_named(r, "gemm_k").outcome, KernelOutcome::Replayed);
    EXPECT_EQ(kernel_named(r, "gemm_k").samples_us.size(), 3u);
    const auto& copy_k = kernel_named(r, "Memcpy DtoD (Device -> Device)");
    EXPECT_EQ(copy_k.outcome, KernelOutcome::Skipped);
    EXPECT_NE(copy_k.reason.find("fake cannot run"), std::string::npos);
    for (const auto& c : b.of("issue")) EXPECT_NE(c.recipe, copy().instance_key());
}

// ---- sequential mode --------------------------------------------------------------------------

// Two streams: relu on 7, an event recorded after it, stream 8 waits for it and runs a GEMM,
// then 47 us after the relu ended on stream 7 a copy; a host sync.
std::unique_ptr<Analysis> two_stream_trace() {
    TraceBuilder t;
    t.op("aten::relu", 100, 20);
    t.launch("relu_k", 105, 1000, 3, 7);
    t.call("cudaEventRecord", 110);
    t.call("cudaStreamWaitEvent", 125);
    t.op("aten::mm", 130, 20);
    t.launch("gemm_k", 135, 1004, 10, 8);
    t.op("aten::copy_", 160, 20);
    t.launch("Memcpy DtoD (Device -> Device)", 165, 1050, 2, 7, true);
    t.call("cudaDeviceSynchronize", 190);
    return analysis_of(t, "two_streams.json", [](const std::string& name, std::size_t) {
        return name == "relu_k" ? relu(1) : name == "gemm_k" ? gemm(10) : copy();
    });
}

bool has_note(const replay::Report& r, const std::string& text) {
    for (const auto& n : r.notes)
        if (n.find(text) != std::string::npos) return true;
    return false;
}

int slot_of(const Analysis& a, std::int64_t stream) {
    for (std::size_t i = 0; i < a.graph.streams().size(); ++i)
        if (a.graph.streams()[i].stream == stream) return static_cast<int>(i);
    throw std::runtime_error("no stream " + std::to_string(stream));
}

// The calls of a replay as lines: "warm 0 key", "issue 0 key #1", "wait 1<-0", "sync",
// "collect", "phase timed", "launch_graph 1", "begin_capture 0 all", "end_capture".
std::vector<std::string> call_lines(const FakeBackend& b) {
    std::vector<std::string> got;
    for (const auto& c : b.calls) {
        std::string line = c.what;
        // Appended piece by piece: `" " + std::string&&` trips GCC 12's -Wrestrict (PR105329).
        if (c.what == "issue" || c.what == "warm") {
            line.append(" ").append(std::to_string(c.stream)).append(" ").append(c.recipe);
            if (c.what == "issue") line.append(" #").append(std::to_string(c.tag));
        } else if (c.what == "wait")
            line += " " + std::to_string(c.stream) + "<-" + std::to_string(c.value);
        else if (c.what == "phase")
            line += c.value == 1 ? " timed" : " plan";
        else if (c.what == "launch_graph")
            line += " " + std::to_string(c.value);
        else if (c.what == "begin_capture")
            line += " " + std::to_string(c.stream) + (c.value ? " all" : " one");
        else if (c.what != "sync" && c.what != "collect" && c.what != "end_capture")
            continue;
        got.push_back(line);
    }
    return got;
}

// The host clock of each timed issue, from its iteration's first step (tag 1).
std::vector<std::int64_t> timed_issue_times(const FakeBackend& b) {
    std::vector<std::int64_t> at;
    std::int64_t start = 0;
    for (const auto& c : b.calls) {
        if (c.what != "issue" || c.phase != replay::Phase::Timed) continue;
        if (c.tag == 1) start = c.host_ns;
        at.push_back(c.host_ns - start);
    }
    return at;
}

// The intervals of the timed holds (Backend::hold_after), in order.
std::vector<std::int64_t> timed_holds(const FakeBackend& b) {
    std::vector<std::int64_t> holds;
    for (const auto& c : b.of("hold"))
        if (c.phase == replay::Phase::Timed) holds.push_back(c.value);
    return holds;
}

// One direct pass of two_stream_trace() as the fake backend logs it (streams 7 and 8 at their
// slots): read-in and issue of the relu on 7; 8 waits for 7, then the GEMM; on 7 the copy.
std::vector<std::string> two_stream_pass(int s7, int s8) {
    const std::string relu_key = relu(1).instance_key(), gemm_key = gemm(10).instance_key();
    const std::string copy_key = copy().instance_key();
    const std::string on7 = std::to_string(s7) + " ", on8 = std::to_string(s8) + " ";
    return {"warm " + on7 + relu_key,
            "issue " + on7 + relu_key + " #1",
            "wait " + std::to_string(s8) + "<-" + std::to_string(s7),
            "warm " + on8 + gemm_key,
            "issue " + on8 + gemm_key + " #2",
            "warm " + on7 + copy_key,
            "issue " + on7 + copy_key + " #3",
            "sync",
            "collect"};
}

TEST(Drivers, SequentialKeepsStreamsWaitsAndRecordedLaunchTimes) {
    auto a = two_stream_trace();
    ASSERT_EQ(a->graph.waits().size(), 1u);
    const int s7 = slot_of(*a, 7), s8 = slot_of(*a, 8);
    FakeBackend b;
    TestClock clock;
    b.clock = &clock;
    replay::DriverOptions o;
    o.pace = replay::Pace::Recorded;
    o.iterations = 2;
    clock.attach(o);
    replay::Timeline timeline;
    const replay::Report r = replay::replay_sequential(*a, b, o, &timeline);

    EXPECT_EQ(b.of("streams").front().value, 2);
    // One untimed pass of the plan, then the timed iterations between the phase changes. Each
    // pass in recorded order: read-in and issue of the relu on 7; stream 8 waits for 7, then
    // the GEMM; on 7 the copy.
    const std::vector<std::string> pass = two_stream_pass(s7, s8);
    std::vector<std::string> expected = pass;
    expected.push_back("phase timed");
    expected.insert(expected.end(), pass.begin(), pass.end());
    expected.insert(expected.end(), pass.begin(), pass.end());
    expected.push_back("phase plan");
    EXPECT_EQ(call_lines(b), expected);

    // Recorded pacing on the host: each timed issue at its recorded launch, counted from the
    // step's first launch (launches at 105, 135 and 165 us), in every iteration; the untimed pass
    // runs back to back.
    std::vector<std::int64_t> timed_at, untimed_at;
    std::int64_t iteration_start = 0;
    for (const auto& c : b.calls) {
        if (c.what == "issue" && c.phase == replay::Phase::Plan) untimed_at.push_back(c.host_ns);
        if (c.what != "issue" || c.phase != replay::Phase::Timed) continue;
        if (c.tag == 1) iteration_start = c.host_ns;
        timed_at.push_back(c.host_ns - iteration_start);
    }
    EXPECT_EQ(timed_at, (std::vector<std::int64_t>{0, 30'000, 60'000, 0, 30'000, 60'000}));
    EXPECT_EQ(untimed_at, (std::vector<std::int64_t>{0, 0, 0}));

    // One sample per recorded instance and timed iteration: the untimed pass gives none.
    for (const auto& k : r.kernels) {
        EXPECT_EQ(k.outcome, KernelOutcome::Replayed) << k.name;
        EXPECT_EQ(k.samples_us.size(), 2u) << k.name;
    }
    EXPECT_EQ(r.mode, "sequential");
    bool sync_note = false, plan_note = false;
    for (const auto& n : r.notes) {
        sync_note |= n.find("1 recorded host synchronisations") == 0;
        plan_note |=
            n.find("was issued once untimed before the timed iterations") != std::string::npos;
    }
    EXPECT_TRUE(sync_note);
    EXPECT_TRUE(plan_note);
    ASSERT_TRUE(r.timeline.has_value());
    EXPECT_EQ(r.timeline->issue_path, "direct");
    EXPECT_TRUE(r.timeline->first_uses.empty());
    ASSERT_EQ(r.timeline->iterations.size(), 2u);
    // The recorded step: relu 1000-1003 (stream 7), GEMM 1004-1014 (8), copy 1050-1052 (7).
    EXPECT_DOUBLE_EQ(r.timeline->recorded.span_us, 52);
    EXPECT_DOUBLE_EQ(r.timeline->recorded.kernel_us, 15);
    EXPECT_EQ(r.timeline->recorded.gaps, 1u);
    EXPECT_DOUBLE_EQ(r.timeline->recorded.max_gap_us, 47);
    EXPECT_DOUBLE_EQ(r.totals.recorded_span_us, 52);
    EXPECT_DOUBLE_EQ(r.totals.replayed_span_us, r.timeline->iterations.back().replayed.span_us);
    EXPECT_DOUBLE_EQ(r.totals.span_ratio, r.timeline->iterations.back().span_ratio);
    EXPECT_DOUBLE_EQ(r.timeline->iterations.back().issue_host_us, 60);

    // The timeline: the last iteration's three replayed activities on their recorded streams,
    // then the three recorded ones; each track starts at 0.
    ASSERT_EQ(timeline.items.size(), 6u);
    std::vector<std::int64_t> streams;
    double replayed_start = 1e300, recorded_start = 1e300;
    for (const auto& i : timeline.items) {
        streams.push_back(i.stream);
        (i.replayed ? replayed_start : recorded_start) =
            std::min(i.replayed ? replayed_start : recorded_start, i.start_us);
    }
    EXPECT_EQ(streams, (std::vector<std::int64_t>{7, 8, 7, 7, 8, 7}));
    EXPECT_TRUE(timeline.items[0].replayed && !timeline.items[3].replayed);
    EXPECT_EQ(timeline.items[0].iteration, 2);
    EXPECT_EQ(replayed_start, 0);
    EXPECT_EQ(recorded_start, 0);
    EXPECT_EQ(timeline.items[3].name, "relu_k");
    EXPECT_DOUBLE_EQ(timeline.items[4].start_us, 4);  // the GEMM 4 us after the relu
    EXPECT_DOUBLE_EQ(timeline.items[4].dur_us, 10);
}

TEST(Drivers, RecordedPacingHoldsEachStepOnTheDeviceClockUntilItsRecordedStart) {
    auto a = two_stream_trace();
    const int s7 = slot_of(*a, 7), s8 = slot_of(*a, 8);
    FakeBackend b;
    b.device_clock = true;
    TestClock clock;
    b.clock = &clock;
    replay::DriverOptions o;
    o.pace = replay::Pace::Recorded;
    o.pace_clock = replay::PaceClock::Device;
    clock.attach(o);
    const replay::Report r = replay::replay_sequential(*a, b, o, nullptr);

    // Timed: the clock's start on the first step's stream, which the other stream waits for;
    // then each step's waits and warm-up reads, its hold, its launch. The recorded starts: relu
    // 1000 us (7), GEMM 1004 (8), copy 1050 (7): each stream's first held the lead of 1 ms plus
    // its start after the clock's start, the copy 50 us after the relu's hold let go.
    std::vector<std::string> timed;
    bool in_timed = false;
    for (const auto& c : b.calls) {
        if (c.what == "phase") in_timed = c.value == 1;
        if (!in_timed || c.what == "phase" || c.what == "first_uses") continue;
        std::string line = c.what;
        if (c.stream >= 0) line += " " + std::to_string(c.stream);
        if (c.what == "hold") line += " +" + std::to_string(c.value);
        if (c.what == "wait") line += "<-" + std::to_string(c.value);
        if (c.what == "issue") line += " #" + std::to_string(c.tag);
        timed.push_back(line);
    }
    const std::string on7 = std::to_string(s7), on8 = std::to_string(s8);
    EXPECT_EQ(timed,
              (std::vector<std::string>{
                  "clock " + on7, "wait " + on8 + "<-" + on7, "warm " + on7,
                  "hold " + on7 + " +1000000", "issue " + on7 + " #1", "wait " + on8 + "<-" + on7,
                  "warm " + on8, "hold " + on8 + " +1004000", "issue " + on8 + " #2", "warm " + on7,
                  "hold " + on7 + " +50000", "issue " + on7 + " #3", "sync", "collect"}));
    // The host still launches at the recorded launch times (105, 135, 165 us).
    const std::vector<std::int64_t> at = timed_issue_times(b);
    EXPECT_EQ(at, (std::vector<std::int64_t>{0, 30'000, 60'000}));
    // The untimed plan pass starts the clock and holds once (their first launches are not the
    // timed phase's), then issues back to back with no hold per step.
    std::size_t plan_holds = 0, plan_clocks = 0;
    for (const auto& c : b.calls) {
        if (c.phase != replay::Phase::Plan) continue;
        plan_holds += c.what == "hold";
        plan_clocks += c.what == "clock";
        if (c.what == "hold") {
            EXPECT_EQ(c.value, 0);
        }
    }
    EXPECT_EQ(plan_holds, 1u);
    EXPECT_EQ(plan_clocks, 1u);
    bool said = false;
    for (const auto& [key, value] : r.options) said |= key == "pace_clock" && value == "device";
    EXPECT_TRUE(said);

    // A host late for a step's launch does not hold it (it would arrive after its time anyway)
    // and saves the launch: the relu's issue takes 45 us, past the GEMM's launch (+30 us) and,
    // with the GEMM's, the copy's (+60).
    {
        FakeBackend slow;
        slow.device_clock = true;
        TestClock c1;
        slow.clock = &c1;
        slow.issue_host_ns = 45'000;
        c1.attach(o);
        replay::replay_sequential(*a, slow, o, nullptr);
        EXPECT_EQ(timed_holds(slow), (std::vector<std::int64_t>{1'000'000}));
    }
    // Without a device clock, without recorded pacing, with --pace-clock host, or with auto on
    // the direct path (steps issued one by one), nothing is held.
    for (const int variant : {0, 1, 2, 3}) {
        FakeBackend plain;
        plain.device_clock = variant > 0;
        o.pace = variant == 1 ? replay::Pace::None : replay::Pace::Recorded;
        o.pace_clock = variant == 2   ? replay::PaceClock::Host
                       : variant == 3 ? replay::PaceClock::Auto
                                      : replay::PaceClock::Device;
        TestClock c2;
        plain.clock = &c2;
        c2.attach(o);
        replay::replay_sequential(*a, plain, o, nullptr);
        EXPECT_TRUE(plain.of("hold").empty());
        EXPECT_TRUE(plain.of("clock").empty());
    }
}

TEST(Drivers, HostPacedGapsFarFromTheRecordedOnesSayWhatWouldHoldThem) {
    // The fake runs each step as it is issued, back to back: the replayed gaps are nothing like
    // the recorded ones (4 and 46 us).
    auto a = two_stream_trace();
    const auto noted = [&](replay::PaceClock pace_clock, bool device_clock) {
        FakeBackend b;
        b.device_clock = device_clock;
        replay::DriverOptions o;
        o.pace = replay::Pace::Recorded;
        o.pace_clock = pace_clock;
        const replay::Report r = replay::replay_sequential(*a, b, o, nullptr);
        EXPECT_TRUE(r.timeline.has_value());
        if (r.timeline) {
            EXPECT_GT(std::abs(r.timeline->iterations.back().kernel_gap_ratio - 1.0), 0.1);
        }
        return has_note(r, "--pace-clock device where the host has time to spare");
    };
    EXPECT_TRUE(noted(replay::PaceClock::Auto, true));     // direct steps, paced by the host
    EXPECT_FALSE(noted(replay::PaceClock::Device, true));  // held: nothing to suggest
    EXPECT_FALSE(noted(replay::PaceClock::Host, true));    // the user chose the host
    EXPECT_FALSE(noted(replay::PaceClock::Auto, false));   // no clock to hold them on
}

TEST(Drivers, RecordedPacingNeverWaitsForALaunchAlreadyLate) {
    auto a = two_stream_trace();
    FakeBackend b;
    TestClock clock;
    b.clock = &clock;
    b.issue_host_ns = 45'000;  // the relu's issue takes longer than its recorded gap
    replay::DriverOptions o;
    o.pace = replay::Pace::Recorded;
    clock.attach(o);
    replay::replay_sequential(*a, b, o, nullptr);
    const std::vector<std::int64_t> at = timed_issue_times(b);
    // The GEMM (recorded at +30 us) goes out as soon as the relu's issue returns; the copy
    // (+60 us) waits for its time again: lateness does not accumulate.
    EXPECT_EQ(at, (std::vector<std::int64_t>{0, 45'000, 90'000}));
    // Without pacing nothing waits: every issue at once on the test clock.
    b.calls.clear();
    b.issue_host_ns = 0;
    o.pace = replay::Pace::None;
    replay::replay_sequential(*a, b, o, nullptr);
    std::set<std::int64_t> none_at;
    for (const auto& c : b.calls) {
        if (c.what == "issue") none_at.insert(c.host_ns);
    }
    EXPECT_EQ(none_at.size(), 1u) << "pace none must not wait";
}

TEST(Drivers, SequentialDoesAllItsSetUpBeforeTheTimedPhase) {
    auto a = two_stream_trace();
    FakeBackend b;
    b.graphs = true;
    replay::DriverOptions o;
    o.iterations = 3;
    o.graph = true;
    const replay::Report r = replay::replay_sequential(*a, b, o, nullptr);
    // In the Timed phase only issues, waits, warm-up reads, graph launches, synchronisation and
    // collection: nothing prepared, made, asked or captured there.
    const std::set<std::string> allowed = {"issue", "wait",    "warm",  "launch_graph",
                                           "sync",  "collect", "phase", "first_uses"};
    bool timed = false;
    for (const auto& c : b.calls) {
        timed |= c.phase == replay::Phase::Timed;
        if (c.phase == replay::Phase::Timed) {
            EXPECT_TRUE(allowed.count(c.what)) << c.what << " in the Timed phase";
        }
    }
    EXPECT_TRUE(timed);
    ASSERT_TRUE(r.timeline.has_value());
    EXPECT_TRUE(r.timeline->first_uses.empty());
    // first_uses is asked inside the Timed phase, after the last iteration.
    ASSERT_EQ(b.of("first_uses").size(), 1u);
    EXPECT_EQ(b.of("first_uses").front().phase, replay::Phase::Timed);
}

TEST(Drivers, ATraceRecordedAsCudaGraphsReplaysAsGraphsUnlessToldOtherwise) {
    // Most of the kernel time launched by cudaGraphLaunch: the steps are captured and launched as
    // graphs without --graph, with a note; --no-graph (graph = false) issues them directly.
    auto a = graph_then_eager({"relu_k", "relu_k", "relu_k"}, "graphs.json");
    const auto graph_note = [](const replay::Report& r) {
        return !note_with(r, "75.0% of the recorded kernel time was launched by cudaGraphLaunch")
                    .empty();
    };
    for (const std::optional<bool> option : {std::optional<bool>{}, std::optional<bool>{false}}) {
        FakeBackend b;
        b.graphs = true;
        replay::DriverOptions o;
        o.graph = option;
        const replay::Report r = replay::replay_sequential(*a, b, o, nullptr);
        ASSERT_TRUE(r.timeline.has_value());
        const bool auto_on = !option.has_value();
        EXPECT_EQ(r.timeline->issue_path, auto_on ? "graph" : "direct");
        EXPECT_EQ(b.of("launch_graph").empty(), !auto_on);
        EXPECT_EQ(graph_note(r), auto_on);
        bool said = false;
        for (const auto& [key, value] : r.options)
            said |= key == "graph" && value == (auto_on ? "auto" : "false");
        EXPECT_TRUE(said);
    }
    // An eager trace stays on the direct path by default.
    FakeBackend eager;
    eager.graphs = true;
    const replay::Report r =
        replay::replay_sequential(*two_stream_trace(), eager, replay::DriverOptions{}, nullptr);
    ASSERT_TRUE(r.timeline.has_value());
    EXPECT_EQ(r.timeline->issue_path, "direct");
}

TEST(Drivers, TheWarmUpRepeatsTheStepUntimedUntilItsTimeHasPassed) {
    // Each issue moves the clock by 1 ms and the step has three: a 10 ms warm-up takes four
    // passes after the plan pass (12 ms), none of them in the Timed phase; 0 ms takes none.
    for (const double warmup_ms : {10.0, 0.0}) {
        auto a = two_stream_trace();
        FakeBackend b;
        TestClock clock;
        b.clock = &clock;
        b.issue_host_ns = 1'000'000;
        replay::DriverOptions o;
        o.warmup_ms = warmup_ms;
        clock.attach(o);
        const replay::Report r = replay::replay_sequential(*a, b, o, nullptr);
        std::size_t untimed = 0, timed = 0;
        for (const auto& c : b.calls)
            if (c.what == "issue") ++(c.phase == replay::Phase::Timed ? timed : untimed);
        EXPECT_EQ(timed, 3u);
        EXPECT_EQ(untimed, warmup_ms > 0 ? 3u * 5 : 3u) << "warm-up of " << warmup_ms << " ms";
        bool noted = false;
        for (const auto& n : r.notes)
            noted |= n.find("warm-up: the step was repeated 4 time(s) untimed (12 ms") == 0;
        EXPECT_EQ(noted, warmup_ms > 0);
    }
}

TEST(Drivers, AFirstUseInTheTimedPhaseIsReported) {
    // A backend that reports what it made late: the report says it, and so do its notes.
    class LateBackend : public FakeBackend {
      public:
        std::vector<std::string> first_uses() override { return {"2 CUDA modules loaded"}; }
    };
    auto a = two_stream_trace();
    LateBackend b;
    const replay::Report r = replay::replay_sequential(*a, b, replay::DriverOptions{}, nullptr);
    ASSERT_TRUE(r.timeline.has_value());
    EXPECT_EQ(r.timeline->first_uses, std::vector<std::string>{"2 CUDA modules loaded"});
    bool noted = false;
    for (const auto& n : r.notes) noted |= n.find("2 CUDA modules loaded") != std::string::npos;
    EXPECT_TRUE(noted);
}

TEST(Drivers, UntaggedRecordsAreTiedToTheirStepsByStreamOrderAndName) {
    auto a = two_stream_trace();
    FakeBackend tagged, untagged;
    for (FakeBackend* b : {&tagged, &untagged}) {
        b->per_kernel[gemm(10).instance_key()] = {{"gemm_k", 20000}, {"splitk_reduce", 2000}};
        b->warm_ns = 700;
    }
    untagged.untag_when_timed = true;
    replay::DriverOptions o;
    o.iterations = 3;
    const replay::Report want = replay::replay_sequential(*a, tagged, o, nullptr);
    const replay::Report got = replay::replay_sequential(*a, untagged, o, nullptr);
    ASSERT_EQ(got.kernels.size(), want.kernels.size());
    for (std::size_t k = 0; k < want.kernels.size(); ++k) {
        EXPECT_EQ(got.kernels[k].samples_us, want.kernels[k].samples_us) << want.kernels[k].name;
        EXPECT_EQ(got.kernels[k].replayed_names, want.kernels[k].replayed_names);
    }
    EXPECT_TRUE(kernel_named(got, "gemm_k").name_match);
    for (const auto& it : got.timeline->iterations) {
        EXPECT_EQ(it.unattributed, 0u);
        // The warm-up reads were recognised as such: three of 700 ns each.
        EXPECT_DOUBLE_EQ(it.replayed.warm_read_us, 2.1);
    }
}

TEST(Drivers, RecordsThatStopMatchingAreLeftOutNotMisattributed) {
    // One stream: relu, GEMM (two kernels), relu, copy.
    TraceBuilder t;
    t.op("aten::relu", 100, 20);
    t.launch("relu_k", 105, 1000, 3);
    t.op("aten::mm", 130, 20);
    t.launch("gemm_k", 135, 1010, 10);
    t.launch("splitk_reduce", 140, 1021, 1);
    t.op("aten::relu", 160, 20);
    t.launch("relu_k", 165, 1030, 4);
    t.op("aten::copy_", 250, 20);
    t.launch("Memcpy DtoD (Device -> Device)", 255, 1070, 2, 7, true);
    Recipe described = gemm(10);
    described.reason = "cuBLASLt from the op's shapes";  // what the classifier said of it
    const std::vector<Recipe> recipes = {relu(1), described, gemm(10, true), relu(2), copy()};
    auto a = analysis_of(t, "mismatch.json",
                         [&](const std::string&, std::size_t n) { return recipes.at(n); });
    FakeBackend b;
    b.untag_when_timed = true;
    b.per_kernel[relu(1).instance_key()] = {{"relu_k", 3000}};
    b.per_kernel[relu(2).instance_key()] = {{"relu_k", 4000}};
    b.per_kernel[gemm(10).instance_key()] = {{"gemm_k", 10000}, {"splitk_reduce", 1000}};
    b.per_kernel[copy().instance_key()] = {{"Memcpy DtoD (Device -> Device)", 2000}};
    // In the timed iterations cuBLAS "picked" another GEMM kernel: its records no longer match.
    b.renamed_when_timed[gemm(10).instance_key()] = "other_gemm_k";
    replay::DriverOptions o;
    o.iterations = 2;
    const replay::Report r = replay::replay_sequential(*a, b, o, nullptr);
    // The GEMM is not timed and its records go to no neighbour; matching resumes at the relu
    // after it (the next issue whose records fit again), and the copy on its own stream is timed.
    EXPECT_EQ(kernel_named(r, "relu_k").samples_us, (std::vector<double>{3.0, 4.0, 3.0, 4.0}));
    EXPECT_TRUE(kernel_named(r, "gemm_k").samples_us.empty());
    EXPECT_EQ(kernel_named(r, "Memcpy DtoD (Device -> Device)").samples_us,
              (std::vector<double>{2.0, 2.0}));
    EXPECT_EQ(kernel_named(r, "gemm_k").outcome, KernelOutcome::Skipped);
    // Why, not its recipe's text (which stays, named as such).
    EXPECT_EQ(kernel_named(r, "gemm_k").reason,
              "no timed activity came back for it (its recipe: cuBLASLt from the op's shapes)");
    ASSERT_EQ(r.timeline->iterations.size(), 2u);
    EXPECT_EQ(r.timeline->iterations[0].unattributed, 2u);  // the GEMM's two records
    // The figures still see every record the iteration ran.
    EXPECT_EQ(r.timeline->iterations[0].replayed.activities, 5u);
    bool noted = false;
    for (const auto& n : r.notes)
        noted |= n.find("could not be tied to their steps") != std::string::npos &&
                 n.find("'other_gemm_k'") != std::string::npos;
    EXPECT_TRUE(noted);
}

// cuDNN's RNNs run part of an op on streams of their own. Untagged, those records are tied to the
// op on their own stream's order: on the issuing stream they start after later ops' records.
TEST(Drivers, RecordsOnALibrarysOwnStreamAreTiedToTheStepThatIssuedThem) {
    TraceBuilder t;
    t.op("aten::relu", 100, 20);
    t.launch("relu_k", 105, 1000, 3);
    t.op("aten::_cudnn_rnn", 130, 20);
    t.launch("gemm_k", 135, 1010, 10);
    t.launch("rnn_cell", 140, 1030, 1, 21);
    t.op("aten::relu", 160, 20);
    t.launch("relu_k", 165, 1040, 4);
    const std::vector<Recipe> recipes = {relu(1), gemm(10), gemm(10, true), relu(2)};
    auto a = analysis_of(t, "library_stream.json",
                         [&](const std::string&, std::size_t n) { return recipes.at(n); });
    FakeBackend tagged, untagged;
    for (FakeBackend* b : {&tagged, &untagged}) {
        b->per_kernel[relu(1).instance_key()] = {{"relu_k", 3000}};
        b->per_kernel[relu(2).instance_key()] = {{"relu_k", 4000}};
        b->per_kernel[gemm(10).instance_key()] = {{"gemm_k", 10000}, {"rnn_cell", 1000}};
        b->library_lane["rnn_cell"] = {901, 20000};  // after the second relu's record
    }
    untagged.untag_when_timed = true;
    replay::DriverOptions o;
    o.iterations = 2;
    const replay::Report want = replay::replay_sequential(*a, tagged, o, nullptr);
    const replay::Report got = replay::replay_sequential(*a, untagged, o, nullptr);
    EXPECT_EQ(kernel_named(got, "rnn_cell").samples_us, (std::vector<double>{1.0, 1.0}));
    EXPECT_EQ(kernel_named(got, "gemm_k").samples_us, (std::vector<double>{10.0, 10.0}));
    ASSERT_EQ(got.kernels.size(), want.kernels.size());
    for (std::size_t k = 0; k < want.kernels.size(); ++k)
        EXPECT_EQ(got.kernels[k].samples_us, want.kernels[k].samples_us) << want.kernels[k].name;
    for (const auto& it : got.timeline->iterations) EXPECT_EQ(it.unattributed, 0u);
    EXPECT_FALSE(has_note(got, "could not be tied to their steps"));
    // The op ran kernels on two streams: the report says how much they overlapped (the fake's
    // ran apart; the recorded ones too).
    EXPECT_TRUE(has_note(got, "1 op ran kernels on several streams"));
    EXPECT_TRUE(has_note(got, "at once for 0 us of 11 us busy, recorded 0 us of 11 us"));
}

// cuDNN's RNN forks the op's stream to streams of its own and joins them back: an op that waits
// for the RNN waits for the stream the RNN's issue ran on, since the recorded streams its kernels
// ran on get no work in the replay (the next op would overlap the RNN's last kernels).
TEST(Drivers, AWaitForALibrarysOwnStreamWaitsForTheStreamItsOpWasIssuedOn) {
    TraceBuilder t;
    t.op("aten::relu", 100, 20);
    t.launch("relu_k", 105, 1000, 3);
    t.call("cudaEventRecord", 110);
    t.op("aten::_cudnn_rnn", 130, 30);
    t.call("cudaStreamWaitEvent", 132);
    t.launch("gemm_k", 135, 1010, 10, 13);
    t.launch("rnn_cell", 140, 1030, 1, 21);
    t.call("cudaEventRecord", 145);
    t.call("cudaStreamWaitEvent", 150);
    t.op("aten::relu", 170, 20);
    t.launch("relu_k", 175, 1040, 4);
    const std::vector<Recipe> recipes = {relu(1), gemm(10), gemm(10, true), relu(2)};
    auto a = analysis_of(t, "library_wait.json",
                         [&](const std::string&, std::size_t n) { return recipes.at(n); });
    FakeBackend b;
    replay::DriverOptions o;
    replay::replay_sequential(*a, b, o, nullptr);
    const int s7 = slot_of(*a, 7), s13 = slot_of(*a, 13);
    std::set<std::pair<int, std::int64_t>> waits;  // (waiter, producer)
    for (const Call& c : b.of("wait")) waits.insert({c.stream, c.value});
    EXPECT_EQ(waits, (std::set<std::pair<int, std::int64_t>>{{s13, s7}, {s7, s13}}));
}

// Issuing an aten op re-creates everything launched inside it, its child ops' kernels, memsets
// and copies too. LSTM training's embedding_dense_backward (sorts and segment sums under child
// ops, memsets between them) was issued once per child, nine times in all, with nine times its
// memsets. On every bundled trace, no op instance is issued by two steps and no node is in two.
TEST(Drivers, EveryBundledTraceIssuesEachOpOnce) {
    namespace fs = std::filesystem;
    std::size_t traces = 0;
    for (const char* dir : {"h200", "h100"}) {
        for (const auto& entry : fs::directory_iterator(replay::testing::trace_path(dir))) {
            const std::string name = entry.path().filename().string();
            if (!name.ends_with(".json.gz") || name.find(".et.") != std::string::npos) continue;
            SCOPED_TRACE(name);
            replay::AnalysisOptions options;
            options.trace_path = entry.path().string();
            const auto a = replay::analyze(options);
            const replay::Trace& trace = a->graph.trace();
            std::set<std::uint32_t> issued_ops, seen_nodes;
            for (const replay::Step& step : replay::plan_steps(a->graph, a->recipes)) {
                for (auto n : step.nodes) EXPECT_TRUE(seen_nodes.insert(n).second) << "node " << n;
                const Recipe& r = a->recipes.decision(step.issue_node);
                const auto* aten = std::get_if<replay::AtenRecipe>(&r.detail);
                if (aten == nullptr || r.tier != Tier::AtenOp) continue;
                std::uint32_t q = a->graph.nodes()[step.issue_node].op;
                while (q != replay::kNoIndex && trace.names.view(trace.cpu_ops[q].name) != aten->op)
                    q = trace.cpu_ops[q].parent;
                if (q != replay::kNoIndex) {
                    EXPECT_TRUE(issued_ops.insert(q).second) << aten->op << " issued twice";
                }
            }
            // Nor inside another issued op (which re-creates it).
            for (std::uint32_t op : issued_ops)
                for (std::uint32_t q = trace.cpu_ops[op].parent; q != replay::kNoIndex;
                     q = trace.cpu_ops[q].parent)
                    EXPECT_FALSE(issued_ops.count(q))
                        << trace.names.view(trace.cpu_ops[op].name) << " issued inside "
                        << trace.names.view(trace.cpu_ops[q].name);
            ++traces;
        }
    }
    EXPECT_GT(traces, 40u);
}

// An op issued through libtorch re-creates the ops inside it: they are not issued again on their
// own. Where it cannot be replayed (a libtorch without it), the ones inside it that can are.
TEST(Drivers, AnOpInsideAnIssuedOpIsIssuedWithItUnlessTheOuterOneCannotBe) {
    TraceBuilder t;
    t.op("aten::outer", 100, 50);
    t.launch("outer_k", 105, 1000, 3);
    t.op("aten::relu", 110, 10);
    t.launch("relu_k", 112, 1010, 2);
    t.op("aten::relu", 200, 10);
    t.launch("relu_k", 202, 1020, 2);
    const std::vector<Recipe> recipes = {aten_op("aten::outer", 1), relu(2), relu(3)};
    auto a = analysis_of(t, "nested_ops.json",
                         [&](const std::string&, std::size_t n) { return recipes.at(n); });
    for (const bool outer_replays : {true, false}) {
        SCOPED_TRACE(outer_replays ? "the outer op replays" : "the outer op cannot");
        FakeBackend b;
        if (!outer_replays) b.skip.insert(recipes[0].instance_key());
        replay::DriverOptions o;
        const replay::Report r = replay::replay_sequential(*a, b, o, nullptr);
        std::map<std::string, int> timed_issues;
        for (const Call& c : b.of("issue"))
            if (c.phase == replay::Phase::Timed) ++timed_issues[c.recipe];
        EXPECT_EQ(timed_issues[recipes[0].instance_key()], outer_replays ? 1 : 0);
        EXPECT_EQ(timed_issues[recipes[1].instance_key()], outer_replays ? 0 : 1);
        EXPECT_EQ(timed_issues[recipes[2].instance_key()], 1);
        EXPECT_EQ(kernel_named(r, "outer_k").outcome,
                  outer_replays ? KernelOutcome::Replayed : KernelOutcome::Skipped);
    }
}

// A step's record that none of its recorded kernels is (the replayed op ran more than recorded,
// as an op issued twice did) is no sample, and the report says how many came back.
TEST(Drivers, RecordsNoRecordedKernelTookAreNoted) {
    auto a = two_stream_trace();
    FakeBackend b;
    b.per_kernel[relu(1).instance_key()] = {{"relu_k", 3000}, {"extra_k", 500}};
    replay::DriverOptions o;
    o.iterations = 2;
    const replay::Report r = replay::replay_sequential(*a, b, o, nullptr);
    EXPECT_EQ(kernel_named(r, "relu_k").samples_us, (std::vector<double>{3.0, 3.0}));
    EXPECT_TRUE(has_note(r, "1 timed record of the last iteration (0.5 us) came back from steps"));
    FakeBackend plain;
    plain.per_kernel[relu(1).instance_key()] = {{"relu_k", 3000}};
    EXPECT_FALSE(has_note(replay::replay_sequential(*a, plain, o, nullptr), "timed record"));
}

// A capture that cannot begin costs the graph, not the run: its steps are issued directly, with
// the reason noted.
TEST(Drivers, AGraphThatCannotBeCapturedIsIssuedDirectly) {
    auto a = two_stream_trace();
    FakeBackend b;
    b.graphs = true;
    b.fail_begin_capture = true;
    replay::DriverOptions o;
    o.graph = true;
    o.iterations = 2;
    const replay::Report r = replay::replay_sequential(*a, b, o, nullptr);
    EXPECT_TRUE(b.of("launch_graph").empty());
    EXPECT_EQ(r.timeline->issue_path, "direct");
    for (const auto& k : r.kernels) EXPECT_EQ(k.samples_us.size(), 2u) << k.name;
    bool noted = false;
    for (const auto& n : r.notes)
        noted |=
            n.find("the capture failed: fake: the capture could not begin") != std::string::npos;
    EXPECT_TRUE(noted) << "no note says why the steps were not captured";
}

TEST(Drivers, GraphsCaptureTheStepOnceAndIssueWhatCannotBeCapturedDirectly) {
    auto a = two_stream_trace();
    FakeBackend b;
    b.graphs = true;
    b.not_capturable.insert(copy().instance_key());
    b.untag_when_timed = true;  // graph records stay tagged, the direct copy's do not
    replay::DriverOptions o;
    o.graph = true;
    o.iterations = 2;
    const replay::Report r = replay::replay_sequential(*a, b, o, nullptr);
    const int s7 = slot_of(*a, 7), s8 = slot_of(*a, 8);
    const std::string relu_key = relu(1).instance_key(), gemm_key = gemm(10).instance_key();
    const std::string copy_key = copy().instance_key();
    const std::vector<std::string> direct_pass = two_stream_pass(s7, s8);
    // The relu and the GEMM are captured together (every stream joins from the relu's), the
    // copy, which cannot be, is issued directly after the graph in every later pass.
    std::vector<std::string> graph_pass = {
        "launch_graph 1", "warm " + std::to_string(s7) + " " + copy_key,
        "issue " + std::to_string(s7) + " " + copy_key + " #3", "sync", "collect"};
    std::vector<std::string> expected = direct_pass;
    expected.insert(expected.end(),
                    {"begin_capture " + std::to_string(s7) + " all",
                     "warm " + std::to_string(s7) + " " + relu_key,
                     "issue " + std::to_string(s7) + " " + relu_key + " #1",
                     "wait " + std::to_string(s8) + "<-" + std::to_string(s7),
                     "warm " + std::to_string(s8) + " " + gemm_key,
                     "issue " + std::to_string(s8) + " " + gemm_key + " #2", "end_capture"});
    for (int pass = 0; pass < 3; ++pass) {  // untimed once, then two timed iterations
        if (pass == 1) expected.push_back("phase timed");
        expected.insert(expected.end(), graph_pass.begin(), graph_pass.end());
    }
    expected.push_back("phase plan");
    EXPECT_EQ(call_lines(b), expected);
    for (const auto& k : r.kernels) EXPECT_EQ(k.samples_us.size(), 2u) << k.name;
    EXPECT_EQ(r.timeline->issue_path, "graph+direct");
    bool option = false, noted = false;
    for (const auto& [k, v] : r.options) option |= k == "issue_path" && v == "graph+direct";
    for (const auto& n : r.notes)
        noted |= n.find("not captured") != std::string::npos &&
                 n.find("synchronises") != std::string::npos;
    EXPECT_TRUE(option);
    EXPECT_TRUE(noted);
}

TEST(Drivers, RecordedPacingLaunchesOneGraphPerStepAtItsOffset) {
    auto a = two_stream_trace();
    FakeBackend b;
    b.graphs = true;
    TestClock clock;
    b.clock = &clock;
    replay::DriverOptions o;
    o.graph = true;
    o.pace = replay::Pace::Recorded;
    clock.attach(o);
    const replay::Report r = replay::replay_sequential(*a, b, o, nullptr);
    EXPECT_EQ(r.timeline->issue_path, "graph per step");
    // Three graphs of one stream each; the GEMM's wait for stream 7 stays outside its graph.
    std::vector<std::string> captures;
    for (const auto& c : b.of("begin_capture"))
        captures.push_back(std::to_string(c.stream) + (c.value ? " all" : " one"));
    const int s7 = slot_of(*a, 7), s8 = slot_of(*a, 8);
    EXPECT_EQ(captures,
              (std::vector<std::string>{std::to_string(s7) + " one", std::to_string(s8) + " one",
                                        std::to_string(s7) + " one"}));
    for (const auto& c : b.of("wait")) EXPECT_FALSE(c.captured);
    std::vector<std::int64_t> at;
    std::int64_t start = -1;
    for (const auto& c : b.of("launch_graph"))
        if (c.phase == replay::Phase::Timed) {
            if (start < 0) start = c.host_ns;
            at.push_back(c.host_ns - start);
        }
    EXPECT_EQ(at, (std::vector<std::int64_t>{0, 30'000, 60'000}));
    for (const auto& k : r.kernels) EXPECT_EQ(k.samples_us.size(), 1u) << k.name;

    // With a device clock, --pace-clock auto (the default) holds each graph step as device holds
    // a direct one (relu 1000, GEMM 1004, copy 1050 us: the lead plus its start on streams 7 and
    // 8, then 50 us after the relu).
    FakeBackend clocked;
    clocked.graphs = true;
    clocked.device_clock = true;
    TestClock clock2;
    clocked.clock = &clock2;
    clock2.attach(o);
    const replay::Report held = replay::replay_sequential(*a, clocked, o, nullptr);
    EXPECT_EQ(timed_holds(clocked), (std::vector<std::int64_t>{1'000'000, 1'004'000, 50'000}));
    bool said = false;
    for (const auto& [key, value] : held.options)
        said |= key == "pace_clock" && value == "device for graph steps";
    EXPECT_TRUE(said);
}

TEST(Drivers, AGraphWhoseRecordsCameBackIncompleteGivesNoSample) {
    auto a = two_stream_trace();
    FakeBackend b;
    b.graphs = true;
    b.per_kernel[gemm(10).instance_key()] = {{"gemm_k", 20000}, {"splitk_reduce", 2000}};
    b.drop_graph_record_in_collect = 2;  // collects: untimed direct, untimed graph, iteration 1
    replay::DriverOptions o;
    o.graph = true;
    o.iterations = 2;
    const replay::Report r = replay::replay_sequential(*a, b, o, nullptr);
    // The lost record was the relu's (the graph's first): iteration 1 has no sample for it, the
    // others are whole.
    EXPECT_EQ(kernel_named(r, "relu_k").samples_us.size(), 1u);
    EXPECT_EQ(kernel_named(r, "gemm_k").samples_us.size(), 2u);
    EXPECT_EQ(r.timeline->iterations[0].unattributed, 0u);
    bool noted = false;
    for (const auto& n : r.notes)
        noted |= n.find("came back incomplete") != std::string::npos ||
                 n.find("could not be tied") != std::string::npos;
    EXPECT_TRUE(noted) << "a step's missing record must be said";
}

TEST(Drivers, EveryIterationInTheTimelineOnRequest) {
    auto a = two_stream_trace();
    FakeBackend b;
    b.warm_ns = 300;
    replay::DriverOptions o;
    o.iterations = 3;
    o.trace_all_iterations = true;
    replay::Timeline timeline;
    const replay::Report r = replay::replay_sequential(*a, b, o, &timeline);
    std::map<int, int> items;  // iteration -> replayed activities (warm-up reads apart)
    int warm = 0;
    for (const auto& i : timeline.items) {
        if (!i.replayed) continue;
        if (i.warm_read)
            ++warm;
        else
            ++items[i.iteration];
    }
    EXPECT_EQ(items, (std::map<int, int>{{1, 3}, {2, 3}, {3, 3}}));
    EXPECT_EQ(warm, 9);
    ASSERT_EQ(r.timeline->iterations.size(), 3u);
    for (int i = 0; i < 3; ++i) {
        const auto& it = r.timeline->iterations[static_cast<std::size_t>(i)];
        EXPECT_EQ(it.iteration, i + 1);
        EXPECT_EQ(it.replayed.activities, 3u);
        EXPECT_DOUBLE_EQ(it.replayed.warm_read_us, 0.9);
        EXPECT_GT(it.replayed.span_us, 0);
        EXPECT_NEAR(it.span_ratio, it.replayed.span_us / 52.0, 1e-12);
    }
    EXPECT_TRUE(std::isfinite(r.timeline->first_to_last_max_gap));
    std::ostringstream json;
    replay::write_replay_trace(json, timeline);
    // Each iteration its own profiler step after the recorded one, its warm-up reads apart.
    for (const char* step : {"\"ProfilerStep#1\"", "\"ProfilerStep#2\"", "\"ProfilerStep#3\"",
                             "\"ProfilerStep#4\"", "\"cat\":\"warm_read\""})
        EXPECT_NE(json.str().find(step), std::string::npos) << step;
}

// --warm-inputs needed: a step whose inputs an earlier replayed step read or wrote in their
// recorded storage's buffer finds them in L2 as recorded, and gets no warm-up read; an input
// outside the shared buffers (an integer tensor, one without a storage id) or one no replayed step
// touched yet still gets one. A first touch in the recording was read from memory then: no read.
TEST(Drivers, SequentialWarmsOnlyInputsTheReplayDidNotTouchAlready) {
    TraceBuilder t;
    const char* kernels[] = {"gemm_k", "relu_a", "relu_b", "relu_c", "relu_d"};
    for (int i = 0; i < 5; ++i) {
        t.op(i == 0 ? "aten::mm" : "aten::relu", 100 + 40 * i, 20);
        t.launch(kernels[i], 105 + 40 * i, 1000 + 10 * i, 3, 7);
    }
    auto reads = [](std::int64_t storage, replay::DType dtype, std::int64_t reuse) {
        Recipe r = relu(storage);
        auto& tensor = std::get<replay::AtenRecipe>(r.detail).args[0].tensors[0];
        tensor.dtype = dtype;
        tensor.reuse_bytes = reuse;
        return r;
    };
    const std::map<std::string, Recipe> recipes = {
        // The GEMM's A and B come from memory (first touch); it writes storage 5 (C).
        {"gemm_k",
         [] {
             Recipe g = gemm(1);
             auto& d = std::get<replay::GemmRecipe>(g.detail);
             d.b_storage = 2;
             d.c_storage = 5;
             d.a_reuse_bytes = d.b_reuse_bytes = replay::kReuseFirstTouch;
             return g;
         }()},
        {"relu_a", reads(5, replay::DType::Float32, 4096)},   // the GEMM's output: in L2
        {"relu_b", reads(9, replay::DType::Float32, 4096)},   // nothing replayed touched 9
        {"relu_c", reads(5, replay::DType::Int64, 4096)},     // integers: synthesised per op
        {"relu_d", reads(-1, replay::DType::Float32, 4096)},  // no storage id: no dataflow
    };
    auto a = analysis_of(t, "warm_needed.json",
                         [&](const std::string& name, std::size_t) { return recipes.at(name); });
    // Per mode: the recipes warmed in order, and warm-up reads per issue.
    auto warmed = [&](replay::DriverOptions::WarmInputs mode) {
        FakeBackend b;
        replay::DriverOptions o;
        o.warm_inputs = mode;
        const replay::Report r = replay::replay_sequential(*a, b, o, nullptr);
        std::vector<std::string> first_pass;
        double warms = 0, issues = 0;
        for (const auto& c : b.calls) {
            warms += c.what == "warm";
            issues += c.what == "issue";
            if (c.what == "warm" && issues < 5) first_pass.push_back(c.recipe);
        }
        return std::tuple{first_pass, warms / issues, r};
    };
    const auto [needed, needed_share, report] = warmed(replay::DriverOptions::WarmInputs::Needed);
    EXPECT_EQ(needed, (std::vector<std::string>{recipes.at("relu_b").instance_key(),
                                                recipes.at("relu_c").instance_key(),
                                                recipes.at("relu_d").instance_key()}));
    EXPECT_DOUBLE_EQ(needed_share, 3.0 / 5.0);
    EXPECT_TRUE(has_note(report, "warm-up reads before 3 of 5 steps"));
    EXPECT_DOUBLE_EQ(std::get<1>(warmed(replay::DriverOptions::WarmInputs::All)), 1.0);
    EXPECT_DOUBLE_EQ(std::get<1>(warmed(replay::DriverOptions::WarmInputs::None)), 0.0);
}

TEST(Drivers, SequentialWithoutPacingOrWarmInputs) {
    auto a = two_stream_trace();
    FakeBackend b;
    replay::DriverOptions o;
    o.warm_inputs = replay::DriverOptions::WarmInputs::None;
    replay::replay_sequential(*a, b, o, nullptr);
    EXPECT_TRUE(b.of("warm").empty());
    EXPECT_EQ(b.of("issue").size(), 6u);  // the untimed pass and one iteration
    EXPECT_EQ(b.of("wait").size(), 2u);
}

TEST(Drivers, SequentialSkipsWhatCannotBePrepared) {
    auto a = two_stream_trace();
    FakeBackend b;
    b.skip.insert(gemm(10).instance_key());
    const replay::Report r = replay::replay_sequential(*a, b, replay::DriverOptions{}, nullptr);
    EXPECT_EQ(kernel_named(r, "gemm_k").outcome, KernelOutcome::Skipped);
    EXPECT_EQ(kernel_named(r, "relu_k").outcome, KernelOutcome::Replayed);
    for (const auto& c : b.of("issue")) EXPECT_NE(c.recipe, gemm(10).instance_key());
    // The wait before the skipped GEMM is not issued either.
    EXPECT_TRUE(b.of("wait").empty());
}

// ---- energy ------------------------------------------------------------------------------------

replay::DriverOptions energy_options() {
    replay::DriverOptions o = unique_options(replay::Context::Recorded);
    o.energy = true;
    o.energy_window_ms = 40;  // four counter periods of the simulated board (the fewest)
    o.energy_windows = 5;
    return o;
}

TEST(Energy, TheProbeFindsTheBoardsPeriodsAndIdlePower) {
    SimulatedBoard board;
    BoardMeter meter(board);
    const replay::EnergyProbe p = replay::probe_energy(meter);
    ASSERT_TRUE(p.available) << p.why;
    EXPECT_NEAR(p.counter_period_ms, 10, 0.05);
    EXPECT_NEAR(p.power_period_ms, 10, 0.05);
    EXPECT_NEAR(p.counter_read_ms, 0.02, 0.002);
    EXPECT_NEAR(p.idle_power_w, 60, 0.2);  // whole millijoules over 120 ms
    EXPECT_EQ(p.power_limit_w, 700);
    std::string rule;
    EXPECT_EQ(replay::updates_per_window(p, 45, rule), 5);  // rounded up to whole periods
    // Auto: 2 x (jitter + 0.02 ms read), about 0.05 ms, below 1% of one period; but never fewer
    // than kMinWindowPeriods.
    EXPECT_EQ(replay::updates_per_window(p, 0, rule), replay::kMinWindowPeriods);
    EXPECT_NE(rule.find("raised to the minimum"), std::string::npos) << rule;
}

TEST(Energy, AWindowIsNeverASingleCounterPeriod) {
    // The H100's probe in scripts/gpu_energy.sh's run: --energy-window 100 was one period.
    replay::EnergyProbe h100;
    h100.available = true;
    h100.counter_period_ms = 100.3;
    h100.counter_jitter_ms = 1.13;
    h100.counter_read_ms = 2.42;
    std::string rule;
    EXPECT_EQ(replay::updates_per_window(h100, 100, rule), replay::kMinWindowPeriods);
    EXPECT_EQ(replay::updates_per_window(h100, 600, rule), 6);
    EXPECT_EQ(replay::updates_per_window(h100, 0, rule), 8);  // 2 x 3.55 ms below 1% of 802 ms
}

TEST(Energy, AWindowOfWholePeriodsKeepsItsCountWhateverThePeriodMeasured) {
    // Two H200 processes probed the nominal 100 ms period as 99.99 and 100.21 ms: the default
    // 400 ms window must be 4 periods in both, not 5 in the first.
    replay::EnergyProbe probe;
    probe.available = true;
    std::string rule;
    for (const double period : {99.5, 99.99, 100.0, 100.21}) {
        probe.counter_period_ms = period;
        EXPECT_EQ(replay::updates_per_window(probe, 400, rule), 4) << period;
    }
    probe.counter_period_ms = 97.0;  // 400 ms is 4.12 periods: a fifth one is needed
    EXPECT_EQ(replay::updates_per_window(probe, 400, rule), 5);
}

TEST(Energy, ACounterThatNeverChangesIsNotAvailable) {
    class Dead final : public replay::EnergyMeter {
      public:
        std::string method() const override { return "dead counter"; }
        std::optional<replay::MeterReading> energy() override {
            t_ += 0.01;
            return replay::MeterReading{5, t_};
        }
        std::optional<replay::MeterReading> power() override { return std::nullopt; }
        double power_limit_w() const override { return NAN; }
        double t_ = 0;
    } dead;
    const replay::EnergyProbe p = replay::probe_energy(dead);
    EXPECT_FALSE(p.available);
    EXPECT_NE(p.why.find("did not change"), std::string::npos) << p.why;
}

TEST(Energy, UniqueModeMeasuresJoulesPerLaunchOfEachKernel) {
    auto a = unique_trace();
    SimulatedBoard board;
    const std::string relu1 = relu(1).instance_key(), relu2 = relu(2).instance_key();
    const std::string gemm10 = gemm(10).instance_key(), gemm11 = gemm(11).instance_key();
    board.dynamic_uj = {{relu1, 300}, {relu2, 300}, {gemm10, 900}, {gemm11, 900}};
    FakeBackend b;
    b.board = &board;
    replay::Report r = replay::replay_unique(*a, b, energy_options());
    ASSERT_TRUE(r.energy.requested);
    ASSERT_TRUE(r.energy.probe.available) << r.energy.probe.why;
    EXPECT_EQ(r.energy.window_updates, 4);
    EXPECT_EQ(r.energy.windows, 5);
    EXPECT_GT(r.energy.power_w.count, 0u);  // the background sampler ran

    const auto& relu_k = kernel_named(r, "relu_k");
    ASSERT_TRUE(relu_k.energy.measured()) << relu_k.energy.why;
    EXPECT_EQ(relu_k.energy.samples_uj.size(), 5u);
    // Dynamic energy per launch, plus the idle power over its own replayed time (the fake's
    // whole-issue record: 1 us for the first prepared handle).
    EXPECT_NEAR(relu_k.energy.dynamic_uj, 300, 300 * 0.02);
    EXPECT_NEAR(relu_k.energy.uj.median, 300 + 60 * relu_k.replayed_us.median,
                (300 + 60 * relu_k.replayed_us.median) * 0.02);
    // The GEMM issue also re-creates the split-K reduction: split by their recorded shares.
    const auto& gemm_k = kernel_named(r, "gemm_k");
    const auto& reduce = kernel_named(r, "splitk_reduce");
    ASSERT_TRUE(gemm_k.energy.measured());
    ASSERT_TRUE(reduce.energy.measured());
    EXPECT_NEAR(gemm_k.energy.dynamic_uj + reduce.energy.dynamic_uj, 900, 900 * 0.02);
    // Shares of the first instance's recorded 10 us and 1 us.
    EXPECT_NEAR(gemm_k.energy.dynamic_uj / reduce.energy.dynamic_uj, 10.0, 0.3);
    EXPECT_GT(gemm_k.energy.pj_per_flop, 0);  // a GEMM: its work is known
    EXPECT_TRUE(std::isnan(relu_k.energy.pj_per_flop));
    // power_w: the board's power over the windows, the loop's gaps at idle included, so below
    // the energy over the timed median, which would count the kernel as running all along.
    EXPECT_DOUBLE_EQ(relu_k.energy.power_w, relu_k.energy.loop_power_w);
    EXPECT_LT(relu_k.energy.power_w, relu_k.energy.uj.median / relu_k.replayed_us.median);
    // Per tier and in total: count x energy per launch.
    double sum = 0;
    for (const auto& t : r.tiers)
        if (std::isfinite(t.energy_mj)) sum += t.energy_mj;
    EXPECT_NEAR(sum, r.energy.predicted_mj, 1e-9);
    EXPECT_NEAR(
        r.energy.predicted_mj,
        (3 * relu_k.energy.uj.median + 2 * gemm_k.energy.uj.median + 2 * reduce.energy.uj.median +
         kernel_named(r, "Memcpy DtoD (Device -> Device)").energy.uj.median) /
            1000.0,
        1e-9);
}

// A short kernel issued from the host waits for it between launches; looped from a CUDA graph it
// runs back to back, and the idle gaps' power is not counted as its energy.
TEST(Energy, WindowsThatReachTheBoardsPowerLimitAreCountedAndNoted) {
    auto a = unique_trace();
    SimulatedBoard board;
    // The fake runs an issue for (handle + 1) us, a few us here. relu: 3000 uJ a launch, some
    // hundreds of watts over the cap; the GEMM issue: 30 uJ, at most 30 W over idle: under it.
    board.cap_w = 200;
    const std::string relu1 = relu(1).instance_key(), relu2 = relu(2).instance_key();
    const std::string gemm10 = gemm(10).instance_key(), gemm11 = gemm(11).instance_key();
    board.dynamic_uj = {{relu1, 3000}, {relu2, 3000}, {gemm10, 30}, {gemm11, 30}};
    FakeBackend b;
    b.board = &board;
    const replay::Report r = replay::replay_unique(*a, b, energy_options());
    const auto& relu_k = kernel_named(r, "relu_k");
    ASSERT_TRUE(relu_k.energy.measured()) << relu_k.energy.why;
    EXPECT_EQ(relu_k.energy.limited_windows, 5);
    EXPECT_EQ(relu_k.energy.limited_by, "power cap");
    const auto& gemm_k = kernel_named(r, "gemm_k");
    ASSERT_TRUE(gemm_k.energy.measured());
    EXPECT_EQ(gemm_k.energy.limited_windows, 0);
    EXPECT_EQ(gemm_k.energy.limited_by, "");
    // The windows' SM clock says which ran held down; the die was warmer under the hungry one.
    EXPECT_DOUBLE_EQ(relu_k.energy.sm_clock_mhz, 1500);
    EXPECT_DOUBLE_EQ(gemm_k.energy.sm_clock_mhz, 1980);
    EXPECT_GT(relu_k.energy.temperature_c, gemm_k.energy.temperature_c);
    // power_w is the loop's own power over its windows, gaps included: energy over the loop's
    // time per launch, not over the timed median (which a loop with gaps does not keep).
    for (const auto* k : {&relu_k, &gemm_k}) {
        const replay::KernelEnergy& e = k->energy;
        EXPECT_DOUBLE_EQ(e.power_w, e.loop_power_w) << k->name;
        EXPECT_GE(e.loop_us, k->replayed_us.median) << k->name;
        const double idle = r.energy.probe.idle_power_w;
        EXPECT_NEAR(e.loop_power_w, idle + e.dynamic_uj / e.loop_us, 0.05 * e.loop_power_w)
            << k->name;
    }
    bool noted = false;
    for (const auto& n : r.energy.notes)
        noted |= n.find("kernels ran with the board's clocks held down (power cap)") !=
                 std::string::npos;
    EXPECT_TRUE(noted);

    // Under the cap everywhere: nothing counted, no note.
    SimulatedBoard cool;
    cool.dynamic_uj = board.dynamic_uj;
    FakeBackend c;
    c.board = &cool;
    const replay::Report q = replay::replay_unique(*a, c, energy_options());
    for (const auto& k : q.kernels) EXPECT_EQ(k.energy.limited_windows, 0) << k.name;
    for (const auto& n : q.energy.notes) EXPECT_EQ(n.find("held down"), std::string::npos) << n;
}

// A memory-bound kernel's energy per launch depends on where its data lies: each window after
// the first runs on copies of the work at other addresses, re-captured into a graph of their own,
// and the copies are freed when the kernel's windows are done. A backend that cannot move work
// measures every window on one placement, as before.
TEST(Energy, EachWindowRunsOnCopiesOfTheWorkAtOtherAddresses) {
    auto a = unique_trace();
    const std::string relu1 = relu(1).instance_key(), relu2 = relu(2).instance_key();
    auto measure = [&](bool moves) {
        SimulatedBoard board;
        // Placement w of the relu work (copies 2w - 1 and 2w: it has two instances) costs
        // 300 + 60 w uJ a launch.
        board.dynamic_uj = {{relu1, 300}, {relu2, 300}};
        for (int w = 1; w < 5; ++w)
            for (int copy : {2 * w - 1, 2 * w})
                board.dynamic_uj[(copy % 2 ? relu1 : relu2) + "@" + std::to_string(copy)] =
                    300 + 60 * w;
        // Launches of 8 us or more: the loop's graph then holds 1 ms of work, one graph per
        // counter read, whatever the host's clock says (with shorter ones the loop queues as many
        // graphs per read as the wall clock lets it, and on a loaded machine the reads' share of
        // the window, and with it the energy per launch, moved by 4 %).
        FakeBackend b;
        b.board = &board;
        b.graphs = true;
        b.moves = moves;
        b.time_scale = 8;
        replay::DriverOptions o = energy_options();
        o.sequential_check = false;
        o.only = {kernel_named(replay::replay_unique(*a, b, o), "relu_k").id};
        FakeBackend c;
        c.board = &board;
        c.graphs = true;
        c.moves = moves;
        c.time_scale = 8;
        replay::Report r = replay::replay_unique(*a, c, o);
        return std::tuple{kernel_named(r, "relu_k").energy, c.of("release").size(),
                          c.of("begin_capture").size(), r.energy.notes};
    };
    const auto [moved, released, captures, notes] = measure(true);
    ASSERT_EQ(moved.samples_uj.size(), 5u);
    for (std::size_t w = 0; w < 5; ++w)  // each window its own placement's energy (+ idle x own)
        EXPECT_NEAR(moved.samples_uj[w] - moved.samples_uj[0], 60.0 * static_cast<double>(w),
                    0.03 * moved.samples_uj[w])
            << w;
    EXPECT_EQ(released, 8u);  // four placements after the first, two instances each
    EXPECT_EQ(captures, 5u);  // the loop's graph, re-captured on each placement
    bool noted = false;
    for (const auto& n : notes)
        noted |=
            n.find("energy windows on buffers of their own: 1 of 1 loops") != std::string::npos;
    EXPECT_TRUE(noted);

    const auto [kept, none_released, one_capture, quiet] = measure(false);
    ASSERT_EQ(kept.samples_uj.size(), 5u);
    for (double s : kept.samples_uj) EXPECT_NEAR(s, kept.samples_uj[0], 0.03 * s);
    EXPECT_EQ(none_released, 0u);
    EXPECT_EQ(one_capture, 1u);
    for (const auto& n : quiet) EXPECT_EQ(n.find("buffers of their own"), std::string::npos) << n;
}

TEST(Energy, UniqueLoopsRunFromGraphsSoHostGapsAreNotTheKernels) {
    auto a = unique_trace();
    const std::string relu1 = relu(1).instance_key(), relu2 = relu(2).instance_key();
    auto measure = [&](bool graphs) {
        SimulatedBoard board;
        board.dynamic_uj = {{relu1, 300}, {relu2, 300}};
        FakeBackend b;
        b.board = &board;
        b.graphs = graphs;
        b.host_gap_s = 10e-6;  // 10 us at 40 W above idle: 400 uJ a launch
        b.host_gap_w = 40;
        replay::Report r = replay::replay_unique(*a, b, energy_options());
        return std::pair{kernel_named(r, "relu_k").energy.dynamic_uj, r.energy.notes};
    };
    // Every batch of the windows is submitted before the counter is read (the worker's backend
    // would hold it otherwise): one submit per read at least.
    {
        SimulatedBoard board;
        FakeBackend b;
        b.board = &board;
        b.graphs = true;
        replay::DriverOptions o = energy_options();
        o.sequential_check = false;
        replay::replay_unique(*a, b, o);
        EXPECT_GE(b.submits, 3 * 5 * 4);  // 3 loops x 5 windows x 4 counter periods
    }
    const auto [from_graph, graph_notes] = measure(true);
    const auto [from_host, host_notes] = measure(false);
    EXPECT_NEAR(from_graph, 300, 300 * 0.02);
    // From the host: the gaps' 400 uJ counted as the kernel's (and a poll of 256 launches spans
    // 2.8 ms of the 40 ms windows, so the figure is rough too).
    EXPECT_GT(from_host, 600);
    auto said = [](const std::vector<std::string>& notes, const std::string& text) {
        return std::any_of(notes.begin(), notes.end(),
                           [&](const std::string& n) { return n.find(text) != std::string::npos; });
    };
    EXPECT_TRUE(said(graph_notes, "launched back to back from a CUDA graph"));
    EXPECT_FALSE(said(graph_notes, "energy loops: 0 of"));
    EXPECT_TRUE(said(host_notes, "energy loops: 0 of"));
}

// The loops record nothing: recording costs the device time (CUPTI's records of graph-launched
// kernels stretched GPT-2's loops on the H200), and what it cost would count as the kernel's
// energy. Recording is back on for the timings after each loop.
TEST(Energy, TheLoopsRecordNothingSoRecordingCostsThemNothing) {
    auto a = unique_trace();
    const std::string relu1 = relu(1).instance_key(), relu2 = relu(2).instance_key();
    SimulatedBoard board;
    board.dynamic_uj = {{relu1, 300}, {relu2, 300}};
    FakeBackend b;
    b.board = &board;
    b.graphs = true;
    b.record_gap_s = 5e-6;  // 5 us at 40 W above idle: 200 uJ a launch while recording
    b.record_gap_w = 40;
    const replay::Report r = replay::replay_unique(*a, b, energy_options());
    const replay::KernelResult& k = kernel_named(r, "relu_k");
    EXPECT_NEAR(k.energy.dynamic_uj, 300, 300 * 0.02);
    // Every kernel was timed from its own records, loops before it or not.
    for (const replay::KernelResult& each : r.kernels) {
        if (each.outcome == replay::KernelOutcome::IssuedWithOp) continue;  // the GEMM's reduction
        EXPECT_EQ(each.outcome, replay::KernelOutcome::Replayed) << each.name;
        EXPECT_FALSE(each.samples_us.empty()) << each.name;
    }
    const std::vector<Call> switches = b.of("recording");
    ASSERT_FALSE(switches.empty());
    EXPECT_EQ(switches.back().value, 1);
    int on = 1;
    for (const Call& c : switches) {
        EXPECT_NE(c.value, on) << "switched to what it already was";
        on = static_cast<int>(c.value);
    }

    // The sequential step's loop too: six issues of 200 uJ above idle, nothing for records.
    SimulatedBoard step_board;
    FakeBackend s;
    s.board = &step_board;
    s.record_gap_s = 5e-6;
    s.record_gap_w = 40;
    replay::DriverOptions o = energy_options();
    o.iterations = 2;
    const replay::Report seq = replay::replay_sequential(*a, s, o, nullptr);
    ASSERT_TRUE(seq.energy.step.measured());
    EXPECT_NEAR(seq.energy.step.dynamic_mj, 6 * 0.2, 6 * 0.2 * 0.03);
}

TEST(Energy, TheSequentialStepIsLoopedThroughTheWindowsAndItsPowerDrawn) {
    auto a = unique_trace();
    SimulatedBoard board;
    FakeBackend b;
    b.board = &board;
    replay::DriverOptions o = energy_options();
    o.iterations = 2;
    replay::Timeline timeline;
    const replay::Report r = replay::replay_sequential(*a, b, o, &timeline);
    ASSERT_TRUE(r.energy.step.measured());
    EXPECT_EQ(r.energy.step.samples_mj.size(), 5u);
    // Six issues (a GEMM issues its reduction) of 200 uJ each above idle, and the idle power over
    // the step's wall time.
    EXPECT_NEAR(r.energy.step.dynamic_mj, 6 * 0.2, 6 * 0.2 * 0.03);
    EXPECT_NEAR(r.energy.step.idle_power_w, 60, 0.2);  // the probe's
    EXPECT_NEAR(r.energy.step.static_mj,
                r.energy.step.idle_power_w * r.energy.step.step_us / 1000.0, 1e-9);
    // Unique-mode figures are not predicted from a sequential run.
    EXPECT_TRUE(std::isnan(r.energy.predicted_mj));
    ASSERT_FALSE(timeline.counters.empty());
    for (const auto& c : timeline.counters) {
        EXPECT_EQ(c.name, "board power (W)");
        EXPECT_GE(c.t_us, 0);
        EXPECT_GT(c.value, 0);
    }
}

// The step's warm-up reads cost energy that the recording did not spend: looped alone, their
// energy is measured and left out of the step's.
TEST(Energy, TheStepsWarmUpReadsAreMeasuredAloneAndLeftOut) {
    auto a = unique_trace();
    auto step_energy = [&](bool reads_cost) {
        SimulatedBoard board;
        board.dynamic_uj = {{"warm-up read", reads_cost ? 100.0 : 0.0}};
        FakeBackend b;
        b.board = &board;
        b.board_runs_warm_reads = true;
        replay::DriverOptions o = energy_options();
        return replay::replay_sequential(*a, b, o, nullptr).energy;
    };
    const replay::ReportEnergy with = step_energy(true), without = step_energy(false);
    ASSERT_TRUE(with.step.measured());
    // Six steps, each warmed once (100 uJ) and issued once (200 uJ).
    EXPECT_NEAR(with.step.warm_read_mj, 6 * 0.1, 6 * 0.1 * 0.03);
    EXPECT_NEAR(with.step.dynamic_mj, 6 * 0.2, 6 * 0.2 * 0.03);
    EXPECT_NEAR(without.step.warm_read_mj, 0, 0.02);
    bool said = false;
    for (const auto& n : with.notes)
        said |= n.find("left out of the step's energy") != std::string::npos;
    EXPECT_TRUE(said);
}

TEST(Energy, WithoutACounterEnergyIsNotAvailableAndSaysWhy) {
    auto a = unique_trace();
    FakeBackend b;  // no board: the interface's default
    const replay::Report r = replay::replay_unique(*a, b, energy_options());
    ASSERT_TRUE(r.energy.requested);
    EXPECT_FALSE(r.energy.probe.available);
    EXPECT_NE(r.energy.probe.why.find("fake backend measures no energy"), std::string::npos)
        << r.energy.probe.why;
    for (const auto& k : r.kernels) EXPECT_FALSE(k.energy.measured());
    EXPECT_TRUE(std::isnan(r.energy.predicted_mj));  // n/a, not 0
    for (const auto& t : r.tiers) EXPECT_TRUE(std::isnan(t.energy_mj));
    EXPECT_TRUE(b.of("prepare").size() > 0);  // the replay itself went on
}

TEST(Energy, AKernelTenPercentHungrierAtTheSameSpeedIsFlagged) {
    auto a = unique_trace();
    const std::string relu1 = relu(1).instance_key(), relu2 = relu(2).instance_key();
    auto run = [&](double relu_uj) {
        SimulatedBoard board;
        board.dynamic_uj = {{relu1, relu_uj}, {relu2, relu_uj}};
        FakeBackend b;
        b.board = &board;
        return replay::replay_unique(*a, b, energy_options());
    };
    const replay::Report baseline = run(1000);
    replay::RegressionOptions options;
    options.energy = true;
    // Fresh runs of the same board flag nothing.
    for (int i = 0; i < 2; ++i) {
        const replay::Regression same = replay::compare_reports(baseline, run(1000), options);
        EXPECT_EQ(same.summary.regressed + same.summary.improved, 0u);
        EXPECT_GT(same.totals.matched, 0u);
    }
    const replay::Regression hungrier = replay::compare_reports(baseline, run(1100), options);
    EXPECT_EQ(hungrier.summary.regressed, 1u);
    for (const auto& k : hungrier.kernels) {
        if (k.name == "relu_k") {
            EXPECT_EQ(k.verdict, replay::Verdict::Regressed)
                << k.change_pct << "% spread " << k.spread_pct << "% p " << k.p_value << " "
                << k.note;
            EXPECT_TRUE(k.rank_test);
            EXPECT_NEAR(k.change_pct, 10 * 1000 / (1000 + 60 * 1.0), 1.0);
        } else {
            EXPECT_NE(k.verdict, replay::Verdict::Regressed) << k.name;
        }
    }
    // The markdown names its columns in microjoules, not microseconds.
    std::ostringstream md;
    replay::write_regression_markdown(md, hungrier);
    EXPECT_NE(md.str().find("| baseline median uJ | current median uJ |"), std::string::npos)
        << md.str();
    EXPECT_EQ(md.str().find(" us"), std::string::npos) << md.str();
    // Compared on time, the same reports show no change: only the energy moved.
    const replay::Regression on_time = replay::compare_reports(baseline, run(1100), {});
    EXPECT_EQ(on_time.summary.regressed, 0u);

    // Energy from two boards: the comparison says so; from one board (or unknown ones), not.
    auto on_board = [](replay::Report r, const std::string& uuid) {
        r.environment.emplace_back("gpu_uuid", uuid);
        return r;
    };
    auto says_two_boards = [](const replay::Regression& g) {
        for (const auto& n : g.notes)
            if (n.find("energy was measured on two boards") != std::string::npos) return true;
        return false;
    };
    const replay::Report current = run(1000);
    EXPECT_TRUE(says_two_boards(replay::compare_reports(on_board(baseline, "GPU-aaaa"),
                                                        on_board(current, "GPU-bbbb"), options)));
    EXPECT_FALSE(says_two_boards(replay::compare_reports(on_board(baseline, "GPU-aaaa"),
                                                         on_board(current, "GPU-aaaa"), options)));
    EXPECT_FALSE(says_two_boards(replay::compare_reports(baseline, current, options)));
}

TEST(Energy, AHungrierKernelIsFlaggedOnABoardWhosePeriodsAlternate) {
    // scripts/gpu_energy.sh on an H100 asked for windows of one counter period: one period's
    // energy differed from the next by up to 2x, the windows' spread set regress's threshold
    // (3 x spread) beyond 10%, and a doctored baseline 10% lower was not flagged. Asked again
    // for one period, the windows now span kMinWindowPeriods.
    auto a = unique_trace();
    const std::string relu1 = relu(1).instance_key(), relu2 = relu(2).instance_key();
    auto run = [&](double relu_uj) {
        SimulatedBoard board;
        board.alternating_w = 300;  // +30% of the kernel's power in every other period
        board.dynamic_uj = {{relu1, relu_uj}, {relu2, relu_uj}};
        FakeBackend b;
        b.board = &board;
        replay::DriverOptions o = energy_options();
        o.energy_window_ms = 10;  // one period asked for
        return replay::replay_unique(*a, b, o);
    };
    const replay::Report baseline = run(1000);
    ASSERT_EQ(baseline.energy.window_updates, replay::kMinWindowPeriods);
    replay::RegressionOptions options;
    options.energy = true;
    const replay::Regression same = replay::compare_reports(baseline, run(1000), options);
    EXPECT_EQ(same.summary.regressed + same.summary.improved, 0u);
    const replay::Regression hungrier = replay::compare_reports(baseline, run(1100), options);
    EXPECT_EQ(hungrier.summary.regressed, 1u);
    for (const auto& k : hungrier.kernels) {
        if (k.name != "relu_k") continue;
        EXPECT_EQ(k.verdict, replay::Verdict::Regressed)
            << k.change_pct << "% spread " << k.spread_pct << "% p " << k.p_value;
    }
}

TEST(Drivers, WithoutGraphsEveryStepIsIssuedDirectlyAndTheReportSaysWhy) {
    auto a = two_stream_trace();
    FakeBackend b;  // graphs = false: capture_blocker explains
    replay::DriverOptions o;
    o.graph = true;
    const replay::Report r = replay::replay_sequential(*a, b, o, nullptr);
    EXPECT_TRUE(b.of("begin_capture").empty());
    EXPECT_EQ(r.timeline->issue_path, "direct");
    bool noted = false;
    for (const auto& n : r.notes) noted |= n.find("the fake has no graphs") != std::string::npos;
    EXPECT_TRUE(noted);
}

// ---- a worker process (worker_backend.h) ------------------------------------------------------

// The fake backend `config`, made in a worker process, seen from this one.
// The fake times on the host clock, as the cpu backend does: its runs are limited as a GPU's
// are only with `limit_host_clock_runs` (--kernel-timeout given), which the watchdog's tests set.
std::unique_ptr<replay::Backend> in_worker(const FakeBackend& config, double kernel_timeout_s = 10,
                                           int max_restarts = 200,
                                           bool limit_host_clock_runs = true) {
    replay::WorkerOptions options;
    options.kernel_timeout_s = kernel_timeout_s;
    options.max_restarts = max_restarts;
    options.limit_host_clock_runs = limit_host_clock_runs;
    std::string why;
    auto backend = replay::make_worker_backend(
        [config](std::string&) { return std::make_unique<FakeBackend>(config); }, options, why);
    if (backend == nullptr) throw std::runtime_error("no worker: " + why);
    return backend;
}

TEST(Worker, RunsTheReplayAsInProcess) {
    auto a = two_stream_trace();
    FakeBackend here;
    const replay::Report expected = replay::replay_sequential(*a, here, {}, nullptr);
    auto worker = in_worker(FakeBackend{});
    const replay::Report got = replay::replay_sequential(*a, *worker, {}, nullptr);
    EXPECT_EQ(got.backend, "fake");
    ASSERT_EQ(got.kernels.size(), expected.kernels.size());
    for (std::size_t i = 0; i < got.kernels.size(); ++i) {
        EXPECT_EQ(got.kernels[i].outcome, expected.kernels[i].outcome) << got.kernels[i].name;
        EXPECT_EQ(got.kernels[i].samples_us, expected.kernels[i].samples_us) << got.kernels[i].name;
    }
    EXPECT_EQ(got.notes, expected.notes);
}

TEST(Worker, RecordedPacingReachesTheWorkerOnTheHostsSchedule) {
    // Three launches 20 ms apart. The worker runs each as it arrives: were the paced launches
    // kept in the parent's write queue until the pass ended, they would all run at once.
    TraceBuilder t;
    t.op("aten::relu", 100, 20);
    t.launch("relu_k", 105, 1000, 3);
    t.op("aten::mm", 20'100, 20);
    t.launch("gemm_k", 20'105, 21'000, 10);
    t.op("aten::relu", 40'100, 20);
    t.launch("relu_k", 40'105, 41'000, 3);
    auto a = analysis_of(t, "paced.json", [](const std::string& name, std::size_t) {
        return name == "gemm_k" ? gemm(10) : relu(1);
    });
    FakeBackend config;
    config.stamp_steady_clock = true;
    auto worker = in_worker(config);
    replay::DriverOptions o;
    o.pace = replay::Pace::Recorded;
    const replay::Report r = replay::replay_sequential(*a, *worker, o, nullptr);
    ASSERT_TRUE(r.timeline.has_value());
    ASSERT_EQ(r.timeline->iterations.size(), 1u);
    // Recorded: 1000 us to 41003 us. Replayed, the same within the host's scheduling noise.
    EXPECT_DOUBLE_EQ(r.timeline->recorded.span_us, 40'003);
    EXPECT_GT(r.timeline->iterations.front().replayed.span_us, 35'000);
    EXPECT_LT(r.timeline->iterations.front().replayed.span_us, 60'000);
}

TEST(Worker, TheDeviceClockAndItsHoldsCrossTheWire) {
    // The worker's backend says it has a device clock (Environment crosses the wire), and the
    // clock's start and holds reach it between the steps without upsetting the replies.
    auto a = two_stream_trace();
    FakeBackend config;
    config.device_clock = true;
    auto worker = in_worker(config);
    EXPECT_TRUE(worker->environment().device_clock);
    replay::DriverOptions o;
    o.pace = replay::Pace::Recorded;
    o.pace_clock = replay::PaceClock::Device;
    o.iterations = 2;
    const replay::Report r = replay::replay_sequential(*a, *worker, o, nullptr);
    bool device = false;
    for (const auto& [key, value] : r.options) device |= key == "pace_clock" && value == "device";
    EXPECT_TRUE(device);
    for (const auto& k : r.kernels) {
        EXPECT_EQ(k.outcome, KernelOutcome::Replayed) << k.name;
        EXPECT_EQ(k.samples_us.size(), 2u) << k.name;
    }
}

// two_stream_trace() replayed twice in sequential mode by a worker made from `config`: the
// kernel `failed` must come out failed with `reason` in its reason, the other two replayed in
// both iterations (issued before and after it in the batch that faulted: re-run without it).
void expect_only_failed(const FakeBackend& config, const std::string& failed,
                        const std::string& reason) {
    auto a = two_stream_trace();
    auto worker = in_worker(config);
    replay::DriverOptions o;
    o.iterations = 2;
    const replay::Report r = replay::replay_sequential(*a, *worker, o, nullptr);
    for (const auto& k : r.kernels) {
        if (k.name == failed) {
            EXPECT_EQ(k.outcome, KernelOutcome::Failed);
            EXPECT_NE(k.reason.find(reason), std::string::npos) << k.reason;
            EXPECT_TRUE(k.samples_us.empty());
            continue;
        }
        EXPECT_EQ(k.outcome, KernelOutcome::Replayed) << k.name;
        EXPECT_EQ(k.samples_us.size(), 2u) << k.name;
    }
    EXPECT_TRUE(has_note(r, "restarted 1 time after a fault"));
}

TEST(Worker, ACrashFailsTheKernelInFlightAndTheRestIsReplayed) {
    FakeBackend config;
    config.abort_issue.insert(gemm(10).instance_key());
    expect_only_failed(config, "gemm_k",
                       "the worker process was killed by signal 6 (Aborted) (the work in flight");
}

TEST(Worker, AStickyFaultIsPinnedOnTheIssueThatCausedIt) {
    // As on CUDA: the relu poisons the device, the GEMM's issue is the first to see it. The
    // batch re-run one issue at a time finds the relu.
    FakeBackend config;
    config.poison_issue.insert(relu(1).instance_key());
    expect_only_failed(config, "relu_k",
                       "fake device-side assert triggered (710) (the work in flight");
}

TEST(Worker, ACrashWhilePreparingFailsThatRecipeOnly) {
    auto a = two_stream_trace();
    FakeBackend config;
    config.abort_prepare.insert(gemm(10).instance_key());
    auto worker = in_worker(config);
    const replay::Report r = replay::replay_sequential(*a, *worker, {}, nullptr);
    const auto& gemm_k = kernel_named(r, "gemm_k");
    EXPECT_EQ(gemm_k.outcome, KernelOutcome::Failed);
    EXPECT_NE(gemm_k.reason.find("preparing it: the worker process was killed by signal 6"),
              std::string::npos)
        << gemm_k.reason;
    EXPECT_EQ(kernel_named(r, "relu_k").outcome, KernelOutcome::Replayed);
    EXPECT_EQ(kernel_named(r, "Memcpy DtoD (Device -> Device)").outcome, KernelOutcome::Replayed);
}

TEST(Worker, UniqueModeLosesOnlyTheTemplateThatFaulted) {
    auto a = unique_trace();
    FakeBackend config;
    config.abort_issue.insert(gemm(11).instance_key());  // the GEMM template's second instance
    auto worker = in_worker(config);
    const replay::Report r =
        replay::replay_unique(*a, *worker, unique_options(replay::Context::Recorded));
    EXPECT_EQ(kernel_named(r, "gemm_k").outcome, KernelOutcome::Failed);
    EXPECT_NE(kernel_named(r, "gemm_k").reason.find("signal 6"), std::string::npos);
    EXPECT_EQ(kernel_named(r, "relu_k").outcome, KernelOutcome::Replayed);
    EXPECT_EQ(kernel_named(r, "relu_k").samples_us.size(), 3u);
    const auto& copy_k = kernel_named(r, "Memcpy DtoD (Device -> Device)");
    EXPECT_EQ(copy_k.outcome, KernelOutcome::Replayed);
    EXPECT_EQ(copy_k.samples_us.size(), 3u);
}

TEST(Worker, ARunPastItsTimeLimitIsFailedAndTheRunGoesOn) {
    auto a = two_stream_trace();
    FakeBackend config;
    config.hang_issue.insert(relu(1).instance_key());
    auto worker = in_worker(config, 0.3);
    const auto start = std::chrono::steady_clock::now();
    const replay::Report r = replay::replay_sequential(*a, *worker, {}, nullptr);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto& relu_k = kernel_named(r, "relu_k");
    EXPECT_EQ(relu_k.outcome, KernelOutcome::Failed);
    EXPECT_NE(relu_k.reason.find("time limit of 0.3 s"), std::string::npos) << relu_k.reason;
    EXPECT_EQ(kernel_named(r, "gemm_k").outcome, KernelOutcome::Replayed);
    EXPECT_EQ(kernel_named(r, "Memcpy DtoD (Device -> Device)").outcome, KernelOutcome::Replayed);
    // The hang, then again while the batch ran one issue at a time: two limits, not more.
    EXPECT_LT(seconds, 5.0);
}

TEST(Worker, AHostClockBackendsSlowRunIsNotAHang) {
    // A cpu backend's op over big tensors takes as long as it takes: without --kernel-timeout
    // given, it is not cut at the limit meant for a GPU kernel (the worker restarted every few
    // minutes on a DLRM trace, preparing every step again each time).
    auto a = two_stream_trace();
    FakeBackend config;
    config.slow_issue.insert(relu(1).instance_key());
    auto worker = in_worker(config, 0.3, 200, false);
    const replay::Report r = replay::replay_sequential(*a, *worker, {}, nullptr);
    EXPECT_EQ(kernel_named(r, "relu_k").outcome, KernelOutcome::Replayed)
        << kernel_named(r, "relu_k").reason;
    EXPECT_FALSE(has_note(r, "restarted"));
    // Given, it limits the host-clock runs too.
    auto limited = in_worker(config, 0.3, 200, true);
    const replay::Report cut = replay::replay_sequential(*a, *limited, {}, nullptr);
    EXPECT_EQ(kernel_named(cut, "relu_k").outcome, KernelOutcome::Failed);
    EXPECT_NE(kernel_named(cut, "relu_k").reason.find("time limit of 0.3 s"), std::string::npos)
        << kernel_named(cut, "relu_k").reason;
}

TEST(Worker, AnIssueThatThrowsFailsWithoutARestart) {
    auto a = unique_trace();
    FakeBackend config;
    config.fail_issue.insert(relu(2).instance_key());
    auto worker = in_worker(config);
    const replay::Report r =
        replay::replay_unique(*a, *worker, unique_options(replay::Context::None));
    const auto& relu_k = kernel_named(r, "relu_k");
    EXPECT_EQ(relu_k.outcome, KernelOutcome::Failed);
    EXPECT_NE(relu_k.reason.find("fake issue failure"), std::string::npos) << relu_k.reason;
    EXPECT_EQ(kernel_named(r, "gemm_k").samples_us.size(), 3u);
    EXPECT_FALSE(has_note(r, "restarted"));
}

TEST(Worker, AfterTooManyRestartsTheRestFailsWithTheReason) {
    auto a = unique_trace();
    FakeBackend config;
    config.abort_issue.insert(gemm(10).instance_key());
    // One restart allowed: the one that finds the GEMM at fault; none is left to go on.
    auto worker = in_worker(config, 10, 1);
    const replay::Report r =
        replay::replay_unique(*a, *worker, unique_options(replay::Context::None));
    EXPECT_EQ(kernel_named(r, "relu_k").outcome, KernelOutcome::Replayed);
    EXPECT_NE(kernel_named(r, "gemm_k").reason.find("signal 6"), std::string::npos);
    const auto& copy_k = kernel_named(r, "Memcpy DtoD (Device -> Device)");
    EXPECT_EQ(copy_k.outcome, KernelOutcome::Failed);
    EXPECT_NE(
        copy_k.reason.find("restarted 1 time after faults; the rest of the replay was given up"),
        std::string::npos)
        << copy_k.reason;
}

// Graphs, untagged timed records and the plan pass, through a worker: as in-process.
TEST(Worker, GraphsAndUntaggedRecordsComeBackAsInProcess) {
    auto a = two_stream_trace();
    FakeBackend config;
    config.graphs = true;
    config.not_capturable.insert(copy().instance_key());
    config.untag_when_timed = true;
    config.warm_ns = 300;
    replay::DriverOptions o;
    o.graph = true;
    o.warm_inputs = replay::DriverOptions::WarmInputs::All;
    o.iterations = 2;
    FakeBackend here = config;
    const replay::Report expected = replay::replay_sequential(*a, here, o, nullptr);
    auto worker = in_worker(config);
    const replay::Report got = replay::replay_sequential(*a, *worker, o, nullptr);
    ASSERT_EQ(got.kernels.size(), expected.kernels.size());
    for (std::size_t i = 0; i < got.kernels.size(); ++i) {
        EXPECT_EQ(got.kernels[i].outcome, KernelOutcome::Replayed) << got.kernels[i].name;
        EXPECT_EQ(got.kernels[i].samples_us, expected.kernels[i].samples_us) << got.kernels[i].name;
    }
    EXPECT_EQ(got.timeline->issue_path, "graph+direct");
    EXPECT_EQ(got.notes, expected.notes);
    ASSERT_EQ(got.timeline->iterations.size(), 2u);
    EXPECT_EQ(got.timeline->iterations[1].unattributed, 0u);
    EXPECT_EQ(got.timeline->iterations[1].replayed.span_us,
              expected.timeline->iterations[1].replayed.span_us);
}

// A crash in a timed iteration: the new worker gets the graph captured again (a launch of the
// old one would fault it), the plan is issued untimed again, and the iteration says so.
TEST(Worker, ACrashWhileTimedRePlansAndCapturesTheGraphsAgain) {
    auto a = two_stream_trace();
    FakeBackend config;
    config.graphs = true;
    config.not_capturable.insert(copy().instance_key());
    config.abort_when_timed.insert(copy().instance_key());
    replay::DriverOptions o;
    o.graph = true;
    o.iterations = 3;
    std::vector<std::string> progress;
    o.progress = [&](const std::string& line) { progress.push_back(line); };
    auto worker = in_worker(config);
    const replay::Report r = replay::replay_sequential(*a, *worker, o, nullptr);
    const auto& copy_k = kernel_named(r, "Memcpy DtoD (Device -> Device)");
    EXPECT_EQ(copy_k.outcome, KernelOutcome::Failed);
    EXPECT_NE(copy_k.reason.find("signal 6"), std::string::npos) << copy_k.reason;
    for (const char* name : {"relu_k", "gemm_k"}) {
        EXPECT_EQ(kernel_named(r, name).outcome, KernelOutcome::Replayed) << name;
        EXPECT_EQ(kernel_named(r, name).samples_us.size(), 3u) << name;
    }
    EXPECT_TRUE(has_note(r, "iteration 1: the device work moved to a new worker process"));
    EXPECT_TRUE(has_note(r, "issued untimed again before iteration 2"));
    EXPECT_FALSE(has_note(r, "the capture failed"));
    EXPECT_NE(std::find(progress.begin(), progress.end(),
                        "plan: issued again untimed after a worker restart"),
              progress.end());
    // The new worker was prepared and captured before it was told the Timed phase.
    EXPECT_TRUE(r.timeline->first_uses.empty());
}

TEST(Worker, ACrashInAGraphFailsTheWorkCapturedInIt) {
    auto a = two_stream_trace();
    FakeBackend config;
    config.graphs = true;
    config.not_capturable.insert(copy().instance_key());
    config.abort_when_timed.insert(gemm(10).instance_key());
    replay::DriverOptions o;
    o.graph = true;
    o.iterations = 2;
    auto worker = in_worker(config);
    const replay::Report r = replay::replay_sequential(*a, *worker, o, nullptr);
    for (const char* name : {"relu_k", "gemm_k"}) {
        const auto& k = kernel_named(r, name);
        EXPECT_EQ(k.outcome, KernelOutcome::Failed) << name;
        EXPECT_NE(k.reason.find("in a CUDA graph: the worker process was killed by signal 6"),
                  std::string::npos)
            << k.reason;
    }
    const auto& copy_k = kernel_named(r, "Memcpy DtoD (Device -> Device)");
    EXPECT_EQ(copy_k.outcome, KernelOutcome::Replayed);
    EXPECT_EQ(copy_k.samples_us.size(), 2u);
}

TEST(Worker, ABackendThatCannotRunSaysWhy) {
    std::string why;
    auto backend = replay::make_worker_backend(
        [](std::string& why_not) -> std::unique_ptr<replay::Backend> {
            why_not = "no such device here";
            return nullptr;
        },
        {}, why);
    EXPECT_EQ(backend, nullptr);
    EXPECT_EQ(why, "no such device here");
}

}  // namespace

// ---- Nsight hooks and the timeline --------------------------------------------------------------

namespace {

// "range" calls and the issue each one names, in order.
std::vector<std::string> ranges_and_issues(const FakeBackend& b) {
    std::vector<std::string> out;
    for (const auto& c : b.calls)
        if (c.what == "range")
            out.push_back("range " + c.recipe);
        else if (c.what == "issue")
            out.push_back("issue " + c.recipe + " #" + std::to_string(c.tag));
    return out;
}

TEST(Drivers, NvtxRangesNameTheKernelAndTheIteration) {
    auto a = two_stream_trace();
    FakeBackend b;
    replay::DriverOptions o;
    o.iterations = 2;
    o.nvtx = true;
    const replay::Report r = replay::replay_sequential(*a, b, o, nullptr);
    const auto id = [&](const std::string& name) { return kernel_named(r, name).id; };
    std::vector<std::string> expected;
    for (int it = 0; it <= 2; ++it)  // the untimed plan pass first, named "(plan)"
        for (const auto& [name, key, tag] :
             {std::tuple{std::string("relu_k"), relu(1).instance_key(), 1},
              std::tuple{std::string("gemm_k"), gemm(10).instance_key(), 2},
              std::tuple{std::string("Memcpy DtoD (Device -> Device)"), copy().instance_key(),
                         3}}) {
            expected.push_back("range " + replay::nvtx_range_name(id(name), name, it));
            expected.push_back("issue " + key + " #" + std::to_string(tag));
        }
    EXPECT_EQ(ranges_and_issues(b), expected);
    EXPECT_NE(std::find(r.options.begin(), r.options.end(),
                        std::pair<std::string, std::string>{"nvtx", "true"}),
              r.options.end());

    // Off by default: no range at all.
    FakeBackend quiet;
    replay::replay_sequential(*a, quiet, replay::DriverOptions{}, nullptr);
    EXPECT_TRUE(quiet.of("range").empty());
}

TEST(Drivers, UniqueOnlyTimesTheSelectedKernelAndNamesItsIssues) {
    auto a = unique_trace();
    FakeBackend probe;
    const std::string gemm_id =
        kernel_named(replay::replay_unique(*a, probe, unique_options(replay::Context::None)),
                     "gemm_k")
            .id;
    FakeBackend b;
    auto o = unique_options(replay::Context::Recorded, 0, 1);
    o.only = {gemm_id};
    o.nvtx = true;
    o.sequential_check = true;  // --only leaves it out: it would issue every kernel
    const replay::Report r = replay::replay_unique(*a, b, o);
    // One timed issue of one GEMM instance, inside its range; its predecessor (a relu) runs
    // untimed without one, so that ncu --nvtx-include selects the GEMM alone.
    const auto seq = ranges_and_issues(b);
    ASSERT_EQ(seq.size(), 3u) << ::testing::PrintToString(seq);
    EXPECT_EQ(seq[0], "issue " + relu(1).instance_key() + " #0");
    EXPECT_EQ(seq[1], "range " + replay::nvtx_range_name(gemm_id, "gemm_k", 1));
    EXPECT_EQ(seq[2], "issue " + gemm(10).instance_key() + " #1");
    EXPECT_EQ(kernel_named(r, "gemm_k").outcome, KernelOutcome::Replayed);
    EXPECT_EQ(kernel_named(r, "gemm_k").samples_us.size(), 1u);
    for (const char* other : {"relu_k", "Memcpy DtoD (Device -> Device)"}) {
        EXPECT_EQ(kernel_named(r, other).outcome, KernelOutcome::Skipped) << other;
        EXPECT_EQ(kernel_named(r, other).reason, "not selected by --only");
    }
    bool only_option = false;
    for (const auto& [k, v] : r.options) only_option |= k == "only" && v == gemm_id;
    EXPECT_TRUE(only_option);

    FakeBackend typo;
    o.only = {"not-an-id"};
    EXPECT_THROW(replay::replay_unique(*a, typo, o), std::runtime_error);
}

TEST(Drivers, SequentialTimelineCarriesKernelsAndRoundTripsAsKineto) {
    auto a = two_stream_trace();
    FakeBackend b;
    b.per_kernel[gemm(10).instance_key()] = {{"gemm_k", 12000}};  // recorded 10 us: +20%
    b.warm_ns = 300;
    replay::Timeline timeline;
    const replay::Report r = replay::replay_sequential(*a, b, replay::DriverOptions{}, &timeline);
    replay::attach_kernels(timeline, *a, r.environment);
    // Three recorded, three replayed and each replayed step's warm-up read.
    ASSERT_EQ(timeline.items.size(), 9u);
    const auto& gemm_k = kernel_named(r, "gemm_k");
    const replay::Timeline::Item* replayed_gemm = nullptr;
    std::size_t warm_reads = 0;
    for (const auto& item : timeline.items) {
        if (item.warm_read) {  // no activity: no node, kernel or error
            ++warm_reads;
            EXPECT_EQ(item.node, replay::kNoIndex);
            EXPECT_TRUE(item.kernel_id.empty());
            EXPECT_TRUE(std::isnan(item.error_pct()));
            continue;
        }
        EXPECT_NE(item.node, replay::kNoIndex);
        EXPECT_FALSE(item.kernel_id.empty());
        if (item.replayed && item.name == "gemm_k") replayed_gemm = &item;
    }
    EXPECT_EQ(warm_reads, 3u);
    ASSERT_NE(replayed_gemm, nullptr);
    EXPECT_EQ(replayed_gemm->iteration, 1);
    EXPECT_EQ(replayed_gemm->kernel_id, gemm_k.id);
    EXPECT_EQ(replayed_gemm->tier, Tier::Gemm);
    EXPECT_DOUBLE_EQ(replayed_gemm->recorded_dur_us, 10);
    EXPECT_NEAR(replayed_gemm->error_pct(), 20, 1e-9);

    std::ostringstream out;
    replay::write_replay_trace(out, timeline);
    const std::string text = out.str();
    // What HolisticTraceAnalysis and Perfetto look for.
    for (const char* needle :
         {"\"rank\": 0", "\"schemaVersion\": 1", "\"deviceProperties\"", "\"ProfilerStep#1\"",
          "\"ProfilerStep#2\"", "\"cat\":\"kernel\"", "\"cat\":\"gpu_memcpy\"",
          "\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\"", "\"cat\":\"ac2g\"",
          "\"cat\":\"replay\"", "\"error_pct\":20", "\"cat\":\"warm_read\""})
        EXPECT_NE(text.find(needle), std::string::npos) << needle;
    // Three recorded activities each get an arrow to their replay.
    std::size_t arrows = 0;
    for (auto at = text.find("\"cat\":\"replay\""); at != std::string::npos;
         at = text.find("\"cat\":\"replay\"", at + 1))
        ++arrows;
    EXPECT_EQ(arrows, 6u);  // a start and an end each

    replay::testing::TempFile file("replay_trace.json", text);
    const replay::Timeline back = replay::read_replay_trace(file.path(), 100);
    ASSERT_EQ(back.items.size(), 6u);  // warm-up reads are not read back
    for (std::size_t i = 0; i < 6; ++i) {
        const auto& item = back.items[i];
        // Recorded side first, each in start order, on its own clock again.
        EXPECT_EQ(item.replayed, i >= 3);
        const auto original = std::find_if(
            timeline.items.begin(), timeline.items.end(), [&](const replay::Timeline::Item& x) {
                return !x.warm_read && x.replayed == item.replayed && x.kernel_id == item.kernel_id;
            });
        ASSERT_NE(original, timeline.items.end());
        EXPECT_NEAR(item.start_us, original->start_us, 1e-6) << item.name;
        EXPECT_NEAR(item.dur_us, original->dur_us, 1e-6);
        EXPECT_EQ(item.stream, original->stream);
        EXPECT_EQ(item.tier, original->tier);
        if (item.replayed) {
            EXPECT_NEAR(item.recorded_dur_us, original->recorded_dur_us, 1e-9);
        }
    }
    EXPECT_EQ(replay::read_replay_trace(file.path(), 1).items.size(), 2u);  // one of each side
}

}  // namespace
