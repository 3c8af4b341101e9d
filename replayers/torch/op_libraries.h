// Where ops come from: libtorch's own, and custom-op libraries named in REPLAY_TORCH_LIBRARIES
// (':'-separated paths: vLLM's _C / _moe_C, SGLang's sgl_kernel, fbgemm_gpu, ...), which register
// their ops with the dispatcher when loaded, so that recipes of those ops bind and replay like
// aten ops. And, for an op that is in neither, why not and what would provide it. Internal to
// replayers/torch/.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace replay::torch_detail {

// Loads the libraries REPLAY_TORCH_LIBRARIES names that this process has not loaded yet (each
// stays loaded: the ops it registered must not dangle). Returns one note per library named,
// "loaded PATH" or "could not load PATH: the loader's message".
std::vector<std::string> load_op_libraries();

// How many libraries load_op_libraries has loaded so far (caches of the dispatcher's op names
// are stale when it changes).
std::size_t loaded_op_libraries();

// Why `op` ("aten::_grouped_mm", "vllm::moe_forward") cannot bind: it names the op, what is
// missing, and what would provide it.
std::string missing_op_reason(const std::string& op);

}  // namespace replay::torch_detail
