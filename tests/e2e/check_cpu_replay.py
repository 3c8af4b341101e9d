#!/usr/bin/env python3
"""The whole CPU path as a user runs it: classify, replay in both modes, replay from a signature
file, regress an archived .zst against its own baseline and compare reports; every output is
validated against its JSON Schema. Then the same under faults: broken baselines, a replay that
replays nothing, SIGINT in the middle of a write, a full disk, two runs into one folder."""
import csv
import json, os, shutil, signal, subprocess, sys, tempfile, time

replay, root = sys.argv[1], sys.argv[2]
validate = [sys.executable, os.path.join(root, "tests/tools/validate_schema.py")]
schemas = os.path.join(root, "schemas")
failures = 0

def run(*args, expect=(0,)):
    global failures
    r = subprocess.run([replay, *args], capture_output=True, text=True)
    ok = r.returncode in expect
    print(("ok   " if ok else "FAIL ") + "replay " + " ".join(args) + f" -> exit {r.returncode}")
    if not ok:
        print(r.stdout[-2000:], r.stderr[-2000:])
        failures += 1
    return r

def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    failures += not ok

def check_schema(path, schema):
    global failures
    r = subprocess.run([*validate, path, os.path.join(schemas, schema)], capture_output=True, text=True)
    ok = r.returncode == 0
    print(("ok   " if ok else "FAIL ") + f"{os.path.basename(path)} valid against {schema} {r.stdout.strip()[-200:]} {r.stderr.strip()[-500:]}")
    failures += not ok

with tempfile.TemporaryDirectory() as tmp:
    bloom = os.path.join(root, "traces/h200/bloom560m_fp16_b1_s5.json.gz")
    archived = os.path.join(root, "traces/h200/bloom560m_fp16_b1_s5.json.zst")
    et = os.path.join(root, "traces/h200/bloom560m_fp16_b1_s5.et.json.gz")
    fast = ["--backend", "cpu", "--quiet", "--warmup", "1", "--runs", "5"]

    r = run("inspect", "--json", bloom)
    open(os.path.join(tmp, "inspect.json"), "w").write(r.stdout)
    check_schema(os.path.join(tmp, "inspect.json"), "inspect.schema.json")

    sig = os.path.join(tmp, "kernel_signatures.json")
    run("classify", bloom, "--et", et, "-o", sig)
    check_schema(sig, "kernel_signatures.schema.json")

    seq = os.path.join(tmp, "seq")
    run(bloom, "--et", et, "--mode", "sequential", "--out", seq, *fast)
    for f in ("report.json", "kernels.csv", "replay_trace.json"):
        if not os.path.exists(os.path.join(seq, f)):
            print(f"FAIL missing {f}"); failures += 1
    check_schema(os.path.join(seq, "report.json"), "report.schema.json")
    report = json.load(open(os.path.join(seq, "report.json")))
    if report["options"].get("warm_inputs") != "all":
        print(f"FAIL sequential replay should warm inputs by default: {report['options']}"); failures += 1
    replayed = [k for k in report["kernels"] if k["disposition"] == "replayed"]
    print(f"     sequential: {len(replayed)} of {len(report['kernels'])} unique kernels replayed, "
          f"replayed coverage {report['totals']['replayed_coverage']:.3f}")
    if report["totals"]["replayed_coverage"] < 0.9:
        print("FAIL the CPU backend replayed less than 90% of the recorded kernel time"); failures += 1
    trace = json.load(open(os.path.join(seq, "replay_trace.json")))
    steps = sorted(e["name"] for e in trace["traceEvents"] if e.get("cat") == "user_annotation")
    if steps != ["ProfilerStep#1", "ProfilerStep#2"]:
        print(f"FAIL replay_trace.json should hold the recorded and the replayed step, has {steps}"); failures += 1

    # Every iteration in the timeline on request, each with its figures in the report.
    timeline = os.path.join(tmp, "timeline")
    run(os.path.join(root, "traces/public/param/linear_kineto.json.gz"), "--mode", "sequential",
        "--iterations", "2", "--trace-iterations", "all", "--pace", "recorded", "--graph",
        "--out", timeline, *fast)
    check_schema(os.path.join(timeline, "report.json"), "report.schema.json")
    report = json.load(open(os.path.join(timeline, "report.json")))
    iterations = report.get("timeline", {}).get("iterations", [])
    check([i["iteration"] for i in iterations] == [1, 2] and all(i["span_us"] > 0 for i in iterations),
          f"sequential report has every iteration's span: {[(i['iteration'], i['span_us']) for i in iterations]}")
    check(report["options"].get("issue_path") == "direct" and report["totals"]["span_ratio"] > 0,
          f"the cpu backend issues directly under --graph, and says so: {report['options'].get('issue_path')}")
    trace = json.load(open(os.path.join(timeline, "replay_trace.json")))
    steps = sorted((e["name"], e.get("args", {}).get("replayed_iteration", 0))
                   for e in trace["traceEvents"] if e.get("cat") == "user_annotation")
    check(steps == [("ProfilerStep#1", 0), ("ProfilerStep#2", 1), ("ProfilerStep#3", 2)],
          f"replay_trace.json has the recorded step and both iterations as profiler steps: {steps}")
    # scripts/timeline_gaps.py finds, in replay_trace.json, each iteration's largest gap where
    # the report says it is (max_gap_us: warm-up reads inside a gap taken out of it).
    r = subprocess.run([sys.executable, os.path.join(root, "scripts/timeline_gaps.py"),
                        os.path.join(timeline, "replay_trace.json"), "--json", "--top", "1"],
                       capture_output=True, text=True)
    found = json.loads(r.stdout) if r.returncode == 0 else {}
    largest = {int(it): g[0]["gap_us"] for it, g in found.items() if g}
    expected = {i["iteration"]: i["max_gap_us"] for i in iterations}
    check(r.returncode == 0 and largest.keys() == expected.keys() and
          all(abs(largest[it] - expected[it]) < 0.01 for it in expected),
          f"timeline_gaps.py's largest gap per iteration {largest} is the report's max_gap_us "
          f"{expected} {r.stderr[-300:]}")

    uniq = os.path.join(tmp, "unique")
    run(bloom, "--mode", "unique", "--out", uniq, *fast)
    check_schema(os.path.join(uniq, "report.json"), "report.schema.json")
    context = json.load(open(os.path.join(uniq, "report.json")))["options"].get("context")
    if context != "none":
        print(f"FAIL --context auto should be none on the cpu backend, was {context}"); failures += 1

    # --energy on the cpu backend: energy n/a with the reason, every figure null (never 0).
    energy = os.path.join(tmp, "energy")
    run(bloom, "--mode", "unique", "--energy", "--out", energy, *fast)
    check_schema(os.path.join(energy, "report.json"), "report.schema.json")
    e = json.load(open(os.path.join(energy, "report.json")))
    if e["energy"]["available"] or "cpu backend" not in e["energy"]["why"] or e["energy"]["predicted_mj"] is not None:
        print(f"FAIL --energy on the cpu backend should be n/a with the reason: {e['energy']}"); failures += 1
    if any(k["energy"]["samples_uj"] for k in e["kernels"]):
        print("FAIL the cpu backend reported energy samples"); failures += 1
    rows = list(csv.DictReader(open(os.path.join(energy, "kernels.csv"))))
    if not rows or any(r["energy_median_uj"] or "cpu backend" not in r["energy_why"] for r in rows):
        print("FAIL kernels.csv should say why each kernel has no energy"); failures += 1

    # A baseline of another trace has no kernel in common: exit 2, not "ok".
    other = os.path.join(tmp, "other")
    param = os.path.join(root, "traces/public/param/linear_kineto.json.gz")
    run(param, "--mode", "sequential", "--out", other, *fast)
    r = run("compare", os.path.join(other, "report.json"), os.path.join(uniq, "report.json"), expect=(2,))
    if "nothing to compare" not in r.stderr:
        print(f"FAIL compare of unrelated reports should say so: {r.stderr.strip()}"); failures += 1

    iso = os.path.join(tmp, "isolated")
    run("--mode", "unique", "--kernels", sig, "--out", iso, *fast)
    check_schema(os.path.join(iso, "report.json"), "report.schema.json")

    # Regress the archived .zst against a baseline made from the same trace (matched by content
    # hash, whatever the compression): exit 0 or 1 depending on CPU noise, never 2.
    base_dir = os.path.join(tmp, "baselines")
    os.makedirs(base_dir)
    shutil.copy(os.path.join(uniq, "report.json"), os.path.join(base_dir, "bloom.json"))
    reg = os.path.join(tmp, "regress")
    run("regress", "--baseline", base_dir, archived, "--out", reg, *fast, expect=(0, 1))
    produced = os.path.join(reg, os.path.basename(archived), "regression.json")
    check_schema(produced, "regression.schema.json")

    # compare: a baseline whose slowest GEMM median was lowered by 15% against the report. CPU
    # timings of 5 runs are too noisy to pin a verdict on, so that kernel's runs are made steady
    # (1% jitter) on both sides; the statistics themselves are unit-tested.
    import math
    current = json.load(open(os.path.join(uniq, "report.json")))
    gemms = [k for k in current["kernels"] if k.get("tier") == 2 and k["samples_us"]]
    target = max(gemms, key=lambda k: k["replayed_us"]["median"])
    median = target["replayed_us"]["median"]
    target["samples_us"] = [median * (1 + 0.01 * math.sin(i)) for i in range(20)]
    cur = os.path.join(tmp, "current.json")
    json.dump(current, open(cur, "w"))
    target["samples_us"] = [s * 0.85 for s in target["samples_us"]]
    target["replayed_us"]["median"] *= 0.85
    low = os.path.join(tmp, "lowered.json")
    json.dump(current, open(low, "w"))
    r = run("compare", low, cur, "--out", os.path.join(tmp, "cmp"), expect=(1,))
    verdict = json.load(open(os.path.join(tmp, "cmp", "regression.json")))
    flagged = [k["id"] for k in verdict["kernels"] if k["verdict"] == "regressed"]
    print(f"     compare: flagged {flagged}, lowered {target['id']}")
    if flagged != [target["id"]]:
        print("FAIL compare should flag exactly the lowered GEMM"); failures += 1
    # ---- reports under faults ----------------------------------------------------------------
    # A baseline whose samples are all 0, negative or 1e308, a duplicated kernel id, a truncated
    # report: exit 2 naming the file, the field and the byte offset; never "ok" against a current
    # report 10x slower.
    base = json.load(open(os.path.join(uniq, "report.json")))
    slower = json.loads(json.dumps(base))
    for k in slower["kernels"]:
        k["samples_us"] = [x * 10 for x in k["samples_us"]]
    slow = os.path.join(tmp, "slow.json")
    json.dump(slower, open(slow, "w"))
    replayed_ids = [i for i, k in enumerate(base["kernels"]) if k["samples_us"]]
    first = replayed_ids[0]
    def broken(name, edit):
        report = json.loads(json.dumps(base))
        edit(report)
        path = os.path.join(tmp, name + ".json")
        json.dump(report, open(path, "w"), indent=1)
        return path
    def samples(value):
        def edit(report):
            for k in report["kernels"]:
                k["samples_us"] = [value for _ in k["samples_us"]]
        return edit
    def duplicate(report):
        report["kernels"][replayed_ids[1]]["id"] = report["kernels"][first]["id"]
    cases = {
        "zeros": (samples(0.0), ["nothing to compare", "median of 0 us"]),
        "negative": (samples(-3.0), [f"/kernels/{first}/samples_us/0", "negative", "byte "]),
        "huge": (samples(1e308), [f"/kernels/{first}/samples_us/0", "beyond any", "byte "]),
        "duplicate": (duplicate, [f"/kernels/{replayed_ids[1]}/id", f"is also /kernels/{first}/id"]),
    }
    for name, (edit, expected) in cases.items():
        path = broken(name, edit)
        r = run("compare", path, slow, expect=(2,))
        check(all(e in r.stderr for e in expected) and (name == "zeros" or path in r.stderr)
              and "ok -" not in r.stdout, f"compare of a {name} baseline says why: {r.stderr.strip()[:300]}")
    text = open(os.path.join(uniq, "report.json")).read()
    truncated = os.path.join(tmp, "truncated.json")
    open(truncated, "w").write(text[: len(text) // 2])
    r = run("compare", truncated, slow, expect=(2,))
    check(f"byte {len(text) // 2}:" in r.stderr and "truncated" in r.stderr,
          f"a truncated report is reported where it ends: {r.stderr.strip()}")
    # Report or trace is decided by parsing: a report whose "schema" comes after its kernels.
    resorted = os.path.join(tmp, "sorted_keys.json")
    json.dump(base, open(resorted, "w"), sort_keys=True)
    run("compare", resorted, os.path.join(uniq, "report.json"), expect=(0, 1))

    # A folder baseline: the broken report is named, the chosen one said.
    folder = os.path.join(tmp, "baseline_folder")
    os.makedirs(folder)
    shutil.copy(os.path.join(other, "report.json"), os.path.join(folder, "linear.json"))
    shutil.copy(os.path.join(tmp, "negative.json"), os.path.join(folder, "broken.json"))
    r = run("regress", "--baseline", folder, param, "--out", os.path.join(tmp, "regress_folder"),
            "--mode", "sequential", "--backend", "cpu", expect=(0, 1))
    check("broken.json: byte " in r.stderr and "negative" in r.stderr and
          "linear.json, the only report of this trace" in r.stderr and "1 unreadable" in r.stderr,
          f"regress names the unreadable baseline and the chosen one: {r.stderr.strip()[:600]}")

    # ---- a replay that replays nothing ---------------------------------------------------------
    events = []
    for i, (op, kernel) in enumerate((("aten::mm", "gemm_k"), ("aten::relu", "relu_k"))):
        ts = 100 + 40 * i
        events += [
            {"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": ts, "dur": 20, "args": {"External id": i + 1}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts + 5, "dur": 2,
             "args": {"correlation": 100 + i}},
            {"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7, "ts": 1000 + 20 * i, "dur": 10 - 5 * i,
             "args": {"correlation": 100 + i, "stream": 7, "device": 0, "grid": [1, 1, 1], "block": [128, 1, 1]}}]
    no_shapes = os.path.join(tmp, "no_shapes.json")
    json.dump({"traceEvents": events}, open(no_shapes, "w"))
    for mode in ("sequential", "unique"):
        out = os.path.join(tmp, "nothing_" + mode)
        r = run(no_shapes, "--mode", mode, "--out", out, *fast, expect=(2,))
        check("nothing was replayed: 2 unique kernels" in r.stderr and "no shapes for aten::mm" in r.stderr
              and "nan" not in r.stdout + r.stderr and "n/a (nothing replayed)" in r.stdout
              and not os.path.exists(out),
              f"{mode}: nothing replayed is exit 2 with the reasons, no nan, no output: {r.stderr.strip()[:300]}")

    # ---- outputs under faults ------------------------------------------------------------------
    quick = [param, "--mode", "sequential", "--backend", "cpu", "--quiet"]
    def listing(folder):
        return {f: open(os.path.join(folder, f), "rb").read() if os.path.isfile(os.path.join(folder, f)) else None
                for f in sorted(os.listdir(folder))}
    def start_blocked(folder):
        """A run into `folder` whose kernels.csv is a FIFO: it stays in the middle of writing its
        outputs (report.json staged) until someone reads the FIFO."""
        p = subprocess.Popen([replay, *quick, "--out", folder], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 120
        while time.time() < deadline and not any(".tmp" in f for f in os.listdir(folder)):
            time.sleep(0.05)
        return p

    # SIGINT during a write: the temporary files and the lock go, the folder is as it was, and the
    # exit status is the signal's.
    interrupted = os.path.join(tmp, "interrupted")
    os.makedirs(interrupted)
    os.mkfifo(os.path.join(interrupted, "kernels.csv"))
    before = sorted(os.listdir(interrupted))
    p = start_blocked(interrupted)
    staged = sorted(os.listdir(interrupted))
    p.send_signal(signal.SIGINT)
    rc = p.wait(timeout=60)
    check(any(".tmp" in f for f in staged) and ".replay.lock" in staged and rc == -signal.SIGINT
          and sorted(os.listdir(interrupted)) == before,
          f"SIGINT while writing: staged {staged}, exit {rc}, left {sorted(os.listdir(interrupted))}")

    # Two runs into one folder: the second exits 2 naming the first (pid and command line); the
    # first then finishes its own outputs.
    shared = os.path.join(tmp, "shared")
    os.makedirs(shared)
    os.mkfifo(os.path.join(shared, "kernels.csv"))
    p = start_blocked(shared)
    r = run(bloom, "--mode", "sequential", "--out", shared, *fast, expect=(2,))
    check(f"pid {p.pid}: " in r.stderr and "linear_kineto.json.gz" in r.stderr and "in use" in r.stderr,
          f"a second run into a locked folder: {r.stderr.strip()[:300]}")
    with open(os.path.join(shared, "kernels.csv")) as fifo:
        csv_text = fifo.read()
    rc = p.wait(timeout=60)
    written = json.load(open(os.path.join(shared, "report.json")))
    check(rc == 0 and csv_text.startswith("id,name") and written["inputs"]["trace"] == param
          and not os.path.exists(os.path.join(shared, ".replay.lock")),
          f"the first run finished alone: exit {rc}, trace {written['inputs']['trace']}")

    # A full disk on one output (replay_trace.json on /dev/full): exit 2, and the report.json and
    # kernels.csv of an earlier run are left as they were.
    full = os.path.join(tmp, "full")
    run(*quick, "--out", full)
    os.remove(os.path.join(full, "replay_trace.json"))
    os.symlink("/dev/full", os.path.join(full, "replay_trace.json"))
    before = listing(full)
    r = run(*quick, "--out", full, "--iterations", "2", expect=(2,))
    check("No space left on device" in r.stderr and listing(full) == before,
          f"full disk: {r.stderr.strip()}; folder unchanged: {listing(full) == before}")
sys.exit(1 if failures else 0)
