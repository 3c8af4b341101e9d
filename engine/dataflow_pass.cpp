// The dataflow inference's thread passes (dataflow_pass.h).
#include "dataflow_pass.h"

#include <array>
#include <deque>
#include <unordered_map>
#include <unordered_set>

#include "dataflow_rules.h"
#include "op_chain.h"
#include "replay/recipe.h"

namespace replay::dataflow_detail {
namespace {

// The storage id ranges of one process: inferred ids never collide with recorded ones.
constexpr std::int64_t kFirstInferredStorage = 1;
constexpr std::uint32_t kNone = 0xFFFFFFFFu;

// What the pass reads of one recorded argument, worked out once per op_shapes entry.
struct ArgFacts {
    bool tensor = false;  // is_tensor_input
    NameId type = StringPool::kEmpty;
    std::uint32_t dims = DimsTable::kEmpty;  // interned in the trace's OpStorages
    std::int64_t bytes = 0;                  // tensor_bytes of a tensor
    // A TensorList without an element dtype: its elements' dims; `complete` when the recorded
    // ranks cover them all.
    std::vector<std::uint32_t> elements;
    bool untyped_list = false, complete = false;
};

struct EntryFacts {
    std::vector<ArgFacts> args;
    std::uint32_t first_tensor = kNone;  // the first tensor argument (input 0 of views)
    // The output dims (kNone: not told) of the op name that used the entry last.
    NameId output_name = kNone;
    std::uint32_t output_dims = kNone;
    // The op's shapes may change per op: an untyped TensorList, or a tensor with a storage
    // offset (the inference reads every tensor from its storage's start).
    bool adjusts = false;
};

// What the inference asks about names, shapes entries and ops, each worked out once.
class OpFacts {
  public:
    explicit OpFacts(Trace& trace) : trace_(trace) {}

    const NameFacts& name(NameId id) {
        if (id >= names_.size())
            names_.resize(trace_.names.size()), named_.resize(trace_.names.size());
        if (!named_[id]) names_[id] = name_facts(trace_.names.view(id)), named_[id] = true;
        return names_[id];
    }
    EntryFacts& entry(std::uint32_t shapes) {
        if (shapes < ready_.size() && ready_[shapes] != nullptr) return *ready_[shapes];
        if (shapes >= entries_.size()) {
            entries_.resize(trace_.op_shapes.size());
            ready_.resize(trace_.op_shapes.size(), nullptr);
        }
        EntryFacts& e = entries_[shapes];
        fill(e, trace_.op_shapes[shapes]);
        ready_[shapes] = &e;
        return e;
    }
    // The dims of the op's output where its name and inputs tell them, else kNone.
    std::uint32_t output_dims(const CpuOp& op) {
        EntryFacts& e = entry(op.shapes);
        if (e.output_name == op.name) return e.output_dims;
        const std::uint64_t key = std::uint64_t{op.name} << 32 | op.shapes;
        auto [it, added] = output_dims_.try_emplace(key, kNone);
        if (added)
            if (auto dims = dataflow_detail::output_dims(trace_, trace_.names.view(op.name),
                                                         trace_.op_shapes[op.shapes]))
                it->second = trace_.storages.intern_dims(*dims);
        e.output_name = op.name;
        e.output_dims = it->second;
        return it->second;
    }

  private:
    void fill(EntryFacts& e, const OpShapes& shapes) {
        for (const OpArgument& arg : shapes.inputs) {
            ArgFacts& a = e.args.emplace_back();
            a.tensor = is_tensor_input(trace_, arg);
            a.type = arg.type;
            a.dims = trace_.storages.intern_dims(arg.dims);
            if (a.tensor) {
                a.bytes = tensor_bytes(trace_, arg.dims, arg.type);
                if (e.first_tensor == kNone)
                    e.first_tensor = static_cast<std::uint32_t>(e.args.size() - 1);
                e.adjusts = e.adjusts || arg.storage_offset != 0;
            }
            a.untyped_list = !arg.list_ranks.empty() && arg.element_type == StringPool::kEmpty;
            if (!a.untyped_list) continue;
            e.adjusts = true;
            std::size_t first = 0;
            a.complete = true;
            for (const std::uint8_t rank : arg.list_ranks) {
                if (first + rank > arg.dims.size()) {
                    a.complete = false;
                    break;
                }
                a.elements.push_back(trace_.storages.intern_dims(
                    std::span<const std::int64_t>(arg.dims).subspan(first, rank)));
                first += rank;
            }
        }
    }

    Trace& trace_;
    std::vector<NameFacts> names_;
    std::vector<bool> named_;
    std::deque<EntryFacts> entries_;  // per op_shapes entry; references stay valid as it grows
    std::vector<EntryFacts*> ready_;  // per op_shapes entry: its facts once worked out
    std::unordered_map<std::uint64_t, std::uint32_t> output_dims_;  // (name, shapes) -> dims
};

// What a recorded op produced, for the later ops of its step to read.
struct Output {
    std::uint32_t dims = DimsTable::kEmpty;
    NameId dtype = StringPool::kEmpty;  // kEmpty: any (conversions, creation ops)
    std::int64_t storage = kNoId;
    std::uint32_t producer = kNoIndex;  // Trace::cpu_ops
    std::uint32_t made = 0;             // LiveOutputs' count when it was added: recency
    bool allocated = false;             // its producer allocates (NameFacts::allocates)
    // In its LiveOutputs list: where the run of outputs of this storage that ends with it starts
    // (an in-place accumulation, add_ after add_, adds hundreds in a row).
    std::uint32_t run_begin = 0;
};

// The outputs seen so far in the step, by dims and dtype, each list in the order they were made.
class LiveOutputs {
  public:
    using List = std::vector<Output>;
    // The outputs of these dims and this dtype (kEmpty: those of any dtype); null for none.
    const List* find(std::uint32_t dims, NameId dtype) const {
        if (dims >= by_dims_.size()) return nullptr;
        for (const auto& [type, list] : by_dims_[dims])
            if (type == dtype) return list.empty() ? nullptr : &list;
        return nullptr;
    }
    // The most recent output of these dims that has a dtype; null for none.
    const Output* last_typed(std::uint32_t dims) const {
        if (dims >= by_dims_.size()) return nullptr;
        const Output* last = nullptr;
        for (const auto& [type, list] : by_dims_[dims])
            if (type != StringPool::kEmpty && !list.empty() &&
                (last == nullptr || list.back().made > last->made))
                last = &list.back();
        return last;
    }
    void add(Output out) {
        out.made = made_++;
        if (out.dims >= by_dims_.size()) by_dims_.resize(out.dims + 1);
        auto& lists = by_dims_[out.dims];
        auto typed = std::find_if(lists.begin(), lists.end(),
                                  [&](const auto& l) { return l.first == out.dtype; });
        if (typed == lists.end()) typed = lists.insert(lists.end(), {out.dtype, List{}});
        List& list = typed->second;
        if (list.empty()) used_.push_back(out.dims);  // (again) since the last clear()
        out.run_begin = !list.empty() && list.back().storage == out.storage
                            ? list.back().run_begin
                            : static_cast<std::uint32_t>(list.size());
        list.push_back(out);
    }
    void clear() {
        for (const std::uint32_t dims : used_)
            for (auto& typed : by_dims_[dims]) typed.second.clear();
        used_.clear();
    }

  private:
    std::vector<std::vector<std::pair<NameId, List>>> by_dims_;  // per dims: a list per dtype
    std::vector<std::uint32_t> used_;  // dims given outputs since the last clear() (repeats too)
    std::uint32_t made_ = 0;
};

// An input from before the step: the storages of (op name, input, dims, dtype), one per
// occurrence in a step, the same for that occurrence of every step.
struct PersistentKey {
    NameId name = 0;
    std::uint32_t index = 0;
    std::uint32_t dims = 0;
    NameId type = 0;
    bool operator==(const PersistentKey&) const = default;
};
struct PersistentKeyHash {
    std::size_t operator()(const PersistentKey& k) const {
        std::uint64_t h = (std::uint64_t{k.name} << 32 | k.index) * 0x9E3779B97F4A7C15ULL;
        h ^= (std::uint64_t{k.dims} << 32 | k.type) + (h >> 29);
        return static_cast<std::size_t>(h * 0xBF58476D1CE4E5B9ULL);
    }
};
struct PersistentSlots {
    std::vector<std::int64_t> storages;  // by occurrence in a step
    std::uint64_t epoch = 0;             // the (thread pass, step) that `seen` counts for
    std::size_t seen = 0;
};

// What the threads' passes share: a backward pass (autograd's thread) reads what the forward
// pass saved, and every pass draws storages from one sequence.
struct SharedState {
    LiveOutputs live;
    std::unordered_set<std::int64_t> saved;  // outputs of the step read as a backward's saved input
    std::size_t live_step = static_cast<std::size_t>(-1);
    std::unordered_map<PersistentKey, PersistentSlots, PersistentKeyHash> persistent;
    std::vector<bool> is_persistent;  // by storage id
    // By storage id: the dtype of its newest output that has one (kEmpty: none yet). A creation
    // op's output has none (empty_strided records no dtype) until an op writes it in place.
    std::vector<NameId> storage_type;
    std::int64_t next_storage = kFirstInferredStorage;
    std::uint64_t epochs = 0;
};

// One thread's pass: storages assigned at each op's start, its output registered at its end.
class ThreadPass {
  public:
    ThreadPass(Trace& trace, OpFacts& facts, const Steps& steps, SharedState& shared,
               DataflowSummary& summary)
        : trace_(trace),
          facts_(facts),
          steps_(steps),
          shared_(shared),
          summary_(summary),
          chain_(trace.cpu_ops) {}

    void run(const std::vector<std::uint32_t>& ops) {
        for (std::size_t k = 0; k < ops.size(); ++k) {
            // A thread's ops in start order lie apart in the op array: ask for one ahead (both
            // cache lines an op may straddle).
            if (k + 8 < ops.size()) {
                const char* ahead = reinterpret_cast<const char*>(&trace_.cpu_ops[ops[k + 8]]);
                __builtin_prefetch(ahead);
                __builtin_prefetch(ahead + sizeof(CpuOp) - 1);
            }
            const std::uint32_t i = ops[k];
            const CpuOp& op = trace_.cpu_ops[i];
            while (!open_.empty() && end_of(open_.back().op) <= op.ts) close();
            if (const std::size_t step = steps_.of(op.ts, step_at_); step != step_) {
                while (!open_.empty()) close();
                if (shared_.live_step == static_cast<std::size_t>(-1) || step > shared_.live_step)
                    shared_.live.clear(), shared_.saved.clear(), shared_.live_step = step;
                epoch_ = ++shared_.epochs;  // occurrences count afresh
                step_ = step;
            }
            enter(i);
            start(i);
            open_.push_back({i, false, Output{}});
        }
        while (!open_.empty()) close();
    }

  private:
    // An op whose end has not come yet, with the output of its last inner op that closed.
    struct Open {
        std::uint32_t op = kNoIndex;
        bool has_child = false;
        Output child;
    };

    Nanos end_of(std::uint32_t op) const { return trace_.cpu_ops[op].ts + trace_.cpu_ops[op].dur; }

    // Makes chain_ `op`'s chain, with the facts of each enclosing op beside it. The op itself
    // enters with the entry its shapes have before start() adjusts them; its children see it
    // after, so its level is refreshed at the end of start().
    void enter(std::uint32_t op) {
        chain_.enter(
            op,
            [&] {
                --under_[static_cast<std::size_t>(levels_.back().weights)];
                levels_.pop_back();
            },
            [&](std::uint32_t q) {
                const CpuOp& cpu = trace_.cpu_ops[q];
                const Level level{cpu.shapes != kNoIndex ? &facts_.entry(cpu.shapes) : nullptr,
                                  facts_.name(cpu.name).weights};
                ++under_[static_cast<std::size_t>(level.weights)];
                levels_.push_back(level);
            });
    }
    // weight_like_input() of the op being started, with its enclosing ops' rules counted.
    bool weight_like(std::uint32_t op, std::size_t index) const {
        const CpuOp& cpu = trace_.cpu_ops[op];
        const WeightRule own = levels_.back().weights;
        const auto enclosing = [&](WeightRule outer) {  // the op's own level does not count
            return under_[static_cast<std::size_t>(outer)] > (own == outer ? 1u : 0u);
        };
        const auto rank0 = [&]() -> std::size_t {
            const auto& in = trace_.op_shapes[cpu.shapes].inputs;
            return in.empty() ? 0 : in[0].dims.size();
        };
        return dataflow_detail::weight_like(own, index, enclosing, rank0);
    }
    bool taken(std::int64_t storage) const {
        return std::find(taken_.begin(), taken_.end(), storage) != taken_.end();
    }

    std::int64_t persistent(std::uint32_t op, std::size_t index, const ArgFacts& arg) {
        const NameId name = trace_.cpu_ops[op].name;
        PersistentSlots& slots =
            shared_.persistent[{name, static_cast<std::uint32_t>(index), arg.dims, arg.type}];
        const std::size_t nth = slots.epoch == epoch_ ? slots.seen : 0;
        slots.epoch = epoch_;
        slots.seen = nth + 1;
        if (nth < slots.storages.size()) return slots.storages[nth];
        const std::int64_t storage = shared_.next_storage++;
        slots.storages.push_back(storage);
        const auto at = static_cast<std::size_t>(storage);
        if (at >= shared_.is_persistent.size()) shared_.is_persistent.resize(2 * at + 1024);
        shared_.is_persistent[at] = true;
        ++summary_.persistent_storages;
        summary_.persistent_bytes = saturating_add(summary_.persistent_bytes, arg.bytes);
        if (step_ == first_step_ && weight_like(op, index)) {
            const auto dims = trace_.storages.dims(arg.dims);
            summary_.parameters.push_back({{dims.begin(), dims.end()}, arg.type, storage});
        }
        return storage;
    }
    NameId storage_type(std::int64_t storage) const {
        const auto at = static_cast<std::size_t>(storage);
        return storage >= 0 && at < shared_.storage_type.size() ? shared_.storage_type[at]
                                                                : StringPool::kEmpty;
    }
    void set_storage_type(std::int64_t storage, NameId type) {
        if (storage < 0 || type == StringPool::kEmpty) return;
        const auto at = static_cast<std::size_t>(storage);
        if (at >= shared_.storage_type.size())
            shared_.storage_type.resize(2 * at + 1024, StringPool::kEmpty);
        shared_.storage_type[at] = type;
    }
    bool is_persistent(std::int64_t storage) const {
        return storage >= 0 && static_cast<std::size_t>(storage) < shared_.is_persistent.size() &&
               shared_.is_persistent[static_cast<std::size_t>(storage)];
    }

    // Whether `producer` ran inside an op that encloses the op being started: a weight's view or
    // cast made for it (aten::t under aten::linear, autocast's aten::to under aten::addmm).
    bool made_for(std::uint32_t producer) const {
        const std::uint32_t outer = trace_.cpu_ops[producer].parent;
        // On the chain but not the op itself (chains nest hundreds deep: no linear search).
        return outer != kNoIndex && outer != chain_.ops().back() && chain_.holds(outer);
    }

    // Input `index` of `op` is a tensor its forward op saved (NameFacts::gradient_input).
    bool saved_by_forward(std::uint32_t op, std::size_t index) const {
        const std::size_t gradient = facts_.name(trace_.cpu_ops[op].name).gradient_input;
        return gradient != NameFacts::kNoSaved && index != gradient;
    }

    // Whether `op`, on the thread of `reader`, made a gradient there: a backward op, or an op an
    // autograd node or the engine ran itself (AddmmBackward0's mm, the add that sums two
    // gradients). A forward op recomputed for activation checkpointing runs deeper (under the
    // node's unpack hook and the module's frames) or on another thread.
    bool makes_gradients(std::uint32_t op, std::uint32_t reader) const {
        const CpuOp& made = trace_.cpu_ops[op];
        const CpuOp& now = trace_.cpu_ops[reader];
        if (made.pid != now.pid || made.tid != now.tid) return false;
        const NameFacts& facts = facts_.name(made.name);
        if (facts.gradient_input != NameFacts::kNoSaved || facts.autograd_node) return true;
        if (made.parent == kNoIndex) return false;
        const NameId parent = trace_.cpu_ops[made.parent].name;
        return facts_.name(parent).autograd_node ||
               trace_.names.view(parent).starts_with("autograd::engine::evaluate_function");
    }

    // The most recent live output of these dims and a compatible dtype, not taken; for a
    // weight-like input only what was made for the op being started from its own inputs; for an
    // input backward op `saved_by` saved (kNoIndex: none), only a forward op's output no other
    // backward read took.
    const Output* produced(const ArgFacts& arg, bool weight, std::uint32_t saved_by) const {
        // The outputs of the input's dtype and those of any dtype, newest first, merged.
        const LiveOutputs::List* typed = shared_.live.find(arg.dims, arg.type);
        const LiveOutputs::List* any = shared_.live.find(arg.dims, StringPool::kEmpty);
        std::size_t t = typed != nullptr ? typed->size() : 0, a = any != nullptr ? any->size() : 0;
        // The newest untyped output whose storage was since written as another dtype.
        const Output* retyped = nullptr;
        while (t > 0 || a > 0) {
            const bool from_typed = a == 0 || (t > 0 && (*typed)[t - 1].made > (*any)[a - 1].made);
            std::size_t& at = from_typed ? t : a;
            const Output& o = (from_typed ? *typed : *any)[--at];
            if (taken(o.storage)) {
                at = o.run_begin;  // the rest of its run is taken too
                continue;
            }
            if (weight && !made_for(o.producer)) continue;
            // A saved tensor was made by a forward op: on the forward's thread, or recomputed
            // on the backward's (activation checkpointing), never a gradient the backward pass
            // made; and (without tensor ids to tell) each forward output serves one backward
            // read: else every batch norm backward of a stage read the stage's newest output,
            // each right after the last, as if from L2.
            if (saved_by != kNoIndex &&
                (makes_gradients(o.producer, saved_by) || shared_.saved.contains(o.storage)))
                continue;
            // An untyped output whose storage was since written as another dtype (autocast's
            // empty_strided, then copy_ of float into it) is this input only when no output of
            // its dtype is left: GPT-2's add(x, float) read the float copy's bits as bf16.
            if (!from_typed && arg.type != StringPool::kEmpty) {
                const NameId known = storage_type(o.storage);
                if (known != StringPool::kEmpty && known != arg.type) {
                    if (retyped == nullptr) retyped = &o;
                    continue;
                }
            }
            return &o;
        }
        return retyped;
    }

    // The tensor an enclosing op allocated for the in-place op being started to write (aten::clone
    // and aten::contiguous: empty_like, then copy_ into it): the newest live output of the
    // input's dims and dtype that an allocation made inside the op's parent, not taken. It comes
    // before inherited(): the parent's own input has the same dims and dtype, and copy_ reads it.
    const Output* allocated_for(const ArgFacts& arg, std::uint32_t parent) const {
        if (parent == kNoIndex) return nullptr;
        const Nanos parent_start = trace_.cpu_ops[parent].ts;
        const Output* newest = nullptr;
        const LiveOutputs::List* typed = shared_.live.find(arg.dims, arg.type);
        const LiveOutputs::List* any = shared_.live.find(arg.dims, StringPool::kEmpty);
        for (const LiveOutputs::List* list : {typed, any}) {
            if (list == nullptr) continue;
            for (std::size_t at = list->size(); at-- > 0;) {
                const Output& o = (*list)[at];
                if (trace_.cpu_ops[o.producer].ts < parent_start) break;  // made before the parent
                if (!o.allocated || taken(o.storage) || !made_for(o.producer)) continue;
                if (newest == nullptr || o.made > newest->made) newest = &o;
                break;
            }
        }
        return newest;
    }

    // Kineto records a TensorList's element dims but not their dtype: the most recent live
    // output of each element's dims gives it (aten::cat of bf16 halves in rotate_half would
    // otherwise replay in the parser's float32 and launch another kernel). Set only when every
    // element whose dims an earlier op produced agrees on one dtype.
    NameId list_dtype(const ArgFacts& arg) const {
        if (!arg.complete) return StringPool::kEmpty;
        NameId dtype = StringPool::kEmpty;
        for (const std::uint32_t dims : arg.elements) {
            const Output* typed = shared_.live.last_typed(dims);
            if (typed == nullptr) continue;
            if (dtype != StringPool::kEmpty && typed->dtype != dtype) return StringPool::kEmpty;
            dtype = typed->dtype;
        }
        return dtype;
    }

    // The op's own shapes where they differ from its entry's: its TensorLists typed, its
    // tensors read from their storages' start. Most entries need neither.
    void adjust_shapes(CpuOp& cpu) {
        const EntryFacts& e = facts_.entry(cpu.shapes);
        if (!e.adjusts) return;
        OpShapes shapes = trace_.op_shapes[cpu.shapes];
        bool changed = false;
        for (std::size_t i = 0; i < shapes.inputs.size(); ++i) {
            OpArgument& arg = shapes.inputs[i];
            if (e.args[i].tensor && arg.storage_offset != 0) arg.storage_offset = 0, changed = true;
            if (!e.args[i].untyped_list) continue;
            const NameId dtype = list_dtype(e.args[i]);
            if (dtype != StringPool::kEmpty) arg.element_type = dtype, changed = true;
        }
        if (changed) trace_.set_shapes(cpu, std::move(shapes));
    }

    // The op's record: `ids_`, one per input, and its output. A record an Execution Trace gave
    // the op (one without input ids, or the inference would not run) keeps what this pass does
    // not set: its other inputs', lists' and outputs' ids.
    void add_record(std::uint32_t op) {
        OpStorages& ids = trace_.storages;
        if (!ids.has(op)) return ids.add(op, ids_, 1);
        OpStorages::Record record = ids.get(op);
        if (record.inputs.size() < ids_.size()) record.inputs.resize(ids_.size(), kNoId);
        for (std::size_t i = 0; i < ids_.size(); ++i)
            if (ids_[i] != kNoId) record.inputs[i] = ids_[i];
        if (record.outputs.empty()) record.outputs.emplace_back();
        ids.set(op, record);
    }

    void start(std::uint32_t op) {
        if (first_step_ == static_cast<std::size_t>(-1)) first_step_ = step_;
        CpuOp& cpu = trace_.cpu_ops[op];
        adjust_shapes(cpu);
        const EntryFacts& e = facts_.entry(cpu.shapes);
        taken_.clear();
        ids_.assign(e.args.size(), kNoId);
        const bool writes_first = facts_.name(cpu.name).in_place;
        for (std::size_t i = 0; i < e.args.size(); ++i) {
            const ArgFacts& arg = e.args[i];
            if (!arg.tensor) continue;
            std::int64_t storage = kNoId;
            if (writes_first && i == e.first_tensor)
                if (const Output* fresh = allocated_for(arg, cpu.parent)) storage = fresh->storage;
            if (storage == kNoId) storage = inherited(arg);
            if (storage == kNoId) {
                const bool saved = saved_by_forward(op, i);
                const Output* from = produced(arg, weight_like(op, i), saved ? op : kNoIndex);
                if (from != nullptr && saved) shared_.saved.insert(from->storage);
                storage = from != nullptr ? from->storage : persistent(op, i, arg);
            }
            ids_[i] = storage;
            taken_.push_back(storage);
            if (is_persistent(storage))
                ++summary_.persistent_inputs;
            else
                ++summary_.activation_inputs;
        }
        add_record(op);
        levels_.back().entry = &e;
    }

    // An enclosing op's input of the same dims and dtype: the op was handed it (aten::linear
    // passes its input and weight on to aten::matmul, aten::embedding its weight on).
    std::int64_t inherited(const ArgFacts& arg) const {
        // chain_ holds the op on top, its enclosing ops below: those with shapes, nearest first.
        for (std::size_t level = levels_.size() - 1; level-- > 0;) {
            const EntryFacts* e = levels_[level].entry;
            if (e == nullptr) continue;
            const std::uint32_t p = chain_.ops()[level];
            for (std::size_t k = 0; k < e->args.size(); ++k) {
                if (e->args[k].dims != arg.dims || e->args[k].type != arg.type) continue;
                const std::int64_t storage = trace_.storages.input(p, k);
                if (storage != kNoId && !taken(storage)) return storage;
            }
        }
        return kNoId;
    }

    void close() {
        const Open top = open_.back();
        open_.pop_back();
        const std::uint32_t op = top.op;
        const CpuOp& cpu = trace_.cpu_ops[op];
        const NameFacts& name = facts_.name(cpu.name);
        const EntryFacts& e = facts_.entry(cpu.shapes);
        const std::uint32_t dims = facts_.output_dims(cpu);
        Output out;
        const bool alias = name.view || name.in_place || (name.may_alias && !top.has_child);
        if (alias && e.first_tensor != kNone) {
            const ArgFacts& in0 = e.args[e.first_tensor];
            out.storage = trace_.storages.input(op, e.first_tensor);
            out.dtype = in0.type;
            out.dims = dims != kNone ? dims : in0.dims;
        } else if (top.has_child && (dims == kNone || dims == top.child.dims)) {
            out = top.child;  // a composite op returns what its last inner op made
        } else if (dims != kNone && !(top.has_child && name.autograd_node)) {
            // (An autograd node's results are what its inner ops made: a storage of its own
            // would be one nothing wrote, a "first touch" for the op that reads it next; BERT's
            // bias-gradient sums read AddmmBackward0's so and replayed from memory, +19%.)
            out.dims = dims;
            out.storage = shared_.next_storage++;
            out.dtype = name.converts || e.first_tensor == kNone ? StringPool::kEmpty
                                                                 : e.args[e.first_tensor].type;
        }
        if (out.storage == kNoId) return;
        set_storage_type(out.storage, out.dtype);
        out.producer = op;
        out.allocated = name.allocates;
        trace_.storages.set_output(op, 0, {out.storage, out.dims});
        for (std::size_t k = 1; k < trace_.storages.outputs(op); ++k)
            trace_.storages.set_output(op, k, {});
        shared_.live.add(out);
        if (cpu.parent == kNoIndex) return;
        // The enclosing op is open unless it is not one of this pass's (no shapes, a range):
        // then nothing would read what it is given.
        const Nanos parent_start = trace_.cpu_ops[cpu.parent].ts;
        for (std::size_t k = open_.size(); k-- > 0;) {
            if (open_[k].op == cpu.parent) {
                open_[k].has_child = true;
                open_[k].child = out;
                break;
            }
            if (trace_.cpu_ops[open_[k].op].ts < parent_start) break;
        }
    }

    Trace& trace_;
    OpFacts& facts_;
    const Steps& steps_;
    SharedState& shared_;
    DataflowSummary& summary_;
    std::vector<Open> open_;
    std::vector<std::int64_t> taken_;  // the storages the op being started reads so far
    std::vector<std::int64_t> ids_;    // its inputs' ids (kNoId for non-tensors)
    // The op being started and its enclosing ops (chain_), with their shapes' facts and rules.
    struct Level {
        const EntryFacts* entry = nullptr;  // null: no shapes
        WeightRule weights = WeightRule::None;
    };
    OpChain chain_;
    std::vector<Level> levels_;              // beside chain_
    std::array<std::uint32_t, 16> under_{};  // levels per WeightRule
    static_assert(static_cast<std::size_t>(WeightRule::GroupOrRmsNormBackward) < 16);
    std::size_t step_ = static_cast<std::size_t>(-1);
    std::size_t step_at_ = 0;  // Steps::of's place for the op before
    std::size_t first_step_ = static_cast<std::size_t>(-1);
    std::uint64_t epoch_ = 0;
};

}  // namespace

DataflowSummary run_thread_passes(Trace& trace, const Steps& steps,
                                  const std::vector<std::vector<std::uint32_t>>& threads) {
    DataflowSummary summary;
    summary.source = DataflowSource::Inferred;
    OpFacts facts(trace);
    SharedState shared;
    for (const auto& thread : threads) ThreadPass(trace, facts, steps, shared, summary).run(thread);
    return summary;
}

}  // namespace replay::dataflow_detail
