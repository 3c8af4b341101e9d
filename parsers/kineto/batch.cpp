// Merging a parsed batch into the trace (BatchMerger) and the batch's category tallies.
#include "kineto/batch.h"

#include <algorithm>
#include <bit>

namespace replay::kineto {
namespace {

// How many elements a trace vector holding `count` after this chunk should end up with,
// extrapolated over the whole input (0 when the input size is unknown, e.g. a pipe).
std::size_t forecast(std::size_t count, const InputProgress& chunk) {
    const double done = static_cast<double>(chunk.json_done);  // JSON bytes so far
    if (chunk.raw_size == 0 || chunk.raw_offset == 0 || done <= 0) return 0;
    const double total =
        static_cast<double>(chunk.raw_size) * done / static_cast<double>(chunk.raw_offset);
    if (total <= done) return 0;
    return static_cast<std::size_t>(static_cast<double>(count) * (total / done) * 1.05) + 1024;
}

// Makes room for `adding` more elements: for the whole input at once when its size is known,
// so that the big vectors are not copied over and over while they double (and do not leave an
// old and a new copy in memory at the same time); else by doubling. Only capacity changes.
template <typename T>
void make_room(std::vector<T>& v, std::size_t adding, const InputProgress& chunk) {
    const std::size_t need = v.size() + adding;
    if (need <= v.capacity()) return;
    const std::size_t ahead = forecast(need, chunk);
    if (ahead >= need)
        v.reserve(std::max(ahead, v.capacity() + v.capacity() / 4));
    else
        v.reserve(chunk.last
                      ? need
                      : std::max(need, 2 * v.capacity()));  // nothing more comes after the last
}

}  // namespace

void Tally::merge_into(std::map<std::string, std::uint64_t>& out) const {
    for (std::size_t k = 0; k < known_.size(); ++k)
        for (std::size_t c = 0; c < known_[k].size(); ++c)
            if (known_[k][c] != 0)
                out[key(true, kKnownCategories[k].text, std::string(1, static_cast<char>(c)))] +=
                    known_[k][c];
    for (const Entry& e : entries_) out[key(e.has_cat, e.cat, e.ph)] += e.count;
    for (const auto& [k, n] : overflow_) out[k] += n;
}

std::string Tally::key(bool has_cat, std::string_view cat, std::string_view ph) {
    std::string tally(has_cat ? cat : std::string_view("(none)"));
    tally += '/';
    tally += ph;
    return tally;
}

void BatchMerger::merge(Batch& b, const InputProgress& chunk) {
    Trace& t = trace_;
    make_room(t.activities, b.activities.size(), chunk);
    make_room(t.cpu_ops, b.cpu_ops.size(), chunk);
    t.op_threads.reserve(t.cpu_ops.capacity());
    make_room(t.runtime_calls, b.runtime_calls.size(), chunk);
    map_.resize(b.names.size());
    for (std::size_t i = 0; i < b.names.size(); ++i) map_[i] = t.names.intern(b.names.view(i));
    const auto name = [&](NameId id) { return map_[id]; };
    const auto label = [&](std::int64_t v) {
        return -1 - static_cast<std::int64_t>(map_[static_cast<std::size_t>(-1 - v)]);
    };

    const std::size_t a0 = t.activities.size();
    t.activities.insert(t.activities.end(), b.activities.begin(), b.activities.end());
    for (std::size_t i = 0; i < b.activities.size(); ++i) {
        GpuActivity& a = t.activities[a0 + i];
        a.name = name(a.name);
        a.collective = name(a.collective);
        a.collective_dtype = name(a.collective_dtype);
        if (b.activity_labels[i] & kTidLabel) a.stream = label(a.stream);
    }
    hasher_.add(t, a0, t.activities.size());

    // Each batch entry becomes an equal entry of an earlier batch where there is one (found
    // by a hash of its contents, confirmed by comparing), else a new one: batches share
    // entries, and so do ops whose texts differed only in layout or member order.
    shapes_map_.resize(b.op_shapes.size());
    for (std::size_t i = 0; i < b.op_shapes.size(); ++i) {
        OpShapes& shapes = b.op_shapes[i];
        for (OpArgument& arg : shapes.inputs) {
            arg.type = name(arg.type);
            arg.concrete = name(arg.concrete);
        }
        shapes_map_[i] = t.share_shapes(std::move(shapes));
    }
    const std::size_t o0 = t.cpu_ops.size();
    t.cpu_ops.insert(t.cpu_ops.end(), b.cpu_ops.begin(), b.cpu_ops.end());
    for (std::size_t i = 0; i < b.cpu_ops.size(); ++i) {
        CpuOp& op = t.cpu_ops[o0 + i];
        op.name = name(op.name);
        if (op.shapes != kNoIndex) op.shapes = shapes_map_[op.shapes];
        if (b.op_labels[i] & kPidLabel) op.pid = label(op.pid);
        if (b.op_labels[i] & kTidLabel) op.tid = label(op.tid);
        t.op_threads.add(op);
    }

    const std::size_t c0 = t.runtime_calls.size();
    t.runtime_calls.insert(t.runtime_calls.end(), b.runtime_calls.begin(), b.runtime_calls.end());
    for (std::size_t i = 0; i < b.runtime_calls.size(); ++i) {
        RuntimeCall& call = t.runtime_calls[c0 + i];
        call.name = name(call.name);
        if (b.call_labels[i] & kPidLabel) call.pid = label(call.pid);
        if (b.call_labels[i] & kTidLabel) call.tid = label(call.tid);
    }

    t.events_total += b.events_total;
    t.flow_events += b.flow_events;
    b.tally.merge_into(stats_.by_category);
}

}  // namespace replay::kineto
