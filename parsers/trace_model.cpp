#include "replay/trace_model.h"

#include <bit>

namespace replay {

StringPool::StringPool() {
    intern("");
}

StringPool::StringPool(const StringPool& other) {
    strings_.reserve(other.strings_.size());
    index_.reserve(other.index_.size());
    for (const std::string* s : other.strings_) {
        const std::string& stored = storage_.emplace_back(*s);
        index_.emplace(std::string_view(stored), static_cast<NameId>(strings_.size()));
        strings_.push_back(&stored);
    }
}

StringPool& StringPool::operator=(const StringPool& other) {
    if (this != &other) *this = StringPool(other);
    return *this;
}

NameId StringPool::intern(std::string_view text) {
    if (auto it = index_.find(text); it != index_.end()) return it->second;
    const auto id = static_cast<NameId>(strings_.size());
    const std::string& stored = storage_.emplace_back(text);
    strings_.push_back(&stored);
    index_.emplace(std::string_view(stored), id);
    return id;
}

NameId StringPool::find(std::string_view text) const {
    const auto it = index_.find(text);
    return it != index_.end() ? it->second : kNoIndex;
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

bool is_graph_memset_kernel(std::string_view name) {
    constexpr std::string_view kPrefix = "memset";
    return name.size() > kPrefix.size() && name.starts_with(kPrefix) &&
           name.find_first_not_of("0123456789", kPrefix.size()) == std::string_view::npos;
}

std::uint64_t content_hash(const OpShapes& shapes) {
    std::uint64_t h = 0x243F6A8885A308D3ULL;
    const auto mix = [&](std::uint64_t v) {
        h = std::rotl((h ^ v) * 0x9E3779B97F4A7C15ULL, 27) + 0x632BE59BD9B4E019ULL;
    };
    const auto mix_all = [&](const auto& values) {
        mix(values.size());
        for (const auto v : values) mix(static_cast<std::uint64_t>(v));
    };
    mix(shapes.schema);
    mix(shapes.inputs.size());
    for (const OpArgument& arg : shapes.inputs) {
        mix(arg.type);
        mix(arg.concrete);
        mix(arg.element_type);
        mix(static_cast<std::uint64_t>(arg.storage_offset));
        mix(arg.has_strides);
        mix_all(arg.dims);
        mix_all(arg.strides);
        mix_all(arg.list_ranks);
    }
    return h;
}

std::uint32_t Trace::share_shapes(OpShapes shapes) {
    if (shapes_indexed_ > op_shapes.size()) shapes_index_.clear(), shapes_indexed_ = 0;
    for (; shapes_indexed_ < op_shapes.size(); ++shapes_indexed_)
        shapes_index_.emplace(content_hash(op_shapes[shapes_indexed_]),
                              static_cast<std::uint32_t>(shapes_indexed_));
    const std::uint64_t h = content_hash(shapes);
    for (auto [it, end] = shapes_index_.equal_range(h); it != end; ++it)
        if (it->second < op_shapes.size() && op_shapes[it->second] == shapes) return it->second;
    const auto entry = static_cast<std::uint32_t>(op_shapes.size());
    op_shapes.push_back(std::move(shapes));
    shapes_index_.emplace(h, entry);
    shapes_indexed_ = op_shapes.size();
    return entry;
}

std::uint32_t ThreadIndex::slot(std::int64_t pid, std::int64_t tid) {
    if (last_ != kNoIndex && pid == last_pid_ && tid == last_tid_) return last_;
    auto it = slots_.try_emplace({pid, tid}, static_cast<std::uint32_t>(slots_.size())).first;
    last_pid_ = pid, last_tid_ = tid, last_ = it->second;
    return last_;
}

void OpThreads::add(const CpuOp& op) {
    const std::uint32_t slot = threads_.slot(op.pid, op.tid);
    if (slot == counts_.size()) counts_.push_back(0);
    ++counts_[slot];
    of_op_.push_back(slot);
}

OpThreads::Taken OpThreads::take() {
    Taken taken{std::move(threads_), std::move(counts_), std::move(of_op_)};
    *this = OpThreads{};
    return taken;
}

ActivityTotals Trace::activity_totals() const {
    ActivityTotals totals;
    for (const auto& a : activities) {
        const auto kind = static_cast<std::size_t>(a.kind);
        ++totals.counts[kind];
        totals.times[kind] += a.dur;
    }
    return totals;
}

}  // namespace replay
