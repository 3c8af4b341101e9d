#include "replay/trace_model.h"

namespace replay {

StringPool::StringPool() {
    intern("");
}

NameId StringPool::intern(std::string_view text) {
    if (auto it = index_.find(text); it != index_.end()) return it->second;
    const auto id = static_cast<NameId>(strings_.size());
    const std::string& stored = storage_.emplace_back(text);
    strings_.push_back(&stored);
    index_.emplace(std::string_view(stored), id);
    return id;
}

const char* to_string(ActivityKind kind) {
    switch (kind) {
        case ActivityKind::Kernel:
            return "kernel";
        case ActivityKind::Memcpy:
            return "memcpy";
        case ActivityKind::Memset:
            return "memset";
    }
    return "?";
}

OpShapes& Trace::own_shapes(CpuOp& op) {
    OpShapes copy;
    if (op.shapes != kNoIndex) copy = op_shapes[op.shapes];
    op.shapes = static_cast<std::uint32_t>(op_shapes.size());
    return op_shapes.emplace_back(std::move(copy));
}

std::size_t Trace::count(ActivityKind kind) const {
    std::size_t n = 0;
    for (const auto& a : activities) n += a.kind == kind;
    return n;
}

Nanos Trace::total_time(ActivityKind kind) const {
    Nanos sum = 0;
    for (const auto& a : activities)
        if (a.kind == kind) sum += a.dur;
    return sum;
}

}  // namespace replay
