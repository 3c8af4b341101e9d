#include "replay/dataflow.h"

#include <algorithm>
#include <unordered_map>

#include "dataflow_pass.h"
#include "dataflow_rules.h"
#include "replay/format_bytes.h"
#include "replay/recipe.h"

namespace replay {
namespace {

using namespace dataflow_detail;

// The ops the inference reads.
bool has_recorded_shapes(const CpuOp& op) {
    return op.category == 0 && op.shapes != kNoIndex;
}

struct Thread {
    std::int64_t pid = 0, tid = 0;
    std::vector<std::uint32_t> ops;  // in start order
};

// The threads' ops, threads in (pid, tid) order, then the one that started first first (the
// forward pass before autograd's thread).
std::vector<std::vector<std::uint32_t>> in_thread_order(const Trace& trace,
                                                        std::vector<Thread> threads) {
    std::sort(threads.begin(), threads.end(), [](const Thread& a, const Thread& b) {
        return a.pid != b.pid ? a.pid < b.pid : a.tid < b.tid;
    });
    std::vector<std::vector<std::uint32_t>> out;
    for (Thread& thread : threads) out.push_back(std::move(thread.ops));
    std::sort(out.begin(), out.end(), [&](const auto& a, const auto& b) {
        return trace.cpu_ops[a.front()].ts < trace.cpu_ops[b.front()].ts;
    });
    return out;
}

// Ops with recorded shapes grouped by thread, each thread's in start order (outer first).
std::vector<std::vector<std::uint32_t>> ops_by_thread(const Trace& trace) {
    std::vector<Thread> threads;
    std::unordered_map<std::int64_t, std::vector<std::size_t>> by_tid;  // tid -> threads
    std::size_t last = 0;  // consecutive ops are mostly one thread's
    for (std::uint32_t i = 0; i < trace.cpu_ops.size(); ++i) {
        const CpuOp& op = trace.cpu_ops[i];
        if (!has_recorded_shapes(op)) continue;
        if (threads.empty() || threads[last].pid != op.pid || threads[last].tid != op.tid) {
            auto& same_tid = by_tid[op.tid];
            const auto it = std::find_if(same_tid.begin(), same_tid.end(),
                                         [&](std::size_t t) { return threads[t].pid == op.pid; });
            if (it != same_tid.end()) {
                last = *it;
            } else {
                last = threads.size();
                same_tid.push_back(last);
                threads.push_back({op.pid, op.tid, {}});
            }
        }
        threads[last].ops.push_back(i);
    }
    for (Thread& thread : threads) {
        auto& ops = thread.ops;
        const auto earlier = [&](std::uint32_t a, std::uint32_t b) {
            const CpuOp& x = trace.cpu_ops[a];
            const CpuOp& y = trace.cpu_ops[b];
            return x.ts != y.ts ? x.ts < y.ts : x.dur > y.dur;
        };
        if (!std::is_sorted(ops.begin(), ops.end(), earlier))
            std::stable_sort(ops.begin(), ops.end(), earlier);
    }
    return in_thread_order(trace, std::move(threads));
}

// ops_by_thread() from the graph builder's order: the same ops in the same order (its ties of
// start and duration are in index order too, as the stable sort leaves them). `shaped`: per op,
// has_recorded_shapes().
std::vector<std::vector<std::uint32_t>> ops_by_thread(const Trace& trace, const ThreadOps& nested,
                                                      const std::vector<std::uint8_t>& shaped) {
    std::vector<Thread> threads;
    for (std::size_t t = 0; t < nested.threads(); ++t) {
        const auto ops = nested.of(t);
        Thread thread;
        for (const std::uint32_t op : ops)
            if (shaped[op]) thread.ops.push_back(op);
        if (thread.ops.empty()) continue;
        thread.pid = trace.cpu_ops[ops.front()].pid;
        thread.tid = trace.cpu_ops[ops.front()].tid;
        threads.push_back(std::move(thread));
    }
    return in_thread_order(trace, std::move(threads));
}

bool has_storage_ids(const Trace& trace) {
    if (trace.storages.empty()) return false;
    for (std::uint32_t op = 0; op < trace.cpu_ops.size(); ++op)
        if (trace.storages.has(op))
            for (const std::int64_t id : trace.storages.get(op).inputs)
                if (id != kNoId) return true;
    return false;
}

bool has_tensor_shapes(const Trace& trace) {
    for (const OpShapes& s : trace.op_shapes)
        for (const OpArgument& a : s.inputs)
            if (is_tensor_input(trace, a)) return true;
    return false;
}

}  // namespace

// What the inference needs from every op, from one pass over the ops in index order (a large
// trace's ops are ~100 MB: each pass over them costs ~10 ms): the steps' starts, which ops the
// passes take (has_recorded_shapes) and the words of their records in Trace::storages.
struct DataflowPrep::Survey {
    std::vector<Nanos> step_starts;
    std::vector<std::uint8_t> shaped;  // per op
    std::size_t words = 0;
};

namespace {

DataflowPrep::Survey survey(const Trace& trace) {
    DataflowPrep::Survey out;
    std::vector<std::uint8_t> step_name(trace.names.size());  // per NameId
    for (std::size_t n = 0; n < step_name.size(); ++n)
        step_name[n] = is_step(trace.names.view(static_cast<NameId>(n)));
    // One record per op: two header words, an id per input, an output (id, dims).
    std::vector<std::size_t> record_words(trace.op_shapes.size());
    for (std::size_t s = 0; s < record_words.size(); ++s)
        record_words[s] = 4 + trace.op_shapes[s].inputs.size();
    out.shaped.resize(trace.cpu_ops.size());
    for (std::size_t i = 0; i < trace.cpu_ops.size(); ++i) {
        const CpuOp& op = trace.cpu_ops[i];
        if (step_name[op.name]) out.step_starts.push_back(op.ts);
        out.shaped[i] = has_recorded_shapes(op);
        if (out.shaped[i]) out.words += record_words[op.shapes];
    }
    return out;
}

bool infers(const Trace& trace) {
    return !has_storage_ids(trace) && has_tensor_shapes(trace);
}

// The passes, the prep done and the ops grouped by thread.
DataflowSummary run_passes(Trace& trace, const DataflowPrep::Survey& ops,
                           const std::vector<std::vector<std::uint32_t>>& threads) {
    return run_thread_passes(trace, Steps(ops.step_starts), threads);
}

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
    const auto under = [&](WeightRule outer) {
        for (std::uint32_t p = cpu.parent; p != kNoIndex; p = trace.cpu_ops[p].parent)
            if (name_facts(trace.names.view(trace.cpu_ops[p].name)).weights == outer) return true;
        return false;
    };
    const auto rank0 = [&]() -> std::size_t {
        if (cpu.shapes == kNoIndex) return 0;
        const auto& in = trace.op_shapes[cpu.shapes].inputs;
        return in.empty() ? 0 : in[0].dims.size();
    };
    return weight_like(name_facts(trace.names.view(cpu.name)).weights, index, under, rank0);
}

DataflowPrep::DataflowPrep(Trace& trace) {
    if (!infers(trace)) return;
    survey_ = std::make_unique<Survey>(survey(trace));
    // The records' storage, every page touched here: the passes then only write records.
    trace.storages.reserve(trace.cpu_ops.size(), survey_->words, OpStorages::Touch::Now);
}
DataflowPrep::~DataflowPrep() = default;
DataflowPrep::DataflowPrep(DataflowPrep&&) noexcept = default;
DataflowPrep& DataflowPrep::operator=(DataflowPrep&&) noexcept = default;

DataflowSummary infer_dataflow(Trace& trace) {
    if (has_storage_ids(trace)) return summarize_dataflow(trace, DataflowSource::ExecutionTrace);
    if (!has_tensor_shapes(trace)) return {};
    const DataflowPrep::Survey ops = survey(trace);
    trace.storages.reserve(trace.cpu_ops.size(), ops.words);
    return run_passes(trace, ops, ops_by_thread(trace));
}

DataflowSummary infer_dataflow(Trace& trace, const ThreadOps& ops, const DataflowPrep& prep) {
    if (!prep.survey_)  // as infer_dataflow(trace) would have found
        return has_storage_ids(trace) ? summarize_dataflow(trace, DataflowSource::ExecutionTrace)
                                      : DataflowSummary{};
    return run_passes(trace, *prep.survey_, ops_by_thread(trace, ops, prep.survey_->shaped));
}

std::vector<std::vector<InputOrigin>> input_origins(const Trace& trace) {
    std::vector<std::vector<InputOrigin>> out(trace.cpu_ops.size());
    const Steps steps(trace);
    std::vector<std::uint32_t> ops;  // every thread's, in start order
    for (const auto& thread : ops_by_thread(trace)) ops.insert(ops.end(), thread.begin(), thread.end());
    std::stable_sort(ops.begin(), ops.end(), [&](std::uint32_t a, std::uint32_t b) {
        return trace.cpu_ops[a].ts < trace.cpu_ops[b].ts;
    });
    std::unordered_map<std::int64_t, Nanos> written;  // storage -> end of its writer
    std::size_t step = static_cast<std::size_t>(-1);
    for (std::uint32_t i : ops) {
        const CpuOp& op = trace.cpu_ops[i];
        if (steps.of(op.ts) != step) written.clear(), step = steps.of(op.ts);
        const OpShapes& s = trace.op_shapes[op.shapes];
        auto& origins = out[i];
        for (std::size_t k = 0; k < s.inputs.size(); ++k) {
            const std::int64_t storage = trace.storages.input(i, k);
            if (storage == kNoId || !is_tensor_input(trace, s.inputs[k])) {
                origins.push_back(InputOrigin::NotTensor);
                continue;
            }
            auto w = written.find(storage);
            origins.push_back(w != written.end() && w->second <= op.ts ? InputOrigin::Activation
                                                                        : InputOrigin::Persistent);
        }
        if (name_facts(trace.names.view(op.name)).view) continue;
        for (std::size_t k = 0; k < trace.storages.outputs(i); ++k)
            if (const std::int64_t storage = trace.storages.output(i, k).storage; storage != kNoId)
                written.try_emplace(storage, op.ts + op.dur);
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
            auto& bytes = persistent[trace.storages.input(i, k)];
            bytes = std::max(bytes, tensor_bytes(trace, a.dims, a.type));
        }
    }
    summary.persistent_storages = persistent.size();
    for (const auto& [storage, bytes] : persistent)
        summary.persistent_bytes = saturating_add(summary.persistent_bytes, bytes);
    return summary;
}

std::string describe(const DataflowSummary& s) {
    return std::string("dataflow ") + to_string(s.source) + " (no Execution Trace): " +
           std::to_string(s.persistent_inputs) + " inputs from before the step in " +
           std::to_string(s.persistent_storages) + " storages of " +
           format_bytes(s.persistent_bytes) + " (" + std::to_string(s.parameters.size()) +
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
