// Paths to the bundled test data, wherever ctest runs from, and temporary input files.
#pragma once

#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace replay::testing {

inline std::string source_dir() {
    const char* dir = std::getenv("REPLAY_SOURCE_DIR");
    return dir != nullptr ? dir : ".";
}
inline std::string trace_path(const std::string& relative) {
    return source_dir() + "/traces/" + relative;
}
inline std::string source_path(const std::string& relative) {
    return source_dir() + "/" + relative;
}

// A file under the temp directory (gzip-compressed on request), removed at the end of the test.
class TempFile {
  public:
    TempFile(const std::string& name, const std::string& content, bool gzip = false)
        : path_(std::filesystem::temp_directory_path() /
                ("replay_test_" + std::to_string(::getpid()) + "_" + name)) {
        if (gzip) {
            gzFile out = gzopen(path_.c_str(), "wb");
            gzwrite(out, content.data(), static_cast<unsigned>(content.size()));
            gzclose(out);
        } else {
            std::ofstream(path_, std::ios::binary) << content;
        }
    }
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;
    ~TempFile() { std::filesystem::remove(path_); }
    std::string path() const { return path_.string(); }

  private:
    std::filesystem::path path_;
};

}  // namespace replay::testing
