#include "buffer_pool.h"

#include <algorithm>
#include <cstring>
#include <new>

namespace replay::cuda {
namespace {

constexpr std::size_t kGranule = 512;
constexpr std::size_t kPage = 4096;

std::size_t round_up(std::size_t bytes, std::size_t granule) {
    return (std::max<std::size_t>(bytes, 1) + granule - 1) / granule * granule;
}

std::string mib(std::size_t bytes) {
    return std::to_string((bytes + (1u << 19)) >> 20) + " MiB";
}

}  // namespace

const char* to_string(MemoryKind kind) {
    switch (kind) {
        case MemoryKind::Device:
            return "device";
        case MemoryKind::Pinned:
            return "pinned host";
        case MemoryKind::Pageable:
            return "pageable host";
    }
    return "?";
}

Memory::Memory(MemoryKind kind, std::size_t bytes) : kind_(kind) {
    switch (kind) {
        case MemoryKind::Device:
            REPLAY_CUDA_CALL(cudaMalloc(&data_, bytes));
            break;
        case MemoryKind::Pinned:
            REPLAY_CUDA_CALL(cudaMallocHost(&data_, bytes));
            break;
        case MemoryKind::Pageable:
            bytes = round_up(bytes, kPage);
            data_ = std::aligned_alloc(kPage, bytes);
            if (data_ == nullptr) throw std::bad_alloc();
            std::memset(data_, 0, bytes);  // fault the pages in now, not during a timed copy
            break;
    }
    bytes_ = bytes;
    ++made_counts().allocations;
    made_counts().allocated_bytes += bytes;
}

void Memory::reset() noexcept {
    if (data_ == nullptr) return;
    switch (kind_) {
        case MemoryKind::Device:
            REPLAY_CUDA_CALL_NOEXCEPT(cudaFree(data_));
            break;
        case MemoryKind::Pinned:
            REPLAY_CUDA_CALL_NOEXCEPT(cudaFreeHost(data_));
            break;
        case MemoryKind::Pageable:
            std::free(data_);
            break;
    }
    data_ = nullptr;
    bytes_ = 0;
}

std::optional<BufferPool::Lease> BufferPool::acquire(MemoryKind kind, int role, int content,
                                                     std::size_t bytes, std::string& why) {
    auto& held = buffers_[Key{kind, role, content}];
    if (auto it = held.lower_bound(bytes); it != held.end())
        return Lease{it->second.data(), it->first, false};

    const std::size_t size = round_up(bytes, kGranule);
    if (kind == MemoryKind::Device) {
        std::size_t free = 0, total = 0;
        if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
            cudaGetLastError();
            why = "cudaMemGetInfo failed";
            return std::nullopt;
        }
        if (size + device_reserve_ > free) {
            why = "needs " + mib(size) + " of device memory; " + mib(free) + " free, " +
                  mib(device_reserve_) + " kept in reserve";
            return std::nullopt;
        }
    }
    try {
        Memory memory(kind, size);
        void* data = memory.data();
        const std::size_t capacity = memory.bytes();
        held.emplace(capacity, std::move(memory));
        return Lease{data, capacity, true};
    } catch (const std::exception& e) {
        why = std::string("cannot allocate ") + mib(size) + " of " + to_string(kind) +
              " memory: " + e.what();
        return std::nullopt;
    }
}

std::size_t BufferPool::bytes_held(MemoryKind kind) const {
    std::size_t total = 0;
    for (const auto& [key, held] : buffers_)
        if (std::get<0>(key) == kind)
            for (const auto& [bytes, memory] : held) total += bytes;
    return total;
}

std::size_t BufferPool::buffer_count() const {
    std::size_t count = 0;
    for (const auto& [key, held] : buffers_) count += held.size();
    return count;
}

}  // namespace replay::cuda
