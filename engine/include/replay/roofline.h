// Roofline figures: a GPU's peak FLOP/s per operand type and its memory bandwidth, computed from
// the device's properties, the work a recipe does (FLOPs, bytes it must move at least), and how
// close a replayed kernel came to those peaks.
#pragma once

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "replay/recipe.h"

namespace replay {

// What the backend reads from the device (cudaDeviceProp / device attributes).
struct DeviceFigures {
    int compute_major = 0, compute_minor = 0;
    int sm_count = 0;
    double sm_clock_mhz = 0;      // the peak (boost) SM clock
    double memory_clock_mhz = 0;  // the peak memory clock (cudaDevAttrMemoryClockRate)
    int memory_bus_width_bits = 0;
};

struct DevicePeaks {
    // Dense peak per operand type (tensor cores where the architecture has them for the type,
    // the FP32 pipes for float32): SM count x SM clock x FLOP per clock per SM.
    std::vector<std::pair<DType, double>> tflops;
    // Memory clock x 2 (double data rate) x bus width / 8.
    double memory_gb_per_s = NAN;
    std::string why;  // why a figure is missing ("" when all are known)

    double tflops_of(DType dtype) const;  // NaN when unknown
};

// Pure arithmetic on the device's figures: Hopper (9.0) and Ampere (8.0) FLOP/clock/SM tables;
// other architectures get the bandwidth alone, with `why` saying so.
DevicePeaks device_peaks(const DeviceFigures& device);

// The least a GEMM must move: A and B read, C written (and read when beta != 0), the bias read.
double gemm_bytes(const GemmRecipe& gemm);

// The report environment keys of the peaks ("peak_tflops_float16", "peak_memory_gb_per_s").
std::string peak_tflops_key(DType dtype);
inline constexpr const char* kPeakMemoryKey = "peak_memory_gb_per_s";
// The operand types a peak is given for, in the order written.
const std::vector<DType>& peak_dtypes();

// Percent of a peak; NaN when the achieved rate or the peak is unknown.
inline double percent_of(double achieved, double peak) {
    return std::isfinite(achieved) && std::isfinite(peak) && peak > 0 ? achieved / peak * 100.0
                                                                      : NAN;
}

}  // namespace replay
