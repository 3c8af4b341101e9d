// What dataflow inference (engine/dataflow.cpp) knows of ops by their names and recorded inputs:
// which ops write nothing (views) or write their input in place, which convert dtypes, which
// inputs are weight-like, and the dims of an op's output. Internal to engine/dataflow*.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "replay/trace_model.h"

namespace replay::dataflow_detail {

using Dims = std::vector<std::int64_t>;

// A recorded argument that is one tensor of a known dtype (not a TensorList, not a scalar).
bool is_tensor_input(const Trace& trace, const OpArgument& arg);
std::int64_t numel(std::span<const std::int64_t> dims);
// Bytes of a tensor of these dims and Kineto type text (float32 where the type says none).
std::int64_t tensor_bytes(const Trace& trace, std::span<const std::int64_t> dims, NameId type);

// Which inputs of an op are weight-like, by its name (weight_like()).
enum class WeightRule : std::uint8_t {
    None,
    Linear,       // aten::linear: weight and bias
    Convolution,  // aten::conv*, _convolution, cudnn_convolution: weight and bias
    MmOrMatmul,   // mat2, under aten::linear
    Addmm,        // bias and mat2, under aten::linear or with a 1-D bias (Conv1D layers)
    Embedding,    // the table
    IndexSelect,  // self, under aten::embedding
    LayerNorm,    // layer_norm, native_layer_norm, group_norm: weight and bias
    RmsNorm,      // weight
    NativeGroupNorm,
    BatchNorm,               // weight, bias, running mean and var
    ConvolutionBackward,     // the weight (input 2)
    BatchNormBackward,       // weight, running mean and var (inputs 2-4)
    LayerNormBackward,       // weight and bias (inputs 5, 6)
    GroupOrRmsNormBackward,  // the weight (input 4)
};

// What the inference asks about an op's name, worked out once per name.
struct NameFacts {
    bool view = false;      // the output is a view of input 0: writes nothing
    bool in_place = false;  // writes input 0 and returns it (aten::add_, aten::copy_)
    bool converts = false;  // the output's dtype is not input 0's (casts, creation ops)
    // The output is a fresh tensor that an in-place op may fill next (aten::empty_like before
    // copy_ in aten::clone, aten::clone before index_put_ in aten::index_put).
    bool allocates = false;
    // Returns input 0 itself when it does no work, i.e. runs no inner op: aten::dropout in eval
    // mode, aten::to of the same dtype.
    bool may_alias = false;
    WeightRule weights = WeightRule::None;
    // An autograd node's record function (AddmmBackward0): its recorded inputs are the
    // incoming gradients, its results whatever its inner ops made.
    bool autograd_node = false;
    // A backward op's tensor inputs other than its incoming gradient (this index) are what its
    // forward op saved: a forward op's output (on the forward's thread, or recomputed on the
    // backward's), never a gradient the backward pass made (one of the same dims made just
    // before is not it). kNoSaved: not such an op.
    static constexpr std::size_t kNoSaved = static_cast<std::size_t>(-1);
    std::size_t gradient_input = kNoSaved;
};
NameFacts name_facts(std::string_view name);

// Is input `index` weight-like for an op of this rule? `under(rule)`: whether an enclosing op
// has that rule (aten::mm under aten::linear); `rank0()`: the rank of the op's input 0.
template <typename Under, typename Rank0>
bool weight_like(WeightRule rule, std::size_t index, Under&& under, Rank0&& rank0) {
    switch (rule) {
        case WeightRule::Linear:
        case WeightRule::Convolution:
            return index == 1 || index == 2;
        case WeightRule::MmOrMatmul:
            return index == 1 && under(WeightRule::Linear);
        case WeightRule::Addmm:
            return (index == 0 || index == 2) && (under(WeightRule::Linear) || rank0() == 1);
        case WeightRule::Embedding:
            return index == 0;
        case WeightRule::IndexSelect:
            return index == 0 && under(WeightRule::Embedding);
        case WeightRule::LayerNorm:
            return index == 2 || index == 3;
        case WeightRule::RmsNorm:
            return index == 2;
        case WeightRule::NativeGroupNorm:
            return index == 1 || index == 2;
        case WeightRule::BatchNorm:
            return index >= 1 && index <= 4;
        case WeightRule::ConvolutionBackward:
            return index == 2;
        case WeightRule::BatchNormBackward:
            return index >= 2 && index <= 4;
        case WeightRule::LayerNormBackward:
            return index == 5 || index == 6;
        case WeightRule::GroupOrRmsNormBackward:
            return index == 4;
        case WeightRule::None:
            break;
    }
    return false;
}

// The dims of an op's (first) output where its name and recorded inputs tell them.
std::optional<Dims> output_dims(const Trace& trace, std::string_view name, const OpShapes& s);

}  // namespace replay::dataflow_detail
