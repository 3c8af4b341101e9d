#!/usr/bin/env python3
"""Where a replayed timeline waited: the largest gaps of each replayed iteration, per stream.

Usage: scripts/timeline_gaps.py REPLAY_TRACE_JSON [--top N] [--json]

Reads the replay_trace.json that `replay --mode sequential` writes (every iteration asked with
--trace-iterations all) and prints, per replayed iteration, the N largest gaps on any stream, with
the activities on both sides and their correlation ids, so that an iteration's outlier can be
told from the others' by place. A gap is what report.json's max_gap_us counts: on one stream,
from the latest end so far to the next activity's start, less the warm-up reads inside it (they
stand for cache state that took no time in the recording). --json prints {iteration: [gaps]}.
"""
import argparse
import collections
import json
import sys

WORK = {"kernel", "gpu_memcpy", "gpu_memset"}
WARM = "warm_read"


def lanes_of(events):
    """(iteration, stream) -> ([work (start, end, name, correlation)], [warm (start, end)])."""
    lanes = collections.defaultdict(lambda: ([], []))
    for e in events:
        cat = e.get("cat")
        if e.get("ph") != "X" or (cat not in WORK and cat != WARM):
            continue
        a = e.get("args", {})
        if a.get("side") != "replayed" or "iteration" not in a:
            continue
        start = float(e["ts"])
        end = start + float(e.get("dur", 0))
        # A warm-up read names no stream in its args: its tid is the stream.
        work, warm = lanes[(a["iteration"], a.get("stream", e.get("tid")))]
        if cat == WARM:
            warm.append((start, end))
        else:
            work.append((start, end, e.get("name", "?"), a.get("correlation")))
    return lanes


def warm_inside(warm, first, lo, hi):
    """The part of [lo, hi) the sorted warm-up reads cover, from warm[first] on; and the first
    read that may still reach past lo (gaps come in increasing order: each read is passed once,
    as timeline_figures.cpp's warm_inside does)."""
    while first < len(warm) and warm[first][1] <= lo:
        first += 1
    covered, k = 0.0, first
    while k < len(warm) and warm[k][0] < hi:
        covered += max(0.0, min(warm[k][1], hi) - max(warm[k][0], lo))
        k += 1
    return covered, first


def gaps_by_iteration(events):
    gaps = collections.defaultdict(list)  # iteration -> [(gap, stream, before, after)]
    for (iteration, stream), (work, warm) in lanes_of(events).items():
        work.sort()
        warm.sort()
        reached, before, first = None, None, 0
        for act in work:
            if reached is not None and act[0] > reached:
                covered, first = warm_inside(warm, first, reached, act[0])
                idle = act[0] - reached - covered
                gaps[iteration].append((max(0.0, idle), stream, before, act))
            if reached is None or act[1] > reached:
                reached, before = act[1], act
    for found in gaps.values():
        found.sort(key=lambda g: g[0], reverse=True)
    return gaps


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("--json", action="store_true", help="print {iteration: [gap...]} as JSON")
    args = ap.parse_args()
    with open(args.trace) as f:
        doc = json.load(f)
    gaps = gaps_by_iteration(doc["traceEvents"] if isinstance(doc, dict) else doc)
    if not gaps:
        sys.exit(f"{args.trace}: no gap between replayed GPU activities of one iteration (was it "
                 "written with --trace-iterations all by a sequential replay?)")
    if args.json:
        print(json.dumps({str(it): [{"gap_us": g, "stream": s, "before": b[2], "after": a[2],
                                     "before_correlation": b[3], "after_correlation": a[3]}
                                    for g, s, b, a in found[:args.top]]
                          for it, found in sorted(gaps.items())}, indent=1))
        return
    for iteration in sorted(gaps):
        print(f"iteration {iteration}:")
        for gap, stream, before, after in gaps[iteration][:args.top]:
            print(f"  {gap:10.1f} us on stream {stream}: after {before[2][:60]!r} (correlation "
                  f"{before[3]}) before {after[2][:60]!r} (correlation {after[3]})")


if __name__ == "__main__":
    main()
