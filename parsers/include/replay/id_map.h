// A map from 64-bit trace ids (correlation, External id) to small values, for the graph builder's
// joins over hundreds of thousands of ids: open addressing in one array (16 bytes a slot for a
// 4-byte value, no node per entry), sized up front for the ids it will hold, at most 2/3 full.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "replay/trace_model.h"

namespace replay {

template <typename Value>
class IdMap {
  public:
    explicit IdMap(std::size_t ids) : slots_(capacity_for(ids)) {}

    // The value of `id`, inserted as `initial` when absent. `id` must not be kNoId (the empty
    // mark).
    Value& at(std::int64_t id, Value initial) {
        if (3 * (size_ + 1) > 2 * slots_.size()) grow();
        for (std::size_t i = home(id);; i = next(i)) {
            Slot& s = slots_[i];
            if (s.id == id) return s.value;
            if (s.id == kNoId) {
                ++size_;
                s.id = id;
                s.value = initial;
                return s.value;
            }
        }
    }
    // The value of `id`, or nullptr when it was never inserted.
    Value* find(std::int64_t id) {
        if (id == kNoId) return nullptr;
        for (std::size_t i = home(id);; i = next(i)) {
            Slot& s = slots_[i];
            if (s.id == id) return &s.value;
            if (s.id == kNoId) return nullptr;
        }
    }

    // Asks the cache for the slot `id` starts its search at.
    void prefetch(std::int64_t id) const { __builtin_prefetch(&slots_[home(id)]); }

  private:
    struct Slot {
        std::int64_t id = kNoId;
        Value value{};
    };
    static std::size_t capacity_for(std::size_t ids) {
        return std::max<std::size_t>(16, ids * 3 / 2 + 1);
    }
    void grow() {
        std::vector<Slot> old(capacity_for(slots_.size()));
        old.swap(slots_);
        size_ = 0;
        for (const Slot& s : old)
            if (s.id != kNoId) at(s.id, s.value);
    }
    // Fibonacci hashing spreads consecutive ids (they often are); the product's top bits, scaled
    // to the table's size, pick the slot.
    std::size_t home(std::int64_t id) const {
        const std::uint64_t h = static_cast<std::uint64_t>(id) * 0x9E3779B97F4A7C15ull;
        return static_cast<std::size_t>((static_cast<unsigned __int128>(h) * slots_.size()) >> 64);
    }
    std::size_t next(std::size_t i) const { return i + 1 == slots_.size() ? 0 : i + 1; }
    std::vector<Slot> slots_;
    std::size_t size_ = 0;
};

}  // namespace replay
