// Returning to the user as soon as a command's outputs are written, not once its memory is freed.
//
// A process is over for its parent (a shell, a script's subprocess call) only after the kernel has
// unmapped its memory: for `inspect` of a 1 GB trace, 20-30 ms of a ~0.3 s analysis after the parse
// (300 MB of trace model). The command therefore runs in a child process, which, its outputs
// written and flushed, closes its standard streams and tells the parent its exit status; the
// parent exits with it at once and the child frees its memory alone. The linker mold does the same.
// Only for commands that run no backend: a GPU context torn down after the prompt came back would
// overlap the user's next replay. REPLAY_NO_FORK=1 runs the command in the process itself (a
// debugger, a leak checker).
#pragma once

#include <functional>

namespace replay::cli {

// `work`'s exit status, from a child process where one can be made (else from this one). A child
// that dies of a signal before it is done makes this process die of the same signal; this process
// killed while the child works takes the child with it (SIGTERM: its partial outputs are removed).
int run_with_early_exit(const std::function<int()>& work);

}  // namespace replay::cli
