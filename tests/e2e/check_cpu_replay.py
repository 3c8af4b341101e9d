#!/usr/bin/env python3
"""The whole CPU path as a user runs it: classify, replay in both modes, replay from a signature
file, regress an archived .zst against its own baseline and compare reports; every output is
validated against its JSON Schema."""
import json, os, shutil, subprocess, sys, tempfile

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
    if report["options"].get("warm_inputs") != "true":
        print(f"FAIL sequential replay should warm inputs by default: {report['options']}"); failures += 1
    replayed = [k for k in report["kernels"] if k["disposition"] == "replayed"]
    print(f"     sequential: {len(replayed)} of {len(report['kernels'])} unique kernels replayed, "
          f"replayed coverage {report['totals']['replayed_coverage']:.3f}")
    if report["totals"]["replayed_coverage"] < 0.9:
        print("FAIL the CPU backend replayed less than 90% of the recorded kernel time"); failures += 1
    trace = json.load(open(os.path.join(seq, "replay_trace.json")))
    pids = {e.get("pid") for e in trace["traceEvents"] if e.get("ph") == "X"}
    if pids != {1, 2}:
        print(f"FAIL replay_trace.json should hold recorded and replayed tracks, has pids {pids}"); failures += 1

    uniq = os.path.join(tmp, "unique")
    run(bloom, "--mode", "unique", "--out", uniq, *fast)
    check_schema(os.path.join(uniq, "report.json"), "report.schema.json")
    context = json.load(open(os.path.join(uniq, "report.json")))["options"].get("context")
    if context != "none":
        print(f"FAIL --context auto should be none on the cpu backend, was {context}"); failures += 1

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
sys.exit(1 if failures else 0)
