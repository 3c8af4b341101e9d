// The parser against Python's own counts (traces/expected_counts.json), schema variants, chunk and
// thread independence, shared op shapes, and the event splitter in every chunking. Bad input:
// test_bad_input.cpp.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "parser_test_files.h"
#include "replay/event_splitter.h"
#include "replay/kineto_parser.h"
#include "replay/source.h"
#include "test_support.h"

namespace fs = std::filesystem;
using replay::ActivityKind;
using replay::ActivityTotals;
using replay::testing::bloom_json;
using replay::testing::gzip;
using replay::testing::kBloom;
using replay::testing::TempDir;
using replay::testing::trace_path;
using replay::testing::write_file;
using replay::testing::zstd;

namespace {

struct Expected {
    std::uint64_t kernel = 0, memcpy = 0, memset = 0;
    std::int64_t kernel_time_ns = 0;
};

std::map<std::string, Expected> expected_counts() {
    simdjson::dom::parser parser;
    simdjson::dom::element root = parser.load(trace_path("expected_counts.json"));
    std::map<std::string, Expected> out;
    for (auto [key, value] : root.get_object()) {
        Expected e;
        e.kernel = value["kernel"].get_uint64();
        e.memcpy = value["memcpy"].get_uint64();
        e.memset = value["memset"].get_uint64();
        e.kernel_time_ns = value["kernel_time_ns"].get_int64();
        out[std::string(key)] = e;
    }
    return out;
}

void check(const replay::ParseResult& r, const Expected& e, const std::string& name) {
    const ActivityTotals totals = r.trace.activity_totals();
    EXPECT_EQ(totals.count(ActivityKind::Kernel), e.kernel) << name;
    EXPECT_EQ(totals.count(ActivityKind::Memcpy), e.memcpy) << name;
    EXPECT_EQ(totals.count(ActivityKind::Memset), e.memset) << name;
    EXPECT_EQ(totals.time(ActivityKind::Kernel), e.kernel_time_ns) << name;
    EXPECT_EQ(r.stats.malformed, 0u) << name;
    EXPECT_FALSE(r.stats.truncated) << name;
}

}  // namespace

TEST(Parser, MatchesPythonCountsOnEveryBundledTrace) {
    const auto expected = expected_counts();
    ASSERT_GE(expected.size(), 18u);
    TempDir dir;
    std::size_t checked = 0;
    for (const auto& [name, e] : expected) {
        const auto colon = name.find(".tar.gz:");
        if (colon == std::string::npos) {
            check(replay::parse_kineto(trace_path(name)), e, name);
        } else {
            // Archives of several ranks are unpacked here, not by the tool.
            const std::string archive = trace_path(name.substr(0, colon + 7));
            const std::string member = name.substr(colon + 8);
            if (!fs::exists(dir / member)) {
                ASSERT_EQ(
                    std::system(
                        ("tar -xzf '" + archive + "' -C '" + dir.path().string() + "'").c_str()),
                    0);
            }
            check(replay::parse_kineto((dir / member).string()), e, name);
        }
        ++checked;
    }
    EXPECT_EQ(checked, expected.size());
}

TEST(Parser, ChoosesDecoderByContentNotSuffix) {
    TempDir dir;
    const std::string& json = bloom_json();
    write_file(dir / "plain.gz", json);         // plain JSON named .gz
    write_file(dir / "gzip.json", gzip(json));  // gzip named .json
    write_file(dir / "zstd.txt", zstd(json));   // zstd named .txt
    const auto expected = expected_counts().at(kBloom);
    for (const char* name : {"plain.gz", "gzip.json", "zstd.txt"})
        check(replay::parse_kineto((dir / name).string()), expected, name);
    EXPECT_EQ(replay::parse_kineto((dir / "zstd.txt").string()).stats.compression,
              replay::Compression::Zstd);
}

TEST(Parser, SmallChunksGiveTheSameResult) {
    replay::ParseOptions options;
    options.chunk_bytes = 4096;  // forces events and metadata across chunk boundaries
    check(replay::parse_kineto(trace_path(kBloom), options), expected_counts().at(kBloom),
          "4 KiB chunks");
}

TEST(Parser, ThreadCountDoesNotChangeTheResult) {
    // Many small batches, committed in input order whatever thread parsed them.
    const auto parse = [](unsigned threads) {
        replay::ParseOptions options;
        options.chunk_bytes = 64u << 10;
        options.threads = threads;
        return replay::parse_kineto(trace_path(kBloom), options);
    };
    const replay::ParseResult one = parse(1);
    for (const unsigned threads : {2u, 3u, replay::kMaxParseThreads}) {
        const replay::ParseResult many = parse(threads);
        const replay::Trace& a = one.trace;
        const replay::Trace& b = many.trace;
        ASSERT_EQ(a.names.size(), b.names.size()) << threads;
        for (std::size_t i = 0; i < a.names.size(); ++i)
            ASSERT_EQ(a.names.view(static_cast<replay::NameId>(i)),
                      b.names.view(static_cast<replay::NameId>(i)));
        ASSERT_EQ(a.cpu_ops.size(), b.cpu_ops.size());
        ASSERT_EQ(a.op_shapes, b.op_shapes);
        for (std::size_t i = 0; i < a.cpu_ops.size(); ++i) {
            EXPECT_EQ(a.cpu_ops[i].name, b.cpu_ops[i].name);
            EXPECT_EQ(a.cpu_ops[i].ts, b.cpu_ops[i].ts);
            EXPECT_EQ(a.cpu_ops[i].shapes, b.cpu_ops[i].shapes);
        }
        ASSERT_EQ(a.activities.size(), b.activities.size());
        for (std::size_t i = 0; i < a.activities.size(); ++i) {
            EXPECT_EQ(a.activities[i].name, b.activities[i].name);
            EXPECT_EQ(a.activities[i].correlation, b.activities[i].correlation);
            EXPECT_EQ(a.activities[i].byte_offset, b.activities[i].byte_offset);
        }
        EXPECT_EQ(a.runtime_calls.size(), b.runtime_calls.size());
        EXPECT_EQ(one.stats.by_category, many.stats.by_category);
    }
}

TEST(Parser, TimesAreExactNanoseconds) {
    std::int64_t ns = 0;
    ASSERT_TRUE(replay::micros_to_nanos("4437936616668.756", ns));
    EXPECT_EQ(ns, 4437936616668756);
    ASSERT_TRUE(replay::micros_to_nanos("1.0005", ns));
    EXPECT_EQ(ns, 1001);
    ASSERT_TRUE(replay::micros_to_nanos("1694128201545123", ns));
    EXPECT_EQ(ns, 1694128201545123000);
    ASSERT_TRUE(replay::micros_to_nanos("2.5e3", ns));
    EXPECT_EQ(ns, 2500000);
    EXPECT_FALSE(replay::micros_to_nanos("\"12\"", ns));
    EXPECT_FALSE(replay::micros_to_nanos("", ns));
    // Out of int64 nanoseconds: malformed, not a wrapped-around time.
    EXPECT_FALSE(replay::micros_to_nanos("1e300", ns));
    EXPECT_FALSE(replay::micros_to_nanos("-9.3e15", ns));
    ASSERT_TRUE(replay::micros_to_nanos("-1.5e3", ns));
    EXPECT_EQ(ns, -1500000);
}

TEST(Parser, SchemaVariants) {
    TempDir dir;
    // String tids ("stream 7"), 2021 category names, ids above 2^53, relative ts with a base,
    // events without cat, and escaped braces/quotes inside strings.
    write_file(dir / "v.json", R"({"schemaVersion": 1, "traceEvents": [
      {"ph": "X", "cat": "Kernel", "name": "k{\"}\\", "pid": 0, "tid": "stream 7", "ts": 10.5, "dur": 2,
       "args": {"correlation": 18446744073709551615, "external id": 9007199254740993, "grid": [1,2,3], "block": [4,5,6]}},
      {"ph": "i", "name": "no category", "pid": "Traces", "tid": "x", "ts": 1},
      {"ph": "X", "cat": "Operator", "name": "aten::mm", "pid": 1, "tid": "1890023232", "ts": 5, "dur": 20,
       "args": {"Input dims": [[5, 1024], [1024, 3072]], "Input type": ["c10::Half", "c10::Half"]}}
    ], "baseTimeNanoseconds": 1711964646000000000})");
    const auto r = replay::parse_kineto((dir / "v.json").string());
    ASSERT_EQ(r.trace.activities.size(), 1u);
    const auto& k = r.trace.activities[0];
    EXPECT_EQ(r.trace.names.view(k.name), "k{\"}\\");
    EXPECT_EQ(k.stream, 7);
    EXPECT_EQ(k.ts, 10500);
    EXPECT_EQ(static_cast<std::uint64_t>(k.correlation), 18446744073709551615ULL);
    EXPECT_EQ(k.external_id, 9007199254740993LL);
    EXPECT_EQ(k.grid[2], 3);
    EXPECT_EQ(k.block[0], 4);
    EXPECT_EQ(r.trace.meta.base_time_ns, 1711964646000000000LL);
    ASSERT_EQ(r.trace.cpu_ops.size(), 1u);
    EXPECT_EQ(r.trace.cpu_ops[0].tid, 1890023232);
    const auto& shapes = r.trace.op_shapes.at(r.trace.cpu_ops[0].shapes);
    ASSERT_EQ(shapes.inputs.size(), 2u);
    EXPECT_EQ(shapes.inputs[1].dims, (std::vector<std::int64_t>{1024, 3072}));
}

// mid-event, the result must be the copying path's (the same bytes read through gzip).
TEST(Parser, OpsWithTheSameShapesShareOneEntry) {
    TempDir dir;
    // Four addmm with one shape set (in two of them with the members in another order or other
    // blanks), one with another: two entries; set_shapes() gives an op another entry (an equal
    // one where there is one) and leaves the shared one alone.
    const std::string same =
        R"("Input Dims": [[3072], [5, 1024], [1024, 3072], [], []], "Input type": ["c10::Half", "c10::Half", "c10::Half", "Scalar", "Scalar"], "Concrete Inputs": ["", "", "", "1", "1"])";
    const std::string reordered =
        R"("Concrete Inputs": ["", "", "", "1", "1"], "Input type": ["c10::Half", "c10::Half", "c10::Half", "Scalar", "Scalar"], "Input Dims": [[3072], [5, 1024], [1024, 3072], [], []])";
    const std::string spaced =
        R"("Input Dims": [[3072],[5,1024],[1024,3072],[],[]], "Input type": ["c10::Half","c10::Half","c10::Half","Scalar","Scalar"], "Concrete Inputs": ["","","","1","1"])";
    const std::string other =
        R"("Input Dims": [[3072], [7, 1024], [1024, 3072], [], []], "Input type": ["c10::Half", "c10::Half", "c10::Half", "Scalar", "Scalar"], "Concrete Inputs": ["", "", "", "1", "1"])";
    std::string events;
    int ts = 0;
    for (const std::string* args : {&same, &other, &reordered, &same, &spaced}) {
        if (!events.empty()) events += ",\n";
        ts += 10;
        events +=
            R"({"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 1, "tid": 1, "ts": )" +
            std::to_string(ts) + R"(, "dur": 5, "args": {"External id": )" + std::to_string(ts) +
            ", " + *args + "}}";
    }
    write_file(dir / "s.json", "{\"traceEvents\": [" + events + "]}");
    // One batch, then a batch per event or two.
    for (const std::size_t chunk : {std::size_t{4} << 20, std::size_t{600}}) {
        replay::ParseOptions options;
        options.chunk_bytes = chunk;
        auto r = replay::parse_kineto((dir / "s.json").string(), options);
        replay::Trace& t = r.trace;
        ASSERT_EQ(t.cpu_ops.size(), 5u);
        const auto shapes = [&](std::size_t i) -> const replay::OpShapes& {
            return t.op_shapes.at(t.cpu_ops[i].shapes);
        };
        EXPECT_EQ(t.cpu_ops[0].shapes, t.cpu_ops[3].shapes) << chunk;
        EXPECT_EQ(t.cpu_ops[0].shapes, t.cpu_ops[2].shapes) << chunk;
        EXPECT_EQ(t.cpu_ops[0].shapes, t.cpu_ops[4].shapes) << chunk;
        EXPECT_NE(t.cpu_ops[0].shapes, t.cpu_ops[1].shapes) << chunk;
        EXPECT_EQ(t.op_shapes.size(), 2u) << chunk;
        EXPECT_EQ(shapes(1).inputs[1].dims, (std::vector<std::int64_t>{7, 1024}));
        for (const std::size_t i : {0u, 2u, 3u, 4u}) {
            ASSERT_EQ(shapes(i).inputs.size(), 5u) << i;
            EXPECT_EQ(shapes(i).inputs[1].dims, (std::vector<std::int64_t>{5, 1024})) << i;
            EXPECT_EQ(t.names.view(shapes(i).inputs[3].concrete), "1") << i;
        }
        replay::OpShapes changed = t.shapes_of(t.cpu_ops[3]);
        changed.inputs[1].storage_offset = 42;
        t.set_shapes(t.cpu_ops[3], changed);
        EXPECT_NE(t.cpu_ops[3].shapes, t.cpu_ops[0].shapes);
        EXPECT_EQ(shapes(0).inputs[1].storage_offset, 0);
        EXPECT_EQ(shapes(3).inputs[1].storage_offset, 42);
        EXPECT_EQ(shapes(3).inputs[1].dims, shapes(0).inputs[1].dims);
        EXPECT_EQ(t.op_shapes.size(), 3u) << chunk;
        t.set_shapes(t.cpu_ops[4], changed);  // the same change: the same new entry
        EXPECT_EQ(t.cpu_ops[4].shapes, t.cpu_ops[3].shapes);
        t.set_shapes(t.cpu_ops[3], t.shapes_of(t.cpu_ops[0]));  // back to the shared one
        EXPECT_EQ(t.cpu_ops[3].shapes, t.cpu_ops[0].shapes);
        EXPECT_EQ(t.op_shapes.size(), 3u) << chunk;
    }
}

// Storage ids live per op instance beside the shared shapes, however wide.
TEST(TraceModel, OpStoragesKeepEachOpsIds) {
    replay::OpStorages ids;
    EXPECT_TRUE(ids.empty());
    EXPECT_EQ(ids.input(3, 0), replay::kNoId);
    ids.add(3, std::vector<std::int64_t>{replay::kNoId, 7}, 1);
    const std::int64_t wide = std::int64_t{1} << 40;
    ids.set_output(3, 0, {wide, ids.intern_dims(std::vector<std::int64_t>{2, 5})});
    EXPECT_FALSE(ids.empty());
    EXPECT_TRUE(ids.has(3));
    EXPECT_FALSE(ids.has(2));
    EXPECT_EQ(ids.input(3, 0), replay::kNoId);
    EXPECT_EQ(ids.input(3, 1), 7);
    EXPECT_EQ(ids.input(3, 2), replay::kNoId);  // beyond the record: unknown
    ASSERT_EQ(ids.outputs(3), 1u);
    EXPECT_EQ(ids.output(3, 0).storage, wide);
    EXPECT_EQ(std::vector<std::int64_t>(ids.output(3, 0).dims.begin(), ids.output(3, 0).dims.end()),
              (std::vector<std::int64_t>{2, 5}));
    EXPECT_THROW(ids.set_output(3, 1, {}), std::out_of_range);
    EXPECT_THROW(ids.set_output(4, 0, {}), std::out_of_range);
    // A whole record (an Execution Trace's), with a TensorList and negative and wide ids, in
    // place of the op's earlier one.
    replay::OpStorages::Record r;
    r.inputs = {-5, replay::kNoId, 0x7FFFFFFF};
    r.lists = {{}, {11, wide + 1, replay::kNoId}};
    r.outputs = {{12, replay::DimsTable::kEmpty}, {replay::kNoId, replay::DimsTable::kEmpty}};
    ids.set(3, r);
    EXPECT_EQ(ids.records(), 1u);
    const replay::OpStorages::Record back = ids.get(3);
    EXPECT_EQ(back.inputs, r.inputs);
    ASSERT_EQ(back.lists.size(), 3u);
    EXPECT_TRUE(back.lists[0].empty());
    EXPECT_EQ(back.lists[1], r.lists[1]);
    EXPECT_TRUE(back.lists[2].empty());
    ASSERT_EQ(back.outputs.size(), 2u);
    EXPECT_EQ(back.outputs[0].storage, 12);
    EXPECT_EQ(ids.list(3, 1).size(), 3u);
    EXPECT_EQ(ids.list(3, 1)[1], wide + 1);
    EXPECT_TRUE(ids.list(3, 0).empty());
    EXPECT_EQ(ids.input(3, 0), -5);
    EXPECT_EQ(ids.input(3, 2), 0x7FFFFFFF);
}

// A plain file of many chunks, whole and cut mid-event, gives what the same bytes give through
// gzip.
TEST(Parser, LargePlainFileMatchesCompressedParse) {
    TempDir dir;
    const std::string& json = bloom_json();
    const std::size_t open = json.find('[', json.find("\"traceEvents\""));
    const std::size_t close = json.rfind(']', json.find("\"traceName\""));
    ASSERT_NE(open, std::string::npos);
    ASSERT_NE(close, std::string::npos);
    const std::string events = json.substr(open + 1, close - open - 1);
    std::string big = json.substr(0, open + 1);
    while (big.size() < (9u << 20)) big += events + ",";  // a few 4 MiB chunks
    big.back() = ' ';
    big += json.substr(close);

    auto summary = [](const replay::ParseResult& r) {
        std::int64_t kernel_ns = 0;
        for (const auto& a : r.trace.activities) kernel_ns += a.dur;
        return std::tuple(r.stats.events, r.trace.activities.size(), r.trace.cpu_ops.size(),
                          r.trace.op_shapes.size(), kernel_ns, r.stats.truncated,
                          r.stats.truncated_lost_bytes);
    };
    for (const std::size_t size : {big.size(), big.size() * 7 / 10}) {
        const std::string text = big.substr(0, size);
        write_file(dir / "big.json", text);
        replay::testing::TempFile gz("big.json.gz", text, true);
        const auto plain = replay::parse_kineto((dir / "big.json").string());
        const auto compressed = replay::parse_kineto(gz.path());
        EXPECT_EQ(summary(plain), summary(compressed)) << size << " bytes";
        EXPECT_GT(plain.stats.events, 20000u);
        EXPECT_EQ(plain.stats.truncated, size < big.size());
    }
}

// A repeated pid or tid replaces the first one: a number after a label is a number (the fast
// reader kept the label flag, and committing the batch then read a name id out of range).
TEST(Parser, RepeatedIdAfterALabelIsTheNumber) {
    const std::string doc = R"({"traceEvents": [
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": "X", "tid": "Y",
       "pid": 59813, "tid": 7, "ts": 1, "dur": 4, "args": {"correlation": 1}}]})";
    const auto r = replay::parse_kineto_buffer(doc, {}, "ids.json");
    ASSERT_EQ(r.trace.runtime_calls.size(), 1u);
    EXPECT_EQ(r.trace.runtime_calls[0].pid, 59813);
    EXPECT_EQ(r.trace.runtime_calls[0].tid, 7);
}

namespace {

// What the splitter makes of `doc` read `step` bytes per scan() call, carrying the unfinished
// item over as parse_kineto does: the items (absolute offsets), the end state, stray and damage.
struct SplitOutcome {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> items;
    bool complete = false;
    std::uint64_t last_end = 0, stray = 0, first_stray = 0, damaged_places = 0, damaged_bytes = 0;
    bool ended_in_damage = false;
    bool operator==(const SplitOutcome&) const = default;
};

SplitOutcome split_in_steps(const std::string& doc, std::size_t step) {
    replay::EventSplitter splitter;
    SplitOutcome out;
    std::string buf;  // the carried-over bytes and the new ones, then 64 bytes of padding
    std::vector<replay::Span> spans;
    for (std::size_t offset = 0;;) {
        const std::size_t n = std::min(step, doc.size() - offset);
        const bool eof = offset + n == doc.size();
        buf.append(doc, offset, n);
        offset += n;
        const std::size_t size = buf.size();
        buf.append(64, ' ');
        const std::uint64_t base = splitter.base_offset();
        const std::size_t keep = splitter.scan(buf.data(), size, eof, spans);
        for (const replay::Span& s : spans) out.items.emplace_back(base + s.begin, s.length);
        spans.clear();
        if (eof) break;
        buf = buf.substr(keep, size - keep);
    }
    out.complete = splitter.complete();
    out.last_end = splitter.last_complete_end();
    out.stray = splitter.stray_bytes();
    out.first_stray = splitter.first_stray_offset();
    out.damaged_places = splitter.damaged_places();
    out.damaged_bytes = splitter.damaged_bytes();
    out.ended_in_damage = splitter.ended_in_damage();
    return out;
}

// A saved input of the splitter's fuzzer, without its first byte (the chunk size).
std::string splitter_regression(const std::string& name) {
    std::ifstream in(fs::path(replay::testing::source_dir()) / "tests/fuzz/regressions" /
                         "fuzz_splitter" / name,
                     std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    return bytes.str().substr(1);
}

}  // namespace

// Between events, a '{' inside a string (after damaged text) used to be checked as the text before
// it without looking for a ']' in front of it: the array's ']' was then read as damage up to the
// end when the block index showed both in one block, and as the end of the document when the
// ']' ended a block, so that the result depended on where chunks ended. The ']' closes the bare
// array; what follows is stray text.
TEST(Splitter, ClosingBracketBeforeABraceInAStringInEveryChunking) {
    struct Case {
        const char* file;
        std::uint64_t stray;
    };
    for (const Case c : {Case{"closing_bracket_then_brace_in_string", 3},
                         Case{"closing_bracket_then_brace_in_string_next_block", 9}}) {
        const std::string doc = splitter_regression(c.file);
        ASSERT_FALSE(doc.empty()) << c.file;
        const SplitOutcome whole = split_in_steps(doc, doc.size());
        EXPECT_TRUE(whole.complete) << c.file;
        EXPECT_EQ(whole.stray, c.stray) << c.file;
        EXPECT_EQ(whole.damaged_places, 0u) << c.file;
        EXPECT_FALSE(whole.ended_in_damage) << c.file;
        ASSERT_EQ(whole.items.size(), 1u) << c.file;
        for (std::size_t step = 1; step < doc.size(); ++step)
            EXPECT_TRUE(split_in_steps(doc, step) == whole) << c.file << ", step " << step;
    }
}

// A copied name table owns its names: they outlive the original, keep their ids, and new names
// go to the copy only.
TEST(StringPool, ACopyOutlivesTheOriginal) {
    std::optional<replay::StringPool> original(std::in_place);
    const replay::NameId gemm = original->intern("nvjet_sm90_gemm");
    const replay::NameId relu = original->intern(std::string(200, 'r'));  // not inlined
    replay::StringPool copy = *original;
    replay::StringPool assigned;
    assigned = *original;
    original.reset();
    for (const replay::StringPool* pool : {&copy, &assigned}) {
        EXPECT_EQ(pool->view(gemm), "nvjet_sm90_gemm");
        EXPECT_EQ(pool->view(relu), std::string(200, 'r'));
        EXPECT_EQ(pool->size(), 3u);
    }
    EXPECT_EQ(copy.intern("nvjet_sm90_gemm"), gemm);  // found in the copy's own index
    EXPECT_EQ(copy.intern("new"), 3u);
    EXPECT_EQ(assigned.size(), 3u);
}
