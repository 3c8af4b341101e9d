// The library calls of Inductor's wrapper code (ExternCall, in replay/inductor_cache.h): read here,
// given to the kernels they launched in inductor_externs.cpp.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "replay/inductor_cache.h"

namespace replay {

// The wrapper's library calls (`extern_kernels.<op>(...)`, `torch.ops.aten.<op>.<overload>(...)`)
// outside comments, each with its position in `text`. `buffers` are the file's allocations and
// asserted graph inputs, which give a tensor named bare its sizes, strides and type, and
// `aliases` the names that reuse another's allocation (`buf5 = buf2; del buf2  # reuse`). The
// result of a call (`buf2 = extern_kernels.convolution(...)`) whose element type the wrapper
// does not state takes its first tensor argument's, in `buffers`. A tensor named after one of
// `input_storages` (the graph's inputs: its parameters, its caches) carries that storage id, so
// that each layer's weights are memory of their own in the replay, as they were recorded.
std::vector<std::pair<std::size_t, ExternCall>> parse_extern_calls(
    const std::string& text, std::map<std::string, WrapperBuffer>& buffers,
    const std::unordered_map<std::string, std::string>& aliases,
    const std::map<std::string, std::int64_t>& input_storages);

}  // namespace replay
