// Every input the fuzzers once broke the parser with, parsed again: an InputError is fine, a crash
// or sanitizer report is not (the CI runs this under ASan/UBSan too). The inputs of the report and
// signature readers' targets are replayed by tests/fuzz/run_fuzz.sh.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "replay/kineto_parser.h"
#include "replay/source.h"
#include "test_support.h"

namespace {

// What a parse gave, to compare parses of one input with different chunk sizes.
struct Outcome {
    std::string error;
    std::vector<std::uint32_t> shape_index;
    std::vector<replay::OpShapes> op_shapes;
    std::vector<std::string> op_names;
    std::uint64_t events = 0, malformed = 0;
    std::size_t activities = 0, runtime_calls = 0;
    bool operator==(const Outcome&) const = default;
};

Outcome parse(const std::string& doc, std::size_t chunk, bool strict, const std::string& name) {
    replay::ParseOptions options;
    options.chunk_bytes = chunk;
    options.strict = strict;
    Outcome out;
    try {
        const replay::ParseResult r = replay::parse_kineto_buffer(doc, options, name);
        for (const auto& op : r.trace.cpu_ops) {
            out.shape_index.push_back(op.shapes);
            out.op_names.emplace_back(r.trace.names.view(op.name));
        }
        out.op_shapes = r.trace.op_shapes;
        out.events = r.stats.events;
        out.malformed = r.stats.malformed;
        out.activities = r.trace.activities.size();
        out.runtime_calls = r.trace.runtime_calls.size();
    } catch (const replay::InputError& e) {
        out.error = e.what();
    }
    return out;
}

}  // namespace

// The event parser's fuzzer reads its first byte as chunk size and strict mode and demands the
// same result from every chunk size; its saved inputs are held to that here too.
TEST(FuzzRegressions, SavedInputsParseOrFailCleanly) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(replay::testing::source_dir()) / "tests/fuzz/regressions";
    ASSERT_TRUE(fs::exists(dir));
    std::size_t inputs = 0;
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
        const std::string target = entry.path().parent_path().filename().string();
        if (!entry.is_regular_file() ||
            (target != "fuzz_splitter" && target != "fuzz_event_parser"))
            continue;
        std::ifstream in(entry.path(), std::ios::binary);
        std::stringstream bytes;
        bytes << in.rdbuf();
        std::string doc = bytes.str();
        bool strict = false;
        if (target == "fuzz_event_parser" && !doc.empty()) {
            strict = (static_cast<unsigned char>(doc[0]) & 0x80) != 0;
            doc.erase(0, 1);
        }
        const std::string name = entry.path().filename().string();
        const Outcome whole = parse(doc, std::size_t{4} << 20, strict, name);
        for (const std::size_t chunk : {64u, 100u, 127u, 256u, 1000u, 4096u})
            EXPECT_TRUE(parse(doc, chunk, strict, name) == whole) << name << ", chunk " << chunk;
        ++inputs;
    }
    EXPECT_GT(inputs, 0u);
}
