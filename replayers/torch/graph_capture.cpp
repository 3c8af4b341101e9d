// Graph capture through libtorch's CUDAGraph: TorchOpRunner::begin_capture / end_capture.
//
// A capture that only the CUDA runtime knows of (cudaStreamBeginCapture) leaves libtorch's CUDA
// generator outside capture mode, and every op that draws random numbers (dropout, cuDNN
// attention with dropout) then fails in it: "Attempt to increase offset for a CUDA generator not
// in capture mode". A GPT-2 training step had 49 of its 1071 steps issued one by one for that,
// with gaps of up to 126 us around them. CUDAGraph registers the generator and sends what the
// captured ops allocate to a memory pool that stays theirs while the graph lives.
//
// The CUDA backend instantiates and launches the graph itself (keep_graph): without
// CUDAGraph::replay(), the generator's offsets do not move between launches, so every launch
// draws the same numbers, which a timing replay does not mind.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "replay/torch_ops.h"
#include "runner_impl.h"

#ifdef REPLAY_TORCH_CUDA
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/version.h>
// keep_graph (the graph for the caller to instantiate) came with PyTorch 2.8.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 8)
#define REPLAY_TORCH_GRAPH_CAPTURE 1
#endif
#endif

namespace replay {

#ifdef REPLAY_TORCH_GRAPH_CAPTURE

namespace {

using at::cuda::CUDAGraph;

c10::cuda::CUDAStream external_stream(void* stream, int device) {
    return c10::cuda::getStreamFromExternal(static_cast<cudaStream_t>(stream),
                                            static_cast<c10::DeviceIndex>(device));
}

// After a capture that failed between its begin and its end, libtorch's generator still thinks
// it is capturing, and every later random draw outside a capture would fail its assertion. A
// capture that ends well is what takes it out of that state: one of a single fill.
// `keep`: where the graph goes (it draws from `pool`). Runs on the current stream.
void end_generator_capture(int device, std::pair<unsigned long long, unsigned long long> pool,
                           std::vector<std::shared_ptr<void>>& keep) {
    at::Tensor scratch =
        at::empty({1}, at::TensorOptions()
                           .device(at::kCUDA, static_cast<c10::DeviceIndex>(device))
                           .dtype(at::kInt));
    auto graph = std::make_shared<CUDAGraph>(true);
    graph->capture_begin(pool, cudaStreamCaptureModeThreadLocal);
    scratch.zero_();
    graph->capture_end();
    keep.push_back(std::move(graph));
}

}  // namespace

std::string TorchOpRunner::begin_capture(void* cuda_stream) {
    Impl& impl = *impl_;
    if (impl.on_cpu()) return "a CPU runner has no CUDA graphs";
    if (impl.open_capture) return "a capture through libtorch is already open";
    try {
        c10::cuda::CUDAStreamGuard guard(external_stream(cuda_stream, impl.device.index));
        // One pool for all graphs: a captured op frees what it allocated before its graph ends,
        // so sharing costs nothing, and the memory held stays that of the largest graph.
        if (impl.capture_pool == std::pair<unsigned long long, unsigned long long>{0, 0})
            impl.capture_pool = at::cuda::graph_pool_handle();
        auto graph = std::make_shared<CUDAGraph>(true);
        graph->capture_begin(impl.capture_pool, cudaStreamCaptureModeThreadLocal);
        impl.open_capture = std::move(graph);
        return "";
    } catch (const std::exception& e) {
        return "libtorch could not begin a graph capture: " + torch_detail::short_error(e);
    }
}

void* TorchOpRunner::end_capture(void* cuda_stream, std::string& why) {
    Impl& impl = *impl_;
    auto graph = std::static_pointer_cast<CUDAGraph>(std::exchange(impl.open_capture, nullptr));
    if (!graph) {
        why = "no capture through libtorch is open";
        return nullptr;
    }
    // Kept even when the capture failed: libtorch's list of graphs being captured and its
    // allocators' filters for the pool may still point at it.
    impl.captures.push_back(graph);
    c10::cuda::CUDAStreamGuard guard(external_stream(cuda_stream, impl.device.index));
    try {
        graph->capture_end();
        return graph->raw_cuda_graph();
    } catch (const std::exception& e) {
        why = torch_detail::short_error(e);
    }
    // capture_end() threw when the runtime ended the capture with an error, before the
    // generator left capture mode and (in some libtorch versions) before the allocators stopped
    // recording to the pool, which they then refuse to record to again. So the graphs to come
    // take a new pool, and a capture that ends well takes the generator out of capture mode.
    (void)cudaGetLastError();
    try {
        impl.capture_pool = at::cuda::graph_pool_handle();
        end_generator_capture(impl.device.index, impl.capture_pool, impl.captures);
    } catch (const std::exception& e) {
        // The CUDA backend looks for these words (aten_runner.h, kNotRestored).
        why += "; and libtorch's state after it could not be restored: " +
               torch_detail::short_error(e);
    }
    return nullptr;
}

#else

std::string TorchOpRunner::begin_capture(void*) {
#ifdef REPLAY_TORCH_CUDA
    return "this libtorch (" TORCH_VERSION ") has no CUDAGraph with keep_graph (PyTorch 2.8)";
#else
    return "this build's libtorch has no CUDA";
#endif
}

void* TorchOpRunner::end_capture(void*, std::string& why) {
    why = "no capture through libtorch is open";
    return nullptr;
}

#endif

}  // namespace replay
