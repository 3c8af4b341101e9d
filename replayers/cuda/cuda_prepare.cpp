// The CUDA backend's prepare(): a recipe into a launch (a copy or memset, a cuBLAS/cuBLASLt GEMM,
// a libtorch op, a Triton kernel) with its buffers from the pool, filled, and its warm-up reads.
#include <algorithm>
#include <stdexcept>

#include "cuda_backend_impl.h"

namespace replay::cuda {

Prepared CudaBackend::prepare(const Recipe& recipe) {
    try {
        REPLAY_CUDA_CALL(cudaSetDevice(options_.device));
        std::size_t free_bytes = 0, total_bytes = 0;
        REPLAY_CUDA_CALL(cudaMemGetInfo(&free_bytes, &total_bytes));
        const TensorBudget budget = tensor_budget(
            options_.max_tensor_bytes, static_cast<std::int64_t>(free_bytes), "free device memory");
        if (auto why = over_budget(recipe, budget)) return skipped(std::move(*why));
        return std::visit(
            [&](const auto& detail) -> Prepared {
                using T = std::decay_t<decltype(detail)>;
                if constexpr (std::is_same_v<T, CopyRecipe>) {
                    return prepare_copy(detail);
                } else if constexpr (std::is_same_v<T, GemmRecipe>) {
                    return prepare_gemm(detail);
                } else if constexpr (std::is_same_v<T, AtenRecipe>) {
                    return prepare_aten(detail);
                } else if constexpr (std::is_same_v<T, CollectiveRecipe>) {
                    return skipped("collectives (tier 4) are not replayed by the CUDA backend");
                } else if constexpr (std::is_same_v<T, TritonRecipe>) {
                    return prepare_triton(detail);
                } else {
                    return skipped(recipe.reason.empty() ? "no replay recipe" : recipe.reason);
                }
            },
            recipe.detail);
    } catch (const std::exception& e) {
        return {Disposition::Failed, e.what(), 0};
    }
}

void* CudaBackend::buffer(MemoryKind kind, int role, std::optional<FillType> fill,
                          std::size_t elements, std::size_t element_size, std::string& why,
                          FillRange range) {
    // What the pool may hand on: the same fill type and range.
    const int content = fill ? static_cast<int>(*fill) + 16 * static_cast<int>(range) : -1;
    auto lease = pool_.acquire(kind, role, content, elements * element_size, why);
    if (!lease) return nullptr;
    if (lease->created && fill) {
        // Fill the whole buffer: a later, larger recipe of the same dtype may reuse it.
        REPLAY_CUDA_CALL(launch_fill_uniform(lease->data, lease->bytes / element_size, *fill,
                                             next_fill_seed(), setup_stream_.get(), range));
    }
    return lease->data;
}

Prepared CudaBackend::prepare_copy(const CopyRecipe& c) {
    if (c.bytes <= 0) return skipped("copy of 0 bytes");
    const auto bytes = static_cast<std::size_t>(c.bytes);
    const MemoryKind host = c.host_pinned ? MemoryKind::Pinned : MemoryKind::Pageable;
    const char* host_name = c.host_pinned ? "Pinned" : "Pageable";
    std::string why, note;
    CopyLaunch launch;
    launch.bytes = bytes;
    auto get = [&](MemoryKind kind, int role) {
        return buffer(kind, role, std::nullopt, bytes, 1, why);
    };

    if (c.is_memset) {
        launch.memset = true;
        launch.value = c.value;
        launch.dst = get(MemoryKind::Device, 10);
        launch.label = "Memset (Device)";
        if (launch.dst == nullptr) return skipped(why);
        return {Disposition::Ready, note, add(std::move(launch), {})};
    }
    MemoryKind src = MemoryKind::Device, dst = MemoryKind::Device;
    launch.pageable = !c.host_pinned && c.direction != CopyDirection::DeviceToDevice &&
                      c.direction != CopyDirection::Device && c.direction != CopyDirection::PeerToPeer;
    switch (c.direction) {
        case CopyDirection::HostToDevice:
            src = host, launch.kind = cudaMemcpyHostToDevice;
            break;
        case CopyDirection::DeviceToHost:
            dst = host, launch.kind = cudaMemcpyDeviceToHost;
            break;
        case CopyDirection::HostToHost:
            src = dst = host, launch.kind = cudaMemcpyHostToHost;
            break;
        case CopyDirection::PeerToPeer:
            note = "peer copy replayed as device-to-device on one GPU";
            launch.kind = cudaMemcpyDeviceToDevice;
            break;
        case CopyDirection::DeviceToDevice:
        case CopyDirection::Device:
            launch.kind = cudaMemcpyDeviceToDevice;
            break;
    }
    void* from = get(src, 10);
    if (from == nullptr) return skipped(why);
    void* to = get(dst, 11);
    if (to == nullptr) return skipped(why);
    launch.src = from;
    launch.dst = to;
    auto kind_name = [&](MemoryKind k) { return k == MemoryKind::Device ? "Device" : host_name; };
    launch.label = std::string("Memcpy ") + memcpy_name(launch.kind) + " (" + kind_name(src) +
                   " -> " + kind_name(dst) + ")";
    return {Disposition::Ready, note, add(std::move(launch), {})};
}

Prepared CudaBackend::prepare_gemm(const GemmRecipe& recipe) {
    GemmRecipe g = recipe;
    if (auto why = normalize_gemm(g)) return skipped(*why);
    const GemmExtents extents = gemm_extents(g);
    const std::size_t ab_size = element_size(g.a_type), c_size = element_size(g.c_type);
    std::string why;
    CudaGemmBuffers buffers;
    // A recorded storage gets a buffer of its own (shared by every recipe that read it), so each
    // layer's weights are distinct memory as they were in the recording; else buffers by slot.
    auto role = [](int slot, std::int64_t storage) {
        return storage >= 0 ? storage_role(storage) : slot;
    };
    buffers.a = buffer(MemoryKind::Device, role(0, g.a_storage), fill_type(g.a_type), extents.a,
                       ab_size, why);
    if (buffers.a == nullptr) return skipped(why);
    buffers.b = buffer(MemoryKind::Device, role(1, g.b_storage), fill_type(g.b_type), extents.b,
                       ab_size, why);
    if (buffers.b == nullptr) return skipped(why);
    buffers.c = buffer(MemoryKind::Device, role(2, g.bias ? -1 : g.c_storage), fill_type(g.c_type),
                       extents.c, c_size, why);
    if (buffers.c == nullptr) return skipped(why);
    if (g.bias) {
        buffers.bias = buffer(MemoryKind::Device, role(3, g.c_storage), fill_type(g.bias_type),
                              extents.bias, element_size(g.bias_type), why);
        if (buffers.bias == nullptr) return skipped(why);
    }
    buffers.a_elements = extents.a, buffers.b_elements = extents.b, buffers.c_elements = extents.c;
    buffers.bias_elements = extents.bias;
    REPLAY_CUDA_CALL(cudaStreamSynchronize(setup_stream_.get()));

    GemmLaunch launch(g, blas_context_, buffers.a, buffers.b, buffers.c, buffers.bias);
    switch (launch.api()) {
        case GemmLaunch::Api::LtMatmul:
            buffers.api = "cublasLt";
            break;
        case GemmLaunch::Api::Gemm:
            buffers.api = "cublas gemm";
            break;
        case GemmLaunch::Api::GemmStridedBatched:
            buffers.api = "cublas strided batched";
            break;
    }
    // PyTorch's linear/addmm/mm take the weight as the second operand and the bias as `self`;
    // the parameter flags only matter when the trace has no reuse distances.
    const bool weight_b = g.op != "aten::bmm" && g.op != "aten::baddbmm";
    std::vector<InputRegion> inputs{{buffers.a, extents.a * ab_size, g.a_reuse_bytes, false},
                                    {buffers.b, extents.b * ab_size, g.b_reuse_bytes, weight_b}};
    if (g.bias)
        inputs.push_back(
            {buffers.bias, extents.bias * element_size(g.bias_type), g.c_reuse_bytes, true});
    else if (g.beta != 0)
        inputs.push_back({buffers.c, extents.c * c_size, g.c_reuse_bytes, weight_b});
    std::string note = launch.note();
    const std::vector<InputRegion> warm = inputs;
    return {Disposition::Ready, std::move(note),
            add(GemmEntry{std::move(launch), std::move(buffers), std::move(inputs)}, warm)};
}

Prepared CudaBackend::prepare_aten(const AtenRecipe& recipe) {
    if (!aten_tried_) {
        aten_tried_ = true;
        aten_ = AtenRunner::create(options_.device, options_.seed, options_.dataflow, aten_why_);
    }
    if (!aten_) return skipped(aten_why_);
    Prepared p = aten_->prepare(recipe);
    if (p.disposition != Disposition::Ready) return p;
    return {Disposition::Ready, std::move(p.reason),
            add(AtenLaunch{p.handle, aten_->label(p.handle)}, aten_->inputs(p.handle))};
}

Prepared CudaBackend::relocated(std::uint32_t handle) {
    const auto* aten = std::get_if<AtenLaunch>(&launch_at(handle));
    if (aten == nullptr || !aten_)
        return skipped("only aten ops' tensors are moved: GEMM operands come from a shared pool");
    Prepared p = aten_->relocated(aten->runner_handle);
    if (p.disposition != Disposition::Ready) return p;
    // The copies ran on libtorch's current stream; the backend's streams must see them done.
    REPLAY_CUDA_CALL(cudaDeviceSynchronize());
    return {Disposition::Ready, std::move(p.reason),
            add(AtenLaunch{p.handle, aten_->label(p.handle)}, aten_->inputs(p.handle))};
}

void CudaBackend::release(std::uint32_t handle) {
    const auto* aten = std::get_if<AtenLaunch>(&launch_at(handle));
    if (aten == nullptr || !aten_) return;
    aten_->release(aten->runner_handle);
    warm_reads_.at(handle - 1).clear();
}

Prepared CudaBackend::prepare_triton(const TritonRecipe& t) {
    if (t.cubin.empty()) return skipped("Triton kernel " + t.kernel + ": no compiled image");
    auto& kernel = triton_kernels_[t.variant];
    if (!kernel) {
        std::string why;
        kernel = TritonKernel::load(t.cubin, t.kernel, t.shared_bytes, why);
        if (!kernel) {
            triton_kernels_.erase(t.variant);
            return skipped(why);
        }
    }
    TritonLaunch launch;
    launch.kernel = kernel;
    std::copy(std::begin(t.grid), std::end(t.grid), launch.grid);
    launch.threads = t.num_warps * 32;
    launch.shared_bytes = t.shared_bytes;
    launch.label = t.kernel;
    // One buffer per wrapper buffer the launch names (an in-place kernel passes one twice).
    std::map<std::string, void*> buffers;
    // What it reads, for the warm-up reads: an earlier kernel's output, not a graph input (a
    // weight), counts as cached in the recording when it fits (no recorded reuse distance).
    std::vector<InputRegion> reads;
    std::string why;
    for (const auto& a : t.args) {
        launch.arg_bytes.push_back(a.pointer || a.bits == 64 ? 8 : 4);
        if (!a.pointer) {
            launch.args.push_back(static_cast<std::uint64_t>(a.value));
            continue;
        }
        void* data = nullptr;
        if (a.bytes > 0) {
            auto [it, added] = buffers.emplace(a.buffer, nullptr);
            if (added) {
                const std::optional<FillType> fill = fill_type(a.dtype);
                const std::size_t size = fill ? element_size(a.dtype) : 1;
                const auto elements = (static_cast<std::size_t>(a.bytes) + size - 1) / size;
                // Integers (indices, positions) get a buffer of their own: one shared by role
                // holds what another launch stored there (a decode's `cache_position + 1`), out
                // of range of the index asserts Inductor compiles in (`0 <= tmp7 < 257`).
                const int role = fill ? triton_operand_role(buffers.size())
                                      : kPrivateRoleBase + private_roles_++;
                it->second = buffer(MemoryKind::Device, role, fill, elements, size, why,
                                    a.positive ? FillRange::Positive : FillRange::Signed);
                if (it->second == nullptr) return skipped(why);
                // Indices the kernel checks against a bound are drawn below it (in-place
                // kernels pass a buffer twice: its smallest bound); other integers (offsets,
                // positions) are zeros, which every check passes.
                const int index_bytes = a.dtype == DType::Int64   ? 8
                                        : a.dtype == DType::Int32 ? 4
                                                                  : 0;
                std::int64_t bound = 0;
                for (const auto& other : t.args)
                    if (other.pointer && other.buffer == a.buffer && other.index_bound > 0)
                        bound = bound == 0 ? other.index_bound : std::min(bound, other.index_bound);
                if (!fill && bound > 0 && index_bytes > 0)
                    REPLAY_CUDA_CALL(launch_fill_indices(
                        it->second, elements / static_cast<std::size_t>(index_bytes), index_bytes,
                        bound, next_fill_seed(), setup_stream_.get()));
                else if (!fill)
                    REPLAY_CUDA_CALL(cudaMemsetAsync(it->second, 0, elements, setup_stream_.get()));
            }
            data = it->second;
            if (a.read && added)
                reads.push_back(
                    {data, static_cast<std::size_t>(a.bytes), kReuseUnknown, a.graph_input});
        }
        launch.args.push_back(reinterpret_cast<std::uintptr_t>(data));
    }
    REPLAY_CUDA_CALL(cudaStreamSynchronize(setup_stream_.get()));
    return {Disposition::Ready, "", add(std::move(launch), reads)};
}

std::uint32_t CudaBackend::add(Launch launch, const std::vector<InputRegion>& inputs) {
    // Which inputs the step reads into L2 first is decided here, once: warming a step is then
    // one launch with its ranges as arguments.
    std::vector<TouchList> warm;
    for (const InputRegion& in : inputs) {
        if (l2_bytes_ <= 0 || !cached_in_recording(in, static_cast<std::size_t>(l2_bytes_)))
            continue;
        if (warm.empty() || warm.back().count == TouchList::kCapacity) warm.emplace_back();
        TouchList& list = warm.back();
        list.data[list.count] = in.data;
        list.bytes[list.count] = in.bytes;
        ++list.count;
    }
    launches_.push_back(std::move(launch));
    warm_reads_.push_back(std::move(warm));
    return static_cast<std::uint32_t>(launches_.size());
}

const Launch& CudaBackend::launch_at(std::uint32_t handle) const {
    if (handle == 0 || handle > launches_.size())
        throw std::out_of_range("CUDA backend: unknown handle " + std::to_string(handle));
    return launches_[handle - 1];
}

cudaStream_t CudaBackend::stream_at(int index) const {
    if (index < 0 || static_cast<std::size_t>(index) >= streams_.size())
        throw std::out_of_range("CUDA backend: stream " + std::to_string(index) + " of " +
                                std::to_string(streams_.size()));
    return streams_[static_cast<std::size_t>(index)].get();
}

}  // namespace replay::cuda
