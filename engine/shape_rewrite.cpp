// --set-dims: labelling a trace's recorded sizes with products of the input's batch and
// sequence length (see shape_rewrite.h for the rules), then rewriting them.
#include "replay/shape_rewrite.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "replay/int_list.h"
#include "replay/recipe_dims.h"
#include "replay/input_error.h"
#include "reshape_copies.h"

namespace replay {
namespace {

using shape_rewrite_detail::ReshapeSite;

// c * b^pb * s^ps; pb = ps = 0 is a constant (left as recorded).
struct Sym {
    std::int8_t pb = 0, ps = 0;
    std::int64_t c = 1;
    bool symbolic() const { return pb > 0 || ps > 0; }
    std::int64_t value(std::int64_t b, std::int64_t s) const {
        std::int64_t v = c;
        for (int i = 0; i < pb; ++i) v *= b;
        for (int i = 0; i < ps; ++i) v *= s;
        return v;
    }
    Sym operator*(const Sym& o) const {
        return {static_cast<std::int8_t>(pb + o.pb), static_cast<std::int8_t>(ps + o.ps), c * o.c};
    }
    bool operator==(const Sym&) const = default;
};
using Labels = std::vector<Sym>;

Sym constant(std::int64_t v) {
    return {0, 0, v};
}

// What an argument's recorded sizes become.
struct ArgPlan {
    Labels dims;        // the tensor's dims (flattened for a TensorList)
    Labels list;        // an integer list in Concrete Inputs
    std::optional<Sym> scalar;
    int stride_of = -1;  // this list holds the strides of the size list of argument stride_of
};
struct OpPlan {
    std::uint32_t op = 0;
    std::vector<ArgPlan> args;
};

bool is_one_of(std::string_view name, std::initializer_list<std::string_view> names) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

bool view_like(std::string_view op) {
    return is_one_of(op, {"aten::view", "aten::reshape", "aten::_reshape_alias",
                          "aten::_unsafe_view"});
}

// Which argument holds the strides of which size list.
int stride_list_of(std::string_view op, std::size_t arg) {
    if ((op == "aten::as_strided" || op == "aten::_reshape_alias" || op == "aten::as_strided_") && arg == 2)
        return 1;
    if (op == "aten::empty_strided" && arg == 1) return 0;
    return -1;
}

// A reshape whose input, rewritten, no longer allows a view of the target sizes copies it: the
// rewritten input (what the copy reads), with the copy's layout noted in `copied` for the
// tensors recorded as views of the result; nullopt when it stays a view.
std::optional<OpArgument> reshape_copy(const OpShapes& recorded, const OpShapes& rewritten,
                                       const StringPool& names, shape_rewrite_detail::LayoutRemaps& copied) {
    using namespace shape_rewrite_detail;
    if (recorded.inputs.size() < 2 || rewritten.inputs.size() < 2) return std::nullopt;
    const OpArgument& before = recorded.inputs[0];
    const OpArgument& after = rewritten.inputs[0];
    const auto old_list = parse_int_list(names.view(recorded.inputs[1].concrete));
    const auto new_list = parse_int_list(names.view(rewritten.inputs[1].concrete));
    if (!before.has_strides || !after.has_strides || !before.list_ranks.empty() || !old_list || !new_list)
        return std::nullopt;
    const auto old_target = resolve_size_list(before.dims, *old_list);
    const auto new_target = resolve_size_list(after.dims, *new_list);
    const auto recorded_view = view_strides(before.dims, before.strides, old_target);
    if (!recorded_view || view_strides(after.dims, after.strides, new_target)) return std::nullopt;
    copied.add(old_target, *recorded_view, contiguous_strides(new_target));
    return after;
}

}  // namespace

struct ShapeRewriter::Plan {
    std::int64_t b = 1, s = 1;
    std::string input_op;
    std::vector<OpShapes> pristine;
    std::vector<std::uint32_t> pristine_index;  // per cpu op
    std::vector<OpPlan> ops;
    std::map<std::string, std::size_t> ambiguous;  // description -> dims
    std::map<std::vector<std::int64_t>, Labels> produced;  // dims -> labels of the latest tensor
    // Reshapes recorded as views (reshape_copies.h), by reshape op, and what apply() restores
    // before adding their copies: the trace's event counts and the view ops' names.
    std::vector<ReshapeSite> reshapes;
    std::map<std::uint32_t, std::size_t> reshape_of_op;
    std::vector<NameId> view_names;
    std::size_t recorded_ops = 0, recorded_calls = 0, recorded_activities = 0;
    std::int64_t first_free_correlation = 1;

    // ---- labelling by value ----------------------------------------------------------------

    // The labels of a tensor's dims known only by value: batch first (see the header).
    Labels by_value(const std::vector<std::int64_t>& dims, const std::string& where) {
        Labels out(dims.size());
        bool has_seq = false;
        for (auto d : dims) has_seq |= s > 1 && (d == s || d == s * s || d == b * s);
        bool batch_placed = false;
        for (std::size_t j = 0; j < dims.size(); ++j) {
            const std::int64_t d = dims[j];
            if (s > 1 && d == s * s && b == 1) out[j] = {0, 2, 1};
            else if (s > 1 && d == s) out[j] = {0, 1, 1};
            else if (b > 1 && s > 1 && d == b * s) { out[j] = {1, 1, 1}; batch_placed = true; }
            else if (b > 1 && d == b) { out[j] = {1, 0, 1}; batch_placed = true; }
            else out[j] = constant(d);
        }
        if (has_seq && !batch_placed && !dims.empty()) {
            // The leading dim carries the batch: a 1 is b, a seq-sized one b*s, 16 is 16*b.
            Sym& lead = out[0];
            if (b == 1) lead = lead.symbolic() ? lead * Sym{1, 0, 1} : Sym{1, 0, dims[0]};
            else if (!lead.symbolic() && dims[0] % b == 0) lead = Sym{1, 0, dims[0] / b};
            else if (!lead.symbolic()) ambiguous[where + " dim 0 = " + std::to_string(dims[0]) +
                                                 ": a leading dim that is no multiple of the batch"]++;
        }
        if (b == 1 && has_seq)
            for (std::size_t j = 1; j < dims.size(); ++j)
                if (dims[j] == 1 && !out[j].symbolic())
                    ambiguous[where + " dim " + std::to_string(j) +
                              " = 1: the batch (1) or a size-1 dim; kept"]++;
        return out;
    }

    Labels tensor_labels(const std::vector<std::int64_t>& dims, const std::string& where) {
        if (auto it = produced.find(dims); it != produced.end()) return it->second;
        return by_value(dims, where);
    }

    // ---- labelling by alignment ------------------------------------------------------------

    // A view's size list from its input's labelled dims: runs of dims with equal products are
    // matched; a run of target dims that splits one input dim shares out its b and s factors,
    // leftmost first, by value.
    Labels align(const std::vector<std::int64_t>& in, const Labels& in_labels,
                 std::vector<std::int64_t> target, const std::string& where) {
        std::int64_t numel = 1;
        for (auto d : in) numel *= d;
        std::int64_t known = 1;
        int infer = -1;
        for (std::size_t j = 0; j < target.size(); ++j) {
            if (target[j] == -1) infer = static_cast<int>(j);
            else known *= target[j];
        }
        if (infer >= 0 && known > 0) target[static_cast<std::size_t>(infer)] = numel / known;
        Labels out(target.size());
        for (std::size_t j = 0; j < target.size(); ++j) out[j] = constant(target[j]);
        std::size_t i = 0, j = 0;
        while (i < in.size() || j < target.size()) {
            // Skip size-1 dims on the target side that the input lacks, and vice versa.
            std::size_t i0 = i, j0 = j;
            std::int64_t pi = i < in.size() ? in[i++] : 1, pj = j < target.size() ? target[j++] : 1;
            while (pi != pj) {
                if (pi < pj && i < in.size()) pi *= in[i++];
                else if (pj < pi && j < target.size()) pj *= target[j++];
                else {
                    ambiguous[where + ": sizes that do not line up with the input's"]++;
                    return by_value(target, where);
                }
            }
            Sym group{0, 0, 1};
            for (std::size_t k = i0; k < i; ++k) group = group * in_labels[k];
            if (!group.symbolic()) continue;
            if (j - j0 == 1) {
                out[j0] = group;
                continue;
            }
            // Share b and s out over the target dims of this run.
            std::vector<std::int64_t> rest(target.begin() + static_cast<std::ptrdiff_t>(j0),
                                           target.begin() + static_cast<std::ptrdiff_t>(j));
            Labels parts(rest.size(), Sym{0, 0, 1});
            const auto place = [&](Sym factor, std::int64_t value, int count) {
                for (int n = 0; n < count; ++n) {
                    bool done = false;
                    for (std::size_t k = 0; k < rest.size() && !done; ++k)
                        if (value > 0 && rest[k] % value == 0 && (value > 1 || parts[k] == Sym{0, 0, 1})) {
                            parts[k] = parts[k] * factor;
                            rest[k] /= value;
                            done = true;
                        }
                    if (!done) ambiguous[where + ": a batch or seq factor that no dim of the view holds"]++;
                }
            };
            place({0, 1, 1}, s, group.ps);
            place({1, 0, 1}, b, group.pb);
            for (std::size_t k = 0; k < rest.size(); ++k) {
                Sym p = parts[k];
                p.c = rest[k];
                out[j0 + k] = p.symbolic() ? p : constant(target[j0 + k]);
            }
        }
        return out;
    }

    // An integer list of an allocation or any other op, from the enclosing op's labelled inputs.
    Labels from_parent(const std::vector<std::int64_t>& list, const OpPlan* parent,
                       const std::vector<std::vector<std::int64_t>>& parent_dims,
                       const std::string& where) {
        if (parent != nullptr) {
            for (std::size_t a = 0; a < parent->args.size(); ++a)
                if (!parent->args[a].dims.empty() && parent_dims[a] == list) return parent->args[a].dims;
            // A transpose, select, unsqueeze or expand of the input: each size is one of its
            // dims (the same position first), each dim used once; -1 and new 1s stay as they
            // are (the 1 that unsqueeze(1) puts after a batch of 1 is not the batch again).
            for (std::size_t a = 0; a < parent->args.size(); ++a) {
                const Labels& labels = parent->args[a].dims;
                if (labels.empty() || parent_dims[a].size() + 1 < list.size() ||
                    list.size() + 1 < parent_dims[a].size())
                    continue;
                Labels out(list.size());
                std::vector<bool> used(parent_dims[a].size(), false);
                bool all = true;
                for (std::size_t j = 0; j < list.size() && all; ++j) {
                    out[j] = constant(list[j]);
                    if (list[j] == -1) continue;
                    std::optional<std::size_t> found;
                    if (j < parent_dims[a].size() && parent_dims[a][j] == list[j]) found = j;
                    for (std::size_t k = 0; k < parent_dims[a].size() && !found; ++k)
                        if (!used[k] && parent_dims[a][k] == list[j]) found = k;
                    if (found) {
                        out[j] = labels[*found];
                        used[*found] = true;
                    } else {
                        all = list[j] == 1;
                    }
                }
                if (all) return out;
                break;
            }
            for (std::size_t a = 0; a < parent->args.size(); ++a)
                if (!parent->args[a].dims.empty()) {
                    // The product of leading dims (a layer norm's per-row statistics).
                    Labels out(list.size());
                    bool all = true;
                    std::size_t k = 0;
                    for (std::size_t j = 0; j < list.size() && all; ++j) {
                        std::int64_t p = 1;
                        Sym sym{0, 0, 1};
                        while (k < parent_dims[a].size() && p < list[j]) {
                            p *= parent_dims[a][k];
                            sym = sym * parent->args[a].dims[k++];
                        }
                        all = p == list[j];
                        out[j] = sym.symbolic() ? sym : constant(list[j]);
                    }
                    if (all) return out;
                    break;
                }
            Labels out(list.size());
            bool any = false;
            for (std::size_t j = 0; j < list.size(); ++j) {
                out[j] = constant(list[j]);
                for (const auto& arg : parent->args)
                    if (arg.scalar && arg.scalar->symbolic() && arg.scalar->value(b, s) == list[j]) {
                        out[j] = *arg.scalar;
                        any = true;
                    }
            }
            if (any) return out;
        }
        return by_value(list, where);
    }

    std::optional<Sym> scalar_label(std::int64_t v) const {
        if (s > 1 && v == s) return Sym{0, 1, 1};
        if (b > 1 && v == b) return Sym{1, 0, 1};
        if (b > 1 && s > 1 && v == b * s) return Sym{1, 1, 1};
        return std::nullopt;
    }

    void label(const Trace& trace);
};

void ShapeRewriter::Plan::label(const Trace& trace) {
    std::vector<std::uint32_t> order(trace.cpu_ops.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t x, std::uint32_t y) {
        const CpuOp& a = trace.cpu_ops[x];
        const CpuOp& c = trace.cpu_ops[y];
        if (a.ts != c.ts) return a.ts < c.ts;
        return a.dur > c.dur;
    });
    std::vector<int> plan_of(trace.cpu_ops.size(), -1);
    bool seeded = false;
    for (std::uint32_t index : order) {
        const CpuOp& op = trace.cpu_ops[index];
        if (op.shapes == kNoIndex || op.shapes >= trace.op_shapes.size()) continue;
        const OpShapes& shapes = trace.op_shapes[op.shapes];
        const std::string name(trace.names.view(op.name));
        if (!seeded) {
            if (name != "aten::embedding") continue;
            for (const auto& arg : shapes.inputs)
                if (arg.dims.size() == 2 && arg.list_ranks.empty() &&
                    dtype_from_kineto(trace.names.view(arg.type)) == DType::Int64) {
                    b = arg.dims[0];
                    s = arg.dims[1];
                    seeded = true;
                    input_op = name;
                    produced[arg.dims] = Labels{{1, 0, 1}, {0, 1, 1}};
                }
            if (!seeded) continue;
        }
        const OpPlan* parent = nullptr;
        std::vector<std::vector<std::int64_t>> parent_dims;
        if (op.parent != kNoIndex && plan_of[op.parent] >= 0) {
            parent = &ops[static_cast<std::size_t>(plan_of[op.parent])];
            for (const auto& arg : trace.op_shapes[trace.cpu_ops[op.parent].shapes].inputs)
                parent_dims.push_back(arg.dims);
        }
        OpPlan plan;
        plan.op = index;
        const std::string where = name;
        for (std::size_t a = 0; a < shapes.inputs.size(); ++a) {
            const OpArgument& arg = shapes.inputs[a];
            ArgPlan p;
            const std::string at = where + " arg " + std::to_string(a);
            if (!arg.dims.empty()) {
                if (arg.list_ranks.empty()) {
                    p.dims = tensor_labels(arg.dims, at);
                } else {
                    std::size_t k = 0;
                    for (auto rank : arg.list_ranks) {
                        std::vector<std::int64_t> one(arg.dims.begin() + static_cast<std::ptrdiff_t>(k),
                                                      arg.dims.begin() + static_cast<std::ptrdiff_t>(k + rank));
                        for (const auto& l : tensor_labels(one, at)) p.dims.push_back(l);
                        k += rank;
                    }
                }
            }
            const std::string_view concrete = trace.names.view(arg.concrete);
            if (auto list = parse_int_list(concrete); list && !list->empty()) {
                p.stride_of = stride_list_of(name, a);
                if (p.stride_of < 0) {
                    if (view_like(name) && a == 1 && !shapes.inputs.empty() && !plan.args.empty())
                        p.list = align(shapes.inputs[0].dims, plan.args[0].dims,
                                       *list, at);
                    else if ((name == "aten::as_strided" || name == "aten::expand") && a == 1 && !plan.args.empty())
                        p.list = from_parent(*list, &plan, {shapes.inputs[0].dims}, at);
                    else
                        p.list = from_parent(*list, parent, parent_dims, at);
                }
            } else if (auto v = parse_int(concrete)) {
                p.scalar = scalar_label(*v);
            }
            plan.args.push_back(std::move(p));
        }
        // What this op produces: the size lists of views and allocations.
        for (std::size_t a = 0; a < plan.args.size(); ++a)
            if (!plan.args[a].list.empty() && plan.args[a].stride_of < 0)
                if (auto list = parse_int_list(trace.names.view(shapes.inputs[a].concrete))) {
                    std::vector<std::int64_t> dims = *list;
                    for (std::size_t j = 0; j < dims.size(); ++j)
                        if (dims[j] == -1) dims[j] = plan.args[a].list[j].value(b, s);
                    produced[dims] = plan.args[a].list;
                }
        plan_of[index] = static_cast<int>(ops.size());
        ops.push_back(std::move(plan));
    }
    if (!seeded)
        throw InputError(trace.source, 0,
                         "--set-dims: no aten::embedding with [batch, seq] int64 indices in the trace "
                         "(recorded with record_shapes?): cannot tell the model input's batch and seq");
}

DimsRequest parse_set_dims(std::string_view text) {
    DimsRequest r;
    const auto bad = [&](const std::string& why) {
        return std::invalid_argument("--set-dims " + std::string(text) + ": " + why +
                                     " (expected batch=N,seq=N, either alone, N >= 1)");
    };
    std::size_t start = 0;
    while (start <= text.size()) {
        const auto comma = text.find(',', start);
        const std::string_view item = text.substr(start, comma == text.npos ? text.npos : comma - start);
        const auto eq = item.find('=');
        if (eq == item.npos) throw bad("no '=' in '" + std::string(item) + "'");
        const auto value = parse_int(item.substr(eq + 1));
        if (!value || *value < 1) throw bad("'" + std::string(item.substr(eq + 1)) + "' is not an integer >= 1");
        const std::string_view key = item.substr(0, eq);
        if (key == "batch" || key == "b") r.batch = *value;
        else if (key == "seq" || key == "s") r.seq = *value;
        else throw bad("unknown dim '" + std::string(key) + "'");
        if (comma == text.npos) break;
        start = comma + 1;
    }
    return r;
}

std::string describe(const ShapeRewriteReport& r) {
    std::ostringstream out;
    out << "--set-dims: input " << r.input_op << " [batch " << r.batch_from << ", seq " << r.seq_from
        << "] -> [batch " << r.batch_to << ", seq " << r.seq_to << "]: " << r.dims_rewritten
        << " recorded sizes rewritten in " << r.ops_changed << " ops; " << r.ambiguous_dims
        << " left as recorded (ambiguous)";
    if (r.reshape_copies > 0)
        out << "; " << r.reshape_copies
            << " reshapes recorded as views copy at the new shape (their input's layout allows no view): an "
               "aten::copy_ kernel added for each (recorded 0 us)";
    for (const auto& line : r.ambiguous) out << "\n  ambiguous: " << line;
    // What no recorded size can say, in every rewrite.
    out << "\n  not inferred: which kernel a library or PyTorch picks at the new sizes (a cuBLAS "
           "algorithm, index_select's gather path: the replay runs what they pick), and ops PyTorch "
           "did not record at the recorded shape (a contiguous() of a tensor that was contiguous then)";
    return out.str();
}

ShapeRewriter::ShapeRewriter(const Trace& trace) : plan_(std::make_unique<Plan>()) {
    Plan& p = *plan_;
    p.pristine = trace.op_shapes;
    for (const auto& op : trace.cpu_ops) p.pristine_index.push_back(op.shapes);
    p.label(trace);
    p.recorded_ops = trace.cpu_ops.size();
    p.recorded_calls = trace.runtime_calls.size();
    p.recorded_activities = trace.activities.size();
    p.reshapes = shape_rewrite_detail::find_reshape_sites(trace);
    for (std::size_t i = 0; i < p.reshapes.size(); ++i) {
        p.reshape_of_op[p.reshapes[i].reshape] = i;
        p.view_names.push_back(trace.cpu_ops[p.reshapes[i].view].name);
    }
    for (const auto& a : trace.activities) p.first_free_correlation = std::max(p.first_free_correlation, a.correlation + 1);
    for (const auto& c : trace.runtime_calls) p.first_free_correlation = std::max(p.first_free_correlation, c.correlation + 1);
}
ShapeRewriter::~ShapeRewriter() = default;
ShapeRewriter::ShapeRewriter(ShapeRewriter&&) noexcept = default;
ShapeRewriter& ShapeRewriter::operator=(ShapeRewriter&&) noexcept = default;
std::int64_t ShapeRewriter::batch() const { return plan_->b; }
std::int64_t ShapeRewriter::seq() const { return plan_->s; }

ShapeRewriteReport ShapeRewriter::apply(Trace& trace, const DimsRequest& request) const {
    const Plan& p = *plan_;
    ShapeRewriteReport report;
    report.input_op = p.input_op;
    report.batch_from = p.b;
    report.seq_from = p.s;
    report.batch_to = request.batch.value_or(p.b);
    report.seq_to = request.seq.value_or(p.s);
    for (const auto& [line, count] : p.ambiguous) {
        report.ambiguous.push_back(line + (count > 1 ? " (x" + std::to_string(count) + ")" : ""));
        report.ambiguous_dims += count;
    }
    trace.op_shapes = p.pristine;
    // Events an earlier apply() added go, view ops get their recorded names back.
    trace.cpu_ops.resize(std::min(trace.cpu_ops.size(), p.recorded_ops));
    trace.runtime_calls.resize(std::min(trace.runtime_calls.size(), p.recorded_calls));
    trace.activities.resize(std::min(trace.activities.size(), p.recorded_activities));
    for (std::size_t i = 0; i < p.reshapes.size(); ++i) trace.cpu_ops[p.reshapes[i].view].name = p.view_names[i];
    for (std::size_t i = 0; i < trace.cpu_ops.size() && i < p.pristine_index.size(); ++i)
        trace.cpu_ops[i].shapes = p.pristine_index[i];
    const std::int64_t B = report.batch_to, S = report.seq_to;
    if (B == p.b && S == p.s) return report;
    shape_rewrite_detail::LayoutRemaps copied;
    std::vector<std::pair<const ReshapeSite*, OpArgument>> copies;  // the reshapes that copy
    for (const OpPlan& plan : p.ops) {
        CpuOp& op = trace.cpu_ops[plan.op];
        OpShapes shapes = p.pristine[p.pristine_index[plan.op]];
        std::size_t changed = 0;
        const auto value = [&](const Sym& l, std::int64_t old) {
            const std::int64_t v = l.symbolic() ? l.value(B, S) : old;
            changed += v != old;
            return v;
        };
        std::vector<std::optional<std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>>>> lists(
            shapes.inputs.size());  // (old, new) size lists, for their stride lists
        for (std::size_t a = 0; a < plan.args.size() && a < shapes.inputs.size(); ++a) {
            OpArgument& arg = shapes.inputs[a];
            const ArgPlan& ap = plan.args[a];
            if (ap.dims.size() == arg.dims.size() && !arg.dims.empty()) {
                const auto old = arg.dims;
                for (std::size_t j = 0; j < arg.dims.size(); ++j) arg.dims[j] = value(ap.dims[j], old[j]);
                if (arg.has_strides && arg.strides.size() == old.size() && arg.list_ranks.empty()) {
                    // A view of a reshape's copy has the copy's layout, not the recorded one's.
                    auto fresh = copied.find(old, arg.strides);
                    if (!fresh && old != arg.dims) fresh = restride(old, arg.strides, arg.dims);
                    if (fresh && *fresh != arg.strides) {
                        arg.strides = std::move(*fresh);
                        ++changed;
                    }
                }
            }
            const std::string_view concrete = trace.names.view(arg.concrete);
            if (!ap.list.empty())
                if (auto list = parse_int_list(concrete); list && list->size() == ap.list.size()) {
                    const auto old = *list;
                    for (std::size_t j = 0; j < list->size(); ++j)
                        if ((*list)[j] != -1) (*list)[j] = value(ap.list[j], old[j]);
                    lists[a] = std::make_pair(old, *list);
                    if (old != *list) arg.concrete = trace.names.intern(format_int_list(*list));
                }
            if (ap.scalar)
                if (auto v = parse_int(concrete)) {
                    const std::int64_t n = value(*ap.scalar, *v);
                    if (n != *v) arg.concrete = trace.names.intern(std::to_string(n));
                }
        }
        for (std::size_t a = 0; a < plan.args.size() && a < shapes.inputs.size(); ++a) {
            const int of = plan.args[a].stride_of;
            if (of < 0 || static_cast<std::size_t>(of) >= lists.size() || !lists[static_cast<std::size_t>(of)]) continue;
            const auto& [old_sizes, new_sizes] = *lists[static_cast<std::size_t>(of)];
            auto strides = parse_int_list(trace.names.view(shapes.inputs[a].concrete));
            if (!strides || strides->size() != old_sizes.size()) continue;
            auto fresh = copied.find(old_sizes, *strides);
            if (!fresh && old_sizes != new_sizes) fresh = restride(old_sizes, *strides, new_sizes);
            if (fresh && *fresh != *strides) {
                shapes.inputs[a].concrete = trace.names.intern(format_int_list(*fresh));
                ++changed;
            }
        }
        if (auto site = p.reshape_of_op.find(plan.op); site != p.reshape_of_op.end())
            if (auto copy = reshape_copy(p.pristine[p.pristine_index[plan.op]], shapes, trace.names, copied))
                copies.emplace_back(&p.reshapes[site->second], std::move(*copy));
        if (changed == 0) continue;
        report.dims_rewritten += changed;
        ++report.ops_changed;
        op.shapes = static_cast<std::uint32_t>(trace.op_shapes.size());
        trace.op_shapes.push_back(std::move(shapes));
    }
    for (const auto& [site, input] : copies)
        shape_rewrite_detail::add_reshape_copy(trace, *site, input,
                                               p.first_free_correlation + static_cast<std::int64_t>(report.reshape_copies++));
    return report;
}

}  // namespace replay
