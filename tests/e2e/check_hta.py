#!/usr/bin/env python3
"""HolisticTraceAnalysis (PyPI) reads a sequential replay_trace.json of the cpu backend as it reads
a recording, and its kernel breakdown agrees with report.json: the recorded step's kernels per name
with the report's recorded times, each replayed iteration's kernel time with the report's replayed
time, and warm-up reads counted as no kernel.

usage: check_hta.py REPLAY ROOT PYTHON   (PYTHON: an interpreter with the `hta` package; exit 77,
a skip, when it has none)"""
import json, os, subprocess, sys, tempfile

replay, root, hta_python = sys.argv[1], sys.argv[2], sys.argv[3]

# What runs under the HTA interpreter: the breakdown over the whole trace (kernel_type_df,
# kernel_metrics_df) and the per-iteration kernel sums of its trace frame, as JSON.
PROBE = r"""
import json, sys, warnings
warnings.filterwarnings("ignore")
from hta.trace_analysis import TraceAnalysis
# Every step, the last one too (HTA leaves it out by default, as a recording's last step is often
# cut short).
analyzer = TraceAnalysis(trace_dir=sys.argv[1], include_last_profiler_step=True)
types, metrics = analyzer.get_gpu_kernel_breakdown(
    visualize=False, duration_ratio=1.0, num_kernels=100000, include_memory_kernels=True)
trace = analyzer.t.get_trace(0)
symbols = analyzer.t.symbol_table.get_sym_table()
kernels = trace[trace["stream"].ne(-1)]
per_iteration = {}
for (iteration, name), dur in kernels.groupby(["iteration", "name"])["dur"].sum().items():
    per_iteration.setdefault(str(int(iteration)), {})[symbols[int(name)]] = float(dur)
counts = {str(int(i)): int(n) for i, n in kernels.groupby("iteration").size().items()}
print(json.dumps({
    "type_sum_us": float(types["sum"].sum()),
    "metric_names": [str(n) for n in metrics["name"]],
    "metric_sums": {str(n): float(v) for n, v in zip(metrics["name"], metrics["sum (us)"])},
    "per_iteration": per_iteration,
    "kernel_counts": counts,
    "names": sorted({symbols[int(n)] for n in trace["name"].unique()}),
}))
"""

failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    failures += not ok


def close(a, b, slack):
    return abs(a - b) <= slack


if subprocess.run([hta_python, "-c", "import hta.trace_analysis"], capture_output=True).returncode:
    print(f"SKIP {hta_python} cannot import hta (pip install HolisticTraceAnalysis)")
    # scripts/test.sh (CI) sets REPLAY_E2E_REQUIRED: there a missing HTA is a failure, not a skip.
    sys.exit(1 if os.environ.get("REPLAY_E2E_REQUIRED") else 77)

with tempfile.TemporaryDirectory() as tmp:
    bloom = os.path.join(root, "traces/h200/bloom560m_fp16_b1_s5.json.gz")
    et = os.path.join(root, "traces/h200/bloom560m_fp16_b1_s5.et.json.gz")
    out = os.path.join(tmp, "seq")
    r = subprocess.run([replay, bloom, "--et", et, "--mode", "sequential", "--backend", "cpu",
                        "--quiet", "--iterations", "2", "--trace-iterations", "all", "--out", out],
                       capture_output=True, text=True)
    check(r.returncode == 0, f"cpu sequential replay, 2 iterations, all in the trace -> exit {r.returncode}")
    if r.returncode:
        print(r.stdout[-2000:], r.stderr[-2000:])
        sys.exit(1)
    report = json.load(open(os.path.join(out, "report.json")))
    trace_dir = os.path.join(tmp, "hta")
    os.mkdir(trace_dir)
    os.rename(os.path.join(out, "replay_trace.json"), os.path.join(trace_dir, "replay_trace.json"))
    raw = json.load(open(os.path.join(trace_dir, "replay_trace.json")))
    # HTA rounds a trace of nanosecond resolution to whole microseconds (start up, end down: up to
    # 2 us lost per slice); without that its figures are the trace's own.
    env = dict(os.environ, HTA_DISABLE_NS_ROUNDING="1")
    p = subprocess.run([hta_python, "-c", PROBE, trace_dir], capture_output=True, text=True, env=env)
    check(p.returncode == 0, f"HTA loads replay_trace.json and breaks its kernels down -> exit {p.returncode}")
    if p.returncode:
        print(p.stdout[-3000:], p.stderr[-3000:])
        sys.exit(1)
    hta = json.loads(p.stdout.strip().splitlines()[-1])

    # The written trace, as a reference for what HTA should have found.
    events = [e for e in raw["traceEvents"] if e.get("ph") == "X"]
    kernels = [e for e in events if "stream" in e.get("args", {})]
    warm = [e for e in events if e.get("cat") == "warm_read"]
    # Sums of n durations written with 3 decimals.
    slack = lambda n: n * 1e-3 + 1e-6

    per_iteration = hta["per_iteration"]
    check(sorted(per_iteration) == ["1", "2", "3"],
          f"HTA sees profiler steps 1 (recorded), 2 and 3 (replayed iterations): {sorted(per_iteration)}")
    check(sum(hta["kernel_counts"].values()) == len(kernels),
          f"HTA counts {sum(hta['kernel_counts'].values())} GPU kernels, the trace holds {len(kernels)} "
          f"(and {len(warm)} warm-up reads, counted as none)")
    check(len(warm) > 0 and "L2 warm-up read" not in {n for it in per_iteration.values() for n in it}
          and "L2 warm-up read" not in hta["metric_names"],
          "warm-up reads are in the trace but in no HTA kernel breakdown")

    # Recorded step: per kernel name, HTA's time is the report's recorded time.
    recorded = {}
    count = {}
    for k in report["kernels"]:
        recorded[k["name"]] = recorded.get(k["name"], 0) + k["recorded_us"]["sum"]
        count[k["name"]] = count.get(k["name"], 0) + k["count"]
    step1 = per_iteration.get("1", {})
    wrong = [(n, step1.get(n, 0), t) for n, t in recorded.items()
             if not close(step1.get(n, 0), t, slack(count[n]))]
    check(not wrong and set(step1) == set(recorded),
          f"recorded step: {len(recorded)} kernel names, HTA's time per name = report.json's recorded "
          f"time (first differences: {wrong[:3]}, names only one side has: "
          f"{sorted(set(step1) ^ set(recorded))[:3]})")
    check(hta["kernel_counts"].get("1") == sum(count.values()),
          f"recorded step: HTA {hta['kernel_counts'].get('1')} kernels = report.json's recorded count "
          f"{sum(count.values())}")

    # Replayed iterations: HTA's kernel time per iteration = the report's figures of it (busy time
    # of the activities, warm-up reads apart), and both add up to the report's replayed samples.
    figures = {str(i["iteration"] + 1): i for i in report["timeline"]["iterations"]}
    for step in ("2", "3"):
        got = sum(per_iteration.get(step, {}).values())
        want = figures[step]["kernel_us"]
        n = hta["kernel_counts"].get(step, 0)
        check(n == figures[step]["activities"] and close(got, want, slack(n)),
              f"replayed iteration {int(step) - 1}: HTA {n} kernels, {got:.1f} us = report timeline "
              f"{figures[step]['activities']} activities, kernel_us {want:.1f}")
    samples = sum(sum(k.get("samples_us") or []) for k in report["kernels"])
    replayed = sum(sum(per_iteration.get(s, {}).values()) for s in ("2", "3"))
    check(close(replayed, samples, slack(sum(hta["kernel_counts"].get(s, 0) for s in ("2", "3")))
                + 0.001 * samples),
          f"replayed iterations: HTA {replayed:.1f} us = the report's replayed samples {samples:.1f} us")

    # HTA's breakdown itself (get_gpu_kernel_breakdown over the whole trace): per kernel name, the
    # sum over every step; per kernel type, the same whole microseconds (it truncates each kernel).
    whole = {}
    for step in per_iteration.values():
        for n, t in step.items():
            whole[n] = whole.get(n, 0) + t
    n_all = sum(hta["kernel_counts"].values())
    wrong = [(n, hta["metric_sums"].get(n), t) for n, t in whole.items()
             if not close(hta["metric_sums"].get(n, -1), t, slack(n_all))]
    check(not wrong, f"HTA's kernel breakdown per name = the steps' sums for {len(whole)} names "
                     f"(first differences: {wrong[:3]})")
    total = sum(whole.values())
    check(total - n_all - 1e-6 <= hta["type_sum_us"] <= total + 1e-6,
          f"HTA's kernel-type breakdown {hta['type_sum_us']:.0f} us = every step's kernels {total:.1f} us "
          f"less under 1 us per kernel")

print("FAILED" if failures else "PASSED")
sys.exit(1 if failures else 0)
