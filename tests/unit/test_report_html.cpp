// report.html from hand-made inputs: every chart holds as many marks as it says (the e2e test
// counts them again in a browser), names cannot break out of the page, energy shows where a
// report has it and only there, nothing is loaded from elsewhere.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "replay/regression.h"
#include "replay/report_html.h"

namespace {

using replay::KernelOutcome;
using replay::Tier;

replay::KernelResult kernel(const std::string& id, const std::string& name, Tier tier,
                            std::vector<double> recorded, std::vector<double> samples) {
    replay::KernelResult k;
    k.id = id;
    k.name = name;
    k.kind = tier == Tier::Copy ? "memcpy" : "kernel";
    k.tier = tier;
    k.outcome = samples.empty() ? KernelOutcome::NotReplayable : KernelOutcome::Replayed;
    k.count = recorded.size();
    k.recorded_us = replay::summarize(std::move(recorded));
    k.samples_us = std::move(samples);
    return k;
}

replay::Report report(double gemm_scale) {
    replay::Report r;
    r.mode = "sequential";
    r.backend = "cpu";
    r.environment = {{"gpu", "test"}};
    r.inputs = {{"trace", "traces/x.json.gz"}, {"trace_hash", "ab"}};
    std::vector<double> gemm_samples;
    for (int i = 0; i < 12; ++i) gemm_samples.push_back(gemm_scale * (10 + 0.01 * i));
    r.kernels = {kernel("g1", "gemm</script><b>bold</b>", Tier::Gemm, {10, 10}, gemm_samples),
                 kernel("a1", "void at::native::add<float>(int)", Tier::AtenOp, {2, 2, 2},
                        std::vector<double>(12, 2.1)),
                 kernel("c1", "Memcpy HtoD", Tier::Copy, {1}, std::vector<double>(12, 1.2)),
                 kernel("n1", "triton_kernel", Tier::NotReplayable, {5}, {})};
    replay::finalize_report(r);
    return r;
}

replay::Timeline timeline() {
    replay::Timeline t;
    for (int side = 0; side < 2; ++side)
        for (int i = 0; i < 5; ++i) {
            replay::Timeline::Item item;
            item.name = i % 2 ? "gemm" : "add";
            item.kernel_id = i % 2 ? "g1" : "a1";
            item.tier = i % 2 ? Tier::Gemm : Tier::AtenOp;
            item.stream = i < 3 ? 7 : 8;
            item.start_us = 10.0 * i;
            item.dur_us = 5;
            item.replayed = side == 1;
            item.recorded_dur_us = item.replayed ? 4 : NAN;
            t.items.push_back(item);
        }
    return t;
}

// data-chart name -> (data-points, marks of class "point" inside).
std::map<std::string, std::vector<std::pair<int, int>>> charts(const std::string& page) {
    std::map<std::string, std::vector<std::pair<int, int>>> out;
    const std::regex open("<div class=\"chart\" data-chart=\"([a-z]+)\" data-points=\"([0-9]+)\"");
    std::vector<std::tuple<std::string, int, std::size_t>> starts;
    for (auto it = std::sregex_iterator(page.begin(), page.end(), open);
         it != std::sregex_iterator(); ++it)
        starts.emplace_back((*it)[1], std::stoi((*it)[2]), it->position());
    for (std::size_t i = 0; i < starts.size(); ++i) {
        const auto& [name, points, at] = starts[i];
        const std::size_t end = i + 1 < starts.size() ? std::get<2>(starts[i + 1]) : page.size();
        const std::string body = page.substr(at, end - at);
        const std::regex mark("class=\"(act )?point[ \"]");
        const auto marks = std::distance(std::sregex_iterator(body.begin(), body.end(), mark),
                                         std::sregex_iterator());
        out[name].emplace_back(points, static_cast<int>(marks));
    }
    return out;
}

std::string page(const replay::HtmlReportInput& input, replay::HtmlReportOptions options = {}) {
    std::ostringstream out;
    replay::write_report_html(out, input, options);
    return out.str();
}

TEST(ReportHtml, ChartsHoldTheirPointsAndTheTimelineBothSides) {
    const auto r = report(1.0);
    const auto t = timeline();
    replay::HtmlReportInput in;
    in.report = &r;
    in.timeline = &t;
    const std::string html = page(in);
    const auto c = charts(html);
    ASSERT_EQ(c.count("scatter"), 1u);
    EXPECT_EQ(c.at("scatter")[0], std::make_pair(3, 3));  // three replayed kernels
    EXPECT_EQ(c.at("tiers")[0], std::make_pair(12, 12));  // four tiers, three bars each
    EXPECT_EQ(c.at("timeline")[0], std::make_pair(10, 10));
    EXPECT_EQ(c.count("distribution"), 0u);
    EXPECT_EQ(c.count("energy"), 0u);
    EXPECT_EQ(html.find("id=\"energy\""), std::string::npos);
    // Two lanes (streams 7 and 8) on each side, the first N items per side when asked for.
    replay::HtmlReportOptions few;
    few.timeline_items = 2;
    EXPECT_EQ(charts(page(in, few)).at("timeline")[0], std::make_pair(4, 4));
    // A timeline of every iteration draws the last one beside the recording, warm-up reads left
    // out: an earlier iteration and a warm-up read add no mark.
    auto several = t;
    for (auto& item : several.items)
        if (item.replayed) item.iteration = 2;
    auto earlier = several.items.back();
    earlier.iteration = 1;
    several.items.push_back(earlier);
    auto warm = several.items.back();
    warm.iteration = 2;
    warm.warm_read = true;
    warm.kernel_id.clear();
    several.items.push_back(warm);
    in.timeline = &several;
    EXPECT_EQ(charts(page(in)).at("timeline")[0], std::make_pair(10, 10));
    in.timeline = &t;
    // Self-contained: no script, style or image from anywhere else.
    EXPECT_EQ(html.find("src="), std::string::npos);
    EXPECT_EQ(html.find("href="), std::string::npos);
    EXPECT_EQ(html.find("@import"), std::string::npos);
}

TEST(ReportHtml, NamesCannotBreakOutOfThePage) {
    const auto r = report(1.0);
    replay::HtmlReportInput in;
    in.report = &r;
    const std::string html = page(in);
    EXPECT_EQ(html.find("<b>bold</b>"), std::string::npos);
    EXPECT_NE(html.find("gemm&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;"), std::string::npos);
    // In the kernel data block, "<" is escaped: the only "</script>" are the blocks' own ends.
    std::size_t scripts = 0, ends = 0;
    for (auto at = html.find("<script"); at != std::string::npos; at = html.find("<script", at + 1))
        ++scripts;
    for (auto at = html.find("</script>"); at != std::string::npos;
         at = html.find("</script>", at + 1))
        ++ends;
    EXPECT_EQ(scripts, ends);
    EXPECT_NE(html.find("gemm\\u003c/script>"), std::string::npos);
}

TEST(ReportHtml, ChangedKernelsWithTheirSamples) {
    const auto base = report(1.0);
    const auto cur = report(1.3);  // the GEMM 30% slower, steady samples: regressed
    const auto reg = replay::compare_reports(base, cur);
    ASSERT_EQ(reg.summary.regressed, 1u);
    replay::HtmlReportInput in;
    in.report = &cur;
    in.baseline = &base;
    in.regression = &reg;
    const std::string html = page(in);
    const auto c = charts(html);
    ASSERT_EQ(c.count("distribution"), 1u);
    EXPECT_EQ(c.at("distribution")[0], std::make_pair(24, 24));  // 12 samples a side
    EXPECT_NE(html.find("regressed +30 %"), std::string::npos);
    replay::HtmlReportOptions few;
    few.samples_per_side = 5;
    EXPECT_EQ(charts(page(in, few)).at("distribution")[0], std::make_pair(10, 10));
}

// A median whose sample ran at two speeds says so in the kernel table (report.json's
// recorded_groups / replayed_groups); a one-speed median is shown alone.
TEST(ReportHtml, AMedianOfTwoSpeedsSaysSo) {
    auto r = report(1.0);
    const std::vector<double> recorded = {5.5, 7.1, 5.4, 7.0, 5.6, 7.1, 5.5, 7.2};
    r.kernels[0].recorded_us = replay::summarize(recorded);
    r.kernels[0].recorded_groups =
        replay::stats::two_groups(recorded, replay::stats::kTwoSpeedsLeastGapUs);
    r.kernels[0].samples_us = {5.8, 7.9, 7.8, 5.9, 8.0, 7.9, 7.8, 7.9};
    replay::finalize_report(r);
    replay::HtmlReportInput in;
    in.report = &r;
    const std::string html = page(in);
    EXPECT_NE(html.find(">6.3 (two speeds: 4 @ 5.5, 4 @ 7.1)<"), std::string::npos);
    EXPECT_NE(html.find(">7.85 (two speeds: 2 @ 5.85, 6 @ 7.9)<"), std::string::npos);
    const std::size_t add_row = html.find("at::native::add&lt;float&gt;(int)</td>");
    ASSERT_NE(add_row, std::string::npos);
    const std::string row = html.substr(add_row, html.find("</tr>", add_row) - add_row);
    EXPECT_EQ(row.find("two speeds"), std::string::npos) << row;
}

// --energy's figures (report.h: ReportEnergy, KernelEnergy): the step and the sum over kernels as
// cards, the kernels measured in a table and a chart; a figure that is NaN (null in report.json)
// is left out, never shown as 0.
TEST(ReportHtml, EnergyOfTheReport) {
    auto r = report(1.0);
    replay::HtmlReportInput in;
    in.report = &r;
    EXPECT_EQ(page(in).find("id=\"energy\""), std::string::npos);  // not asked for

    r.energy.requested = true;
    r.energy.probe.available = true;
    r.energy.probe.idle_power_w = 71.5;
    r.energy.step.mj = 12.5;
    r.energy.step.dynamic_mj = 8;
    r.kernels[0].energy.samples_uj = {800, 812.5, 830};
    r.kernels[0].energy.dynamic_uj = 600;
    r.kernels[1].energy.samples_uj = {40, 40, 40};
    replay::finalize_report(r);
    const std::string html = page(in);
    const auto c = charts(html);
    ASSERT_EQ(c.count("energy"), 1u);
    EXPECT_EQ(c.at("energy")[0], std::make_pair(2, 2));  // the two kernels measured
    EXPECT_NE(html.find(">12.5</div><div class=\"k\">replayed step, mJ<"), std::string::npos);
    EXPECT_NE(html.find(">71.5</div><div class=\"k\">idle power, W<"), std::string::npos);
    EXPECT_EQ(html.find("sum over kernels, mJ"), std::string::npos);  // NaN: no figure, not a 0
    EXPECT_NE(html.find(">812.5<"), std::string::npos);

    // Asked for and not readable: the section says why, with no figures.
    auto na_report = report(1.0);
    na_report.energy.requested = true;
    na_report.energy.probe.why = "the cpu backend has no energy counter";
    in.report = &na_report;
    const std::string na = page(in);
    EXPECT_NE(na.find("Energy n/a: the cpu backend has no energy counter"), std::string::npos);
    EXPECT_EQ(charts(na).count("energy"), 0u);
}

}  // namespace
