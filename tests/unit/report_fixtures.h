// The report tests' hand-made report (three kernels, a memcpy and a kernel without a recipe, every
// figure of finalize_report worked out by hand) and file helpers, shared by test_report.cpp and
// test_report_energy.cpp. In an unnamed namespace: each test executable has its own.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "replay/kernels_csv.h"
#include "replay/report.h"
#include "replay/report_energy.h"
#include "replay/report_json.h"
#include "replay/report_summary.h"
#include "replay/source.h"
#include "replay/timeline.h"

namespace {

using replay::KernelOutcome;
using replay::KernelResult;
using replay::Report;
using replay::Tier;

inline std::string temp_path(const std::string& name) {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("replay_test_report_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    return (dir / name).string();
}

inline void write_file(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
}

inline KernelResult kernel(const std::string& id, const std::string& name, const std::string& kind,
                           Tier tier, std::vector<double> recorded, std::vector<double> samples) {
    KernelResult k;
    k.id = id;
    k.name = name;
    k.kind = kind;
    k.tier = tier;
    k.rule = tier == Tier::NotReplayable ? "unknown_kernel" : "rule_" + id;
    k.outcome = samples.empty()
                    ? (tier == Tier::NotReplayable ? replay::KernelOutcome::NotReplayable
                                                   : replay::KernelOutcome::Failed)
                    : replay::KernelOutcome::Replayed;
    k.count = recorded.size();
    k.recorded_us = replay::summarize(recorded);
    k.samples_us = std::move(samples);
    if (!k.samples_us.empty()) {
        k.replayed_names = {name};
        k.name_match = true;  // as a driver with per-kernel timing sets it
    }
    return k;
}

// Three kernels and one memcpy; every figure of finalize_report can be worked out by hand.
inline Report hand_made() {
    Report r;
    r.tool_version = "0.1.0-test";
    r.mode = "unique";
    r.backend = "cuda";
    r.environment = {{"gpu", "NVIDIA H100 80GB HBM3"},
                     {"driver", "550.54.15"},
                     {"cuda", "12.4"},
                     {"cublas", "12.4.5"},
                     {"libtorch", "2.4.0"},
                     {"timing", "cupti"}};
    r.inputs = {{"trace", "t.json.gz"}, {"trace_hash", "0123456789abcdef"}};
    r.options = {{"warmup", "5"}, {"runs", "3"}, {"l2_flush", "true"}};
    // GEMM: recorded 3 x 10 us, replayed 11, 11, 11 -> +10%, name matches.
    auto gemm = kernel("aaaa", "sm90_xmma_gemm_f16f16_f16f32, \"tn\"", "kernel", Tier::Gemm,
                       {10, 10, 10}, {11, 11, 11});
    gemm.gflops_per_s = 512.5;
    // Second GEMM: recorded 2 x 5 us, replayed 4, 4, 4 -> -20%, another cuBLAS kernel ran.
    auto gemm2 = kernel("bbbb", "ampere_h16816gemm_64x64", "kernel", Tier::Gemm, {5, 5}, {4, 4, 4});
    gemm2.replayed_names = {"sm90_other_gemm"};
    gemm2.name_match = false;
    // aten op: recorded 4 x 2 us; replayed 2, 3, 4 (median 3, mean 3) -> +50%.
    auto aten = kernel("cccc", "vectorized_elementwise_kernel<4, at::native::add>", "kernel",
                       Tier::AtenOp, {2, 2, 2, 2}, {2, 3, 4});
    // Not replayable: 20 us recorded.
    auto other = kernel("dddd", "custom_triton_kernel", "kernel", Tier::NotReplayable, {20}, {});
    other.reason = "no rule for this kernel";
    // A memcpy: 2 x 1 us recorded, replayed 1.5 -> +50%; not part of the kernel figures.
    auto copy = kernel("eeee", "Memcpy HtoD (Pinned -> Device)", "memcpy", Tier::Copy, {1, 1},
                       {1.5, 1.5, 1.5});
    copy.gb_per_s = 12.25;
    r.kernels = {gemm, gemm2, aten, other, copy};
    r.totals.recipe_coverage = 40.0 / 60.0;
    r.totals.wall_seconds = 1.5;
    r.notes = {"a note, with a comma", "another \"quoted\" note"};
    return r;
}

inline void expect_same_double(double a, double b) {
    if (std::isnan(a))
        EXPECT_TRUE(std::isnan(b));
    else
        EXPECT_EQ(a, b);
}

// A minimal RFC 4180 reader for the checks below.
inline std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
    std::vector<std::vector<std::string>> rows(1);
    std::string cell;
    bool quoted = false, row_open = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quoted) {
            if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
                cell += '"';
                ++i;
            } else if (c == '"') {
                quoted = false;
            } else {
                cell += c;
            }
        } else if (c == '"') {
            quoted = true;
            row_open = true;
        } else if (c == ',') {
            rows.back().push_back(cell);
            cell.clear();
            row_open = true;
        } else if (c == '\n') {
            rows.back().push_back(cell);
            cell.clear();
            rows.emplace_back();
            row_open = false;
        } else {
            cell += c;
            row_open = true;
        }
    }
    if (row_open) rows.back().push_back(cell);
    if (rows.back().empty()) rows.pop_back();
    return rows;
}

}  // namespace
