// OpStorages: the storage ids of each op instance, beside the shared OpShapes; DimsTable.
#include <algorithm>
#include <bit>
#include <stdexcept>

#include "replay/huge_pages.h"
#include "replay/trace_model.h"

namespace replay {
namespace {

std::uint64_t hash_values(std::span<const std::int64_t> values) {
    std::uint64_t h = values.size();
    for (const std::int64_t v : values)
        h = std::rotl((h ^ static_cast<std::uint64_t>(v)) * 0x9E3779B97F4A7C15ULL, 27);
    return h;
}

template <typename T>
std::size_t heap_of(const std::vector<T>& v) {
    return v.capacity() * sizeof(T);
}

// The parts of a record: two header words (inputs; outputs | has-lists), the input ids, a
// (storage, dims) pair per output, and with lists one element count per input, then the ids.
struct Layout {
    std::uint32_t inputs = 0, outputs = 0;
    bool lists = false;
    static constexpr std::uint32_t kHasLists = 0x80000000u;
    static constexpr std::size_t kHeader = 2;
    explicit Layout(const std::uint32_t* record)
        : inputs(record[0]), outputs(record[1] & ~kHasLists), lists((record[1] & kHasLists) != 0) {}
    std::size_t input_at(std::size_t i) const { return kHeader + i; }
    std::size_t output_at(std::size_t k) const { return kHeader + inputs + 2 * k; }
    std::size_t list_sizes_at() const { return kHeader + inputs + 2 * std::size_t{outputs}; }
    // Where the element ids of input `input` start (input == inputs: the record's end).
    std::size_t list_at(const std::uint32_t* record, std::size_t input) const {
        std::size_t at = list_sizes_at() + inputs;
        for (std::size_t i = 0; i < input; ++i) at += record[list_sizes_at() + i];
        return at;
    }
    std::size_t size(const std::uint32_t* record) const {
        return lists ? list_at(record, inputs) : list_sizes_at();
    }
};

}  // namespace

DimsTable::DimsTable() {
    intern({});
}

std::uint32_t DimsTable::intern(std::span<const std::int64_t> dims) {
    const std::uint64_t h = hash_values(dims);
    for (auto [it, end] = index_.equal_range(h); it != end; ++it)
        if (std::ranges::equal((*this)[it->second], dims)) return it->second;
    if (values_.size() + dims.size() >= 0xFFFFFFFFu)
        throw std::length_error("DimsTable: more than 2^32 dims values");
    const auto id = static_cast<std::uint32_t>(size());
    values_.insert(values_.end(), dims.begin(), dims.end());
    at_.push_back(static_cast<std::uint32_t>(values_.size()));
    index_.emplace(h, id);
    return id;
}

std::size_t DimsTable::bytes() const {
    return heap_of(values_) + heap_of(at_) +
           index_.size() * (sizeof(std::pair<std::uint64_t, std::uint32_t>) + 2 * sizeof(void*)) +
           index_.bucket_count() * sizeof(void*);
}

std::uint32_t OpStorages::encode(std::int64_t id) {
    if (id == kNoId) return kNone;
    if (id >= 0 && id < static_cast<std::int64_t>(kWide)) return static_cast<std::uint32_t>(id);
    if (wide_.size() >= kNone - kWide) throw std::length_error("OpStorages: too many wide ids");
    wide_.push_back(id);
    return static_cast<std::uint32_t>(kWide + wide_.size() - 1);
}

std::int64_t OpStorages::input(std::uint32_t op, std::size_t input) const {
    const std::uint32_t* r = record(op);
    if (r == nullptr) return kNoId;
    const Layout l(r);
    return input < l.inputs ? decode(r[l.input_at(input)]) : kNoId;
}

OpStorages::Ids OpStorages::list(std::uint32_t op, std::size_t input) const {
    const std::uint32_t* r = record(op);
    if (r == nullptr) return Ids(this, nullptr, 0);
    const Layout l(r);
    if (!l.lists || input >= l.inputs) return Ids(this, nullptr, 0);
    return Ids(this, r + l.list_at(r, input), r[l.list_sizes_at() + input]);
}

std::size_t OpStorages::outputs(std::uint32_t op) const {
    const std::uint32_t* r = record(op);
    return r == nullptr ? 0 : Layout(r).outputs;
}

OpStorages::Output OpStorages::output(std::uint32_t op, std::size_t k) const {
    const std::uint32_t* r = record(op);
    if (r == nullptr || k >= Layout(r).outputs) return {};
    const std::size_t at = Layout(r).output_at(k);
    return {decode(r[at]), dims_[r[at + 1]]};
}

void OpStorages::reserve(std::size_t ops, std::size_t words, Touch touch) {
    if (at_.size() < ops) at_.resize(ops, kNone);
    if (words > words_.capacity()) {
        words_.reserve(words);
        advise_huge_pages(words_.data() + words_.size(),
                          (words - words_.size()) * sizeof(std::uint32_t));
    }
    // Written and given back: the capacity stays, its pages now resident.
    if (const std::size_t kept = words_.size(); touch == Touch::Now && words > kept) {
        words_.resize(words);
        words_.resize(kept);
    }
}

std::uint32_t* OpStorages::allocate(std::uint32_t op, std::size_t inputs, std::size_t outputs,
                                    std::span<const std::uint32_t> list_sizes) {
    if (inputs >= Layout::kHasLists || outputs >= Layout::kHasLists)
        throw std::length_error("OpStorages: an op with more than 2^31 inputs or outputs");
    std::size_t size = Layout::kHeader + inputs + 2 * outputs;
    if (!list_sizes.empty()) size += inputs;
    for (const std::uint32_t n : list_sizes) size += n;
    if (words_.size() + size >= kNone)
        throw std::length_error("OpStorages: more than 2^32 words of storage ids");
    if (op >= at_.size()) at_.resize(op + 1, kNone);
    records_ += at_[op] == kNone;
    at_[op] = static_cast<std::uint32_t>(words_.size());
    words_.resize(words_.size() + size, kNone);
    std::uint32_t* r = words_.data() + at_[op];
    r[0] = static_cast<std::uint32_t>(inputs);
    r[1] = static_cast<std::uint32_t>(outputs) | (list_sizes.empty() ? 0 : Layout::kHasLists);
    const Layout l(r);
    for (std::size_t k = 0; k < outputs; ++k) r[l.output_at(k) + 1] = DimsTable::kEmpty;
    std::copy(list_sizes.begin(), list_sizes.end(), r + l.list_sizes_at());
    return r;
}

void OpStorages::add(std::uint32_t op, std::span<const std::int64_t> inputs, std::size_t outputs) {
    // encode() grows wide_, never words_: the record stays where allocate() put it.
    std::uint32_t* r = allocate(op, inputs.size(), outputs, {}) + Layout::kHeader;
    for (const std::int64_t id : inputs) *r++ = encode(id);
}

OpStorages::Record OpStorages::get(std::uint32_t op) const {
    Record out;
    const std::uint32_t* r = record(op);
    if (r == nullptr) return out;
    const Layout l(r);
    for (std::size_t i = 0; i < l.inputs; ++i) out.inputs.push_back(decode(r[l.input_at(i)]));
    for (std::size_t k = 0; k < l.outputs; ++k)
        out.outputs.push_back({decode(r[l.output_at(k)]), r[l.output_at(k) + 1]});
    if (l.lists)
        for (std::size_t i = 0; i < l.inputs; ++i) {
            const Ids ids = list(op, i);
            auto& values = out.lists.emplace_back();
            for (std::size_t e = 0; e < ids.size(); ++e) values.push_back(ids[e]);
        }
    return out;
}

void OpStorages::set(std::uint32_t op, const Record& record) {
    const std::size_t inputs = std::max(record.inputs.size(), record.lists.size());
    std::vector<std::uint32_t> sizes;
    if (std::ranges::any_of(record.lists, [](const auto& ids) { return !ids.empty(); })) {
        sizes.assign(inputs, 0);
        for (std::size_t i = 0; i < record.lists.size(); ++i)
            sizes[i] = static_cast<std::uint32_t>(record.lists[i].size());
    }
    // encode() grows wide_, never words_: the record stays where allocate() put it.
    std::uint32_t* r = allocate(op, inputs, record.outputs.size(), sizes);
    const Layout l(r);
    for (std::size_t i = 0; i < record.inputs.size(); ++i) r[l.input_at(i)] = encode(record.inputs[i]);
    if (!sizes.empty()) {
        std::uint32_t* element = r + l.list_at(r, 0);
        for (const auto& ids : record.lists)
            for (const std::int64_t id : ids) *element++ = encode(id);
    }
    for (std::size_t k = 0; k < record.outputs.size(); ++k) {
        r[l.output_at(k)] = encode(record.outputs[k].storage);
        r[l.output_at(k) + 1] = record.outputs[k].dims;
    }
}

void OpStorages::set_output(std::uint32_t op, std::size_t k, OutputIds output) {
    std::uint32_t* r = record(op);
    if (r == nullptr || k >= Layout(r).outputs)
        throw std::out_of_range("OpStorages::set_output: op " + std::to_string(op) +
                                " has no record with output " + std::to_string(k));
    r[Layout(r).output_at(k)] = encode(output.storage);
    r[Layout(r).output_at(k) + 1] = output.dims;
}

std::size_t OpStorages::bytes() const {
    return heap_of(at_) + heap_of(words_) + heap_of(wide_) + dims_.bytes();
}

}  // namespace replay
