#include "input_synthesis.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/MemoryOverlap.h>

#include <algorithm>
#include <limits>
#include <mutex>
#include <string_view>

#include "torch_values.h"

#ifdef REPLAY_TORCH_CUDA
#include <c10/cuda/CUDAStream.h>
#endif

namespace replay::torch_detail {
namespace {

std::int64_t round_up(std::int64_t v, std::int64_t to) {
    return (v + to - 1) / to * to;
}

std::vector<std::int64_t> strides_of(const TensorSpec& spec) {
    return spec.strides.size() == spec.dims.size() ? spec.strides : spec.contiguous_strides();
}

bool valid_spec(const TensorSpec& spec) {
    const auto strides = strides_of(spec);
    return spec.storage_offset >= 0 &&
           std::all_of(spec.dims.begin(), spec.dims.end(), [](auto d) { return d >= 0; }) &&
           std::all_of(strides.begin(), strides.end(), [](auto s) { return s >= 0; });
}

// Ops whose floating inputs must be probabilities or rates: N(0, 0.1) values would fail their
// argument checks (on CUDA as device-side asserts).
bool takes_probabilities(std::string_view op) {
    for (std::string_view name :
         {"aten::multinomial", "aten::bernoulli", "aten::bernoulli_", "aten::binary_cross_entropy",
          "aten::binary_cross_entropy_backward", "aten::poisson", "aten::_standard_gamma",
          "aten::_sample_dirichlet"})
        if (op == name) return true;
    return false;
}

// The largest exclusive upper bound random_ can take for an integer dtype.
std::int64_t random_limit(at::ScalarType type) {
    switch (type) {
        case at::kBool:
            return 2;
        case at::kChar:
            return std::numeric_limits<std::int8_t>::max();
        case at::kByte:
            return std::numeric_limits<std::uint8_t>::max();
        case at::kShort:
            return std::numeric_limits<std::int16_t>::max();
        case at::kInt:
            return std::numeric_limits<std::int32_t>::max();
        default:
            return std::numeric_limits<std::int64_t>::max();
    }
}

// Every element of the storage under `t`: filling it keeps any view (overlapping, strided) of
// it in range.
at::Tensor whole_storage(const at::Tensor& t) {
    const auto count = static_cast<std::int64_t>(t.storage().nbytes()) /
                       static_cast<std::int64_t>(t.element_size());
    return at::empty({0}, t.options()).set_(t.storage(), 0, {count}, {1});
}

bool is_integer_dtype(DType d) {
    return d == DType::Int64 || d == DType::Int32 || d == DType::Int16 || d == DType::Int8 ||
           d == DType::UInt8;
}

}  // namespace

bool host_scalar_operand(const AtenArgument* recorded, const std::string& param,
                         const TensorSpec& spec, bool beside_shaped_tensor) {
    if (!spec.dims.empty()) return false;
    // The recorded kernel's functor said where it lived (the classifier's Placement).
    if (recorded != nullptr && recorded->placement != Placement::Unknown)
        return recorded->placement == Placement::Host;
    // Otherwise: a 0-dim double/long/bool next to real tensors is most often a Python number
    // that PyTorch wrapped (`x * 0.5`, `x + 1`), only as an operand of elementwise math
    // (0-dim int64 tensors such as philox seeds stay on the device).
    const bool python_number_type =
        spec.dtype == DType::Float64 || spec.dtype == DType::Int64 || spec.dtype == DType::Bool;
    const bool operand = param == "other" || param == "self" || param == "exponent";
    return python_number_type && operand && beside_shaped_tensor;
}

bool dropout_seed_on_host(const std::string& op, const std::string& param) {
    if (param != "philox_seed" && param != "philox_offset") return false;
    return op == "aten::_efficient_attention_backward" ||
           op == "aten::_scaled_dot_product_efficient_attention_backward" ||
           op == "aten::_flash_attention_backward" ||
           op == "aten::_scaled_dot_product_flash_attention_backward";
}

InputSynthesis::InputSynthesis(c10::Device device, std::uint64_t seed, bool dataflow)
    : device_(device),
      dataflow_(dataflow),
      seed_(seed),
      // Python numbers wrapped as CPU scalars stay on the host whatever the device.
      host_generator_(at::detail::createCPUGenerator(seed + 1)) {
    if (device_.is_cuda()) {
        // CPU generators cannot fill CUDA tensors: seed the device's default generator.
        generator_ = at::globalContext().defaultGenerator(device_);
        std::lock_guard<std::mutex> lock(generator_.mutex());
        generator_.set_current_seed(seed);
    } else {
        generator_ = at::detail::createCPUGenerator(seed);
    }
}

at::TensorOptions InputSynthesis::options(at::ScalarType dtype) const {
    return at::TensorOptions().dtype(dtype).device(device_);
}

void InputSynthesis::drain_fills() const {
#ifdef REPLAY_TORCH_CUDA
    if (!on_cpu()) c10::cuda::getCurrentCUDAStream(device_.index()).synchronize();
#endif
}

void InputSynthesis::fill(const at::Tensor& t, Fill how, std::int64_t bound) {
    if (t.numel() == 0) return;
    // A host tensor of a GPU replay (a host scalar operand) draws from the host's generator.
    at::Generator& generator = t.is_cpu() && !on_cpu() ? host_generator_ : generator_;
    switch (how) {
        case Fill::Below:
            // random_'s upper bound must be representable in the tensor's dtype.
            t.random_(0, std::clamp<std::int64_t>(bound, 1, random_limit(t.scalar_type())),
                      generator);
            return;
        case Fill::Normal:
        case Fill::Uniform01:
        case Fill::Positive: {
            // Half/bfloat16/complex/float8 random kernels are missing on some devices and
            // versions: draw in float32 (or float64) and convert.
            const bool direct = t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble;
            at::Tensor target = direct ? t : at::empty(t.sizes(), t.options().dtype(at::kFloat));
            if (how == Fill::Normal)
                target.normal_(0.0, 0.1, generator);
            else if (how == Fill::Uniform01)
                target.uniform_(0.0, 1.0, generator);
            else
                target.uniform_(kPositiveLow, kPositiveHigh, generator);
            if (!direct) t.copy_(target);
            return;
        }
    }
}

std::string InputSynthesis::fill_constrained(const at::Tensor& t, const ValueConstraint& c) {
    if (t.numel() == 0) return {};
    switch (c.role) {
        case ValueRole::Index:
        case ValueRole::Divisor: {
            if (ones_divisor(c, t)) {
                whole_storage(t).fill_(1);
                return {};
            }
            const std::int64_t low = c.role == ValueRole::Index ? 0 : 1;
            const std::int64_t high = c.role == ValueRole::Index ? c.bound : c.bound + 1;
            if (high <= low) return "it indexes an empty dimension (" + c.what + ")";
            if (high > random_limit(t.scalar_type()))
                return std::string("its dtype ") + c10::toString(t.scalar_type()) +
                       " cannot hold indices up to " + std::to_string(high - 1);
            at::Generator& generator = t.is_cpu() && !on_cpu() ? host_generator_ : generator_;
            whole_storage(t).random_(low, high, generator);
            return {};
        }
        case ValueRole::EmptyMask:
            whole_storage(t).zero_();
            return {};
        case ValueRole::Positive:
            fill(whole_storage(t), Fill::Positive, 0);
            return {};
        case ValueRole::Offsets:
        case ValueRole::Counts: {
            if (at::has_internal_overlap(t) == at::MemOverlap::Yes)
                return "its recorded strides overlap: its elements cannot hold distinct groups";
            // Each routed op draws its own split (layers route differently), reproducibly.
            const std::vector<std::int64_t> values =
                group_values(c, t.numel(), seed_ + 0x9E3779B97F4A7C15ULL * ++group_draws_);
            at::Tensor host = at::tensor(values, at::TensorOptions().dtype(at::kLong));
            t.copy_(host.reshape(t.sizes()));
            return {};
        }
    }
    return {};
}

at::Tensor InputSynthesis::typed_view(const at::Tensor& bytes, at::ScalarType dtype) const {
    const auto count = bytes.numel() / static_cast<std::int64_t>(c10::elementSize(dtype));
    return at::empty({0}, options(dtype)).set_(bytes.storage(), 0, {count}, {1});
}

at::Tensor InputSynthesis::make_tensor(const TensorSpec& spec, at::ScalarType dtype, Fill how,
                                       std::int64_t bound, bool share) {
    const auto strides = strides_of(spec);
    if (spec.numel() == 0) return at::empty_strided(spec.dims, strides, options(dtype));
    const auto esize = static_cast<std::int64_t>(c10::elementSize(dtype));
    if (share && spec.storage_id >= 0) {
        const std::int64_t need = round_up(spec.storage_elements() * esize, 64);
        auto [it, inserted] = storages_.try_emplace(spec.storage_id);
        SharedStorage& shared = it->second;
        if (inserted) {
            shared.bytes = at::empty({need}, options(at::kByte));
            shared.fill_dtype = dtype;
            fill(typed_view(shared.bytes, dtype), how, bound);
        } else if (shared.bytes.numel() < need) {
            // Grows the one StorageImpl in place, so tensors prepared earlier on this
            // storage see the bigger buffer too; then refills it.
            shared.bytes.resize_({need});
            fill(typed_view(shared.bytes, shared.fill_dtype), Fill::Normal, bound);
        }
        return at::empty({0}, options(dtype))
            .set_(shared.bytes.storage(), spec.storage_offset, spec.dims, strides);
    }
    // A private storage keeps the recorded offset only modulo 256 bytes: enough for the
    // alignment that vectorized kernels look at, without allocating a huge flat parameter
    // buffer for every view into it.
    TensorSpec local = spec;
    local.storage_offset = spec.storage_offset % std::max<std::int64_t>(1, 256 / esize);
    at::Tensor storage = at::empty({local.storage_elements()}, options(dtype));
    fill(storage, how, bound);
    return at::empty({0}, options(dtype))
        .set_(storage.storage(), local.storage_offset, spec.dims, strides);
}

std::optional<BuiltStack> InputSynthesis::build_stack(const Plan& plan, const AtenRecipe& recipe,
                                                      bool promote, std::string& why) {
    const c10::FunctionSchema& schema = plan.op.schema();
    const auto& arguments = schema.arguments();
    const bool probabilities = takes_probabilities(recipe.op);

    // Integer data tensors (no value role) stay below the smallest positive dimension of the
    // op's other tensors: should an unknown op index with them, they are in range of most dims.
    struct Dims {
        std::size_t arg, item;
        const std::vector<std::int64_t>* dims;
    };
    std::vector<Dims> all_dims;
    for (std::size_t i = 0; i < plan.args.size(); ++i) {
        const ArgPlan& a = plan.args[i];
        if (a.source != Source::Recorded || a.recorded == nullptr) continue;
        for (std::size_t j = 0; j < a.recorded->tensors.size(); ++j)
            all_dims.push_back({i, j, &a.recorded->tensors[j].dims});
    }
    auto data_bound = [&](std::size_t arg, std::size_t item) {
        std::int64_t bound = std::numeric_limits<std::int64_t>::max();
        for (const Dims& d : all_dims) {
            if (d.arg == arg && d.item == item) continue;
            for (auto v : *d.dims)
                if (v > 0) bound = std::min(bound, v);
        }
        return bound == std::numeric_limits<std::int64_t>::max() ? std::int64_t{1} : bound;
    };

    // One tensor argument: dtype (promoted on request), fill rule and sharing.
    auto tensor = [&](const TensorSpec& spec, std::size_t arg, std::size_t item,
                      bool index_list) -> std::optional<at::Tensor> {
        auto dtype = scalar_type_of(spec.dtype);
        if (!dtype) {
            why = dtype_missing_reason(spec.dtype);
            return std::nullopt;
        }
        const auto beside_shaped = [&] {
            return std::any_of(all_dims.begin(), all_dims.end(),
                               [&](const Dims& d) { return d.arg != arg && !d.dims->empty(); });
        };
        if (spec.dims.empty() && !on_cpu() &&
            host_scalar_operand(plan.args[arg].recorded, arguments[arg].name(), spec,
                                beside_shaped())) {
            const auto type = *dtype;
            at::Tensor wrapped = type == at::kDouble
                                     ? at::scalar_tensor(0.5, at::TensorOptions().dtype(type))
                                     : at::scalar_tensor(1, at::TensorOptions().dtype(type));
            // A Python number PyTorch wrapped is a double, long or bool; any other 0-dim CPU
            // tensor takes part in type promotion as a tensor does.
            if (type == at::kDouble || type == at::kLong || type == at::kBool)
                wrapped.unsafeGetTensorImpl()->set_wrapped_number(true);
            return wrapped;
        }
        if (!valid_spec(spec)) {
            why = "invalid recorded dims/strides";
            return std::nullopt;
        }
        // Without an Execution Trace or a producer (dataflow) list element dtypes are unknown
        // (the classifier defaults them to float32); the Tensor?[] lists of index/index_put hold
        // indices.
        if (index_list && is_float_like(*dtype)) dtype = at::kLong;
        // Traces before PyTorch 1.10 often lack dtypes: arguments that hold indices by their
        // role are int64, masks bool.
        if (spec.dtype == DType::Unknown) {
            if (holds_indices(schema, arg))
                dtype = at::kLong;
            else if (arguments[arg].name() == "mask")
                dtype = at::kBool;
        }
        if (promote && is_reduced_float(*dtype)) dtype = at::kFloat;
        Fill how = Fill::Normal;
        if (!is_float_like(*dtype))
            how = Fill::Below;  // integers refilled below when their values have a role
        else if (probabilities)
            how = Fill::Uniform01;
        const bool share = dataflow_ && is_float_like(*dtype) && !probabilities;
        return make_tensor(spec, *dtype, how, *dtype == at::kBool ? 2 : data_bound(arg, item),
                           share);
    };

    std::vector<c10::IValue> stack;
    stack.reserve(plan.args.size());
    bool host_seed = false;
    for (std::size_t i = 0; i < plan.args.size(); ++i) {
        const ArgPlan& a = plan.args[i];
        const c10::Argument& argument = arguments[i];
        const AtenArgument* rec = a.recorded;
        switch (a.source) {
            case Source::Device:
                stack.emplace_back(device_);
                continue;
            case Source::None:
                // Dividing an integer tensor in place needs a rounding mode (true division
                // makes floats). PyTorch's own such divisions (index_put_'s linearized indices)
                // pass "trunc", and Kineto records the string without its value.
                if (argument.name() == "rounding_mode" && schema.is_mutable() &&
                    !recipe.args.empty() && !recipe.args.front().tensors.empty() &&
                    is_integer_dtype(recipe.args.front().tensors.front().dtype)) {
                    stack.emplace_back(std::string("trunc"));
                    continue;
                }
                stack.emplace_back();
                continue;
            case Source::UndefinedTensor:
                stack.emplace_back(at::Tensor());
                continue;
            case Source::Guess:
                stack.push_back(guessed_value(argument, a.info, recipe));
                continue;
            case Source::Default: {
                c10::IValue value = *argument.default_value();
                if (promote && a.info.scalar_type && value.isInt() &&
                    is_reduced_float(static_cast<at::ScalarType>(value.toInt())))
                    value = c10::IValue(static_cast<std::int64_t>(at::kFloat));
                stack.push_back(std::move(value));
                continue;
            }
            case Source::Recorded:
                break;
        }
        // Recorded values.
        if (a.scalar_as_tensor) {
            auto value = scalar_ivalue(rec->value).value_or(c10::IValue(std::int64_t{1}));
            stack.emplace_back(at::scalar_tensor(
                value.toScalar(), options(value.isDouble() ? at::kDouble : at::kLong)));
            continue;
        }
        switch (a.info.slot) {
            case Slot::Tensor: {
                if (!on_cpu() && rec->tensors.front().dims.empty() &&
                    dropout_seed_on_host(recipe.op, argument.name())) {
                    stack.emplace_back(
                        at::scalar_tensor(std::int64_t{1}, at::TensorOptions().dtype(at::kLong)));
                    host_seed = true;
                    break;
                }
                auto t = tensor(rec->tensors.front(), i, 0, false);
                if (!t) return std::nullopt;
                stack.emplace_back(std::move(*t));
                break;
            }
            case Slot::TensorList: {
                c10::impl::GenericList list(a.info.element_type);
                if (a.info.optional_elements)  // x[:, i]: [None, i]
                    for (std::uint32_t k = 0; k < rec->leading_nones; ++k)
                        list.push_back(c10::IValue());
                for (std::size_t j = 0; j < rec->tensors.size(); ++j) {
                    auto t = tensor(rec->tensors[j], i, j, a.info.optional_elements);
                    if (!t) return std::nullopt;
                    list.push_back(std::move(*t));
                }
                stack.emplace_back(std::move(list));
                break;
            }
            case Slot::Int: {
                std::int64_t v = *parse_int(rec->value);
                if (promote && a.info.scalar_type &&
                    is_reduced_float(static_cast<at::ScalarType>(v)))
                    v = static_cast<std::int64_t>(at::kFloat);
                stack.emplace_back(v);
                break;
            }
            case Slot::Float:
                stack.emplace_back(*parse_double(rec->value));
                break;
            case Slot::Bool:
                // _softmax/_log_softmax(half_to_float=True) reject float inputs: once promoted,
                // there is no half left to convert.
                stack.emplace_back(*parse_bool(rec->value) &&
                                   !(promote && argument.name() == "half_to_float"));
                break;
            case Slot::Scalar:
                stack.push_back(*scalar_ivalue(rec->value));
                break;
            case Slot::Complex:
                stack.emplace_back(c10::complex<double>(*parse_double(rec->value), 0.0));
                break;
            case Slot::IntList:
            case Slot::FloatList:
            case Slot::BoolList:
            case Slot::ScalarList: {
                std::vector<std::string_view> items;
                if (a.scalar_as_list) {
                    // int[2] stride=1 style: one value for every element.
                    items.assign(static_cast<std::size_t>(
                                     std::max<std::int64_t>(argument.N().value_or(1), 1)),
                                 rec->value);
                } else {
                    items = *parse_list(rec->value);
                }
                c10::impl::GenericList list(a.info.element_type);
                for (auto item : items) {
                    std::optional<c10::IValue> v;
                    if (a.info.slot == Slot::IntList) {
                        if (auto x = parse_int(item)) v = c10::IValue(*x);
                    } else if (a.info.slot == Slot::FloatList) {
                        if (auto x = parse_double(item)) v = c10::IValue(*x);
                    } else if (a.info.slot == Slot::BoolList) {
                        if (auto x = parse_bool(item)) v = c10::IValue(*x);
                    } else {
                        v = scalar_ivalue(item);
                    }
                    if (!v) {
                        why =
                            "argument '" + argument.name() + "': cannot read '" + rec->value + "'";
                        return std::nullopt;
                    }
                    list.push_back(std::move(*v));
                }
                stack.emplace_back(std::move(list));
                break;
            }
            case Slot::String:
                if (rec->kind == ArgKind::String && !trim(rec->value).empty())
                    stack.emplace_back(std::string(trim(rec->value)));
                else
                    stack.push_back(argument.default_value().value_or(c10::IValue(std::string())));
                break;
            case Slot::Device:
            case Slot::Generator:
            case Slot::Unsupported:
                why = "argument '" + argument.name() + "' cannot be synthesized";
                return std::nullopt;
        }
    }
    // Integer tensors whose values index or split something get values inside their range.
    auto constraints = value_constraints(schema, stack, why);
    if (!constraints) return std::nullopt;
    for (const ValueConstraint& c : *constraints) {
        if (std::string error = fill_constrained(constrained_tensor(stack, c), c); !error.empty()) {
            why = schema.name() + ": argument '" + arguments[c.arg].name() + "' (" + c.what +
                  "): " + error;
            return std::nullopt;
        }
    }
    return BuiltStack{std::move(stack), std::move(*constraints), host_seed};
}

std::string check_constraints(const Plan& plan, const BuiltStack& built) {
    const c10::FunctionSchema& schema = plan.op.schema();
    for (const ValueConstraint& c : built.constraints) {
        const at::Tensor& tensor = constrained_tensor(built.stack, c);
        std::string error;
        if (ones_divisor(c, tensor)) {
            if (!tensor.eq(1).all().item<bool>())
                error = "a floating-point divisor is not all ones";
        } else if (c.role == ValueRole::Positive) {
            if (!tensor.gt(0).all().item<bool>())
                error = "a value is not positive (" + c.what + ")";
        } else {
            const at::Tensor host = tensor.to(at::kCPU).to(at::kLong).contiguous();
            const std::int64_t* data = host.data_ptr<std::int64_t>();
            error = check_values(c, std::vector<std::int64_t>(data, data + host.numel()));
        }
        if (!error.empty()) {
            const auto& name = schema.arguments()[c.arg].name();
            return schema.name() + ": argument '" + name +
                   (built.stack[c.arg].isList() ? "[" + std::to_string(c.item) + "]" : "") +
                   "' breaks its " + to_string(c.role) + " range: " + error;
        }
    }
    return {};
}

// The recorded tensors of a built stack, paired with what the recording says about them.
std::vector<RecordedInput> inputs_of(const Plan& plan, const std::vector<c10::IValue>& stack) {
    std::vector<RecordedInput> inputs;
    const auto& arguments = plan.op.schema().arguments();
    for (std::size_t i = 0; i < plan.args.size() && i < stack.size(); ++i) {
        const AtenArgument* rec = plan.args[i].recorded;
        if (plan.args[i].source != Source::Recorded || rec == nullptr) continue;
        const std::string& name = arguments[i].name();
        const bool parameter = name == "weight" || name == "bias" || name == "running_mean" ||
                               name == "running_var" || name.ends_with("_weight") ||
                               name.ends_with("_bias");
        auto add = [&](const at::Tensor& t, std::size_t item) {
            if (item < rec->tensors.size())
                inputs.push_back({t, rec->tensors[item].reuse_bytes, parameter});
        };
        if (stack[i].isTensor()) {
            add(stack[i].toTensor(), 0);
        } else if (stack[i].isList()) {
            const auto list = stack[i].toList();
            for (std::size_t j = rec->leading_nones; j < list.size(); ++j) {
                const c10::IValue element = list.get(j);
                if (element.isTensor()) add(element.toTensor(), j - rec->leading_nones);
            }
        }
    }
    return inputs;
}

}  // namespace replay::torch_detail
