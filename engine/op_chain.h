// An op and its enclosing ops (CpuOp::parent links), kept as a stack from one op to the next.
// Internal to engine/: the dataflow inference and the classifier visit ops (or the ops of
// kernels) one after the other, and consecutive ones share most of their chain; walking each
// op's whole chain again costs a dependent load per level, and op chains can nest hundreds deep.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "replay/trace_model.h"

namespace replay {

class OpChain {
  public:
    explicit OpChain(const std::vector<CpuOp>& ops) : ops_(ops) {}

    // Makes the stack `op`'s chain: the outermost enclosing op first, `op` itself last (none for
    // kNoIndex). Walks up from `op` only to the nearest op already on the stack; the ops above
    // that one leave the stack (pop() before each leaves, from the top) and the walked ones
    // enter it (push(op) after each enters, outermost first), so that callers can keep facts
    // per level beside it.
    template <typename Pop, typename Push>
    void enter(std::uint32_t op, Pop&& pop, Push&& push) {
        walked_.clear();
        std::size_t keep = 0;
        for (std::uint32_t q = op; q != kNoIndex; q = ops_[q].parent) {
            if (const std::size_t at = position(q); at != kAbsent) {
                keep = at + 1;
                break;
            }
            walked_.push_back(q);
        }
        while (chain_.size() > keep) {
            pop();
            --in_bucket_[bucket(chain_.back())];
            chain_.pop_back();
        }
        for (auto it = walked_.rbegin(); it != walked_.rend(); ++it) {
            chain_.push_back(*it);
            ++in_bucket_[bucket(*it)];
            push(*it);
        }
    }

    // The chain, outermost first.
    const std::vector<std::uint32_t>& ops() const { return chain_; }
    std::size_t size() const { return chain_.size(); }
    // Whether `op` is on the chain: `op` itself or one of its enclosing ops.
    bool holds(std::uint32_t op) const { return position(op) != kAbsent; }

  private:
    static constexpr std::size_t kAbsent = static_cast<std::size_t>(-1);
    static constexpr std::size_t kBuckets = 256;
    static std::size_t bucket(std::uint32_t op) { return (op * 0x9E3779B1u) >> 24; }
    // Searched from the top (the op entered next is mostly a child or a sibling of the last),
    // after the bucket counts rule most absent ops out without a search.
    std::size_t position(std::uint32_t op) const {
        if (in_bucket_[bucket(op)] == 0) return kAbsent;
        for (std::size_t i = chain_.size(); i-- > 0;)
            if (chain_[i] == op) return i;
        return kAbsent;
    }

    const std::vector<CpuOp>& ops_;
    std::vector<std::uint32_t> chain_;
    std::vector<std::uint32_t> walked_;
    std::array<std::uint32_t, kBuckets> in_bucket_{};  // ops of chain_ per bucket()
};

}  // namespace replay
