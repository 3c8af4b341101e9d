// The sequential and unique drivers against a fake backend that records every call and returns
// made-up timings: what each mode issues, in which order, with which context, and how the timed
// activities that come back are attributed to the recorded kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "replay/analysis.h"
#include "replay/drivers.h"
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

Recipe relu(std::int64_t storage) {
    Recipe r;
    r.tier = Tier::AtenOp;
    r.rule = "test-aten";
    replay::AtenRecipe a;
    a.op = "aten::relu";
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
        a->recipes[n] = recipe_of(std::string(name), n);
    }
    a->kernels = replay::unique_kernels(a->graph, a->recipes);
    return a;
}

// ---- the fake backend -------------------------------------------------------------------------

struct Call {
    std::string what;    // prepare | streams | issue | wait | sync | flush | warm | delay | collect
    std::string recipe;  // prepare, issue, warm: the recipe's instance key
    int stream = -1;
    std::uint64_t tag = 0;
    std::int64_t value = 0;  // streams: count; wait: producer; delay: ns
};

class FakeBackend : public replay::Backend {
  public:
    // Per instance key: the activities one issue produces (name, ns); without an entry, one
    // whole-issue record of 1000 ns x (handle + 1).
    std::map<std::string, std::vector<std::pair<std::string, std::int64_t>>> per_kernel;
    std::set<std::string> skip;        // instance keys whose prepare says Skipped
    std::set<std::string> fail_issue;  // instance keys whose issue throws
    std::vector<Call> calls;

    replay::Environment environment() const override {
        replay::Environment e;
        e.backend = "fake";
        e.device_name = "made-up device";
        e.timing = per_kernel.empty() ? "host-clock" : "cupti";
        return e;
    }
    replay::Prepared prepare(const Recipe& recipe) override {
        const std::string key = recipe.instance_key();
        calls.push_back({"prepare", key});
        if (skip.count(key)) return {replay::Disposition::Skipped, "fake cannot run " + key, 0};
        keys_.push_back(key);
        return {replay::Disposition::Ready, "", static_cast<std::uint32_t>(keys_.size() - 1)};
    }
    void set_stream_count(int count) override { calls.push_back({"streams", "", -1, 0, count}); }
    void issue(std::uint32_t handle, int stream, std::uint64_t tag) override {
        const std::string& key = keys_.at(handle);
        calls.push_back({"issue", key, stream, tag});
        if (fail_issue.count(key)) throw std::runtime_error("fake issue failure of " + key);
        if (auto it = per_kernel.find(key); it != per_kernel.end()) {
            for (const auto& [name, ns] : it->second) record(tag, name, ns, stream, true);
            return;
        }
        record(tag, "recipe label", 1000 * static_cast<std::int64_t>(handle + 1), stream, false);
    }
    void stream_wait(int waiter, int producer) override {
        calls.push_back({"wait", "", waiter, 0, producer});
    }
    void synchronize() override { calls.push_back({"sync", ""}); }
    void flush_l2() override { calls.push_back({"flush", ""}); }
    void warm_inputs(std::uint32_t handle, int stream) override {
        calls.push_back({"warm", keys_.at(handle), stream});
    }
    void delay(int stream, std::int64_t ns) override {
        calls.push_back({"delay", "", stream, 0, ns});
    }
    std::vector<replay::TimedActivity> collect() override {
        calls.push_back({"collect", ""});
        return std::exchange(pending_, {});
    }

    std::vector<Call> of(const std::string& what) const {
        std::vector<Call> out;
        for (const auto& c : calls)
            if (c.what == what) out.push_back(c);
        return out;
    }

  private:
    void record(std::uint64_t tag, const std::string& name, std::int64_t ns, int stream,
                bool per_kernel_record) {
        replay::TimedActivity a;
        a.tag = tag;
        a.name = name;
        a.start_ns = clock_;
        a.end_ns = clock_ + ns;
        a.stream = stream;
        a.per_kernel = per_kernel_record;
        clock_ += ns + 500;
        pending_.push_back(a);
    }
    std::vector<std::string> keys_;  // handle -> instance key
    std::vector<replay::TimedActivity> pending_;
    std::int64_t clock_ = 1'000'000;
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
// one, as "flush,issue(key#tag),warm(key)" lines, per template in order.
std::vector<std::string> timed_sequence(const FakeBackend& b) {
    std::vector<std::string> lines;
    std::string line;
    for (const auto& c : b.calls) {
        if (c.what == "flush")
            line += "flush ";
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
    // inputs; the first relu has no predecessor.
    std::vector<std::string> expected;
    auto run = [&](const std::string& work, const std::string& before, int tag) {
        std::string line = "flush ";
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

TEST(Drivers, ARecordThatIsNotTheKernelsOwnFailsTheKernel) {
    auto a = unique_trace();
    FakeBackend b;
    // The GEMM's issue came back with its workspace memset only: never a 0.3 us GEMM sample.
    for (auto storage : {10, 11}) b.per_kernel[gemm(storage).instance_key()] = {{"Memset (Device)", 300}};
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

int slot_of(const Analysis& a, std::int64_t stream) {
    for (std::size_t i = 0; i < a.graph.streams().size(); ++i)
        if (a.graph.streams()[i].stream == stream) return static_cast<int>(i);
    throw std::runtime_error("no stream " + std::to_string(stream));
}

TEST(Drivers, SequentialKeepsStreamsWaitsAndRecordedGaps) {
    auto a = two_stream_trace();
    ASSERT_EQ(a->graph.waits().size(), 1u);
    const int s7 = slot_of(*a, 7), s8 = slot_of(*a, 8);
    FakeBackend b;
    replay::DriverOptions o;
    o.pace = replay::Pace::Recorded;
    o.iterations = 2;
    replay::Timeline timeline;
    const replay::Report r = replay::replay_sequential(*a, b, o, &timeline);

    EXPECT_EQ(b.of("streams").front().value, 2);
    // Per iteration, in recorded order: read-in and issue of the relu on 7; stream 8 waits for 7,
    // then the GEMM; on 7 the copy after a delay of the recorded idle gap (1003 us -> 1050 us).
    std::vector<std::string> got;
    for (const auto& c : b.calls) {
        std::string line = c.what;
        if (c.what == "issue" || c.what == "warm")
            line += " " + std::to_string(c.stream) + " " + c.recipe +
                    (c.what == "issue" ? " #" + std::to_string(c.tag) : "");
        else if (c.what == "wait")
            line += " " + std::to_string(c.stream) + "<-" + std::to_string(c.value);
        else if (c.what == "delay")
            line += " " + std::to_string(c.stream) + " " + std::to_string(c.value);
        else if (c.what != "sync" && c.what != "collect")
            continue;
        got.push_back(line);
    }
    const std::string relu_key = relu(1).instance_key();
    const std::string gemm_key = gemm(10).instance_key();
    const std::string copy_key = copy().instance_key();
    std::vector<std::string> one = {"warm " + std::to_string(s7) + " " + relu_key,
                                    "issue " + std::to_string(s7) + " " + relu_key + " #1",
                                    "wait " + std::to_string(s8) + "<-" + std::to_string(s7),
                                    "warm " + std::to_string(s8) + " " + gemm_key,
                                    "issue " + std::to_string(s8) + " " + gemm_key + " #2",
                                    "delay " + std::to_string(s7) + " 47000",
                                    "warm " + std::to_string(s7) + " " + copy_key,
                                    "issue " + std::to_string(s7) + " " + copy_key + " #3",
                                    "sync",
                                    "collect"};
    std::vector<std::string> expected = one;
    expected.insert(expected.end(), one.begin(), one.end());
    EXPECT_EQ(got, expected);

    // One sample per recorded instance and iteration.
    for (const auto& k : r.kernels) {
        EXPECT_EQ(k.outcome, KernelOutcome::Replayed) << k.name;
        EXPECT_EQ(k.samples_us.size(), 2u) << k.name;
    }
    EXPECT_EQ(r.mode, "sequential");
    bool sync_note = false;
    for (const auto& n : r.notes) sync_note |= n.find("1 recorded host synchronisations") == 0;
    EXPECT_TRUE(sync_note);

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
    EXPECT_EQ(replayed_start, 0);
    EXPECT_EQ(recorded_start, 0);
    EXPECT_EQ(timeline.items[3].name, "relu_k");
    EXPECT_DOUBLE_EQ(timeline.items[4].start_us, 4);  // the GEMM 4 us after the relu
    EXPECT_DOUBLE_EQ(timeline.items[4].dur_us, 10);
}

TEST(Drivers, SequentialWithoutPacingOrWarmInputs) {
    auto a = two_stream_trace();
    FakeBackend b;
    replay::DriverOptions o;
    o.warm_inputs = false;
    replay::replay_sequential(*a, b, o, nullptr);
    EXPECT_TRUE(b.of("delay").empty());
    EXPECT_TRUE(b.of("warm").empty());
    EXPECT_EQ(b.of("issue").size(), 3u);
    EXPECT_EQ(b.of("wait").size(), 1u);
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

}  // namespace
