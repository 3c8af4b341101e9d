// The worker process's loop: makes the backend, then runs the parent's commands in order and
// counts each one finished in the shared page. An issue that throws fails that prepared work
// (reported at the next Sync) unless the device context is gone with it: then, as when
// anything else throws, the worker says why (Fault) and exits without cleaning up, since a
// poisoned CUDA context fails every free.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "replay/worker_backend.h"
#include "worker_wire.h"

namespace replay::detail {
namespace {

// Exit status of a worker that reported a fault before it went.
constexpr int kFaultStatus = 3;

class Channel {
  public:
    explicit Channel(int fd) : fd_(fd) {}

    void write(const std::string& frame) {
        std::size_t done = 0;
        while (done < frame.size()) {
            const ssize_t n = ::send(fd_, frame.data() + done, frame.size() - done, MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) _exit(0);  // the parent is gone: nobody to serve
            done += static_cast<std::size_t>(n);
        }
    }

    // The next whole frame (command byte first), valid until the next read; exits when the
    // parent is gone or sends what is no frame.
    std::string_view read() {
        for (;;) {
            try {
                if (const std::string_view frame = in_.next(); !frame.empty()) return frame;
            } catch (const WireError&) {
                _exit(kFaultStatus);
            }
            char buffer[64 << 10];
            const ssize_t n = recv(fd_, buffer, sizeof buffer, 0);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) _exit(0);
            in_.append(buffer, static_cast<std::size_t>(n));
        }
    }

    [[noreturn]] void fault(const std::string& why) {
        write(Encoder(Command::Fault).str(why).take());
        _exit(kFaultStatus);
    }

  private:
    int fd_;
    FrameBuffer in_;
};

class Server {
  public:
    Server(Channel& channel, Backend& backend) : channel_(channel), backend_(backend) {}

    // False when the parent asked the worker to quit.
    bool run(std::string_view frame) {
        Decoder d(frame);
        switch (d.command()) {
            case Command::Prepare: {
                const Prepared p = backend_.prepare(decode_recipe(d));
                channel_.write(Encoder(Command::Prepared)
                                   .u8(static_cast<std::uint8_t>(p.disposition))
                                   .str(p.reason)
                                   .u32(p.handle)
                                   .take());
                return true;
            }
            case Command::Streams:
                backend_.set_stream_count(static_cast<int>(d.i64()));
                return true;
            case Command::Issue: {
                const std::uint32_t handle = d.u32();
                const int stream = static_cast<int>(d.i64());
                const auto tag = static_cast<std::uint64_t>(d.i64());
                issue(handle, stream, tag);
                return true;
            }
            case Command::NameIssue:
                backend_.name_next_issue(d.str());
                return true;
            case Command::Wait: {
                const int waiter = static_cast<int>(d.i64());
                backend_.stream_wait(waiter, static_cast<int>(d.i64()));
                return true;
            }
            case Command::Flush:
                backend_.flush_l2();
                return true;
            case Command::EvictCode:
                backend_.evict_instruction_caches();
                return true;
            case Command::ClockStart:
                backend_.start_device_clock(static_cast<int>(d.i64()));
                return true;
            case Command::Hold: {
                const int stream = static_cast<int>(d.i64());
                backend_.hold_after(stream, d.i64());
                return true;
            }
            case Command::Warm: {
                const std::uint32_t handle = d.u32();
                const int stream = static_cast<int>(d.i64());
                const auto tag = static_cast<std::uint64_t>(d.i64());
                if (!failed_.count(handle)) backend_.warm_inputs(handle, stream, tag);
                return true;
            }
            case Command::SetPhase:
                backend_.set_phase(static_cast<Phase>(d.u8()));
                return true;
            case Command::FirstUses:
                lines(backend_.first_uses());
                return true;
            case Command::CaptureBlocker: {
                const std::uint32_t handle = d.u32();
                const std::string why = backend_.capture_blocker(handle, static_cast<int>(d.i64()));
                lines(why.empty() ? std::vector<std::string>{} : std::vector<std::string>{why});
                return true;
            }
            case Command::BeginCapture: {
                const int home = static_cast<int>(d.i64());
                backend_.begin_capture(home, d.u8() != 0);
                capturing_ = true;
                return true;
            }
            case Command::EndCapture: {
                std::string why;
                std::uint32_t graph = backend_.end_capture(why);
                capturing_ = false;
                if (!capture_error_.empty()) {  // what the in-process driver's capture() says
                    graph = 0;
                    why = std::exchange(capture_error_, {});
                }
                channel_.write(Encoder(Command::Captured).u32(graph).str(why).take());
                return true;
            }
            case Command::LaunchGraph:
                backend_.launch_graph(d.u32());
                return true;
            case Command::Sync:
                sync();
                return true;
            case Command::Quit:
                return false;
            default:
                channel_.fault("the worker got an unknown command");
        }
    }

  private:
    void issue(std::uint32_t handle, int stream, std::uint64_t tag) {
        if (failed_.count(handle)) return;
        try {
            backend_.issue(handle, stream, tag);
        } catch (const std::exception& e) {
            if (capturing_) {  // nothing ran: the capture fails, not the work
                if (capture_error_.empty()) capture_error_ = e.what();
                return;
            }
            // A launch can report an earlier kernel's sticky fault: only when the device still
            // synchronizes is the failure this work's own.
            try {
                backend_.synchronize();
            } catch (const std::exception& gone) {
                channel_.fault(std::string(gone.what()) + " (first seen as: " + e.what() + ")");
            }
            failed_[handle] = e.what();
            unreported_.emplace_back(handle, e.what());
        }
    }

    void lines(const std::vector<std::string>& all) {
        Encoder e(Command::Lines);
        e.u32(static_cast<std::uint32_t>(all.size()));
        for (const auto& line : all) e.str(line);
        channel_.write(e.take());
    }

    void sync() {
        backend_.synchronize();
        const std::vector<TimedActivity> activities = backend_.collect();
        Encoder e(Command::Synced);
        e.u32(static_cast<std::uint32_t>(unreported_.size()));
        for (const auto& [handle, why] : unreported_) e.u32(handle).str(why);
        unreported_.clear();
        e.u32(static_cast<std::uint32_t>(activities.size()));
        for (const auto& a : activities) encode(e, a);
        channel_.write(e.take());
    }

    Channel& channel_;
    Backend& backend_;
    std::map<std::uint32_t, std::string> failed_;  // handle -> why its issue threw
    std::vector<std::pair<std::uint32_t, std::string>> unreported_;
    bool capturing_ = false;
    std::string capture_error_;  // the first issue that threw while capturing
};

}  // namespace

[[noreturn]] void serve_worker(int fd, std::atomic<std::uint64_t>* finished,
                               const BackendMaker& maker) {
    // The worker goes with its parent, and leaves Ctrl-C and the parent's cleanup handlers
    // (temporary output files) to the parent.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() == 1) _exit(0);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE})
        signal(sig, sig == SIGPIPE ? SIG_IGN : SIG_DFL);
    Channel channel(fd);
    std::unique_ptr<Backend> backend;
    std::string why;
    try {
        backend = maker(why);
    } catch (const std::exception& e) {
        why = e.what();
    }
    if (backend == nullptr) {
        channel.write(Encoder(Command::Unavailable).str(why).take());
        _exit(0);
    }
    Encoder ready(Command::Ready);
    encode(ready, backend->environment());
    channel.write(ready.take());
    finished->fetch_add(1, std::memory_order_release);  // the start is the parent's command 0
    Server server(channel, *backend);
    for (;;) {
        const std::string_view frame = channel.read();
        bool more = true;
        try {
            more = server.run(frame);
        } catch (const std::exception& e) {
            channel.fault(e.what());
        }
        finished->fetch_add(1, std::memory_order_release);
        if (!more) break;
    }
    backend.reset();
    _exit(0);
}

}  // namespace replay::detail
