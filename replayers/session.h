// What every driver shares (internal to replayers/): the report skeleton, recipes prepared once,
// issues that may fail, and the attribution of timed activities to the kernels they re-create.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "replay/drivers.h"

namespace replay::detail {

class Session {
  public:
    Session(Backend& backend, const std::vector<UniqueKernel>& kernels,
            const DriverOptions& options);

    // Prepares once per recipe text; a recipe that cannot run marks its kernels skipped.
    Prepared& prepare(const Recipe& recipe);

    // Issues prepared work; a failure (an op that libtorch refuses at run time) marks the recipe
    // failed for good and its kernels with the reason, and the replay goes on.
    bool try_issue(Prepared& prepared, const std::vector<std::size_t>& kernels, int stream,
                   std::uint64_t tag);

    // Synchronizes the backend, then fails the work it found failed since (a device fault in a
    // worker process, a run past its time limit) with the kernels issued with it. True when the
    // backend moved to a new process meanwhile (FaultReport::restarts).
    bool synchronize();

    // Gives the kernel the prepared work's outcome when that is not Ready.
    void mark(std::size_t kernel, const Prepared& prepared);
    void add_sample(std::size_t kernel, const TimedActivity& activity);
    // A share of kernel records that time the kernel together with its issue's other kernels
    // (RecordMatch::shared); `reason` says so in the kernel's report.
    void add_shared_sample(std::size_t kernel, const TimedActivity& part, const std::string& reason);
    // An issue of the kernel came back without a timing record of its own (record_match.h).
    void add_miss(std::size_t kernel, const std::string& reason);
    // The kernel's recorded launch grid (zeros for copies and memsets).
    const std::array<std::int32_t, 3>& recorded_grid(std::size_t kernel) const {
        return recorded_grids_.at(kernel);
    }
    // Whether the backend times each kernel apart (CUPTI): an issue without records is a miss.
    bool per_kernel_timing() const { return report_.env("timing") == "cupti"; }

    // The iteration that NVTX ranges name from now on (DriverOptions::nvtx).
    void set_iteration(int iteration) { iteration_ = iteration; }

    // Why the replay stopped early (a collective failed: every later one would too); "" if not.
    const std::string& stopped() const { return stopped_; }
    std::size_t kernel_index(const std::string& id) const { return index_.at(id); }
    Report& report() { return report_; }
    Backend& backend() { return backend_; }
    const DriverOptions& options() const { return options_; }

    // Kernels still pending become skipped; notes and the report's figures are filled in.
    Report finish(const char* mode, double seconds);

  private:
    Backend& backend_;
    DriverOptions options_;
    Report report_;
    std::unordered_map<std::string, std::size_t> index_;
    std::vector<std::array<std::int32_t, 3>> recorded_grids_;  // by kernel index
    std::unordered_map<std::string, Prepared> prepared_;
    std::unordered_map<std::uint32_t, Prepared*> by_handle_;  // Ready work, by backend handle
    // Per handle, the kernels it was issued for (a late failure marks them).
    std::unordered_map<std::uint32_t, std::vector<std::size_t>> issued_for_;
    std::set<std::string> notes_;
    int iteration_ = 1;
    struct Misses {
        std::size_t count = 0;
        std::string first_reason;
    };
    std::unordered_map<std::size_t, Misses> misses_;  // by kernel index
    std::string stopped_;
};

// Groups timed activities by tag, each group in start order.
std::unordered_map<std::uint64_t, std::vector<TimedActivity>> by_tag(
    std::vector<TimedActivity> records);

// The session's kernel index of every graph node.
std::vector<std::size_t> kernel_of_nodes(const Analysis& analysis, const Session& session);

// The trace, its hash and the side files that change kernel ids; the analysis notes; coverage.
void add_inputs(Report& report, const Analysis& analysis);
// The driver options that shape the figures, as report.json's "options".
void add_options(Report& report, const DriverOptions& options, bool unique);

// Matches one issue's timed activities to the recorded kernels it re-creates (`positions`, with
// their recorded durations): per-kernel records by match_records (a record that is not the kernel's
// own is a miss, never a sample; records no kernel can be told apart in are shared by the recorded
// durations), a whole-issue record split by the recorded shares. `records` may
// be empty: nothing came back for the issue. Returns the per-kernel records no kernel took.
struct LeftOver {
    std::size_t records = 0;
    std::int64_t ns = 0;
    LeftOver& operator+=(const LeftOver& o) {
        records += o.records, ns += o.ns;
        return *this;
    }
};
LeftOver attribute(Session& session, const std::vector<std::size_t>& positions,
                   const std::vector<TimedActivity>& records,
                   const std::vector<double>& recorded_us);
// The sequential report's note on records its steps brought back that no recorded kernel took:
// work a replayed op ran that its recording did not (an op issued twice, as the plan did with
// ops inside ops until 2026-11-29, or a library launching more); "" when there were none.
std::string left_over_note(const LeftOver& left);

// The report's note on kernels timed by records of another launch grid than the recorded one
// (KernelResult::replayed_grids); "" when there are none.
std::string other_grids_note(const std::vector<KernelResult>& kernels);

inline double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace replay::detail
