#include "replay/recipe.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <utility>

namespace replay {
namespace {

constexpr std::array<std::pair<DType, const char*>, 15> kDTypeNames{{
    {DType::Unknown, "unknown"},
    {DType::Float32, "float32"},
    {DType::Float16, "float16"},
    {DType::BFloat16, "bfloat16"},
    {DType::Float64, "float64"},
    {DType::Int64, "int64"},
    {DType::Int32, "int32"},
    {DType::Int16, "int16"},
    {DType::Int8, "int8"},
    {DType::UInt8, "uint8"},
    {DType::Bool, "bool"},
    {DType::Float8E4M3, "float8_e4m3fn"},
    {DType::Float8E5M2, "float8_e5m2"},
    {DType::ComplexFloat, "complex64"},
    {DType::ComplexDouble, "complex128"},
}};

void append_dims(std::ostringstream& out, const std::vector<std::int64_t>& v) {
    out << '[';
    for (std::size_t i = 0; i < v.size(); ++i) out << (i ? "," : "") << v[i];
    out << ']';
}

}  // namespace

const char* to_string(Tier tier) {
    switch (tier) {
        case Tier::NotReplayable:
            return "none";
        case Tier::Copy:
            return "1";
        case Tier::Gemm:
            return "2";
        case Tier::AtenOp:
            return "3";
        case Tier::Collective:
            return "4";
        case Tier::Triton:
            return "triton";
    }
    return "?";
}

const char* to_string(DType dtype) {
    for (const auto& [d, name] : kDTypeNames)
        if (d == dtype) return name;
    return "unknown";
}

DType dtype_from_name(std::string_view name) {
    for (const auto& [d, text] : kDTypeNames)
        if (name == text) return d;
    return DType::Unknown;
}

bool is_recurrent_op(std::string_view name) {
    if (!name.starts_with("aten::")) return false;
    name.remove_prefix(6);
    return name.find("rnn") != std::string_view::npos ||
           name.find("lstm") != std::string_view::npos ||
           name.find("gru") != std::string_view::npos;
}

DType dtype_from_kineto(std::string_view type) {
    if (type.starts_with("Tensor(") && type.ends_with(")")) type = type.substr(7, type.size() - 8);
    if (type == "c10::Half" || type == "half" || type == "Half") return DType::Float16;
    if (type == "c10::BFloat16" || type == "BFloat16") return DType::BFloat16;
    if (type == "float" || type == "Float") return DType::Float32;
    if (type == "double" || type == "Double") return DType::Float64;
    if (type == "long int" || type == "long" || type == "int64_t" || type == "Long")
        return DType::Int64;
    if (type == "int" || type == "Int") return DType::Int32;
    if (type == "short int" || type == "short" || type == "Short") return DType::Int16;
    if (type == "signed char" || type == "Char") return DType::Int8;
    if (type == "unsigned char" || type == "Byte") return DType::UInt8;
    if (type == "bool" || type == "Bool") return DType::Bool;
    if (type == "c10::Float8_e4m3fn") return DType::Float8E4M3;
    if (type == "c10::Float8_e5m2") return DType::Float8E5M2;
    if (type == "c10::complex<float>") return DType::ComplexFloat;
    if (type == "c10::complex<double>") return DType::ComplexDouble;
    return dtype_from_name(type);
}

std::size_t element_size(DType dtype) {
    switch (dtype) {
        case DType::Float64:
        case DType::Int64:
        case DType::ComplexFloat:
            return 8;
        case DType::ComplexDouble:
            return 16;
        case DType::Float32:
        case DType::Int32:
            return 4;
        case DType::Float16:
        case DType::BFloat16:
        case DType::Int16:
            return 2;
        case DType::Int8:
        case DType::UInt8:
        case DType::Bool:
        case DType::Float8E4M3:
        case DType::Float8E5M2:
            return 1;
        case DType::Unknown:
            return 4;
    }
    return 4;
}

const char* to_string(CopyDirection direction) {
    switch (direction) {
        case CopyDirection::HostToDevice:
            return "HtoD";
        case CopyDirection::DeviceToHost:
            return "DtoH";
        case CopyDirection::DeviceToDevice:
            return "DtoD";
        case CopyDirection::HostToHost:
            return "HtoH";
        case CopyDirection::PeerToPeer:
            return "PtoP";
        case CopyDirection::Device:
            return "Device";
    }
    return "?";
}

const char* to_string(Placement placement) {
    switch (placement) {
        case Placement::Host:
            return "host";
        case Placement::Device:
            return "device";
        case Placement::Unknown:
            break;
    }
    return "";
}

const char* to_string(ArgKind kind) {
    switch (kind) {
        case ArgKind::Tensor:
            return "tensor";
        case ArgKind::TensorList:
            return "tensor_list";
        case ArgKind::Scalar:
            return "scalar";
        case ArgKind::ScalarList:
            return "scalar_list";
        case ArgKind::None:
            return "none";
        case ArgKind::String:
            return "string";
        case ArgKind::Other:
            return "other";
    }
    return "?";
}

std::int64_t TensorSpec::numel() const {
    std::int64_t n = 1;
    for (auto d : dims) n *= d;
    return n;
}

std::vector<std::int64_t> TensorSpec::contiguous_strides() const {
    return replay::contiguous_strides(dims);
}

std::vector<std::int64_t> contiguous_strides(std::span<const std::int64_t> dims) {
    std::vector<std::int64_t> s(dims.size(), 1);
    for (std::size_t i = dims.size(); i-- > 1;)
        s[i - 1] = saturating_product(std::array{s[i], std::max<std::int64_t>(dims[i], 1)});
    return s;
}

std::int64_t saturating_product(std::span<const std::int64_t> dims) {
    std::int64_t n = 1;
    for (auto d : dims) {
        if (d <= 0) return 0;
        if (__builtin_mul_overflow(n, d, &n) || n > kMostElements) n = kMostElements;
    }
    return n;
}

std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
    std::int64_t sum = 0;
    if (__builtin_add_overflow(a, b, &sum))
        return a > 0 ? std::numeric_limits<std::int64_t>::max()
                     : std::numeric_limits<std::int64_t>::min();
    return sum;
}

std::int64_t view_extent(std::span<const std::int64_t> dims,
                         std::span<const std::int64_t> strides) {
    if (strides.size() != dims.size()) return saturating_product(dims);  // contiguous
    std::int64_t extent = 1;
    for (std::size_t d = 0; d < dims.size(); ++d) {
        if (dims[d] <= 0) return 0;
        // |stride| of INT64_MIN has no int64: it saturates as any other overflow.
        const std::int64_t stride = strides[d] == std::numeric_limits<std::int64_t>::min()
                                        ? kMostElements
                                        : std::abs(strides[d]);
        std::int64_t span = 0;
        if (__builtin_mul_overflow(dims[d] - 1, stride, &span) ||
            __builtin_add_overflow(extent, span, &extent) || extent > kMostElements)
            return kMostElements;
    }
    return extent;
}

std::int64_t TensorSpec::storage_elements() const {
    const std::int64_t extent = view_extent(dims, strides);
    return extent == 0 ? 0 : storage_offset + extent;
}

std::string Recipe::key() const {
    std::ostringstream out;
    out << "t" << to_string(tier);
    std::visit(
        [&](const auto& d) {
            using T = std::decay_t<decltype(d)>;
            if constexpr (std::is_same_v<T, CopyRecipe>) {
                out << (d.is_memset ? "|memset|" : "|memcpy|") << to_string(d.direction) << '|'
                    << (d.host_pinned ? "pinned" : "pageable") << '|' << d.bytes;
            } else if constexpr (std::is_same_v<T, GemmRecipe>) {
                out << '|' << d.op << "|m" << d.m << "n" << d.n << "k" << d.k << "b" << d.batch
                    << '|' << (d.trans_a ? 'T' : 'N') << (d.trans_b ? 'T' : 'N') << "|ld" << d.lda
                    << ',' << d.ldb << ',' << d.ldc << '|' << to_string(d.a_type) << ','
                    << to_string(d.b_type) << ',' << to_string(d.c_type) << "|a" << d.alpha << "b"
                    << d.beta << (d.bias ? "|bias" : "") << (d.bias_epilogue_recorded ? "|lt" : "")
                    << (d.tf32_recorded ? "|tf32" : "");
            } else if constexpr (std::is_same_v<T, AtenRecipe>) {
                out << '|' << d.op << (d.overload.empty() ? "" : ".") << d.overload;
                for (const auto& a : d.args) {
                    out << '|' << to_string(a.kind) << ':' << a.type;
                    if (a.leading_nones > 0) out << "None*" << a.leading_nones;
                    for (const auto& t : a.tensors) {
                        append_dims(out, t.dims);
                        append_dims(out, t.strides);
                    }
                    if (!a.value.empty()) out << '=' << a.value;
                }
            } else if constexpr (std::is_same_v<T, CollectiveRecipe>) {
                out << '|' << d.collective << '|' << d.in_nelems << '|' << d.out_nelems << '|'
                    << to_string(d.dtype) << '|' << d.group_size;
            } else if constexpr (std::is_same_v<T, TritonRecipe>) {
                out << '|' << d.kernel << '|' << d.variant << "|w" << d.num_warps << "|g"
                    << d.grid[0] << ',' << d.grid[1] << ',' << d.grid[2];
                for (const auto& a : d.args) {
                    if (a.pointer)
                        out << "|p" << a.bytes;
                    else
                        out << "|i" << a.bits << '=' << a.value;
                }
            }
        },
        detail);
    return out.str();
}

std::string Recipe::instance_key() const {
    std::string out = key();
    if (const auto* g = std::get_if<GemmRecipe>(&detail)) {
        out += "|s" + std::to_string(g->a_storage) + "," + std::to_string(g->b_storage) + "," +
               std::to_string(g->c_storage);
    } else if (const auto* a = std::get_if<AtenRecipe>(&detail)) {
        out += "|s";
        for (const auto& arg : a->args)
            for (const auto& t : arg.tensors)
                out += std::to_string(t.storage_id) + "+" + std::to_string(t.storage_offset) + ",";
        // What key() leaves out so that kernel ids stay those of earlier reports, but the work
        // prepared for a recipe depends on: a list element's dtype (a tensor's is in its type
        // text) and where a 0-dim operand lives (two kernels of one op; key() goes with the
        // kernel's name wherever it names a kernel).
        out += "|t";
        for (const auto& arg : a->args) {
            if (arg.kind == ArgKind::TensorList)
                for (const auto& t : arg.tensors) out += std::string(to_string(t.dtype)) + ",";
            if (arg.placement != Placement::Unknown) out += std::string("@") + to_string(arg.placement);
            out += ';';
        }
    } else if (const auto* t = std::get_if<TritonRecipe>(&detail)) {
        out += "|b";  // the wrapper's buffers: one launch's in-place buffer is not another's
        for (const auto& a : t->args) out += a.buffer + ",";
    }
    return out;
}

double Recipe::bytes() const {
    if (const auto* copy = std::get_if<CopyRecipe>(&detail))
        return static_cast<double>(copy->bytes);
    return 0.0;
}

double Recipe::flops() const {
    if (const auto* gemm = std::get_if<GemmRecipe>(&detail)) return gemm->flops();
    return 0.0;
}

}  // namespace replay
