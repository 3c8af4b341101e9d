// Replay drivers: sequential (every activity in recorded order, streams and waits kept) and
// unique (each unique kernel alone, warmup + timed runs). Both fill a Report. Files: session.cpp
// (what both share), plan.cpp (steps and unique mode's templates), sequential.cpp, unique.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "replay/analysis.h"
#include "replay/backend.h"
#include "replay/recipe_json.h"
#include "replay/report.h"
#include "replay/timeline.h"

namespace replay {

// Sequential mode's pacing. None: every step as soon as the host gets to it (back to back).
// Recorded: the host waits until the recorded launch of each step (for an op's kernels, the op's
// first launch), counted from the recorded step's first launch, before issuing it: the recorded
// gaps on every stream, and a launch-bound step replays launch-bound as it was recorded.
enum class Pace { None, Recorded };
// With Pace::Recorded, where the backend has a device clock (Environment::device_clock), a step
// may also be held on it until its recorded start (Backend::hold_after). Device: every step.
// Auto: the steps launched from CUDA graphs. A step issued directly is then paced by the host
// alone: its hold is one launch more per step, and where the replay's host has no time to spare
// between recorded launches it falls behind (on H200s, BLOOM b1's direct replay with holds had
// median gaps 1.3-1.6x the recorded ones on three boards of four, 0.86-1.31x without). Host: no
// holds.
enum class PaceClock { Auto, Device, Host };
// Unique mode: what runs before each timed run. Recorded: the L2 cache is evicted, the step
// recorded just before that instance runs (untimed), then the instance's inputs that the
// recording still had in L2 (reuse distance within the L2 size, see reuse.h) are read into it:
// activations a producer just wrote are cached, a layer's weights, which the rest of the step
// pushed out, come from memory. Previous: the predecessor alone, no eviction: the instances
// cycled through stay in L2, weights included. None: the kernel back to back with itself.
enum class Context { Recorded, Previous, None };
// Unique mode with Context::Recorded: the SMs' instruction caches before each timed run. Cold:
// emptied with the L2 eviction (the kernel's code comes from memory), as in a recorded step where
// dozens of other kernels ran since its previous instance. Warm: the code stays there from the
// run before, as back to back with itself; small kernels then time fast (on the H200, a Mixtral
// reduce 1.8 us against 4.0 recorded and 4.1 cold; whole steps 2-4% low). Auto: warm for a
// kernel recorded as a node of a CUDA graph after another, cold otherwise. The same decode
// step's kernels, recorded eagerly and in a CUDA graph, replay best cold and warm respectively
// (H200: Llama eager -0.3% cold, -3.9% warm; its graph +1.7% cold, -0.3% warm; a reduce-overhead
// BERT +3.3% cold, +1.0% warm): a graph launch readies its nodes ahead of them.
enum class InstructionCache : std::uint8_t { Auto, Cold, Warm };

struct DriverOptions {
    Pace pace = Pace::None;
    PaceClock pace_clock = PaceClock::Auto;
    int iterations = 1;
    // Sequential mode: after the untimed plan pass, the step is repeated untimed until this much
    // time has passed, so that the timed iterations run at the clocks of a sustained load, as a
    // recording taken in the middle of a run did (a GPU at its power limit clocks down within
    // about a hundred milliseconds). 0: only the plan pass.
    double warmup_ms = 0;
    int warmup = 10;
    int runs = 50;
    bool l2_flush = false;
    Context context = Context::Recorded;
    InstructionCache instruction_cache = InstructionCache::Auto;
    // Sequential mode: before each step, read into L2 the inputs the recording had cached. A
    // replayed producer that allocates its output (a functional aten op) writes another buffer
    // than its consumer reads, so without this a consumer reads its activations from memory
    // (on the H200: GPT-2's elementwise kernels 20-30% slow, the whole step +5.2%; with it
    // +0.1%). All: every step. Needed: only steps with an input no earlier replayed step read
    // or wrote in its recorded storage's buffer (dataflow; plan.h needs_warm_up), leaving the
    // others the L2 that the replay itself left. Not the default: on the H200 (2026-11-25) it
    // warmed 58-78% of the steps and every capture's kernel time came out 0.5-1.5 points slower
    // than with All (the replay's own L2 state is colder than the recording's), while the span
    // of the GPU-bound steps did not shrink. None: no step.
    enum class WarmInputs : std::uint8_t { None, Needed, All };
    WarmInputs warm_inputs = WarmInputs::All;
    bool sequential_check = true;  // unique mode: also time one sequential pass to compare
    // Each issue inside an NVTX range named nvtx_range_name() (ncu_command.h; backends with
    // NVTX: cuda).
    bool nvtx = false;
    // Unique mode: time only the unique kernels with these ids (the rest are skipped, saying
    // so); empty: all. `replay ncu-cmd` profiles one kernel this way.
    std::vector<std::string> only;
    // --energy: joules per launch (unique; its sequential pass: per step) and per step
    // (sequential), in windows of the work back to back between changes of the board's energy
    // counter (energy.h); the report says why where it cannot (the cpu backend: n/a, never 0).
    bool energy = false;
    double energy_window_ms = 0;  // 0: the fewest counter periods that time a window to < 1%
    int energy_windows = 5;       // windows per kernel or step: its samples (regress needs >= 5)
    double energy_min_us = 0;     // unique: kernels recorded shorter (median) are not measured
    // Sequential mode: capture the steps (warm-up reads included) in CUDA graphs once and launch
    // them per iteration: the whole step as one graph with --pace none, one graph per step with
    // --pace recorded. Steps that cannot be captured are issued directly (the notes say which).
    // Unset: on when the recording itself launched most of its kernel time through
    // cudaGraphLaunch (kernels inside a graph run back to back, without the host's launch gaps,
    // and issued one by one they would not), off otherwise. Unique mode: unless false, a kernel
    // recorded inside a CUDA graph right after another of its nodes is timed inside a graph
    // after its recorded predecessor (Template::in_graph).
    std::optional<bool> graph;
    // Sequential mode: every replayed iteration in the timeline (replay_trace.json), not only the
    // last.
    bool trace_all_iterations = false;
    std::function<void(const std::string&)> progress;  // one line of progress, or empty
    // Recorded pacing's clock, nanoseconds on a monotonic clock, and a wait until a time on it;
    // empty: the steady clock and a spin (tests drive the pacing with a clock of their own).
    std::function<std::int64_t()> clock_ns;
    std::function<void(std::int64_t)> wait_until_ns;
};

// "none", "needed", "all": --warm-inputs and report.json's option.
const char* to_string(DriverOptions::WarmInputs warm);
// "auto", "cold", "warm": --instruction-cache and report.json's option.
const char* to_string(InstructionCache cache);

// One group of recorded activities issued by one recipe (an op instance: a GEMM and its split-K
// reduction, or the kernels of one aten op).
struct Step {
    std::uint32_t issue_node = 0;      // graph node whose recipe is issued
    std::vector<std::uint32_t> nodes;  // graph nodes this issue re-creates, in launch order
    int stream = 0;                    // stream slot
};
// Which issued aten op a kernel's step is: issuing an op re-creates everything launched inside
// it (child ops' kernels, memsets, copies), so those join its step. Outermost: the outermost
// issued op enclosing the kernel, each op issued once (a copy_ inside convolution_backward is
// not issued again on its own); Nearest: the innermost one (what an outer op that cannot be
// replayed, a libtorch without it, leaves to issue on their own).
enum class StepOwner : std::uint8_t { Outermost, Nearest };
// Collectives are steps only when the backend runs them (several ranks, Backend::runs_collectives).
std::vector<Step> plan_steps(const KernelGraph& graph, const NodeRecipes& recipes,
                             bool collectives = false, StepOwner owner = StepOwner::Outermost);

// Sequential mode runs in phases (backend.h's Phase): the launch plan (every recipe prepared,
// every wait and recorded offset decided), one untimed pass of the whole plan (first uses: lazy
// module loads, library heuristics, libtorch's first calls), with `graph` the capture and one
// untimed launch of the graphs; then the plan is sealed and the timed iterations only launch.
// The report's timeline has each iteration's span and gaps against the recorded step's.
// `timeline`, when given, receives the recorded activities and the last iteration's replayed ones
// (every iteration's with trace_all_iterations) for replay_trace.json.
Report replay_sequential(const Analysis& analysis, Backend& backend, const DriverOptions& options,
                         Timeline* timeline);
Report replay_unique(const Analysis& analysis, Backend& backend, const DriverOptions& options);
Report replay_unique(const SignatureFile& kernels, Backend& backend, const DriverOptions& options);

}  // namespace replay
