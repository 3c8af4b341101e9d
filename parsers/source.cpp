// Byte sources (source.h): plain files (read in place when large), gzip and zstd streams, standard
// input and bytes in memory, each read in chunks.
#include "replay/source.h"

#include <sys/stat.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

namespace replay {
namespace {

constexpr std::size_t kRawChunk = 1 << 20;

struct FileCloser {
    void operator()(std::FILE* f) const {
        if (f != nullptr && f != stdin) std::fclose(f);
    }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

// Raw file bytes with a small look-ahead buffer so the magic bytes can be sniffed from a pipe.
// Plain reads only, no mapping: a file cut shorter while it is read (the profiler or a user
// rewriting it) must be an InputError naming it, and a mapping would fault (SIGBUS) instead.
class RawFile {
  public:
    RawFile(const std::string& path, std::string name) : name_(std::move(name)) {
        if (path == "-") {
            file_.reset(stdin);
        } else {
            file_.reset(std::fopen(path.c_str(), "rb"));
            if (!file_)
                throw InputError(path, 0, std::string("cannot open: ") + std::strerror(errno));
            if (std::fseek(file_.get(), 0, SEEK_END) == 0) {
                long size = std::ftell(file_.get());
                if (size > 0) size_ = static_cast<std::uint64_t>(size);
                std::fseek(file_.get(), 0, SEEK_SET);
            }
        }
        peek_.resize(kPeek);
        peek_.resize(std::fread(peek_.data(), 1, peek_.size(), file_.get()));
    }
    static constexpr std::size_t kPeek = 4;
    const std::vector<unsigned char>& peek() const { return peek_; }
    std::size_t read(void* out, std::size_t n) {
        std::size_t done = 0;
        auto* dst = static_cast<unsigned char*>(out);
        while (peek_pos_ < peek_.size() && done < n) dst[done++] = peek_[peek_pos_++];
        if (done < n) done += std::fread(dst + done, 1, n - done, file_.get());
        if (done < n && std::ferror(file_.get()))
            throw InputError(name_, offset_ + done,
                             std::string("read error: ") + std::strerror(errno));
        offset_ += done;
        // The end before the size the file had when it was opened: it was cut shorter since.
        if (done < n && offset_ < size_) {
            struct stat now {};
            const std::string size_now = fstat(fileno(file_.get()), &now) == 0
                                             ? std::to_string(now.st_size)
                                             : std::string("fewer");
            throw InputError(name_, offset_,
                             "the file changed while it was read: it had " + std::to_string(size_) +
                                 " bytes when it was opened and has " + size_now + " now");
        }
        return done;
    }
    std::uint64_t offset() const { return offset_; }
    std::uint64_t size() const { return size_; }

  private:
    std::string name_;
    FilePtr file_;
    std::vector<unsigned char> peek_;
    std::size_t peek_pos_ = 0;
    std::uint64_t offset_ = 0;
    std::uint64_t size_ = 0;
};

class PlainSource final : public ByteSource {
  public:
    PlainSource(std::string name, RawFile raw)
        : ByteSource(std::move(name)), raw_(std::move(raw)) {}
    std::size_t read(std::span<char> out) override { return raw_.read(out.data(), out.size()); }
    std::uint64_t raw_offset() const override { return raw_.offset(); }
    std::uint64_t raw_size() const override { return raw_.size(); }
    Compression compression() const override { return Compression::None; }

  private:
    RawFile raw_;
};

class GzipSource final : public ByteSource {
  public:
    GzipSource(std::string name, RawFile raw)
        : ByteSource(std::move(name)), raw_(std::move(raw)), in_(kRawChunk) {
        // 15 + 32: zlib or gzip header, auto-detected.
        if (inflateInit2(&stream_, 15 + 32) != Z_OK) throw InputError(name_, 0, "zlib init failed");
    }
    // zlib keeps a pointer back to the z_stream, so the object never moves or copies.
    GzipSource(const GzipSource&) = delete;
    GzipSource& operator=(const GzipSource&) = delete;
    ~GzipSource() override { inflateEnd(&stream_); }
    std::size_t read(std::span<char> out) override {
        z_stream* z = &stream_;
        z->next_out = reinterpret_cast<Bytef*>(out.data());
        z->avail_out = static_cast<uInt>(out.size());
        while (z->avail_out > 0 && !finished_) {
            if (z->avail_in == 0 && !refill()) {
                truncated_ = true;
                finished_ = true;
                break;
            }
            int rc = inflate(z, Z_NO_FLUSH);
            if (rc == Z_STREAM_END) {
                // Concatenated gzip members are legal (e.g. `cat a.gz b.gz`): go on if more
                // follows. Zero bytes after the last member are padding (tape blocks, files
                // written into preallocated space), which gzip accepts too.
                if (z->avail_in == 0 && !refill()) {
                    finished_ = true;
                    break;
                }
                if (*z->next_in == 0) {
                    skip_zero_padding();
                    finished_ = true;
                    break;
                }
                inflateReset(z);
            } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
                throw InputError(
                    name_, consumed(),
                    std::string("corrupt gzip data: ") + (z->msg ? z->msg : "inflate failed"));
            }
        }
        return out.size() - z->avail_out;
    }
    std::uint64_t raw_offset() const override { return consumed(); }
    std::uint64_t raw_size() const override { return raw_.size(); }
    bool truncated() const override { return truncated_; }
    Compression compression() const override { return Compression::Gzip; }

  private:
    std::uint64_t consumed() const { return raw_.offset() - stream_.avail_in; }
    // The next compressed bytes into the stream's input; false at the end of the file.
    bool refill() {
        const std::size_t n = raw_.read(in_.data(), in_.size());
        stream_.next_in = in_.data();
        stream_.avail_in = static_cast<uInt>(n);
        return n != 0;
    }
    void skip_zero_padding() {
        do {
            for (; stream_.avail_in > 0; ++stream_.next_in, --stream_.avail_in)
                if (*stream_.next_in != 0)
                    throw InputError(name_, consumed(),
                                     "corrupt gzip data: neither a gzip member nor zero padding "
                                     "after the end of the last member");
        } while (refill());
    }
    RawFile raw_;
    std::vector<unsigned char> in_;
    z_stream stream_{};
    bool finished_ = false;
    bool truncated_ = false;
};

struct ZstdFree {
    void operator()(ZSTD_DStream* s) const { ZSTD_freeDStream(s); }
};

class ZstdSource final : public ByteSource {
  public:
    ZstdSource(std::string name, RawFile raw)
        : ByteSource(std::move(name)), raw_(std::move(raw)), in_(ZSTD_DStreamInSize()) {
        stream_.reset(ZSTD_createDStream());
        if (!stream_) throw InputError(name_, 0, "zstd init failed");
        ZSTD_initDStream(stream_.get());
    }
    std::size_t read(std::span<char> out) override {
        ZSTD_outBuffer output{out.data(), out.size(), 0};
        while (output.pos < output.size && !finished_) {
            if (input_.pos == input_.size) {
                std::size_t n = raw_.read(in_.data(), in_.size());
                if (n == 0) {
                    // A frame still open at end of file means the archive was cut short.
                    truncated_ = last_hint_ != 0;
                    finished_ = true;
                    break;
                }
                input_ = ZSTD_inBuffer{in_.data(), n, 0};
            }
            // No more than the decoder asks for (the rest of a block and the next block's
            // header, or a frame header): an error then names the block it is in, where the
            // whole 128 KiB read would name only where that read started.
            ZSTD_inBuffer step{input_.src, std::min(input_.size, input_.pos + wanted_), input_.pos};
            const std::uint64_t at = consumed();
            const std::size_t hint = ZSTD_decompressStream(stream_.get(), &output, &step);
            if (ZSTD_isError(hint)) {
                // A checksum is checked at the end of its frame: the damage is anywhere in it.
                if (ZSTD_getErrorCode(hint) == ZSTD_error_checksum_wrong)
                    throw InputError(name_, at,
                                     "corrupt zstd data: the frame from byte " +
                                         std::to_string(frame_start_) +
                                         " does not match its checksum (at this byte)");
                throw InputError(name_, at,
                                 std::string("corrupt zstd data: ") + ZSTD_getErrorName(hint) +
                                     " (in the block that starts here or in the header after it)");
            }
            input_.pos = step.pos;
            if (last_hint_ == 0) frame_start_ = at;
            last_hint_ = hint;
            wanted_ = hint != 0 ? hint : kFrameHeaderMax;
        }
        return output.pos;
    }
    std::uint64_t raw_offset() const override { return consumed(); }
    std::uint64_t raw_size() const override { return raw_.size(); }
    bool truncated() const override { return truncated_; }
    Compression compression() const override { return Compression::Zstd; }

  private:
    std::uint64_t consumed() const { return raw_.offset() - (input_.size - input_.pos); }
    RawFile raw_;
    std::vector<char> in_;
    std::unique_ptr<ZSTD_DStream, ZstdFree> stream_;
    ZSTD_inBuffer input_{nullptr, 0, 0};
    static constexpr std::size_t kFrameHeaderMax = 18;  // ZSTD_FRAMEHEADERSIZE_MAX
    std::size_t wanted_ = kFrameHeaderMax;
    std::size_t last_hint_ = 0;  // 0 between frames
    std::uint64_t frame_start_ = 0;
    bool finished_ = false;
    bool truncated_ = false;
};

// Plain JSON text held in memory.
class MemorySource final : public ByteSource {
  public:
    MemorySource(std::string name, std::string_view bytes)
        : ByteSource(std::move(name)), bytes_(bytes) {}
    std::size_t read(std::span<char> out) override {
        const std::size_t n = std::min(out.size(), bytes_.size() - pos_);
        if (n > 0) std::memcpy(out.data(), bytes_.data() + pos_, n);
        pos_ += n;
        return n;
    }
    std::uint64_t raw_offset() const override { return pos_; }
    std::uint64_t raw_size() const override { return bytes_.size(); }
    Compression compression() const override { return Compression::None; }

  private:
    std::string_view bytes_;
    std::size_t pos_ = 0;
};

}  // namespace

const char* to_string(Compression compression) {
    switch (compression) {
        case Compression::None:
            return "none";
        case Compression::Gzip:
            return "gzip";
        case Compression::Zstd:
            return "zstd";
    }
    return "?";
}

InputError::InputError(const std::string& file, std::uint64_t offset, const std::string& what)
    : std::runtime_error(file + ": byte " + std::to_string(offset) + ": " + what),
      file_(file),
      offset_(offset) {}

std::unique_ptr<ByteSource> open_source(const std::string& path) {
    const std::string name = path == "-" ? "<stdin>" : path;
    RawFile raw(path, name);
    const auto& magic = raw.peek();
    if (magic.size() >= 2 && magic[0] == 0x1f && magic[1] == 0x8b)
        return std::make_unique<GzipSource>(name, std::move(raw));
    // A zstd frame (28 b5 2f fd), or a skippable frame (5? 2a 4d 18) that zstd -d passes over.
    const bool zstd_frame = magic.size() >= 4 && magic[0] == 0x28 && magic[1] == 0xb5 &&
                            magic[2] == 0x2f && magic[3] == 0xfd;
    const bool skippable_frame = magic.size() >= 4 && (magic[0] & 0xf0) == 0x50 &&
                                 magic[1] == 0x2a && magic[2] == 0x4d && magic[3] == 0x18;
    if (zstd_frame || skippable_frame) return std::make_unique<ZstdSource>(name, std::move(raw));
    return std::make_unique<PlainSource>(name, std::move(raw));
}

std::unique_ptr<ByteSource> memory_source(std::string name, std::string_view bytes) {
    return std::make_unique<MemorySource>(std::move(name), bytes);
}

std::string read_all(const std::string& path) {
    auto source = open_source(path);
    std::string data;
    std::vector<char> chunk(kRawChunk);
    while (std::size_t n = source->read(chunk)) data.append(chunk.data(), n);
    if (source->truncated())
        throw InputError(source->name(), source->raw_offset(), "compressed stream is truncated");
    return data;
}

}  // namespace replay
