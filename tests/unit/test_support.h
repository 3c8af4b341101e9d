// Paths to the bundled test data, wherever ctest runs from.
#pragma once

#include <cstdlib>
#include <string>

namespace replay::testing {

inline std::string source_dir() {
    const char* dir = std::getenv("REPLAY_SOURCE_DIR");
    return dir != nullptr ? dir : ".";
}
inline std::string trace_path(const std::string& relative) {
    return source_dir() + "/traces/" + relative;
}

}  // namespace replay::testing
