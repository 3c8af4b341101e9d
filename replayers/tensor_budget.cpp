#include "replay/tensor_budget.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <string_view>
#include <vector>

namespace replay {
namespace {

// Recorded sizes can be anything: arithmetic on them saturates instead of overflowing.
constexpr std::int64_t kHuge = std::numeric_limits<std::int64_t>::max();

std::int64_t mul(std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    return __builtin_mul_overflow(a, b, &r) ? kHuge : r;
}
std::int64_t add(std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    return __builtin_add_overflow(a, b, &r) ? kHuge : r;
}

// One tensor of a recipe as the budget sees it.
struct Tensor {
    std::string name;  // "argument 0", "argument 1[2]", "A", "bias", "source"
    std::vector<std::int64_t> dims;
    std::vector<std::int64_t> strides;  // empty: contiguous
    std::int64_t storage_offset = 0;
    std::int64_t storage_id = -1;  // recorded storage, allocated once for all its views
    DType dtype = DType::Float32;
};

Tensor plain_tensor(std::string name, std::vector<std::int64_t> dims, DType dtype) {
    Tensor t;
    t.name = std::move(name);
    t.dims = std::move(dims);
    t.dtype = dtype;
    return t;
}

struct Extent {
    std::int64_t elements = 0;  // what the view spans: the product of its dims
    std::int64_t storage = 0;   // what its storage must hold
};

Extent extent_of(const Tensor& t) {
    Extent e;
    e.elements = 1;
    for (auto d : t.dims) {
        if (d <= 0) return {};  // empty (or invalid: the backend says so) allocates nothing
        e.elements = mul(e.elements, d);
    }
    if (t.strides.size() != t.dims.size()) {
        e.storage = e.elements;
    } else {
        e.storage = 1;
        for (std::size_t i = 0; i < t.dims.size(); ++i)
            e.storage = add(e.storage, mul(t.dims[i] - 1, t.strides[i] < 0 ? kHuge : t.strides[i]));
    }
    // A recorded storage is allocated up to the view's offset; a private one keeps only its
    // alignment (torch replay) or none (CUDA buffers).
    if (t.storage_id >= 0) e.storage = add(e.storage, std::max<std::int64_t>(t.storage_offset, 0));
    return e;
}

std::string dims_text(const std::vector<std::int64_t>& dims) {
    std::string text = "[";
    for (std::size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
    return text + "]";
}

constexpr std::string_view kMemoryCap = "the replay's memory cap";

std::string budget_text(const TensorBudget& budget) {
    // --max-tensor-bytes can lower the memory cap (host_memory_budget), not lift it.
    const bool settable =
        budget.source != "--max-tensor-bytes" && !budget.source.starts_with(kMemoryCap);
    return "the " + format_bytes(budget.bytes) + " tensor budget (" + budget.source +
           (settable ? "; --max-tensor-bytes sets it" : "") + ")";
}

std::optional<std::string> check(const std::string& what, const std::vector<Tensor>& tensors,
                                 const TensorBudget& budget) {
    std::int64_t private_bytes = 0;
    std::map<std::int64_t, std::int64_t> shared_bytes;  // storage id -> bytes of its largest view
    const Tensor* largest = nullptr;
    std::int64_t largest_bytes = -1;
    for (const Tensor& t : tensors) {
        const Extent e = extent_of(t);
        const auto element_bytes = static_cast<std::int64_t>(element_size(t.dtype));
        if (mul(e.elements, element_bytes) > budget.bytes)
            return what + " " + t.name + " " + dims_text(t.dims) + " spans " +
                   std::to_string(e.elements) + " " + to_string(t.dtype) + " elements (" +
                   format_bytes(mul(e.elements, element_bytes)) + "), over " + budget_text(budget);
        const std::int64_t bytes = mul(e.storage, element_bytes);
        if (t.storage_id >= 0) {
            auto& slot = shared_bytes[t.storage_id];
            slot = std::max(slot, bytes);
        } else {
            private_bytes = add(private_bytes, bytes);
        }
        if (bytes > largest_bytes) largest = &t, largest_bytes = bytes;
    }
    std::int64_t total = private_bytes;
    for (const auto& [id, bytes] : shared_bytes) total = add(total, bytes);
    if (total > budget.bytes && largest != nullptr)
        return what + " needs " + format_bytes(total) + " of tensors (largest: " + largest->name +
               " " + dims_text(largest->dims) + ", " + format_bytes(largest_bytes) + "), over " +
               budget_text(budget);
    return std::nullopt;
}

// A GEMM operand (row-major rows x cols, column-major when `trans`), batched with `batch_stride`
// when batch > 1 (0: broadcast over the batch; negative: the natural stride).
Tensor gemm_operand(std::string name, std::int64_t rows, std::int64_t cols, bool trans,
                    std::int64_t ld, std::int64_t batch, std::int64_t batch_stride, DType dtype,
                    std::int64_t storage_id) {
    ld = std::max(ld, trans ? rows : cols);
    Tensor t = plain_tensor(std::move(name), {rows, cols},
                            dtype == DType::Unknown ? DType::Float32 : dtype);
    t.strides = {trans ? 1 : ld, trans ? ld : 1};
    if (batch > 1) {
        if (batch_stride < 0) batch_stride = mul(trans ? cols : rows, ld);
        t.dims.insert(t.dims.begin(), batch);
        t.strides.insert(t.strides.begin(), batch_stride);
    }
    t.storage_id = storage_id;
    return t;
}

std::vector<Tensor> tensors_of(const CopyRecipe& copy) {
    std::vector<Tensor> tensors{plain_tensor("destination", {copy.bytes}, DType::UInt8)};
    if (!copy.is_memset) tensors.push_back(plain_tensor("source", {copy.bytes}, DType::UInt8));
    return tensors;
}

std::vector<Tensor> tensors_of(const GemmRecipe& g) {
    const DType c_type = g.c_type == DType::Unknown ? g.a_type : g.c_type;
    std::vector<Tensor> tensors{
        gemm_operand("A", g.m, g.k, g.trans_a, g.lda, g.batch, g.stride_a, g.a_type, g.a_storage),
        gemm_operand("B", g.k, g.n, g.trans_b, g.ldb, g.batch, g.stride_b, g.b_type, g.b_storage),
        gemm_operand("C", g.m, g.n, false, g.ldc, g.batch, g.stride_c > 0 ? g.stride_c : -1, c_type,
                     g.bias ? -1 : g.c_storage)};
    if (g.bias) {
        Tensor bias =
            plain_tensor("bias", {g.n}, g.bias_type == DType::Unknown ? c_type : g.bias_type);
        bias.storage_id = g.c_storage;
        tensors.push_back(std::move(bias));
    }
    return tensors;
}

std::vector<Tensor> tensors_of(const AtenRecipe& op) {
    std::vector<Tensor> tensors;
    for (std::size_t i = 0; i < op.args.size(); ++i) {
        const auto& specs = op.args[i].tensors;
        for (std::size_t j = 0; j < specs.size(); ++j) {
            const TensorSpec& s = specs[j];
            std::string name = "argument " + std::to_string(i);
            if (op.args[i].kind == ArgKind::TensorList)
                name.append("[").append(std::to_string(j)).append("]");
            Tensor t = plain_tensor(std::move(name), s.dims,
                                    s.dtype == DType::Unknown ? DType::Float32 : s.dtype);
            t.strides = s.strides;
            t.storage_offset = s.storage_offset;
            t.storage_id = s.storage_id;
            tensors.push_back(std::move(t));
        }
    }
    return tensors;
}

}  // namespace

TensorBudget tensor_budget(std::int64_t max_tensor_bytes, std::int64_t free_bytes,
                           const std::string& free_what) {
    if (max_tensor_bytes > 0) return {max_tensor_bytes, "--max-tensor-bytes"};
    return {std::max<std::int64_t>(free_bytes, 0), free_what};
}

std::optional<std::string> over_budget(const Recipe& recipe, const TensorBudget& budget) {
    if (const auto* copy = std::get_if<CopyRecipe>(&recipe.detail))
        return check(copy->is_memset ? "memset" : "memcpy", tensors_of(*copy), budget);
    if (const auto* gemm = std::get_if<GemmRecipe>(&recipe.detail))
        return check(gemm->op.empty() ? "GEMM" : gemm->op, tensors_of(*gemm), budget);
    if (const auto* op = std::get_if<AtenRecipe>(&recipe.detail))
        return check(op->op, tensors_of(*op), budget);
    return std::nullopt;  // nothing this process allocates
}

std::int64_t available_host_memory() {
    std::ifstream meminfo("/proc/meminfo");
    for (std::string line; std::getline(meminfo, line);) {
        long long kib = 0;
        if (std::sscanf(line.c_str(), "MemAvailable: %lld kB", &kib) == 1) return mul(kib, 1024);
    }
    const long pages = sysconf(_SC_AVPHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
    return pages > 0 && page_size > 0 ? mul(pages, page_size) : 0;
}

std::int64_t resident_memory() {
    std::ifstream statm("/proc/self/statm");
    long long size = 0, resident = 0;
    const long page_size = sysconf(_SC_PAGESIZE);
    if (!(statm >> size >> resident) || page_size <= 0) return 0;
    return mul(resident, page_size);
}

TensorBudget host_memory_budget(std::int64_t max_tensor_bytes, std::int64_t cap,
                                std::int64_t resident, std::int64_t available) {
    const std::int64_t now = available / 4 * 3;
    const std::int64_t left = std::max<std::int64_t>(cap - resident, 0);
    TensorBudget memory{now, "3/4 of available RAM"};
    if (left < now)
        memory = {left, std::string(kMemoryCap) + " (" + format_bytes(cap) +
                            ": its resident memory at the start and 3/4 of the RAM then "
                            "available; " +
                            format_bytes(resident) + " in use)"};
    // --max-tensor-bytes narrows the budget; it does not lift the cap that keeps the host alive.
    if (max_tensor_bytes > 0 && max_tensor_bytes <= memory.bytes)
        return tensor_budget(max_tensor_bytes, memory.bytes, memory.source);
    return memory;
}

}  // namespace replay
