// What the benchmarks measure with: a clock, this process's CPU time and memory, heap block sizes,
// and a forked child per measured run (so that its peak RSS belongs to that run alone).
#pragma once

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <vector>

namespace replay::bench {

inline double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

inline std::uint64_t current_rss() {
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    if (!f) return 0;
    unsigned long long pages = 0, resident = 0;
    const int n = std::fscanf(f, "%llu %llu", &pages, &resident);
    std::fclose(f);
    return n == 2 ? resident * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

inline std::uint64_t peak_rss() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;
}

// User + system seconds of this process, all threads.
inline double cpu_seconds() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

inline double load_average() {
    double load = -1;
    if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
        if (std::fscanf(f, "%lf", &load) != 1) load = -1;
        std::fclose(f);
    }
    return load;
}

// A heap block of n bytes as glibc malloc holds it (8-byte header, 16-byte granules, 32 minimum).
inline std::uint64_t heap(std::uint64_t n) {
    if (n == 0) return 0;
    return std::max<std::uint64_t>(32, (n + 8 + 15) / 16 * 16);
}
template <typename T>
std::uint64_t heap_of(const std::vector<T>& v) {
    return heap(v.capacity() * sizeof(T));
}

// Runs `work` (returning a trivially copyable Result) in a forked child and hands its result
// back through a pipe. False when the child died before sending it; `status` is its wait status.
template <typename Result, typename Work>
bool run_in_child(Work&& work, Result& result, int& status) {
    static_assert(std::is_trivially_copyable_v<Result>);
    int fds[2];
    if (pipe(fds) != 0) {
        std::perror("pipe");
        std::exit(2);
    }
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        const Result r = work();
        std::fflush(stdout);
        const ssize_t n = write(fds[1], &r, sizeof r);
        _exit(n == static_cast<ssize_t>(sizeof r) ? 0 : 1);
    }
    close(fds[1]);
    std::size_t got = 0;
    while (got < sizeof result) {
        const ssize_t n = read(fds[0], reinterpret_cast<char*>(&result) + got, sizeof result - got);
        if (n <= 0) break;
        got += static_cast<std::size_t>(n);
    }
    close(fds[0]);
    status = 0;
    waitpid(pid, &status, 0);
    return got == sizeof result;
}

}  // namespace replay::bench
