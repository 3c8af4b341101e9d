// Roofline figures: the device peaks from its properties, the least bytes of a GEMM, and the
// report's % of peak (report.json, kernels.csv), "n/a" where the environment has no peak.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "replay/kernels_csv.h"
#include "replay/report_json.h"
#include "replay/roofline.h"

namespace {

using replay::DType;

TEST(Roofline, HopperPeaksFromSmCountClockAndBus) {
    // H100 SXM: 132 SMs at the 1830 MHz the dense tensor figures are quoted at, HBM3 at
    // 2619 MHz on 5120 bits: 989.4 TFLOP/s fp16, 3352 GB/s.
    const auto p = replay::device_peaks({9, 0, 132, 1830, 2619, 5120});
    EXPECT_TRUE(p.why.empty()) << p.why;
    EXPECT_NEAR(p.tflops_of(DType::Float16), 989.4, 0.1);
    EXPECT_NEAR(p.tflops_of(DType::BFloat16), 989.4, 0.1);
    EXPECT_NEAR(p.tflops_of(DType::Float8E4M3), 1978.9, 0.1);
    EXPECT_NEAR(p.tflops_of(DType::Float32), 61.8, 0.1);
    EXPECT_NEAR(p.tflops_of(DType::Float64), 30.9, 0.1);
    EXPECT_NEAR(p.memory_gb_per_s, 3352.3, 0.1);
    // H200: 132 SMs at 1980 MHz, HBM3e at 3201 MHz on 6144 bits: 4916.7 GB/s.
    const auto h200 = replay::device_peaks({9, 0, 132, 1980, 3201, 6144});
    EXPECT_NEAR(h200.tflops_of(DType::Float16), 132 * 1.98e9 * 4096 / 1e12, 1e-6);
    EXPECT_NEAR(h200.memory_gb_per_s, 4916.7, 0.1);
}

TEST(Roofline, AmperePeaks) {
    // A100 SXM: 108 SMs at 1410 MHz: 312 TFLOP/s fp16, 19.5 fp32; HBM2e 1593 MHz x 5120 bits.
    const auto p = replay::device_peaks({8, 0, 108, 1410, 1593, 5120});
    EXPECT_NEAR(p.tflops_of(DType::Float16), 311.9, 0.1);
    EXPECT_NEAR(p.tflops_of(DType::Float32), 19.49, 0.01);
    EXPECT_NEAR(p.memory_gb_per_s, 2039.0, 0.1);
    EXPECT_TRUE(std::isnan(p.tflops_of(DType::Float8E4M3)));
}

TEST(Roofline, UnknownArchitectureKeepsTheBandwidthAndSaysWhy) {
    const auto p = replay::device_peaks({8, 9, 142, 2520, 2250, 384});
    EXPECT_TRUE(p.tflops.empty());
    EXPECT_NEAR(p.memory_gb_per_s, 2250e6 * 2 * 384 / 8 / 1e9, 1e-9);
    EXPECT_NE(p.why.find("8.9"), std::string::npos) << p.why;
    const auto nothing = replay::device_peaks({});
    EXPECT_TRUE(std::isnan(nothing.memory_gb_per_s));
    EXPECT_NE(nothing.why.find("bus width"), std::string::npos) << nothing.why;
    const auto no_clock = replay::device_peaks({9, 0, 132, 0, 2619, 5120});
    EXPECT_TRUE(no_clock.tflops.empty());
    EXPECT_NE(no_clock.why.find("SM clock"), std::string::npos) << no_clock.why;
}

TEST(Roofline, GemmBytesCountOperandsOnce) {
    replay::GemmRecipe g;
    g.m = 128, g.n = 256, g.k = 64, g.batch = 2;
    g.a_type = g.b_type = g.c_type = DType::Float16;
    EXPECT_EQ(replay::gemm_bytes(g), 2.0 * (128 * 64 + 64 * 256 + 128 * 256) * 2);
    g.beta = 1;  // C is read too
    EXPECT_EQ(replay::gemm_bytes(g), 2.0 * (128 * 64 + 64 * 256 + 2 * 128 * 256) * 2);
    g.bias = true;  // addmm's bias epilogue reads a row of n instead
    g.bias_type = DType::Float16;
    EXPECT_EQ(replay::gemm_bytes(g), 2.0 * (128 * 64 + 64 * 256 + 128 * 256) * 2 + 256 * 2);
    EXPECT_TRUE(std::isnan(replay::percent_of(NAN, 10)));
    EXPECT_TRUE(std::isnan(replay::percent_of(5, NAN)));
    EXPECT_EQ(replay::percent_of(5, 10), 50);
}

replay::Report gemm_and_copy_report(bool with_peaks) {
    replay::Report r;
    r.mode = "unique";
    r.backend = with_peaks ? "cuda" : "cpu";
    r.environment = {{"gpu", "test"}};
    r.environment.emplace_back(replay::peak_tflops_key(DType::Float16), with_peaks ? "1000" : "n/a");
    r.environment.emplace_back(replay::kPeakMemoryKey, with_peaks ? "4000" : "n/a");
    r.inputs = {{"trace", "t.json"}, {"trace_hash", "0"}};
    replay::KernelResult gemm;
    gemm.id = "g";
    gemm.name = "gemm";
    gemm.kind = "kernel";
    gemm.tier = replay::Tier::Gemm;
    gemm.outcome = replay::KernelOutcome::Replayed;
    gemm.recorded_us = replay::summarize({10});
    gemm.samples_us = {10, 10, 10};
    gemm.flops = 5e9;  // 5 GFLOP in 10 us: 500 TFLOP/s, half the peak
    gemm.bytes = 8e6;  // 8 MB in 10 us: 800 GB/s, a fifth of the bandwidth
    gemm.flop_dtype = DType::Float16;
    replay::KernelResult copy = gemm;
    copy.id = std::string(1, 'c');  // GCC 12's -Wrestrict misreads a one-letter literal here
    copy.name = "Memcpy DtoD";
    copy.kind = "memcpy";
    copy.tier = replay::Tier::Copy;
    copy.flops = 0;
    copy.bytes = 2e7;  // 20 MB in 10 us: 2000 GB/s, half the bandwidth
    copy.flop_dtype = DType::Unknown;
    r.kernels = {gemm, copy};
    replay::finalize_report(r);
    return r;
}

TEST(Roofline, ReportSharesOfPeakFromTheEnvironment) {
    const auto r = gemm_and_copy_report(true);
    EXPECT_NEAR(r.kernels[0].gflops_per_s, 500000, 1e-6);
    EXPECT_NEAR(r.kernels[0].pct_peak_flops, 50, 1e-9);
    EXPECT_NEAR(r.kernels[0].gb_per_s, 800, 1e-9);
    EXPECT_NEAR(r.kernels[0].pct_peak_bandwidth, 20, 1e-9);
    EXPECT_TRUE(std::isnan(r.kernels[1].gflops_per_s));
    EXPECT_NEAR(r.kernels[1].pct_peak_bandwidth, 50, 1e-9);

    // Through report.json and back.
    const auto path = std::filesystem::temp_directory_path() / "roofline_report.json";
    {
        std::ofstream out(path);
        replay::write_report_json(out, r);
    }
    const auto back = replay::read_report_json(path.string());
    std::filesystem::remove(path);
    EXPECT_EQ(back.kernels[0].flops, 5e9);
    EXPECT_EQ(back.kernels[0].bytes, 8e6);
    EXPECT_EQ(back.kernels[0].flop_dtype, DType::Float16);
    EXPECT_NEAR(back.kernels[0].pct_peak_flops, 50, 1e-9);
    EXPECT_NEAR(back.kernels[1].pct_peak_bandwidth, 50, 1e-9);

    std::ostringstream csv;
    replay::write_kernels_csv(csv, r);
    EXPECT_NE(csv.str().find(",5e+09,8e+06,50,20,"), std::string::npos) << csv.str();
}

TEST(Roofline, NoPeaksOnTheCpuBackendIsNotApplicable) {
    const auto r = gemm_and_copy_report(false);
    EXPECT_NEAR(r.kernels[0].gflops_per_s, 500000, 1e-6);  // the rate is still known
    EXPECT_TRUE(std::isnan(r.kernels[0].pct_peak_flops));
    EXPECT_TRUE(std::isnan(r.kernels[0].pct_peak_bandwidth));
    std::ostringstream csv;
    replay::write_kernels_csv(csv, r);
    EXPECT_NE(csv.str().find(",5e+09,8e+06,n/a,n/a,"), std::string::npos) << csv.str();
    // The copy has no FLOPs: its FLOP share is empty, its bandwidth share n/a.
    EXPECT_NE(csv.str().find(",,2e+07,,n/a,"), std::string::npos) << csv.str();
}

}  // namespace
