#include "replay/sweep_csv.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <optional>
#include <system_error>
#include <sstream>

#include "replay/source.h"

namespace replay {
namespace {

constexpr const char* kFixedColumns[] = {"flops",     "bytes",   "elements", "padded_elements",
                                         "samples",   "median_us", "p95_us", "min_us",
                                         "spread_pct", "gflops_per_s", "gb_per_s", "energy_j",
                                         "status"};

std::string join(const std::vector<std::string>& fields) {
    std::string out;
    for (std::size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + fields[i];
    return out;
}

std::vector<std::string> split(std::string_view line) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (true) {
        const auto comma = line.find(',', start);
        out.emplace_back(line.substr(start, comma == std::string_view::npos ? line.npos : comma - start));
        if (comma == std::string_view::npos) return out;
        start = comma + 1;
    }
}

std::string num(double x, const char* format) {
    if (!std::isfinite(x)) return {};
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, format, x);
    return buffer;
}

// Statuses are free text: keep them one field.
std::string clean_status(std::string text) {
    for (char& c : text)
        if (c == ',' || c == '\n' || c == '\r') c = ';';
    return text;
}

std::system_error io_error(const std::string& what, const std::string& path) {
    return std::system_error(errno, std::generic_category(), what + " " + path);
}

class FileLock {
  public:
    FileLock(int fd, const std::string& path) : fd_(fd) {
        while (::flock(fd_, LOCK_EX) != 0)
            if (errno != EINTR) throw io_error("cannot lock", path);
    }
    ~FileLock() { ::flock(fd_, LOCK_UN); }
    FileLock(const FileLock&) = delete;
    FileLock& operator=(const FileLock&) = delete;

  private:
    int fd_;
};

std::string read_all(int fd, const std::string& path) {
    std::string text;
    char buffer[1 << 16];
    if (::lseek(fd, 0, SEEK_SET) < 0) throw io_error("cannot seek", path);
    while (true) {
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw io_error("cannot read", path);
        if (n == 0) return text;
        text.append(buffer, static_cast<std::size_t>(n));
    }
}

void write_all(int fd, const std::string& text, const std::string& path) {
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw io_error("cannot write", path);
        done += static_cast<std::size_t>(n);
    }
    if (::fdatasync(fd) != 0 && errno != EINVAL) throw io_error("cannot flush", path);
}

std::optional<std::vector<std::int64_t>> dims_of(const std::vector<std::string>& row,
                                                 std::size_t count) {
    std::vector<std::int64_t> dims(count);
    for (std::size_t i = 0; i < count; ++i) {
        const std::string& f = row[i];
        auto r = std::from_chars(f.data(), f.data() + f.size(), dims[i]);
        if (r.ec != std::errc() || r.ptr != f.data() + f.size()) return std::nullopt;
    }
    return dims;
}

}  // namespace

std::vector<std::string> sweep_csv_columns(const std::vector<std::string>& dim_names) {
    std::vector<std::string> columns = dim_names;
    for (const char* c : kFixedColumns) columns.emplace_back(c);
    return columns;
}

std::string format_sweep_row(const SweepRow& r) {
    std::vector<std::string> f;
    for (auto d : r.dims) f.push_back(std::to_string(d));
    f.push_back(num(r.flops, "%.0f"));
    f.push_back(num(r.bytes, "%.0f"));
    f.push_back(num(r.elements, "%.0f"));
    f.push_back(num(r.padded_elements, "%.0f"));
    f.push_back(std::to_string(r.samples));
    f.push_back(num(r.median_us, "%.4f"));
    f.push_back(num(r.p95_us, "%.4f"));
    f.push_back(num(r.min_us, "%.4f"));
    f.push_back(num(r.spread_pct, "%.3f"));
    const bool timed = std::isfinite(r.median_us) && r.median_us > 0;
    f.push_back(timed && r.flops > 0 ? num(r.flops / (r.median_us * 1e3), "%.3f") : "");
    f.push_back(timed && r.bytes > 0 ? num(r.bytes / (r.median_us * 1e3), "%.3f") : "");
    f.push_back(num(r.energy_j, "%.6g"));
    f.push_back(clean_status(r.status));
    return join(f);
}

std::size_t SweepTable::column(const std::string& name, const std::string& path) const {
    for (std::size_t i = 0; i < columns.size(); ++i)
        if (columns[i] == name) return i;
    throw InputError(path, 0, "no column '" + name + "' in the header");
}

SweepTable parse_sweep_csv(const std::string& text) {
    SweepTable t;
    std::size_t start = 0;
    bool header = true;
    while (start < text.size()) {
        const auto newline = text.find('\n', start);
        if (newline == std::string::npos) {  // the last line, cut short by a kill
            t.torn = true;
            break;
        }
        std::string_view line(text.data() + start, newline - start);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        start = newline + 1;
        if (line.empty()) continue;
        auto fields = split(line);
        if (header) {
            t.columns = std::move(fields);
            header = false;
        } else if (fields.size() == t.columns.size()) {
            t.rows.push_back(std::move(fields));
        } else {
            ++t.malformed;
        }
    }
    return t;
}

SweepTable read_sweep_csv(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path, 0, "cannot open the sweep CSV");
    std::ostringstream buffer;
    buffer << in.rdbuf();
    SweepTable t = parse_sweep_csv(buffer.str());
    if (t.columns.empty()) throw InputError(path, 0, "no header line");
    return t;
}

SweepCsvWriter::SweepCsvWriter(const std::string& path, const std::vector<std::string>& dim_names)
    : path_(path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) throw io_error("cannot open", path);
    try {
        FileLock lock(fd_, path_);
        std::string text = read_all(fd_, path_);
        if (!text.empty() && text.back() != '\n') {
            const auto last = text.rfind('\n');
            const std::size_t keep = last == std::string::npos ? 0 : last + 1;
            if (::ftruncate(fd_, static_cast<off_t>(keep)) != 0) throw io_error("cannot truncate", path_);
            text.resize(keep);
            repaired_ = true;
        }
        const std::string header = join(sweep_csv_columns(dim_names));
        if (text.empty()) {
            write_all(fd_, header + "\n", path_);
            return;
        }
        const SweepTable table = parse_sweep_csv(text);
        if (join(table.columns) != header)
            throw InputError(path_, 0,
                             "its header is '" + join(table.columns) + "', this sweep writes '" +
                                 header + "' (another sweep of the same kernel? use another --out)");
        for (const auto& row : table.rows)
            if (auto dims = dims_of(row, dim_names.size())) done_.insert(*dims);
        rows_at_open_ = table.rows.size();
    } catch (...) {
        ::close(fd_);
        throw;
    }
}

SweepCsvWriter::~SweepCsvWriter() {
    if (fd_ >= 0) ::close(fd_);
}

void SweepCsvWriter::append(const SweepRow& row) {
    FileLock lock(fd_, path_);
    write_all(fd_, format_sweep_row(row) + "\n", path_);
    done_.insert(row.dims);
}

}  // namespace replay
