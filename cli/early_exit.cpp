#include "early_exit.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string_view>

namespace replay::cli {
namespace {

bool fork_disabled() {
    const char* off = std::getenv("REPLAY_NO_FORK");
    return off != nullptr && *off != '\0' && std::string_view(off) != "0";
}

// The child's side: the work, then its outputs flushed, its standard streams closed (a pipe
// reading them ends now, not after the teardown) and its status sent.
[[noreturn]] void run_child(const std::function<int()>& work, int done, pid_t parent) {
    // Killed with the parent while it works (a timeout killing the pid it started). The parent may
    // have gone between fork() and here.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(2);
    const int status = work();
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    if (const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC); null >= 0) {
        ::dup2(null, STDOUT_FILENO);
        ::dup2(null, STDERR_FILENO);
        ::close(null);
    }
    ::prctl(PR_SET_PDEATHSIG, 0);  // done: the parent's exit must not signal the teardown
    const auto byte = static_cast<unsigned char>(status);
    ssize_t sent;
    do {
        sent = ::write(done, &byte, 1);
    } while (sent < 0 && errno == EINTR);
    // Static destructors would free what the teardown frees anyway.
    ::_exit(status);
}

}  // namespace

int run_with_early_exit(const std::function<int()>& work) {
    if (fork_disabled()) return work();
    int done[2];
    if (::pipe2(done, O_CLOEXEC) != 0) return work();
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);  // nothing buffered is written twice
    const pid_t parent = ::getpid();
    const pid_t child = ::fork();
    if (child < 0) {
        ::close(done[0]);
        ::close(done[1]);
        return work();
    }
    if (child == 0) {
        ::close(done[0]);
        run_child(work, done[1], parent);
    }
    ::close(done[1]);
    unsigned char status = 0;
    ssize_t got;
    do {
        got = ::read(done[0], &status, 1);
    } while (got < 0 && errno == EINTR);
    ::close(done[0]);
    if (got == 1) return status;  // the child frees its memory on its own
    // The pipe closed without a status: the child died before it was done.
    int wait_status = 0;
    while (::waitpid(child, &wait_status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
    if (WIFSIGNALED(wait_status)) {
        const int signal = WTERMSIG(wait_status);
        std::signal(signal, SIG_DFL);
        std::raise(signal);
        return 128 + signal;
    }
    return 2;
}

}  // namespace replay::cli
