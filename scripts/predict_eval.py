#!/usr/bin/env python3
"""Step prediction (issue 12) re-evaluated on the CPU from recorded captures and replay reports:
the tables of tests/gpu/VALIDATION.md "Step prediction, CPU-only re-evaluation of recorded
captures".

    predict_eval.py REPLAY CAPTURES RESULTS

CAPTURES holds captures_h100/ and captures_h200/ (examples/capture_trace.py: WORKLOAD.json.gz and
WORKLOAD.timing.json, whose median_us is the unprofiled step); RESULTS the GPU sessions' replay
reports (the paths below). Each report is checked against its trace by trace_hash.

1. Profiler overhead, same GPU: the predicted step without the profiler overhead, with --times of
   the sequential replay on the same GPU, against median_us. The trace's own estimate (mean
   leaf-op footprint), and two calibrations from ANOTHER workload of the same host (leave one
   workload out): the per-op overhead that makes that capture's prediction equal its own
   median_us (found by bisection over --op-overhead-us), moved as is ("absolute") or in
   proportion to the two traces' own estimates ("relative"). Median and range over the six
   other workloads.
2. Re-capture noise: the same workload captured twice on the same host (the --et capture's
   unprofiled step was timed before its Execution Trace observer started): median_us apart.
3. Cross GPU: a trace of host A with --times of its replay on GPU B, against host B's capture of
   the same workload (its recorded, profiled step): without --host-reference, with each other
   workload's host-B capture as the reference (median and range), and with the target's own.
"""
import json, os, statistics, subprocess, sys

replay, captures, results = sys.argv[1:4]
WORKLOADS = ["bloom_b1", "bloom_b4s128", "gpt2_train", "llama_decode", "llama_prefill",
             "mixtral_decode", "mixtral_prefill"]
TARGETS = ["bloom_b1", "gpt2_train", "llama_decode"]
HOSTS = {"h200": "H200", "h100": "H100"}
# Sequential replays (3 iterations, dataflow inferred) of each host's captures on its own GPU.
SAME_GPU = {"h200": "s7/r3/{w}_sequential/report.json", "h100": "s7/r5/{w}_sequential/report.json"}
# Replays of host A's capture on the other GPU: (trace host, workload) -> report.
CROSS = {("h200", "bloom_b1"): "s6/r2/x_bloom_b1_sequential/report.json",
         ("h200", "llama_decode"): "s6/r2/x_llama_decode_sequential/report.json",
         ("h200", "gpt2_train"): "s6/r5/sequential_gpt2_train/report.json",
         ("h100", "bloom_b1"): "s6/r7/x_bloom_b1_sequential/report.json",
         ("h100", "llama_decode"): "s6/r7/x_llama_decode_sequential/report.json"}
OTHER = {"h200": "h100", "h100": "h200"}


def trace(host, w):
    return os.path.join(captures, f"captures_{host}", f"{w}.json.gz")


def unprofiled(host, w):
    return json.load(open(os.path.join(captures, f"captures_{host}", f"{w}.timing.json")))["median_us"]


_cache = {}


def predict(path, *args):
    key = (path, args)
    if key not in _cache:
        r = subprocess.run([replay, "predict", "--json", "--quiet", path, *args], capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"replay predict {path} {' '.join(args)}: {r.stderr.strip()}")
        _cache[key] = json.loads(r.stdout)
    return _cache[key]


def step(d, what_if, clean):
    """The traced step (the longest recorded one) of a scenario, us."""
    sc = next(s for s in d["scenarios"] if s["what_if"] == what_if and s["profiler_overhead_removed"] == clean)
    return max(sc["steps"], key=lambda s: s["recorded_us"])["predicted_us"]


def recorded(d):
    return max(d["scenarios"][0]["steps"], key=lambda s: s["recorded_us"])["recorded_us"]


def report(rel, host, w):
    path = os.path.join(results, rel.format(w=w))
    if not os.path.exists(path):
        return None
    d = json.load(open(path))
    want = predict(trace(host, w))["trace_hash"]
    got = d["inputs"].get("trace_hash")
    if got != want:
        print(f"  (skipped {rel.format(w=w)}: made from trace {got}, this capture is {want})")
        return None
    return path


def pct(x, ref):
    return 100.0 * (x / ref - 1.0)


def needed_overhead(path, times, target):
    """The --op-overhead-us whose corrected what-if equals `target` (bisection; 0-40 us)."""
    lo, hi = 0.0, 40.0
    for _ in range(18):
        mid = (lo + hi) / 2
        if step(predict(path, "--times", times, "--op-overhead-us", f"{mid:.4f}"), True, True) > target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def spread(values):
    return f"{statistics.median(values):+.1f}% [{min(values):+.1f}, {max(values):+.1f}]"


print("## 1. Profiler overhead, same GPU (--times of the sequential replay on that GPU)\n")
print("| host | workload | recorded (profiled) | unprofiled (timing.json) | with replayed times | "
      "without overhead: trace's own estimate | calibrated on another workload, absolute | relative |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
same = {}
errors = {"own": [], "absolute": [], "relative": []}
for host in HOSTS:
    times = {w: report(SAME_GPU[host], host, w) for w in WORKLOADS}
    for w in WORKLOADS:
        if times[w] is None:
            continue
        d = predict(trace(host, w), "--times", times[w])
        est = d["model"]["op_overhead_us"]
        need = needed_overhead(trace(host, w), times[w], unprofiled(host, w))
        same[(host, w)] = dict(d=d, est=est, need=need)
    for w in WORKLOADS:
        if (host, w) not in same:
            continue
        s, u = same[(host, w)], unprofiled(host, w)
        absolute, relative = [], []
        for c in WORKLOADS:
            if c == w or (host, c) not in same:
                continue
            cal = same[(host, c)]
            for out, overhead in ((absolute, cal["need"]), (relative, cal["need"] / cal["est"] * s["est"])):
                out.append(pct(step(predict(trace(host, w), "--times", times[w], "--op-overhead-us",
                                            f"{overhead:.4f}"), True, True), u))
        errors["own"].append(abs(pct(step(s["d"], True, True), u)))
        errors["absolute"] += [abs(e) for e in absolute]
        errors["relative"] += [abs(e) for e in relative]
        mark = "**" if w in TARGETS else ""
        print(f"| {HOSTS[host]} | {mark}{w}{mark} | {recorded(s['d']) / 1e3:.2f} ms | {u / 1e3:.2f} ms | "
              f"{pct(step(s['d'], True, False), recorded(s['d'])):+.1f}% | "
              f"{pct(step(s['d'], True, True), u):+.1f}% ({s['est']:.2f} us/op; {s['need']:.2f} needed) | "
              f"{spread(absolute)} | {spread(relative)} |")

print("\n" + "; ".join(f"{k}: median |error| {statistics.median(v):.1f}%, {sum(e <= 10 for e in v)}/{len(v)} within 10%"
                       for k, v in errors.items()))

print("\n## 2. Re-capture noise: the same workload captured twice on one host\n")
print("| host | workload | median_us, capture | median_us, --et capture | apart |")
print("| --- | --- | --- | --- | --- |")
for host in HOSTS:
    for w in ("bloom_b1", "gpt2_train"):
        et = os.path.join(captures, f"captures_{host}", f"{w}.et.timing.json")
        if os.path.exists(et):
            a, b = unprofiled(host, w), json.load(open(et))["median_us"]
            print(f"| {HOSTS[host]} | {w} | {a / 1e3:.2f} ms | {b / 1e3:.2f} ms | {pct(b, a):+.1f}% |")

print("\n## 3. Cross GPU: host A's trace, --times of its replay on GPU B, against host B's capture\n")
print("| trace | replayed on | workload | B's recorded step | no --host-reference | "
      "reference: another workload's B capture (scale; error), median [range], within 10% | "
      "reference: the same workload's B capture |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for a in HOSTS:
    b = OTHER[a]
    for w in TARGETS:
        times = report(CROSS[(a, w)], a, w) if (a, w) in CROSS else None
        if times is None:
            print(f"| {HOSTS[a]} | {HOSTS[b]} | {w} | | no replay of this trace on the {HOSTS[b]} | | |")
            continue
        target = recorded(predict(trace(b, w)))
        plain = step(predict(trace(a, w), "--times", times), True, False)
        scales, errors = [], []
        for r in WORKLOADS:
            if r == w:
                continue
            d = predict(trace(a, w), "--times", times, "--host-reference", trace(b, r))
            scales.append(d["host"]["cpu_scale"])
            errors.append(pct(step(d, True, False), target))
        d = predict(trace(a, w), "--times", times, "--host-reference", trace(b, w))
        own = pct(step(d, True, False), target)
        within = sum(abs(e) <= 10 for e in errors)
        print(f"| {HOSTS[a]} | {HOSTS[b]} | {w} | {target / 1e3:.2f} ms | {pct(plain, target):+.1f}% | "
              f"x{statistics.median(scales):.2f} [{min(scales):.2f}, {max(scales):.2f}]; {spread(errors)}; "
              f"{within}/{len(errors)} | x{d['host']['cpu_scale']:.2f} ({d['host']['names']} names); {own:+.1f}% |")
