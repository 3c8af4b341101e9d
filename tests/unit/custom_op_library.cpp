// A custom-op library as vLLM or SGLang ship them: loading it registers its ops with the
// dispatcher (TORCH_LIBRARY), nothing calls it directly. The op library tests load it through
// REPLAY_TORCH_LIBRARIES.
#include <ATen/ATen.h>
#include <torch/library.h>

namespace {

at::Tensor scaled_add(const at::Tensor& self, const at::Tensor& other, double alpha) {
    return self + other * alpha;
}

}  // namespace

TORCH_LIBRARY(replay_test, m) {
    m.def("scaled_add(Tensor self, Tensor other, float alpha) -> Tensor");
}

TORCH_LIBRARY_IMPL(replay_test, CPU, m) {
    m.impl("scaled_add", TORCH_FN(scaled_add));
}
