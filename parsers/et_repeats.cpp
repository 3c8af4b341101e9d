// lend_execution_trace_iteration() (execution_trace.h): an Execution Trace's iteration lent to the
// repeats of its op sequence that the Kineto trace holds without shapes.
#include <algorithm>
#include <map>
#include <utility>

#include "replay/execution_trace.h"

namespace replay {
namespace {

// Each thread's dispatcher ops (category 0: user annotations and Python frames are not part of
// the sequence), in start order, longest first on equal starts, then index: the graph builder's
// order.
std::vector<std::vector<std::uint32_t>> ops_by_thread(const Trace& trace) {
    std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::uint32_t>> by_thread;
    for (std::uint32_t i = 0; i < trace.cpu_ops.size(); ++i) {
        const CpuOp& op = trace.cpu_ops[i];
        if (op.category == 0) by_thread[{op.pid, op.tid}].push_back(i);
    }
    std::vector<std::vector<std::uint32_t>> out;
    for (auto& [thread, ops] : by_thread) {
        std::stable_sort(ops.begin(), ops.end(), [&](std::uint32_t a, std::uint32_t b) {
            const CpuOp& x = trace.cpu_ops[a];
            const CpuOp& y = trace.cpu_ops[b];
            return x.ts != y.ts ? x.ts < y.ts : x.dur > y.dur;
        });
        out.push_back(std::move(ops));
    }
    return out;
}

bool unshaped(const CpuOp& op, const Trace& trace) {
    return op.shapes == kNoIndex || trace.op_shapes[op.shapes].inputs.empty();
}

}  // namespace

LentIteration lend_execution_trace_iteration(Trace& trace) {
    LentIteration lent;
    if (trace.storages.empty()) return lent;
    for (const auto& ops : ops_by_thread(trace)) {
        // The iteration: from the first op the join gave ids to the last.
        const auto joined = [&](std::uint32_t op) { return trace.storages.has(op); };
        const auto first = std::find_if(ops.begin(), ops.end(), joined);
        if (first == ops.end()) continue;
        const auto last = std::find_if(ops.rbegin(), ops.rend(), joined).base();
        const auto begin = static_cast<std::size_t>(first - ops.begin());
        const auto length = static_cast<std::size_t>(last - first);
        ++lent.threads;
        lent.pattern_ops += length;
        // One op is no sequence: a lone name found again says nothing about its shapes.
        if (length < 2) continue;
        const auto same_names = [&](std::size_t at) {
            for (std::size_t k = 0; k < length; ++k)
                if (trace.cpu_ops[ops[at + k]].name != trace.cpu_ops[ops[begin + k]].name)
                    return false;
            return true;
        };
        for (std::size_t at = 0; at + length <= ops.size();) {
            // Runs overlapping the iteration itself are no repeat of it.
            if (at + length > begin && at < begin + length) {
                at = begin + length;
                continue;
            }
            if (!same_names(at)) {
                ++at;
                continue;
            }
            ++lent.repeats;
            for (std::size_t k = 0; k < length; ++k) {
                const std::uint32_t from = ops[begin + k], to = ops[at + k];
                CpuOp& op = trace.cpu_ops[to];
                if (!unshaped(op, trace) || unshaped(trace.cpu_ops[from], trace)) continue;
                op.shapes = trace.cpu_ops[from].shapes;
                if (trace.storages.has(from) && !trace.storages.has(to))
                    trace.storages.set(to, trace.storages.get(from));
                ++lent.ops;
            }
            at += length;
        }
    }
    for (const CpuOp& op : trace.cpu_ops) lent.unshaped += op.category == 0 && unshaped(op, trace);
    return lent;
}

}  // namespace replay
