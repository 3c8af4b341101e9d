// Files for the parser tests: temporary folders, gzip and zstd copies, the bundled BLOOM trace.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "replay/source.h"
#include "test_support.h"

namespace replay::testing {

namespace fs = std::filesystem;

// Named by the process too: ctest runs each test in a process of its own, two at a time, and
// gtest's random seed (from the clock) alone gave two tests started together the same folder,
// which the first to end removed under the other (BadInput.CompressedStreamCutBeforeAnyEventSaysSo
// failed once so in a fresh clone: "/tmp/replay_test_84613_0/cut4.json.gz: cannot open").
class TempDir {
  public:
    TempDir()
        : path_(fs::temp_directory_path() /
                ("replay_test_" + std::to_string(::getpid()) + "_" +
                 std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
                 std::to_string(counter_++))) {
        fs::create_directories(path_);
    }
    ~TempDir() { fs::remove_all(path_); }
    fs::path operator/(const std::string& name) const { return path_ / name; }
    const fs::path& path() const { return path_; }

  private:
    static inline int counter_ = 0;
    fs::path path_;
};

inline void write_file(const fs::path& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A file's bytes as they are (no decompression).
inline std::string file_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

inline std::string gzip(const std::string& data) {
    z_stream z{};
    deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
    std::string out(deflateBound(&z, data.size()) + 64, '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    z.avail_in = static_cast<uInt>(data.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    deflate(&z, Z_FINISH);
    out.resize(z.total_out);
    deflateEnd(&z);
    return out;
}

// Level 3, with a content checksum when asked (as the zstd tool writes by default).
inline std::string zstd(const std::string& data, bool checksum = false) {
    const std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> ctx(ZSTD_createCCtx(),
                                                                   &ZSTD_freeCCtx);
    ZSTD_CCtx_setParameter(ctx.get(), ZSTD_c_compressionLevel, 3);
    ZSTD_CCtx_setParameter(ctx.get(), ZSTD_c_checksumFlag, checksum ? 1 : 0);
    std::string out(ZSTD_compressBound(data.size()), '\0');
    out.resize(ZSTD_compress2(ctx.get(), out.data(), out.size(), data.data(), data.size()));
    return out;
}

inline const std::string kBloom = "h200/bloom560m_fp16_b1_s5.json.gz";

// The BLOOM trace's JSON text, read once.
inline const std::string& bloom_json() {
    static const std::string json = read_all(trace_path(kBloom));
    return json;
}

}  // namespace replay::testing
