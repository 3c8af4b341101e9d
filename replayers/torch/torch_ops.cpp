// libtorch replay of aten ops, GEMMs and copies. See torch_ops.h for the interface.
//
// Aten ops are called through the dispatcher's boxed convention (OperatorHandle::callBoxed on a
// stack of IValues) so that any registered op can be replayed from its name and recorded
// arguments without generated C++ bindings. The boxed kernels read every schema argument from
// the stack, so the stack always holds all of them: recorded values first, then schema defaults.
//
// Input data (documented rule, also in the report):
//   * floating/complex tensors: N(0, 0.1^2) (U[0, 1) for ops that take probabilities);
//   * bool tensors: uniform {false, true};
//   * integer tensors whose argument name says they describe structure (offsets, lengths,
//     cu_seqlens, repeats, crow_indices, ...): zeros, which are valid offsets and lengths;
//   * other integer tensors (indices for embedding, gather, scatter, index_select, nll_loss
//     targets, ...): uniform in [0, bound) where bound is the smallest positive dimension among
//     the op's other tensor arguments and its "num_*" int arguments (at least 1). The indexed
//     dimension is one of those dimensions, so every index is in range whatever the op.
//   * with dataflow, only floating/complex tensors share recorded storages: an integer tensor
//     could otherwise be overwritten by another op with values out of range for its indexing op
//     (a device-side assert poisons a CUDA context).
//   * tensors without a recorded dtype are float32, except arguments named target/index/indices/
//     offsets (int64) and mask (bool); Tensor?[] index lists hold int64.
//
// Scalars come from the recorded text ("1", "0.125", "True", "[1024]"); an unrecorded one takes
// the schema default, else None when optional, else (required scalars of old traces only) a
// guess that Prepared::reason lists. Device arguments are always the replay device.
//
// On the CPU every op gets one trial run in prepare: a kernel missing for float16/bfloat16
// (libtorch 1.13 lacks many) is retried with those tensors in float32.
#include "replay/torch_ops.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/InferenceMode.h>
#include <torch/version.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>

#ifdef REPLAY_TORCH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace replay {
namespace {

// ---- small helpers ------------------------------------------------------------------------------

std::string missing_op_reason(const std::string& op) {
    return std::string("op missing from this libtorch (") + TORCH_VERSION + "): " + op;
}

// First line of a c10::Error without the C++ backtrace, bounded: it ends up in reports.
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

// Integers, also written as "True"/"False" or "2.0" (Kineto prints some ints that way).
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

// "[1024]", "[2, 3]", "(1, 1)", "[]" -> elements; a bare value is a list of one.
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

// A Scalar argument's IValue: bool, int or double as the recorded text says.
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

bool is_reduced_float(at::ScalarType t) {
    return t == at::kHalf || t == at::kBFloat16;
}
bool is_float_like(at::ScalarType t) {
    return at::isFloatingType(t) || at::isComplexType(t);
}

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

// Integer tensors that describe structure rather than index something: zeros are valid for all.
bool is_structure_name(std::string name) {
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    for (std::string_view key : {"offset", "length", "cu_seqlens", "cum_seq", "seqlen", "seqused",
                                 "crow", "ccol", "repeats", "sizes", "split"})
        if (name.find(key) != std::string::npos) return true;
    return false;
}

// ---- schema argument kinds ---------------------------------------------------------------------

enum class Slot : std::uint8_t {
    Tensor,
    TensorList,
    Int,
    Float,
    Bool,
    Scalar,
    Complex,
    IntList,
    FloatList,
    BoolList,
    ScalarList,
    String,
    Device,
    Generator,
    Unsupported
};

bool is_scalar_slot(Slot s) {
    return s == Slot::Int || s == Slot::Float || s == Slot::Bool || s == Slot::Scalar ||
           s == Slot::Complex;
}
bool is_list_slot(Slot s) {
    return s == Slot::IntList || s == Slot::FloatList || s == Slot::BoolList ||
           s == Slot::ScalarList;
}

struct SlotInfo {
    Slot slot = Slot::Unsupported;
    bool optional = false;           // T? in the schema: None is accepted
    bool optional_elements = false;  // Tensor?[] (index lists)
    bool scalar_type = false;        // ScalarType / ScalarType? (an int on the stack)
    c10::TypePtr element_type;       // for lists
};

Slot scalar_slot(c10::TypeKind kind) {
    switch (kind) {
        case c10::TypeKind::IntType:
        case c10::TypeKind::SymIntType:
        case c10::TypeKind::ScalarTypeType:
        case c10::TypeKind::LayoutType:
        case c10::TypeKind::MemoryFormatType:
            return Slot::Int;
        case c10::TypeKind::FloatType:
        case c10::TypeKind::SymFloatType:
            return Slot::Float;
        case c10::TypeKind::BoolType:
#if TORCH_VERSION_MAJOR >= 2
        case c10::TypeKind::SymBoolType:
#endif
            return Slot::Bool;
        case c10::TypeKind::NumberType:
            return Slot::Scalar;
        case c10::TypeKind::ComplexType:
            return Slot::Complex;
        default:
            return Slot::Unsupported;
    }
}

SlotInfo slot_of(const c10::Argument& argument) {
    SlotInfo info;
    c10::TypePtr type = argument.type();  // the "fake" type: ScalarType, Layout, SymInt read as int
    if (type->kind() == c10::TypeKind::OptionalType) {
        info.optional = true;
        type = type->castRaw<c10::OptionalType>()->getElementType();
    }
    c10::TypePtr real = argument.real_type();
    if (real->kind() == c10::TypeKind::OptionalType)
        real = real->castRaw<c10::OptionalType>()->getElementType();
    info.scalar_type = real->kind() == c10::TypeKind::ScalarTypeType;

    switch (type->kind()) {
        case c10::TypeKind::TensorType:
            info.slot = Slot::Tensor;
            break;
        case c10::TypeKind::StringType:
            info.slot = Slot::String;
            break;
        case c10::TypeKind::DeviceObjType:
            info.slot = Slot::Device;
            break;
        case c10::TypeKind::GeneratorType:
            info.slot = Slot::Generator;
            break;
        case c10::TypeKind::ListType: {
            info.element_type = type->castRaw<c10::ListType>()->getElementType();
            const auto element = info.element_type->kind();
            if (element == c10::TypeKind::TensorType) {
                info.slot = Slot::TensorList;
            } else if (element == c10::TypeKind::OptionalType &&
                       info.element_type->castRaw<c10::OptionalType>()->getElementType()->kind() ==
                           c10::TypeKind::TensorType) {
                info.slot = Slot::TensorList;
                info.optional_elements = true;
            } else {
                switch (scalar_slot(element)) {
                    case Slot::Int:
                        info.slot = Slot::IntList;
                        break;
                    case Slot::Float:
                        info.slot = Slot::FloatList;
                        break;
                    case Slot::Bool:
                        info.slot = Slot::BoolList;
                        break;
                    case Slot::Scalar:
                        info.slot = Slot::ScalarList;
                        break;
                    default:
                        info.slot = Slot::Unsupported;
                        break;
                }
            }
            break;
        }
        default:
            info.slot = scalar_slot(type->kind());
            break;
    }
    return info;
}

// ---- binding recorded arguments to a schema
// ------------------------------------------------------

// Guess: a required scalar the trace has no value for (traces before PyTorch 2.1 record no
// Concrete Inputs, and the oldest ones record scalars as None). A plausible value keeps
// elementwise and reduction ops replayable; the guesses are listed in Prepared::reason.
enum class Source : std::uint8_t { Recorded, Default, None, Device, Guess, UndefinedTensor };

struct ArgPlan {
    SlotInfo info;
    Source source = Source::Recorded;
    const AtenArgument* recorded = nullptr;
    bool scalar_as_tensor = false;  // a recorded Scalar passed where the schema wants a Tensor
    bool scalar_as_list = false;    // a recorded Scalar passed where the schema wants a list
};

struct Plan {
    c10::OperatorHandle op;
    std::vector<ArgPlan> args;
    int cost = 0;  // arguments filled from defaults + penalties for loose kind matches
};

// Binds the recorded arguments to one overload's schema; nullopt (with `why`) when they do not fit.
std::optional<Plan> plan_for(const c10::OperatorHandle& op, const AtenRecipe& recipe,
                             std::string& why) {
    const c10::FunctionSchema& schema = op.schema();
    const auto& arguments = schema.arguments();
    if (schema.is_vararg()) {
        why = "vararg schema";
        return std::nullopt;
    }
    if (recipe.args.size() > arguments.size()) {
        why = std::to_string(recipe.args.size()) + " recorded arguments for " +
              std::to_string(arguments.size()) + " in the schema";
        return std::nullopt;
    }
    Plan plan{op, {}, 0};
    for (std::size_t i = 0; i < arguments.size(); ++i) {
        const c10::Argument& argument = arguments[i];
        ArgPlan arg;
        arg.info = slot_of(argument);
        const Slot slot = arg.info.slot;
        const AtenArgument* rec = i < recipe.args.size() ? &recipe.args[i] : nullptr;
        arg.recorded = rec;
        auto reject = [&](const std::string& what) {
            why = "argument " + std::to_string(i) + " '" + argument.name() + "' (" +
                  argument.type()->str() + "): " + what;
            return std::nullopt;
        };
        // Not recorded, recorded as None or without a value: what the schema allows instead.
        auto fallback = [&]() {
            if (slot == Slot::Device)
                arg.source = Source::Device;
            else if (argument.default_value().has_value())
                arg.source = Source::Default;
            else if (arg.info.optional)
                arg.source = Source::None;
            else
                return false;
            return true;
        };
        auto guess = [&]() {
            if (!is_scalar_slot(slot)) return false;
            arg.source = Source::Guess;
            plan.cost += 3;  // an overload that needs no guess fits better
            return true;
        };
        if (slot == Slot::Device) {
            // Always the replay device: the recorded one names the recording machine's device,
            // and None would put factory outputs on the CPU.
            arg.source = Source::Device;
        } else if (rec == nullptr) {
            if (!fallback()) return reject("not recorded and no default");
            plan.cost += 1;
        } else {
            switch (rec->kind) {
                case ArgKind::Tensor:
                    if (slot != Slot::Tensor || rec->tensors.empty())
                        return reject("recorded a tensor");
                    break;
                case ArgKind::TensorList:
                    if (slot != Slot::TensorList) return reject("recorded a tensor list");
                    // No op takes an empty list where a list was recorded: its shapes are missing.
                    if (rec->tensors.empty())
                        return reject("tensor list recorded without its tensors");
                    break;
                case ArgKind::Scalar:
                    if (trim(rec->value).empty()) {
                        if (slot == Slot::Tensor || slot == Slot::TensorList)
                            return reject("recorded a scalar");
                        if (!fallback() && !guess())
                            return reject("recorded a scalar without its value");
                    } else if (is_scalar_slot(slot)) {
                        if ((slot == Slot::Int && !parse_int(rec->value)) ||
                            (slot == Slot::Bool && !parse_bool(rec->value)) ||
                            (slot != Slot::Int && slot != Slot::Bool && !scalar_ivalue(rec->value)))
                            return reject("recorded value '" + rec->value + "' does not fit");
                    } else if (is_list_slot(slot)) {
                        arg.scalar_as_list = true;
                        plan.cost += 2;
                    } else if (slot == Slot::Tensor) {
                        arg.scalar_as_tensor = true;
                        plan.cost += 4;
                    } else {
                        return reject("recorded a scalar");
                    }
                    break;
                case ArgKind::ScalarList:
                    if (!is_list_slot(slot)) return reject("recorded a scalar list");
                    if (!parse_list(rec->value) && !fallback())
                        return reject("recorded a list without its value");
                    break;
                case ArgKind::String:
                    if (slot != Slot::String && !fallback()) return reject("recorded a string");
                    if (slot == Slot::String && trim(rec->value).empty() && !fallback())
                        return reject("recorded a string without its value");
                    break;
                case ArgKind::None:
                    // A C++ caller passing an undefined Tensor (cudnn attention's attn_bias)
                    // records None for a non-optional Tensor argument.
                    // Only in the overload the Execution Trace named: elsewhere it would pick a
                    // Tensor overload for a None that stands for something else.
                    if (slot == Slot::Tensor && !arg.info.optional && !recipe.schema.empty() &&
                        schema.overload_name() == recipe.overload) {
                        arg.source = Source::UndefinedTensor;
                        plan.cost += 1;
                        break;
                    }
                    if (!fallback() && !guess()) return reject("recorded None");
                    break;
                case ArgKind::Other:
                    if (slot == Slot::Tensor || slot == Slot::TensorList ||
                        (!fallback() && !guess()))
                        return reject("recorded an unknown kind");
                    break;
            }
        }
        if (arg.source == Source::Recorded &&
            (slot == Slot::Unsupported || slot == Slot::Generator))
            return reject("this argument type cannot be synthesized");
        plan.args.push_back(arg);
    }
    return plan;
}

// A plausible value for a required scalar the trace did not record (Source::Guess).
c10::IValue guessed_value(const c10::Argument& argument, const SlotInfo& info,
                          const AtenRecipe& recipe) {
    const std::string& name = argument.name();
    auto has = [&](std::string_view key) { return name.find(key) != std::string::npos; };
    switch (info.slot) {
        case Slot::Int:
            if (info.scalar_type) {  // the dtype of the op's first tensor
                for (const auto& arg : recipe.args)
                    for (const auto& t : arg.tensors)
                        if (auto dtype = scalar_type_of(t.dtype))
                            return c10::IValue(static_cast<std::int64_t>(*dtype));
                return c10::IValue(static_cast<std::int64_t>(at::kFloat));
            }
            if (has("dim"))
                return c10::IValue(std::int64_t{-1});  // the last dimension exists for any rank
            if (name == "ignore_index") return c10::IValue(std::int64_t{-100});
            return c10::IValue(std::int64_t{1});  // reduction=mean, groups=1, ...
        case Slot::Float:
            if (has("eps")) return c10::IValue(1e-5);
            if (has("momentum")) return c10::IValue(0.1);
            return c10::IValue(1.0);
        case Slot::Bool:
            return c10::IValue(false);
        case Slot::Complex:
            return c10::IValue(c10::complex<double>(1.0, 0.0));
        default:
            return c10::IValue(std::int64_t{1});  // Scalar
    }
}

// ---- prepared work
// -------------------------------------------------------------------------------

struct OpWork {
    c10::OperatorHandle op;
    std::vector<c10::IValue> stack;  // copied per run: callBoxed consumes its stack
    struct Input {
        at::Tensor tensor;  // a view whose storage may grow later: data_ptr() is read when asked
        std::int64_t reuse_bytes = kReuseUnknown;
        bool parameter = false;
    };
    std::vector<Input> inputs;
};

struct GemmWork {
    enum class Call : std::uint8_t { Mm, Addmm, Bmm, Baddbmm };
    Call call = Call::Mm;
    at::Tensor a, b, c, self;  // self: the added matrix / bias (addmm, baddbmm)
    double alpha = 1.0, beta = 0.0;
};

struct CopyWork {
    bool is_memset = false;
    int value = 0;
    // CPU: plain host buffers (touched at prepare so that page faults stay out of the timing).
    std::vector<std::byte> host_src, host_dst;
    // CUDA: byte tensors on the host (pinned when recorded so) and on the device.
    at::Tensor src, dst;
};

// The recorded tensors of a built stack, paired with what the recording says about them.
std::vector<OpWork::Input> inputs_of(const Plan& plan, const std::vector<c10::IValue>& stack) {
    std::vector<OpWork::Input> inputs;
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
            for (std::size_t j = 0; j < list.size(); ++j) {
                const c10::IValue element = list.get(j);
                if (element.isTensor()) add(element.toTensor(), j);
            }
        }
    }
    return inputs;
}

struct Entry {
    std::string label;
    std::variant<OpWork, GemmWork, CopyWork> work;
};

enum class Fill : std::uint8_t { Normal, Uniform01, Zeros, Index };

}  // namespace

// ---- the runner --------------------------------------------------------------------------------

struct TorchOpRunner::Impl {
    TorchDevice device;
    c10::Device torch_device{c10::kCPU};
    std::uint64_t seed = 0;
    bool dataflow = true;
    at::Generator generator;
    // Recorded storage id -> a byte buffer shared by every floating tensor on it (dataflow).
    struct SharedStorage {
        at::Tensor bytes;           // 1-D uint8 over the whole storage
        at::ScalarType fill_dtype;  // dtype its random values were written as
    };
    std::unordered_map<std::int64_t, SharedStorage> storages;
    std::vector<Entry> entries;
    std::set<std::string> notes;

    Impl(TorchDevice d, std::uint64_t s, bool flow) : device(d), seed(s), dataflow(flow) {
        if (device.kind == TorchDevice::Kind::Cuda) {
            torch_device = c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(device.index));
            // CPU generators cannot fill CUDA tensors: seed the device's default generator.
            generator = at::globalContext().defaultGenerator(torch_device);
            std::lock_guard<std::mutex> lock(generator.mutex());
            generator.set_current_seed(seed);
        } else {
            generator = at::detail::createCPUGenerator(seed);
        }
    }

    bool on_cpu() const { return device.kind == TorchDevice::Kind::Cpu; }

    // Prepare fills inputs with kernels on the device's current stream; the backend's streams
    // may not synchronize with it (non-blocking streams), and an index tensor read before its
    // fill finished could hold anything. So prepare ends with that stream drained.
    void drain_fills() const {
#ifdef REPLAY_TORCH_CUDA
        if (!on_cpu()) c10::cuda::getCurrentCUDAStream(torch_device.index()).synchronize();
#endif
    }
    at::TensorOptions options(at::ScalarType dtype) const {
        return at::TensorOptions().dtype(dtype).device(torch_device);
    }

    std::uint32_t add(std::string label, std::variant<OpWork, GemmWork, CopyWork> work) {
        entries.push_back(Entry{std::move(label), std::move(work)});
        return static_cast<std::uint32_t>(entries.size() - 1);
    }

    void fill(const at::Tensor& t, Fill how, std::int64_t bound) {
        if (t.numel() == 0) return;
        switch (how) {
            case Fill::Zeros:
                t.zero_();
                return;
            case Fill::Index: {
                // random_'s upper bound must be representable in the tensor's dtype.
                std::int64_t limit = std::numeric_limits<std::int64_t>::max();
                switch (t.scalar_type()) {
                    case at::kBool:
                        limit = 2;
                        break;
                    case at::kChar:
                        limit = std::numeric_limits<std::int8_t>::max();
                        break;
                    case at::kByte:
                        limit = std::numeric_limits<std::uint8_t>::max();
                        break;
                    case at::kShort:
                        limit = std::numeric_limits<std::int16_t>::max();
                        break;
                    case at::kInt:
                        limit = std::numeric_limits<std::int32_t>::max();
                        break;
                    default:
                        break;
                }
                t.random_(0, std::clamp<std::int64_t>(bound, 1, limit), generator);
                return;
            }
            case Fill::Normal:
            case Fill::Uniform01: {
                // Half/bfloat16/complex/float8 random kernels are missing on some devices and
                // versions: draw in float32 (or float64) and convert.
                const bool direct = t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble;
                at::Tensor target = direct ? t : at::empty(t.sizes(), options(at::kFloat));
                if (how == Fill::Normal)
                    target.normal_(0.0, 0.1, generator);
                else
                    target.uniform_(0.0, 1.0, generator);
                if (!direct) t.copy_(target);
                return;
            }
        }
    }

    // A typed tensor over the whole of a byte buffer.
    at::Tensor typed_view(const at::Tensor& bytes, at::ScalarType dtype) const {
        const auto count = bytes.numel() / static_cast<std::int64_t>(c10::elementSize(dtype));
        return at::empty({0}, options(dtype)).set_(bytes.storage(), 0, {count}, {1});
    }

    // A tensor with the recorded dims/strides/offset on a storage big enough for them.
    at::Tensor make_tensor(const TensorSpec& spec, at::ScalarType dtype, Fill how,
                           std::int64_t bound, bool share) {
        const auto strides = strides_of(spec);
        if (spec.numel() == 0) return at::empty_strided(spec.dims, strides, options(dtype));
        const auto esize = static_cast<std::int64_t>(c10::elementSize(dtype));
        if (share && spec.storage_id >= 0) {
            const std::int64_t need = round_up(spec.storage_elements() * esize, 64);
            auto [it, inserted] = storages.try_emplace(spec.storage_id);
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

    Prepared prepare_op(const AtenRecipe& recipe);
    Prepared prepare_gemm(const GemmRecipe& recipe);
    Prepared prepare_copy(const CopyRecipe& recipe);
    std::optional<std::vector<c10::IValue>> build_stack(const Plan& plan, const AtenRecipe& recipe,
                                                        bool promote, std::string& why);
    std::string run(std::uint32_t handle);
};

namespace {

// name -> overload names, built once: the dispatcher has no lookup by name alone.
const std::unordered_map<std::string, std::vector<std::string>>& overload_index() {
    static const auto index = [] {
        std::unordered_map<std::string, std::vector<std::string>> map;
        for (const c10::OperatorName& name : c10::Dispatcher::singleton().getAllOpNames())
            map[name.name].push_back(name.overload_name);
        // Deterministic preference when costs tie: the default overload, then the others, then
        // out= variants (they need an extra recorded tensor, so rarely tie anyway).
        auto rank = [](const std::string& o) {
            if (o.empty()) return 0;
            if (o == "out" || o.ends_with("_out")) return 2;
            return 1;
        };
        for (auto& [name, overloads] : map)
            std::sort(overloads.begin(), overloads.end(),
                      [&](const std::string& a, const std::string& b) {
                          return std::pair(rank(a), a) < std::pair(rank(b), b);
                      });
        return map;
    }();
    return index;
}

bool has_reduced_float(const AtenRecipe& recipe) {
    for (const auto& arg : recipe.args)
        for (const auto& t : arg.tensors)
            if (t.dtype == DType::Float16 || t.dtype == DType::BFloat16) return true;
    return false;
}

std::string reduced_float_note(bool half, bool bfloat) {
    const char* which = half && bfloat ? "float16/bfloat16" : half ? "float16" : "bfloat16";
    return std::string(which) + " computed as float32 on CPU";
}

}  // namespace

std::optional<std::vector<c10::IValue>> TorchOpRunner::Impl::build_stack(const Plan& plan,
                                                                         const AtenRecipe& recipe,
                                                                         bool promote,
                                                                         std::string& why) {
    const auto& arguments = plan.op.schema().arguments();
    const bool probabilities = takes_probabilities(recipe.op);

    // Bounds for integer index tensors: every tensor's dims plus "num_*" int arguments.
    struct Dims {
        std::size_t arg, item;
        const std::vector<std::int64_t>* dims;
    };
    std::vector<Dims> all_dims;
    std::int64_t num_bound = std::numeric_limits<std::int64_t>::max();
    for (std::size_t i = 0; i < plan.args.size(); ++i) {
        const ArgPlan& a = plan.args[i];
        if (a.source != Source::Recorded || a.recorded == nullptr) continue;
        for (std::size_t j = 0; j < a.recorded->tensors.size(); ++j)
            all_dims.push_back({i, j, &a.recorded->tensors[j].dims});
        if (a.info.slot == Slot::Int && arguments[i].name().starts_with("num_"))
            if (auto v = parse_int(a.recorded->value); v && *v > 0)
                num_bound = std::min(num_bound, *v);
    }
    auto index_bound = [&](std::size_t arg, std::size_t item) {
        std::int64_t bound = num_bound;
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
            why = std::string("dtype ") + to_string(spec.dtype) + " is not in this libtorch (" +
                  TORCH_VERSION + ")";
            return std::nullopt;
        }
        // A 0-dim double/long/bool next to real tensors is a Python number that PyTorch wrapped
        // (`x * 0.5`, `x + 1`): a CPU scalar that TensorIterator folds into the kernel
        // (AUnaryFunctor, CUDAFunctorOnSelf_add), not a device tensor to broadcast.
        const bool python_number_type =
            spec.dtype == DType::Float64 || spec.dtype == DType::Int64 || spec.dtype == DType::Bool;
        const std::string& param = arguments[arg].name();
        // Only operands of elementwise math: 0-dim int64 tensors such as philox seeds stay on the
        // device.
        const bool operand = param == "other" || param == "self" || param == "exponent";
        if (spec.dims.empty() && python_number_type && operand && !on_cpu() &&
            std::any_of(all_dims.begin(), all_dims.end(),
                        [&](const Dims& d) { return d.arg != arg && !d.dims->empty(); })) {
            const auto type = *dtype;
            at::Tensor wrapped = type == at::kDouble
                                     ? at::scalar_tensor(0.5, at::TensorOptions().dtype(type))
                                     : at::scalar_tensor(1, at::TensorOptions().dtype(type));
            wrapped.unsafeGetTensorImpl()->set_wrapped_number(true);
            return wrapped;
        }
        if (!valid_spec(spec)) {
            why = "invalid recorded dims/strides";
            return std::nullopt;
        }
        // List element dtypes are not recorded (the parser defaults them to float32); the
        // Tensor?[] lists of index/index_put hold indices.
        if (index_list && is_float_like(*dtype)) dtype = at::kLong;
        // Traces before PyTorch 1.10 often lack dtypes: name the obvious integer/bool arguments.
        if (spec.dtype == DType::Unknown) {
            const std::string& name = arguments[arg].name();
            if (name == "target" || name == "indices" || name == "index" || name == "offsets")
                dtype = at::kLong;
            else if (name == "mask")
                dtype = at::kBool;
        }
        if (promote && is_reduced_float(*dtype)) dtype = at::kFloat;
        Fill how = Fill::Normal;
        if (*dtype == at::kBool)
            how = Fill::Index;
        else if (!is_float_like(*dtype))
            how = is_structure_name(arguments[arg].name()) ? Fill::Zeros : Fill::Index;
        else if (probabilities)
            how = Fill::Uniform01;
        const bool share = dataflow && is_float_like(*dtype) && !probabilities;
        return make_tensor(spec, *dtype, how, *dtype == at::kBool ? 2 : index_bound(arg, item),
                           share);
    };

    std::vector<c10::IValue> stack;
    stack.reserve(plan.args.size());
    for (std::size_t i = 0; i < plan.args.size(); ++i) {
        const ArgPlan& a = plan.args[i];
        const c10::Argument& argument = arguments[i];
        const AtenArgument* rec = a.recorded;
        switch (a.source) {
            case Source::Device:
                stack.emplace_back(torch_device);
                continue;
            case Source::None:
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
                auto t = tensor(rec->tensors.front(), i, 0, false);
                if (!t) return std::nullopt;
                stack.emplace_back(std::move(*t));
                break;
            }
            case Slot::TensorList: {
                c10::impl::GenericList list(a.info.element_type);
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
    return stack;
}

Prepared TorchOpRunner::Impl::prepare_op(const AtenRecipe& recipe) {
    Prepared result;
    c10::InferenceMode inference;  // no autograd bookkeeping: replay times the kernels
    try {
        // Candidates: the recorded overload first, then every overload of the name.
        std::vector<std::string> candidates;
        if (!recipe.overload.empty()) candidates.push_back(recipe.overload);
        const auto& index = overload_index();
        if (auto it = index.find(recipe.op); it != index.end())
            for (const auto& o : it->second)
                if (recipe.overload.empty() || o != recipe.overload) candidates.push_back(o);

        std::optional<Plan> best;
        std::string first_why;
        bool any_schema = false;
        for (const auto& overload : candidates) {
            auto handle = c10::Dispatcher::singleton().findSchema({recipe.op, overload});
            if (!handle) continue;
            any_schema = true;
            std::string why;
            auto plan = plan_for(*handle, recipe, why);
            if (!plan) {
                if (first_why.empty())
                    first_why =
                        (overload.empty() ? recipe.op : recipe.op + "." + overload) + ": " + why;
                continue;
            }
            if (!best || plan->cost < best->cost) best = std::move(plan);
            if (best->cost == 0) break;  // exact fit
        }
        if (!any_schema) {
            result.reason = missing_op_reason(recipe.op);
            return result;
        }
        if (!best) {
            result.reason = "no overload matches the recorded arguments (" + first_why + ")";
            return result;
        }
        const auto key = on_cpu() ? c10::DispatchKey::CPU : c10::DispatchKey::CUDA;
        if (!best->op.hasComputedKernelForDispatchKey(key)) {
            result.reason = recipe.op + " has no " + (on_cpu() ? "CPU" : "CUDA") +
                            " kernel in this libtorch (" + TORCH_VERSION + ")";
            return result;
        }

        std::string why;
        auto stack = build_stack(*best, recipe, false, why);
        if (!stack) {
            result.reason = why;
            return result;
        }
        // On the CPU a trial run is cheap and catches kernels missing for a dtype (libtorch
        // 1.13 has no CPU kernels for many float16 ops); on CUDA it would cost device time and
        // report errors asynchronously, so types are only validated there.
        if (on_cpu()) {
            std::string error;
            try {
                auto trial = *stack;
                best->op.callBoxed(&trial);
            } catch (const std::exception& e) {
                error = short_error(e);
            }
            if (!error.empty() && has_reduced_float(recipe)) {
                auto promoted = build_stack(*best, recipe, true, why);
                if (promoted) {
                    try {
                        auto trial = *promoted;
                        best->op.callBoxed(&trial);
                        bool half = false, bfloat = false;
                        for (const auto& arg : recipe.args)
                            for (const auto& t : arg.tensors) {
                                half |= t.dtype == DType::Float16;
                                bfloat |= t.dtype == DType::BFloat16;
                            }
                        result.reason = reduced_float_note(half, bfloat);
                        notes.insert(result.reason);
                        stack = std::move(promoted);
                        error.clear();
                    } catch (const std::exception&) {
                        // Keep the original dtype's error: it says what the trace needs.
                    }
                }
            }
            if (!error.empty()) {
                result.disposition = Disposition::Failed;
                result.reason = error;
                return result;
            }
        }
        std::string guesses;
        for (std::size_t i = 0; i < best->args.size(); ++i) {
            if (best->args[i].source != Source::Guess) continue;
            const auto& argument = best->op.schema().arguments()[i];
            guesses += (guesses.empty() ? "" : ", ") + argument.name() + "=" +
                       c10::str(guessed_value(argument, best->args[i].info, recipe));
        }
        if (!guesses.empty())
            result.reason += (result.reason.empty() ? "" : "; ") +
                             std::string("guessed unrecorded arguments: ") + guesses;
        drain_fills();
        OpWork work{best->op, std::move(*stack), {}};
        work.inputs = inputs_of(*best, work.stack);
        result.handle = add(recipe.op, std::move(work));
        result.disposition = Disposition::Ready;
    } catch (const std::exception& e) {
        result.disposition = Disposition::Failed;
        result.reason = short_error(e);
    }
    return result;
}

Prepared TorchOpRunner::Impl::prepare_gemm(const GemmRecipe& g) {
    Prepared result;
    c10::InferenceMode inference;
    try {
        if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.batch <= 0) {
            result.reason = "GEMM with an empty dimension";
            return result;
        }
        const auto dtype = scalar_type_of(g.a_type);
        if (!dtype) {
            result.reason = std::string("dtype ") + to_string(g.a_type) +
                            " is not in this libtorch (" + TORCH_VERSION + ")";
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
            spec.strides =
                trans ? std::vector<std::int64_t>{1, ld} : std::vector<std::int64_t>{ld, 1};
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
        const bool adds =
            g.bias || g.beta != 0.0 || g.op == "aten::addmm" || g.op == "aten::baddbmm";
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
            work.a = make_tensor(a, t, Fill::Normal, 1, false);
            work.b = make_tensor(b, t, Fill::Normal, 1, false);
            work.c = make_tensor(c, t, Fill::Normal, 1, false);
            if (work.call == GemmWork::Call::Addmm || work.call == GemmWork::Call::Baddbmm)
                work.self = make_tensor(self, t, Fill::Normal, 1, false);
        };
        std::string note;
        if (g.b_type != g.a_type || (g.c_type != g.a_type && g.c_type != DType::Unknown) ||
            (g.bias && g.bias_type != g.a_type && g.bias_type != DType::Unknown))
            note =
                std::string("all operands in ") + to_string(g.a_type) + " (at::mm needs one dtype)";
        build(*dtype);

        std::string label = "gemm " + std::to_string(g.m) + " x " + std::to_string(g.n) + " x " +
                            std::to_string(g.k);
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
        drain_fills();
        result.disposition = Disposition::Ready;
        result.reason = note;
    } catch (const std::exception& e) {
        result.disposition = Disposition::Failed;
        result.reason = short_error(e);
    }
    return result;
}

Prepared TorchOpRunner::Impl::prepare_copy(const CopyRecipe& copy) {
    Prepared result;
    c10::InferenceMode inference;
    try {
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
            const auto dev = options(at::kByte);
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
        const std::string label = std::string(copy.is_memset ? "memset " : "memcpy ") +
                                  std::to_string(copy.bytes) + " bytes";
        drain_fills();
        result.handle = add(label, std::move(work));
        result.disposition = Disposition::Ready;
    } catch (const std::exception& e) {
        result.disposition = Disposition::Failed;
        result.reason = short_error(e);
    }
    return result;
}

std::string TorchOpRunner::Impl::run(std::uint32_t handle) {
    if (handle >= entries.size()) return "unknown handle " + std::to_string(handle);
    c10::InferenceMode inference;
    c10::OptionalDeviceGuard device_guard;
    if (!on_cpu()) device_guard.reset_device(torch_device);
    try {
        std::visit(
            [](auto& work) {
                using T = std::decay_t<decltype(work)>;
                if constexpr (std::is_same_v<T, OpWork>) {
                    auto stack = work.stack;  // callBoxed replaces the arguments by the results
                    work.op.callBoxed(&stack);
                } else if constexpr (std::is_same_v<T, GemmWork>) {
                    switch (work.call) {
                        case GemmWork::Call::Mm:
                            at::mm_out(work.c, work.a, work.b);
                            break;
                        case GemmWork::Call::Addmm:
                            at::addmm_out(work.c, work.self, work.a, work.b, work.beta, work.alpha);
                            break;
                        case GemmWork::Call::Bmm:
                            at::bmm_out(work.c, work.a, work.b);
                            break;
                        case GemmWork::Call::Baddbmm:
                            at::baddbmm_out(work.c, work.self, work.a, work.b, work.beta,
                                            work.alpha);
                            break;
                    }
                } else {
                    if (work.dst.defined()) {
                        if (work.is_memset)
                            work.dst.fill_(work.value);
                        else
                            work.dst.copy_(work.src, /*non_blocking=*/true);
                    } else if (work.is_memset) {
                        std::memset(work.host_dst.data(), work.value, work.host_dst.size());
                    } else if (!work.host_dst.empty()) {
                        std::memcpy(work.host_dst.data(), work.host_src.data(),
                                    work.host_dst.size());
                    }
                }
            },
            entries[handle].work);
    } catch (const std::exception& e) {
        return short_error(e);
    }
    return {};
}

// ---- public interface
// ----------------------------------------------------------------------------

TorchOpRunner::TorchOpRunner(TorchDevice device, std::uint64_t seed, bool dataflow)
    : impl_(std::make_unique<Impl>(device, seed, dataflow)) {}
namespace {
TorchDevice parse_device(const std::string& text) {
    if (text == "cpu") return {TorchDevice::Kind::Cpu, 0};
    if (text == "cuda") return {TorchDevice::Kind::Cuda, 0};
    if (text.starts_with("cuda:"))
        if (auto index = parse_int(std::string_view(text).substr(5));
            index && *index >= 0 && *index < 256)
            return {TorchDevice::Kind::Cuda, static_cast<int>(*index)};
    throw std::invalid_argument("unknown device '" + text + "' (expected cpu, cuda or cuda:N)");
}
}  // namespace

TorchOpRunner::TorchOpRunner(const std::string& device, std::uint64_t seed, bool dataflow)
    : TorchOpRunner(parse_device(device), seed, dataflow) {}
TorchOpRunner::~TorchOpRunner() = default;
TorchOpRunner::TorchOpRunner(TorchOpRunner&&) noexcept = default;
TorchOpRunner& TorchOpRunner::operator=(TorchOpRunner&&) noexcept = default;

Prepared TorchOpRunner::prepare(const AtenRecipe& recipe) {
    return impl_->prepare_op(recipe);
}
Prepared TorchOpRunner::prepare_gemm(const GemmRecipe& recipe) {
    return impl_->prepare_gemm(recipe);
}
Prepared TorchOpRunner::prepare_copy(const CopyRecipe& recipe) {
    return impl_->prepare_copy(recipe);
}

std::string TorchOpRunner::run(std::uint32_t handle) {
    return impl_->run(handle);
}

std::string TorchOpRunner::run(std::uint32_t handle, void* cuda_stream) {
    if (cuda_stream == nullptr) return impl_->run(handle);
#ifdef REPLAY_TORCH_CUDA
    if (impl_->on_cpu()) return "a CUDA stream was given to a CPU runner";
    try {
        const auto index = static_cast<c10::DeviceIndex>(impl_->device.index);
        // Makes the external stream current (and its device) for every kernel the op launches.
        c10::cuda::CUDAStreamGuard guard(
            c10::cuda::getStreamFromExternal(static_cast<cudaStream_t>(cuda_stream), index));
        return impl_->run(handle);
    } catch (const std::exception& e) {
        return short_error(e);
    }
#else
    return "this build's libtorch has no CUDA: cannot run on a CUDA stream";
#endif
}

std::vector<InputRegion> TorchOpRunner::inputs(std::uint32_t handle) const {
    std::vector<InputRegion> regions;
    if (handle >= impl_->entries.size()) return regions;
    const auto* work = std::get_if<OpWork>(&impl_->entries[handle].work);
    if (work == nullptr) return regions;
    for (const auto& in : work->inputs) {
        const at::Tensor& t = in.tensor;
        if (!t.defined() || t.numel() == 0 || t.device().type() != impl_->torch_device.type())
            continue;
        const std::int64_t extent = view_extent({t.sizes().data(), t.sizes().size()},
                                                {t.strides().data(), t.strides().size()});
        regions.push_back(InputRegion{t.data_ptr(),
                                      static_cast<std::size_t>(extent * t.element_size()),
                                      in.reuse_bytes, in.parameter});
    }
    return regions;
}

const std::string& TorchOpRunner::label(std::uint32_t handle) const {
    static const std::string unknown = "unknown";
    return handle < impl_->entries.size() ? impl_->entries[handle].label : unknown;
}

std::vector<std::string> TorchOpRunner::notes() const {
    return {impl_->notes.begin(), impl_->notes.end()};
}

bool TorchOpRunner::has_cuda() {
#ifdef REPLAY_TORCH_CUDA
    return true;
#else
    return false;
#endif
}

const char* TorchOpRunner::libtorch_version() {
    return TORCH_VERSION;
}

}  // namespace replay
