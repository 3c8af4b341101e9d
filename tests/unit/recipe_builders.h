// Tier-3 recipes written out in tests: tensors, scalars, lists and None as a trace records them.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "replay/recipe.h"

namespace replay::testing {

inline TensorSpec spec(std::vector<std::int64_t> dims, DType dtype,
                       std::vector<std::int64_t> strides = {}, std::int64_t storage = -1) {
    TensorSpec t;
    t.dims = std::move(dims);
    t.strides = std::move(strides);
    t.dtype = dtype;
    t.storage_id = storage;
    return t;
}

inline AtenArgument tensor(TensorSpec t) {
    AtenArgument a;
    a.kind = ArgKind::Tensor;
    a.type = to_string(t.dtype);
    a.tensors.push_back(std::move(t));
    return a;
}

// A tensor list as an Execution Trace gives it (Kineto records lists as []).
inline AtenArgument tensors(std::vector<TensorSpec> ts) {
    AtenArgument a;
    a.kind = ArgKind::TensorList;
    a.type = "GenericList";
    a.tensors = std::move(ts);
    return a;
}

// A recorded value as Kineto writes it: "1", "0.125", "True" (Scalar), "[1024]" (ScalarList).
inline AtenArgument recorded_value(ArgKind kind, std::string value) {
    AtenArgument a;
    a.kind = kind;
    a.type = kind == ArgKind::Scalar ? "Scalar" : "ScalarList";
    a.value = std::move(value);
    return a;
}
inline AtenArgument scalar(std::string value) {
    return recorded_value(ArgKind::Scalar, std::move(value));
}
inline AtenArgument scalar_list(std::string value) {
    return recorded_value(ArgKind::ScalarList, std::move(value));
}

inline AtenArgument none() {
    AtenArgument a;
    a.kind = ArgKind::None;
    return a;
}

inline AtenRecipe op(std::string name, std::vector<AtenArgument> args, std::string overload = {}) {
    AtenRecipe r;
    r.op = std::move(name);
    r.overload = std::move(overload);
    r.args = std::move(args);
    return r;
}

}  // namespace replay::testing
