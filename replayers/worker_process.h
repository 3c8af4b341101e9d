// One worker process (internal to replayers/): a child forked before any device work, which
// makes the backend and serves commands (worker_serve.cpp), and the parent's end of the socket
// to it, with the watchdog. Commands are written without waiting for the worker (the timed
// loop pays no round trip); the worker counts the commands it has finished in a page shared
// with the parent, so that while the parent waits, it knows which command is in flight and
// for how long it may run.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>

#include "replay/worker_backend.h"
#include "worker_wire.h"

namespace replay::detail {

class WorkerProcess {
  public:
    // Forks the worker, which answers Ready or Unavailable within `start_limit_s` (making the
    // backend counts as its first command). Throws std::system_error when the system refuses
    // (no socket, no fork).
    WorkerProcess(const BackendMaker& maker, double start_limit_s);
    ~WorkerProcess();  // asks the worker to quit; kills it if it does not
    WorkerProcess(const WorkerProcess&) = delete;
    WorkerProcess& operator=(const WorkerProcess&) = delete;

    // Queues one framed command that the worker may take `limit_s` seconds over (infinity: no
    // limit); written once enough are queued, or when the parent waits for a reply.
    void send(std::string frame, double limit_s);
    // The next message from the worker (command byte first), or nullopt when the worker died,
    // ran past the limit of the command in flight (it is killed) or broke the protocol:
    // failure() says which.
    std::optional<std::string> receive();
    bool alive() const { return failure_.empty(); }
    // Kills the worker (one that said it faulted, or broke the protocol) and keeps why.
    void abandon(const std::string& why) { fail(why); }
    const std::string& failure() const { return failure_; }

    // Writes the queued frames now (send() queues them until 16 KiB have gathered); false:
    // the worker is gone.
    bool flush();

  private:
    // Waits until the socket is ready for `events`, watching the worker; false: it is gone.
    bool wait_for(short events);
    void fail(const std::string& why);  // kills and reaps the worker, keeps why
    std::string reap();                 // waits for the worker; how it ended

    pid_t pid_ = -1;
    int fd_ = -1;
    std::atomic<std::uint64_t>* finished_ = nullptr;  // shared page: commands the worker finished
    std::uint64_t written_ = 0;                       // commands written to the socket
    std::deque<double> limits_;      // per command not known finished, in order, its limit
    std::uint64_t first_limit_ = 0;  // command index of limits_.front()
    std::string out_;                // queued frames
    std::uint64_t queued_ = 0;       // commands in out_
    FrameBuffer in_;                 // bytes received
    std::string failure_;
};

}  // namespace replay::detail
