// Recorded aten-op arguments for the tests' recipes, as the profiler records them.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "replay/recipe.h"

namespace replay::test {

// A tensor argument of `dtype` with its sizes (and strides, reuse distance where given); its
// type text as the profiler writes it.
inline AtenArgument tensor_argument(DType dtype, std::vector<std::int64_t> dims,
                                    std::vector<std::int64_t> strides = {},
                                    std::int64_t reuse_bytes = kReuseUnknown) {
    AtenArgument arg;
    arg.kind = ArgKind::Tensor;
    arg.type = dtype == DType::Float32    ? "float"
               : dtype == DType::BFloat16 ? "c10::BFloat16"
                                          : "c10::Half";
    TensorSpec t;
    t.dims = std::move(dims);
    t.strides = std::move(strides);
    t.dtype = dtype;
    t.reuse_bytes = reuse_bytes;
    arg.tensors.push_back(std::move(t));
    return arg;
}

// A scalar (or scalar list) argument with its recorded text ("1", "0.10000000000000001", "True",
// "[1]").
inline AtenArgument scalar_argument(std::string value, ArgKind kind = ArgKind::Scalar) {
    AtenArgument arg;
    arg.kind = kind;
    arg.type = kind == ArgKind::ScalarList ? "ScalarList" : "Scalar";
    arg.value = std::move(value);
    return arg;
}

}  // namespace replay::test
