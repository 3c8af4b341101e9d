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
        // The repeats: the pattern's occurrences in the thread's names (Knuth-Morris-Pratt:
        // linear however often a prefix of it recurs, as a model's identical layers make it),
        // taken left to right, apart from one another and from the iteration itself.
        const auto name_at = [&](std::size_t k) { return trace.cpu_ops[ops[k]].name; };
        const auto pattern = [&](std::size_t k) { return name_at(begin + k); };
        std::vector<std::size_t> border(length, 0);  // longest proper border of pattern[0, k]
        for (std::size_t k = 1, b = 0; k < length; ++k) {
            while (b > 0 && pattern(k) != pattern(b)) b = border[b - 1];
            if (pattern(k) == pattern(b)) ++b;
            border[k] = b;
        }
        std::size_t free_from = 0;  // a repeat starts here or later (the last one's end)
        for (std::size_t at = 0, matched = 0; at < ops.size(); ++at) {
            while (matched > 0 && name_at(at) != pattern(matched)) matched = border[matched - 1];
            if (name_at(at) == pattern(matched)) ++matched;
            if (matched < length) continue;
            const std::size_t start = at + 1 - length;
            matched = border[matched - 1];
            const bool overlaps_iteration = start < begin + length && begin < start + length;
            if (start < free_from || overlaps_iteration) continue;
            free_from = start + length;
            ++lent.repeats;
            for (std::size_t k = 0; k < length; ++k) {
                const std::uint32_t from = ops[begin + k], to = ops[start + k];
                CpuOp& op = trace.cpu_ops[to];
                if (!unshaped(op, trace) || unshaped(trace.cpu_ops[from], trace)) continue;
                op.shapes = trace.cpu_ops[from].shapes;
                if (trace.storages.has(from) && !trace.storages.has(to))
                    trace.storages.set(to, trace.storages.get(from));
                ++lent.ops;
            }
        }
    }
    for (const CpuOp& op : trace.cpu_ops) lent.unshaped += op.category == 0 && unshaped(op, trace);
    return lent;
}

}  // namespace replay
