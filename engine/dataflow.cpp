#include "replay/dataflow.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <unordered_map>

#include "replay/recipe.h"

namespace replay {
namespace {

using Dims = std::vector<std::int64_t>;

bool is_tensor_input(const Trace& trace, const OpArgument& arg) {
    if (!arg.list_ranks.empty()) return false;
    return dtype_from_kineto(trace.names.view(arg.type)) != DType::Unknown;
}

std::int64_t numel(const Dims& dims) {
    std::int64_t n = 1;
    for (auto d : dims) n *= std::max<std::int64_t>(d, 0);
    return n;
}

// Ops whose output is a view of input 0: they write nothing.
bool is_view_op(std::string_view name) {
    static constexpr std::string_view kViews[] = {
        "aten::view",      "aten::reshape",   "aten::_unsafe_view", "aten::expand",
        "aten::t",         "aten::transpose", "aten::permute",      "aten::unsqueeze",
        "aten::squeeze",   "aten::select",    "aten::slice",        "aten::as_strided",
        "aten::alias",     "aten::detach",    "aten::view_as",      "aten::expand_as",
        "aten::narrow",    "aten::flatten",   "aten::unflatten",    "aten::contiguous",
        "aten::numpy_T",   "aten::lift_fresh", "aten::unbind",      "aten::split",
        "aten::chunk",     "aten::split_with_sizes", "aten::diagonal", "aten::unfold"};
    return std::find(std::begin(kViews), std::end(kViews), name) != std::end(kViews);
}

// In-place ops (aten::add_, aten::copy_, aten::resize_) write input 0 and return it.
bool is_in_place_op(std::string_view name) {
    return name.starts_with("aten::") && name.size() > 7 && name.back() == '_' &&
           name[name.size() - 2] != '_';
}

std::optional<std::int64_t> parse_int(std::string_view text) {
    while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc()) return std::nullopt;
    return v;
}

std::optional<Dims> parse_list(std::string_view text) {
    if (text.size() < 2 || text.front() != '[' || text.back() != ']') return std::nullopt;
    text = text.substr(1, text.size() - 2);
    Dims out;
    while (!text.empty()) {
        const auto comma = text.find(',');
        auto v = parse_int(text.substr(0, comma));
        if (!v) return std::nullopt;
        out.push_back(*v);
        if (comma == std::string_view::npos) break;
        text.remove_prefix(comma + 1);
    }
    return out;
}

std::int64_t wrap_dim(std::int64_t dim, std::size_t rank) {
    return dim < 0 ? dim + static_cast<std::int64_t>(rank) : dim;
}

Dims broadcast(const Dims& a, const Dims& b) {
    Dims out(std::max(a.size(), b.size()), 1);
    for (std::size_t i = 0; i < out.size(); ++i) {
        const std::int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
        const std::int64_t y = i < b.size() ? b[b.size() - 1 - i] : 1;
        out[out.size() - 1 - i] = x == 1 ? y : x;
    }
    return out;
}

// The dims of an op's (first) output where the op's recorded inputs tell them.
std::optional<Dims> output_dims(const Trace& trace, std::string_view name, const OpShapes& s) {
    auto concrete = [&](std::size_t i) -> std::string_view {
        return i < s.inputs.size() ? trace.names.view(s.inputs[i].concrete) : std::string_view();
    };
    auto dims = [&](std::size_t i) -> const Dims* {
        return i < s.inputs.size() && is_tensor_input(trace, s.inputs[i]) ? &s.inputs[i].dims
                                                                          : nullptr;
    };
    const Dims* in0 = dims(0);
    if (name == "aten::empty" || name == "aten::zeros" || name == "aten::ones" ||
        name == "aten::full" || name == "aten::empty_strided" || name == "aten::randn" ||
        name == "aten::rand")
        return parse_list(concrete(0));
    if (in0 == nullptr) return std::nullopt;
    const std::size_t rank = in0->size();
    if (name == "aten::view" || name == "aten::reshape" || name == "aten::_unsafe_view" ||
        name == "aten::expand" || name == "aten::resize_" || name == "aten::as_strided" ||
        name == "aten::new_empty" || name == "aten::new_zeros" || name == "aten::empty_like") {
        if (name == "aten::empty_like") return *in0;
        auto out = parse_list(concrete(1));
        if (!out) return std::nullopt;
        std::int64_t known = 1, unknown = -1;
        for (std::size_t i = 0; i < out->size(); ++i) {
            if ((*out)[i] == -1 && name == "aten::expand" && i + rank >= out->size())
                (*out)[i] = (*in0)[i + rank - out->size()];
            else if ((*out)[i] == -1)
                unknown = static_cast<std::int64_t>(i);
            else
                known *= (*out)[i];
        }
        if (unknown >= 0 && known > 0) (*out)[static_cast<std::size_t>(unknown)] = numel(*in0) / known;
        return out;
    }
    if (name == "aten::t") return rank == 2 ? Dims{(*in0)[1], (*in0)[0]} : *in0;
    if (name == "aten::transpose") {
        auto a = parse_int(concrete(1)), b = parse_int(concrete(2));
        if (!a || !b) return std::nullopt;
        Dims out = *in0;
        const auto i = wrap_dim(*a, rank), j = wrap_dim(*b, rank);
        if (i < 0 || j < 0 || i >= static_cast<std::int64_t>(rank) ||
            j >= static_cast<std::int64_t>(rank))
            return std::nullopt;
        std::swap(out[static_cast<std::size_t>(i)], out[static_cast<std::size_t>(j)]);
        return out;
    }
    if (name == "aten::permute") {
        auto order = parse_list(concrete(1));
        if (!order || order->size() != rank) return std::nullopt;
        Dims out;
        for (auto d : *order) {
            const auto i = wrap_dim(d, rank);
            if (i < 0 || i >= static_cast<std::int64_t>(rank)) return std::nullopt;
            out.push_back((*in0)[static_cast<std::size_t>(i)]);
        }
        return out;
    }
    if (name == "aten::unsqueeze") {
        auto d = parse_int(concrete(1));
        if (!d) return std::nullopt;
        const auto at = wrap_dim(*d, rank + 1);
        if (at < 0 || at > static_cast<std::int64_t>(rank)) return std::nullopt;
        Dims out = *in0;
        out.insert(out.begin() + at, 1);
        return out;
    }
    if (name == "aten::select") {
        auto d = parse_int(concrete(1));
        if (!d) return std::nullopt;
        const auto at = wrap_dim(*d, rank);
        if (at < 0 || at >= static_cast<std::int64_t>(rank)) return std::nullopt;
        Dims out = *in0;
        out.erase(out.begin() + at);
        return out;
    }
    if (name == "aten::slice") {
        auto d = parse_int(concrete(1)), start = parse_int(concrete(2)), end = parse_int(concrete(3));
        auto step = parse_int(concrete(4));
        if (!d || !start || !end) return std::nullopt;
        const auto at = wrap_dim(*d, rank);
        if (at < 0 || at >= static_cast<std::int64_t>(rank)) return std::nullopt;
        Dims out = *in0;
        const std::int64_t size = out[static_cast<std::size_t>(at)];
        auto clamp = [&](std::int64_t v) {
            if (v < 0) v += size;
            return std::clamp<std::int64_t>(v, 0, size);
        };
        const std::int64_t s = clamp(*start), e = clamp(*end), k = step.value_or(1);
        out[static_cast<std::size_t>(at)] = e > s && k > 0 ? (e - s + k - 1) / k : 0;
        return out;
    }
    if (name == "aten::mm" || name == "aten::addmm") {
        const Dims* a = dims(name == "aten::mm" ? 0 : 1);
        const Dims* b = dims(name == "aten::mm" ? 1 : 2);
        if (a == nullptr || b == nullptr || a->size() != 2 || b->size() != 2) return std::nullopt;
        return Dims{(*a)[0], (*b)[1]};
    }
    if (name == "aten::bmm" || name == "aten::baddbmm") {
        const Dims* a = dims(name == "aten::bmm" ? 0 : 1);
        const Dims* b = dims(name == "aten::bmm" ? 1 : 2);
        if (a == nullptr || b == nullptr || a->size() != 3 || b->size() != 3) return std::nullopt;
        return Dims{(*a)[0], (*a)[1], (*b)[2]};
    }
    if (name == "aten::linear") {
        const Dims* w = dims(1);
        if (w == nullptr || w->size() != 2 || rank == 0) return std::nullopt;
        Dims out = *in0;
        out.back() = (*w)[0];
        return out;
    }
    if (name == "aten::matmul") {
        const Dims* b = dims(1);
        if (b == nullptr || b->size() < 2 || rank < 2) return std::nullopt;
        Dims batch = broadcast(Dims(in0->begin(), in0->end() - 2), Dims(b->begin(), b->end() - 2));
        batch.push_back((*in0)[rank - 2]);
        batch.push_back(b->back());
        return batch;
    }
    if (name == "aten::embedding") {
        const Dims* idx = dims(1);
        if (idx == nullptr || rank != 2) return std::nullopt;
        Dims out = *idx;
        out.push_back((*in0)[1]);
        return out;
    }
    if (name == "aten::index_select") {
        const Dims* idx = dims(2);
        auto d = parse_int(concrete(1));
        if (idx == nullptr || !d) return std::nullopt;
        const auto at = wrap_dim(*d, rank);
        if (at < 0 || at >= static_cast<std::int64_t>(rank)) return std::nullopt;
        Dims out = *in0;
        out[static_cast<std::size_t>(at)] = numel(*idx);
        return out;
    }
    if (name == "aten::sum" || name == "aten::mean" || name == "aten::amax" ||
        name == "aten::amin") {
        auto reduced = parse_list(concrete(1));
        if (!reduced) return s.inputs.size() == 1 || concrete(1).empty() ? std::optional<Dims>(Dims{})
                                                                          : std::nullopt;
        const bool keep = concrete(2) == "True";
        Dims out;
        for (std::size_t i = 0; i < rank; ++i) {
            const bool gone = std::any_of(reduced->begin(), reduced->end(), [&](std::int64_t d) {
                return wrap_dim(d, rank) == static_cast<std::int64_t>(i);
            });
            if (!gone)
                out.push_back((*in0)[i]);
            else if (keep)
                out.push_back(1);
        }
        return out;
    }
    // Elementwise and normalising ops, the common case: the inputs broadcast together.
    Dims out = *in0;
    for (std::size_t i = 1; i < s.inputs.size(); ++i)
        if (const Dims* d = dims(i)) out = broadcast(out, *d);
    return out;
}

// The storage id ranges of one process: inferred ids never collide with recorded ones.
constexpr std::int64_t kFirstInferredStorage = 1;

struct Output {
    Dims dims;
    NameId dtype = StringPool::kEmpty;  // kEmpty: any (conversions, creation ops)
    std::int64_t storage = kNoId;
    std::uint32_t producer = kNoIndex;  // Trace::cpu_ops
};

// ProfilerStep#N ranges: an op's step, so that a step does not read the previous step's outputs.
class Steps {
  public:
    explicit Steps(const Trace& trace) {
        for (const CpuOp& op : trace.cpu_ops)
            if (trace.names.view(op.name).starts_with("ProfilerStep#")) starts_.push_back(op.ts);
        std::sort(starts_.begin(), starts_.end());
    }
    std::size_t of(Nanos ts) const {
        return static_cast<std::size_t>(std::upper_bound(starts_.begin(), starts_.end(), ts) -
                                        starts_.begin());
    }

  private:
    std::vector<Nanos> starts_;
};

// Ops with recorded shapes grouped by thread, each thread's in start order (outer first).
std::vector<std::vector<std::uint32_t>> ops_by_thread(const Trace& trace) {
    std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::uint32_t>> threads;
    for (std::uint32_t i = 0; i < trace.cpu_ops.size(); ++i) {
        const CpuOp& op = trace.cpu_ops[i];
        if (op.category == 0 && op.shapes != kNoIndex) threads[{op.pid, op.tid}].push_back(i);
    }
    std::vector<std::vector<std::uint32_t>> out;
    for (auto& [key, ops] : threads) {
        std::stable_sort(ops.begin(), ops.end(), [&](std::uint32_t a, std::uint32_t b) {
            const CpuOp& x = trace.cpu_ops[a];
            const CpuOp& y = trace.cpu_ops[b];
            return x.ts != y.ts ? x.ts < y.ts : x.dur > y.dur;
        });
        out.push_back(std::move(ops));
    }
    // The thread that started first first: the forward pass before autograd's thread.
    std::sort(out.begin(), out.end(), [&](const auto& a, const auto& b) {
        return trace.cpu_ops[a.front()].ts < trace.cpu_ops[b.front()].ts;
    });
    return out;
}

bool has_storage_ids(const Trace& trace) {
    for (const OpShapes& s : trace.op_shapes)
        for (const OpArgument& a : s.inputs)
            if (a.storage_id != kNoId) return true;
    return false;
}

bool has_tensor_shapes(const Trace& trace) {
    for (const OpShapes& s : trace.op_shapes)
        for (const OpArgument& a : s.inputs)
            if (is_tensor_input(trace, a)) return true;
    return false;
}

std::int64_t tensor_bytes(const Trace& trace, const Dims& dims, NameId type) {
    const DType d = dtype_from_kineto(trace.names.view(type));
    return numel(dims) * static_cast<std::int64_t>(element_size(d == DType::Unknown ? DType::Float32 : d));
}

// One thread's pass: storages assigned at each op's start, its output registered at its end.
class ThreadPass {
  public:
    ThreadPass(Trace& trace, const Steps& steps, DataflowSummary& summary,
               std::map<std::tuple<NameId, std::size_t, Dims, NameId, std::size_t>, std::int64_t>&
                   persistent_keys,
               std::unordered_map<std::int64_t, std::int64_t>& persistent_bytes,
               std::int64_t& next_storage)
        : trace_(trace), steps_(steps), summary_(summary), persistent_keys_(persistent_keys),
          persistent_bytes_(persistent_bytes), next_storage_(next_storage) {}

    // `live`: outputs seen so far, shared by the threads of a trace processed one after the
    // other, so that a backward pass (autograd's thread) reads what the forward pass saved.
    void run(const std::vector<std::uint32_t>& ops, std::map<Dims, std::vector<Output>>& live,
             std::size_t& live_step) {
        live_ = &live;
        for (std::uint32_t i : ops) {
            const CpuOp& op = trace_.cpu_ops[i];
            while (!open_.empty() && end_of(open_.back()) <= op.ts) close(open_.back()), open_.pop_back();
            if (const std::size_t step = steps_.of(op.ts); step != step_) {
                while (!open_.empty()) close(open_.back()), open_.pop_back();
                if (live_step == static_cast<std::size_t>(-1) || step > live_step)
                    live.clear(), live_step = step;
                occurrences_.clear();
                step_ = step;
            }
            start(i);
            open_.push_back(i);
        }
        while (!open_.empty()) close(open_.back()), open_.pop_back();
    }

  private:
    Nanos end_of(std::uint32_t op) const { return trace_.cpu_ops[op].ts + trace_.cpu_ops[op].dur; }

    std::int64_t persistent(std::uint32_t op, std::size_t index, const OpArgument& arg) {
        const NameId name = trace_.cpu_ops[op].name;
        const std::size_t nth = occurrences_[{name, index, arg.dims, arg.type}]++;
        auto [it, added] =
            persistent_keys_.try_emplace({name, index, arg.dims, arg.type, nth}, next_storage_);
        if (added) ++next_storage_;
        auto& bytes = persistent_bytes_[it->second];
        bytes = std::max(bytes, tensor_bytes(trace_, arg.dims, arg.type));
        if (added && step_ == first_step_ && weight_like_input(trace_, op, index))
            summary_.parameters.push_back({arg.dims, arg.type, it->second});
        return it->second;
    }

    // Whether `producer` ran inside an op that encloses `op`: a weight's view or cast made for
    // it (aten::t under aten::linear, autocast's aten::to under aten::addmm).
    bool made_for(std::uint32_t producer, std::uint32_t op) const {
        const std::uint32_t outer = trace_.cpu_ops[producer].parent;
        for (std::uint32_t p = trace_.cpu_ops[op].parent; p != kNoIndex && outer != kNoIndex;
             p = trace_.cpu_ops[p].parent)
            if (p == outer) return true;
        return false;
    }

    // The most recent live output of these dims and a compatible dtype, not `taken`; for a
    // weight-like input (`weight_of` an op) only what was made for the op from its own inputs.
    const Output* produced(const OpArgument& arg, const std::vector<std::int64_t>& taken,
                           std::uint32_t weight_of) const {
        auto it = live_->find(arg.dims);
        if (it == live_->end()) return nullptr;
        const auto& outs = it->second;
        for (auto o = outs.rbegin(); o != outs.rend(); ++o) {
            if (o->dtype != StringPool::kEmpty && o->dtype != arg.type) continue;
            if (std::find(taken.begin(), taken.end(), o->storage) != taken.end()) continue;
            if (weight_of != kNoIndex && !made_for(o->producer, weight_of)) continue;
            return &*o;
        }
        return nullptr;
    }

    // Kineto records a TensorList's element dims but not their dtype: the most recent live
    // output of each element's dims gives it (aten::cat of bf16 halves in rotate_half would
    // otherwise replay in the parser's float32 and launch another kernel). Set only when every
    // element whose dims an earlier op produced agrees on one dtype.
    void type_tensor_list(OpArgument& arg) const {
        if (arg.list_ranks.empty() || arg.element_type != StringPool::kEmpty) return;
        NameId dtype = StringPool::kEmpty;
        std::size_t first = 0;
        for (const std::uint8_t rank : arg.list_ranks) {
            if (first + rank > arg.dims.size()) return;
            const Dims dims(arg.dims.begin() + static_cast<std::ptrdiff_t>(first),
                            arg.dims.begin() + static_cast<std::ptrdiff_t>(first + rank));
            first += rank;
            const auto it = live_->find(dims);
            if (it == live_->end()) continue;
            const auto typed = std::find_if(it->second.rbegin(), it->second.rend(), [](const Output& o) {
                return o.dtype != StringPool::kEmpty;
            });
            if (typed == it->second.rend()) continue;
            if (dtype != StringPool::kEmpty && typed->dtype != dtype) return;
            dtype = typed->dtype;
        }
        arg.element_type = dtype;
    }

    void start(std::uint32_t op) {
        if (first_step_ == static_cast<std::size_t>(-1)) first_step_ = step_;
        OpShapes& shapes = trace_.own_shapes(trace_.cpu_ops[op]);
        std::vector<std::int64_t> taken;
        for (std::size_t i = 0; i < shapes.inputs.size(); ++i) {
            OpArgument& arg = shapes.inputs[i];
            type_tensor_list(arg);
            if (!is_tensor_input(trace_, arg)) continue;
            std::int64_t storage = inherited(op, arg, taken);
            if (storage == kNoId) {
                const bool weight = weight_like_input(trace_, op, i);
                const Output* from = produced(arg, taken, weight ? op : kNoIndex);
                storage = from != nullptr ? from->storage : persistent(op, i, arg);
            }
            arg.storage_id = storage;
            arg.storage_offset = 0;
            taken.push_back(storage);
            if (persistent_bytes_.contains(storage))
                ++summary_.persistent_inputs;
            else
                ++summary_.activation_inputs;
        }
    }

    // An enclosing op's input of the same dims and dtype: the op was handed it (aten::linear
    // passes its input and weight on to aten::matmul, aten::embedding its weight on).
    std::int64_t inherited(std::uint32_t op, const OpArgument& arg,
                           const std::vector<std::int64_t>& taken) const {
        for (std::uint32_t p = trace_.cpu_ops[op].parent; p != kNoIndex; p = trace_.cpu_ops[p].parent) {
            const CpuOp& parent = trace_.cpu_ops[p];
            if (parent.shapes == kNoIndex) continue;
            for (const OpArgument& in : trace_.op_shapes[parent.shapes].inputs)
                if (in.storage_id != kNoId && in.dims == arg.dims && in.type == arg.type &&
                    std::find(taken.begin(), taken.end(), in.storage_id) == taken.end())
                    return in.storage_id;
        }
        return kNoId;
    }

    void close(std::uint32_t op) {
        CpuOp& cpu = trace_.cpu_ops[op];
        const std::string_view name = trace_.names.view(cpu.name);
        OpShapes& shapes = trace_.op_shapes[cpu.shapes];  // own_shapes() was called in start()
        const OpArgument* in0 = nullptr;
        for (const OpArgument& a : shapes.inputs)
            if (is_tensor_input(trace_, a)) {
                in0 = &a;
                break;
            }
        std::optional<Dims> dims = output_dims(trace_, name, shapes);
        Output out;
        const auto child = last_child_.find(op);
        if ((is_view_op(name) || is_in_place_op(name)) && in0 != nullptr) {
            out.storage = in0->storage_id;
            out.dtype = in0->type;
            out.dims = dims.value_or(in0->dims);
        } else if (child != last_child_.end() && (!dims || *dims == child->second.dims)) {
            out = child->second;  // a composite op returns what its last inner op made
        } else if (dims) {
            out.dims = *dims;
            out.storage = next_storage_++;
            const bool converts = name == "aten::to" || name == "aten::_to_copy" ||
                                  name == "aten::type_as" || name.starts_with("aten::empty") ||
                                  name == "aten::zeros" || name == "aten::ones" || name == "aten::full";
            out.dtype = converts || in0 == nullptr ? StringPool::kEmpty : in0->type;
        }
        if (child != last_child_.end()) last_child_.erase(child);
        if (out.storage == kNoId) return;
        out.producer = op;
        shapes.output_storage_ids = {out.storage};
        shapes.output_dims = {out.dims};
        (*live_)[out.dims].push_back(out);
        if (cpu.parent != kNoIndex) last_child_[cpu.parent] = out;
    }

    Trace& trace_;
    const Steps& steps_;
    DataflowSummary& summary_;
    std::map<std::tuple<NameId, std::size_t, Dims, NameId, std::size_t>, std::int64_t>&
        persistent_keys_;
    std::unordered_map<std::int64_t, std::int64_t>& persistent_bytes_;
    std::int64_t& next_storage_;
    std::vector<std::uint32_t> open_;
    std::map<Dims, std::vector<Output>>* live_ = nullptr;
    std::map<std::tuple<NameId, std::size_t, Dims, NameId>, std::size_t> occurrences_;
    std::unordered_map<std::uint32_t, Output> last_child_;
    std::size_t step_ = static_cast<std::size_t>(-1);
    std::size_t first_step_ = static_cast<std::size_t>(-1);
};

}  // namespace

const char* to_string(DataflowSource source) {
    switch (source) {
        case DataflowSource::Inferred:
            return "inferred";
        case DataflowSource::ExecutionTrace:
            return "et";
        case DataflowSource::None:
            break;
    }
    return "none";
}

bool weight_like_input(const Trace& trace, std::uint32_t op, std::size_t index) {
    const CpuOp& cpu = trace.cpu_ops[op];
    const std::string_view name = trace.names.view(cpu.name);
    auto under = [&](std::string_view outer) {
        for (std::uint32_t p = cpu.parent; p != kNoIndex; p = trace.cpu_ops[p].parent)
            if (trace.names.view(trace.cpu_ops[p].name) == outer) return true;
        return false;
    };
    auto rank = [&](std::size_t i) -> std::size_t {
        if (cpu.shapes == kNoIndex) return 0;
        const auto& in = trace.op_shapes[cpu.shapes].inputs;
        return i < in.size() ? in[i].dims.size() : 0;
    };
    if (name == "aten::linear" || name.starts_with("aten::conv") || name == "aten::_convolution" ||
        name == "aten::cudnn_convolution")
        return index == 1 || index == 2;
    if (name == "aten::mm" || name == "aten::matmul") return index == 1 && under("aten::linear");
    // Conv1D-style layers (GPT-2) call addmm(bias, x, weight) directly: a 1-D `self` is a bias.
    if (name == "aten::addmm") return (index == 0 || index == 2) && (under("aten::linear") || rank(0) == 1);
    if (name == "aten::embedding") return index == 0;
    if (name == "aten::index_select") return index == 0 && under("aten::embedding");
    if (name == "aten::layer_norm" || name == "aten::native_layer_norm" ||
        name == "aten::group_norm")
        return index == 2 || index == 3;
    if (name == "aten::rms_norm" || name == "aten::_fused_rms_norm") return index == 2;
    if (name == "aten::native_group_norm") return index == 1 || index == 2;
    if (name == "aten::batch_norm" || name == "aten::native_batch_norm" ||
        name == "aten::cudnn_batch_norm" || name == "aten::_native_batch_norm_legit")
        return index >= 1 && index <= 4;
    return false;
}

DataflowSummary infer_dataflow(Trace& trace) {
    if (has_storage_ids(trace)) return summarize_dataflow(trace, DataflowSource::ExecutionTrace);
    DataflowSummary summary;
    if (!has_tensor_shapes(trace)) return summary;
    summary.source = DataflowSource::Inferred;
    const Steps steps(trace);
    std::map<std::tuple<NameId, std::size_t, Dims, NameId, std::size_t>, std::int64_t> keys;
    std::unordered_map<std::int64_t, std::int64_t> persistent_bytes;
    std::int64_t next_storage = kFirstInferredStorage;
    std::map<Dims, std::vector<Output>> live;
    std::size_t live_step = static_cast<std::size_t>(-1);
    for (const auto& ops : ops_by_thread(trace))
        ThreadPass(trace, steps, summary, keys, persistent_bytes, next_storage)
            .run(ops, live, live_step);
    summary.persistent_storages = persistent_bytes.size();
    for (const auto& [storage, bytes] : persistent_bytes) summary.persistent_bytes += bytes;
    return summary;
}

std::vector<std::vector<InputOrigin>> input_origins(const Trace& trace) {
    std::vector<std::vector<InputOrigin>> out(trace.cpu_ops.size());
    const Steps steps(trace);
    std::vector<std::uint32_t> ops;  // every thread's, in start order
    for (const auto& thread : ops_by_thread(trace)) ops.insert(ops.end(), thread.begin(), thread.end());
    std::stable_sort(ops.begin(), ops.end(), [&](std::uint32_t a, std::uint32_t b) {
        return trace.cpu_ops[a].ts < trace.cpu_ops[b].ts;
    });
    {
        std::unordered_map<std::int64_t, Nanos> written;  // storage -> end of its writer
        std::size_t step = static_cast<std::size_t>(-1);
        for (std::uint32_t i : ops) {
            const CpuOp& op = trace.cpu_ops[i];
            if (steps.of(op.ts) != step) written.clear(), step = steps.of(op.ts);
            const OpShapes& s = trace.op_shapes[op.shapes];
            auto& origins = out[i];
            for (const OpArgument& a : s.inputs) {
                if (a.storage_id == kNoId || !is_tensor_input(trace, a)) {
                    origins.push_back(InputOrigin::NotTensor);
                    continue;
                }
                auto w = written.find(a.storage_id);
                origins.push_back(w != written.end() && w->second <= op.ts ? InputOrigin::Activation
                                                                            : InputOrigin::Persistent);
            }
            if (is_view_op(trace.names.view(op.name))) continue;
            for (auto storage : s.output_storage_ids)
                if (storage != kNoId) written.try_emplace(storage, op.ts + op.dur);
        }
    }
    return out;
}

DataflowSummary summarize_dataflow(const Trace& trace, DataflowSource source) {
    DataflowSummary summary;
    summary.source = source;
    const auto origins = input_origins(trace);
    std::unordered_map<std::int64_t, std::int64_t> persistent;
    for (std::uint32_t i = 0; i < origins.size(); ++i) {
        const CpuOp& op = trace.cpu_ops[i];
        for (std::size_t k = 0; k < origins[i].size(); ++k) {
            if (origins[i][k] == InputOrigin::Activation) ++summary.activation_inputs;
            if (origins[i][k] != InputOrigin::Persistent) continue;
            ++summary.persistent_inputs;
            const OpArgument& a = trace.op_shapes[op.shapes].inputs[k];
            auto& bytes = persistent[a.storage_id];
            bytes = std::max(bytes, tensor_bytes(trace, a.dims, a.type));
        }
    }
    summary.persistent_storages = persistent.size();
    for (const auto& [storage, bytes] : persistent) summary.persistent_bytes += bytes;
    return summary;
}

std::string describe(const DataflowSummary& s) {
    return std::string("dataflow ") + to_string(s.source) + " (no Execution Trace): " +
           std::to_string(s.persistent_inputs) + " inputs from before the step in " +
           std::to_string(s.persistent_storages) + " storages of " +
           std::to_string(s.persistent_bytes) + " bytes (" + std::to_string(s.parameters.size()) +
           " parameters), " + std::to_string(s.activation_inputs) +
           " inputs produced by an earlier op";
}

void drop_storage_ids(std::vector<Recipe>& recipes) {
    for (Recipe& r : recipes)
        visit_tensor_slots(r, [](std::int64_t& storage, std::int64_t& reuse) {
            storage = -1;
            reuse = kReuseUnknown;
        });
}

}  // namespace replay
