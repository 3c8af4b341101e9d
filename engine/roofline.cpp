#include "replay/roofline.h"

namespace replay {
namespace {

struct FlopsPerClock {
    DType dtype;
    double per_sm;  // dense FLOP per clock per SM (an FMA counts 2)
};

// Dense figures of the whitepapers: H100 SXM 989 TFLOP/s fp16 = 132 SMs x 1830 MHz x 4096;
// A100 312 TFLOP/s fp16 = 108 x 1410 MHz x 2048. FP32 is the CUDA-core rate (no TF32).
const std::vector<FlopsPerClock>* flops_table(int major, int minor) {
    static const std::vector<FlopsPerClock> hopper = {
        {DType::Float16, 4096},   {DType::BFloat16, 4096},  {DType::Float8E4M3, 8192},
        {DType::Float8E5M2, 8192}, {DType::Float32, 256},   {DType::Float64, 128}};
    static const std::vector<FlopsPerClock> ampere = {{DType::Float16, 2048},
                                                      {DType::BFloat16, 2048},
                                                      {DType::Float32, 128},
                                                      {DType::Float64, 128}};
    if (major == 9 && minor == 0) return &hopper;
    if (major == 8 && minor == 0) return &ampere;
    return nullptr;
}

}  // namespace

double DevicePeaks::tflops_of(DType dtype) const {
    for (const auto& [d, t] : tflops)
        if (d == dtype) return t;
    return NAN;
}

DevicePeaks device_peaks(const DeviceFigures& d) {
    DevicePeaks p;
    if (d.memory_clock_mhz > 0 && d.memory_bus_width_bits > 0)
        p.memory_gb_per_s = d.memory_clock_mhz * 1e6 * 2.0 * d.memory_bus_width_bits / 8.0 / 1e9;
    else
        p.why = "memory clock or bus width unknown";
    const auto* table = flops_table(d.compute_major, d.compute_minor);
    if (table == nullptr) {
        if (!p.why.empty()) p.why += "; ";
        p.why += "no FLOP/clock table for compute capability " + std::to_string(d.compute_major) +
                 "." + std::to_string(d.compute_minor);
        return p;
    }
    if (d.sm_count <= 0 || d.sm_clock_mhz <= 0) {
        if (!p.why.empty()) p.why += "; ";
        p.why += "SM count or SM clock unknown";
        return p;
    }
    for (const auto& [dtype, per_sm] : *table)
        p.tflops.emplace_back(dtype, d.sm_count * d.sm_clock_mhz * 1e6 * per_sm / 1e12);
    return p;
}

double gemm_bytes(const GemmRecipe& g) {
    const double batch = static_cast<double>(g.batch);
    const double m = static_cast<double>(g.m), n = static_cast<double>(g.n),
                 k = static_cast<double>(g.k);
    const double c_size = static_cast<double>(element_size(g.c_type));
    double bytes = batch * (m * k * static_cast<double>(element_size(g.a_type)) +
                            k * n * static_cast<double>(element_size(g.b_type)) + m * n * c_size);
    if (g.beta != 0 && !g.bias) bytes += (g.c_broadcast ? n : batch * m * n) * c_size;
    if (g.bias) bytes += n * static_cast<double>(element_size(g.bias_type));
    return bytes;
}

std::string peak_tflops_key(DType dtype) {
    return std::string("peak_tflops_") + to_string(dtype);
}

const std::vector<DType>& peak_dtypes() {
    static const std::vector<DType> types = {DType::Float16,    DType::BFloat16,
                                             DType::Float8E4M3, DType::Float8E5M2,
                                             DType::Float32,    DType::Float64};
    return types;
}

}  // namespace replay
