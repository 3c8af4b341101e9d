// The error every reader throws for input a user can act on: it names the file and the byte offset.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace replay {

class InputError : public std::runtime_error {
  public:
    InputError(const std::string& file, std::uint64_t offset, const std::string& what);
    const std::string& file() const { return file_; }
    std::uint64_t offset() const { return offset_; }

  private:
    std::string file_;
    std::uint64_t offset_;
};

}  // namespace replay
