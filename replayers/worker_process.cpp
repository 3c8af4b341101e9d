#include "worker_process.h"

#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <system_error>

#include "worker_wire.h"

namespace replay::detail {

// The child's side (worker_serve.cpp): never returns.
[[noreturn]] void serve_worker(int fd, std::atomic<std::uint64_t>* finished,
                               const BackendMaker& maker);

namespace {

using Clock = std::chrono::steady_clock;

// Frames queued before they are written: enough that the timed loop rarely writes, few enough
// that the worker starts on them soon.
constexpr std::size_t kFlushBytes = 16 << 10;
// How often a waiting parent looks at the worker's progress.
constexpr int kPollMs = 50;

std::system_error system_error(const char* what) {
    return std::system_error(errno, std::generic_category(), what);
}

std::string limit_text(double seconds) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g s", seconds);
    return text;
}

}  // namespace

WorkerProcess::WorkerProcess(const BackendMaker& maker, double start_limit_s) {
    void* page = mmap(nullptr, sizeof(std::atomic<std::uint64_t>), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) throw system_error("worker progress page (mmap)");
    finished_ = new (page) std::atomic<std::uint64_t>(0);
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
        munmap(page, sizeof(std::atomic<std::uint64_t>));
        throw system_error("worker socket (socketpair)");
    }
    pid_ = fork();
    if (pid_ < 0) {
        const auto error = system_error("worker process (fork)");
        close(fds[0]);
        close(fds[1]);
        munmap(page, sizeof(std::atomic<std::uint64_t>));
        throw error;
    }
    if (pid_ == 0) {
        close(fds[0]);
        serve_worker(fds[1], finished_, maker);
    }
    close(fds[1]);
    fd_ = fds[0];
    written_ = 1;  // the start
    limits_.push_back(start_limit_s);
}

WorkerProcess::~WorkerProcess() {
    if (alive()) {
        // Quit without a limit on the work before it; what is still queued is dropped.
        limits_.resize(limits_.size() - queued_);
        out_.clear();
        queued_ = 0;
        send(Encoder(Command::Quit).take(), 10.0);
        if (flush()) {
            // The worker closes its end when it is done: EOF, or the limit, then a kill.
            while (alive() && receive()) {
            }
        }
        if (alive()) fail("quit");
    }
    close(fd_);
    munmap(finished_, sizeof(std::atomic<std::uint64_t>));
}

void WorkerProcess::send(std::string frame, double limit_s) {
    if (!alive()) return;
    out_ += frame;
    ++queued_;
    limits_.push_back(limit_s);
    if (out_.size() >= kFlushBytes) flush();
}

bool WorkerProcess::flush() {
    std::size_t done = 0;
    while (alive() && done < out_.size()) {
        const ssize_t n =
            ::send(fd_, out_.data() + done, out_.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            done += static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!wait_for(POLLOUT)) break;
            continue;
        }
        fail(std::string("the worker's socket broke: ") + std::strerror(errno));
    }
    out_.clear();
    written_ += queued_;
    queued_ = 0;
    return alive();
}

std::optional<std::string> WorkerProcess::receive() {
    if (!flush()) return std::nullopt;
    while (alive()) {
        try {
            if (const std::string_view frame = in_.next(); !frame.empty())
                return std::string(frame);
        } catch (const WireError& e) {
            fail(std::string("the worker broke the protocol: ") + e.what());
            break;
        }
        if (!wait_for(POLLIN)) break;
        char buffer[64 << 10];
        const ssize_t n = recv(fd_, buffer, sizeof buffer, MSG_DONTWAIT);
        if (n > 0)
            in_.append(buffer, static_cast<std::size_t>(n));
        else if (n == 0)
            fail(reap());
        else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)
            fail(std::string("the worker's socket broke: ") + std::strerror(errno));
    }
    return std::nullopt;
}

bool WorkerProcess::wait_for(short events) {
    // The command in flight is the first one the worker has not finished; its deadline starts
    // when the worker reaches it.
    std::uint64_t in_flight = ~std::uint64_t{0};
    Clock::time_point deadline = Clock::time_point::max();
    double limit = INFINITY;
    while (alive()) {
        const std::uint64_t finished = finished_->load(std::memory_order_acquire);
        while (first_limit_ < finished && !limits_.empty()) {
            limits_.pop_front();
            ++first_limit_;
        }
        if (finished != in_flight) {
            in_flight = finished;
            limit = finished < written_ && !limits_.empty() ? limits_.front() : INFINITY;
            deadline = std::isfinite(limit)
                           ? Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                std::chrono::duration<double>(limit))
                           : Clock::time_point::max();
        }
        if (Clock::now() > deadline) {
            fail("ran past its time limit of " + limit_text(limit) + "; the worker was killed");
            return false;
        }
        pollfd p{fd_, events, 0};
        const int ready = poll(&p, 1, kPollMs);
        if (ready < 0 && errno != EINTR) {
            fail(std::string("poll on the worker's socket: ") + std::strerror(errno));
            return false;
        }
        if (ready > 0) {
            if ((p.revents & events) != 0) return true;
            // Hung up with nothing left to read: the worker is gone.
            fail(reap());
            return false;
        }
    }
    return false;
}

void WorkerProcess::fail(const std::string& why) {
    if (!alive()) return;
    if (pid_ > 0) {
        kill(pid_, SIGKILL);
        const std::string ended = reap();
        (void)ended;
    }
    failure_ = why.empty() ? "the worker process ended" : why;
}

std::string WorkerProcess::reap() {
    if (pid_ <= 0) return "the worker process ended";
    int status = 0;
    pid_t done;
    // A worker that closed its socket is on its way out; one that does not go is killed.
    for (int tries = 0; (done = waitpid(pid_, &status, WNOHANG)) == 0 && tries < 100; ++tries)
        usleep(20000);
    if (done == 0) {
        kill(pid_, SIGKILL);
        done = waitpid(pid_, &status, 0);
    }
    pid_ = -1;
    if (done < 0) return "the worker process ended (waitpid failed)";
    if (WIFSIGNALED(status)) {
        const int sig = WTERMSIG(status);
        return "the worker process was killed by signal " + std::to_string(sig) + " (" +
               strsignal(sig) + ")";
    }
    return "the worker process exited with status " + std::to_string(WEXITSTATUS(status));
}

}  // namespace replay::detail
