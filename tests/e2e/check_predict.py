#!/usr/bin/env python3
"""`replay predict` on every bundled Kineto trace (each rank of the dlrm archive too): with the
recorded durations, every predicted step is within 2 % of the recorded one; prediction.json
validates against its schema and equals what --json prints; its critical paths add up to the
predicted steps; predicted_trace.json is a Chrome trace (one event per runtime call and per GPU
activity, times from 0). Then the command line: --help, what-if options, bad options.

    check_predict.py REPLAY ROOT
"""
import json, os, subprocess, sys, tarfile, tempfile

replay, root = sys.argv[1], sys.argv[2]
traces = os.path.join(root, "traces")
validate = [sys.executable, os.path.join(root, "tests/tools/validate_schema.py")]
schema = os.path.join(root, "schemas/prediction.schema.json")
# The recorded step, simulated with its own durations: how far the prediction may be off.
SELF_CONSISTENCY_PCT = 2.0

failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    failures += not ok
    return ok


def run(*args):
    return subprocess.run([replay, *args], capture_output=True, text=True)


def inputs(tmp):
    """(name, path) of every bundled Kineto trace, archives of ranks unpacked into tmp."""
    names = sorted(json.load(open(os.path.join(traces, "expected_counts.json"))))
    for archive in {n.split(":")[0] for n in names if ".tar.gz:" in n}:
        with tarfile.open(os.path.join(traces, archive)) as tar:
            tar.extractall(tmp)
    return [(n, os.path.join(tmp, n.split(".tar.gz:")[1]) if ".tar.gz:" in n else os.path.join(traces, n))
            for n in names]


def check_timeline(path, prediction, name):
    trace = json.load(open(path))
    events = trace["traceEvents"]
    spans = [e for e in events if e.get("ph") == "X"]
    processes = {e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "process_name"}
    gpu = [e for e in spans if e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset")]
    calls = [e for e in spans if e["cat"] in ("cuda_runtime", "cuda_driver")]
    sim = prediction["simulation"]
    # Perfetto drops slices that overlap on a track without nesting in each other.
    tracks = {}
    for e in spans:
        tracks.setdefault((e["pid"], e["tid"]), []).append((e["ts"], -e["dur"]))
    misnested = 0
    for events in tracks.values():
        open_ends = []
        for ts, neg_dur in sorted(events):
            end = ts - neg_dur
            while open_ends and open_ends[-1] <= ts + 1e-3:
                open_ends.pop()
            if open_ends and end > open_ends[-1] + 1e-3:
                misnested += 1
            open_ends.append(end)
    ok = (misnested == 0 and all(isinstance(e["ts"], (int, float)) and e["ts"] >= 0 and e["dur"] >= 0 for e in spans)
          and len(calls) == sim["runtime_calls"]
          and any(p.startswith("CPU (predicted") for p in processes)
          and any(p.startswith("GPU (predicted") for p in processes)
          and min((e["ts"] for e in spans), default=0) == 0)
    return check(ok, f"{name}: predicted_trace.json ({len(calls)} calls, {len(gpu)} activities, "
                     f"{misnested} slices overlapping without nesting)")


with tempfile.TemporaryDirectory() as tmp:
    for name, path in inputs(tmp):
        out = os.path.join(tmp, "out")
        r = run("predict", "--json", "--quiet", path, "--out", out)
        if not check(r.returncode == 0, f"{name}: exit {r.returncode} {r.stderr.strip()[-300:]}"):
            continue
        printed = json.loads(r.stdout)
        written = json.load(open(os.path.join(out, "prediction.json")))
        check(printed == written, f"{name}: --json prints prediction.json")
        v = subprocess.run([*validate, os.path.join(out, "prediction.json"), schema], capture_output=True, text=True)
        check(v.returncode == 0, f"{name}: schema {v.stdout.strip()}{v.stderr.strip()}")
        recorded = next(s for s in written["scenarios"] if not s["what_if"] and not s["profiler_overhead_removed"])
        worst = max(abs(s["change_pct"]) for s in recorded["steps"])
        check(recorded["steps"] and worst <= SELF_CONSISTENCY_PCT,
              f"{name}: {len(recorded['steps'])} steps predicted within {worst:.2f}% of recorded "
              f"(bound {SELF_CONSISTENCY_PCT}%)")
        for s in written["scenarios"]:
            for step in s["steps"]:
                cp = step["critical_path"]
                total = cp["cpu_bound_us"] + cp["gpu_bound_us"] + cp["sync_us"] + cp["unexplained_us"]
                if abs(total - step["predicted_us"]) > 0.01 + 1e-6 * step["predicted_us"]:
                    check(False, f"{name}: {s['name']} {step['name']}: critical path {total} != {step['predicted_us']}")
        clean = next(s for s in written["scenarios"] if s["profiler_overhead_removed"] and not s["what_if"])
        check(all(c["predicted_us"] <= r["predicted_us"] + 1e-3 for c, r in zip(clean["steps"], recorded["steps"])),
              f"{name}: removing the profiler overhead ({written['model']['op_overhead_us']} us/op) never lengthens a step")
        check_timeline(os.path.join(out, "predicted_trace.json"), written, name)

    bloom = os.path.join(traces, "h200/bloom560m_fp16_b1_s5.json.gz")
    r = run("predict", "--quiet", bloom, "--launch-us", "0", "--scale", "gemm=0.5", "--scale", "name~softmax=2")
    check(r.returncode == 0 and "what-if: --scale gemm=0.5, --scale name~softmax=2, --launch-us 0.00" in r.stdout
          and "critical path" in r.stdout, "text output names the what-if and its critical path")
    # A GPU-bound run (the GPU ~90 ms behind the CPU, whose launches wait for room in the launch
    # queue): all GPU work twice as fast halves its steps after the first.
    rank0 = os.path.join(traces, "public/HolisticTraceAnalysis/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz")
    r = run("predict", "--json", "--quiet", rank0, "--scale", "name~.=0.5")
    d = json.loads(r.stdout) if r.returncode == 0 else {"scenarios": []}
    base = [s["predicted_us"] for sc in d["scenarios"] if not sc["what_if"] and not sc["profiler_overhead_removed"] for s in sc["steps"]]
    fast = [s["predicted_us"] for sc in d["scenarios"] if sc["what_if"] and not sc["profiler_overhead_removed"] for s in sc["steps"]]
    ratios = [f / b for f, b in zip(fast[1:], base[1:])]
    check(len(ratios) >= 3 and all(0.45 <= x <= 0.55 for x in ratios),
          f"GPU-bound steps follow the GPU: twice as fast -> {', '.join(f'{x:.2f}' for x in ratios)} of the time")
    r = run("predict", "--json", "--quiet", bloom, "--op-overhead-us", "20")
    d = json.loads(r.stdout) if r.returncode == 0 else {}
    check(d.get("model", {}).get("op_overhead_source") == "calibrated" and d["model"]["op_overhead_us"] == 20,
          "--op-overhead-us is a calibration")
    # Another host's CPU: the H100 capture of another workload as the reference.
    out = os.path.join(tmp, "host")
    r = run("predict", "--json", "--quiet", os.path.join(traces, "h200/bloom_b1.json.gz"),
            "--host-reference", os.path.join(traces, "h100/llama_decode.json.gz"), "--out", out)
    d = json.loads(r.stdout) if r.returncode == 0 else {}
    v = subprocess.run([*validate, os.path.join(out, "prediction.json"), schema], capture_output=True, text=True) \
        if r.returncode == 0 else None
    host = d.get("host") or {}
    check(v is not None and v.returncode == 0 and host.get("cpu_scale", 0) > 1 and host["names"] == len(host["ratios"]),
          f"--host-reference: cpu_scale {host.get('cpu_scale')} from {host.get('names')} names, schema valid")
    r = run("predict", "--quiet", bloom, "--host-reference", os.path.join(traces, "h200/mlp_compiled.json.gz"))
    check(r.returncode == 2 and "share" in r.stderr and "mlp_compiled" in r.stderr,
          f"--host-reference with too few names in common: exit {r.returncode}, {r.stderr.strip()[:160]}")
    h = run("predict", "--help")
    check(h.returncode == 0 and all(w in h.stdout for w in ("cpu-bound", "gpu-bound", "sync", "--times", "--scale",
                                                            "--launch-us", "--op-overhead-us", "--host-reference",
                                                            "--et", "--out")),
          "predict --help defines the critical-path categories and lists every option")
    check("replay predict TRACE" in run("--help").stdout, "replay --help lists predict")
    for args, why in ((["--scale", "tier9=1"], "unknown tier"), (["--scale", "gemm"], "no =FACTOR"),
                      (["--times", os.path.join(tmp, "missing.json")], "missing.json"),
                      (["--launch-us", "-1"], "launch-us")):
        r = run("predict", "--quiet", bloom, *args)
        check(r.returncode == 2 and why in r.stderr and len(r.stderr.strip().splitlines()) <= 2,
              f"predict {' '.join(args)}: exit {r.returncode}, {r.stderr.strip()[:160]}")

sys.exit(1 if failures else 0)
