#include "schema_binding.h"

#include <algorithm>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "op_libraries.h"
#include "torch_values.h"

namespace replay::torch_detail {
namespace {

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

bool is_out_overload(std::string_view overload) {
    return overload == "out" || overload.ends_with("_out");
}

// name -> overload names: the dispatcher has no lookup by name alone. Built after loading the
// custom-op libraries, and again when another one was loaded since.
const std::unordered_map<std::string, std::vector<std::string>>& overload_index() {
    static std::mutex mutex;
    static std::unordered_map<std::string, std::vector<std::string>> map;
    static std::size_t built_with = static_cast<std::size_t>(-1);
    load_op_libraries();
    std::lock_guard<std::mutex> lock(mutex);
    if (built_with == loaded_op_libraries()) return map;
    built_with = loaded_op_libraries();
    map.clear();
    for (const c10::OperatorName& name : c10::Dispatcher::singleton().getAllOpNames())
        map[name.name].push_back(name.overload_name);
    // Deterministic preference when costs tie: the default overload, then the others, then
    // out= variants (they need an extra recorded tensor, so rarely tie anyway).
    auto rank = [](const std::string& o) {
        if (o.empty()) return 0;
        return is_out_overload(o) ? 2 : 1;
    };
    for (auto& [name, overloads] : map)
        std::sort(overloads.begin(), overloads.end(),
                  [&](const std::string& a, const std::string& b) {
                      return std::pair(rank(a), a) < std::pair(rank(b), b);
                  });
    return map;
}

// Kineto records a Tensor?[] (index, index_put_) as [] or None: only an Execution Trace has the
// element shapes.
constexpr const char* kUnrecordedList =
    "tensor list recorded without its tensors (Kineto writes [] for a tensor list): give the "
    "run's --et";

}  // namespace

bool is_scalar_slot(Slot s) {
    return s == Slot::Int || s == Slot::Float || s == Slot::Bool || s == Slot::Scalar ||
           s == Slot::Complex;
}
bool is_list_slot(Slot s) {
    return s == Slot::IntList || s == Slot::FloatList || s == Slot::BoolList ||
           s == Slot::ScalarList;
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

std::optional<Plan> plan_for(const c10::OperatorHandle& op, const AtenRecipe& recipe,
                             bool only_overload, std::string& why) {
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
                    if (rec->tensors.empty()) return reject(kUnrecordedList);
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
                    // Only in the overload the Execution Trace named, or in the name's only one:
                    // among several it would pick a Tensor overload for a None that stands for
                    // something else.
                    if (slot == Slot::Tensor && !arg.info.optional &&
                        (only_overload ||
                         (!recipe.schema.empty() && schema.overload_name() == recipe.overload))) {
                        arg.source = Source::UndefinedTensor;
                        plan.cost += 1;
                        break;
                    }
                    if (slot == Slot::TensorList && !arg.info.optional)
                        return reject(kUnrecordedList);
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

std::optional<Plan> bind_overload(const AtenRecipe& recipe, std::string& why) {
    // Candidates: the recorded overload first, then every overload of the name.
    std::vector<std::string> candidates;
    if (!recipe.overload.empty()) candidates.push_back(recipe.overload);
    const auto& index = overload_index();
    std::size_t not_out = 0;
    if (auto it = index.find(recipe.op); it != index.end())
        for (const auto& o : it->second) {
            if (recipe.overload.empty() || o != recipe.overload) candidates.push_back(o);
            not_out += !is_out_overload(o);
        }

    std::optional<Plan> best;
    std::string first_why;
    bool any_schema = false;
    for (const auto& overload : candidates) {
        auto handle = c10::Dispatcher::singleton().findSchema({recipe.op, overload});
        if (!handle) continue;
        any_schema = true;
        std::string mismatch;
        auto plan = plan_for(*handle, recipe, not_out == 1, mismatch);
        if (!plan) {
            if (first_why.empty())
                first_why =
                    (overload.empty() ? recipe.op : recipe.op + "." + overload) + ": " + mismatch;
            continue;
        }
        if (!best || plan->cost < best->cost) best = std::move(plan);
        if (best->cost == 0) break;  // exact fit
    }
    if (!any_schema)
        why = missing_op_reason(recipe.op);
    else if (!best)
        why = "no overload matches the recorded arguments (" + first_why + ")";
    return best;
}

std::string guessed_arguments(const Plan& plan, const AtenRecipe& recipe) {
    std::string guesses;
    for (std::size_t i = 0; i < plan.args.size(); ++i) {
        if (plan.args[i].source != Source::Guess) continue;
        const auto& argument = plan.op.schema().arguments()[i];
        guesses += (guesses.empty() ? "" : ", ") + argument.name() + "=" +
                   c10::str(guessed_value(argument, plan.args[i].info, recipe));
    }
    return guesses;
}

}  // namespace replay::torch_detail
