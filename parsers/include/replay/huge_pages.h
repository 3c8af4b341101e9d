// Large arrays built after the parse (graph nodes, storage-id records) are written page by page:
// on a trace of a gigabyte that is tens of thousands of page faults, each a kernel entry and a
// zeroed 4 KiB page. Asking for transparent huge pages on such an array turns 512 of them into
// one.
#pragma once

#include <cstddef>
#include <vector>

namespace replay {

// Asks the kernel to back the whole 2 MiB pages inside [data, data + bytes) with huge pages
// (madvise MADV_HUGEPAGE; a hint: nothing happens where the system does not offer them, or for
// arrays under 4 MiB). Call before the pages are first written.
void advise_huge_pages(const void* data, std::size_t bytes);

// A vector of `size` value-initialised elements whose storage was advised before it was written.
template <typename T>
std::vector<T> huge_page_vector(std::size_t size) {
    std::vector<T> v;
    v.reserve(size);
    advise_huge_pages(v.data(), size * sizeof(T));
    v.resize(size);
    return v;
}

}  // namespace replay
