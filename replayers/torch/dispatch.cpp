// The dispatcher call: prepared work run once. Aten ops go through the dispatcher's boxed
// convention (OperatorHandle::callBoxed on a stack of IValues), so that any registered op can be
// replayed from its name and recorded arguments without generated C++ bindings; GEMMs through
// the out= variants of at::mm & co., so that no output is allocated in a timed run.
#include <c10/core/DeviceGuard.h>

#include <cstring>
#include <type_traits>

#include "runner_impl.h"

namespace replay {
namespace torch_detail {

void run_work(Work& work) {
    std::visit(
        [](auto& w) {
            using T = std::decay_t<decltype(w)>;
            if constexpr (std::is_same_v<T, OpWork>) {
                auto stack = w.stack;  // callBoxed replaces the arguments by the results
                w.op.callBoxed(&stack);
            } else if constexpr (std::is_same_v<T, GemmWork>) {
                switch (w.call) {
                    case GemmWork::Call::Mm:
                        at::mm_out(w.c, w.a, w.b);
                        break;
                    case GemmWork::Call::Addmm:
                        at::addmm_out(w.c, w.self, w.a, w.b, w.beta, w.alpha);
                        break;
                    case GemmWork::Call::Bmm:
                        at::bmm_out(w.c, w.a, w.b);
                        break;
                    case GemmWork::Call::Baddbmm:
                        at::baddbmm_out(w.c, w.self, w.a, w.b, w.beta, w.alpha);
                        break;
                }
            } else {
                if (w.dst.defined()) {
                    if (w.is_memset)
                        w.dst.fill_(w.value);
                    else
                        w.dst.copy_(w.src, /*non_blocking=*/true);
                } else if (w.is_memset) {
                    std::memset(w.host_dst.data(), w.value, w.host_dst.size());
                } else if (!w.host_dst.empty()) {
                    std::memcpy(w.host_dst.data(), w.host_src.data(), w.host_dst.size());
                }
            }
        },
        work);
}

std::string trial_call(const c10::OperatorHandle& op, std::vector<c10::IValue> stack) {
    try {
        op.callBoxed(&stack);
    } catch (const std::exception& e) {
        return short_error(e);
    }
    return {};
}

}  // namespace torch_detail

bool TorchOpRunner::Impl::reads_host_seed(std::uint32_t handle) const {
    if (handle >= entries.size()) return false;
    const auto* op = std::get_if<torch_detail::OpWork>(&entries[handle].work);
    return op != nullptr && op->host_seed;
}

std::string TorchOpRunner::Impl::run(std::uint32_t handle) {
    if (handle >= entries.size()) return "unknown handle " + std::to_string(handle);
    c10::InferenceMode inference;
    c10::OptionalDeviceGuard device_guard;
    if (!on_cpu()) device_guard.reset_device(synthesis.device());
    try {
        torch_detail::run_work(entries[handle].work);
    } catch (const std::exception& e) {
        return torch_detail::short_error(e);
    }
    return {};
}

}  // namespace replay
