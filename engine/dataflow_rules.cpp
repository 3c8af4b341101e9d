// The inference's knowledge of ops by name and recorded inputs (dataflow_rules.h).
#include "dataflow_rules.h"

#include <algorithm>
#include <span>
#include <utility>

#include "replay/int_list.h"
#include "replay/recipe.h"

namespace replay::dataflow_detail {
namespace {

// A TensorList argument's elements' dims (none for a plain tensor).
std::vector<Dims> list_elements(const OpArgument& arg) {
    std::vector<Dims> out;
    std::size_t at = 0;
    for (const std::uint8_t rank : arg.list_ranks) {
        if (at + rank > arg.dims.size()) return {};
        out.emplace_back(arg.dims.begin() + static_cast<std::ptrdiff_t>(at),
                         arg.dims.begin() + static_cast<std::ptrdiff_t>(at + rank));
        at += rank;
    }
    return out;
}

std::int64_t wrap_dim(std::int64_t dim, std::size_t rank) {
    return dim < 0 ? dim + static_cast<std::int64_t>(rank) : dim;
}

Dims broadcast(const Dims& a, const Dims& b) {
    Dims out(std::max(a.size(), b.size()), 1);
    for (std::size_t i = 0; i < out.size(); ++i) {
        const std::int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
        const std::int64_t y = i < b.size() ? b[b.size() - 1 - i] : 1;
        out[out.size() - 1 - i] = x == 1 ? y : x;
    }
    return out;
}

// A window's output length: PyTorch's convolution and pooling formula (ceil_mode: a last window
// that starts inside the input or its left padding counts).
std::int64_t window_output(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                           std::int64_t pad, std::int64_t dilation, bool ceil_mode) {
    const std::int64_t span = in + 2 * pad - dilation * (kernel - 1) - 1;
    if (stride <= 0 || span < 0) return 0;
    std::int64_t out = (ceil_mode ? span + stride - 1 : span) / stride + 1;
    if (ceil_mode && (out - 1) * stride >= in + pad) --out;
    return out;
}

// A window argument (kernel, stride, padding, dilation, groups) above 2^20 or a length above 2^40
// is a hostile or corrupt trace's: no output dims then, and the window formula's products stay
// far inside 64 bits.
constexpr std::int64_t kLargestWindowArgument = std::int64_t{1} << 20;
constexpr std::int64_t kLongestLength = std::int64_t{1} << 40;
bool all_positive(const Dims& dims) {
    return std::all_of(dims.begin(), dims.end(), [](std::int64_t v) { return v > 0; });
}
bool plausible_lengths(const Dims& dims) {
    return std::all_of(dims.begin(), dims.end(),
                       [](std::int64_t v) { return v >= 0 && v <= kLongestLength; });
}

// A per-spatial-dimension argument (stride [2, 2], or [2] for every dimension); `fallback` where
// the argument is empty (max_pool2d's stride defaults to its kernel size).
std::optional<Dims> per_dim(std::string_view text, std::size_t spatial, const Dims& fallback) {
    auto list = parse_int_list(text);
    if (!list || list->empty()) {
        if (text.empty() || text == "[]") return fallback;
        return std::nullopt;
    }
    if (std::any_of(list->begin(), list->end(),
                    [](std::int64_t v) { return v < 0 || v > kLargestWindowArgument; }))
        return std::nullopt;
    if (list->size() == 1) return Dims(spatial, list->front());
    if (list->size() != spatial) return std::nullopt;
    return list;
}

// Where each convolution op keeps its arguments (-1: it has none of that kind).
struct ConvolutionArgs {
    int stride, padding, dilation, transposed, output_padding, groups;
    bool always_transposed;
};
std::optional<ConvolutionArgs> convolution_args(std::string_view name) {
    if (name == "aten::conv1d" || name == "aten::conv2d" || name == "aten::conv3d")
        return ConvolutionArgs{3, 4, 5, -1, -1, 6, false};
    if (name == "aten::convolution" || name == "aten::_convolution")
        return ConvolutionArgs{3, 4, 5, 6, 7, 8, false};
    if (name == "aten::cudnn_convolution") return ConvolutionArgs{3, 2, 4, -1, -1, 5, false};
    if (name == "aten::conv_transpose1d" || name == "aten::conv_transpose2d" ||
        name == "aten::conv_transpose3d")
        return ConvolutionArgs{3, 4, 7, -1, 5, 6, true};
    if (name == "aten::cudnn_convolution_transpose")
        return ConvolutionArgs{4, 2, 5, -1, 3, 6, true};
    return std::nullopt;
}

// Where each pooling op keeps its arguments (kernel 1, stride 2, padding 3 in all of them) and
// how many trailing dimensions it pools (the name's 1d, 2d, 3d).
struct PoolingArgs {
    int dilation, ceil_mode;
    std::size_t spatial;
};
std::optional<PoolingArgs> pooling_args(std::string_view name) {
    static constexpr std::pair<std::string_view, PoolingArgs> kPools[] = {
        {"aten::max_pool1d", {4, 5, 1}},
        {"aten::max_pool2d", {4, 5, 2}},
        {"aten::max_pool3d", {4, 5, 3}},
        {"aten::max_pool1d_with_indices", {4, 5, 1}},
        {"aten::max_pool2d_with_indices", {4, 5, 2}},
        {"aten::max_pool3d_with_indices", {4, 5, 3}},
        {"aten::avg_pool1d", {-1, 4, 1}},
        {"aten::avg_pool2d", {-1, 4, 2}},
        {"aten::avg_pool3d", {-1, 4, 3}},
    };
    for (const auto& [pool, args] : kPools)
        if (name == pool) return args;
    return std::nullopt;
}

// Ops whose output is a view of input 0: they write nothing.
bool is_view_op(std::string_view name) {
    static constexpr std::string_view kViews[] = {
        "aten::view",      "aten::reshape",   "aten::_unsafe_view", "aten::expand",
        "aten::t",         "aten::transpose", "aten::permute",      "aten::unsqueeze",
        "aten::squeeze",   "aten::select",    "aten::slice",        "aten::as_strided",
        "aten::alias",     "aten::detach",    "aten::view_as",      "aten::expand_as",
        "aten::narrow",    "aten::flatten",   "aten::unflatten",    "aten::contiguous",
        "aten::numpy_T",   "aten::lift_fresh", "aten::unbind",      "aten::split",
        "aten::chunk",     "aten::split_with_sizes", "aten::diagonal", "aten::unfold"};
    return std::find(std::begin(kViews), std::end(kViews), name) != std::end(kViews);
}

// In-place ops (aten::add_, aten::copy_, aten::resize_) write input 0 and return it.
bool is_in_place_op(std::string_view name) {
    return name.starts_with("aten::") && name.size() > 7 && name.back() == '_' &&
           name[name.size() - 2] != '_';
}

WeightRule weight_rule(std::string_view name) {
    if (name == "aten::linear") return WeightRule::Linear;
    // Backward ops read their forward's parameters too (before the aten::conv prefix below).
    if (name == "aten::convolution_backward") return WeightRule::ConvolutionBackward;
    if (name == "aten::native_batch_norm_backward" || name == "aten::cudnn_batch_norm_backward")
        return WeightRule::BatchNormBackward;
    if (name == "aten::native_layer_norm_backward") return WeightRule::LayerNormBackward;
    if (name == "aten::native_group_norm_backward" || name == "aten::_fused_rms_norm_backward")
        return WeightRule::GroupOrRmsNormBackward;
    if (name.starts_with("aten::conv") || name == "aten::_convolution" ||
        name == "aten::cudnn_convolution")
        return WeightRule::Convolution;
    if (name == "aten::mm" || name == "aten::matmul") return WeightRule::MmOrMatmul;
    if (name == "aten::addmm") return WeightRule::Addmm;
    if (name == "aten::embedding") return WeightRule::Embedding;
    if (name == "aten::index_select") return WeightRule::IndexSelect;
    if (name == "aten::layer_norm" || name == "aten::native_layer_norm" ||
        name == "aten::group_norm")
        return WeightRule::LayerNorm;
    if (name == "aten::rms_norm" || name == "aten::_fused_rms_norm") return WeightRule::RmsNorm;
    if (name == "aten::native_group_norm") return WeightRule::NativeGroupNorm;
    if (name == "aten::batch_norm" || name == "aten::native_batch_norm" ||
        name == "aten::cudnn_batch_norm" || name == "aten::_native_batch_norm_legit")
        return WeightRule::BatchNorm;
    return WeightRule::None;
}

}  // namespace

bool is_tensor_input(const Trace& trace, const OpArgument& arg) {
    if (!arg.list_ranks.empty()) return false;
    return dtype_from_kineto(trace.names.view(arg.type)) != DType::Unknown;
}

std::int64_t numel(std::span<const std::int64_t> dims) {
    return saturating_product(dims);
}

std::int64_t tensor_bytes(const Trace& trace, std::span<const std::int64_t> dims, NameId type) {
    const DType d = dtype_from_kineto(trace.names.view(type));
    return numel(dims) * static_cast<std::int64_t>(element_size(d == DType::Unknown ? DType::Float32 : d));
}

// Where an ATen backward op takes its incoming gradient: first by ATen's convention
// (threshold_backward(grad_output, self), convolution_backward(grad_output, input, weight),
// _softmax_backward_data(grad_output, output)); a few take their input first. Recurrent
// backward ops take several gradients: not such an op.
std::size_t gradient_input(std::string_view name) {
    if (!name.starts_with("aten::") || name.find("_backward") == std::string_view::npos)
        return NameFacts::kNoSaved;
    if (is_recurrent_op(name)) return NameFacts::kNoSaved;
    if (name == "aten::linear_backward" || name == "aten::cudnn_batch_norm_backward" ||
        name == "aten::miopen_batch_norm_backward")
        return 1;
    return 0;
}

// An autograd node's name: a Python-style class name ending in "Backward" and a version
// number (AddmmBackward0, NativeLayerNormBackward0), as the autograd engine records them.
bool is_autograd_node(std::string_view name) {
    if (name.find("::") != std::string_view::npos) return false;
    std::size_t end = name.size();
    while (end > 0 && name[end - 1] >= '0' && name[end - 1] <= '9') --end;
    return end < name.size() && name.substr(0, end).ends_with("Backward");
}

NameFacts name_facts(std::string_view name) {
    NameFacts f;
    f.view = is_view_op(name);
    f.in_place = is_in_place_op(name);
    f.converts = name == "aten::to" || name == "aten::_to_copy" || name == "aten::type_as" ||
                 name.starts_with("aten::empty") || name == "aten::zeros" || name == "aten::ones" ||
                 name == "aten::full";
    f.allocates = name.starts_with("aten::empty") || name.starts_with("aten::new_empty") ||
                  name == "aten::clone" || name == "aten::zeros" || name == "aten::zeros_like" ||
                  name == "aten::new_zeros";
    f.may_alias = name == "aten::dropout" || name == "aten::feature_dropout" ||
                  name == "aten::alpha_dropout" || name == "aten::to" || name == "aten::type_as";
    f.weights = weight_rule(name);
    f.gradient_input = gradient_input(name);
    f.autograd_node = is_autograd_node(name);
    return f;
}

std::optional<Dims> output_dims(const Trace& trace, std::string_view name, const OpShapes& s) {
    auto concrete = [&](std::size_t i) -> std::string_view {
        return i < s.inputs.size() ? trace.names.view(s.inputs[i].concrete) : std::string_view();
    };
    auto dims = [&](std::size_t i) -> const Dims* {
        return i < s.inputs.size() && is_tensor_input(trace, s.inputs[i]) ? &s.inputs[i].dims
                                                                          : nullptr;
    };
    const Dims* in0 = dims(0);
    if (name == "aten::empty" || name == "aten::zeros" || name == "aten::ones" ||
        name == "aten::full" || name == "aten::empty_strided" || name == "aten::randn" ||
        name == "aten::rand")
        return parse_int_list(concrete(0));
    if (name == "aten::cat" || name == "aten::concat" || name == "aten::concatenate" ||
        name == "aten::_cat" || name == "aten::stack") {
        // A TensorList's elements, joined along `dim` (cat; legacy empty 1-D elements are
        // skipped, as ATen does) or stacked in a new one. No rule gave them an output: the
        // group norm after a UNet's skip-connection cat read its input cold in the replay.
        const std::vector<Dims> parts =
            list_elements(s.inputs.empty() ? OpArgument{} : s.inputs[0]);
        const bool stack = name == "aten::stack";
        const Dims* first = nullptr;
        for (const Dims& p : parts)
            if (stack || !(p.size() == 1 && p[0] == 0)) {
                first = &p;
                break;
            }
        if (first == nullptr || first->empty() || !plausible_lengths(*first)) return std::nullopt;
        const std::size_t rank = first->size() + (stack ? 1 : 0);
        const auto d = parse_int(concrete(1)).value_or(0);
        const auto at = wrap_dim(d, rank);
        if (at < 0 || at >= static_cast<std::int64_t>(rank)) return std::nullopt;
        const auto axis = static_cast<std::size_t>(at);
        Dims out = *first;
        if (stack) {
            for (const Dims& p : parts)
                if (p != *first) return std::nullopt;
            out.insert(out.begin() + at, static_cast<std::int64_t>(parts.size()));
            return out;
        }
        out[axis] = 0;
        for (const Dims& p : parts) {
            if (p.size() == 1 && p[0] == 0) continue;
            if (p.size() != first->size() || !plausible_lengths(p)) return std::nullopt;
            for (std::size_t i = 0; i < p.size(); ++i)
                if (i != axis && p[i] != (*first)[i]) return std::nullopt;
            out[axis] += p[axis];
        }
        return out;
    }
    if (in0 == nullptr) return std::nullopt;
    const std::size_t rank = in0->size();
    if (name.starts_with("aten::upsample_") && !name.ends_with("_backward")) {
        // (input, output_size, ...) or the .vec overload's (input, output_size?, scale_factors?):
        // the trailing spatial lengths from the sizes, else from the scales (floored, as ATen).
        const std::size_t spatial = name.find("1d") != std::string_view::npos   ? 1
                                    : name.find("2d") != std::string_view::npos ? 2
                                    : name.find("3d") != std::string_view::npos ? 3
                                                                                : 0;
        if (spatial == 0 || spatial > rank || !plausible_lengths(*in0)) return std::nullopt;
        Dims out(in0->begin(), in0->end() - static_cast<std::ptrdiff_t>(spatial));
        if (const auto size = parse_int_list(concrete(1)); size && size->size() == spatial) {
            if (!plausible_lengths(*size)) return std::nullopt;
            out.insert(out.end(), size->begin(), size->end());
            return out;
        }
        const auto scales = parse_float_list(concrete(2));
        if (!scales || scales->size() != spatial) return std::nullopt;
        for (std::size_t i = 0; i < spatial; ++i) {
            const double length = static_cast<double>((*in0)[rank - spatial + i]) * (*scales)[i];
            if (!(length >= 0 && length <= static_cast<double>(kLongestLength)))
                return std::nullopt;
            out.push_back(static_cast<std::int64_t>(length));
        }
        return out;
    }
    if (name == "aten::flatten") {
        const auto start = wrap_dim(parse_int(concrete(1)).value_or(0), rank);
        const auto end = wrap_dim(parse_int(concrete(2)).value_or(-1), rank);
        if (rank == 0) return Dims{1};
        if (start < 0 || end < start || end >= static_cast<std::int64_t>(rank)) return std::nullopt;
        Dims out(in0->begin(), in0->begin() + start);
        out.push_back(
            numel(std::span(in0->data() + start, static_cast<std::size_t>(end - start + 1))));
        out.insert(out.end(), in0->begin() + end + 1, in0->end());
        return out;
    }
    if (name == "aten::scaled_dot_product_attention") {
        // The query's dims with the value's width (cross-attention's key and value have their
        // own lengths: the elementwise rule's broadcast of the three is no shape).
        const Dims* v = dims(2);
        if (v == nullptr || v->empty() || rank == 0) return std::nullopt;
        Dims out = *in0;
        out.back() = v->back();
        return out;
    }
    if (name == "aten::view" || name == "aten::reshape" || name == "aten::_unsafe_view" ||
        name == "aten::expand" || name == "aten::resize_" || name == "aten::as_strided" ||
        name == "aten::new_empty" || name == "aten::new_zeros" || name == "aten::empty_like" ||
        name == "aten::_reshape_alias") {
        if (name == "aten::empty_like") return *in0;
        auto out = parse_int_list(concrete(1));
        if (!out) return std::nullopt;
        std::int64_t known = 1, unknown = -1;
        for (std::size_t i = 0; i < out->size(); ++i) {
            if ((*out)[i] == -1 && name == "aten::expand" && i + rank >= out->size())
                (*out)[i] = (*in0)[i + rank - out->size()];
            else if ((*out)[i] == -1)
                unknown = static_cast<std::int64_t>(i);
            else
                known *= (*out)[i];
        }
        if (unknown >= 0 && known > 0) (*out)[static_cast<std::size_t>(unknown)] = numel(*in0) / known;
        return out;
    }
    if (name == "aten::t") return rank == 2 ? Dims{(*in0)[1], (*in0)[0]} : *in0;
    if (name == "aten::transpose") {
        auto a = parse_int(concrete(1)), b = parse_int(concrete(2));
        if (!a || !b) return std::nullopt;
        Dims out = *in0;
        const auto i = wrap_dim(*a, rank), j = wrap_dim(*b, rank);
        if (i < 0 || j < 0 || i >= static_cast<std::int64_t>(rank) ||
            j >= static_cast<std::int64_t>(rank))
            return std::nullopt;
        std::swap(out[static_cast<std::size_t>(i)], out[static_cast<std::size_t>(j)]);
        return out;
    }
    if (name == "aten::permute") {
        auto order = parse_int_list(concrete(1));
        if (!order || order->size() != rank) return std::nullopt;
        Dims out;
        for (auto d : *order) {
            const auto i = wrap_dim(d, rank);
            if (i < 0 || i >= static_cast<std::int64_t>(rank)) return std::nullopt;
            out.push_back((*in0)[static_cast<std::size_t>(i)]);
        }
        return out;
    }
    if (name == "aten::unsqueeze") {
        auto d = parse_int(concrete(1));
        if (!d) return std::nullopt;
        const auto at = wrap_dim(*d, rank + 1);
        if (at < 0 || at > static_cast<std::int64_t>(rank)) return std::nullopt;
        Dims out = *in0;
        out.insert(out.begin() + at, 1);
        return out;
    }
    if (name == "aten::select") {
        auto d = parse_int(concrete(1));
        if (!d) return std::nullopt;
        const auto at = wrap_dim(*d, rank);
        if (at < 0 || at >= static_cast<std::int64_t>(rank)) return std::nullopt;
        Dims out = *in0;
        out.erase(out.begin() + at);
        return out;
    }
    if (name == "aten::slice") {
        auto d = parse_int(concrete(1)), start = parse_int(concrete(2)), end = parse_int(concrete(3));
        auto step = parse_int(concrete(4));
        if (!d || !start || !end) return std::nullopt;
        const auto at = wrap_dim(*d, rank);
        if (at < 0 || at >= static_cast<std::int64_t>(rank)) return std::nullopt;
        Dims out = *in0;
        const std::int64_t size = out[static_cast<std::size_t>(at)];
        auto clamp = [&](std::int64_t v) {
            if (v < 0) v += size;
            return std::clamp<std::int64_t>(v, 0, size);
        };
        const std::int64_t s = clamp(*start), e = clamp(*end), k = step.value_or(1);
        out[static_cast<std::size_t>(at)] = e > s && k > 0 ? (e - s + k - 1) / k : 0;
        return out;
    }
    if (name == "aten::mm" || name == "aten::addmm") {
        const Dims* a = dims(name == "aten::mm" ? 0 : 1);
        const Dims* b = dims(name == "aten::mm" ? 1 : 2);
        if (a == nullptr || b == nullptr || a->size() != 2 || b->size() != 2) return std::nullopt;
        return Dims{(*a)[0], (*b)[1]};
    }
    if (name == "aten::bmm" || name == "aten::baddbmm") {
        const Dims* a = dims(name == "aten::bmm" ? 0 : 1);
        const Dims* b = dims(name == "aten::bmm" ? 1 : 2);
        if (a == nullptr || b == nullptr || a->size() != 3 || b->size() != 3) return std::nullopt;
        return Dims{(*a)[0], (*a)[1], (*b)[2]};
    }
    if (name == "aten::linear") {
        const Dims* w = dims(1);
        if (w == nullptr || w->size() != 2 || rank == 0) return std::nullopt;
        Dims out = *in0;
        out.back() = (*w)[0];
        return out;
    }
    if (name == "aten::matmul") {
        const Dims* b = dims(1);
        if (b == nullptr || b->size() < 2 || rank < 2) return std::nullopt;
        Dims batch = broadcast(Dims(in0->begin(), in0->end() - 2), Dims(b->begin(), b->end() - 2));
        batch.push_back((*in0)[rank - 2]);
        batch.push_back(b->back());
        return batch;
    }
    if (name == "aten::embedding") {
        const Dims* idx = dims(1);
        if (idx == nullptr || rank != 2) return std::nullopt;
        Dims out = *idx;
        out.push_back((*in0)[1]);
        return out;
    }
    if (name == "aten::embedding_bag" || name == "aten::_embedding_bag" ||
        name == "aten::_embedding_bag_forward_only") {
        // One row per bag: a 2-D indices' rows, else the offsets (less the appended end). The
        // elementwise rule below took the table's dims: the output was a second table, and the
        // next embedding_bag's table that output (read warm in the replay, cold as recorded).
        const Dims* idx = dims(1);
        const Dims* offsets = dims(2);
        if (idx == nullptr || rank != 2) return std::nullopt;
        std::int64_t bags = 0;
        if (idx->size() == 2)
            bags = (*idx)[0];
        else if (offsets != nullptr && offsets->size() == 1)
            bags = (*offsets)[0] - (concrete(7) == "True" ? 1 : 0);
        if (bags <= 0) return std::nullopt;
        return Dims{bags, (*in0)[1]};
    }
    if (name == "aten::_grouped_mm") {
        // (self, mat2, offs, ...): a MoE's experts' GEMMs in one call. 2-D x 3-D: the routed
        // rows times each group's [k, n]; 3-D x 3-D: a batch; 2-D x 2-D: a group per offset
        // (k split); 3-D x 2-D: n split. The elementwise rule broadcast [rows, k] with
        // [groups, k, n].
        const Dims* b = dims(1);
        if (b == nullptr) return std::nullopt;
        if (rank == 2 && b->size() == 3) return Dims{(*in0)[0], (*b)[2]};
        if (rank == 3 && b->size() == 3) return Dims{(*in0)[0], (*in0)[1], (*b)[2]};
        if (rank == 3 && b->size() == 2) return Dims{(*in0)[1], (*b)[1]};
        const Dims* offs = dims(2);
        if (rank == 2 && b->size() == 2 && offs != nullptr && offs->size() == 1)
            return Dims{(*offs)[0], (*in0)[0], (*b)[1]};
        return std::nullopt;
    }
    if (name == "aten::_cudnn_rnn") {
        // (input, weights[], weight_stride0, weight_buf, hx, cx, mode, hidden_size, proj_size,
        // num_layers, batch_first, dropout, train, bidirectional, ...): the input's layout with
        // each step's features, hidden (or projected) size times the directions.
        const auto hidden = parse_int(concrete(7)), proj = parse_int(concrete(8));
        if (!hidden || *hidden <= 0 || *hidden > kLongestLength || rank == 0) return std::nullopt;
        const std::int64_t width = proj && *proj > 0 ? *proj : *hidden;
        Dims out = *in0;
        out.back() = width * (concrete(13) == "True" ? 2 : 1);
        return out;
    }
    if (name == "aten::_cudnn_rnn_backward") return *in0;  // the input's gradient first
    if (name == "aten::index") {
        // x[idx] with one integer index tensor: its dims, then the rest of self's. A list Kineto
        // recorded as [] (its usual record), several tensors, a leading None it does not show,
        // or a mask of self's leading dims (a data-dependent count): no output, rather than the
        // elementwise rule's self dims, which a later read of that size would take for it.
        const std::vector<Dims> parts =
            s.inputs.size() > 1 ? list_elements(s.inputs[1]) : std::vector<Dims>{};
        if (parts.size() != 1 || parts[0].empty() || rank == 0) return std::nullopt;
        const Dims& idx = parts[0];
        if (idx.size() <= rank && std::equal(idx.begin(), idx.end(), in0->begin()))
            return std::nullopt;
        Dims out = idx;
        out.insert(out.end(), in0->begin() + 1, in0->end());
        return out;
    }
    if (name == "aten::gather") {  // one element per index
        const Dims* idx = dims(2);
        return idx != nullptr ? std::optional<Dims>(*idx) : std::nullopt;
    }
    if (name == "aten::nll_loss" || name == "aten::nll_loss_nd" ||
        name == "aten::nll_loss_forward" || name == "aten::cross_entropy_loss") {
        // reduction="none" (0): one loss per target; mean or sum: a scalar.
        const auto reduction = parse_int(concrete(3)).value_or(1);
        const Dims* target = dims(1);
        if (reduction != 0) return Dims{};
        return target != nullptr ? std::optional<Dims>(*target) : std::nullopt;
    }
    if (name == "aten::nll_loss_backward" || name == "aten::nll_loss2d_backward")
        return dims(1) != nullptr ? std::optional<Dims>(*dims(1)) : std::nullopt;  // self's
    if (name == "aten::_embedding_bag_backward" || name == "aten::_embedding_bag_dense_backward") {
        // The table's gradient: num_weights rows of grad's width.
        const auto rows = parse_int(concrete(name == "aten::_embedding_bag_backward" ? 6 : 5));
        if (!rows || *rows <= 0 || *rows > kLongestLength || rank != 2) return std::nullopt;
        return Dims{*rows, (*in0)[1]};
    }
    if (name == "aten::index_select") {
        const Dims* idx = dims(2);
        auto d = parse_int(concrete(1));
        if (idx == nullptr || !d) return std::nullopt;
        const auto at = wrap_dim(*d, rank);
        if (at < 0 || at >= static_cast<std::int64_t>(rank)) return std::nullopt;
        Dims out = *in0;
        out[static_cast<std::size_t>(at)] = numel(*idx);
        return out;
    }
    // Backward ops whose first output, the gradient of their forward's input, has that input's
    // dims (input 1), not the incoming gradient's: a convolution's, a pool's.
    if (name == "aten::convolution_backward" || name == "aten::cudnn_convolution_backward" ||
        (name.find("pool") != std::string_view::npos && name.ends_with("_backward")))
        return dims(1) != nullptr ? std::optional<Dims>(*dims(1)) : std::nullopt;
    if (name == "aten::embedding_dense_backward" || name == "aten::embedding_backward") {
        const auto rows = parse_int(concrete(2));  // num_weights
        if (!rows || *rows <= 0 || *rows > kLongestLength || rank == 0) return std::nullopt;
        return Dims{*rows, in0->back()};
    }
    if (auto conv = convolution_args(name)) {
        // Output channels from the weight ([out, in/groups, k...]; transposed [in, out/groups,
        // k...]), each spatial length by the window formula (or its transpose).
        const Dims* w = dims(1);
        if (w == nullptr || w->size() < 3 || (rank != w->size() && rank + 1 != w->size()))
            return std::nullopt;
        const std::size_t spatial = w->size() - 2, lead = rank - spatial;
        const Dims ones(spatial, 1), zeros(spatial, 0);
        const std::string_view padding = concrete(static_cast<std::size_t>(conv->padding));
        const bool same = padding.find("same") != std::string_view::npos;
        const bool valid = padding.find("valid") != std::string_view::npos;
        auto stride = per_dim(concrete(static_cast<std::size_t>(conv->stride)), spatial, ones);
        auto pad = same || valid ? std::optional<Dims>(zeros) : per_dim(padding, spatial, zeros);
        auto dilation = per_dim(concrete(static_cast<std::size_t>(conv->dilation)), spatial, ones);
        const bool transposed = conv->always_transposed ||
                                (conv->transposed >= 0 &&
                                 concrete(static_cast<std::size_t>(conv->transposed)) == "True");
        auto output_padding =
            conv->output_padding >= 0
                ? per_dim(concrete(static_cast<std::size_t>(conv->output_padding)), spatial, zeros)
                : std::optional<Dims>(zeros);
        if (!stride || !pad || !dilation || !output_padding || !all_positive(*stride) ||
            !all_positive(*dilation) || lead == 0 || !plausible_lengths(*in0) ||
            !plausible_lengths(*w))
            return std::nullopt;
        // A forward convolution's channels are weight[0]; a transposed one's weight[1] * groups.
        const std::int64_t groups =
            parse_int(concrete(static_cast<std::size_t>(conv->groups))).value_or(1);
        if (transposed && (groups <= 0 || groups > kLargestWindowArgument)) return std::nullopt;
        Dims out(in0->begin(), in0->begin() + static_cast<std::ptrdiff_t>(lead));
        out.back() = transposed ? (*w)[1] * groups : (*w)[0];
        for (std::size_t i = 0; i < spatial; ++i) {
            const std::int64_t in = (*in0)[lead + i], k = (*w)[2 + i];
            if (same && !transposed)
                out.push_back(in);
            else if (transposed)
                out.push_back((in - 1) * (*stride)[i] - 2 * (*pad)[i] + (*dilation)[i] * (k - 1) +
                              (*output_padding)[i] + 1);
            else
                out.push_back(window_output(in, k, (*stride)[i], (*pad)[i], (*dilation)[i], false));
        }
        return out;
    }
    if (auto pool = pooling_args(name)) {
        const std::size_t spatial = pool->spatial;
        if (spatial > rank) return std::nullopt;
        auto k = per_dim(concrete(1), spatial, {});
        if (!k || k->size() != spatial) return std::nullopt;
        auto stride = per_dim(concrete(2), spatial, *k);
        auto pad = per_dim(concrete(3), spatial, Dims(spatial, 0));
        auto dilation = pool->dilation >= 0
                            ? per_dim(concrete(static_cast<std::size_t>(pool->dilation)), spatial,
                                      Dims(spatial, 1))
                            : std::optional<Dims>(Dims(spatial, 1));
        if (!stride || !pad || !dilation || !all_positive(*k) || !all_positive(*stride) ||
            !all_positive(*dilation))
            return std::nullopt;
        const bool ceil_mode = concrete(static_cast<std::size_t>(pool->ceil_mode)) == "True";
        if (!plausible_lengths(*in0)) return std::nullopt;
        Dims out(in0->begin(), in0->end() - static_cast<std::ptrdiff_t>(spatial));
        for (std::size_t i = 0; i < spatial; ++i)
            out.push_back(window_output((*in0)[rank - spatial + i], (*k)[i], (*stride)[i],
                                        (*pad)[i], (*dilation)[i], ceil_mode));
        return out;
    }
    if (name.starts_with("aten::adaptive_") || name.starts_with("aten::_adaptive_")) {
        const auto size = parse_int_list(concrete(1));
        if (!size || size->empty() || size->size() > rank) return std::nullopt;
        Dims out(in0->begin(), in0->end() - static_cast<std::ptrdiff_t>(size->size()));
        for (std::size_t i = 0; i < size->size(); ++i)  // None keeps the input's length
            out.push_back((*size)[i] > 0 ? (*size)[i] : (*in0)[rank - size->size() + i]);
        return out;
    }
    if (name == "aten::sum" || name == "aten::mean" || name == "aten::amax" ||
        name == "aten::amin") {
        auto reduced = parse_int_list(concrete(1));
        if (!reduced) return s.inputs.size() == 1 || concrete(1).empty() ? std::optional<Dims>(Dims{})
                                                                          : std::nullopt;
        const bool keep = concrete(2) == "True";
        Dims out;
        for (std::size_t i = 0; i < rank; ++i) {
            const bool gone = std::any_of(reduced->begin(), reduced->end(), [&](std::int64_t d) {
                return wrap_dim(d, rank) == static_cast<std::int64_t>(i);
            });
            if (!gone)
                out.push_back((*in0)[i]);
            else if (keep)
                out.push_back(1);
        }
        return out;
    }
    // Elementwise and normalising ops, the common case: the inputs broadcast together.
    Dims out = *in0;
    for (std::size_t i = 1; i < s.inputs.size(); ++i)
        if (const Dims* d = dims(i)) out = broadcast(out, *d);
    return out;
}


}  // namespace replay::dataflow_detail
