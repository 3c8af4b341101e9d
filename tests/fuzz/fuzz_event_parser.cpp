// libFuzzer target for the Kineto parser (parse_kineto_buffer: splitter, simdjson event parser,
// the two workers and the in-order commit).
//
// The first input byte picks a small chunk size and strict mode; the rest is the JSON document.
// The document is parsed with that chunk size and with one chunk: both must give the same
// model, statistics and warnings, or the same error. The model must be self-consistent (name ids
// inside the pool, shape indexes inside op_shapes, counts adding up). Sanitizers catch the rest.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "replay/kineto_parser.h"

namespace {

[[noreturn]] void fail(const char* what, const std::string& a = {}, const std::string& b = {}) {
    std::fprintf(stderr, "fuzz_event_parser: %s\n", what);
    if (!a.empty()) std::fprintf(stderr, "--- first:\n%s\n--- second:\n%s\n", a.c_str(), b.c_str());
    std::abort();
}

void check_name(const replay::Trace& t, replay::NameId id) {
    if (id >= t.names.size()) fail("name id outside the string pool");
}

void check(const replay::ParseResult& r) {
    const replay::Trace& t = r.trace;
    for (const auto& a : t.activities) {
        check_name(t, a.name);
        check_name(t, a.collective);
        check_name(t, a.collective_dtype);
        if (a.byte_offset >= r.stats.json_bytes) fail("activity offset outside the input");
    }
    for (const auto& op : t.cpu_ops) {
        check_name(t, op.name);
        if (op.shapes != replay::kNoIndex && op.shapes >= t.op_shapes.size())
            fail("cpu_op shapes index out of range");
        if (op.category > 1) fail("cpu_op category");
    }
    for (const auto& s : t.op_shapes)
        for (const auto& arg : s.inputs) {
            check_name(t, arg.type);
            check_name(t, arg.concrete);
        }
    for (const auto& c : t.runtime_calls) check_name(t, c.name);
    const std::size_t records = t.activities.size() + t.cpu_ops.size() + t.runtime_calls.size();
    if (r.stats.malformed > r.stats.events) fail("more malformed than events");
    if (r.stats.malformed_bytes + r.stats.damaged_bytes > r.stats.json_bytes)
        fail("more malformed and damaged bytes than input");
    if (records > r.stats.events - r.stats.malformed) fail("more records than valid events");
    if (t.events_total > r.stats.events) fail("events_total above events");
    std::uint64_t tallied = 0;
    for (const auto& [key, n] : r.stats.by_category) tallied += n;
    if (tallied != t.events_total) fail("by_category does not add up to events_total");
}

// Everything a parse produces except the buffer sizes, as text.
std::string describe(const replay::ParseResult& r) {
    std::string s;
    auto add = [&](auto... values) { ((s += std::to_string(values), s += ' '), ...); };
    const replay::Trace& t = r.trace;
    for (std::size_t i = 0; i < t.names.size(); ++i) {
        s += t.names.view(static_cast<replay::NameId>(i));
        s += '|';
    }
    s += '\n';
    for (const auto& a : t.activities) {
        add(static_cast<int>(a.kind), a.name, a.ts, a.dur, a.device, a.stream, a.correlation,
            a.external_id, a.bytes, a.grid[0], a.grid[1], a.grid[2], a.block[0], a.block[1],
            a.block[2], a.shared_memory, a.registers, a.collective, a.collective_dtype, a.in_nelems,
            a.out_nelems, a.group_size, a.byte_offset);
        s += '\n';
    }
    for (const auto& op : t.cpu_ops) {
        add(op.name, op.ts, op.dur, op.pid, op.tid, op.external_id, op.record_function_id,
            op.sequence_number, op.shapes, op.parent, static_cast<int>(op.category));
        s += '\n';
    }
    for (const auto& sh : t.op_shapes) {
        for (const auto& arg : sh.inputs) {
            add(arg.type, arg.concrete, arg.has_strides, arg.dims.size(), arg.strides.size(),
                arg.list_ranks.size());
            for (auto d : arg.dims) add(d);
            for (auto d : arg.strides) add(d);
            for (auto d : arg.list_ranks) add(d);
        }
        s += '\n';
    }
    for (const auto& c : t.runtime_calls) {
        add(c.name, c.ts, c.dur, c.pid, c.tid, c.correlation, c.external_id, c.wait_on_stream,
            c.wait_on_event_correlation, c.is_driver);
        s += '\n';
    }
    const auto& m = t.meta;
    add(m.base_time_ns, m.rank, m.world_size, m.record_shapes, m.is_hip, m.devices.size());
    s += m.display_time_unit + '|' + m.distributed_backend + '|' + m.runtime_version + '|' +
         m.driver_version + '\n';
    for (const auto& d : m.devices) {
        add(d.id, d.total_global_mem, d.compute_major, d.compute_minor, d.num_sms);
        s += d.name + '\n';
    }
    add(t.flow_events, t.events_total);
    const auto& st = r.stats;
    add(st.raw_bytes, st.json_bytes, st.events, st.malformed, st.malformed_bytes,
        st.first_malformed_offset, st.truncated, st.truncated_lost_bytes, st.damaged_places,
        st.damaged_bytes, st.first_damage_offset, st.first_damage_resumed, st.stray_bytes,
        st.first_stray_offset);
    s += st.first_malformed_reason + '\n';
    for (const auto& [key, n] : st.by_category) {
        s += key;
        add(n);
    }
    s += '\n';
    for (const auto& w : r.warnings) s += w + '\n';
    return s;
}

std::string run(const std::string& doc, std::size_t chunk, bool strict) {
    replay::ParseOptions options;
    options.chunk_bytes = chunk;
    options.strict = strict;
    try {
        const replay::ParseResult r = replay::parse_kineto_buffer(doc, options, "fuzz.json");
        check(r);
        return describe(r);
    } catch (const replay::InputError& e) {
        return std::string("InputError: ") + e.what();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    static const std::size_t kChunks[] = {64, 100, 127, 256, 1000, 4096};
    const std::size_t chunk = kChunks[(data[0] & 0x7f) % (sizeof kChunks / sizeof kChunks[0])];
    const bool strict = (data[0] & 0x80) != 0;
    const std::string doc(reinterpret_cast<const char*>(data) + 1, size - 1);
    const std::string small = run(doc, chunk, strict);
    const std::string big = run(doc, 1 << 16, strict);  // inputs are shorter (-max_len): one chunk
    if (small != big) fail("the result depends on the chunk size", small, big);
    return 0;
}
