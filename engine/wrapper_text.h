// Reading Inductor's generated Python (wrapper code): the few text helpers its two readers share
// (inductor_cache.cpp: Triton call sites; inductor_externs.cpp: library calls).
#pragma once

#include <cctype>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "replay/recipe.h"

namespace replay::wrapper_text {

inline std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

inline std::vector<std::string_view> split(std::string_view s, char by) {
    std::vector<std::string_view> out;
    std::size_t depth = 0, start = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (c == '(' || c == '[' || c == '{') ++depth;
        if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
        if (c == by && depth == 0) {
            out.push_back(trim(s.substr(start, i - start)));
            start = i + 1;
        }
    }
    if (const auto last = trim(s.substr(start)); !last.empty()) out.push_back(last);
    return out;
}

inline std::optional<std::int64_t> integer(std::string_view s) {
    s = trim(s);
    if (s.empty()) return std::nullopt;
    std::int64_t v = 0;
    bool negative = s.front() == '-';
    if (negative) s.remove_prefix(1);
    if (s.empty()) return std::nullopt;
    for (char c : s) {
        if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
        v = v * 10 + (c - '0');
    }
    return negative ? -v : v;
}

inline std::vector<std::int64_t> integers(std::string_view tuple) {
    std::vector<std::int64_t> out;
    for (auto part : split(tuple, ','))
        if (auto v = integer(part)) out.push_back(*v);
    return out;
}

inline DType dtype_of_torch(std::string_view name) {
    static const std::pair<const char*, DType> kNames[] = {
        {"float16", DType::Float16}, {"half", DType::Float16},  {"bfloat16", DType::BFloat16},
        {"float32", DType::Float32}, {"float", DType::Float32}, {"float64", DType::Float64},
        {"int64", DType::Int64},     {"int32", DType::Int32},   {"int16", DType::Int16},
        {"int8", DType::Int8},       {"uint8", DType::UInt8},   {"bool", DType::Bool}};
    for (const auto& [n, d] : kNames)
        if (name == n) return d;
    return DType::Unknown;
}

}  // namespace replay::wrapper_text
