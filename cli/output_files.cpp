#include "output_files.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>

namespace replay::cli {

void write_file(const std::filesystem::path& path, const std::function<void(std::ostream&)>& fill) {
    namespace fs = std::filesystem;
    const auto fail = [&](const std::string& why) {
        throw std::runtime_error("cannot write " + path.string() + ": " + why);
    };
    std::error_code ec;
    fs::path target = path;
    if (fs::is_symlink(fs::symlink_status(path, ec))) {
        target = fs::canonical(path, ec);
        if (ec) target = fs::read_symlink(path, ec);  // a dangling link: create its target
        if (ec) fail(ec.message());
    }
    const fs::file_status status = fs::status(target, ec);
    if (fs::is_directory(status)) fail("it is a directory");
    if (fs::exists(status) && !fs::is_regular_file(status)) {
        std::ofstream out(target, std::ios::binary);
        if (!out) fail("cannot open it");
        fill(out);
        if (!out.flush()) fail("write failed");
        return;
    }
    const auto tmp = target.string() + ".tmp" + std::to_string(::getpid());
    try {
        std::ofstream out(tmp, std::ios::binary);
        if (!out) fail(std::string("cannot create a file there (") + std::strerror(errno) + ")");
        fill(out);
        if (!out.flush()) fail("write failed");
        out.close();
        fs::rename(tmp, target, ec);
        if (ec) fail(ec.message());
    } catch (...) {
        fs::remove(tmp, ec);
        throw;
    }
}

void make_output_dir(const std::filesystem::path& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec || !std::filesystem::is_directory(dir))
        throw std::runtime_error("cannot create output folder " + dir.string() + ": " +
                                 (ec ? ec.message() : "a file of that name exists"));
}

}  // namespace replay::cli
