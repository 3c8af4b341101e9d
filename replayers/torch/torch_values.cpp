#include "torch_values.h"

#include <torch/version.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace replay::torch_detail {

std::string short_error(const std::exception& e) {
    const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
    std::string text = c10_error != nullptr ? c10_error->what_without_backtrace() : e.what();
    if (const auto nl = text.find('\n'); nl != std::string::npos) text.resize(nl);
    if (text.size() > 300) text = text.substr(0, 297) + "...";
    return text.empty() ? "unknown error" : text;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

std::optional<bool> parse_bool(std::string_view s) {
    s = trim(s);
    if (s == "True" || s == "true" || s == "1") return true;
    if (s == "False" || s == "false" || s == "0") return false;
    return std::nullopt;
}

std::optional<double> parse_double(std::string_view s) {
    s = trim(s);
    if (s == "True") return 1.0;
    if (s == "False") return 0.0;
    if (s.empty()) return std::nullopt;
    const std::string text(s);
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);  // also takes "inf", "-inf", "nan"
    if (end != text.c_str() + text.size()) return std::nullopt;
    return v;
}

std::optional<std::int64_t> parse_int(std::string_view s) {
    s = trim(s);
    if (auto b = parse_bool(s); b && s != "1" && s != "0") return *b ? 1 : 0;
    if (s.empty()) return std::nullopt;
    const std::string text(s);
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (end == text.c_str() + text.size() && errno == 0) return static_cast<std::int64_t>(v);
    if (auto d = parse_double(s); d && *d == static_cast<double>(static_cast<std::int64_t>(*d)))
        return static_cast<std::int64_t>(*d);
    return std::nullopt;
}

std::optional<std::vector<std::string_view>> parse_list(std::string_view s) {
    s = trim(s);
    if (s.empty()) return std::nullopt;
    if ((s.front() == '[' && s.back() == ']') || (s.front() == '(' && s.back() == ')'))
        s = s.substr(1, s.size() - 2);
    std::vector<std::string_view> items;
    if (trim(s).empty()) return items;
    while (true) {
        const auto comma = s.find(',');
        items.push_back(trim(s.substr(0, comma)));
        if (comma == std::string_view::npos) break;
        s.remove_prefix(comma + 1);
    }
    if (!items.empty() && items.back().empty()) items.pop_back();  // "(1,)"
    return items;
}

std::optional<c10::IValue> scalar_ivalue(std::string_view s) {
    s = trim(s);
    if (s == "True" || s == "False") return c10::IValue(s == "True");
    if (s.find_first_of(".eEnN") == std::string_view::npos)  // no fraction, exponent, inf or nan
        if (auto i = parse_int(s)) return c10::IValue(*i);
    if (auto d = parse_double(s)) return c10::IValue(*d);
    return std::nullopt;
}

std::optional<at::ScalarType> scalar_type_of(DType dtype) {
    switch (dtype) {
        case DType::Unknown:
        case DType::Float32:
            return at::kFloat;
        case DType::Float16:
            return at::kHalf;
        case DType::BFloat16:
            return at::kBFloat16;
        case DType::Float64:
            return at::kDouble;
        case DType::Int64:
            return at::kLong;
        case DType::Int32:
            return at::kInt;
        case DType::Int16:
            return at::kShort;
        case DType::Int8:
            return at::kChar;
        case DType::UInt8:
            return at::kByte;
        case DType::Bool:
            return at::kBool;
        case DType::ComplexFloat:
            return at::kComplexFloat;
        case DType::ComplexDouble:
            return at::kComplexDouble;
#if TORCH_VERSION_MAJOR >= 2
        case DType::Float8E4M3:
            return at::kFloat8_e4m3fn;
        case DType::Float8E5M2:
            return at::kFloat8_e5m2;
#else
        case DType::Float8E4M3:
        case DType::Float8E5M2:
            return std::nullopt;  // float8 dtypes arrived in PyTorch 2.1
#endif
    }
    return std::nullopt;
}

std::string dtype_missing_reason(DType dtype) {
    return std::string("dtype ") + to_string(dtype) + " is not in this libtorch (" + TORCH_VERSION +
           ")";
}

bool is_reduced_float(at::ScalarType t) {
    return t == at::kHalf || t == at::kBFloat16;
}
bool is_float_like(at::ScalarType t) {
    return at::isFloatingType(t) || at::isComplexType(t);
}

std::string reduced_float_note(bool half, bool bfloat) {
    const char* which = half && bfloat ? "float16/bfloat16" : half ? "float16" : "bfloat16";
    return std::string(which) + " computed as float32 on CPU";
}

}  // namespace replay::torch_detail
