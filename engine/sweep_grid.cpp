#include "replay/sweep_grid.h"

#include <charconv>
#include <limits>
#include <optional>
#include <set>
#include <stdexcept>
#include <string_view>

namespace replay {
namespace {

std::optional<long long> to_int(const char* text) {
    if (text == nullptr || *text == '\0') return std::nullopt;
    const std::string_view s(text);
    long long v = 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
    return v;
}

}  // namespace

std::vector<std::int64_t> progression(std::int64_t start, std::int64_t step, std::int64_t end,
                                      Progression op) {
    const char* name = op == Progression::Mul ? "mul" : "add";
    const auto bad = [&](const std::string& why) {
        return std::invalid_argument("progression start " + std::to_string(start) + ", step " +
                                     std::to_string(step) + ", end " + std::to_string(end) + ", " +
                                     name + ": " + why);
    };
    if (start < 1) throw bad("start must be >= 1");
    if (end < start) throw bad("end must be >= start");
    if (op == Progression::Mul && step < 2) throw bad("a mul step must be >= 2");
    if (op == Progression::Add && step < 1) throw bad("an add step must be >= 1");
    std::vector<std::int64_t> out;
    for (std::int64_t v = start; v <= end;) {
        out.push_back(v);
        if (out.size() > 1'000'000) throw bad("more than 1,000,000 values");
        const std::int64_t limit = std::numeric_limits<std::int64_t>::max();
        if (op == Progression::Mul) {
            if (v > limit / step) break;
            v *= step;
        } else {
            if (v > limit - step) break;
            v += step;
        }
    }
    return out;
}

std::vector<std::vector<std::int64_t>> expand_grid(const std::vector<DimAxis>& axes,
                                                   std::size_t max_points) {
    std::set<std::string> names;
    std::size_t total = 1;
    for (const auto& axis : axes) {
        if (axis.values.empty()) throw std::invalid_argument("dim " + axis.name + " has no values");
        if (!names.insert(axis.name).second)
            throw std::invalid_argument("dim " + axis.name + " is given twice");
        if (total > max_points / axis.values.size())
            throw std::invalid_argument("the grid has more than " + std::to_string(max_points) +
                                        " points");
        total *= axis.values.size();
    }
    std::vector<std::vector<std::int64_t>> points;
    if (axes.empty()) return points;
    points.reserve(total);
    std::vector<std::size_t> at(axes.size(), 0);
    for (std::size_t p = 0; p < total; ++p) {
        std::vector<std::int64_t> point(axes.size());
        for (std::size_t d = 0; d < axes.size(); ++d) point[d] = axes[d].values[at[d]];
        points.push_back(std::move(point));
        for (std::size_t d = axes.size(); d-- > 0;) {
            if (++at[d] < axes[d].values.size()) break;
            at[d] = 0;
        }
    }
    return points;
}

GridPart choose_part(int parts, int part, const std::function<const char*(const char*)>& env) {
    GridPart out;
    if (part > 0) {
        out.parts = parts > 0 ? parts : 1;
        out.part = part;
        out.source = "--part";
    } else if (auto id = to_int(env("SLURM_ARRAY_TASK_ID"))) {
        const long long min = to_int(env("SLURM_ARRAY_TASK_MIN")).value_or(0);
        const auto count = to_int(env("SLURM_ARRAY_TASK_COUNT"));
        out.parts = parts > 0 ? parts : static_cast<int>(count.value_or(1));
        out.part = static_cast<int>(*id - min + 1);
        out.source = "SLURM_ARRAY_TASK_ID";
    } else {
        if (parts > 1)
            throw std::invalid_argument("--parts " + std::to_string(parts) +
                                        " needs --part i (or SLURM_ARRAY_TASK_ID)");
        out.source = "whole grid";
    }
    if (out.parts < 1 || out.part < 1 || out.part > out.parts)
        throw std::invalid_argument("part " + std::to_string(out.part) + " of " +
                                    std::to_string(out.parts) + " (from " + out.source +
                                    "): parts are numbered 1 to --parts");
    return out;
}

std::vector<std::size_t> part_indices(std::size_t points, const GridPart& part) {
    std::vector<std::size_t> out;
    for (std::size_t i = static_cast<std::size_t>(part.part - 1); i < points;
         i += static_cast<std::size_t>(part.parts))
        out.push_back(i);
    return out;
}

}  // namespace replay
