// The classifier's facts, internal to engine/classifier*.cpp: classifier.cpp gathers them for each
// graph node and decides once per distinct set; classifier_rules.cpp holds the rules that decide.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "replay/classifier.h"

namespace replay::classifier_detail {

// An op of the chain as the rules see it: its name and its recorded shapes.
struct OpRef {
    NameId name = 0;
    std::uint32_t shapes = kNoIndex;
    bool operator==(const OpRef&) const = default;
};

// Everything a rule may look at for one activity, and nothing else: ids into the trace's name
// pool and op_shapes table, never the index of an op, a launch or a node. Activities with equal
// facts get equal recipes, so classify() decides once per distinct Facts; a rule that needs more
// adds a field here, and the field takes part in the comparison by itself.
struct Facts {
    ActivityKind kind = ActivityKind::Kernel;
    LinkState link = LinkState::NoLaunch;
    bool launched = false;  // a runtime call carries the activity's correlation id
    bool in_op = false;     // some op encloses the launch: the op chain is not empty
    NameId activity_name = 0;
    NameId innermost_op = 0;  // name of the chain's first op, when in_op
    std::int64_t bytes = -1;
    NameId collective = StringPool::kEmpty, collective_dtype = StringPool::kEmpty;
    std::int64_t in_nelems = -1, out_nelems = -1;
    std::int32_t group_size = -1;
    // The innermost GEMM op with shapes (aten::linear -> aten::addmm picks addmm) and the
    // innermost dispatcher op of the chain.
    std::optional<OpRef> gemm_op;
    std::optional<OpRef> aten_op;
    // The aten op's direct children in start order, only where the aten op takes a Tensor?[]
    // that Kineto recorded as [] (index-list-from-children reads the indices off them).
    std::vector<OpRef> aten_children;
    bool operator==(const Facts&) const = default;
};

// Only speeds the lookup up: equality decides, so a field left out here costs time, not results.
struct FactsHash {
    std::size_t operator()(const Facts& f) const {
        std::uint64_t h = 0;
        const auto mix = [&](std::uint64_t v) {
            h = (h ^ v) * 0x9E3779B97F4A7C15ull;
            h ^= h >> 29;
        };
        mix(static_cast<std::uint64_t>(f.kind) | static_cast<std::uint64_t>(f.link) << 8 |
            std::uint64_t{f.launched} << 16 | std::uint64_t{f.in_op} << 17 |
            std::uint64_t{f.gemm_op.has_value()} << 18 |
            std::uint64_t{f.aten_op.has_value()} << 19);
        mix(f.activity_name | std::uint64_t{f.innermost_op} << 32);
        mix(static_cast<std::uint64_t>(f.bytes));
        mix(f.collective | std::uint64_t{f.collective_dtype} << 32);
        mix(static_cast<std::uint64_t>(f.in_nelems) ^
            static_cast<std::uint64_t>(f.out_nelems) << 1 ^
            static_cast<std::uint64_t>(f.group_size) << 2);
        for (const auto& op : {f.gemm_op, f.aten_op})
            if (op) mix(op->name | std::uint64_t{op->shapes} << 32);
        for (const OpRef& op : f.aten_children) mix(op.name | std::uint64_t{op.shapes} << 32);
        return static_cast<std::size_t>(h);
    }
};

// The ops of an activity's chain that its facts name, as indices into Trace::cpu_ops: where its
// recipe's storage ids come from. Not facts: activities decided alike each read their storage ids
// from their own ops.
struct ChainOps {
    std::uint32_t gemm_op = kNoIndex, aten_op = kNoIndex;
    std::vector<std::uint32_t> aten_children;
    bool operator==(const ChainOps&) const = default;
};

// An op of the chain by its place in the facts: Facts::gemm_op, aten_op or aten_children[child].
struct ChainPlace {
    enum Kind : std::uint8_t { Gemm, Aten, AtenChild } kind = Aten;
    std::uint32_t child = 0;
};

// A recorded tensor a rule puts in a recipe: input `input` of an op of the chain, or element
// `element` of that input's TensorList.
struct TensorSource {
    static constexpr std::uint32_t kWholeInput = 0xFFFFFFFFu;
    ChainPlace op;
    std::uint32_t input = 0;
    std::uint32_t element = kWholeInput;
};

// Where the rules get the storage id of each tensor they put in a recipe (-1: none). classify()
// decides once per distinct Facts with a stand-in that notes each TensorSource, then reads every
// node's storage ids from its own ChainOps.
class StorageIds {
  public:
    virtual ~StorageIds() = default;
    virtual std::int64_t storage(const TensorSource& source) = 0;
};
// The storage id of `source` in the ops `chain` names (-1 when it has none).
std::int64_t storage_of(const Trace& trace, const ChainOps& chain, const TensorSource& source);

bool is_gemm_op(std::string_view name);
bool is_dispatcher_op(std::string_view name);
bool has_shapes(const Trace& trace, std::uint32_t shapes);
// The ops Facts::aten_children names, of the aten op `op` (indices into cpu_ops).
std::vector<std::uint32_t> aten_children_of(const Trace& trace, std::uint32_t op);
// The same for op `op` whose name and shapes entry are `ref` (read elsewhere already).
std::vector<std::uint32_t> aten_children_of(const Trace& trace, std::uint32_t op, const OpRef& ref);
// The recipe the rules give an activity with these facts: the first rule that matches builds it,
// with the storage ids `storages` gives.
Recipe decide(const Trace& trace, const Facts& facts, StorageIds& storages);

bool is_gemm_op(std::string_view name);          // aten::mm, addmm, bmm, baddbmm, linear, matmul
bool is_splitk_reduce(std::string_view kernel);  // cuBLAS's split-K reduction after a GEMM
// A library's helper kernel, launched by the same call as its main kernel: before it (cuDNN's
// workspace init, layout conversion into NHWC or padding, a memset kernel) or after it (a
// split-K reduction, conversion back to NCHW).
enum class HelperKernel : std::uint8_t { None, Before, After };
HelperKernel helper_kernel(std::string_view kernel);
bool kernel_uses_tf32(std::string_view kernel);  // an fp32 GEMM kernel on TF32 tensor cores
DType dtype_from_kernel_name(std::string_view name);  // a GEMM kernel's operand type, by its name

// The tier-2 recipe of a GEMM op (mm, addmm, bmm, baddbmm, linear, matmul) whose kernel is
// `kernel` (operand types it names where the op's are not recorded), else a not-replayable one
// with the reason; `rule` decided it.
Recipe gemm_or_reason(const AtenRecipe& aten, std::string_view kernel, bool issued_with_op,
                      const char* rule);

}  // namespace replay::classifier_detail
