// libtorch replay of aten ops, GEMMs and copies. See torch_ops.h for the interface; the work is
// split by step: schema_binding (which overload, where each argument comes from), input_synthesis
// (the tensors and the boxed stack), gemm_copy_prepare, dispatch (the call). This file prepares
// aten ops from those steps and holds the public interface.
//
// On the CPU every op gets one trial run in prepare: a kernel missing for float16/bfloat16
// (libtorch 1.13 lacks many) is retried with those tensors in float32.
#include "replay/torch_ops.h"

#include <torch/version.h>

#include <optional>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "op_libraries.h"
#include "runner_impl.h"
#include "schema_binding.h"

#ifdef REPLAY_TORCH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace replay {

using torch_detail::guarded_prepare;

namespace {

struct ReducedFloats {
    bool half = false, bfloat = false;
    bool any() const { return half || bfloat; }
};

ReducedFloats reduced_floats_of(const AtenRecipe& recipe) {
    ReducedFloats found;
    for (const auto& arg : recipe.args)
        for (const auto& t : arg.tensors) {
            found.half |= t.dtype == DType::Float16;
            found.bfloat |= t.dtype == DType::BFloat16;
        }
    return found;
}

c10::Device torch_device_of(TorchDevice device) {
    if (device.kind == TorchDevice::Kind::Cuda)
        return {c10::kCUDA, static_cast<c10::DeviceIndex>(device.index)};
    return c10::Device(c10::kCPU);
}

TorchDevice parse_device(const std::string& text) {
    if (text == "cpu") return {TorchDevice::Kind::Cpu, 0};
    if (text == "cuda") return {TorchDevice::Kind::Cuda, 0};
    if (text.starts_with("cuda:"))
        if (auto index = torch_detail::parse_int(std::string_view(text).substr(5));
            index && *index >= 0 && *index < 256)
            return {TorchDevice::Kind::Cuda, static_cast<int>(*index)};
    throw std::invalid_argument("unknown device '" + text + "' (expected cpu, cuda or cuda:N)");
}

}  // namespace

TorchOpRunner::Impl::Impl(TorchDevice d, std::uint64_t seed, bool dataflow)
    : device(d), synthesis(torch_device_of(d), seed, dataflow) {
    for (std::string& note : torch_detail::load_op_libraries()) notes.insert(std::move(note));
}

Prepared TorchOpRunner::Impl::prepare_op(const AtenRecipe& recipe) {
    Prepared result;
    auto best = torch_detail::bind_overload(recipe, result.reason);
    if (!best) return result;
    const auto key = on_cpu() ? c10::DispatchKey::CPU : c10::DispatchKey::CUDA;
    if (!best->op.hasComputedKernelForDispatchKey(key)) {
        result.reason = recipe.op + " has no " + (on_cpu() ? "CPU" : "CUDA") +
                        " kernel in this libtorch (" + TORCH_VERSION + ")";
        return result;
    }

    // The stack, its integer tensors' values checked on the host before anything launches: a
    // synthesis bug skips the kernel instead of raising a device-side assert.
    std::string why;
    auto build = [&](bool promote) -> std::optional<torch_detail::BuiltStack> {
        auto built = synthesis.build_stack(*best, recipe, promote, why);
        if (!built) return std::nullopt;
        why = torch_detail::check_constraints(*best, *built);
        if (!why.empty()) return std::nullopt;
        return built;
    };
    auto built = build(false);
    if (!built) {
        result.reason = why;
        return result;
    }
    // On the CPU a trial run is cheap and catches kernels missing for a dtype (libtorch
    // 1.13 has no CPU kernels for many float16 ops); on CUDA it would cost device time and
    // report errors asynchronously, so types are only validated there.
    if (on_cpu()) {
        std::string error = torch_detail::trial_call(best->op, built->stack);
        const ReducedFloats reduced = reduced_floats_of(recipe);
        if (!error.empty() && reduced.any()) {
            auto promoted = build(true);
            // A promoted run that fails too keeps the original dtype's error: it says what the
            // trace needs.
            if (promoted && torch_detail::trial_call(best->op, promoted->stack).empty()) {
                result.reason = torch_detail::reduced_float_note(reduced.half, reduced.bfloat);
                notes.insert(result.reason);
                built = std::move(promoted);
                error.clear();
            }
        }
        if (!error.empty()) {
            result.disposition = Disposition::Failed;
            result.reason = recipe.op + " failed on the CPU: " + error;
            return result;
        }
    }
    if (const std::string guesses = torch_detail::guessed_arguments(*best, recipe);
        !guesses.empty())
        result.reason += (result.reason.empty() ? "" : "; ") +
                         std::string("guessed unrecorded arguments: ") + guesses;
    synthesis.drain_fills();
    torch_detail::OpWork work{best->op, std::move(built->stack), {}, built->host_seed};
    work.inputs = torch_detail::inputs_of(*best, work.stack);
    result.handle = add(recipe.op, std::move(work));
    result.disposition = Disposition::Ready;
    return result;
}

// ---- public interface ---------------------------------------------------------------------------

TorchOpRunner::TorchOpRunner(TorchDevice device, std::uint64_t seed, bool dataflow)
    : impl_(std::make_unique<Impl>(device, seed, dataflow)) {}
TorchOpRunner::TorchOpRunner(const std::string& device, std::uint64_t seed, bool dataflow)
    : TorchOpRunner(parse_device(device), seed, dataflow) {}
TorchOpRunner::~TorchOpRunner() = default;
TorchOpRunner::TorchOpRunner(TorchOpRunner&&) noexcept = default;
TorchOpRunner& TorchOpRunner::operator=(TorchOpRunner&&) noexcept = default;

Prepared TorchOpRunner::prepare(const AtenRecipe& recipe) {
    return guarded_prepare([&] { return impl_->prepare_op(recipe); });
}
Prepared TorchOpRunner::prepare_gemm(const GemmRecipe& recipe) {
    return guarded_prepare([&] { return impl_->prepare_gemm(recipe); });
}
Prepared TorchOpRunner::prepare_copy(const CopyRecipe& recipe) {
    return guarded_prepare([&] { return impl_->prepare_copy(recipe); });
}

std::string TorchOpRunner::run(std::uint32_t handle) {
    return impl_->run(handle);
}

std::string TorchOpRunner::run(std::uint32_t handle, void* cuda_stream) {
    if (cuda_stream == nullptr) return impl_->run(handle);
#ifdef REPLAY_TORCH_CUDA
    if (impl_->on_cpu()) return "a CUDA stream was given to a CPU runner";
    try {
        const auto index = static_cast<c10::DeviceIndex>(impl_->device.index);
        // Makes the external stream current (and its device) for every kernel the op launches.
        c10::cuda::CUDAStreamGuard guard(
            c10::cuda::getStreamFromExternal(static_cast<cudaStream_t>(cuda_stream), index));
        if (impl_->reads_host_seed(handle)) {
            cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
            if (cudaStreamIsCapturing(static_cast<cudaStream_t>(cuda_stream), &capturing) !=
                    cudaSuccess ||
                capturing != cudaStreamCaptureStatusNone) {
                cudaGetLastError();
                return "it reads its dropout seed from host memory, and captured in a CUDA "
                       "graph it would hand the kernel that host address";
            }
        }
        return impl_->run(handle);
    } catch (const std::exception& e) {
        return torch_detail::short_error(e);
    }
#else
    return "this build's libtorch has no CUDA: cannot run on a CUDA stream";
#endif
}

std::vector<InputRegion> TorchOpRunner::inputs(std::uint32_t handle) const {
    std::vector<InputRegion> regions;
    if (handle >= impl_->entries.size()) return regions;
    const auto* work = std::get_if<torch_detail::OpWork>(&impl_->entries[handle].work);
    if (work == nullptr) return regions;
    for (const auto& in : work->inputs) {
        const at::Tensor& t = in.tensor;
        if (!t.defined() || t.numel() == 0 || t.device().type() != impl_->synthesis.device().type())
            continue;
        const std::int64_t extent = view_extent({t.sizes().data(), t.sizes().size()},
                                                {t.strides().data(), t.strides().size()});
        regions.push_back(InputRegion{t.data_ptr(),
                                      static_cast<std::size_t>(extent * t.element_size()),
                                      in.reuse_bytes, in.parameter});
    }
    return regions;
}

const std::string& TorchOpRunner::label(std::uint32_t handle) const {
    static const std::string unknown = "unknown";
    return handle < impl_->entries.size() ? impl_->entries[handle].label : unknown;
}

std::vector<std::string> TorchOpRunner::notes() const {
    return {impl_->notes.begin(), impl_->notes.end()};
}

bool TorchOpRunner::has_cuda() {
#ifdef REPLAY_TORCH_CUDA
    return true;
#else
    return false;
#endif
}

const char* TorchOpRunner::libtorch_version() {
    return TORCH_VERSION;
}

}  // namespace replay
