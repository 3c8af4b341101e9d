// The CUDA backend's side of sequential mode's timeline (CTest label `gpu`): a sealed plan that
// allocates and loads nothing, records that come back untagged in the Timed phase in stream
// order, and graphs whose kernels are tied to the issues that were captured. Each test skips,
// with the factory's reason, on a machine without a GPU. With REPLAY_TEST_ISOLATION=worker
// (CTest test_cuda_timeline_worker) the backend runs in a worker process (worker_backend.h), as
// `replay` runs it by default; this process then never touches CUDA itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "aten_arguments.h"
#include "replay/backend.h"
#include "replay/cuda_backend.h"
#include "replay/recipe.h"
#include "replay/worker_backend.h"

namespace replay {
namespace {

Recipe gemm_recipe(std::int64_t m, std::int64_t n, std::int64_t k) {
    GemmRecipe g;
    g.op = "aten::mm";
    g.m = m, g.n = n, g.k = k;
    g.lda = k, g.ldb = n, g.ldc = n;
    g.a_type = g.b_type = g.c_type = DType::Float16;
    g.a_reuse_bytes = 1 << 20;  // an activation the recording had in L2: a warm-up read
    Recipe r;
    r.tier = Tier::Gemm;
    r.detail = g;
    return r;
}

Recipe copy_recipe(CopyDirection direction, bool pinned, std::int64_t bytes, bool memset) {
    CopyRecipe c;
    c.direction = direction;
    c.host_pinned = pinned;
    c.bytes = bytes;
    c.is_memset = memset;
    Recipe r;
    r.tier = Tier::Copy;
    r.detail = c;
    return r;
}

// An aten op as the profiler records it: one float tensor, then scalar arguments as recorded.
Recipe float_op_recipe(const char* op, std::vector<std::int64_t> dims,
                       std::vector<const char*> scalars = {}) {
    AtenRecipe a;
    a.op = op;
    a.args.push_back(test::tensor_argument(DType::Float32, std::move(dims)));
    for (const char* value : scalars) a.args.push_back(test::scalar_argument(value));
    Recipe r;
    r.tier = Tier::AtenOp;
    r.detail = a;
    return r;
}

// Work records (warm-up reads apart) per tag, in start order.
std::map<std::uint64_t, std::vector<std::string>> names_by_tag(
    const std::vector<TimedActivity>& records, bool warm = false) {
    std::map<std::uint64_t, std::vector<std::string>> out;
    for (const auto& r : records)
        if (r.warm_read == warm) out[r.tag].push_back(r.name);
    return out;
}

class CudaTimelineTest : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string why;
        const char* isolation = std::getenv("REPLAY_TEST_ISOLATION");
        if (isolation != nullptr && std::string(isolation) == "worker")
            backend_ = make_worker_backend(
                [](std::string& why_not) { return create_cuda_backend(BackendOptions{}, why_not); },
                WorkerOptions{}, why);
        else
            backend_ = create_cuda_backend(BackendOptions{}, why);
        if (!backend_) GTEST_SKIP() << "no CUDA backend: " << why;
        if (backend_->environment().timing != "cupti") GTEST_SKIP() << "CUPTI unavailable";
    }
    std::uint32_t ready(const Recipe& recipe) {
        const Prepared p = backend_->prepare(recipe);
        EXPECT_EQ(p.disposition, Disposition::Ready) << p.reason;
        return p.handle;
    }
    std::unique_ptr<Backend> backend_;
};

TEST_F(CudaTimelineTest, ASealedPlanMakesNothingAndTimesWithoutCorrelationIds) {
    backend_->set_stream_count(1);
    const std::uint32_t gemm = ready(gemm_recipe(64, 1024, 1024));
    const std::uint32_t memset = ready(copy_recipe(CopyDirection::Device, false, 1 << 20, true));
    constexpr int kSteps = 200;
    auto pass = [&] {
        for (int s = 0; s < kSteps; ++s) {
            const std::uint32_t handle = s % 2 ? memset : gemm;
            backend_->warm_inputs(handle, 0, static_cast<std::uint64_t>(s) + 1);
            backend_->issue(handle, 0, static_cast<std::uint64_t>(s) + 1);
        }
    };
    // Plan phase: the first pass makes whatever it needs; its records are tagged.
    pass();
    backend_->synchronize();
    const auto planned = backend_->collect();
    const auto work = names_by_tag(planned);
    ASSERT_EQ(work.size(), static_cast<std::size_t>(kSteps));
    EXPECT_EQ(names_by_tag(planned, true).size(), static_cast<std::size_t>(kSteps / 2));

    backend_->set_phase(Phase::Timed);
    const auto start = std::chrono::steady_clock::now();
    pass();
    const double host_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count();
    backend_->synchronize();
    const auto timed = backend_->collect();
    const auto late = backend_->first_uses();
    backend_->set_phase(Phase::Plan);
    std::printf("timed pass: %.2f us of host time per issue (warm-up reads included)\n",
                host_us / kSteps);
    for (const auto& line : late) ADD_FAILURE() << "first use after the plan was sealed: " << line;
    // Untagged, on stream 0, in the order the steps ran: the same names as the tagged pass.
    std::vector<std::string> expected, got;
    for (const auto& [tag, names] : work) expected.insert(expected.end(), names.begin(), names.end());
    for (const auto& r : timed) {
        EXPECT_EQ(r.tag, 0u);
        EXPECT_EQ(r.stream, 0);
        if (r.name.find("l2_touch") == std::string::npos) got.push_back(r.name);
    }
    EXPECT_EQ(got, expected);
}

TEST_F(CudaTimelineTest, HoldsStartWorkOnTheDeviceClockAndLeaveNoRecords) {
    ASSERT_TRUE(backend_->environment().device_clock);
    backend_->set_stream_count(1);
    // A kernel (a memset may run on a copy engine, whose records need not say when it ran).
    const std::uint32_t gemm = ready(gemm_recipe(64, 256, 256));
    // Plan phase: the clock's kernels load here, not in the timed pass.
    backend_->start_device_clock(0);
    backend_->hold_after(0, 0);
    backend_->issue(gemm, 0, 1);
    backend_->synchronize();
    const auto planned = backend_->collect();
    ASSERT_FALSE(planned.empty());
    const std::size_t per_issue = planned.size();
    backend_->set_phase(Phase::Timed);
    // Eight GEMMs to start 40 us apart on the device, launched by the host as fast as it can
    // (about 20 us apart). The first launches after the phase change may be slow (CUPTI changes
    // its instrumentation): a hold reached late lets go at once, and the next counts from then;
    // once the host is ahead, each GEMM starts 40 us after the one before.
    constexpr std::int64_t kLead = 100'000, kApart = 40'000;
    constexpr std::size_t kIssues = 8;
    backend_->start_device_clock(0);
    for (std::size_t i = 0; i < kIssues; ++i) {
        backend_->hold_after(0, i == 0 ? kLead : kApart);
        backend_->issue(gemm, 0, i + 1);
    }
    backend_->synchronize();
    const auto timed = backend_->collect();
    const auto late = backend_->first_uses();
    backend_->set_phase(Phase::Plan);
    for (const auto& line : late) ADD_FAILURE() << "first use after the plan was sealed: " << line;
    // Only the GEMMs' records: the clock's kernels are pacing, not work.
    ASSERT_EQ(timed.size(), per_issue * kIssues);
    for (const auto& r : timed) EXPECT_EQ(r.name.find("replay_clock_"), std::string::npos);
    for (std::size_t i = 1; i < kIssues; ++i) {
        const double apart_us = static_cast<double>(timed[i * per_issue].start_ns -
                                                    timed[(i - 1) * per_issue].start_ns) /
                                1e3;
        std::printf("GEMM %zu started %.2f us after the one before (held 40 us apart)\n", i,
                    apart_us);
        if (i >= kIssues - 3) {
            EXPECT_NEAR(apart_us, 40.0, 2.0);
        }
    }
}

TEST_F(CudaTimelineTest, GraphKernelsAreTiedToTheIssuesThatWereCaptured) {
    backend_->set_stream_count(2);
    const std::uint32_t gemm = ready(gemm_recipe(64, 1024, 1024));
    const std::uint32_t memset = ready(copy_recipe(CopyDirection::Device, false, 1 << 20, true));
    for (auto handle : {gemm, memset}) EXPECT_EQ(backend_->capture_blocker(handle, 0), "");
    // Untimed, step by step: what each issue gives.
    backend_->issue(gemm, 0, 1);
    backend_->issue(memset, 1, 2);
    backend_->synchronize();
    const auto direct = names_by_tag(backend_->collect());

    backend_->begin_capture(0, true);
    backend_->warm_inputs(gemm, 0, 1);
    backend_->issue(gemm, 0, 1);
    backend_->stream_wait(1, 0);
    backend_->issue(memset, 1, 2);
    std::string why;
    const std::uint32_t graph = backend_->end_capture(why);
    ASSERT_NE(graph, 0u) << why;

    for (Phase phase : {Phase::Plan, Phase::Timed}) {
        backend_->set_phase(phase);
        backend_->launch_graph(graph);
        backend_->launch_graph(graph);
        backend_->synchronize();
        const auto records = backend_->collect();
        if (phase == Phase::Timed) {
            for (const auto& line : backend_->first_uses()) ADD_FAILURE() << line;
            backend_->set_phase(Phase::Plan);
        }
        // Per launch (records in start order): the memset starts after the GEMM's last kernel.
        std::vector<std::int64_t> gemm_ends, memset_starts;
        for (const auto& r : records) {
            EXPECT_NE(r.tag, 0u) << r.name << ": a graph's records are tagged in every phase";
            if (r.tag == 1 && !r.warm_read) {
                if (gemm_ends.size() == memset_starts.size()) gemm_ends.push_back(0);
                gemm_ends.back() = std::max(gemm_ends.back(), r.end_ns);
            }
            if (r.tag == 2) {
                memset_starts.push_back(r.start_ns);
                EXPECT_EQ(r.stream, 1);
            }
        }
        const auto work = names_by_tag(records);
        ASSERT_EQ(work.size(), 2u);
        for (const auto& [tag, names] : work) {
            ASSERT_EQ(names.size(), 2 * direct.at(tag).size()) << "tag " << tag;
            for (std::size_t i = 0; i < direct.at(tag).size(); ++i)
                EXPECT_EQ(names[i], direct.at(tag)[i]);
        }
        EXPECT_EQ(names_by_tag(records, true).at(1).size(), 2u);  // the warm-up read, twice
        ASSERT_EQ(memset_starts.size(), 2u);
        ASSERT_EQ(gemm_ends.size(), 2u);
        for (std::size_t i = 0; i < 2; ++i)
            EXPECT_GE(memset_starts[i], gemm_ends[i]) << "the captured wait was lost";
    }
}

// An op that draws random numbers is captured once libtorch knows of the capture (a GPT-2 step
// had its dropouts and cuDNN attention issued one by one without it), its graph runs, and the
// op still runs outside a graph afterwards, also after a capture that failed (which can leave
// libtorch's generator in capture mode).
TEST_F(CudaTimelineTest, OpsThatDrawRandomNumbersAreCaptured) {
    if (backend_->environment().libtorch_version.empty()) GTEST_SKIP() << "no libtorch";
    const Prepared dropout = backend_->prepare(  // GPT-2's dropout
        float_op_recipe("aten::native_dropout", {8, 128, 768}, {"0.10000000000000001", "True"}));
    ASSERT_EQ(dropout.disposition, Disposition::Ready) << dropout.reason;
    const Prepared nonzero = backend_->prepare(  // reads its output's size back on the host
        float_op_recipe("aten::nonzero", {1024}));
    ASSERT_EQ(nonzero.disposition, Disposition::Ready) << nonzero.reason;
    EXPECT_EQ(backend_->capture_blocker(dropout.handle, 0), "");
    const std::string blocked = backend_->capture_blocker(nonzero.handle, 0);
    std::printf("aten::nonzero: %s\n", blocked.c_str());
    EXPECT_NE(blocked, "");

    // A capture that fails: the op synchronizes.
    backend_->begin_capture(0, false);
    try {
        backend_->issue(nonzero.handle, 0, 3);
    } catch (const std::exception& e) {
        std::printf("aten::nonzero in a capture: %s\n", e.what());
    }
    std::string why;
    EXPECT_EQ(backend_->end_capture(why), 0u);
    std::printf("the failed capture: %s\n", why.c_str());
    EXPECT_EQ(why.find("could not be restored"), std::string::npos) << why;
    backend_->issue(dropout.handle, 0, 1);  // outside a graph, after the failed capture

    backend_->begin_capture(0, false);
    backend_->issue(dropout.handle, 0, 2);
    const std::uint32_t graph = backend_->end_capture(why);
    ASSERT_NE(graph, 0u) << why;
    backend_->launch_graph(graph);
    backend_->launch_graph(graph);
    backend_->issue(dropout.handle, 0, 4);  // and after the one that succeeded
    backend_->synchronize();
    const auto work = names_by_tag(backend_->collect());
    for (std::uint64_t tag : {1, 2, 4}) ASSERT_EQ(work.count(tag), 1u) << "tag " << tag;
    EXPECT_EQ(work.at(2).size(), 2 * work.at(1).size()) << "two launches of the graph";
    EXPECT_EQ(work.at(4).size(), work.at(1).size());
    for (const auto& name : work.at(2)) EXPECT_NE(name.find("dropout"), std::string::npos) << name;
    for (const auto& note : backend_->environment().notes)
        EXPECT_EQ(note.find("without libtorch"), std::string::npos) << note;
}

TEST_F(CudaTimelineTest, PageableCopiesAreNotCaptured) {
    const std::uint32_t pageable =
        ready(copy_recipe(CopyDirection::HostToDevice, false, 1 << 16, false));
    const std::uint32_t pinned =
        ready(copy_recipe(CopyDirection::HostToDevice, true, 1 << 16, false));
    EXPECT_NE(backend_->capture_blocker(pageable, 0).find("pageable"), std::string::npos);
    EXPECT_EQ(backend_->capture_blocker(pinned, 0), "");
    // A failed trial leaves the stream usable.
    backend_->issue(pageable, 0, 1);
    backend_->synchronize();
    EXPECT_EQ(names_by_tag(backend_->collect()).size(), 1u);
}

}  // namespace
}  // namespace replay
