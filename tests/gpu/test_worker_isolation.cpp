// A device fault costs one kernel, not the run (CTest label `gpu`): the CUDA backend runs in a
// worker process (worker_backend.h); in mid-replay of a bundled BLOOM trace one GEMM's issue is
// followed by a kernel that fails a device-side assert, which poisons the worker's CUDA context.
// The report must name that GEMM failed with the assert, and every other kernel must come out as
// in a replay without the fault. Likewise for a kernel that spins for 2 minutes after that GEMM
// (a hang): the watchdog (--kernel-timeout 2) kills the worker and fails the GEMM. Skips, with the
// reason, where no GPU is usable. This process must not touch CUDA itself: the workers are forked
// from it.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>

#include "device_assert.h"
#include "replay/analysis.h"
#include "replay/cuda_backend.h"
#include "replay/drivers.h"
#include "replay/forwarding_backend.h"
#include "replay/worker_backend.h"

namespace replay {
namespace {

// What goes wrong right after the issue of the chosen work.
enum class Fault { None, Assert, Hang };

// The CUDA backend, with a failing device assert or a spinning kernel launched right after the
// issue of the work whose instance key is `key`.
class FaultAfterIssue final : public ForwardingBackend {
  public:
    FaultAfterIssue(std::unique_ptr<Backend> inner, std::string key, Fault fault)
        : ForwardingBackend(std::move(inner)), key_(std::move(key)), fault_(fault) {}

    Prepared prepare(const Recipe& recipe) override {
        Prepared p = inner().prepare(recipe);
        if (p.disposition == Disposition::Ready && recipe.instance_key() == key_)
            target_ = p.handle;
        return p;
    }
    void issue(std::uint32_t handle, int stream, std::uint64_t tag) override {
        inner().issue(handle, stream, tag);
        if (target_ != handle) return;
        if (fault_ == Fault::Assert)
            testing::launch_device_assert();
        else
            testing::launch_device_spin(120);
    }

  private:
    std::string key_;
    Fault fault_;
    std::optional<std::uint32_t> target_;
};

// A CUDA backend in a worker; `fault` follows the issues of the work whose key is `key`.
std::unique_ptr<Backend> cuda_in_worker(const std::string& key, Fault fault, std::string& why) {
    WorkerOptions options;
    if (fault == Fault::Hang) options.kernel_timeout_s = 2;
    return make_worker_backend(
        [key, fault](std::string& why_not) -> std::unique_ptr<Backend> {
            auto cuda = create_cuda_backend(BackendOptions{}, why_not);
            if (cuda == nullptr || fault == Fault::None) return cuda;
            return std::make_unique<FaultAfterIssue>(std::move(cuda), key, fault);
        },
        options, why);
}

class WorkerIsolation : public ::testing::Test {
  protected:
    void SetUp() override {
        const char* dir = std::getenv("REPLAY_SOURCE_DIR");
        AnalysisOptions options;
        options.trace_path =
            std::string(dir != nullptr ? dir : ".") + "/traces/h200/bloom560m_fp16_b1_s5.json.gz";
        analysis_ = analyze(options);
        // The GEMM issued in the middle of the step: work before and after it in one batch.
        const auto steps = plan_steps(analysis_->graph, analysis_->recipes);
        std::vector<const Step*> gemms;
        for (const auto& s : steps)
            if (analysis_->recipes.decision(s.issue_node).tier == Tier::Gemm) gemms.push_back(&s);
        ASSERT_FALSE(gemms.empty());
        const Step& target = *gemms[gemms.size() / 2];
        key_ = analysis_->recipes.recipe(target.issue_node).instance_key();
        for (const auto& k : analysis_->kernels)
            for (auto n : k.nodes)
                if (n == target.issue_node) {
                    target_id_ = k.id;
                    // Unique mode replays a few instances of each kernel, the first ones: with
                    // the dataflow inferred, each layer's GEMM has buffers of its own, so the
                    // middle one is not among them.
                    first_key_ = analysis_->recipes.recipe(k.nodes.front()).instance_key();
                }
        ASSERT_FALSE(target_id_.empty());
    }

    // Runs `replay` with a clean worker, then with one where `fault` follows the GEMM; checks
    // the report.
    template <typename Replay>
    void expect_one_kernel_lost(Replay replay, Fault fault = Fault::Assert,
                                const std::string* key = nullptr) {
        std::string why;
        auto clean = cuda_in_worker("", Fault::None, why);
        if (clean == nullptr) GTEST_SKIP() << "no CUDA backend: " << why;
        const Report expected = replay(*clean);
        clean.reset();
        auto faulty = cuda_in_worker(key != nullptr ? *key : key_, fault, why);
        ASSERT_NE(faulty, nullptr) << why;
        const Report got = replay(*faulty);

        std::map<std::string, const KernelResult*> before;
        for (const auto& k : expected.kernels) before[k.id] = &k;
        ASSERT_EQ(got.kernels.size(), expected.kernels.size());
        for (const auto& k : got.kernels) {
            const KernelResult& e = *before.at(k.id);
            if (k.id == target_id_) {
                EXPECT_EQ(e.outcome, KernelOutcome::Replayed) << "the clean run: " << e.reason;
                EXPECT_EQ(k.outcome, KernelOutcome::Failed) << k.name;
                // cudaErrorAssert (710): "device-side assert triggered"; a hang: the watchdog.
                EXPECT_NE(k.reason.find(fault == Fault::Assert ? "device-side assert"
                                                               : "ran past its time limit of 2 s"),
                          std::string::npos)
                    << k.reason;
                std::printf("failed as expected: %s: %s\n", k.name.c_str(), k.reason.c_str());
                continue;
            }
            EXPECT_EQ(k.outcome, e.outcome) << k.name << ": " << k.reason;
            EXPECT_EQ(k.samples_us.size(), e.samples_us.size()) << k.name;
        }
        bool restart_note = false;
        for (const auto& n : got.notes)
            restart_note |= n.find("restarted 1 time") != std::string::npos;
        EXPECT_TRUE(restart_note);
        std::printf("replayed kernel time: %.1f us with the fault, %.1f us without\n",
                    got.totals.replayed_kernel_us, expected.totals.replayed_kernel_us);
    }

    std::unique_ptr<Analysis> analysis_;
    std::string key_;        // the middle GEMM's issue
    std::string first_key_;  // the first issue of the same kernel
    std::string target_id_;
};

TEST_F(WorkerIsolation, SequentialReplayLosesOnlyTheKernelThatAsserted) {
    expect_one_kernel_lost([&](Backend& backend) {
        DriverOptions o;
        o.iterations = 2;
        return replay_sequential(*analysis_, backend, o, nullptr);
    });
}

TEST_F(WorkerIsolation, UniqueReplayLosesOnlyTheKernelThatAsserted) {
    expect_one_kernel_lost([&](Backend& backend) {
        DriverOptions o;
        o.warmup = 2;
        o.runs = 5;
        o.sequential_check = false;
        return replay_unique(*analysis_, backend, o);
    }, Fault::Assert, &first_key_);
}

TEST_F(WorkerIsolation, AHungKernelIsFailedByTheWatchdog) {
    expect_one_kernel_lost(
        [&](Backend& backend) { return replay_sequential(*analysis_, backend, {}, nullptr); },
        Fault::Hang);
}

}  // namespace
}  // namespace replay
