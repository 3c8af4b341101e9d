// `replay sweep --config FILE`: which unique kernels to sweep and over which grid, read from YAML
// (yaml-cpp) or JSON (simdjson). schemas/sweep_config.md describes the file.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "replay/sweep_grid.h"

namespace replay {

// A kernel is chosen when any of the lists matches it (an empty selector chooses none).
struct KernelSelector {
    std::vector<std::string> ids;    // unique kernel ids (16 hex digits, from classify)
    std::vector<std::string> names;  // regular expressions searched in the kernel or op name
    std::vector<int> tiers;          // 1-4
};

struct SweepSpec {
    KernelSelector kernels;
    std::vector<DimAxis> dims;  // in CSV column order
};

struct SweepConfig {
    std::string path;
    std::vector<SweepSpec> sweeps;
    std::optional<int> warmup, runs;
    std::optional<std::string> context;
};

// Throws InputError naming the file, the byte offset and the key that is wrong.
SweepConfig read_sweep_config(const std::string& path);
// `text` as a JSON document when it is one, else as YAML; `name` names it in errors.
SweepConfig parse_sweep_config(std::string_view text, const std::string& name);

}  // namespace replay
