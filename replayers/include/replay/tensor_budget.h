// What one recipe may allocate and touch, checked in each backend's prepare() before anything is
// allocated, so that a hostile recorded shape (one aten::copy_ whose dims became
// [1000000, 1000000, 1000000] over overlapping strides: 1e18 elements on a few bytes of storage)
// is skipped with a reason instead of exhausting the memory or running for days.
//
// Two limits, both against one byte budget (the device's free memory, or --max-tensor-bytes):
//   * memory: the storage the recipe's tensors need, summed (a recorded storage counted once);
//   * elements: what each tensor view spans, dims x element size, whatever its strides, so that
//     overlapping and broadcast strides count every element the op reads or writes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "replay/format_bytes.h"
#include "replay/recipe.h"

namespace replay {

struct TensorBudget {
    std::int64_t bytes = 0;
    std::string source;  // where the figure came from, for reasons: "free device memory", ...
};

// `max_tensor_bytes` (BackendOptions) when positive, else `free_bytes` described as `free_what`.
TensorBudget tensor_budget(std::int64_t max_tensor_bytes, std::int64_t free_bytes,
                           const std::string& free_what);

// nullopt when the recipe fits; else why not, naming the tensor (its argument or operand), its
// dims and the budget: the reason of a Skipped recipe.
std::optional<std::string> over_budget(const Recipe& recipe, const TensorBudget& budget);

// This host's available memory (MemAvailable of /proc/meminfo; free pages when it lacks it).
std::int64_t available_host_memory();

// This process's resident memory (/proc/self/statm), 0 where it cannot be read.
std::int64_t resident_memory();

// What a host-memory backend may still allocate: `cap` (fixed when the replay started: its
// resident memory then, plus three quarters of what was available) less what it holds now, and
// never more than three quarters of what is available now (other processes use memory too);
// --max-tensor-bytes (`max_tensor_bytes`) where it is the smaller.
// Checking each recipe against the available memory alone let a replay grow until the host had
// nothing left: every op fitted into three quarters of what the ops before it had left.
TensorBudget host_memory_budget(std::int64_t max_tensor_bytes, std::int64_t cap,
                                std::int64_t resident, std::int64_t available);

}  // namespace replay
