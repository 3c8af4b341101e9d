// What a TorchOpRunner prepared, ready to run: an op with its boxed stack, a GEMM with its
// operands, or a copy with its buffers. Internal to replayers/torch/.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "input_synthesis.h"

namespace replay::torch_detail {

struct OpWork {
    c10::OperatorHandle op;
    std::vector<c10::IValue> stack;  // copied per run: callBoxed consumes its stack
    std::vector<RecordedInput> inputs;
    // A dropout seed on the host (dropout_seed_on_host): under a CUDA graph capture the op
    // would hand its host address to the kernel, so it refuses to be captured.
    bool host_seed = false;
};

struct GemmWork {
    enum class Call : std::uint8_t { Mm, Addmm, Bmm, Baddbmm };
    Call call = Call::Mm;
    at::Tensor a, b, c, self;  // self: the added matrix / bias (addmm, baddbmm)
    double alpha = 1.0, beta = 0.0;
};

struct CopyWork {
    bool is_memset = false;
    int value = 0;
    // CPU: plain host buffers (touched at prepare so that page faults stay out of the timing).
    std::vector<std::byte> host_src, host_dst;
    // CUDA: byte tensors on the host (pinned when recorded so) and on the device.
    at::Tensor src, dst;
};

using Work = std::variant<OpWork, GemmWork, CopyWork>;

struct Entry {
    std::string label;
    Work work;
};

// Runs prepared work once on the current stream; throws what libtorch throws.
void run_work(Work& work);
// A trial call of `op` on a copy of `stack`: empty on success, else libtorch's error.
std::string trial_call(const c10::OperatorHandle& op, std::vector<c10::IValue> stack);

}  // namespace replay::torch_detail
