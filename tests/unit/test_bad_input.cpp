// Bad input: truncated, damaged, oversized, malformed, changing or oddly packed traces. Every case
// builds its own small input; the parser must answer with skipped counts and warnings or with an
// InputError naming the file and the byte offset, never a crash or a silent loss.
#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "parser_test_files.h"
#include "replay/kineto_parser.h"
#include "replay/source.h"
#include "test_support.h"

namespace fs = std::filesystem;
using replay::testing::bloom_json;
using replay::testing::gzip;
using replay::testing::TempDir;
using replay::testing::trace_path;
using replay::testing::write_file;
using replay::testing::zstd;

namespace {

// The error a parse throws, or "" when it succeeds.
std::string error_of(const std::function<void()>& parse, std::uint64_t* offset = nullptr) {
    try {
        parse();
    } catch (const replay::InputError& e) {
        if (offset) *offset = e.offset();
        return e.what();
    }
    return "";
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

bool any_warning(const replay::ParseResult& r, const std::string& part) {
    for (const auto& w : r.warnings)
        if (contains(w, part)) return true;
    return false;
}

// `doc` read in chunks of `chunk` bytes.
replay::ParseResult parse_in_chunks(const std::string& doc, std::size_t chunk,
                                    const std::string& name) {
    replay::ParseOptions options;
    options.chunk_bytes = chunk;
    return replay::parse_kineto_buffer(doc, options, name);
}

// One small event of each common kind, for documents made up here.
const std::string kKernel =
    R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": {"correlation": 1}})";
const std::string kOp =
    R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 5, "dur": 20})";

}  // namespace

TEST(BadInput, TruncatedPlainJsonKeepsCompleteEvents) {
    TempDir dir;
    const std::string& json = bloom_json();
    const std::size_t cut = json.size() * 6 / 10;
    write_file(dir / "cut.json", json.substr(0, cut));
    const auto r = replay::parse_kineto((dir / "cut.json").string());
    EXPECT_TRUE(r.stats.truncated);
    EXPECT_GT(r.stats.events, 1000u);
    EXPECT_GT(r.stats.truncated_lost_bytes, 0u);
    EXPECT_LT(r.stats.truncated_lost_bytes, 4096u);  // only the event in progress is lost
    ASSERT_FALSE(r.warnings.empty());
    EXPECT_NE(r.warnings[0].find("bytes after the last complete event"), std::string::npos);
}

// Cut anywhere in the members after traceEvents (Kineto writes "traceName" there last): every
// event is complete, so this is a truncation that keeps them all, not an error.
TEST(BadInput, TruncatedTrailingMetadataKeepsEveryEvent) {
    TempDir dir;
    const std::string& json = bloom_json();
    const auto whole = replay::parse_kineto_buffer(json, {}, "whole");
    const std::size_t member = json.rfind("\"traceName\"");
    ASSERT_NE(member, std::string::npos);
    for (std::size_t cut = member - 2; cut < json.size(); cut += 3) {
        const auto r = replay::parse_kineto_buffer(json.substr(0, cut), {}, "cut");
        EXPECT_TRUE(r.stats.truncated) << cut;
        EXPECT_EQ(r.stats.events, whole.stats.events) << cut;
        EXPECT_EQ(r.trace.activities.size(), whole.trace.activities.size()) << cut;
    }
}

TEST(BadInput, TruncatedCompressedStreamsWarnAndKeepEvents) {
    TempDir dir;
    const std::string& json = bloom_json();
    const std::string gz = gzip(json), zs = zstd(json);
    write_file(dir / "cut.json.gz", gz.substr(0, gz.size() / 2));
    write_file(dir / "cut.json.zst", zs.substr(0, zs.size() / 2));
    for (const char* name : {"cut.json.gz", "cut.json.zst"}) {
        const auto r = replay::parse_kineto((dir / name).string());
        EXPECT_TRUE(r.stats.truncated) << name;
        EXPECT_GT(r.stats.events, 100u) << name;
        ASSERT_FALSE(r.warnings.empty()) << name;
        EXPECT_NE(r.warnings[0].find("cut short"), std::string::npos) << r.warnings[0];
    }
}

// A compressed stream cut before its first complete block holds no JSON at all: that is a stream
// cut short, at the compressed offset where it ends, not an empty input.
TEST(BadInput, CompressedStreamCutBeforeAnyEventSaysSo) {
    TempDir dir;
    const std::string& json = bloom_json();
    for (const auto& [suffix, packed] : {std::pair{".gz", gzip(json)}, {".zst", zstd(json)}}) {
        for (const std::size_t cut : {4u, 10u, 100u}) {
            const std::string name = "cut" + std::to_string(cut) + ".json" + suffix;
            write_file(dir / name, packed.substr(0, cut));
            try {
                replay::parse_kineto((dir / name).string());
                ADD_FAILURE() << name << " was accepted";
            } catch (const replay::InputError& e) {
                const std::string what = e.what();
                EXPECT_NE(what.find(name), std::string::npos) << what;
                EXPECT_NE(what.find("stream was cut short before any event"), std::string::npos)
                    << what;
                EXPECT_EQ(what.find("empty"), std::string::npos) << what;
                EXPECT_EQ(e.offset(), cut) << what;
            }
        }
    }
}

TEST(BadInput, MalformedEventIsSkippedCountedAndLocated) {
    TempDir dir;
    const std::string good =
        R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": {"correlation": 1}})";
    const std::string bad =
        R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": "late", "dur": 2})";
    const std::string doc = "{\"traceEvents\": [" + good + ", " + bad + ", " + good + "]}";
    write_file(dir / "m.json", doc);
    const auto r = replay::parse_kineto((dir / "m.json").string());
    EXPECT_EQ(r.stats.malformed, 1u);
    EXPECT_EQ(r.stats.first_malformed_offset, doc.find(bad));
    EXPECT_EQ(r.trace.activities.size(), 2u);
    ASSERT_FALSE(r.warnings.empty());
    EXPECT_NE(r.warnings[0].find("byte " + std::to_string(doc.find(bad))), std::string::npos)
        << r.warnings[0];

    replay::ParseOptions strict;
    strict.strict = true;
    try {
        replay::parse_kineto((dir / "m.json").string(), strict);
        FAIL() << "strict mode accepted a malformed event";
    } catch (const replay::InputError& e) {
        EXPECT_EQ(e.offset(), doc.find(bad));
    }
}

TEST(BadInput, UnusableInputsAreErrorsWithFileAndOffset) {
    TempDir dir;
    const std::string& json = bloom_json();
    std::string corrupt_gz = gzip(json);
    for (std::size_t i = 100; i < 400; ++i) corrupt_gz[i] = static_cast<char>(corrupt_gz[i] ^ 0x5a);
    // With the content checksum the zstd tool writes: without it, changed literals would decode
    // into damaged JSON, read as such (see OneDamagedByteCostsOnlyTheEventsAroundIt).
    std::string corrupt_zst = zstd(json, true);
    for (std::size_t i = 100; i < 400; ++i)
        corrupt_zst[i] = static_cast<char>(corrupt_zst[i] ^ 0x5a);
    const std::map<std::string, std::string> cases = {
        {"empty.json", ""},
        {"text.json", "this is not JSON at all\n"},
        {"array_of_numbers.json", "[1, 2, 3]"},
        {"no_events.json", "{\"traceEvents\": []}"},
        {"other.json", "{\"nodes\": [{\"id\": 1}]}"},
        {"corrupt.json.gz", corrupt_gz},
        {"corrupt.json.zst", corrupt_zst},
    };
    for (const auto& [name, bytes] : cases) {
        write_file(dir / name, bytes);
        try {
            replay::parse_kineto((dir / name).string());
            ADD_FAILURE() << name << " was accepted";
        } catch (const replay::InputError& e) {
            EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("byte "), std::string::npos) << e.what();
        }
    }
    EXPECT_THROW(replay::parse_kineto((dir / "missing.json").string()), replay::InputError);
}

// A .tar.gz of several ranks given as a trace: the error says it is an archive to unpack.
TEST(BadInput, TarArchiveIsNamedAsSuch) {
    const std::string archive = trace_path("public/param/dlrm_kineto.tar.gz");
    try {
        replay::parse_kineto(archive);
        ADD_FAILURE() << "a tar archive was accepted";
    } catch (const replay::InputError& e) {
        EXPECT_NE(std::string(e.what()).find("a tar archive"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("byte 0"), std::string::npos) << e.what();
    }
}

// A file cut shorter while it is read (`replay inspect big.json & truncate -s 100M big.json`
// ended in SIGBUS when the file was mapped): an InputError naming the file.
TEST(BadInput, FileCutShorterWhileItIsReadIsAnError) {
    TempDir dir;
    const fs::path path = dir / "shrinks.json";
    write_file(path, bloom_json());
    replay::ParseOptions options;
    options.chunk_bytes = 64u << 10;
    bool cut = false;
    options.progress = [&](std::uint64_t, std::uint64_t) {
        if (!cut) fs::resize_file(path, 20000);  // after the first chunk, before the others
        cut = true;
    };
    std::uint64_t offset = 0;
    const std::string what =
        error_of([&] { replay::parse_kineto(path.string(), options); }, &offset);
    EXPECT_TRUE(contains(what, path.string())) << what;
    EXPECT_TRUE(contains(what, "changed while it was read")) << what;
    EXPECT_TRUE(contains(what, "has 20000 now")) << what;
    EXPECT_GE(offset, options.chunk_bytes);
}

// One byte lost in the middle (issue 16): the quote at byte 319024 of the BLOOM trace made the
// rest of it one unfinished event ("truncated input (1511628 bytes lost)", 0 kernels, exit 0 even
// with --strict); a lost '}' did the same. Now only the event around it is lost, the damage is
// counted and located, and --strict refuses it.
TEST(BadInput, OneLostByteCostsOnlyItsEvent) {
    const std::string& json = bloom_json();
    const auto whole = replay::parse_kineto_buffer(json, {}, "whole.json");
    ASSERT_EQ(json[319024], '"');
    const std::size_t brace = json.find("}\n  },\n  {", 800000) + 4;  // an event's own '}'
    ASSERT_EQ(json[brace], '}');
    for (const std::size_t at : {std::size_t{319024}, brace}) {
        const std::string damaged = json.substr(0, at) + json.substr(at + 1);
        const auto r = replay::parse_kineto_buffer(damaged, {}, "damaged.json");
        EXPECT_FALSE(r.stats.truncated) << at;
        EXPECT_EQ(r.stats.damaged_places, 1u) << at;
        EXPECT_LE(r.stats.first_damage_offset, at);
        EXPECT_GT(r.stats.first_damage_resumed, at);
        EXPECT_LT(r.stats.damaged_bytes, 1000u) << at;
        EXPECT_EQ(r.stats.events + 1, whole.stats.events) << at;
        EXPECT_EQ(r.trace.activities.size(), whole.trace.activities.size()) << at;
        EXPECT_TRUE(any_warning(r, "damaged text")) << at;
        EXPECT_FALSE(any_warning(r, "LOST")) << at;

        replay::ParseOptions strict;
        strict.strict = true;
        std::uint64_t offset = 0;
        const std::string what = error_of(
            [&] { replay::parse_kineto_buffer(damaged, strict, "damaged.json"); }, &offset);
        EXPECT_TRUE(contains(what, "damaged text")) << what;
        EXPECT_EQ(offset, r.stats.first_damage_offset);
    }
}

// What looks like an event start inside strings (escaped quotes and braces, a comma and a brace),
// and objects nested in an array of args whose first member is "name", are not damage.
TEST(BadInput, StringsAndNestedObjectsDoNotLookLikeDamage) {
    const std::string doc = R"({"traceEvents": [
  {"ph": "X", "cat": "kernel", "name": "k, {\"ph\": \"X\"}, [{\"name\": 1}]", "pid": 0, "tid": 7,
   "ts": 1, "dur": 2, "args": {"correlation": 1, "note": "a,{\"ts\":", "list": [{"name": "a"}, {"name": "b", "x": [{"ph": 1}]}]}},
  {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "python"}},
  {"ph": "X", "cat": "kernel", "name": "{lambda()#1}", "pid": 0, "tid": 7, "ts": 4, "dur": 2,
   "args": {"correlation": 2}}
]})";
    for (const std::size_t chunk : {std::size_t{64}, std::size_t{100}, std::size_t{4} << 20}) {
        const auto r = parse_in_chunks(doc, chunk, "strings.json");
        EXPECT_EQ(r.stats.damaged_places, 0u) << chunk;
        EXPECT_EQ(r.stats.malformed, 0u) << chunk;
        EXPECT_EQ(r.stats.events, 3u) << chunk;
        ASSERT_EQ(r.trace.activities.size(), 2u) << chunk;
        EXPECT_EQ(r.trace.names.view(r.trace.activities[0].name),
                  R"(k, {"ph": "X"}, [{"name": 1}])");
        EXPECT_TRUE(r.warnings.empty()) << r.warnings[0];
    }
}

// Damage of each kind in the middle of a small trace: the events before and after it are read.
TEST(BadInput, DamageInTheMiddleIsSkippedToTheNextEvent) {
    const std::string before = "{\"traceEvents\": [\n  " + kKernel + ",\n  " + kOp + ",\n  ";
    const std::string after = ",\n  " + kOp + ",\n  " + kKernel + "\n]}";
    const std::map<std::string, std::string> damaged = {
        {"lost quote",
         R"({"ph": "X", "cat": "cpu_op", "name": aten::add", "pid": 1, "tid": 1, "ts": 9, "dur": 1})"},
        {"added quote",
         R"({"ph": "X", "cat": "cpu_op", "name": "at"en::add", "pid": 1, "tid": 1, "ts": 9, "dur": 1})"},
        {"lost brace",
         R"({"ph": "X", "cat": "cpu_op", "name": "aten::add", "args": {"x": 1}, "ts": 9, "dur": 1)"},
        {"added brace",
         R"({"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts" {: 9, "dur": 1})"},
        {"stray close",
         R"({"ph": "X", "cat": "cpu_op", "name": "aten::add"}}, "ts": 9, "dur": 1})"},
        {"lost open", R"("ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 9, "dur": 1})"},
        {"added byte", R"(x{"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 9, "dur": 1})"},
        {"closing bracket",
         R"({"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 9, "dur": 1}])"},
    };
    for (const auto& [what, event] : damaged) {
        for (const std::size_t chunk : {std::size_t{64}, std::size_t{4} << 20}) {
            const auto r = parse_in_chunks(before + event + after, chunk, "d.json");
            EXPECT_FALSE(r.stats.truncated) << what;
            EXPECT_GE(r.stats.damaged_places + r.stats.malformed, 1u) << what;
            EXPECT_EQ(r.trace.activities.size(), 2u) << what << ", chunk " << chunk;
            EXPECT_GE(r.trace.cpu_ops.size(), 2u) << what << ", chunk " << chunk;
            EXPECT_LE(r.trace.cpu_ops.size(), 3u) << what;
        }
    }
}

// Only what ends the input is a truncation: damage in the last event is damage.
TEST(BadInput, DamageInTheLastEventIsNotATruncation) {
    const std::string doc = "{\"traceEvents\": [" + kKernel + ", " + kOp +
                            R"(, {"ph": "X", "name": aten::add", "ts": 1, "dur": 2}]})";
    const auto r = replay::parse_kineto_buffer(doc, {}, "last.json");
    EXPECT_FALSE(r.stats.truncated);
    EXPECT_EQ(r.stats.damaged_places, 1u);
    EXPECT_EQ(r.stats.events, 2u);
    const std::string in_an_event = "{\"traceEvents\": [" + kKernel + ", " + kOp;
    const auto cut =
        replay::parse_kineto_buffer(in_an_event.substr(0, in_an_event.size() - 20), {}, "cut.json");
    EXPECT_TRUE(cut.stats.truncated);
    EXPECT_EQ(cut.stats.damaged_places, 0u);
}

// Losing more than a small share of the input is said loudly, with the share; a cut-off end, whose
// size is unknown, is not part of it.
TEST(BadInput, LosingMuchOfTheInputIsSaidLoudly) {
    const std::string& json = bloom_json();
    const auto cut = replay::parse_kineto_buffer(json.substr(0, json.size() / 2), {}, "half.json");
    ASSERT_TRUE(cut.stats.truncated);
    EXPECT_FALSE(any_warning(cut, "LOST"));
    // One event in ten malformed: about a tenth of the bytes.
    std::string doc = "{\"traceEvents\": [" + kKernel;
    for (int i = 0; i < 9; ++i) doc += ", " + kKernel;
    doc +=
        R"(, {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": "x", "dur": 2}]})";
    const auto r = replay::parse_kineto_buffer(doc, {}, "tenth.json");
    EXPECT_EQ(r.stats.malformed, 1u);
    EXPECT_TRUE(any_warning(r, "tenth.json: LOST 6.8% of the input (82 of 1201 bytes"))
        << r.warnings.back();
    // A zstd stream without a checksum whose data was changed decodes into damaged JSON.
    std::string changed = zstd(json);
    for (std::size_t i = 100; i < 400; ++i) changed[i] = static_cast<char>(changed[i] ^ 0x5a);
    TempDir dir;
    write_file(dir / "changed.json.zst", changed);
    const std::string path = (dir / "changed.json.zst").string();
    try {
        const auto damaged = replay::parse_kineto(path);
        EXPECT_TRUE(any_warning(damaged, "LOST")) << damaged.warnings.back();
    } catch (const replay::InputError& e) {
        EXPECT_TRUE(contains(e.what(), path)) << e.what();  // or it is no trace at all
    }
}

// An array or a scalar inside traceEvents was "stray bytes" (scalars, ignored even by --strict)
// or the end of the whole trace (arrays: exit 2 at the wrong offset). Both are malformed events.
TEST(BadInput, ValuesThatAreNotEventsAreMalformedEvents) {
    const std::string values =
        R"([1, {"ph": "X", "cat": "kernel"}, [2]], 3, "s", true, null, -1.5e3)";
    for (const std::string& doc : {"{\"traceEvents\": [" + kKernel + ", " + values + ", " + kOp +
                                       "], \"displayTimeUnit\": \"ms\"}",
                                   "[" + kKernel + ", " + values + ", " + kOp + "]"}) {
        for (const std::size_t chunk : {std::size_t{64}, std::size_t{4} << 20}) {
            const auto r = parse_in_chunks(doc, chunk, "values.json");
            EXPECT_EQ(r.stats.events, 8u) << doc;
            EXPECT_EQ(r.stats.malformed, 6u) << doc;
            EXPECT_EQ(r.stats.damaged_places, 0u) << doc;
            EXPECT_EQ(r.stats.first_malformed_offset, doc.find("[1,"));
            EXPECT_EQ(r.stats.first_malformed_reason, "an event is not a JSON object");
            EXPECT_EQ(r.trace.activities.size(), 1u);
            EXPECT_EQ(r.trace.cpu_ops.size(), 1u);
            EXPECT_FALSE(r.stats.truncated);
            EXPECT_EQ(r.stats.stray_bytes, 0u);
        }
        replay::ParseOptions strict;
        strict.strict = true;
        std::uint64_t offset = 0;
        const std::string what =
            error_of([&] { replay::parse_kineto_buffer(doc, strict, "values.json"); }, &offset);
        EXPECT_TRUE(contains(what, "malformed event")) << what;
        EXPECT_EQ(offset, doc.find("[1,"));
    }
}

// No event, string, value or run of blanks beyond the limit (a 337 KB .zst held a 10 GB string:
// 6.4 GB of memory, then std::bad_alloc without file or offset): an InputError naming them.
TEST(BadInput, ItemsBeyondTheSizeLimitAreErrors) {
    const std::string big(3u << 20, 'a');
    const std::string long_event = R"({"ph": "X", "cat": "kernel", "name": ")" + big +
                                   R"(", "pid": 0, "tid": 7, "ts": 1, "dur": 2})";
    const std::string blanks(3u << 20, ' ');
    struct Case {
        std::string name, doc, what;
        std::uint64_t offset;
    };
    const std::string events = "{\"traceEvents\": [" + kKernel + ", ";
    const std::vector<Case> cases = {
        {"event", events + long_event + "]}", "an event longer than", events.size()},
        {"metadata", "{\"big\": \"" + big + "\", \"traceEvents\": [" + kKernel + "]}",
         "the value of a top-level member longer than", 8},
        {"value", events + "\"" + big + "\"]}", "a value in traceEvents longer than",
         events.size()},
        {"blanks before", blanks + "{\"traceEvents\": []}", "a run of blanks longer than", 0},
        {"blanks between", events + blanks, "a run of blanks longer than", events.size() - 2},
        {"blanks after", "{\"traceEvents\": [" + kKernel + "]}" + blanks,
         "a run of blanks longer than", kKernel.size() + 19},
        {"damage", events + "x" + big, "damaged text without an event start after it longer than",
         events.size()},
    };
    replay::ParseOptions options;
    options.max_event_bytes = 1u << 20;
    for (const Case& c : cases) {
        for (const std::size_t chunk : {std::size_t{4} << 20, std::size_t{100000}}) {
            options.chunk_bytes = chunk;
            std::uint64_t offset = 0;
            const std::string what =
                error_of([&] { replay::parse_kineto_buffer(c.doc, options, c.name); }, &offset);
            EXPECT_TRUE(contains(what, c.what + " 1048576 bytes")) << c.name << ": " << what;
            EXPECT_TRUE(contains(what, "--max-event-bytes")) << what;
            EXPECT_EQ(offset, c.offset) << c.name << ": " << what;
        }
    }
    // Through a small .zst, and with a limit that lets the event through.
    TempDir dir;
    const std::string doc = events + long_event + "]}";
    write_file(dir / "big.json.zst", zstd(doc));
    const std::string path = (dir / "big.json.zst").string();
    EXPECT_TRUE(contains(error_of([&] { replay::parse_kineto(path, options); }), path));
    options.max_event_bytes = 4u << 20;
    const auto r = replay::parse_kineto(path, options);
    ASSERT_EQ(r.trace.activities.size(), 2u);
    EXPECT_EQ(r.trace.names.view(r.trace.activities[1].name).size(), big.size());
}

// gzip accepts zero bytes after the last member (padding); so does the parser. Anything else
// after it is still corrupt data.
TEST(BadInput, GzipZeroPaddingIsRead) {
    TempDir dir;
    const std::string& json = bloom_json();
    const auto whole = replay::parse_kineto_buffer(json, {}, "whole.json");
    write_file(dir / "padded.json.gz", gzip(json) + std::string(5000, '\0'));
    const auto r = replay::parse_kineto((dir / "padded.json.gz").string());
    EXPECT_FALSE(r.stats.truncated);
    EXPECT_EQ(r.stats.events, whole.stats.events);
    EXPECT_TRUE(r.warnings.empty());
    const std::string gz = gzip(json);
    write_file(dir / "garbage.json.gz", gz + std::string(10, '\0') + "x");
    std::uint64_t offset = 0;
    const std::string what =
        error_of([&] { replay::parse_kineto((dir / "garbage.json.gz").string()); }, &offset);
    EXPECT_TRUE(contains(what, "corrupt gzip data")) << what;
    EXPECT_EQ(offset, gz.size() + 10);
}

// A zstd file that starts with a skippable frame is zstd (`zstd -d` reads it).
TEST(BadInput, ZstdSkippableFrameIsRead) {
    TempDir dir;
    const std::string& json = bloom_json();
    std::string skippable = "\x50\x2a\x4d\x18";
    skippable += std::string("\x05\x00\x00\x00", 4) + "hello";
    write_file(dir / "skip.json.zst", skippable + zstd(json));
    const auto r = replay::parse_kineto((dir / "skip.json.zst").string());
    EXPECT_EQ(r.stats.compression, replay::Compression::Zstd);
    EXPECT_EQ(r.stats.events, replay::parse_kineto_buffer(json, {}, "j").stats.events);
}

namespace {

// The offsets of a zstd frame's block headers (single frame, no dictionary).
std::vector<std::size_t> zstd_blocks(const std::string& z) {
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(z[i]); };
    const unsigned descriptor = byte(4);
    const bool single_segment = (descriptor & 0x20) != 0;
    const unsigned size_flag = descriptor >> 6;
    std::size_t at = 5 + (single_segment ? 0 : 1) +
                     std::array<std::size_t, 4>{0, 1, 2, 4}[descriptor & 3] +
                     std::array<std::size_t, 4>{single_segment ? 1u : 0u, 2, 4, 8}[size_flag];
    std::vector<std::size_t> blocks;
    while (at + 3 <= z.size()) {
        blocks.push_back(at);
        const unsigned header = byte(at) | (byte(at + 1) << 8) | (byte(at + 2) << 16);
        const unsigned type = (header >> 1) & 3;
        at += 3 + (type == 1 ? 1 : header >> 3);
        if ((header & 1) != 0) break;
    }
    return blocks;
}

}  // namespace

// zstd errors named byte 0 whatever the damage: now the block they are in.
TEST(BadInput, ZstdErrorsNameTheBlock) {
    TempDir dir;
    const std::string z = zstd(bloom_json(), true);
    const std::vector<std::size_t> blocks = zstd_blocks(z);
    ASSERT_GT(blocks.size(), 4u);
    for (const std::size_t k : {std::size_t{2}, blocks.size() - 2}) {
        std::string bad = z;
        bad[blocks[k]] = static_cast<char>(bad[blocks[k]] | 6);  // a reserved block type
        write_file(dir / "bad.json.zst", bad);
        std::uint64_t offset = 0;
        const std::string what =
            error_of([&] { replay::parse_kineto((dir / "bad.json.zst").string()); }, &offset);
        EXPECT_TRUE(contains(what, "corrupt zstd data")) << what;
        // The header is read with the block before it.
        EXPECT_GE(offset, blocks[k - 1]) << what;
        EXPECT_LE(offset, blocks[k]) << what;
    }
}
