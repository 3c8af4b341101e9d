// Sequential mode against the fake backend: streams and waits, recorded pacing, the plan issued
// before the clock starts, CUDA graphs, warm-up reads, and untagged records tied to their steps.
#include <gtest/gtest.h>

#include "driver_fakes.h"

namespace {

// ---- sequential mode --------------------------------------------------------------------------

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

}  // namespace
