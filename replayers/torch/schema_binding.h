// Binding recorded arguments to an op's schema without making a tensor: which overload of the
// recorded name fits the recorded argument kinds best, and where each schema argument's value
// comes from (recorded, the schema default, None, the replay device, a guess). Internal to
// replayers/torch/.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "replay/recipe.h"

namespace replay::torch_detail {

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

bool is_scalar_slot(Slot s);
bool is_list_slot(Slot s);

struct SlotInfo {
    Slot slot = Slot::Unsupported;
    bool optional = false;           // T? in the schema: None is accepted
    bool optional_elements = false;  // Tensor?[] (index lists)
    bool scalar_type = false;        // ScalarType / ScalarType? (an int on the stack)
    c10::TypePtr element_type;       // for lists
};

SlotInfo slot_of(const c10::Argument& argument);

// ---- binding recorded arguments to a schema ----------------------------------------------------

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

// Binds the recorded arguments to one overload's schema; nullopt (with `why`) when they do not fit
// (the reason names the argument). `only_overload`: the op's name has no other overload but out=
// variants (a None recorded for a non-optional Tensor is then an undefined tensor).
std::optional<Plan> plan_for(const c10::OperatorHandle& op, const AtenRecipe& recipe,
                             bool only_overload, std::string& why);

// The overload of recipe.op that fits the recorded arguments best: the recorded overload first,
// then every overload of the name, the lowest cost winning. nullopt with `why` (the reason the
// recipe is skipped) when this libtorch lacks the op or no overload fits.
std::optional<Plan> bind_overload(const AtenRecipe& recipe, std::string& why);

// A plausible value for a required scalar the trace did not record (Source::Guess).
c10::IValue guessed_value(const c10::Argument& argument, const SlotInfo& info,
                          const AtenRecipe& recipe);
// "name=value, ..." of the plan's guessed arguments; empty when it guessed none.
std::string guessed_arguments(const Plan& plan, const AtenRecipe& recipe);

}  // namespace replay::torch_detail
