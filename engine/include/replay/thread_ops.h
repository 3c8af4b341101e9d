// Each thread's CPU ops in start order, as KernelGraph::build sorts them to nest them, handed on
// to the passes that walk the ops thread by thread (the dataflow inference) so that they need not
// group and sort them again.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace replay {

struct ThreadOps {
    // Trace::cpu_ops indices, every op's: thread by thread (threads in the order of their first
    // op in Trace::cpu_ops), each thread's by (start, longest first, index).
    std::vector<std::uint32_t> order;
    std::vector<std::uint32_t> begin;  // where each thread's ops start in `order`, then the end

    std::size_t threads() const { return begin.empty() ? 0 : begin.size() - 1; }
    std::span<const std::uint32_t> of(std::size_t thread) const {
        if (thread + 1 >= begin.size()) return {};
        return {order.data() + begin[thread], order.data() + begin[thread + 1]};
    }
};

}  // namespace replay
