#!/usr/bin/env python3
"""Where a replayed timeline waited: the largest gaps of each replayed iteration, per stream.

Usage: scripts/timeline_gaps.py REPLAY_TRACE_JSON [--top N]

Reads the replay_trace.json that `replay --mode sequential` writes (every iteration asked with
--trace-iterations all) and prints, per replayed iteration, the N largest gaps on any stream: the
idle time from the latest end so far to the next activity's start, warm-up reads counted as busy
(as the report's max_gap_us counts them), with the activities on both sides and their step
numbers (`correlation`), so that an iteration's outlier can be told from the others' by place.
"""
import argparse
import collections
import json
import sys

GPU_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset", "warm_read"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--top", type=int, default=5)
    args = ap.parse_args()
    with open(args.trace) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    # (iteration, stream) -> [(start, end, name, correlation)]; a warm-up read has no stream of
    # its own in args: its tid is the stream.
    lanes = collections.defaultdict(list)
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in GPU_CATEGORIES:
            continue
        a = e.get("args", {})
        if a.get("side") != "replayed" or "iteration" not in a:
            continue
        stream = a.get("stream", e.get("tid"))
        start = float(e["ts"])
        lanes[(a["iteration"], stream)].append(
            (start, start + float(e.get("dur", 0)), e.get("name", "?"), a.get("correlation")))
    if not lanes:
        sys.exit(f"{args.trace}: no replayed GPU activity with an iteration (was it written with "
                 "--trace-iterations all by a sequential replay?)")
    gaps = collections.defaultdict(list)  # iteration -> [(gap, stream, before, after)]
    for (iteration, stream), acts in lanes.items():
        acts.sort()
        reached, before = None, None
        for act in acts:
            if reached is not None and act[0] > reached:
                gaps[iteration].append((act[0] - reached, stream, before, act))
            if reached is None or act[1] > reached:
                reached, before = act[1], act
    for iteration in sorted(gaps):
        print(f"iteration {iteration}:")
        for gap, stream, before, after in sorted(gaps[iteration], reverse=True)[:args.top]:
            print(f"  {gap:10.1f} us on stream {stream}: after {before[2][:60]!r} (step "
                  f"{before[3]}) before {after[2][:60]!r} (step {after[3]})")


if __name__ == "__main__":
    main()
