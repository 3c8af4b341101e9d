// --energy against a simulated board: the probe of its counter and power periods, unique mode's
// joules per launch, the sequential step's energy and power track, and energy regressions.
#include <gtest/gtest.h>

#include "driver_fakes.h"

namespace {

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

}  // namespace
