// GEMM and copy preparation: operands with the recipe's shapes, transposes and leading
// dimensions for at::mm & co.; host and device buffers of the recorded size for copies.
#include <algorithm>

#include "runner_impl.h"

namespace replay {

using torch_detail::CopyWork;
using torch_detail::dtype_missing_reason;
using torch_detail::Fill;
using torch_detail::GemmWork;
using torch_detail::is_reduced_float;
using torch_detail::reduced_float_note;
using torch_detail::scalar_type_of;

Prepared TorchOpRunner::Impl::prepare_gemm(const GemmRecipe& g) {
    Prepared result;
    if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.batch <= 0) {
        result.reason = "GEMM with an empty dimension";
        return result;
    }
    const auto dtype = scalar_type_of(g.a_type);
    if (!dtype) {
        result.reason = dtype_missing_reason(g.a_type);
        return result;
    }
    if (*dtype != at::kFloat && *dtype != at::kDouble && !is_reduced_float(*dtype) &&
        !at::isComplexType(*dtype)) {
        result.reason = std::string("at::mm has no ") + to_string(g.a_type) +
                        " GEMM (float8 GEMMs go through _scaled_mm)";
        return result;
    }
    const bool batched = g.op == "aten::bmm" || g.op == "aten::baddbmm" || g.batch > 1;
    // Row-major operand (rows x cols): strides (ld, 1), or (1, ld) when stored transposed.
    auto operand = [&](std::int64_t rows, std::int64_t cols, bool trans, std::int64_t ld,
                       std::int64_t batch_stride) {
        TensorSpec spec;
        ld = std::max(ld, trans ? rows : cols);
        spec.dims = {rows, cols};
        spec.strides = trans ? std::vector<std::int64_t>{1, ld} : std::vector<std::int64_t>{ld, 1};
        if (batched) {
            const std::int64_t natural = (trans ? cols : rows) * ld;
            // 0 is a real broadcast (an expanded operand); negative or missing means natural.
            if (batch_stride < 0 || (batch_stride == 0 && g.batch == 1)) batch_stride = natural;
            spec.dims.insert(spec.dims.begin(), g.batch);
            spec.strides.insert(spec.strides.begin(), batch_stride);
        }
        return spec;
    };
    const TensorSpec a = operand(g.m, g.k, g.trans_a, g.lda, g.stride_a);
    const TensorSpec b = operand(g.k, g.n, g.trans_b, g.ldb, g.stride_b);
    const TensorSpec c = operand(g.m, g.n, false, g.ldc, g.stride_c > 0 ? g.stride_c : -1);
    TensorSpec self;  // the added term of addmm/baddbmm
    GemmWork work;
    work.alpha = g.alpha;
    work.beta = g.beta;
    const bool adds = g.bias || g.beta != 0.0 || g.op == "aten::addmm" || g.op == "aten::baddbmm";
    if (batched) {
        work.call = adds || g.alpha != 1.0 ? GemmWork::Call::Baddbmm : GemmWork::Call::Bmm;
        self.dims = g.c_broadcast ? std::vector<std::int64_t>{g.batch, 1, g.n}
                                  : std::vector<std::int64_t>{g.batch, g.m, g.n};
    } else {
        work.call = adds || g.alpha != 1.0 ? GemmWork::Call::Addmm : GemmWork::Call::Mm;
        self.dims = g.bias || g.c_broadcast ? std::vector<std::int64_t>{g.n}
                                            : std::vector<std::int64_t>{g.m, g.n};
    }

    auto build = [&](at::ScalarType t) {
        work.a = synthesis.make_tensor(a, t, Fill::Normal, 1, false);
        work.b = synthesis.make_tensor(b, t, Fill::Normal, 1, false);
        work.c = synthesis.make_tensor(c, t, Fill::Normal, 1, false);
        if (work.call == GemmWork::Call::Addmm || work.call == GemmWork::Call::Baddbmm)
            work.self = synthesis.make_tensor(self, t, Fill::Normal, 1, false);
    };
    std::string note;
    if (g.b_type != g.a_type || (g.c_type != g.a_type && g.c_type != DType::Unknown) ||
        (g.bias && g.bias_type != g.a_type && g.bias_type != DType::Unknown))
        note = std::string("all operands in ") + to_string(g.a_type) + " (at::mm needs one dtype)";
    build(*dtype);

    std::string label =
        "gemm " + std::to_string(g.m) + " x " + std::to_string(g.n) + " x " + std::to_string(g.k);
    if (g.batch > 1) label += " (batch " + std::to_string(g.batch) + ")";
    result.handle = add(std::move(label), work);
    if (on_cpu()) {
        std::string error = run(result.handle);
        if (!error.empty() && is_reduced_float(*dtype)) {
            build(at::kFloat);
            std::get<GemmWork>(entries.back().work) = work;  // same handle, float32 operands
            if (run(result.handle).empty()) {
                const std::string promoted =
                    reduced_float_note(*dtype == at::kHalf, *dtype == at::kBFloat16);
                notes.insert(promoted);
                note = note.empty() ? promoted : promoted + "; " + note;
                error.clear();
            }
        }
        if (!error.empty()) {
            entries.pop_back();  // never handed out
            result.handle = 0;
            result.disposition = Disposition::Failed;
            result.reason = error;
            return result;
        }
    }
    synthesis.drain_fills();
    result.disposition = Disposition::Ready;
    result.reason = note;
    return result;
}

Prepared TorchOpRunner::Impl::prepare_copy(const CopyRecipe& copy) {
    Prepared result;
    if (copy.bytes < 0) {
        result.reason = "negative copy size";
        return result;
    }
    CopyWork work;
    work.is_memset = copy.is_memset;
    work.value = copy.value;
    const auto bytes = static_cast<std::size_t>(copy.bytes);
    if (on_cpu()) {
        // The direction does not matter on the host: both ends are host memory.
        work.host_dst.assign(bytes, std::byte{0});
        if (!copy.is_memset) work.host_src.assign(bytes, std::byte{1});
    } else {
        const auto host = at::TensorOptions().dtype(at::kByte).pinned_memory(copy.host_pinned);
        const auto dev = synthesis.options(at::kByte);
        const std::int64_t n = copy.bytes;
        switch (copy.is_memset ? CopyDirection::Device : copy.direction) {
            case CopyDirection::HostToDevice:
                work.src = at::zeros({n}, host), work.dst = at::empty({n}, dev);
                break;
            case CopyDirection::DeviceToHost:
                work.src = at::zeros({n}, dev), work.dst = at::empty({n}, host);
                break;
            case CopyDirection::HostToHost:
                work.src = at::zeros({n}, host), work.dst = at::empty({n}, host);
                break;
            case CopyDirection::PeerToPeer:
                result.reason = "peer copy replayed within one device";
                [[fallthrough]];
            case CopyDirection::DeviceToDevice:
                work.src = at::zeros({n}, dev), work.dst = at::empty({n}, dev);
                break;
            case CopyDirection::Device:
                work.dst = at::empty({n}, dev);
                break;
        }
    }
    const std::string label =
        std::string(copy.is_memset ? "memset " : "memcpy ") + std::to_string(copy.bytes) + " bytes";
    synthesis.drain_fills();
    result.handle = add(label, std::move(work));
    result.disposition = Disposition::Ready;
    return result;
}

}  // namespace replay
