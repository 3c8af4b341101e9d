// The state behind TorchOpRunner (torch_ops.h), shared by the files that prepare and run its work:
// torch_ops.cpp (aten ops and the public interface), gemm_copy_prepare.cpp, dispatch.cpp.
// Internal to replayers/torch/.
#pragma once

#include <c10/core/InferenceMode.h>

#include <cstdint>
#include <exception>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "input_synthesis.h"
#include "prepared_work.h"
#include "replay/torch_ops.h"
#include "torch_values.h"

namespace replay {

struct TorchOpRunner::Impl {
    TorchDevice device;
    torch_detail::InputSynthesis synthesis;
    std::vector<torch_detail::Entry> entries;
    std::set<std::string> notes;
    // Graph captures through libtorch (graph_capture.cpp), type-erased: at::cuda::CUDAGraph is
    // only known to CUDA builds. The open one, and every one that ended, kept to the end.
    std::shared_ptr<void> open_capture;
    std::vector<std::shared_ptr<void>> captures;
    std::pair<unsigned long long, unsigned long long> capture_pool{0, 0};  // shared by them all

    Impl(TorchDevice d, std::uint64_t seed, bool dataflow);

    bool on_cpu() const { return device.kind == TorchDevice::Kind::Cpu; }
    std::uint32_t add(std::string label, torch_detail::Work work) {
        entries.push_back(torch_detail::Entry{std::move(label), std::move(work)});
        return static_cast<std::uint32_t>(entries.size() - 1);
    }

    // These may throw: the public prepare methods run them through guarded_prepare.
    Prepared prepare_op(const AtenRecipe& recipe);
    Prepared prepare_gemm(const GemmRecipe& recipe);
    Prepared prepare_copy(const CopyRecipe& recipe);
    // Runs prepared work on the current stream: empty on success, else why it failed.
    std::string run(std::uint32_t handle);
    bool reads_host_seed(std::uint32_t handle) const;  // OpWork::host_seed
};

namespace torch_detail {

// Prepares without autograd bookkeeping (replay times the kernels), and turns whatever libtorch
// throws into a Failed recipe: prepare never throws.
template <typename Prepare>
Prepared guarded_prepare(Prepare&& prepare) {
    c10::InferenceMode inference;
    try {
        return prepare();
    } catch (const std::exception& e) {
        return Prepared{Disposition::Failed, short_error(e), 0};
    }
}

}  // namespace torch_detail
}  // namespace replay
