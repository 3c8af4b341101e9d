// A backend whose device work runs in a worker process, so that a device fault costs one
// kernel, not the run. A device-side assert or an illegal address poisons the CUDA context for
// good: nothing in that process can use the GPU again, and everything after it, the report
// included, would be lost. So the parent (drivers, report) never touches the device: a child
// forked before any device initialisation makes the real backend and runs the commands. When
// the worker faults (a sticky device error, a crash, a run past its time limit), the parent
// restarts it, re-prepares the work, re-runs the failed batch one issue at a time to find the
// issue that faults, fails that one with the reason (Backend::take_faults), and re-runs the
// batch without it. Files: worker_backend.cpp (the parent's side), worker_process.cpp (the
// child and the watchdog), worker_serve.cpp (the child's loop), worker_wire.cpp (the wire).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "replay/backend.h"

namespace replay {

// Makes the real backend, in the worker; nullptr with `why` when it cannot run here.
using BackendMaker = std::function<std::unique_ptr<Backend>(std::string& why)>;

struct WorkerOptions {
    // A run may take max(kernel_timeout_s, recorded_factor x its recorded time) before the
    // worker is killed and the run failed; a wait for queued work, the same over the recorded
    // time of everything queued. 0 or less: no watchdog.
    double kernel_timeout_s = 10;
    double recorded_factor = 1000;
    // A backend that times on the host clock (cpu) runs each op on the worker's own threads: a
    // slow run there is the CPU, not a hung kernel (1000 x a GPU kernel's recorded time is
    // nothing to a CPU op over 254 MB tensors), and each restart prepares every step again
    // (minutes on a big trace). Its runs are limited only when this is set (--kernel-timeout
    // given): HolisticTraceAnalysis' control.json.gz restarted the worker every 4-5 minutes and
    // never finished.
    bool limit_host_clock_runs = false;
    // Worker restarts after which the device is given up: the rest of the work fails with the
    // reason. A fault costs two: one to find the issue at fault, one to go on without it.
    int max_restarts = 200;
};

// How long a run recorded at `recorded_ns` may take (infinity without a watchdog).
double run_time_limit(const WorkerOptions& options, std::int64_t recorded_ns);

// Starts the first worker and returns the backend it made, seen from the parent; nullptr with
// `why` when the maker says the backend cannot run here or no worker could be started.
std::unique_ptr<Backend> make_worker_backend(BackendMaker maker, const WorkerOptions& options,
                                             std::string& why);

}  // namespace replay
