#!/usr/bin/env python3
"""Mixture-of-experts traces as a new user replays them on the cpu backend: the Mixtral prefill
and decode captures (routing through topk, sort, histc, index, index_put_, _grouped_mm) classify
their index kernels as tier 3 with the index tensors the trace shows, and both replay modes exit 0
with every kernel replayed, or skipped/failed with a reason that says why; the reports are valid."""
import json, os, subprocess, sys, tempfile

replay, root = sys.argv[1], sys.argv[2]
validate = [sys.executable, os.path.join(root, "tests/tools/validate_schema.py")]
failures = 0


def fail(message):
    global failures
    print("FAIL " + message)
    failures += 1


def run(*args):
    r = subprocess.run([replay, *args], capture_output=True, text=True)
    print(("ok   " if r.returncode == 0 else "FAIL ") + "replay " + " ".join(args) + f" -> exit {r.returncode}")
    if r.returncode != 0:
        print(r.stdout[-2000:], r.stderr[-2000:])
        fail("exit status")
    return r


with tempfile.TemporaryDirectory() as tmp:
    for name in ("mixtral_prefill", "mixtral_decode"):
        trace = os.path.join(root, "traces/h200", name + ".json.gz")
        sig = os.path.join(tmp, name + ".kernels.json")
        run("classify", "--quiet", trace, "-o", sig)
        kernels = json.load(open(sig))["kernels"]
        ops = {}
        for k in kernels:
            ops.setdefault(k["recipe"].get("op"), []).append(k["recipe"])
        for op in ("aten::index", "aten::_index_put_impl_", "aten::_grouped_mm", "aten::gather" if name.endswith("prefill") else "aten::index_copy_"):
            recipes = ops.get(op, [])
            if not recipes or any(r["tier"] != 3 for r in recipes):
                fail(f"{name}: {op} should be tier 3, has {[(r['tier'], r.get('reason')) for r in recipes]}")
        for r in ops.get("aten::index", []) + ops.get("aten::_index_put_impl_", []):
            if r["rule"] != "index-list-from-children" or r["args"][1]["kind"] != "tensor_list":
                fail(f"{name}: {r['op']} should take its indices from its children: {r['rule']} {r['args'][1]}")

        for mode in ("sequential", "unique"):
            out = os.path.join(tmp, name + "." + mode)
            run(trace, "--mode", mode, "--backend", "cpu", "--quiet", "--warmup", "1", "--runs", "3", "--out", out)
            report_path = os.path.join(out, "report.json")
            if not os.path.exists(report_path):
                fail(f"{name} {mode}: no report.json")
                continue
            r = subprocess.run([*validate, report_path, os.path.join(root, "schemas/report.schema.json")],
                               capture_output=True, text=True)
            if r.returncode != 0:
                fail(f"{name} {mode}: report.json invalid: {r.stdout[-300:]} {r.stderr[-300:]}")
            report = json.load(open(report_path))
            counts = {}
            for k in report["kernels"]:
                counts[k["disposition"]] = counts.get(k["disposition"], 0) + 1
                if k["disposition"] in ("replayed", "issued_with_op"):
                    continue
                reason = k.get("reason") or ""
                # A reason names the op it is about (or says what libtorch refused).
                if not reason or ("::" not in reason and "not implemented" not in reason):
                    fail(f"{name} {mode}: {k['disposition']} without a named reason: {k['name'][:80]} {reason!r}")
                if "index out of" in reason or "out of bounds" in reason or "out of range" in reason:
                    fail(f"{name} {mode}: an index went out of range: {reason}")
            # What this libtorch cannot run is said so by name.
            grouped = [k for k in report["kernels"] if "grouped" in k["name"].lower() or "prepare_grouped_gemm" in k["name"]]
            for k in grouped:
                if k["disposition"] != "replayed" and "aten::_grouped_mm" not in (k.get("reason") or ""):
                    fail(f"{name} {mode}: grouped GEMM kernel skipped without naming aten::_grouped_mm: {k.get('reason')}")
            print(f"     {name} {mode}: {counts}, replayed coverage {report['totals']['replayed_coverage']:.3f}")
            if counts.get("replayed", 0) < 0.9 * len(report["kernels"]):
                fail(f"{name} {mode}: fewer than 90% of the unique kernels replayed")
sys.exit(1 if failures else 0)
