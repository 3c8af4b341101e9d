// The replay in a worker process (worker_backend.h): the same results as in process, crashes,
// sticky faults and hangs that cost one kernel, restarts, graphs across the wire.
#include <gtest/gtest.h>

#include "driver_fakes.h"

namespace {

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
