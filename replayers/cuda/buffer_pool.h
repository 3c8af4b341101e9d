// Buffers of the CUDA backend, allocated by size and reused: a request for (where, role, content,
// bytes) gets the smallest held buffer of that kind that is large enough, else a new one, after a
// check that the device keeps a reserve of free memory.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <tuple>

#include "cuda_raii.h"

namespace replay::cuda {

class BufferPool {
  public:
    // `device_reserve`: device bytes left free for cuBLAS, libtorch and the driver.
    explicit BufferPool(std::size_t device_reserve) : device_reserve_(device_reserve) {}

    struct Lease {
        void* data = nullptr;
        std::size_t bytes = 0;  // the buffer's capacity (>= the bytes asked for)
        bool created = false;   // new: its content is undefined (the caller fills it)
    };
    // role: an operand slot (distinct buffers within one recipe); content: what the buffer was
    // filled with (a FillType, or -1 for don't-care), so reused buffers keep valid values.
    // Returns nullopt with `why` when memory is short.
    std::optional<Lease> acquire(MemoryKind kind, int role, int content, std::size_t bytes,
                                 std::string& why);

    std::size_t bytes_held(MemoryKind kind) const;
    std::size_t buffer_count() const;
    void clear() { buffers_.clear(); }

  private:
    using Key = std::tuple<MemoryKind, int, int>;
    std::map<Key, std::multimap<std::size_t, Memory>> buffers_;
    std::size_t device_reserve_;
};

}  // namespace replay::cuda
