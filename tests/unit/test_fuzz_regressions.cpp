// Every input the fuzzers once broke the parser with, parsed again: an InputError is fine, a crash
// or sanitizer report is not (the CI runs this under ASan/UBSan too).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "replay/kineto_parser.h"
#include "replay/source.h"
#include "test_support.h"

TEST(FuzzRegressions, SavedInputsParseOrFailCleanly) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(replay::testing::source_dir()) / "tests/fuzz/regressions";
    ASSERT_TRUE(fs::exists(dir));
    std::size_t inputs = 0;
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
        if (!entry.is_regular_file()) continue;
        std::ifstream in(entry.path(), std::ios::binary);
        std::stringstream bytes;
        bytes << in.rdbuf();
        for (std::size_t chunk : {std::size_t{64}, std::size_t{4} << 20}) {
            replay::ParseOptions options;
            options.chunk_bytes = chunk;
            try {
                replay::parse_kineto_buffer(bytes.str(), options, entry.path().string());
            } catch (const replay::InputError&) {
            }
        }
        ++inputs;
    }
    EXPECT_GT(inputs, 0u);
}
