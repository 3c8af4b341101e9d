// cli/early_exit.cpp: the process ends with its status and its own peak RSS, its memory freed
// after it by a helper that shares it.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "early_exit.h"

namespace {

using replay::cli::exit_leaving_teardown;

// This binary run with REPLAY_EARLY_EXIT_CHILD set (under valgrind, below) only exits with 7.
const bool kChildOnly = [] {
    if (std::getenv("REPLAY_EARLY_EXIT_CHILD") != nullptr) exit_leaving_teardown(7);
    return false;
}();

// The status and peak RSS (KiB) of a child that touches `bytes` of memory, then exits through
// exit_leaving_teardown(status).
std::pair<int, long> run_child(int status, std::size_t bytes) {
    const pid_t child = ::fork();
    if (child == 0) {
        auto memory = std::make_unique<char[]>(bytes);
        std::memset(memory.get(), 1, bytes);
        asm volatile("" : : "r"(memory.get()) : "memory");  // the pages are touched, not elided
        exit_leaving_teardown(status);
    }
    int wait_status = 0;
    struct rusage usage {};
    EXPECT_EQ(::wait4(child, &wait_status, 0, &usage), child);
    EXPECT_TRUE(WIFEXITED(wait_status));
    return {WEXITSTATUS(wait_status), usage.ru_maxrss};
}

TEST(EarlyExit, TheProcessEndsWithItsStatusAndItsOwnPeakMemory) {
    for (const char* no_fork : {"0", "1"}) {
        ::setenv("REPLAY_NO_FORK", no_fork, 1);
        for (const int status : {0, 1, 2, 7}) {
            const auto [got, peak_kib] = run_child(status, 64u << 20);
            EXPECT_EQ(got, status) << "REPLAY_NO_FORK=" << no_fork;
            // The 64 MiB touched count: the peak is the process's, not the helper's.
            EXPECT_GE(peak_kib, 64 << 10) << "REPLAY_NO_FORK=" << no_fork;
        }
    }
    ::unsetenv("REPLAY_NO_FORK");
}

// Output written before the exit reaches a pipe in full, and the pipe ends with the process.
TEST(EarlyExit, StandardOutputIsFlushedAndEnds) {
    int out[2];
    ASSERT_EQ(::pipe(out), 0);
    const pid_t child = ::fork();
    if (child == 0) {
        ::dup2(out[1], STDOUT_FILENO);
        ::close(out[0]);
        ::close(out[1]);
        std::printf("written before the exit");  // buffered: a pipe is not a terminal
        exit_leaving_teardown(0);
    }
    ::close(out[1]);
    std::string text;
    char buffer[256];
    for (ssize_t n; (n = ::read(out[0], buffer, sizeof buffer)) > 0;) text.append(buffer, n);
    ::close(out[0]);
    int wait_status = 0;
    ASSERT_EQ(::waitpid(child, &wait_status, 0), child);
    EXPECT_EQ(text, "written before the exit");
    EXPECT_TRUE(WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0);
}

// Under valgrind the process exits as usual: valgrind ends a program that makes the helper
// ("Unsupported clone() flags", status 1).
TEST(EarlyExit, UnderValgrindTheProcessExitsAsUsual) {
    if (std::system("command -v valgrind > /dev/null 2>&1") != 0)
        GTEST_SKIP() << "valgrind is not installed (scripts/install_deps.sh installs it)";
    const std::string command = "REPLAY_EARLY_EXIT_CHILD=1 valgrind -q /proc/" +
                                std::to_string(::getpid()) + "/exe > /dev/null 2>&1";
    const int status = std::system(command.c_str());
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 7);
}

}  // namespace
