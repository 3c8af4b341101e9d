// Byte sources: a file (plain, gzip or zstd, told apart by magic bytes), or standard input ("-").
// Data is pulled in fixed-size chunks so memory does not grow with the file.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "replay/input_error.h"

namespace replay {

enum class Compression { None, Gzip, Zstd };
const char* to_string(Compression compression);

class ByteSource {
  public:
    virtual ~ByteSource() = default;
    // Fills `out` as far as it can; returns the number of bytes written, 0 at end of input.
    // A truncated compressed stream ends quietly; `truncated()` then says so.
    virtual std::size_t read(std::span<char> out) = 0;
    // Bytes consumed from the underlying file so far (compressed bytes for .gz/.zst).
    virtual std::uint64_t raw_offset() const = 0;
    // True when a compressed stream ended before its end-of-stream marker.
    virtual bool truncated() const { return false; }
    virtual Compression compression() const = 0;
    // Size of the underlying file when known (for progress), else 0.
    virtual std::uint64_t raw_size() const { return 0; }
    const std::string& name() const { return name_; }

  protected:
    explicit ByteSource(std::string name) : name_(std::move(name)) {}
    std::string name_;
};

// Opens `path` ("-" is standard input) and picks the decoder by content. Throws InputError.
std::unique_ptr<ByteSource> open_source(const std::string& path);

// Plain JSON text already in memory, read as a file named `name` holding these bytes would be;
// the bytes must outlive the source.
std::unique_ptr<ByteSource> memory_source(std::string name, std::string_view bytes);

// Reads a whole (small) input into memory, decompressing as needed; for side files such as the
// Execution Trace. Throws InputError.
std::string read_all(const std::string& path);

}  // namespace replay
