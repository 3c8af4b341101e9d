// Exiting without making the user wait for the kernel to free this process's memory.
//
// A process is over for its parent (a shell, a script's subprocess call) only after the kernel has
// unmapped its memory: for `inspect` of a 1 GB trace, 20-30 ms of a ~0.3 s analysis after the parse
// (300 MB of trace model). Here a helper task that shares the memory (clone with CLONE_VM, in a
// thread group of its own) holds it while this process exits; the helper, killed by the parent's
// death, frees it afterwards. The exit the parent sees is the process's own, with its own peak RSS
// (GNU time's %M stays right). Only for commands that run no backend: a GPU context torn down
// after the prompt came back would overlap the user's next replay. REPLAY_NO_FORK=1 exits as usual,
// and so does a process under valgrind (which cannot run that clone).
#pragma once

namespace replay::cli {

// Flushes the standard streams and ends the process with `status`, its memory freed after it.
[[noreturn]] void exit_leaving_teardown(int status);

}  // namespace replay::cli
