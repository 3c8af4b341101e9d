#include "replay/recipe_dims.h"

#include <algorithm>
#include <charconv>
#include <numeric>
#include <set>
#include <sstream>
#include <stdexcept>

#include "replay/int_list.h"

namespace replay {
namespace {

// ---- GEMM -----------------------------------------------------------------------------------

// One stored operand of C[b] (m x n) = op(A[b]) (m x k) * op(B[b]) (k x n): its leading dim must
// hold `inner` elements per line, and a batch holds `outer` lines.
struct Operand {
    std::int64_t* ld;
    std::int64_t* batch_stride;
    std::int64_t inner, outer;
};

std::vector<Operand> operands(GemmRecipe& g) {
    return {{&g.lda, &g.stride_a, g.trans_a ? g.m : g.k, g.trans_a ? g.k : g.m},
            {&g.ldb, &g.stride_b, g.trans_b ? g.k : g.n, g.trans_b ? g.n : g.k},
            {&g.ldc, &g.stride_c, g.n, g.m}};
}

void set_gemm_dims(GemmRecipe& g, const std::vector<std::pair<std::string, std::int64_t>>& dims) {
    GemmRecipe before = g;
    for (const auto& [name, value] : dims) {
        if (name == "m") g.m = value;
        else if (name == "n") g.n = value;
        else if (name == "k") g.k = value;
        else if (name == "batch") g.batch = value;
    }
    const auto old_ops = operands(before);
    const auto new_ops = operands(g);
    for (std::size_t i = 0; i < new_ops.size(); ++i) {
        const Operand& o = old_ops[i];
        const Operand& n = new_ops[i];
        const bool tight_ld = *o.ld == o.inner;
        const std::int64_t ld = tight_ld ? n.inner : std::max(*o.ld, n.inner);
        // 0: a broadcast operand (baddbmm's bias); a stride other than a whole matrix: batches
        // interleaved in a larger tensor (heads of a fused projection), kept.
        const bool tight_batch = *o.batch_stride == o.outer * *o.ld;
        if (tight_batch && *o.batch_stride != 0) *n.batch_stride = n.outer * ld;
        *n.ld = ld;
    }
    g.a_storage = g.b_storage = g.c_storage = -1;
    g.a_reuse_bytes = g.b_reuse_bytes = g.c_reuse_bytes = kReuseUnknown;
}

// ---- dispatcher ops -------------------------------------------------------------------------

struct ArgDim {
    std::size_t arg = 0;
    std::optional<std::size_t> dim;  // none: an integer scalar
};

std::optional<ArgDim> parse_arg_dim(const std::string& name) {
    if (!name.starts_with("arg")) return std::nullopt;
    ArgDim out;
    const char* p = name.data() + 3;
    const char* end = name.data() + name.size();
    auto r = std::from_chars(p, end, out.arg);
    if (r.ec != std::errc() || r.ptr == p) return std::nullopt;
    if (r.ptr == end) return out;
    if (end - r.ptr < 3 || r.ptr[0] != '.' || r.ptr[1] != 'd') return std::nullopt;
    std::size_t dim = 0;
    auto r2 = std::from_chars(r.ptr + 2, end, dim);
    if (r2.ec != std::errc() || r2.ptr != end) return std::nullopt;
    out.dim = dim;
    return out;
}

bool is_integer_text(const std::string& text) {
    std::int64_t v = 0;
    auto r = std::from_chars(text.data(), text.data() + text.size(), v);
    return !text.empty() && r.ec == std::errc() && r.ptr == text.data() + text.size();
}

std::optional<std::int64_t> aten_dim(const AtenRecipe& a, const ArgDim& at) {
    if (at.arg >= a.args.size()) return std::nullopt;
    const AtenArgument& arg = a.args[at.arg];
    if (arg.kind == ArgKind::Tensor && at.dim && !arg.tensors.empty() &&
        *at.dim < arg.tensors[0].dims.size())
        return arg.tensors[0].dims[*at.dim];
    if (arg.kind == ArgKind::ScalarList && at.dim)
        if (auto list = parse_int_list(arg.value); list && *at.dim < list->size())
            return (*list)[*at.dim];
    if (arg.kind == ArgKind::Scalar && !at.dim && is_integer_text(arg.value))
        return std::stoll(arg.value);
    return std::nullopt;
}

void set_tensor_dims(TensorSpec& t, std::vector<std::int64_t> dims) {
    if (!t.strides.empty() && t.strides.size() == t.dims.size())
        t.strides = restride(t.dims, t.strides, dims);
    t.dims = std::move(dims);
    t.storage_id = -1;
    t.storage_offset = 0;
    t.reuse_bytes = kReuseUnknown;
}

void set_aten_dims(AtenRecipe& a, const std::vector<std::pair<std::string, std::int64_t>>& dims) {
    // Ties follow the recorded values: with [1, 5, 1024] swept to d1 = 1024, d2 = 256, the d1 set
    // first must not be taken for a 1024 that d2 ties (that point measured [1, 256, 256]).
    const AtenRecipe recorded = a;
    std::vector<std::vector<std::vector<std::int64_t>>> tensor_dims(recorded.args.size());
    std::vector<std::optional<std::vector<std::int64_t>>> lists(recorded.args.size());
    for (std::size_t i = 0; i < recorded.args.size(); ++i) {
        for (const auto& t : recorded.args[i].tensors) tensor_dims[i].push_back(t.dims);
        if (recorded.args[i].kind == ArgKind::ScalarList) lists[i] = parse_int_list(recorded.args[i].value);
    }
    // Tied first: every dim with the same recorded value (> 1) changes with a named one; then the
    // named dims themselves, which a tie never overrides.
    for (const bool named : {false, true})
        for (const auto& [name, value] : dims) {
            const ArgDim at = *parse_arg_dim(name);
            const std::int64_t old = *aten_dim(recorded, at);
            for (std::size_t i = 0; i < recorded.args.size(); ++i) {
                const auto changes = [&](std::int64_t v, std::size_t dim) {
                    const bool target = i == at.arg && at.dim && *at.dim == dim;
                    return named ? target : old > 1 && v == old;
                };
                for (std::size_t t = 0; t < recorded.args[i].tensors.size(); ++t) {
                    const auto& before = recorded.args[i].tensors[t].dims;
                    for (std::size_t j = 0; j < before.size(); ++j)
                        if (changes(before[j], j)) tensor_dims[i][t][j] = value;
                }
                if (lists[i]) {
                    const auto before = parse_int_list(recorded.args[i].value);
                    for (std::size_t j = 0; j < before->size(); ++j)
                        if (changes((*before)[j], j)) (*lists[i])[j] = value;
                }
                if (named && recorded.args[i].kind == ArgKind::Scalar && i == at.arg && !at.dim)
                    a.args[i].value = std::to_string(value);
            }
        }
    for (std::size_t i = 0; i < a.args.size(); ++i) {
        for (std::size_t t = 0; t < a.args[i].tensors.size(); ++t)
            set_tensor_dims(a.args[i].tensors[t], tensor_dims[i][t]);
        if (lists[i]) a.args[i].value = format_int_list(*lists[i]);
    }
}

// ---- fields ---------------------------------------------------------------------------------

std::string number(double x) {
    std::ostringstream out;
    out << x;
    return out.str();
}

}  // namespace

std::vector<std::int64_t> restride(const std::vector<std::int64_t>& dims,
                                   const std::vector<std::int64_t>& strides,
                                   const std::vector<std::int64_t>& new_dims) {
    const std::size_t rank = new_dims.size();
    std::vector<std::int64_t> out(rank, 0);
    if (dims.size() != rank || strides.size() != rank) {
        std::int64_t s = 1;
        for (std::size_t i = rank; i-- > 0;) {
            out[i] = s;
            s *= std::max<std::int64_t>(new_dims[i], 1);
        }
        return out;
    }
    // Dims by stride, innermost first (ties: the later dim is inner, as in a contiguous tensor).
    std::vector<std::size_t> order(rank);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        if (strides[a] != strides[b]) return strides[a] < strides[b];
        return a > b;
    });
    std::int64_t old_extent = 1, new_extent = 1;  // elements spanned by the dims placed so far
    for (std::size_t i : order) {
        if (strides[i] == 0) continue;  // broadcast
        // The gap a slice or a fused projection left between this dim and the smaller ones.
        const std::int64_t gap =
            old_extent > 0 && strides[i] % old_extent == 0 ? strides[i] / old_extent : 0;
        out[i] = gap > 0 ? gap * new_extent : strides[i];
        old_extent = strides[i] * std::max<std::int64_t>(dims[i], 1);
        new_extent = out[i] * std::max<std::int64_t>(new_dims[i], 1);
    }
    return out;
}

std::vector<std::string> recipe_dim_names(const Recipe& recipe) {
    if (std::holds_alternative<GemmRecipe>(recipe.detail)) return {"m", "n", "k", "batch"};
    std::vector<std::string> names;
    if (const auto* a = std::get_if<AtenRecipe>(&recipe.detail)) {
        for (std::size_t i = 0; i < a->args.size(); ++i) {
            const AtenArgument& arg = a->args[i];
            const std::string base = "arg" + std::to_string(i);
            if (arg.kind == ArgKind::Tensor && !arg.tensors.empty())
                for (std::size_t j = 0; j < arg.tensors[0].dims.size(); ++j)
                    names.push_back(base + ".d" + std::to_string(j));
            if (arg.kind == ArgKind::ScalarList)
                if (auto list = parse_int_list(arg.value))
                    for (std::size_t j = 0; j < list->size(); ++j)
                        names.push_back(base + ".d" + std::to_string(j));
            if (arg.kind == ArgKind::Scalar && is_integer_text(arg.value)) names.push_back(base);
        }
    }
    return names;
}

std::optional<std::int64_t> recipe_dim(const Recipe& recipe, const std::string& name) {
    if (const auto* g = std::get_if<GemmRecipe>(&recipe.detail)) {
        if (name == "m") return g->m;
        if (name == "n") return g->n;
        if (name == "k") return g->k;
        if (name == "batch") return g->batch;
        return std::nullopt;
    }
    if (const auto* a = std::get_if<AtenRecipe>(&recipe.detail))
        if (auto at = parse_arg_dim(name)) return aten_dim(*a, *at);
    return std::nullopt;
}

Recipe with_dims(const Recipe& recipe,
                 const std::vector<std::pair<std::string, std::int64_t>>& dims) {
    for (const auto& [name, value] : dims) {
        if (!recipe_dim(recipe, name)) {
            std::string known;
            for (const auto& n : recipe_dim_names(recipe)) known += (known.empty() ? "" : ", ") + n;
            throw std::invalid_argument("the recipe (" + recipe_short_name(recipe) +
                                        ") has no dim '" + name + "' (it has: " +
                                        (known.empty() ? "none" : known) + ")");
        }
        if (value < 1)
            throw std::invalid_argument("dim " + name + " = " + std::to_string(value) +
                                        ": dims are >= 1");
    }
    Recipe out = recipe;
    if (auto* g = std::get_if<GemmRecipe>(&out.detail)) set_gemm_dims(*g, dims);
    if (auto* a = std::get_if<AtenRecipe>(&out.detail)) set_aten_dims(*a, dims);
    return out;
}

std::int64_t next_power_of_two(std::int64_t n) {
    if (n <= 0) return 0;
    std::int64_t p = 1;
    while (p < n && p < (std::int64_t{1} << 62)) p <<= 1;
    return p;
}

RecipeWork recipe_work(const Recipe& recipe) {
    RecipeWork w;
    // A row of `inner` elements padded to a power of two, `count` elements in all.
    const auto padded = [](double count, std::int64_t inner) {
        return inner > 0 ? count / static_cast<double>(inner) * static_cast<double>(next_power_of_two(inner)) : count;
    };
    if (const auto* g = std::get_if<GemmRecipe>(&recipe.detail)) {
        const double b = static_cast<double>(g->batch);
        w.flops = g->flops();
        w.elements = static_cast<double>(g->m) * static_cast<double>(g->n) * b;
        w.padded_elements = padded(w.elements, g->n);
        w.bytes = b * (static_cast<double>(g->m) * g->k * element_size(g->a_type) +
                       static_cast<double>(g->k) * g->n * element_size(g->b_type) +
                       static_cast<double>(g->m) * g->n * element_size(g->c_type));
        if (g->bias) w.bytes += static_cast<double>(g->n) * element_size(g->bias_type);
    } else if (const auto* a = std::get_if<AtenRecipe>(&recipe.detail)) {
        double largest_bytes = 0;
        for (const auto& arg : a->args)
            for (const auto& t : arg.tensors) {
                const double n = static_cast<double>(std::max<std::int64_t>(t.numel(), 0));
                const double bytes = n * static_cast<double>(element_size(t.dtype));
                w.bytes += bytes;
                if (n > w.elements) {
                    w.elements = n;
                    w.padded_elements = padded(n, t.dims.empty() ? 1 : t.dims.back());
                }
                largest_bytes = std::max(largest_bytes, bytes);
            }
        w.bytes += largest_bytes;  // the output, taken as large as the largest operand
    } else if (const auto* c = std::get_if<CopyRecipe>(&recipe.detail)) {
        w.bytes = static_cast<double>(c->bytes);
        w.elements = w.padded_elements = w.bytes;
    }
    return w;
}

std::string recipe_dtype_label(const Recipe& recipe) {
    const auto label = [](DType d) -> std::string {
        switch (d) {
            case DType::Float16: return "fp16";
            case DType::BFloat16: return "bf16";
            case DType::Float32: return "fp32";
            case DType::Float64: return "fp64";
            case DType::Float8E4M3: return "fp8e4m3";
            case DType::Float8E5M2: return "fp8e5m2";
            default: return to_string(d);
        }
    };
    if (const auto* g = std::get_if<GemmRecipe>(&recipe.detail)) return label(g->a_type);
    if (const auto* a = std::get_if<AtenRecipe>(&recipe.detail)) {
        DType first = DType::Unknown;
        for (const auto& arg : a->args)
            for (const auto& t : arg.tensors) {
                if (first == DType::Unknown) first = t.dtype;
                if (t.dtype == DType::Float16 || t.dtype == DType::BFloat16 ||
                    t.dtype == DType::Float32 || t.dtype == DType::Float64)
                    return label(t.dtype);
            }
        return label(first);
    }
    return "bytes";
}

std::string recipe_short_name(const Recipe& recipe) {
    std::string op;
    if (const auto* g = std::get_if<GemmRecipe>(&recipe.detail)) op = g->op;
    else if (const auto* a = std::get_if<AtenRecipe>(&recipe.detail)) op = a->op;
    else if (const auto* c = std::get_if<CopyRecipe>(&recipe.detail)) op = c->is_memset ? "memset" : "memcpy";
    else if (const auto* n = std::get_if<CollectiveRecipe>(&recipe.detail)) op = n->collective;
    else op = "kernel";
    if (const auto colons = op.rfind("::"); colons != std::string::npos) op = op.substr(colons + 2);
    return op;
}

std::vector<std::pair<std::string, std::string>> recipe_fields(const Recipe& recipe) {
    std::vector<std::pair<std::string, std::string>> f;
    f.emplace_back("tier", to_string(recipe.tier));
    if (const auto* g = std::get_if<GemmRecipe>(&recipe.detail)) {
        f.emplace_back("op", g->op);
        for (const auto& [name, v] : {std::pair<const char*, std::int64_t>{"m", g->m},
                                      {"n", g->n}, {"k", g->k}, {"batch", g->batch}})
            f.emplace_back(name, std::to_string(v));
        f.emplace_back("trans", std::string(g->trans_a ? "T" : "N") + (g->trans_b ? "T" : "N"));
        f.emplace_back("types", std::string(to_string(g->a_type)) + "," + to_string(g->b_type) +
                                    "," + to_string(g->c_type) + "," + to_string(g->compute_type));
        f.emplace_back("alpha", number(g->alpha));
        f.emplace_back("beta", number(g->beta));
        f.emplace_back("bias", g->bias ? to_string(g->bias_type) : "none");
        f.emplace_back("c_broadcast", g->c_broadcast ? "1" : "0");
    } else if (const auto* a = std::get_if<AtenRecipe>(&recipe.detail)) {
        f.emplace_back("op", a->op);
        f.emplace_back("overload", a->overload);
        for (std::size_t i = 0; i < a->args.size(); ++i) {
            const AtenArgument& arg = a->args[i];
            const std::string base = "arg" + std::to_string(i);
            f.emplace_back(base + ".kind", to_string(arg.kind));
            for (std::size_t t = 0; t < arg.tensors.size(); ++t) {
                const TensorSpec& spec = arg.tensors[t];
                const std::string tb = arg.kind == ArgKind::TensorList ? base + ".t" + std::to_string(t) : base;
                f.emplace_back(tb + ".dtype", to_string(spec.dtype));
                f.emplace_back(tb + ".rank", std::to_string(spec.dims.size()));
                for (std::size_t j = 0; j < spec.dims.size(); ++j)
                    f.emplace_back(tb + ".d" + std::to_string(j), std::to_string(spec.dims[j]));
            }
            if (arg.kind == ArgKind::ScalarList) {
                if (auto list = parse_int_list(arg.value)) {
                    f.emplace_back(base + ".rank", std::to_string(list->size()));
                    for (std::size_t j = 0; j < list->size(); ++j)
                        f.emplace_back(base + ".d" + std::to_string(j), std::to_string((*list)[j]));
                    continue;
                }
            }
            if (arg.kind != ArgKind::Tensor && arg.kind != ArgKind::TensorList)
                f.emplace_back(base, arg.value);
        }
    } else if (const auto* c = std::get_if<CopyRecipe>(&recipe.detail)) {
        f.emplace_back("op", c->is_memset ? "memset" : "memcpy");
        f.emplace_back("direction", to_string(c->direction));
        f.emplace_back("pinned", c->host_pinned ? "1" : "0");
        f.emplace_back("bytes", std::to_string(c->bytes));
    } else if (const auto* n = std::get_if<CollectiveRecipe>(&recipe.detail)) {
        f.emplace_back("op", n->collective);
        f.emplace_back("dtype", to_string(n->dtype));
        f.emplace_back("in", std::to_string(n->in_nelems));
    }
    return f;
}

std::string recipe_family(const Recipe& recipe, const std::vector<std::string>& masked) {
    const std::set<std::string> mask(masked.begin(), masked.end());
    std::string out;
    for (const auto& [name, value] : recipe_fields(recipe)) {
        if (!out.empty()) out += ' ';
        out += name + '=' + (mask.count(name) ? "*" : value);
    }
    return out;
}

std::vector<std::string> varying_fields(const std::vector<Recipe>& recipes) {
    std::vector<std::string> out;
    if (recipes.empty()) return out;
    const auto first = recipe_fields(recipes.front());
    std::set<std::string> varying;
    for (std::size_t r = 1; r < recipes.size(); ++r) {
        const auto other = recipe_fields(recipes[r]);
        std::size_t i = 0;
        for (; i < first.size() && i < other.size(); ++i)
            if (first[i].first != other[i].first || first[i].second != other[i].second)
                varying.insert(first[i].first);
        for (std::size_t j = i; j < first.size(); ++j) varying.insert(first[j].first);
    }
    for (const auto& [name, value] : first)
        if (varying.count(name)) out.push_back(name);
    return out;
}

}  // namespace replay
