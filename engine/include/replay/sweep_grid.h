// The grid of a shape sweep: each named dim takes the values of a progression (start, step, end
// with `mul` or `add`, as the kernel-sampling configs that sweeps replace write them) or an
// explicit list; the grid is their Cartesian product, split into parts for several GPUs or a
// SLURM array.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace replay {

enum class Progression { Mul, Add };

// start, start*step, ... (Mul) or start, start+step, ... (Add), up to and including `end`.
// Throws std::invalid_argument for a progression that cannot reach `end` (step < 2 with mul,
// < 1 with add, start < 1, end < start).
std::vector<std::int64_t> progression(std::int64_t start, std::int64_t step, std::int64_t end,
                                      Progression op);

struct DimAxis {
    std::string name;
    std::vector<std::int64_t> values;
};

// Every combination, the last dim varying fastest. Throws std::invalid_argument for an empty
// axis, a repeated dim or more than `max_points` points.
std::vector<std::vector<std::int64_t>> expand_grid(const std::vector<DimAxis>& axes,
                                                   std::size_t max_points = 10'000'000);

// Which part of the grid this process runs: part 1..parts.
struct GridPart {
    int parts = 1;
    int part = 1;
    std::string source;  // "--part", "SLURM_ARRAY_TASK_ID", "whole grid"
};
// From --parts/--part (0: not given) and else the SLURM array variables read through `env`
// (SLURM_ARRAY_TASK_ID less SLURM_ARRAY_TASK_MIN, or 0, is the 0-based part; --parts, else
// SLURM_ARRAY_TASK_COUNT, the number of parts). Throws std::invalid_argument for a part outside
// 1..parts.
GridPart choose_part(int parts, int part,
                     const std::function<const char*(const char*)>& env);

// The indices of the points that part `part` of `parts` runs: every parts-th point, so that each
// part gets small and large shapes alike.
std::vector<std::size_t> part_indices(std::size_t points, const GridPart& part);

}  // namespace replay
