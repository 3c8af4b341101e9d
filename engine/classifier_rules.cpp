// The classifier's rules: what each looks at, in the order they are tried, and the recipes they
// build from an activity's facts.
#include <algorithm>
#include <array>
#include <cctype>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "classifier_facts.h"
#include "replay/int_list.h"

namespace replay::classifier_detail {

bool contains_nocase(std::string_view text, std::string_view needle) {
    auto it = std::search(text.begin(), text.end(), needle.begin(), needle.end(),
                          [](char a, char b) { return std::tolower(a) == std::tolower(b); });
    return it != text.end();
}

bool contains_any(std::string_view text, std::initializer_list<std::string_view> needles) {
    for (auto n : needles)
        if (text.find(n) != std::string_view::npos) return true;
    return false;
}

constexpr std::array<std::string_view, 6> kGemmOps = {
    "aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::linear", "aten::matmul"};
bool is_gemm_op(std::string_view name) {
    return std::find(kGemmOps.begin(), kGemmOps.end(), name) != kGemmOps.end();
}

bool looks_like_gemm_kernel(std::string_view name) {
    return contains_any(
        name,
        {"gemm",  "Gemm",  "GEMM",  "nvjet",   "cutlass", "xmma",    "wmma",    "cublas", "Cijk_",
         "sm90_", "sm80_", "sm75_", "ampere_", "volta_",  "turing_", "hopper_", "s16816", "h16816",
         "s1688", "h1688", "s884",  "h884",    "gemv",    "splitK",  "magma"});
}

bool is_splitk_reduce(std::string_view name) {
    return contains_any(name, {"splitKreduce", "splitK_reduce", "reduce_1Block"});
}

HelperKernel helper_kernel(std::string_view name) {
    if (is_splitk_reduce(name) || contains_any(name, {"nhwcToNchwKernel"}))
        return HelperKernel::After;
    if (contains_any(
            name, {"init_device_workspace_kernel", "nchwToNhwcKernel", "nhwcAddPaddingKernel"}) ||
        is_graph_memset_kernel(name))
        return HelperKernel::Before;
    return HelperKernel::None;
}

// A CPU op that names a dispatcher operator ("aten::add", "c10d::allreduce_", "vllm::...").
bool is_dispatcher_op(std::string_view name) {
    const auto colons = name.find("::");
    if (colons == std::string_view::npos || colons == 0) return false;
    return !name.starts_with("autograd::") && !name.starts_with("torch::autograd") &&
           !name.starts_with("ProfilerStep") && name.find(' ') == std::string_view::npos;
}

// Kineto's type text for a tensor-list argument (its dims are then per-element lists, or [] when
// record_shapes could not see the elements).
bool is_tensor_list_type(std::string_view type) {
    return type == "TensorList" || type.starts_with("GenericList");
}

bool has_shapes(const Trace& trace, std::uint32_t shapes) {
    if (shapes == kNoIndex) return false;
    for (const auto& a : trace.op_shapes[shapes].inputs)
        if (!a.dims.empty() || a.type != StringPool::kEmpty) return true;
    return false;
}

// The facts of one activity, with the trace to look their ids up in.
struct Context : Facts {
    const Trace& trace;
    std::string_view name;  // the activity's
    StorageIds& storages;
    std::string_view op_name(const OpRef& op) const { return trace.names.view(op.name); }
    const OpRef& op(ChainPlace place) const {
        return place.kind == ChainPlace::Gemm   ? *gemm_op
               : place.kind == ChainPlace::Aten ? *aten_op
                                                : aten_children[place.child];
    }
    std::int64_t storage(ChainPlace place, std::size_t input,
                         std::uint32_t element = TensorSource::kWholeInput) const {
        return storages.storage({place, static_cast<std::uint32_t>(input), element});
    }
    const OpShapes* shapes(const OpRef& op) const {
        return op.shapes == kNoIndex ? nullptr : &trace.op_shapes[op.shapes];
    }
    // The first tensor-list argument recorded without its tensors: Kineto writes a tensor list
    // as [] (record_shapes has no element shapes); only an Execution Trace carries them.
    std::optional<std::size_t> unrecorded_tensor_list(const OpRef& op) const {
        const OpShapes* s = shapes(op);
        if (s == nullptr) return std::nullopt;
        for (std::size_t k = 0; k < s->inputs.size(); ++k) {
            const OpArgument& in = s->inputs[k];
            if (is_tensor_list_type(trace.names.view(in.type)) && in.list_ranks.empty()) return k;
        }
        return std::nullopt;
    }
    bool has_shapes(const OpRef& op) const { return classifier_detail::has_shapes(trace, op.shapes); }
};

TensorSpec tensor_from(const Trace& trace, const OpArgument& arg, std::size_t first,
                       std::size_t rank, std::int64_t storage) {
    TensorSpec t;
    t.dims.assign(arg.dims.begin() + static_cast<std::ptrdiff_t>(first),
                  arg.dims.begin() + static_cast<std::ptrdiff_t>(first + rank));
    if (arg.has_strides && arg.strides.size() >= first + rank)
        t.strides.assign(arg.strides.begin() + static_cast<std::ptrdiff_t>(first),
                         arg.strides.begin() + static_cast<std::ptrdiff_t>(first + rank));
    t.dtype = dtype_from_kineto(trace.names.view(arg.type));
    t.storage_id = storage;
    t.storage_offset = arg.storage_offset;
    return t;
}

// The dtype of the first tensor (not list) argument that records one.
DType first_tensor_dtype(const Trace& trace, const std::vector<OpArgument>& inputs) {
    for (const OpArgument& in : inputs) {
        if (!in.list_ranks.empty()) continue;
        const DType d = dtype_from_kineto(trace.names.view(in.type));
        if (d != DType::Unknown) return d;
    }
    return DType::Unknown;
}

// Argument `input` of the chain's op `op`.
AtenArgument argument_from(const Context& c, ChainPlace op, std::size_t input) {
    const Trace& trace = c.trace;
    const OpArgument& in = c.shapes(c.op(op))->inputs[input];
    AtenArgument arg;
    const std::string_view type = trace.names.view(in.type);
    arg.type = type;
    arg.value = trace.names.view(in.concrete);
    if (!in.list_ranks.empty() || is_tensor_list_type(type)) {
        arg.kind = ArgKind::TensorList;
        std::size_t first = 0;
        for (std::size_t i = 0; i < in.list_ranks.size(); ++i) {
            // Each element has its own storage; the list's single id would alias them all.
            TensorSpec t = tensor_from(trace, in, first, in.list_ranks[i],
                                       c.storage(op, input, static_cast<std::uint32_t>(i)));
            t.storage_offset = 0;
            arg.tensors.push_back(std::move(t));
            first += in.list_ranks[i];
        }
        // Kineto records no element dtype for lists; the Execution Trace does, and the dataflow
        // pass where earlier ops made the elements. Otherwise float32 (optimizers' parameter
        // lists), or a recurrent op's input's dtype (its weights: cuDNN takes no other).
        DType element = dtype_from_kineto(trace.names.view(in.element_type));
        if (element == DType::Unknown && is_recurrent_op(c.op_name(c.op(op))))
            element = first_tensor_dtype(trace, c.shapes(c.op(op))->inputs);
        for (auto& t : arg.tensors)
            if (t.dtype == DType::Unknown)
                t.dtype = element == DType::Unknown ? DType::Float32 : element;
    } else if (type == "Scalar" || type == "Int" || type == "Double" || type == "Bool") {
        arg.kind = ArgKind::Scalar;
    } else if (type == "ScalarList") {
        arg.kind = ArgKind::ScalarList;
    } else if (type == "String" || type == "Device" || type == "str") {
        arg.kind = ArgKind::String;
    } else if (!in.dims.empty() || dtype_from_kineto(type) != DType::Unknown) {
        arg.kind = ArgKind::Tensor;
        arg.tensors.push_back(tensor_from(trace, in, 0, in.dims.size(), c.storage(op, input)));
    } else if (type.empty()) {
        arg.kind = ArgKind::None;
    }
    return arg;
}

// Where the kernel `name` of a binary elementwise op read its two tensor operands (self, other)
// from: PyTorch's gpu_kernel_with_scalars folds a CPU scalar operand into the functor and passes
// device tensors on. The ufunc codegen's functors say which operand was the scalar
// (CUDAFunctorOnSelf_<op>: other; CUDAFunctorOnOther_<op>: self; CUDAFunctor_<op>: none);
// AUnaryFunctor/BUnaryFunctor say that one was (symmetric ops such as mul fold either operand
// into AUnaryFunctor), BinaryFunctor that none was. nullopt when the name is none of these.
struct OperandPlacements {
    std::array<Placement, 2> known{Placement::Device, Placement::Device};
    bool one_is_host = false;  // which one: the 0-dim operand (known says which if both are)
};
std::optional<OperandPlacements> operand_placements(std::string_view name) {
    using enum Placement;
    if (contains_any(name, {"FunctorOnSelf_"})) return OperandPlacements{{Device, Host}};
    if (contains_any(name, {"FunctorOnOther_"})) return OperandPlacements{{Host, Device}};
    if (contains_any(name, {"BUnaryFunctor<"})) return OperandPlacements{{Device, Host}, true};
    if (contains_any(name, {"AUnaryFunctor<"})) return OperandPlacements{{Host, Device}, true};
    if (contains_any(name, {"CUDAFunctor_", "BinaryFunctor<"})) return OperandPlacements{};
    return std::nullopt;
}

// Marks the 0-dim tensor operands of `r` with where the recorded kernel read them from: a wrapped
// Python number and a 0-dim device tensor look alike in Kineto's shapes (`long int`, dims []);
// only the kernel tells them apart.
void place_scalar_operands(AtenRecipe& r, std::string_view kernel) {
    const auto placements = operand_placements(kernel);
    if (!placements) return;
    std::array<AtenArgument*, 2> operands{};
    std::size_t found = 0;
    for (AtenArgument& arg : r.args)
        if (arg.kind == ArgKind::Tensor && arg.tensors.size() == 1 && found < operands.size())
            operands[found++] = &arg;
    if (found != operands.size()) return;
    const auto zero_dim = [&](std::size_t i) { return operands[i]->tensors.front().dims.empty(); };
    std::array<Placement, 2> where = placements->known;
    if (placements->one_is_host && zero_dim(0) != zero_dim(1))
        where = zero_dim(0) ? std::array{Placement::Host, Placement::Device}
                            : std::array{Placement::Device, Placement::Host};
    for (std::size_t i = 0; i < operands.size(); ++i)
        if (zero_dim(i)) operands[i]->placement = where[i];
}

AtenRecipe aten_recipe(const Context& c, ChainPlace place) {
    const OpRef& op = c.op(place);
    AtenRecipe r;
    r.op = c.op_name(op);
    if (const OpShapes* s = c.shapes(op)) {
        r.schema = c.trace.names.view(s->schema);
        // "aten::add.Tensor(Tensor self, ...)": the overload sits between the first '.' and '('.
        const auto paren = r.schema.find('(');
        const auto dot = r.schema.substr(0, paren).find('.', r.op.size());
        if (dot != std::string::npos && paren != std::string::npos)
            r.overload = r.schema.substr(dot + 1, paren - dot - 1);
        for (std::size_t i = 0; i < s->inputs.size(); ++i) r.args.push_back(argument_from(c, place, i));
    }
    place_scalar_operands(r, c.name);
    return r;
}

double scalar_or(const AtenArgument* arg, double fallback) {
    if (arg == nullptr || arg->value.empty()) return fallback;
    if (arg->value == "True") return 1.0;
    if (arg->value == "False") return 0.0;
    try {
        return std::stod(arg->value);
    } catch (...) {
        return fallback;
    }
}

// Row-major operand layout from dims and strides of its last two dimensions.
struct Layout {
    bool ok = false;
    bool transposed = false;
    std::int64_t ld = 0;
    std::int64_t batch_stride = 0;
};
Layout layout_of(const TensorSpec& t) {
    Layout l;
    const std::size_t r = t.dims.size();
    if (r < 2) return l;
    const auto strides = t.strides.size() == r ? t.strides : t.contiguous_strides();
    const std::int64_t rows = t.dims[r - 2], cols = t.dims[r - 1];
    const std::int64_t s0 = strides[r - 2], s1 = strides[r - 1];
    if (s1 == 1 || cols == 1) {
        l.ld = std::max<std::int64_t>(s0, std::max<std::int64_t>(cols, 1));
    } else if (s0 == 1 || rows == 1) {
        l.transposed = true;
        l.ld = std::max<std::int64_t>(s1, std::max<std::int64_t>(rows, 1));
    } else {
        return l;  // neither dimension is dense: cuBLAS cannot take it without a copy
    }
    l.batch_stride = r >= 3 ? strides[r - 3] : 0;
    l.ok = true;
    return l;
}

// GEMM recipe for mm/addmm/bmm/baddbmm/linear/matmul from the recorded argument shapes.
std::optional<GemmRecipe> gemm_recipe(const AtenRecipe& aten, std::string& why) {
    auto tensor = [&](std::size_t i) -> const TensorSpec* {
        if (i >= aten.args.size() || aten.args[i].kind != ArgKind::Tensor ||
            aten.args[i].tensors.empty())
            return nullptr;
        return &aten.args[i].tensors[0];
    };
    auto arg = [&](std::size_t i) -> const AtenArgument* {
        return i < aten.args.size() ? &aten.args[i] : nullptr;
    };
    GemmRecipe g;
    g.op = aten.op;
    const TensorSpec *a = nullptr, *b = nullptr, *c = nullptr;
    const std::string& op = aten.op;
    if (op == "aten::mm" || op == "aten::bmm") {
        a = tensor(0), b = tensor(1);
    } else if (op == "aten::addmm" || op == "aten::baddbmm") {
        c = tensor(0), a = tensor(1), b = tensor(2);
        g.beta = scalar_or(arg(3), 1.0);
        g.alpha = scalar_or(arg(4), 1.0);
    } else if (op == "aten::matmul") {
        a = tensor(0), b = tensor(1);
    } else if (op == "aten::linear") {
        a = tensor(0), b = tensor(1), c = tensor(2);
    }
    if (a == nullptr || b == nullptr) {
        why = "GEMM operands have no recorded shapes";
        return std::nullopt;
    }
    TensorSpec A = *a, B = *b;
    if (op == "aten::linear") {
        // y = x W^T + bias: W [N, K] read transposed.
        if (B.dims.size() != 2) {
            why = "linear weight is not 2-D";
            return std::nullopt;
        }
        B.dims = {b->dims[1], b->dims[0]};
        const auto ws = b->strides.size() == 2 ? b->strides : b->contiguous_strides();
        B.strides = {ws[1], ws[0]};
        g.beta = c != nullptr ? 1.0 : 0.0;
    }
    // Fold leading dims of a >2-D A into M when B is 2-D (linear / matmul on [.., M, K] x [K, N]).
    if (A.dims.size() > 2 && B.dims.size() == 2) {
        std::int64_t rows = 1;
        for (std::size_t i = 0; i + 1 < A.dims.size(); ++i) rows *= A.dims[i];
        const auto as = A.strides.size() == A.dims.size() ? A.strides : A.contiguous_strides();
        A.dims = {rows, A.dims.back()};
        A.strides = {as[as.size() - 2], as.back()};
    }
    if (A.dims.size() != B.dims.size() || A.dims.size() < 2 || A.dims.size() > 3) {
        why = "unsupported GEMM operand ranks";
        return std::nullopt;
    }
    const std::size_t r = A.dims.size();
    g.m = A.dims[r - 2];
    g.k = A.dims[r - 1];
    g.n = B.dims[r - 1];
    g.batch = r == 3 ? A.dims[0] : 1;
    if (B.dims[r - 2] != g.k || (r == 3 && B.dims[0] != g.batch)) {
        why = "GEMM inner dimensions disagree";
        return std::nullopt;
    }
    const Layout la = layout_of(A), lb = layout_of(B);
    if (!la.ok || !lb.ok) {
        why = "GEMM operand is not dense in either of its last two dimensions";
        return std::nullopt;
    }
    g.trans_a = la.transposed, g.lda = la.ld, g.stride_a = la.batch_stride;
    g.trans_b = lb.transposed, g.ldb = lb.ld, g.stride_b = lb.batch_stride;
    g.ldc = g.n;
    g.stride_c = r == 3 ? g.m * g.n : 0;
    g.a_type = a->dtype, g.b_type = b->dtype;
    g.a_storage = a->storage_id, g.b_storage = b->storage_id;
    if (c != nullptr) g.c_storage = c->storage_id;
    g.c_type = a->dtype;
    g.compute_type = a->dtype == DType::Float64 ? DType::Float64 : DType::Float32;
    if (c != nullptr) {
        if (c->dims.size() == 1 && (op == "aten::addmm" || op == "aten::linear")) {
            g.bias = true;  // 1-D bias broadcast over rows: cuBLASLt's bias epilogue
            g.bias_type = c->dtype;
        } else if (op == "aten::baddbmm" || op == "aten::addmm") {
            g.c_broadcast = c->numel() != g.m * g.n * g.batch;
        }
    } else if (op != "aten::addmm" && op != "aten::baddbmm") {
        g.beta = 0.0;
    }
    return g;
}

// ---- rules -------------------------------------------------------------------------------------

struct Rule {
    RuleInfo info;
    std::function<bool(const Context&)> matches;
    std::function<Recipe(const Context&)> build;
};

Recipe not_replayable(std::string reason) {
    Recipe r;
    r.reason = std::move(reason);
    return r;
}

CopyRecipe copy_from(const Context& c) {
    const std::string_view name = c.name;
    CopyRecipe copy;
    copy.bytes = std::max<std::int64_t>(c.bytes, 0);
    copy.is_memset = c.kind == ActivityKind::Memset;
    copy.host_pinned = name.find("Pinned") != std::string_view::npos;
    if (copy.is_memset) {
        copy.direction = CopyDirection::Device;
    } else if (contains_any(name, {"HtoD", "H2D"})) {
        copy.direction = CopyDirection::HostToDevice;
    } else if (contains_any(name, {"DtoH", "D2H"})) {
        copy.direction = CopyDirection::DeviceToHost;
    } else if (contains_any(name, {"PtoP", "P2P"})) {
        copy.direction = CopyDirection::PeerToPeer;
    } else if (contains_any(name, {"HtoH", "H2H"})) {
        copy.direction = CopyDirection::HostToHost;
    } else {
        copy.direction = CopyDirection::DeviceToDevice;
    }
    return copy;
}

CollectiveRecipe collective_from(const Context& c) {
    CollectiveRecipe r;
    const auto& names = c.trace.names;
    if (c.collective != StringPool::kEmpty) r.collective = names.view(c.collective);
    for (std::string_view kind :
         {"AllReduce", "AllGather", "ReduceScatter", "SendRecv", "Broadcast", "AllToAll", "Reduce"})
        if (r.collective.empty() && c.name.find(kind) != std::string_view::npos)
            r.collective = kind;
    if (r.collective.empty()) r.collective = "unknown";
    r.in_nelems = c.in_nelems;
    r.out_nelems = c.out_nelems;
    r.group_size = c.group_size;
    r.dtype = dtype_from_kineto(names.view(c.collective_dtype));
    for (auto [suffix, dtype] :
         {std::pair{"_float", DType::Float32}, std::pair{"_half", DType::Float16},
          std::pair{"_bf16", DType::BFloat16}, std::pair{"_int8_t", DType::Int8}})
        if (r.dtype == DType::Unknown && c.name.find(suffix) != std::string_view::npos)
            r.dtype = dtype;
    return r;
}

// Traces from 2021 record dims but no `Input type`; the kernel name still tells the precision.
DType dtype_from_kernel_name(std::string_view name) {
    // nvjet names its operand types by letter: `hsh` fp16, `tst` bfloat16 (both with fp32
    // accumulation).
    if (contains_any(name, {"bf16", "bfloat16", "BFloat16", "nvjet_tst", "nvjet_sm90_tst",
                            "nvjet_sm100_tst"}))
        return DType::BFloat16;
    if (contains_any(name,
                     {"hgemm", "_f16", "fp16", "__half", "hsh", "h884", "h1688", "h16816", "Half"}))
        return DType::Float16;
    return DType::Float32;
}

bool kernel_uses_tf32(std::string_view kernel) {
    // cuBLAS's xmma kernels name the type (`gemm_f32f32_tf32f32_f32`), CUTLASS's the TF32 MMA
    // shape (`tensorop_s1688gemm`: fp32 in and out, m16n8k8 TF32 MMAs); fp32 kernels on CUDA
    // cores say `ffma` or `sgemm`. (nvjet's `tst` is bfloat16's code, not TF32's.)
    return contains_any(kernel, {"tf32", "s1688gemm"});
}

Recipe gemm_or_reason(const Context& c, bool issued_with_op, const char* rule) {
    return gemm_or_reason(aten_recipe(c, {ChainPlace::Gemm}), c.name, issued_with_op, rule);
}

Recipe gemm_or_reason(const AtenRecipe& aten, std::string_view kernel, bool issued_with_op,
                      const char* rule) {
    std::string why;
    auto gemm = gemm_recipe(aten, why);
    if (!gemm) {
        Recipe r = not_replayable(why);
        r.rule = rule;
        return r;
    }
    Recipe r;
    if (gemm->a_type == DType::Unknown) {
        const DType inferred = dtype_from_kernel_name(kernel);
        gemm->a_type = gemm->b_type = gemm->c_type = inferred;
        if (gemm->bias) gemm->bias_type = inferred;
        r.reason = std::string("operand dtype not recorded: ") + to_string(inferred) +
                   " inferred from the kernel name";
    }
    gemm->bias_epilogue_recorded = gemm->bias && kernel.find("bias") != std::string_view::npos;
    gemm->tf32_recorded = gemm->a_type == DType::Float32 && kernel_uses_tf32(kernel);
    r.tier = Tier::Gemm;
    r.rule = rule;
    r.issued_with_op = issued_with_op;
    if (issued_with_op)
        r.reason = "issued by its GEMM's replay (cuBLASLt split-K / epilogue kernel)";
    r.detail = std::move(*gemm);
    return r;
}

// ---- index lists that Kineto recorded as [] ----------------------------------------------------

// Ops whose argument 1 is `Tensor?[] indices`; Kineto records it as [] (no element shapes).
bool takes_index_list(std::string_view op) {
    return op == "aten::index" || op == "aten::_index_put_impl_" || op == "aten::index_put_" ||
           op == "aten::index_put" || op == "aten::_unsafe_index" ||
           op == "aten::_unsafe_index_put";
}

bool index_list_unrecorded(const Trace& trace, const OpRef& op) {
    if (!takes_index_list(trace.names.view(op.name)) || op.shapes == kNoIndex) return false;
    const OpShapes& s = trace.op_shapes[op.shapes];
    return s.inputs.size() > 1 && s.inputs[1].list_ranks.empty() && s.inputs[1].dims.empty();
}

bool index_list_unrecorded(const Context& c) {
    return c.aten_op && index_list_unrecorded(c.trace, *c.aten_op);
}

// The direct children of `op`: Kineto writes an op's children right after it, so the ops near it
// whose parent it is, in start order.
std::vector<std::uint32_t> children_of(const Trace& trace, std::uint32_t op) {
    constexpr std::uint32_t kWindow = 64;
    const auto end = static_cast<std::uint32_t>(
        std::min<std::size_t>(trace.cpu_ops.size(), std::size_t{op} + kWindow + 1));
    std::vector<std::uint32_t> children;
    for (std::uint32_t j = op > kWindow ? op - kWindow : 0; j < end; ++j)
        if (trace.cpu_ops[j].parent == op) children.push_back(j);
    std::sort(children.begin(), children.end(), [&](std::uint32_t a, std::uint32_t b) {
        return trace.cpu_ops[a].ts < trace.cpu_ops[b].ts;
    });
    return children;
}

std::vector<std::uint32_t> aten_children_of(const Trace& trace, std::uint32_t op) {
    const CpuOp& aten = trace.cpu_ops[op];
    return aten_children_of(trace, op, OpRef{aten.name, aten.shapes});
}

std::vector<std::uint32_t> aten_children_of(const Trace& trace, std::uint32_t op,
                                            const OpRef& ref) {
    if (!index_list_unrecorded(trace, ref)) return {};
    return children_of(trace, op);
}

// Whether `dims` broadcast to `shape` (numpy rules, aligned at the last dimension).
bool broadcasts_to(const std::vector<std::int64_t>& dims, const std::vector<std::int64_t>& shape) {
    if (dims.size() > shape.size()) return false;
    for (std::size_t i = 0; i < dims.size(); ++i) {
        const std::int64_t d = dims[dims.size() - 1 - i], s = shape[shape.size() - 1 - i];
        if (d != 1 && d != s) return false;
    }
    return true;
}

// The index list of an index op whose Tensor?[] Kineto recorded as []: `leading_nones` None
// elements (x[:, i] indexes dim 1), then `tensors`. Empty tensors: not recovered.
struct RecoveredIndices {
    std::vector<TensorSpec> tensors;
    std::uint32_t leading_nones = 0;
};

// The index op's children show its indices, on either of PyTorch's two CUDA paths:
// - AdvancedIndex (index, and index_put_ without accumulation) restrides self with an as_strided
//   child to self's dims before the indexed ones + the index dims + self's dims after them, then
//   reshapes each index tensor to [1]*before + its dims + [1]*after: the op's integer
//   reshape/view children are its indices, in order, and the restride's sizes say `before`;
// - index_put_ with accumulation (autograd's backward of x[:, i]) linearizes the indices,
//   remainder(index, size of its dim) for each: its integer remainder children, and index_put_'s
//   values (the indexed shape, broadcast) say `before`.
// Recovered only where the pattern is there and the recorded sizes (Concrete Inputs) admit
// exactly one `before`; indices of non-adjacent dims (transposed to the front first) and traces
// without Concrete Inputs (x[:, i] and x[i] look alike there) stay unknown.
RecoveredIndices indices_from_children(const Context& c, const OpRef& op) {
    const OpShapes* s = c.shapes(op);
    if (s == nullptr || s->inputs.empty()) return {};
    const std::vector<std::int64_t>& self = s->inputs[0].dims;
    const bool index = c.op_name(op) == "aten::index" || c.op_name(op) == "aten::_unsafe_index";
    const std::vector<std::int64_t>* values =
        !index && s->inputs.size() >= 3 ? &s->inputs[2].dims : nullptr;
    if (!index && values == nullptr) return {};
    std::vector<TensorSpec> reshaped, linearized;
    std::vector<std::vector<std::int64_t>> targets;  // each reshape's recorded sizes
    std::vector<std::int64_t> linearized_sizes;      // each remainder's recorded divisor
    std::optional<std::vector<std::int64_t>> restride, restride_strides;
    for (std::uint32_t j = 0; j < c.aten_children.size(); ++j) {
        const OpRef& child = c.aten_children[j];
        const std::string_view name = c.op_name(child);
        const OpShapes* cs = c.shapes(child);
        if (cs == nullptr || cs->inputs.empty()) continue;
        const OpArgument& in = cs->inputs[0];
        auto concrete = [&](std::size_t i) {
            return i < cs->inputs.size()
                       ? parse_int_list(c.trace.names.view(cs->inputs[i].concrete))
                             .value_or(std::vector<std::int64_t>{})
                       : std::vector<std::int64_t>{};
        };
        if (name == "aten::as_strided" && in.dims == self && !restride) {
            restride = concrete(1);
            restride_strides = concrete(2);
            continue;
        }
        const bool reshape = name == "aten::reshape" || name == "aten::view";
        if (!reshape && name != "aten::remainder") continue;
        const DType dtype = dtype_from_kineto(c.trace.names.view(in.type));
        if (dtype != DType::Int64 && dtype != DType::Int32) continue;
        TensorSpec spec =
            tensor_from(c.trace, in, 0, in.dims.size(), c.storage({ChainPlace::AtenChild, j}, 0));
        if (reshape) {
            reshaped.push_back(std::move(spec));
            targets.push_back(concrete(1));
            continue;
        }
        const auto divisor = cs->inputs.size() > 1
                                 ? parse_int(c.trace.names.view(cs->inputs[1].concrete))
                                 : std::nullopt;
        if (!divisor) return {};  // remainder by a tensor: not the linearization
        linearized.push_back(std::move(spec));
        linearized_sizes.push_back(*divisor);
    }
    // The accumulating path reshapes its linear index too: remainder children decide.
    const bool advanced = linearized.empty();
    if (advanced && (reshaped.empty() || !restride || restride->empty())) return {};
    if (!advanced && index) return {};
    std::vector<TensorSpec>& indices = advanced ? reshaped : linearized;
    const std::size_t n = indices.size();
    if (n > self.size()) return {};
    const std::vector<std::int64_t>& shape = indices.front().dims;  // all alike: no broadcast
    for (const TensorSpec& t : indices)
        if (t.dims != shape) return {};
    // The indexed shape were the indices to start at dim `before`.
    auto indexed = [&](std::size_t before) {
        std::vector<std::int64_t> out(self.begin(),
                                      self.begin() + static_cast<std::ptrdiff_t>(before));
        out.insert(out.end(), shape.begin(), shape.end());
        out.insert(out.end(), self.begin() + static_cast<std::ptrdiff_t>(before + n), self.end());
        return out;
    };
    auto fits = [&](std::size_t before) {
        const std::vector<std::int64_t> want = indexed(before);
        if (values != nullptr && !broadcasts_to(*values, want)) return false;
        if (!advanced) {
            for (std::size_t k = 0; k < n; ++k)
                if (linearized_sizes[k] != self[before + k]) return false;
            return *values == want;  // the backward's gradient: the indexed shape itself
        }
        if (*restride != want) return false;
        // The index dims are the restride's zero strides, where it recorded them.
        if (restride_strides && restride_strides->size() == want.size())
            for (std::size_t d = 0; d < want.size(); ++d)
                if (((*restride_strides)[d] == 0) != (d >= before && d < before + shape.size()))
                    return false;
        const std::size_t after = self.size() - before - n;
        for (std::size_t k = 0; k < n; ++k) {
            const auto& target = targets[k];
            if (target.empty()) continue;  // no Concrete Inputs: the restride check stands
            const auto& dims = indices[k].dims;
            if (target.size() != before + dims.size() + after) return false;
            for (std::size_t d = 0; d < target.size(); ++d) {
                const bool own = d >= before && d < before + dims.size();
                if (target[d] != (own ? dims[d - before] : 1)) return false;
            }
        }
        return true;
    };
    std::optional<std::size_t> found;
    for (std::size_t before = 0; before + n <= self.size(); ++before) {
        if (!fits(before)) continue;
        if (found) return {};  // two readings: say nothing
        found = before;
    }
    if (!found) return {};
    return {std::move(indices), static_cast<std::uint32_t>(*found)};
}

bool index_list_from_children(const Context& c) {
    return index_list_unrecorded(c) && !indices_from_children(c, *c.aten_op).tensors.empty();
}

Recipe index_op_from_children(const Context& c) {
    const OpRef& op = *c.aten_op;
    AtenRecipe aten = aten_recipe(c, {ChainPlace::Aten});
    AtenArgument& list = aten.args[1];
    list.kind = ArgKind::TensorList;
    list.type = "Tensor?[]";
    RecoveredIndices indices = indices_from_children(c, op);
    list.tensors = std::move(indices.tensors);
    list.leading_nones = indices.leading_nones;
    Recipe r;
    r.tier = Tier::AtenOp;
    r.reason = "indices taken from the op's children (Kineto records its Tensor?[] as [])";
    r.detail = std::move(aten);
    return r;
}

const std::vector<Rule>& rules() {
    static const std::vector<Rule> table = {
        {{"memcpy",
          "gpu_memcpy activity: tier 1 cudaMemcpyAsync with the recorded bytes and direction"},
         [](const Context& c) { return c.kind == ActivityKind::Memcpy; },
         [](const Context& c) {
             Recipe r;
             r.tier = Tier::Copy;
             r.detail = copy_from(c);
             return r;
         }},
        {{"memset", "gpu_memset activity: tier 1 cudaMemsetAsync with the recorded bytes"},
         [](const Context& c) { return c.kind == ActivityKind::Memset; },
         [](const Context& c) {
             Recipe r;
             r.tier = Tier::Copy;
             r.detail = copy_from(c);
             return r;
         }},
        {{"nccl-collective", "NCCL/RCCL kernel: tier 4 collective from its args or name"},
         [](const Context& c) { return contains_nocase(c.name, "nccl"); },
         [](const Context& c) {
             Recipe r;
             r.tier = Tier::Collective;
             r.detail = collective_from(c);
             return r;
         }},
        {{"triton",
          "Triton kernel: tier triton from its compiled binary in --inductor-cache, else not "
          "replayable"},
         [](const Context& c) {
             return c.name.starts_with("triton_") ||
                    contains_any(c.name, {"triton_poi", "triton_red", "triton_per", "triton_tem"});
         },
         [](const Context&) {
             return not_replayable(
                 "Triton kernel: its binary is not in the trace; pass torch.compile's cache "
                 "folder of the run (TORCHINDUCTOR_CACHE_DIR, or a .tar.gz of it) as "
                 "--inductor-cache");
         }},
        {{"unlinked", "no runtime launch and no op carry this activity's ids"},
         [](const Context& c) { return !c.in_op && !c.launched; },
         [](const Context& c) { return not_replayable(to_string(c.link)); }},
        {{"gemm-splitk-reduce",
          "cuBLASLt split-K reduction under a GEMM op: tier 2, issued by its GEMM"},
         [](const Context& c) { return c.gemm_op && is_splitk_reduce(c.name); },
         [](const Context& c) { return gemm_or_reason(c, true, "gemm-splitk-reduce"); }},
        {{"gemm", "GEMM kernel under aten::mm/addmm/bmm/baddbmm/linear/matmul: tier 2 cuBLASLt"},
         [](const Context& c) { return c.gemm_op && looks_like_gemm_kernel(c.name); },
         [](const Context& c) { return gemm_or_reason(c, false, "gemm"); }},
        {{"index-list-from-children",
          "kernel under aten::index/index_put_ whose Tensor?[] indices Kineto recorded as [] and "
          "whose own children show them (self restrided and each index reshaped, or each index "
          "linearized for an accumulating index_put_): tier 3 libtorch op with those index "
          "tensors, after None for the dims before them"},
         index_list_from_children,
         index_op_from_children},
        {{"tensor-list-unrecorded",
          "kernel under a dispatcher op whose tensor-list argument was recorded without its "
          "tensors (Kineto writes []; an Execution Trace has them)"},
         [](const Context& c) {
             return c.aten_op && c.has_shapes(*c.aten_op) &&
                    c.unrecorded_tensor_list(*c.aten_op).has_value();
         },
         [](const Context& c) {
             return not_replayable(
                 "argument " + std::to_string(*c.unrecorded_tensor_list(*c.aten_op)) + " of " +
                 std::string(c.op_name(*c.aten_op)) +
                 " is a tensor list recorded without its tensors: give the run's --et");
         }},
        {{"aten-op", "kernel under a dispatcher op with recorded shapes: tier 3 libtorch op"},
         [](const Context& c) { return c.aten_op && c.has_shapes(*c.aten_op); },
         [](const Context& c) {
             Recipe r;
             r.tier = Tier::AtenOp;
             r.detail = aten_recipe(c, {ChainPlace::Aten});
             return r;
         }},
        {{"no-shapes",
          "kernel under a dispatcher op without recorded shapes (no record_shapes, ET or shape "
          "log)"},
         [](const Context& c) { return c.aten_op.has_value(); },
         [](const Context& c) {
             // Accurate with or without --et: an Execution Trace of one iteration leaves the
             // other iterations' ops without shapes.
             return not_replayable("no shapes for " + std::string(c.op_name(*c.aten_op)) +
                                   ": record_shapes off, no --et/--shapes entry");
         }},
        {{"no-op", "the launch is not inside any recorded dispatcher op"},
         [](const Context&) { return true; },
         [](const Context& c) {
             return not_replayable(!c.in_op
                                       ? std::string(to_string(LinkState::NoOp))
                                       : "only non-operator ranges enclose the launch (e.g. " +
                                             std::string(c.trace.names.view(c.innermost_op)) + ")");
         }},
    };
    return table;
}

Recipe decide(const Context& c) {
    for (const Rule& rule : rules()) {
        if (!rule.matches(c)) continue;
        Recipe recipe = rule.build(c);
        if (recipe.rule.empty()) recipe.rule = rule.info.id;
        // A non-GEMM kernel whose innermost op is itself a GEMM op is part of that op's work.
        if (recipe.tier == Tier::AtenOp && c.aten_op && is_gemm_op(c.op_name(*c.aten_op)) &&
            c.gemm_op) {
            recipe = gemm_or_reason(c, true, "gemm-aux");
            if (recipe.replayable())
                recipe.reason = "auxiliary kernel of a GEMM op, issued by the GEMM's replay";
        }
        return recipe;
    }
    return not_replayable("no rule matched");  // unreachable: the last rule matches everything
}

Recipe decide(const Trace& trace, const Facts& facts, StorageIds& storages) {
    return decide(Context{facts, trace, trace.names.view(facts.activity_name), storages});
}

std::int64_t storage_of(const Trace& trace, const ChainOps& chain, const TensorSource& source) {
    const std::uint32_t op = source.op.kind == ChainPlace::Gemm   ? chain.gemm_op
                             : source.op.kind == ChainPlace::Aten ? chain.aten_op
                             : source.op.child < chain.aten_children.size()
                                 ? chain.aten_children[source.op.child]
                                 : kNoIndex;
    if (op == kNoIndex) return -1;
    std::int64_t id = kNoId;
    if (source.element == TensorSource::kWholeInput) {
        id = trace.storages.input(op, source.input);
    } else {
        const OpStorages::Ids list = trace.storages.list(op, source.input);
        if (source.element < list.size()) id = list[source.element];
    }
    return id == kNoId ? -1 : id;
}

}  // namespace replay::classifier_detail

namespace replay {

const std::vector<RuleInfo>& classifier_rules() {
    static const std::vector<RuleInfo> infos = [] {
        std::vector<RuleInfo> v;
        for (const auto& r : classifier_detail::rules()) v.push_back(r.info);
        // Applied after the table (recipe_library.h), to kernels the table left without one.
        v.push_back({"recipe-library",
                     "kernel without an op (CUDA graph, no record_shapes): the recipe of the same "
                     "kernel (name, grid, block, neighbours) in this trace's eager launches or a "
                     "--recipes file"});
        // Applied with --inductor-cache (inductor_cache.h), before the recipe library.
        v.push_back({"inductor-extern",
                     "kernel without an op between a compiled graph's Triton launches (a CUDA "
                     "graph of torch.compile's reduce-overhead): the library call there in the "
                     "Inductor wrapper code (extern_kernels.mm/addmm/bmm/baddbmm/convolution, an "
                     "aten fallback), with its operands' sizes and strides"});
        return v;
    }();
    return infos;
}

}  // namespace replay
