#include "output_files.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>

namespace replay::cli {
namespace fs = std::filesystem;
namespace {

// ---- what a signal handler removes --------------------------------------------------------
// Fixed storage, so that the handler touches no allocator: a path per slot and its state.

enum SlotState : int { kFree, kClaimed, kFile, kFolder };
constexpr std::size_t kSlots = 64, kPathBytes = 4096;
std::array<std::atomic<int>, kSlots> g_state{};
std::array<std::array<char, kPathBytes>, kSlots> g_path{};
// While a set of outputs is renamed into place, a signal waits for the renames to end (on
// whatever thread it arrives: libtorch keeps threads of its own).
std::atomic<bool> g_committing{false};
std::atomic<int> g_deferred_signal{0};

// Returns the slot, or kSlots when none is free or the path is too long (then a signal leaves
// that one file behind, as before there was any cleanup).
std::size_t remember_for_signals(const fs::path& path, SlotState kind) {
    const std::string& text = path.native();
    if (text.size() + 1 > kPathBytes) return kSlots;
    for (std::size_t i = 0; i < kSlots; ++i) {
        int expected = kFree;
        if (!g_state[i].compare_exchange_strong(expected, kClaimed)) continue;
        std::memcpy(g_path[i].data(), text.c_str(), text.size() + 1);
        g_state[i].store(kind, std::memory_order_release);
        return i;
    }
    return kSlots;
}

void forget_for_signals(std::size_t slot) {
    if (slot < kSlots) g_state[slot].store(kFree, std::memory_order_release);
}

// Only async-signal-safe calls: unlink, rmdir, signal, raise.
void remove_partial_outputs_and_end(int signal_number) {
    for (std::size_t i = 0; i < kSlots; ++i)
        if (g_state[i].load(std::memory_order_acquire) == kFile) ::unlink(g_path[i].data());
    for (std::size_t i = kSlots; i-- > 0;)  // folders were remembered outermost first
        if (g_state[i].load(std::memory_order_acquire) == kFolder) ::rmdir(g_path[i].data());
    ::signal(signal_number, SIG_DFL);
    ::raise(signal_number);  // delivered when the handler returns: the process ends by it
}

extern "C" void on_signal(int signal_number) {
    if (g_committing.load()) {
        g_deferred_signal.store(signal_number);
        return;
    }
    remove_partial_outputs_and_end(signal_number);
}

// The renames of a commit, which a signal does not cut in half.
class CommitWindow {
  public:
    CommitWindow() { g_committing.store(true); }
    ~CommitWindow() {
        g_committing.store(false);
        if (const int s = g_deferred_signal.exchange(0)) remove_partial_outputs_and_end(s);
    }
    CommitWindow(const CommitWindow&) = delete;
    CommitWindow& operator=(const CommitWindow&) = delete;
};

std::string g_command_line;

std::string errno_text() {
    return std::strerror(errno);
}

}  // namespace

void remember_command_line(int argc, char** argv) {
    g_command_line.clear();
    for (int i = 0; i < argc; ++i) {
        if (i > 0) g_command_line += ' ';
        g_command_line += argv[i];
    }
}

void remove_partial_outputs_on_signals() {
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    sigaddset(&action.sa_mask, SIGINT);  // one cleanup at a time
    sigaddset(&action.sa_mask, SIGTERM);
    for (int s : {SIGINT, SIGTERM}) ::sigaction(s, &action, nullptr);
}

// ---- staged files ---------------------------------------------------------------------------

struct StagedFiles::Staged {
    fs::path tmp, target;
    std::size_t slot = kSlots;
};

StagedFiles::StagedFiles() = default;

StagedFiles::~StagedFiles() {
    discard();
}

void StagedFiles::write(const fs::path& path, const Fill& fill) {
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
        if (!out) fail("cannot open it (" + errno_text() + ")");
        fill(out);
        if (!out.flush()) fail("write failed (" + errno_text() + ")");
        return;
    }
    auto staged = std::make_unique<Staged>();
    staged->target = target;
    staged->tmp = target.string() + ".tmp" + std::to_string(::getpid());
    // Remembered before it exists: a signal from here on removes it.
    staged->slot = remember_for_signals(staged->tmp, kFile);
    Staged& s = *staged;
    staged_.push_back(std::move(staged));
    std::ofstream out(s.tmp, std::ios::binary);
    if (!out) fail("cannot create a file there (" + errno_text() + ")");
    fill(out);
    if (!out.flush()) fail("write failed (" + errno_text() + ")");
    out.close();
    if (out.fail()) fail("write failed (" + errno_text() + ")");
}

void StagedFiles::remove_at_commit(const fs::path& target) {
    removals_.push_back(target);
}

void StagedFiles::commit() {
    const CommitWindow window;
    for (auto& s : staged_) {
        std::error_code ec;
        fs::rename(s->tmp, s->target, ec);
        if (ec)
            throw std::runtime_error("cannot write " + s->target.string() + ": " + ec.message());
        forget_for_signals(s->slot);
        s->slot = kSlots;
        s->tmp.clear();
    }
    staged_.clear();
    for (const auto& target : removals_) {
        std::error_code ec;
        fs::remove(target, ec);
    }
    removals_.clear();
}

void StagedFiles::discard() {
    for (auto& s : staged_) {
        std::error_code ec;
        if (!s->tmp.empty()) fs::remove(s->tmp, ec);
        forget_for_signals(s->slot);
    }
    staged_.clear();
    removals_.clear();
}

void write_file(const fs::path& path, const Fill& fill) {
    StagedFiles files;
    files.write(path, fill);
    files.commit();
}

// ---- the output folder and its lock --------------------------------------------------------

// flock() on DIR/.replay.lock, which holds the pid and command line of its holder. The holder
// removes the file on its way out; a run that locked a file another removed meanwhile tries
// again on the new one.
class OutputFolder::Lock {
  public:
    explicit Lock(const fs::path& dir) : path_(dir / ".replay.lock") {
        for (int attempt = 0; attempt < 8; ++attempt) {
            fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
            if (fd_ < 0)
                throw std::runtime_error("cannot lock output folder " + dir.string() + ": " +
                                         path_.string() + ": " + errno_text());
            if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
                const int error = errno;
                const std::string holder = read_holder();
                ::close(fd_);
                fd_ = -1;
                if (error == EWOULDBLOCK)
                    throw std::runtime_error(
                        "output folder " + dir.string() + " is in use by another run (" + holder +
                        "; lock " + path_.string() +
                        "): wait for it to end, or give this one another --out");
                throw std::runtime_error("cannot lock output folder " + dir.string() + ": " +
                                         std::strerror(error));
            }
            struct stat mine = {};
            struct stat there = {};
            if (::fstat(fd_, &mine) == 0 && ::stat(path_.c_str(), &there) == 0 &&
                mine.st_ino == there.st_ino && mine.st_dev == there.st_dev)
                break;
            ::close(fd_);  // the file we locked was removed by the run before us: again
            fd_ = -1;
        }
        if (fd_ < 0) throw std::runtime_error("cannot lock output folder " + dir.string());
        slot_ = remember_for_signals(path_, kFile);
        const std::string holder =
            "pid " + std::to_string(::getpid()) + "\n" + g_command_line + "\n";
        // Who holds it is a courtesy to the next run: the lock holds without it.
        const bool noted = ::ftruncate(fd_, 0) == 0 && ::write(fd_, holder.data(), holder.size()) ==
                                                           static_cast<ssize_t>(holder.size());
        static_cast<void>(noted);
    }
    ~Lock() {
        forget_for_signals(slot_);
        ::unlink(path_.c_str());
        ::close(fd_);
    }
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;

  private:
    // "pid 1234: replay t.json --out d", from the lock file of the run that holds it.
    std::string read_holder() const {
        char buf[4096];
        const ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
        std::string text(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
        const auto newline = text.find('\n');
        if (newline == std::string::npos) return "a run that is starting";
        std::string command = text.substr(newline + 1);
        while (!command.empty() && command.back() == '\n') command.pop_back();
        return text.substr(0, newline) + (command.empty() ? "" : ": " + command);
    }
    fs::path path_;
    int fd_ = -1;
    std::size_t slot_ = kSlots;
};

OutputFolder::OutputFolder(fs::path dir) : dir_(std::move(dir)) {
    create_folders(dir_);
    try {
        lock_ = std::make_unique<Lock>(dir_);
    } catch (...) {
        remove_created_folders();
        throw;
    }
}

OutputFolder::~OutputFolder() {
    if (committed_) return;
    files_.discard();
    lock_.reset();
    remove_created_folders();
}

void OutputFolder::remove_created_folders() {
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
        std::error_code ec;
        fs::remove(*it, ec);  // only when empty: what was there before stays
    }
    forget_created_folders();
}

void OutputFolder::forget_created_folders() {
    for (auto slot : folder_slots_) forget_for_signals(slot);
    folder_slots_.clear();
    created_.clear();
}

void OutputFolder::create_folders(const fs::path& dir) {
    std::vector<fs::path> missing;
    for (fs::path p = dir; !p.empty(); p = p.parent_path()) {
        std::error_code ec;
        if (fs::exists(p, ec)) break;
        missing.push_back(p);
        if (p == p.parent_path()) break;
    }
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir))
        throw std::runtime_error("cannot create output folder " + dir.string() + ": " +
                                 (ec ? ec.message() : "a file of that name exists"));
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
        created_.push_back(*it);
        folder_slots_.push_back(remember_for_signals(*it, kFolder));
    }
}

void OutputFolder::write(const fs::path& relative, const Fill& fill) {
    if (relative.has_parent_path()) create_folders(dir_ / relative.parent_path());
    files_.write(dir_ / relative, fill);
}

void OutputFolder::remove_at_commit(const fs::path& relative) {
    files_.remove_at_commit(dir_ / relative);
}

void OutputFolder::commit() {
    files_.commit();
    committed_ = true;
    forget_created_folders();
    lock_.reset();
}

}  // namespace replay::cli
