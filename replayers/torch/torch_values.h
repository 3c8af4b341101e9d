// Recorded values as libtorch sees them: the text Kineto wrote for scalars and lists ("1",
// "0.125", "True", "[1024]"), recorded dtypes as ScalarTypes, and libtorch errors as report text.
// Internal to replayers/torch/.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "replay/recipe.h"

namespace replay::torch_detail {

// First line of a c10::Error without the C++ backtrace, bounded: it ends up in reports.
std::string short_error(const std::exception& e);

std::string_view trim(std::string_view s);
std::optional<bool> parse_bool(std::string_view s);
std::optional<double> parse_double(std::string_view s);
// Integers, also written as "True"/"False" or "2.0" (Kineto prints some ints that way).
std::optional<std::int64_t> parse_int(std::string_view s);
// "[1024]", "[2, 3]", "(1, 1)", "[]" -> elements; a bare value is a list of one.
std::optional<std::vector<std::string_view>> parse_list(std::string_view s);
// A Scalar argument's IValue: bool, int or double as the recorded text says.
std::optional<c10::IValue> scalar_ivalue(std::string_view s);

// nullopt for dtypes this libtorch does not have (float8 before PyTorch 2.1).
std::optional<at::ScalarType> scalar_type_of(DType dtype);
std::string dtype_missing_reason(DType dtype);
bool is_reduced_float(at::ScalarType t);
bool is_float_like(at::ScalarType t);
// The note of a recipe whose float16/bfloat16 tensors ran in float32 (CPU kernels missing).
std::string reduced_float_note(bool half, bool bfloat);

}  // namespace replay::torch_detail
