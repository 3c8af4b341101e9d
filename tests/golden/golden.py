#!/usr/bin/env python3
"""Pinned outputs: `inspect --json` and `classify` of every bundled Kineto trace (each rank of the
dlrm archive too, BLOOM with and without its Execution Trace), and the deterministic part of a
sequential cpu-backend replay report of BLOOM. Refactors and speed work must leave them identical.

    golden.py REPLAY ROOT            check against tests/golden/data (exit 1 on any difference)
    golden.py REPLAY ROOT --update   rewrite tests/golden/data from this binary

Timings (parse seconds, replayed samples and everything derived from them, the machine) are left
out: they are not the program's output but the machine's."""
import difflib, gzip, json, os, subprocess, sys, tarfile, tempfile

replay, root = os.path.abspath(sys.argv[1]), sys.argv[2]
update = "--update" in sys.argv[3:]
# The outputs name the --et file as given (./traces/...): run from the root, however it was given
# (CTest gives an absolute path).
os.chdir(root)
root = "."
data = os.path.join(root, "tests/golden/data")
traces = os.path.join(root, "traces")

# Keys whose values are timings or depend on the machine.
TIMING_KEYS = {"seconds", "parse_seconds", "wall_seconds"}
# Report fields that depend only on the trace and the classifier, not on how fast the replay ran.
REPORT_KERNEL_KEYS = ("id", "name", "kind", "tier", "rule", "disposition", "reason", "count", "recorded_us")
REPORT_TOTAL_KEYS = ("recorded_kernel_us", "recipe_coverage", "replayed_coverage")


def strip_timings(value):
    if isinstance(value, dict):
        return {k: strip_timings(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [strip_timings(v) for v in value]
    return value


def report_core(report):
    return {
        "schema": report["schema"],
        "mode": report["mode"],
        "inputs": {k: v for k, v in report["inputs"].items() if k != "trace"},
        "totals": {k: report["totals"][k] for k in REPORT_TOTAL_KEYS},
        "tiers": [{k: t[k] for k in ("tier", "unique", "activities", "recorded_us")} for t in report["tiers"]],
        "kernels": [{k: kr.get(k) for k in REPORT_KERNEL_KEYS} for kr in report["kernels"]],
        # Backend notes name the machine's libraries; the trace's own notes are kept.
        "notes": sorted(n for n in report["notes"] if n.startswith(("execution trace", "shape log"))),
    }


def run(*args):
    r = subprocess.run([replay, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"replay {' '.join(args)} -> exit {r.returncode}\n{r.stderr[-2000:]}")
    return r.stdout


def outputs(tmp):
    """name -> JSON text of each pinned output."""
    inputs = []
    expected = json.load(open(os.path.join(traces, "expected_counts.json")))
    for name in sorted(expected):
        if ".tar.gz:" in name:
            archive, member = name.split(".tar.gz:")
            with tarfile.open(os.path.join(traces, archive + ".tar.gz")) as tar:
                tar.extract(member, tmp)
            inputs.append((name, os.path.join(tmp, member), []))
        else:
            inputs.append((name, os.path.join(traces, name), []))
    bloom = os.path.join(traces, "h200/bloom560m_fp16_b1_s5.json.gz")
    et = os.path.join(traces, "h200/bloom560m_fp16_b1_s5.et.json.gz")
    inputs.append(("h200/bloom560m_fp16_b1_s5.json.gz+et", bloom, ["--et", et]))
    out = {}
    for name, path, extra in inputs:
        key = name.replace("/", "_").replace(":", "_")
        inspect = json.loads(run("inspect", "--json", "--quiet", "--top", "1000000", path, *extra))
        inspect.pop("trace", None)  # the path it was given, not its content
        out[key + ".inspect.json"] = strip_timings(inspect)
        sig = os.path.join(tmp, "sig.json")
        run("classify", "--quiet", path, *extra, "-o", sig)
        classify = json.load(open(sig))
        classify.pop("trace", None)
        out[key + ".classify.json"] = classify
    for label, extra in (("", []), ("+et", ["--et", et])):
        seq = os.path.join(tmp, "seq" + label)
        run(bloom, *extra, "--mode", "sequential", "--backend", "cpu", "--quiet", "--out", seq)
        report = json.load(open(os.path.join(seq, "report.json")))
        out[f"h200_bloom560m_fp16_b1_s5{label}.cpu_sequential_report.json"] = report_core(report)
    return {k: json.dumps(v, indent=1, sort_keys=True) + "\n" for k, v in out.items()}


with tempfile.TemporaryDirectory() as tmp:
    got = outputs(tmp)

if update:
    os.makedirs(data, exist_ok=True)
    for old in os.listdir(data):
        os.remove(os.path.join(data, old))
    for name, text in got.items():
        # mtime 0: the same output gives the same bytes, so an update changes only what changed.
        with open(os.path.join(data, name + ".gz"), "wb") as raw:
            with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0, filename="") as f:
                f.write(text.encode())
    print(f"wrote {len(got)} pinned outputs to {data}")
    sys.exit(0)

failures = 0
pinned = {n[:-3] for n in os.listdir(data) if n.endswith(".gz")}
for name in sorted(pinned | set(got)):
    if name not in got:
        print(f"FAIL {name}: pinned but no longer produced"); failures += 1; continue
    if name not in pinned:
        print(f"FAIL {name}: produced but not pinned (run with --update and review)"); failures += 1; continue
    with gzip.open(os.path.join(data, name + ".gz"), "rt") as f:
        want = f.read()
    if want == got[name]:
        print(f"ok   {name}")
        continue
    failures += 1
    diff = list(difflib.unified_diff(want.splitlines(), got[name].splitlines(), "pinned", "now", lineterm="", n=2))
    print(f"FAIL {name}: {len(diff)} diff lines, first ones:")
    print("\n".join(diff[:40]))
sys.exit(1 if failures else 0)
