// Byte sources (source.h): plain files (read in place when large), gzip and zstd streams, standard
// input and bytes in memory, each read in chunks.
#include "replay/source.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

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
class RawFile {
  public:
    RawFile(const std::string& path) : path_(path) {
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
        peek_.resize(4);
        peek_.resize(std::fread(peek_.data(), 1, peek_.size(), file_.get()));
    }
    const std::vector<unsigned char>& peek() const { return peek_; }
    std::size_t read(void* out, std::size_t n) {
        std::size_t done = 0;
        auto* dst = static_cast<unsigned char*>(out);
        while (peek_pos_ < peek_.size() && done < n) dst[done++] = peek_[peek_pos_++];
        if (done < n) done += std::fread(dst + done, 1, n - done, file_.get());
        if (done < n && std::ferror(file_.get()))
            throw InputError(path_, offset_ + done,
                             std::string("read error: ") + std::strerror(errno));
        offset_ += done;
        return done;
    }
    std::uint64_t offset() const { return offset_; }
    std::uint64_t size() const { return size_; }
    // A regular file (not a pipe), whose bytes can be mapped.
    int mappable_fd() const {
        if (path_ == "-") return -1;
        struct stat st {};
        const int fd = fileno(file_.get());
        return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? fd : -1;
    }
    // Moves the read position forward to `offset` (bytes in between were taken from a mapping).
    void skip_to(std::uint64_t offset) {
        if (offset == offset_) return;
        peek_pos_ = peek_.size();
        if (std::fseek(file_.get(), static_cast<long>(offset), SEEK_SET) != 0)
            throw InputError(path_, offset_, std::string("seek error: ") + std::strerror(errno));
        offset_ = offset;
    }

  private:
    std::string path_;
    FilePtr file_;
    std::vector<unsigned char> peek_;
    std::size_t peek_pos_ = 0;
    std::uint64_t offset_ = 0;
    std::uint64_t size_ = 0;
};

// A read-only private mapping of a whole file.
class Mapping {
  public:
    Mapping() = default;
    Mapping(int fd, std::uint64_t size) {
        if (fd < 0 || size == 0) return;
        void* at = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (at == MAP_FAILED) return;
        data_ = static_cast<const char*>(at);
        size_ = size;
    }
    Mapping(Mapping&& other) noexcept
        : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
    Mapping& operator=(Mapping&& other) noexcept {
        std::swap(data_, other.data_);
        std::swap(size_, other.size_);
        return *this;
    }
    ~Mapping() {
        if (data_) munmap(const_cast<char*>(data_), size_);
    }
    const char* data() const { return data_; }
    std::uint64_t size() const { return size_; }

  private:
    const char* data_ = nullptr;
    std::uint64_t size_ = 0;
};

class PlainSource final : public ByteSource {
  public:
    PlainSource(std::string name, RawFile raw) : ByteSource(std::move(name)), raw_(std::move(raw)) {
        // Large regular files are parsed in place: read() would copy every byte once more.
        if (raw_.size() >= kMapAtLeast) {
            fd_ = raw_.mappable_fd();
            map_ = Mapping(fd_, raw_.size());
        }
    }
    std::size_t read(std::span<char> out) override {
        if (mapped_ != raw_.offset()) raw_.skip_to(mapped_);
        const std::size_t n = raw_.read(out.data(), out.size());
        mapped_ = raw_.offset();
        return n;
    }
    std::span<const char> read_in_place(std::size_t max, std::size_t pad) override {
        if (!map_.data() || mapped_ + max + pad > map_.size()) return {};
        // A file cut shorter since it was mapped would fault (SIGBUS) where it no longer has
        // bytes: read() then reports the truncation as usual.
        struct stat st {};
        if (fstat(fd_, &st) != 0 || static_cast<std::uint64_t>(st.st_size) < mapped_ + max + pad)
            return {};
        const std::span<const char> out(map_.data() + mapped_, max);
        mapped_ += max;
        return out;
    }
    void release_before(std::uint64_t offset) override {
        if (!map_.data()) return;
        // Whole 2 MiB blocks: the page cache may map the file with huge pages, and dropping part
        // of one would unmap all of it, for the next chunk's first bytes to fault it back in.
        constexpr std::uintptr_t kBlock = 2u << 20;
        const auto start = reinterpret_cast<std::uintptr_t>(map_.data());
        const std::uintptr_t end = (start + std::min(offset, map_.size())) / kBlock * kBlock;
        if (end <= start + released_) return;
        madvise(const_cast<char*>(map_.data()) + released_, end - start - released_, MADV_DONTNEED);
        released_ = end - start;
    }
    std::uint64_t raw_offset() const override { return mapped_; }
    std::uint64_t raw_size() const override { return raw_.size(); }
    Compression compression() const override { return Compression::None; }

  private:
    static constexpr std::uint64_t kMapAtLeast = 16u << 20;
    RawFile raw_;
    int fd_ = -1;
    Mapping map_;
    std::uint64_t mapped_ = 0;    // the input position: read() and read_in_place() go on here
    std::uint64_t released_ = 0;  // release_before() only
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
            if (z->avail_in == 0) {
                std::size_t n = raw_.read(in_.data(), in_.size());
                if (n == 0) {
                    truncated_ = true;
                    finished_ = true;
                    break;
                }
                z->next_in = in_.data();
                z->avail_in = static_cast<uInt>(n);
            }
            int rc = inflate(z, Z_NO_FLUSH);
            if (rc == Z_STREAM_END) {
                // Concatenated gzip members are legal (e.g. `cat a.gz b.gz`): continue if more
                // follows.
                if (z->avail_in == 0) {
                    std::size_t n = raw_.read(in_.data(), in_.size());
                    if (n == 0) {
                        finished_ = true;
                        break;
                    }
                    z->next_in = in_.data();
                    z->avail_in = static_cast<uInt>(n);
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
            std::size_t hint = ZSTD_decompressStream(stream_.get(), &output, &input_);
            if (ZSTD_isError(hint))
                throw InputError(name_, consumed(),
                                 std::string("corrupt zstd data: ") + ZSTD_getErrorName(hint));
            last_hint_ = hint;
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
    std::size_t last_hint_ = 0;
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
    RawFile raw(path);
    const auto& magic = raw.peek();
    const std::string name = path == "-" ? "<stdin>" : path;
    if (magic.size() >= 2 && magic[0] == 0x1f && magic[1] == 0x8b)
        return std::make_unique<GzipSource>(name, std::move(raw));
    if (magic.size() >= 4 && magic[0] == 0x28 && magic[1] == 0xb5 && magic[2] == 0x2f &&
        magic[3] == 0xfd)
        return std::make_unique<ZstdSource>(name, std::move(raw));
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
