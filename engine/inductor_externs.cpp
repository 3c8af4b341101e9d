// The library calls of Inductor's wrapper code and the kernels they launched: a compiled graph
// replayed as a CUDA graph (torch.compile's reduce-overhead) records its cuBLAS and cuDNN kernels
// without an op, but the wrapper says what each call was, with its operands' sizes and strides.
#include "inductor_externs.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <regex>
#include <set>
#include <string_view>

#include "classifier_facts.h"
#include "replay/recipe_library.h"
#include "wrapper_text.h"

namespace replay {
namespace {

using namespace wrapper_text;

constexpr const char* kRule = "inductor-extern";

// A library call the wrapper makes through `extern_kernels` (by `name`), or an aten fallback it
// calls with keyword arguments (by `aten`, name ""): the schema's parameters in order, each
// `name` or `name=default` (the default of one a call may leave out).
struct ExternOp {
    std::string_view name;
    std::string_view aten;
    std::string_view params;
};

const std::vector<ExternOp>& extern_ops() {
    static const std::vector<ExternOp> ops = {
        {"mm", "aten::mm", "self mat2"},
        {"bmm", "aten::bmm", "self mat2"},
        {"addmm", "aten::addmm", "self mat1 mat2 beta=1 alpha=1"},
        {"baddbmm", "aten::baddbmm", "self batch1 batch2 beta=1 alpha=1"},
        {"convolution", "aten::convolution",
         "input weight bias=None stride padding dilation transposed output_padding groups"},
        {"", "aten::_scaled_dot_product_cudnn_attention",
         "query key value attn_bias compute_log_sumexp dropout_p=0.0 is_causal=False "
         "return_debug_mask=False scale=None"},
        {"", "aten::_scaled_dot_product_efficient_attention",
         "query key value attn_bias compute_log_sumexp dropout_p=0.0 is_causal=False scale=None"},
        {"", "aten::_scaled_dot_product_flash_attention",
         "query key value dropout_p=0.0 is_causal=False return_debug_mask=False scale=None"},
    };
    return ops;
}

// An ExternOp's parameters as (name, default) pairs, default "" where there is none.
std::vector<std::pair<std::string_view, std::string_view>> parameters_of(const ExternOp& op) {
    std::vector<std::pair<std::string_view, std::string_view>> out;
    for (auto word : split(op.params, ' ')) {
        const auto eq = word.find('=');
        if (eq == std::string_view::npos)
            out.emplace_back(word, "");
        else
            out.emplace_back(word.substr(0, eq), word.substr(eq + 1));
    }
    return out;
}

// The type text Kineto records for a tensor of `d` ("c10::Half", "float", "long int").
std::string kineto_type(DType d) {
    switch (d) {
        case DType::Float16:
            return "c10::Half";
        case DType::BFloat16:
            return "c10::BFloat16";
        case DType::Float32:
            return "float";
        case DType::Float64:
            return "double";
        case DType::Int64:
            return "long int";
        case DType::Int32:
            return "int";
        case DType::Int16:
            return "short int";
        case DType::Int8:
            return "signed char";
        case DType::UInt8:
            return "unsigned char";
        case DType::Bool:
            return "bool";
        default:
            return to_string(d);
    }
}

bool is_number(std::string_view s) {
    static const std::regex number(R"(-?(\d+\.?\d*([eE][-+]?\d+)?|inf|nan))");
    return std::regex_match(s.begin(), s.end(), number);
}

// Names and what they stand for: a file's buffers, the names reusing another's allocation, and
// the first results of calls that return several (`buf14 = buf13[0]`: an attention's output).
struct Names {
    std::map<std::string, WrapperBuffer>& buffers;
    const std::unordered_map<std::string, std::string>& aliases;
    const std::map<std::string, std::int64_t>& input_storages;
    std::unordered_map<std::string, std::string> first_items;
    // `name`'s own record if it has a type, else that of what it reuses or was taken from.
    const WrapperBuffer* find(const std::string& name) const {
        std::string root = name;
        for (int hops = 0; hops < 64; ++hops) {
            const auto b = buffers.find(root);
            if (b != buffers.end() && b->second.dtype != DType::Unknown) return &b->second;
            const std::string* next = nullptr;
            if (const auto a = aliases.find(root); a != aliases.end())
                next = &a->second;
            else if (const auto f = first_items.find(root); f != first_items.end())
                next = &f->second;
            if (next == nullptr) break;
            root = *next;
        }
        const auto own = buffers.find(name);
        return own == buffers.end() ? nullptr : &own->second;
    }
};

// A tensor as the wrapper names it: `reinterpret_tensor(buf4, (1024, 768), (768, 1), 0)` or a
// buffer or graph input by name.
std::optional<TensorSpec> tensor_of(std::string_view expr, const Names& names, std::string& why) {
    TensorSpec t;
    std::string name(expr);
    if (expr.starts_with("reinterpret_tensor(") && expr.ends_with(")")) {
        const auto parts = split(expr.substr(19, expr.size() - 20), ',');
        if (parts.size() != 4) {
            why = "a reinterpret_tensor of other than 4 arguments";
            return std::nullopt;
        }
        name = std::string(parts[0]);
        auto tuple = [](std::string_view s) {
            return integers(s.size() >= 2 ? s.substr(1, s.size() - 2) : s);
        };
        t.dims = tuple(parts[1]);
        t.strides = tuple(parts[2]);
        t.storage_offset = integer(parts[3]).value_or(0);
    }
    const auto own = names.buffers.find(name);
    if (t.dims.empty() && own != names.buffers.end()) {
        t.dims = own->second.dims;
        t.strides = own->second.strides;
    }
    const WrapperBuffer* b = names.find(name);
    if (b == nullptr || t.dims.empty()) {
        why = "no sizes for `" + name + "` in the wrapper";
        return std::nullopt;
    }
    t.dtype = b->dtype;
    if (t.dtype == DType::Unknown) {
        why = "no element type for `" + name + "` in the wrapper";
        return std::nullopt;
    }
    if (const auto s = names.input_storages.find(name); s != names.input_storages.end())
        t.storage_id = s->second;
    return t;
}

// One argument as Kineto would have recorded it.
std::optional<AtenArgument> argument_of(std::string_view expr, const Names& names,
                                        std::string& why) {
    expr = trim(expr);
    AtenArgument a;
    if (expr == "None") {
        a.kind = ArgKind::None;
    } else if (expr == "True" || expr == "False") {
        a.kind = ArgKind::Scalar;
        a.type = "Bool";
        a.value = std::string(expr);
    } else if (is_number(expr)) {
        a.kind = ArgKind::Scalar;
        a.type = integer(expr) ? "Int" : "Scalar";
        a.value = std::string(expr);
    } else if (expr.starts_with("(") || expr.starts_with("[")) {
        a.kind = ArgKind::ScalarList;
        a.type = "ScalarList";
        a.value = "[";
        for (const std::int64_t v : integers(expr.substr(1, expr.size() - 2)))
            a.value += (a.value.size() > 1 ? ", " : "") + std::to_string(v);
        a.value += "]";
    } else {
        auto t = tensor_of(expr, names, why);
        if (!t) return std::nullopt;
        a.kind = ArgKind::Tensor;
        a.type = kineto_type(t->dtype);
        a.tensors.push_back(std::move(*t));
    }
    return a;
}

// The index of the `)` closing the `(` at `open`, skipping strings; npos when it does not close.
std::size_t closing(const std::string& text, std::size_t open) {
    int depth = 0;
    char quote = 0;
    for (std::size_t i = open; i < text.size(); ++i) {
        const char c = text[i];
        if (quote != 0) {
            if (c == quote) quote = 0;
            continue;
        }
        if (c == '\'' || c == '"') quote = c;
        if (c == '(' || c == '[') ++depth;
        if ((c == ')' || c == ']') && --depth == 0) return i;
    }
    return std::string::npos;
}

bool in_comment(const std::string& text, std::size_t at) {
    const std::size_t line = text.rfind('\n', at);
    const std::size_t first =
        text.find_first_not_of(" \t", line == std::string::npos ? 0 : line + 1);
    return first != std::string::npos && first < at && text[first] == '#';
}

// `extern_kernels.<op>(args)`, else `torch.ops.aten.<op>.<overload>(args)`.
ExternCall read_call(bool extern_kernels, std::string_view op, std::string_view overload,
                     std::string_view args, const Names& names) {
    ExternCall call;
    std::vector<std::string_view> positional;
    std::vector<std::pair<std::string_view, std::string_view>> named;
    for (auto part : split(args, ',')) {
        const auto eq = part.find('=');
        const bool keyword = eq != std::string_view::npos && part.find('(') > eq &&
                             (eq + 1 >= part.size() || part[eq + 1] != '=');
        if (keyword)
            named.emplace_back(trim(part.substr(0, eq)), trim(part.substr(eq + 1)));
        else
            positional.push_back(part);
    }
    // `out=`: the replay calls the functional op, which allocates its result.
    std::erase_if(named, [](const auto& kv) { return kv.first == "out"; });
    std::vector<std::string_view> values = positional;
    const auto& ops = extern_ops();
    const std::string aten = "aten::" + std::string(op);
    const auto known = std::find_if(ops.begin(), ops.end(), [&](const ExternOp& o) {
        return extern_kernels ? o.name == op : o.aten == aten;
    });
    if (extern_kernels && known == ops.end()) {
        std::string names_known;
        for (const ExternOp& o : ops)
            if (!o.name.empty())
                names_known += (names_known.empty() ? "" : ", ") + std::string(o.name);
        call.reason = "extern_kernels." + std::string(op) +
                      " is not a library call the replay knows (" + names_known + ")";
        return call;
    }
    call.op.op = extern_kernels ? std::string(known->aten) : aten;
    if (!extern_kernels) call.op.overload = overload == "default" ? "" : std::string(overload);
    // A fallback without keywords is in the schema's order as it is; the rest take their
    // keywords' places, and the defaults of those left out.
    if (known != ops.end() && (extern_kernels || !named.empty())) {
        const auto params = parameters_of(*known);
        if (values.size() > params.size()) {
            call.reason = call.op.op + " with more arguments than it takes";
            return call;
        }
        for (std::size_t i = values.size(); i < params.size(); ++i) {
            const auto& [param, fallback] = params[i];
            const auto given = std::find_if(named.begin(), named.end(),
                                            [&](const auto& kv) { return kv.first == param; });
            if (given != named.end()) {
                values.push_back(given->second);
                named.erase(given);
            } else if (!fallback.empty()) {
                values.push_back(fallback);
            } else {
                call.reason = call.op.op + " without its `" + std::string(param) + "`";
                return call;
            }
        }
    }
    if (!named.empty()) {
        call.reason = call.op.op + " called with keyword argument `" +
                      std::string(named.front().first) +
                      "`, whose place in the schema is not known here";
        return call;
    }
    for (auto value : values) {
        std::string why;
        auto a = argument_of(value, names, why);
        if (!a) {
            call.reason = call.op.op + ": " + why;
            return call;
        }
        call.op.args.push_back(std::move(*a));
    }
    return call;
}

}  // namespace

std::vector<std::pair<std::size_t, ExternCall>> parse_extern_calls(
    const std::string& text, std::map<std::string, WrapperBuffer>& buffers,
    const std::unordered_map<std::string, std::string>& aliases,
    const std::map<std::string, std::int64_t>& input_storages) {
    static const std::regex start(
        R"((extern_kernels)\.(\w+)\(|torch\.ops\.(aten)\.(\w+)\.(\w+)\()");
    static const std::regex result(R"((\w+) = $)");
    static const std::regex first_item(R"((\w+) = (\w+)\[0\])");
    Names names{buffers, aliases, input_storages, {}};
    for (std::sregex_iterator it(text.begin(), text.end(), first_item), end; it != end; ++it)
        names.first_items[(*it)[1].str()] = (*it)[2].str();
    std::vector<std::pair<std::size_t, ExternCall>> calls;
    for (std::sregex_iterator it(text.begin(), text.end(), start), end; it != end; ++it) {
        const auto& m = *it;
        const auto at = static_cast<std::size_t>(m.position());
        if (in_comment(text, at)) continue;
        const std::size_t open = at + static_cast<std::size_t>(m.length()) - 1;
        const std::size_t close = closing(text, open);
        if (close == std::string::npos) continue;
        const bool extern_kernels = m[1].matched;
        const std::string_view args(text.data() + open + 1, close - open - 1);
        ExternCall call = read_call(extern_kernels, extern_kernels ? m[2].str() : m[4].str(),
                                    extern_kernels ? "" : m[5].str(), args, names);
        call.text = text.substr(at, std::min<std::size_t>(close + 1 - at, 160));
        // `buf2 = extern_kernels.convolution(...)`: buf2 is of its input's type (and the first
        // result of `buf13 = torch.ops.aten._scaled_dot_product_cudnn_attention(...)`, buf13[0]).
        const std::size_t line = text.rfind('\n', at) + 1;  // npos + 1 == 0
        const std::string before = text.substr(line, at - line);
        std::smatch assigned;
        const auto first = std::find_if(call.op.args.begin(), call.op.args.end(),
                                        [](const AtenArgument& a) { return !a.tensors.empty(); });
        if (std::regex_search(before, assigned, result) && first != call.op.args.end())
            if (auto b = buffers.try_emplace(assigned[1].str()).first;
                b->second.dtype == DType::Unknown) {
                b->second.dtype = first->tensors[0].dtype;
                if (b->second.elements > 0)
                    b->second.bytes = b->second.elements *
                                      static_cast<std::int64_t>(element_size(b->second.dtype));
            }
        calls.emplace_back(at, std::move(call));
    }
    return calls;
}

namespace {

// The library calls whose kernels lie between the launches that took call sites `after` and
// `before` (either may be absent: the first or last Triton launch of a stream): those after
// `after` up to the next Triton call of its file, then, where `before` is not that call, those
// before `before` back to the Triton call before it.
constexpr std::size_t kNoSite = std::string::npos;

std::vector<std::size_t> externs_between(const InductorCache& cache, std::size_t after,
                                         std::size_t before) {
    std::vector<std::size_t> out;
    const auto& steps = cache.steps;
    std::size_t tail_end = std::string::npos;
    if (after != kNoSite) {
        const std::size_t file = cache.calls[after].file;
        std::size_t i = cache.calls[after].step + 1;
        while (i < steps.size() && steps[i].file == file && !steps[i].triton)
            out.push_back(steps[i++].index);
        tail_end = i;
    }
    if (before != kNoSite) {
        const std::size_t b = cache.calls[before].step;
        if (b == tail_end) return out;
        const std::size_t file = cache.calls[before].file;
        std::size_t j = b;
        while (j > 0 && steps[j - 1].file == file && !steps[j - 1].triton) --j;
        for (; j < b; ++j) out.push_back(steps[j].index);
    }
    return out;
}

Recipe recipe_of(const ExternCall& call, std::string_view kernel) {
    Recipe r;
    if (!call.reason.empty()) {
        r.rule = kRule;
        r.reason = "library call of the Inductor wrapper: " + call.reason;
        return r;
    }
    if (classifier_detail::is_gemm_op(call.op.op)) {
        r = classifier_detail::gemm_or_reason(call.op, kernel, false, kRule);
    } else {
        r.tier = Tier::AtenOp;
        r.rule = kRule;
        r.detail = call.op;
    }
    if (r.replayable()) r.reason = "library call of the Inductor wrapper: " + call.text;
    return r;
}

}  // namespace

ExternStats apply_inductor_externs(const KernelGraph& graph, NodeRecipes& recipes,
                                   const InductorCache& cache, const InductorStats& triton) {
    ExternStats stats;
    if (cache.externs.empty()) return stats;
    std::set<std::string> reasons;
    const auto& nodes = graph.nodes();
    const auto name = [&](std::uint32_t n) {
        return graph.trace().names.view(graph.activity(nodes[n]).name);
    };
    auto fail = [&](std::uint32_t n, const std::string& why) {
        Recipe r = recipes.recipe(n);
        r.reason = why + " (" + r.reason + ")";
        recipes.set(n, r);
        if (reasons.insert(why).second) stats.unmatched_reasons.push_back(why);
    };
    // Which call launched each kernel: one call, all of them; else, where the kernels that are
    // not a library's helpers (helper_kernel) are as many as the calls, one call each, with each
    // helper the call of the main kernel it goes with (cuDNN's workspace init before a
    // convolution, a split-K reduction after a GEMM); else, as many calls as kernels, one each;
    // otherwise none (empty).
    const auto owners = [&](const std::vector<std::size_t>& calls,
                            const std::vector<std::uint32_t>& kernels) {
        using classifier_detail::HelperKernel;
        std::vector<std::size_t> owner(kernels.size(), 0);
        if (calls.size() == 1) return owner;
        std::vector<HelperKernel> helper;
        for (const std::uint32_t n : kernels)
            helper.push_back(classifier_detail::helper_kernel(name(n)));
        const auto mains =
            static_cast<std::size_t>(std::count(helper.begin(), helper.end(), HelperKernel::None));
        if (mains == calls.size()) {
            // Each main kernel numbered in order; a helper before its main takes the next main's
            // call, one after it the previous main's (or the other where there is none).
            std::vector<std::size_t> main_at(kernels.size(), 0);
            std::size_t seen = 0;
            for (std::size_t k = 0; k < kernels.size(); ++k) {
                if (helper[k] == HelperKernel::None) ++seen;
                main_at[k] = seen;  // mains up to and including k
            }
            for (std::size_t k = 0; k < kernels.size(); ++k) {
                const std::size_t before = main_at[k] - (helper[k] == HelperKernel::None);
                if (helper[k] == HelperKernel::None)
                    owner[k] = before;
                else if (helper[k] == HelperKernel::Before)
                    owner[k] = before < mains ? before : mains - 1;
                else
                    owner[k] = before > 0 ? before - 1 : 0;
            }
            return owner;
        }
        if (calls.size() == kernels.size()) {
            std::iota(owner.begin(), owner.end(), std::size_t{0});
            return owner;
        }
        owner.clear();
        return owner;
    };
    // Gives the kernels launched between two Triton launches the library calls there.
    auto resolve = [&](const std::vector<std::uint32_t>& kernels, std::size_t after,
                       std::size_t before) {
        if (kernels.empty() || (after == kNoSite && before == kNoSite)) return;
        const std::vector<std::size_t> calls = externs_between(cache, after, before);
        if (calls.empty()) return;  // no library call there: kernels of something else
        stats.candidates += kernels.size();
        const std::vector<std::size_t> owner = owners(calls, kernels);
        if (owner.empty()) {
            const std::string why = "the Inductor wrapper makes " + std::to_string(calls.size()) +
                                    " library calls where the trace has " +
                                    std::to_string(kernels.size()) +
                                    " kernels without an op between two Triton launches";
            for (const std::uint32_t n : kernels) fail(n, why);
            return;
        }
        for (std::size_t k = 0; k < kernels.size(); ++k) {
            const bool companion = k > 0 && owner[k] == owner[k - 1];
            Recipe r = recipe_of(cache.externs[calls[owner[k]]], name(kernels[k]));
            if (!r.replayable()) {
                fail(kernels[k], r.reason);
                continue;
            }
            if (companion) {
                r.issued_with_op = true;
                r.reason = "issued by its library call's replay (" + r.reason + ")";
            }
            recipes.set(kernels[k], r);
            ++stats.matched;
        }
    };
    for (const StreamTrack& track : graph.streams()) {
        std::size_t last = kNoSite;          // the call site of the last Triton launch
        std::vector<std::uint32_t> pending;  // kernels without an op since
        for (const std::uint32_t n : track.nodes) {
            if (graph.activity(nodes[n]).kind != ActivityKind::Kernel) continue;
            if (const auto site = triton.site_of_node.find(n); site != triton.site_of_node.end()) {
                resolve(pending, last, site->second);
                pending.clear();
                last = site->second;
            } else if (recipes.decision(n).rule == "triton") {  // no call site: no anchor
                resolve(pending, last, kNoSite);
                pending.clear();
                last = kNoSite;
            } else if (lacks_op_recipe(recipes.decision(n))) {
                pending.push_back(n);
            }
        }
        resolve(pending, last, kNoSite);
    }
    return stats;
}

}  // namespace replay
