// The drivers' tests' hand-made traces, recipes, simulated energy board and fake backend (which
// records every call and returns made-up timings), shared by test_unique_driver.cpp,
// test_sequential_driver.cpp, test_energy_driver.cpp, test_worker_driver.cpp and
// test_nsight_driver.cpp. Everything is in an unnamed namespace: each test executable has its own.
#pragma once
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

inline Recipe aten_op(const std::string& op, std::int64_t storage) {
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

inline Recipe relu(std::int64_t storage) {
    return aten_op("aten::relu", storage);
}

inline Recipe gemm(std::int64_t a_storage, bool reduction = false) {
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

inline Recipe copy() {
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
inline std::unique_ptr<Analysis> analysis_of(const TraceBuilder& trace, const std::string& file,
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

inline const replay::KernelResult& kernel_named(const replay::Report& r, const std::string& name) {
    for (const auto& k : r.kernels)
        if (k.name == name) return k;
    throw std::runtime_error("no kernel " + name);
}

// ---- traces and options several drivers' tests share ---------------------------------------

// One stream: relu (storage 1), GEMM + split-K reduction (A in storage 10), relu (storage 2),
// GEMM + reduction (storage 11), relu (storage 1 again), a copy.
inline std::unique_ptr<Analysis> unique_trace() {
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

inline replay::DriverOptions unique_options(replay::Context context, int warmup = 2, int runs = 3) {
    replay::DriverOptions o;
    o.context = context;
    o.warmup = warmup;
    o.runs = runs;
    o.sequential_check = false;
    return o;
}

// One cudaGraphLaunch of `names` (back to back on stream 7), then an eager relu_k; graph node n
// gets the recipe relu(n + 1).
inline std::unique_ptr<Analysis> graph_then_eager(const std::vector<std::string>& names,
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
inline std::string note_with(const replay::Report& r, const std::string& part) {
    for (const auto& n : r.notes)
        if (n.find(part) != std::string::npos) return n;
    return {};
}

// Two streams: relu on 7, an event recorded after it, stream 8 waits for it and runs a GEMM,
// then 47 us after the relu ended on stream 7 a copy; a host sync.
inline std::unique_ptr<Analysis> two_stream_trace() {
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

inline bool has_note(const replay::Report& r, const std::string& text) {
    for (const auto& n : r.notes)
        if (n.find(text) != std::string::npos) return true;
    return false;
}

}  // namespace
