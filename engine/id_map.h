// A map from 64-bit trace ids (correlation, External id) to small values, for the graph builder's
// joins over hundreds of thousands of ids: open addressing in one array (16 bytes a slot for a
// 4-byte value, no node per entry), sized up front for the ids it will hold.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "replay/trace_model.h"

namespace replay {

template <typename Value>
class IdMap {
  public:
    // Room for `ids` distinct ids at a load of at most one half.
    explicit IdMap(std::size_t ids)
        : slots_(std::bit_ceil(std::max<std::size_t>(16, ids * 2))),
          shift_(64 - std::countr_zero(slots_.size())) {}

    // The value of `id`, inserted as `initial` when absent. `id` must not be kNoId (the empty
    // mark).
    Value& at(std::int64_t id, Value initial) {
        if (2 * (size_ + 1) > slots_.size()) grow();
        for (std::size_t i = home(id);; i = (i + 1) & (slots_.size() - 1)) {
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
        for (std::size_t i = home(id);; i = (i + 1) & (slots_.size() - 1)) {
            Slot& s = slots_[i];
            if (s.id == id) return &s.value;
            if (s.id == kNoId) return nullptr;
        }
    }

  private:
    struct Slot {
        std::int64_t id = kNoId;
        Value value{};
    };
    void grow() {
        std::vector<Slot> old(slots_.size() * 2);
        old.swap(slots_);
        --shift_;
        size_ = 0;
        for (const Slot& s : old)
            if (s.id != kNoId) at(s.id, s.value);
    }
    // Fibonacci hashing: ids are often consecutive, and the top bits of the product spread them.
    std::size_t home(std::int64_t id) const {
        return static_cast<std::size_t>((static_cast<std::uint64_t>(id) * 0x9E3779B97F4A7C15ull) >>
                                        shift_);
    }
    std::vector<Slot> slots_;
    int shift_;
    std::size_t size_ = 0;
};

}  // namespace replay
