#include "value_roles.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <random>

#include "schema_binding.h"

namespace replay::torch_detail {
namespace {

// Read access to a built stack by schema argument name: what the op will actually get.
class StackView {
  public:
    StackView(const c10::FunctionSchema& schema, const std::vector<c10::IValue>& stack)
        : schema_(schema), stack_(stack) {}

    const c10::IValue* value(std::string_view name) const {
        const auto& arguments = schema_.arguments();
        for (std::size_t i = 0; i < arguments.size() && i < stack_.size(); ++i)
            if (arguments[i].name() == name) return &stack_[i];
        return nullptr;
    }
    // A defined tensor argument, else nullptr.
    const at::Tensor* tensor(std::string_view name) const {
        const c10::IValue* v = value(name);
        if (v == nullptr || !v->isTensor() || !v->toTensor().defined()) return nullptr;
        return &v->toTensor();
    }
    std::optional<std::int64_t> integer(std::string_view name) const {
        const c10::IValue* v = value(name);
        if (v == nullptr || !v->isInt()) return std::nullopt;
        return v->toInt();
    }
    std::optional<std::vector<std::int64_t>> int_list(std::string_view name) const {
        const c10::IValue* v = value(name);
        if (v == nullptr || !v->isIntList()) return std::nullopt;
        return v->toIntVector();
    }
    bool boolean(std::string_view name) const {
        const c10::IValue* v = value(name);
        return v != nullptr && v->isBool() && v->toBool();
    }

  private:
    const c10::FunctionSchema& schema_;
    const std::vector<c10::IValue>& stack_;
};

// A resolver fills the range of one constraint, or says why the range cannot be known.
using Resolver = std::function<bool(const StackView&, ValueConstraint&, std::string& why)>;

std::string dims_text(const at::Tensor& t) {
    std::string text = "[";
    for (std::int64_t i = 0; i < t.dim(); ++i) text += (i ? ", " : "") + std::to_string(t.size(i));
    return text + "]";
}

bool missing(std::string& why, std::string_view target) {
    why = "the size it indexes ('" + std::string(target) + "') was not recorded";
    return false;
}

bool index_bound(ValueConstraint& c, std::int64_t bound, std::string what) {
    c.role = ValueRole::Index;
    c.bound = bound;
    c.what = std::move(what);
    return true;
}

// Values index `target`'s dimension `dim` (negative counts from the end).
bool index_dim(const StackView& v, ValueConstraint& c, std::string& why, std::string_view target,
               std::int64_t dim) {
    const at::Tensor* t = v.tensor(target);
    if (t == nullptr) return missing(why, target);
    const std::int64_t rank = std::max<std::int64_t>(t->dim(), 1);  // a 0-dim tensor has size 1
    const std::int64_t d = dim < 0 ? dim + rank : dim;
    if (d < 0 || d >= rank) {
        why = "dim " + std::to_string(dim) + " is outside '" + std::string(target) + "' " +
              dims_text(*t);
        return false;
    }
    const std::int64_t size = t->dim() == 0 ? 1 : t->size(d);
    return index_bound(
        c, size,
        std::string(target) + " dim " + std::to_string(d) + " (" + std::to_string(size) + ")");
}

// Values index `target`'s dimension named by the int argument `dim_arg`.
Resolver along(std::string_view target, std::string_view dim_arg) {
    return [=](const StackView& v, ValueConstraint& c, std::string& why) {
        const auto dim = v.integer(dim_arg);
        if (!dim) return missing(why, dim_arg);
        return index_dim(v, c, why, target, *dim);
    };
}

Resolver dim_of(std::string_view target, std::int64_t dim) {
    return [=](const StackView& v, ValueConstraint& c, std::string& why) {
        return index_dim(v, c, why, target, dim);
    };
}

// Values index the flattened `target`.
Resolver numel_of(std::string_view target) {
    return [=](const StackView& v, ValueConstraint& c, std::string& why) {
        const at::Tensor* t = v.tensor(target);
        if (t == nullptr) return missing(why, target);
        return index_bound(c, t->numel(),
                           std::string(target) + " numel (" + std::to_string(t->numel()) + ")");
    };
}

// Values index the plane of `target`'s last `n` dimensions (max-pool indices).
Resolver plane_of(std::string_view target, std::int64_t n) {
    return [=](const StackView& v, ValueConstraint& c, std::string& why) {
        const at::Tensor* t = v.tensor(target);
        if (t == nullptr) return missing(why, target);
        if (t->dim() < n) {
            why = "'" + std::string(target) + "' " + dims_text(*t) + " has fewer than " +
                  std::to_string(n) + " dims";
            return false;
        }
        std::int64_t plane = 1;
        for (std::int64_t d = t->dim() - n; d < t->dim(); ++d) plane *= t->size(d);
        return index_bound(c, plane,
                           std::string(target) + " last " + std::to_string(n) + " dims (" +
                               std::to_string(plane) + ")");
    };
}

// Values index a count held by an int argument (num_weights).
Resolver count_in(std::string_view int_arg) {
    return [=](const StackView& v, ValueConstraint& c, std::string& why) {
        const auto n = v.integer(int_arg);
        if (!n || *n <= 0) return missing(why, int_arg);
        return index_bound(c, *n, std::string(int_arg) + " (" + std::to_string(*n) + ")");
    };
}

// Values index the product of an int-list argument (max_unpool's output_size).
Resolver product_of(std::string_view list_arg) {
    return [=](const StackView& v, ValueConstraint& c, std::string& why) {
        const auto sizes = v.int_list(list_arg);
        if (!sizes || sizes->empty()) return missing(why, list_arg);
        const std::int64_t n =
            std::accumulate(sizes->begin(), sizes->end(), std::int64_t{1}, std::multiplies<>());
        return index_bound(c, n, std::string(list_arg) + " product (" + std::to_string(n) + ")");
    };
}

// Class targets of a loss: the class dimension of `self` (dim 1, or 0 for an unbatched input).
Resolver classes_of(std::string_view target) {
    return [=](const StackView& v, ValueConstraint& c, std::string& why) {
        const at::Tensor* t = v.tensor(target);
        if (t == nullptr) return missing(why, target);
        return index_dim(v, c, why, target, t->dim() >= 2 ? 1 : 0);
    };
}

// Group boundaries over `target`'s dimension `dim` (cu_seqlens: 0, ..., total).
Resolver bounds_over(std::string_view target, std::int64_t dim) {
    return [=](const StackView& v, ValueConstraint& c, std::string& why) {
        if (!index_dim(v, c, why, target, dim)) return false;
        c.role = ValueRole::Offsets;
        c.total = c.bound;
        c.leading_zero = true;
        c.ends_at_total = true;
        return true;
    };
}

// embedding_bag offsets: bag starts into `indices`, with the end appended when
// include_last_offset. Kineto records how many indices and bags, not the bags' sizes: each index
// falls in a bag uniformly at random (`routed`), so sizes vary around their mean as real bags do
// (equal bags would make every thread's loop as long, and the kernel faster than recorded).
bool bag_offsets(const StackView& v, ValueConstraint& c, std::string& why) {
    const at::Tensor* indices = v.tensor("indices");
    if (indices == nullptr) return missing(why, "indices");
    c.role = ValueRole::Offsets;
    c.routed = true;
    c.total = indices->numel();
    c.leading_zero = true;
    c.ends_at_total = v.boolean("include_last_offset");
    c.what = "indices numel (" + std::to_string(c.total) + ")";
    return true;
}

// repeat_interleave repeats: sizes summing to output_size when recorded.
bool repeats(const StackView& v, ValueConstraint& c, std::string& why) {
    const at::Tensor* r = v.tensor("repeats");
    if (r == nullptr) return missing(why, "repeats");
    c.role = ValueRole::Counts;
    const auto output = v.integer("output_size");
    c.total = output && *output >= 0 ? *output : r->numel();  // one repeat each on average
    c.what = output ? "output_size (" + std::to_string(c.total) + ")"
                    : "repeats numel (" + std::to_string(c.total) + ")";
    return true;
}

// segment_reduce lengths/offsets split data's `axis`.
Resolver segments(bool offsets) {
    return [=](const StackView& v, ValueConstraint& c, std::string& why) {
        if (!index_dim(v, c, why, "data", v.integer("axis").value_or(0))) return false;
        c.total = c.bound;
        c.role = offsets ? ValueRole::Offsets : ValueRole::Counts;
        c.leading_zero = offsets;
        return true;
    };
}

std::int64_t alignment_for(std::int64_t stride_elements, std::int64_t element_size) {
    // The smallest group size whose byte extent along the dynamic dimension is a multiple of 16
    // (TMA transfers need 16-byte aligned group starts).
    const std::int64_t bytes = std::max<std::int64_t>(stride_elements, 1) * element_size;
    return 16 / std::gcd<std::int64_t>(16, bytes);
}

// Grouped GEMM offsets (_grouped_mm, _scaled_grouped_mm): group ends over the dynamic dimension,
// which depends on which operand is 2-D: 2-D x 3-D groups the rows of self (M), 3-D x 2-D the
// columns of mat2 (N), 2-D x 2-D the shared K.
bool grouped_gemm_offsets(const StackView& v, ValueConstraint& c, std::string& why) {
    const at::Tensor* a = v.tensor("self");
    const at::Tensor* b = v.tensor("mat2");
    if (a == nullptr || b == nullptr) return missing(why, a == nullptr ? "self" : "mat2");
    const bool a2 = a->dim() == 2, b2 = b->dim() == 2;
    std::vector<std::int64_t> aligns;
    if (a2 && !b2) {
        c.total = a->size(0);
        aligns = {alignment_for(a->stride(0), a->element_size()),
                  alignment_for(b->size(-1), a->element_size())};  // output rows
        c.what = "self dim 0 (" + std::to_string(c.total) + ")";
    } else if (!a2 && b2) {
        c.total = b->size(1);
        aligns = {alignment_for(b->stride(1), b->element_size()),
                  alignment_for(1, a->element_size())};  // output columns
        c.what = "mat2 dim 1 (" + std::to_string(c.total) + ")";
    } else if (a2 && b2) {
        c.total = a->size(1);
        aligns = {alignment_for(a->stride(1), a->element_size()),
                  alignment_for(b->stride(0), b->element_size())};
        c.what = "self dim 1 (" + std::to_string(c.total) + ")";
    } else {
        why = "offsets given for 3-D x 3-D operands " + dims_text(*a) + " x " + dims_text(*b);
        return false;
    }
    c.role = ValueRole::Offsets;
    c.routed = true;
    c.align = std::accumulate(aligns.begin(), aligns.end(), std::int64_t{1},
                              [](std::int64_t x, std::int64_t y) { return std::lcm(x, y); });
    return true;
}

// masked_fill's mask: no element set (see ValueRole::EmptyMask).
bool empty_mask(const StackView&, ValueConstraint& c, std::string&) {
    c.role = ValueRole::EmptyMask;
    c.what = "a mask the op fills through";
    return true;
}

// A divisor: integers 1..16 (any positive value; integer division by zero fails on the CPU),
// floating-point ones 1 (ValueRole::Divisor).
bool divisor(const StackView&, ValueConstraint& c, std::string&) {
    c.role = ValueRole::Divisor;
    c.bound = 16;
    c.what = "a nonzero divisor";
    return true;
}

// What an op takes the square root or the logarithm of (ValueRole::Positive).
bool positive(const StackView&, ValueConstraint& c, std::string&) {
    c.role = ValueRole::Positive;
    c.what = "what the op takes the square root or the logarithm of";
    return true;
}

struct TableEntry {
    std::string_view op;        // "aten::embedding", any overload
    std::string_view argument;  // schema argument name
    Resolver resolve;
    bool indices = true;  // false for divisors: an unrecorded dtype stays floating
};

// THE table: what the schemas cannot say. Ops that take `Tensor?[] indices` (index, index_put_,
// ...) and ops that take `index`/`indices` with a `dim` and a `self` (gather, scatter*,
// index_select, index_add/copy/fill/reduce, gather_backward, take_along_dim with a dim) are
// learnt from their schemas and need no entry.
const std::vector<TableEntry>& table() {
    static const std::vector<TableEntry> entries = [] {
        std::vector<TableEntry> t = {
            {"aten::embedding", "indices", dim_of("weight", 0)},
            {"aten::embedding_renorm_", "indices", dim_of("self", 0)},
            {"aten::embedding_backward", "indices", count_in("num_weights")},
            {"aten::embedding_dense_backward", "indices", count_in("num_weights")},
            {"aten::embedding_sparse_backward", "indices", count_in("num_weights")},
            {"aten::take", "index", numel_of("self")},
            {"aten::put", "index", numel_of("self")},
            {"aten::put_", "index", numel_of("self")},
            {"aten::index_select_backward", "index",
             [](const StackView& v, ValueConstraint& c, std::string& why) {
                 const auto sizes = v.int_list("self_sizes");
                 const auto dim = v.integer("dim");
                 if (!sizes || !dim) return missing(why, "self_sizes");
                 const auto rank = static_cast<std::int64_t>(sizes->size());
                 const std::int64_t d = *dim < 0 ? *dim + rank : *dim;
                 if (d < 0 || d >= rank) return missing(why, "self_sizes");
                 return index_bound(c, (*sizes)[static_cast<std::size_t>(d)],
                                    "self_sizes[" + std::to_string(d) + "]");
             }},
            {"aten::take_along_dim", "indices",
             [](const StackView& v, ValueConstraint& c, std::string& why) {
                 if (const auto dim = v.integer("dim")) return index_dim(v, c, why, "self", *dim);
                 return numel_of("self")(v, c, why);  // dim=None: the flattened input
             }},
            {"aten::one_hot", "self",
             [](const StackView& v, ValueConstraint& c, std::string&) {
                 // num_classes=-1 sizes the output from the data: one class keeps it small.
                 const std::int64_t n =
                     std::max<std::int64_t>(v.integer("num_classes").value_or(1), 1);
                 return index_bound(c, n, "num_classes (" + std::to_string(n) + ")");
             }},
            {"aten::bincount", "self",
             [](const StackView& v, ValueConstraint& c, std::string&) {
                 const std::int64_t n =
                     std::max<std::int64_t>(v.integer("minlength").value_or(1), 1);
                 return index_bound(c, n, "minlength (" + std::to_string(n) + ")");
             }},
            {"aten::repeat_interleave", "repeats", repeats},
            {"aten::masked_fill", "mask", empty_mask, false},
            {"aten::masked_fill_", "mask", empty_mask, false},
            {"aten::_grouped_mm", "offs", grouped_gemm_offsets},
            {"aten::_scaled_grouped_mm", "offs", grouped_gemm_offsets},
            {"aten::segment_reduce", "lengths", segments(false)},
            {"aten::segment_reduce", "offsets", segments(true)},
            {"aten::_segment_reduce", "lengths", segments(false)},
            {"aten::_segment_reduce", "offsets", segments(true)},
            {"aten::max_pool2d_with_indices_backward", "indices", plane_of("self", 2)},
            {"aten::max_pool3d_with_indices_backward", "indices", plane_of("self", 3)},
            {"aten::adaptive_max_pool2d_backward", "indices", plane_of("self", 2)},
            {"aten::adaptive_max_pool3d_backward", "indices", plane_of("self", 3)},
            {"aten::fractional_max_pool2d_backward", "indices", plane_of("self", 2)},
            {"aten::fractional_max_pool3d_backward", "indices", plane_of("self", 3)},
            {"aten::max_unpool2d", "indices", product_of("output_size")},
            {"aten::max_unpool3d", "indices", product_of("output_size")},
        };
        for (std::string_view op :
             {"aten::embedding_bag", "aten::_embedding_bag", "aten::_embedding_bag_forward_only"}) {
            t.push_back({op, "indices", dim_of("weight", 0)});
            t.push_back({op, "offsets", bag_offsets});
        }
        // embedding_bag's backward takes the forward's bookkeeping: offset2bag names each
        // index's bag (a row of grad), maximum_indices (max mode) rows of the weight.
        for (std::string_view op :
             {"aten::_embedding_bag_backward", "aten::_embedding_bag_dense_backward",
              "aten::_embedding_bag_sparse_backward"}) {
            t.push_back({op, "indices", count_in("num_weights")});
            t.push_back({op, "offset2bag", dim_of("grad", 0)});
            t.push_back({op, "maximum_indices", count_in("num_weights")});
        }
        t.push_back({"aten::_embedding_bag_backward", "offsets", bag_offsets});
        t.push_back({"aten::_embedding_bag_sparse_backward", "offsets", bag_offsets});
        for (std::string_view op :
             {"aten::nll_loss", "aten::nll_loss_forward", "aten::nll_loss_nd", "aten::nll_loss2d",
              "aten::nll_loss2d_forward", "aten::nll_loss_backward", "aten::nll_loss2d_backward",
              "aten::cross_entropy_loss", "aten::multi_margin_loss", "aten::multilabel_margin_loss",
              "aten::multilabel_margin_loss_forward"})
            t.push_back({op, "target", classes_of("self")});
        // Variable-length attention: cumulative sequence starts over the packed tokens.
        for (std::string_view op :
             {"aten::_flash_attention_forward", "aten::_flash_attention_backward",
              "aten::_cudnn_attention_forward"}) {
            t.push_back({op, "cum_seq_q", bounds_over("query", 0)});
            t.push_back({op, "cum_seq_k", bounds_over("key", 0)});
        }
        for (std::string_view op :
             {"aten::_efficient_attention_forward", "aten::_efficient_attention_backward"}) {
            t.push_back({op, "cu_seqlens_q", bounds_over("query", 1)});
            t.push_back({op, "cu_seqlens_k", bounds_over("key", 1)});
        }
        for (std::string_view op :
             {"aten::div", "aten::div_", "aten::floor_divide", "aten::floor_divide_",
              "aten::remainder", "aten::remainder_", "aten::fmod", "aten::fmod_"})
            t.push_back({op, "other", divisor, false});
        // In-place logarithms are left out: unique mode repeats them, and log of their own
        // output goes negative by the second run.
        for (std::string_view op :
             {"aten::sqrt", "aten::sqrt_", "aten::rsqrt", "aten::rsqrt_", "aten::log", "aten::log2",
              "aten::log10", "aten::_foreach_sqrt", "aten::_foreach_sqrt_"})
            t.push_back({op, "self", positive, false});
        for (std::string_view op : {"aten::_fused_adam_", "aten::_fused_adamw_",
                                    "aten::_fused_adam", "aten::_fused_adamw"}) {
            t.push_back({op, "exp_avg_sqs", positive, false});
            t.push_back({op, "max_exp_avg_sqs", positive, false});
        }
        return t;
    }();
    return entries;
}

const TableEntry* table_entry(std::string_view op, std::string_view argument) {
    for (const TableEntry& e : table())
        if (e.op == op && e.argument == argument) return &e;
    return nullptr;
}

bool is_optional_tensor_list(const c10::Argument& a) {
    const SlotInfo info = slot_of(a);
    return info.slot == Slot::TensorList && info.optional_elements;
}

bool is_tensor(const c10::Argument& a) {
    return slot_of(a).slot == Slot::Tensor;
}

bool has_argument(const c10::FunctionSchema& schema, std::string_view name) {
    const auto& arguments = schema.arguments();
    return std::any_of(arguments.begin(), arguments.end(),
                       [&](const c10::Argument& a) { return a.name() == name; });
}

// Schema rule: `index`/`indices` next to an int `dim` and a tensor `self` index self along dim
// (gather, scatter, index_select, index_add, ...).
bool indexes_along_dim(const c10::FunctionSchema& schema, const c10::Argument& a) {
    return (a.name() == "index" || a.name() == "indices") && is_tensor(a) &&
           has_argument(schema, "dim") && has_argument(schema, "self");
}

bool integral(const at::Tensor& t) {
    return t.defined() && at::isIntegralType(t.scalar_type(), /*includeBool=*/false);
}

}  // namespace

const char* to_string(ValueRole role) {
    switch (role) {
        case ValueRole::Index:
            return "index";
        case ValueRole::Offsets:
            return "offsets";
        case ValueRole::Counts:
            return "counts";
        case ValueRole::Divisor:
            return "divisor";
        case ValueRole::EmptyMask:
            return "empty mask";
        case ValueRole::Positive:
            return "positive";
    }
    return "?";
}

bool holds_indices(const c10::FunctionSchema& schema, std::size_t arg) {
    const auto& a = schema.arguments().at(arg);
    const TableEntry* entry = table_entry(schema.name(), a.name());
    return is_optional_tensor_list(a) || indexes_along_dim(schema, a) ||
           (entry != nullptr && entry->indices);
}

std::optional<std::vector<ValueConstraint>> value_constraints(const c10::FunctionSchema& schema,
                                                              const std::vector<c10::IValue>& stack,
                                                              std::string& why) {
    const StackView view(schema, stack);
    const auto& arguments = schema.arguments();
    std::vector<ValueConstraint> out;
    auto fail = [&](const c10::Argument& a, const std::string& what) {
        why = schema.name() + ": the range of argument '" + a.name() + "' is unknown (" + what +
              "): skipped rather than risk an index out of range";
        return std::nullopt;
    };
    for (std::size_t i = 0; i < arguments.size() && i < stack.size(); ++i) {
        const c10::Argument& a = arguments[i];
        const c10::IValue& value = stack[i];
        if (is_optional_tensor_list(a) && value.isList()) {
            // Tensor?[] indices index self's leading dimensions in order: a None element skips
            // one, a bool (or uint8) mask covers as many as it has.
            const at::Tensor* self = view.tensor("self");
            const auto list = value.toList();
            std::int64_t dim = 0;
            for (std::size_t k = 0; k < list.size(); ++k) {
                const c10::IValue element = list.get(k);
                if (!element.isTensor() || !element.toTensor().defined()) {
                    ++dim;
                    continue;
                }
                const at::Tensor& index = element.toTensor();
                if (index.scalar_type() == at::kBool || index.scalar_type() == at::kByte) {
                    dim += std::max<std::int64_t>(index.dim(), 1);
                    continue;
                }
                if (!integral(index)) continue;
                if (self == nullptr) return fail(a, "'self' was not recorded");
                ValueConstraint c;
                c.arg = i;
                c.item = k;
                std::string what;
                if (dim >= self->dim() || !index_dim(view, c, what, "self", dim))
                    return fail(a, "more indices than 'self' " + dims_text(*self) + " has dims");
                out.push_back(std::move(c));
                ++dim;
            }
            continue;
        }
        const TableEntry* entry = table_entry(schema.name(), a.name());
        if (value.isTensorList() && entry != nullptr) {
            // A list of what the op takes square roots of (_foreach_sqrt, Adam's moments).
            const auto list = value.toList();
            for (std::size_t k = 0; k < list.size(); ++k) {
                const c10::IValue element = list.get(k);
                if (!element.isTensor() || !element.toTensor().is_floating_point()) continue;
                ValueConstraint c;
                c.arg = i;
                c.item = k;
                std::string what;
                if (entry->resolve(view, c, what) && c.role == ValueRole::Positive)
                    out.push_back(std::move(c));
            }
            continue;
        }
        if (!value.isTensor()) continue;
        const at::Tensor& tensor = value.toTensor();
        const bool mask = tensor.defined() && tensor.scalar_type() == at::kBool;
        const bool floating = tensor.defined() && tensor.is_floating_point();
        // A batch norm's running variance, whatever the op (forward, backward, inference).
        const bool variance = floating && a.name() == "running_var";
        if (!integral(tensor) && !((mask || floating) && (entry != nullptr || variance))) continue;
        ValueConstraint c;
        c.arg = i;
        std::string what;
        bool resolved = false;
        if (variance) {
            resolved = positive(view, c, what);
        } else if (entry != nullptr) {
            resolved = entry->resolve(view, c, what);
        } else if (indexes_along_dim(schema, a)) {
            resolved = along("self", "dim")(view, c, what);
        } else {
            continue;  // data: its values address nothing
        }
        // A bool tensor has a role only as a mask, a floating-point one only as a divisor or
        // positive: elsewhere they stay data (and an integer one is not made positive).
        if (mask && (!resolved || c.role != ValueRole::EmptyMask)) continue;
        if (floating &&
            (!resolved || (c.role != ValueRole::Divisor && c.role != ValueRole::Positive)))
            continue;
        if (!floating && resolved && c.role == ValueRole::Positive) continue;
        if (!resolved) return fail(a, what);
        out.push_back(std::move(c));
    }
    return out;
}

at::Tensor constrained_tensor(const std::vector<c10::IValue>& stack, const ValueConstraint& c) {
    const c10::IValue& v = stack.at(c.arg);
    if (v.isTensor()) return v.toTensor();
    return v.toList().get(c.item).toTensor();
}

std::vector<std::int64_t> group_values(const ValueConstraint& c, std::int64_t count,
                                       std::uint64_t seed) {
    std::vector<std::int64_t> values;
    if (count <= 0) return values;
    // Offsets with both a leading 0 and the total have one boundary more than groups.
    const std::int64_t groups = c.role == ValueRole::Offsets && c.leading_zero && c.ends_at_total
                                    ? std::max<std::int64_t>(count - 1, 0)
                                    : count;
    std::vector<std::int64_t> sizes(static_cast<std::size_t>(groups), 0);
    if (groups > 0) {
        const std::int64_t align = std::max<std::int64_t>(c.align, 1);
        const std::int64_t units = std::max<std::int64_t>(c.total, 0) / align;
        std::mt19937_64 rng(seed);
        std::int64_t left = units;
        for (std::int64_t g = 0; g < groups; ++g) {
            std::int64_t n = units / groups + (g < units % groups ? 1 : 0);
            if (c.routed) {
                // Multinomial by successive binomials: the units not yet placed pick this group
                // with probability 1 / (groups left).
                std::binomial_distribution<std::int64_t> pick(
                    left, 1.0 / static_cast<double>(groups - g));
                n = g + 1 == groups ? left : pick(rng);
            }
            left -= n;
            sizes[static_cast<std::size_t>(g)] = n * align;
        }
        sizes.back() += std::max<std::int64_t>(c.total, 0) - units * align;  // unaligned rest
    }
    if (c.role == ValueRole::Counts) return sizes;
    std::int64_t running = 0;
    if (c.leading_zero) values.push_back(0);
    for (std::size_t g = 0; g < sizes.size() && static_cast<std::int64_t>(values.size()) < count;
         ++g) {
        running += sizes[g];
        values.push_back(running);
    }
    // Group starts without the total: the last group runs to the end.
    values.resize(static_cast<std::size_t>(count), running);
    return values;
}

std::string check_values(const ValueConstraint& c, const std::vector<std::int64_t>& values) {
    auto at = [&](std::size_t i) {
        return "element " + std::to_string(i) + " = " + std::to_string(values[i]);
    };
    switch (c.role) {
        case ValueRole::Index:
        case ValueRole::Divisor: {
            const std::int64_t low = c.role == ValueRole::Index ? 0 : 1;
            const std::int64_t high = c.role == ValueRole::Index ? c.bound - 1 : c.bound;
            for (std::size_t i = 0; i < values.size(); ++i)
                if (values[i] < low || values[i] > high)
                    return at(i) + " outside [" + std::to_string(low) + ", " +
                           std::to_string(high) + "] (" + c.what + ")";
            return {};
        }
        case ValueRole::EmptyMask:
            for (std::size_t i = 0; i < values.size(); ++i)
                if (values[i] != 0) return at(i) + ": the mask should set no element";
            return {};
        case ValueRole::Positive:
            for (std::size_t i = 0; i < values.size(); ++i)
                if (values[i] <= 0) return at(i) + " is not positive (" + c.what + ")";
            return {};
        case ValueRole::Counts: {
            std::int64_t sum = 0;
            for (std::size_t i = 0; i < values.size(); ++i) {
                if (values[i] < 0) return at(i) + " is negative";
                sum += values[i];
            }
            if (sum != c.total) return "sizes sum to " + std::to_string(sum) + ", not " + c.what;
            return {};
        }
        case ValueRole::Offsets: {
            for (std::size_t i = 0; i < values.size(); ++i) {
                if (values[i] < 0 || values[i] > c.total)
                    return at(i) + " outside [0, " + std::to_string(c.total) + "] (" + c.what + ")";
                if (i > 0 && values[i] < values[i - 1]) return at(i) + " decreases";
            }
            // Every group but the last is aligned.
            for (std::size_t i = 0; i + 1 < values.size(); ++i) {
                const std::int64_t size = values[i] - (i == 0 ? 0 : values[i - 1]);
                if (size % std::max<std::int64_t>(c.align, 1) != 0)
                    return at(i) + " makes a group of " + std::to_string(size) +
                           ", not a multiple of " + std::to_string(c.align);
            }
            if (c.leading_zero && !values.empty() && values.front() != 0)
                return "the first offset is " + std::to_string(values.front()) + ", not 0";
            if (c.ends_at_total && !values.empty() && values.back() != c.total)
                return "the last offset is " + std::to_string(values.back()) + ", not " + c.what;
            return {};
        }
    }
    return {};
}

}  // namespace replay::torch_detail
