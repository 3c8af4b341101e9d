#!/usr/bin/env python3
"""What users wait for, measured in one run, against Python and HolisticTraceAnalysis.

    tests/bench/run_bench.py [--build DIR] [--sizes 1.05e9,4.2e9] [--repeat 3] [--work DIR]
                             [--no-python] [--no-hta] [--callgrind BYTES] [--stats]

For each size, a Kineto trace of that many bytes is built out of the bundled traces
(make_big_trace.py: real events repeated, ids shifted per copy) with a .zst copy (zstd -3), under
--work ($TMPDIR/replay_bench, never in the repository). Then, for the plain and the .zst file:
  - analysis_bench: the stages of replay::analyze() (parse, graph, classify, ...) and the teardown,
    each run in its own process. The parse stage's MB/s is what the end-to-end figures are held
    against.
  - `replay inspect --json` and `replay classify -o FILE` end to end, from process start to exit
    (what a user waits for), with the peak RSS of the best run's process.
  The three are taken in turn, --repeat rounds (best of them reported, and the inspect/parse ratio
  of each round: a shared machine's load changes from one minute to the next).
  - `replay --version`: the RSS of the binary and its shared libraries alone (the library baseline).
On the plain file, once each: Python's `json.loads(open(p, 'rb').read())` and HolisticTraceAnalysis
`TraceAnalysis(trace_dir=DIR)` (PyPI HolisticTraceAnalysis, installed into a venv under --work;
skipped with a note when it cannot be installed). Both are first run on a prefix of the trace
(whole source copies, 64 MB or a little more); where that run says the full size would need more
memory than the machine has available, the full-size run is skipped with a note and the ratio
uses the prefix (replay measured on it too).
Ratios are against the baselines measured in the same run.

Targets (issue 14): `inspect --json` end to end >= 1000 MB/s and >= 0.7x the parse stage's MB/s;
peak RSS <= 300 MB per GB of JSON (also shown without the library baseline); a 4 GB trace read
from .zst with peak RSS <= 1.2 GB.

--callgrind BYTES also runs analysis_bench once under `valgrind --tool=callgrind` on a trace of that
size and prints the instructions of each stage (deterministic where the wall clock is not).
--stats prints analysis_bench --stats (the model's and the engine's bytes per event) for the first
size.
"""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TARGET_INSPECT_MBPS = 1000.0
TARGET_VS_PARSE = 0.7
TARGET_RSS_PER_GB = 300e6
TARGET_ZST_4GB_RSS = 1.2e9
PROBE_BYTES = 64e6


def log(*args):
    print(*args, flush=True)


def available_memory():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


GNU_TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


def timed(cmd, stdout=subprocess.DEVNULL, timeout=None):
    """(wall seconds, peak RSS bytes, exit status) of one process, as `time` would see it.

    A child forked from this Python process reports at least Python's own RSS as its peak (the
    kernel keeps the larger of the image before and after exec), so the RSS comes from GNU time,
    a small C program, where it is installed."""
    rss_file = None
    if GNU_TIME:
        fd, rss_file = tempfile.mkstemp(prefix="rss_")
        os.close(fd)
        cmd = [GNU_TIME, "-f", "%M", "-o", rss_file] + cmd
    t0 = time.monotonic()
    # A session of its own, so that a timeout ends the measured process and not only GNU time.
    p = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE, start_new_session=True)
    try:
        err = p.communicate(timeout=timeout)[1].decode(errors="replace")
        code = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        err, code = "timed out", -9
    wall = time.monotonic() - t0
    rss = 0
    if rss_file:
        try:
            rss = int(open(rss_file).read().split()[-1]) * 1024
        except (ValueError, IndexError):
            pass
        os.remove(rss_file)
    if code != 0:
        log(f"  {' '.join(cmd[:4])} ... exited {code}: {err[-400:]}")
    return wall, rss, code


def summarize_runs(runs):
    ok = [r for r in runs if r[2] == 0]
    if not ok:
        return None
    best = min(ok, key=lambda r: r[0])
    return {"seconds": best[0], "mean_seconds": sum(r[0] for r in ok) / len(ok),
            "peak_rss": best[1], "max_peak_rss": max(r[1] for r in ok),
            "all_seconds": [r[0] for r in runs]}


def best_of(cmd, repeat):
    return summarize_runs([timed(cmd) for _ in range(repeat)])


def make_trace(work, size, with_probe):
    name = os.path.join(work, f"trace_{size:.3g}.json")
    probe = os.path.join(work, f"trace_{size:.3g}.probe64MB.json")
    script = os.path.join(HERE, "make_big_trace.py")
    if not os.path.exists(name) or os.path.getmtime(script) > os.path.getmtime(name) or (
            with_probe and not os.path.exists(probe)):
        log(f"== generating {name} ({size / 1e9:.2f} GB) from {ROOT}/traces")
        cmd = [sys.executable, script, "--traces", os.path.join(ROOT, "traces"), "--out", name,
               "--size", str(size)]
        if with_probe:
            cmd += ["--prefix-out", probe, "--prefix-size", str(PROBE_BYTES)]
        subprocess.run(cmd, check=True)
    zst = name + ".zst"
    if not os.path.exists(zst) or os.path.getmtime(name) > os.path.getmtime(zst):
        log(f"== compressing {zst} (zstd -3)")
        subprocess.run([os.path.join(ROOT, "scripts", "zstd_file.sh"), "3", name, zst], check=True)
    return name, zst, probe if with_probe else None


def analysis(bench, path, repeat):
    out = subprocess.run([bench, path, "--repeat", str(repeat), "--json"], capture_output=True,
                         text=True)
    if out.returncode != 0:
        log(f"  analysis_bench {path} failed: {out.stdout[-400:]} {out.stderr[-400:]}")
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def merged_stages(runs):
    """Best of each stage over analysis_bench runs of one round each."""
    runs = [r for r in runs if r]
    if not runs:
        return None
    merged = dict(runs[0])
    merged["stages"] = []
    for i, first in enumerate(runs[0]["stages"]):
        best = min((r["stages"][i] for r in runs), key=lambda s: s["best_seconds"])
        stage = dict(best)
        stage["mean_seconds"] = sum(r["stages"][i]["best_seconds"] for r in runs) / len(runs)
        merged["stages"].append(stage)
    merged["best_run_seconds"] = min(r["best_run_seconds"] for r in runs)
    merged["peak_rss"] = max(r["peak_rss"] for r in runs)
    merged["parse_seconds"] = [r["stages"][0]["best_seconds"] for r in runs]
    return merged


def interleaved(bench, replay, path, sig, repeat):
    """analysis_bench (one run), `inspect --json` and `classify` taken in turn, `repeat` rounds: a
    round sees one state of a machine whose load changes, so the ratios hold round by round."""
    stages, inspect, classify = [], [], []
    for _ in range(repeat):
        stages.append(analysis(bench, path, 1))
        inspect.append(timed([replay, "inspect", "--json", "--quiet", path]))
        classify.append(timed([replay, "classify", "--quiet", path, "-o", sig]))
    return merged_stages(stages), summarize_runs(inspect), summarize_runs(classify)


def hta_python(work):
    """The venv's python with HolisticTraceAnalysis importable, or (None, why)."""
    venv = os.path.join(work, "hta-venv")
    python = os.path.join(venv, "bin", "python")
    probe = [python, "-c", "import hta.trace_analysis"]
    if os.path.exists(python) and subprocess.run(probe, capture_output=True).returncode == 0:
        return python, ""
    log(f"== installing HolisticTraceAnalysis into {venv}")
    r = subprocess.run([sys.executable, "-m", "venv", venv], capture_output=True, text=True)
    if r.returncode != 0:
        return None, "python -m venv failed: " + r.stderr.strip()[-200:]
    r = subprocess.run([python, "-m", "pip", "install", "-q", "HolisticTraceAnalysis"],
                       capture_output=True, text=True)
    if r.returncode != 0 or subprocess.run(probe, capture_output=True).returncode != 0:
        return None, "pip install HolisticTraceAnalysis failed: " + (r.stderr.strip()[-300:] or "?")
    return python, ""


def hta_command(python, work, path):
    # HTA loads a folder of traces, one per rank (the rank from each file's distributedInfo).
    folder = tempfile.mkdtemp(prefix="hta_", dir=work)
    os.symlink(path, os.path.join(folder, "rank-0.json"))
    code = ("import logging,sys; logging.disable(logging.CRITICAL)\n"
            "from hta.trace_analysis import TraceAnalysis\n"
            "TraceAnalysis(trace_dir=sys.argv[1])")
    return [python, "-c", code, folder], folder


def baseline(label, cmd_for, path, probe, timeout):
    """Runs a baseline on the probe, then on the full file when memory allows."""
    size = os.path.getsize(path)
    cmd, cleanup = cmd_for(probe)
    wall, rss, code = timed(cmd, timeout=timeout)
    if cleanup:
        shutil.rmtree(cleanup, ignore_errors=True)
    if code != 0:
        return {"label": label, "note": f"failed on the {os.path.getsize(probe) / 1e6:.0f} MB prefix"}
    per_byte = rss / os.path.getsize(probe)
    need = per_byte * size * 1.2
    result = {"label": label, "probe": {"path": probe, "seconds": wall, "peak_rss": rss}}
    if need > available_memory() * 0.8:
        result["note"] = (f"full size skipped: it would need ~{need / 1e9:.1f} GB "
                          f"({per_byte:.1f} bytes of RSS per byte of JSON on the prefix), "
                          f"{available_memory() / 1e9:.1f} GB available")
        return result
    cmd, cleanup = cmd_for(path)
    wall, rss, code = timed(cmd, timeout=timeout)
    if cleanup:
        shutil.rmtree(cleanup, ignore_errors=True)
    if code == 0:
        result["full"] = {"path": path, "seconds": wall, "peak_rss": rss}
    else:
        result["note"] = "full size " + ("timed out" if code == -9 else f"failed ({code})")
    return result


def callgrind(bench, path):
    if shutil.which("valgrind") is None:
        log("valgrind not found: --callgrind skipped")
        return
    out = tempfile.mkdtemp(prefix="callgrind_")
    log(f"== valgrind --tool=callgrind {os.path.basename(bench)} {path} (slow)")
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/cg.%p",
                    bench, path, "--repeat", "1", "--threads", "1"], capture_output=True, check=True)
    dumps = []
    for f in glob.glob(os.path.join(out, "cg.*.*")):
        text = open(f, errors="replace").read(200000)
        stage = re.search(r"^desc: Trigger: Client Request: (.*)$", text, re.M)
        total = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
        part = int(f.rsplit(".", 1)[1])
        if stage and total:
            dumps.append((part, stage.group(1), int(total.group(1))))
    shutil.rmtree(out, ignore_errors=True)
    log(f"instructions per stage (callgrind, {os.path.getsize(path) / 1e6:.0f} MB trace, one run "
        "on one thread)")
    for _, stage, n in sorted(dumps):
        log(f"  {stage:<16} {n / 1e6:12.1f} M")


def mbps(nbytes, seconds):
    return nbytes / seconds / 1e6 if seconds > 0 else 0.0


def verdict(ok):
    return "MET" if ok else "NOT MET"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--sizes", default="1.05e9,4.2e9", help="trace sizes in bytes, comma separated")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "replay_bench"))
    ap.add_argument("--no-python", action="store_true")
    ap.add_argument("--no-hta", action="store_true")
    ap.add_argument("--baseline-timeout", type=float, default=1200)
    ap.add_argument("--callgrind", type=float, default=0)
    ap.add_argument("--stats", action="store_true")
    a = ap.parse_args()
    work = os.path.abspath(a.work)
    if work.startswith(ROOT + os.sep):
        sys.exit("refusing to write the benchmark data inside the repository")
    os.makedirs(work, exist_ok=True)
    replay = os.path.join(a.build, "cli", "replay")
    bench = os.path.join(a.build, "tests", "bench", "analysis_bench")
    for exe in (replay, bench):
        if not os.access(exe, os.X_OK):
            sys.exit(f"{exe} not found: build with -DREPLAY_BUILD_BENCHMARKS=ON first")
    sizes = [float(s) for s in a.sizes.split(",") if s]

    log(f"run_bench: {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs online, "
        f"load average {os.getloadavg()[0]:.2f}, {available_memory() / 1e9:.1f} GB available; "
        f"{replay}")
    version = best_of([replay, "--version"], 3)
    libs = version["peak_rss"] if version else 0
    log(f"`replay --version` peak RSS (binary and shared libraries): {libs / 2**20:.1f} MiB")

    hta_py, hta_why = (None, "--no-hta")
    if not a.no_hta:
        hta_py, hta_why = hta_python(work)
        if hta_py is None:
            log(f"HolisticTraceAnalysis skipped: {hta_why}")

    results = []
    for i, size in enumerate(sizes):
        with_baselines = not (a.no_python and hta_py is None)
        plain, zst, probe = make_trace(work, size, with_baselines)
        if a.stats and i == 0:
            subprocess.run([bench, plain, "--repeat", "1", "--stats"])
        json_bytes = os.path.getsize(plain)
        row = {"size": size, "json_bytes": json_bytes, "inputs": {}}
        for kind, path in (("plain", plain), ("zst", zst)):
            log(f"== {path}")
            sig = os.path.join(work, "signatures.json")
            stages, inspect, classify = interleaved(bench, replay, path, sig, a.repeat)
            row["inputs"][kind] = {"path": path, "stages": stages, "inspect": inspect,
                                   "classify": classify}
            if stages:
                for s in stages["stages"]:
                    log(f"  stage {s['stage']:<16} {s['best_seconds']:8.3f} s  "
                        f"{mbps(json_bytes, s['best_seconds']):9.0f} MB/s  "
                        f"RSS {s['rss'] / 2**20:7.1f} MiB  peak {s['peak_rss'] / 2**20:7.1f} MiB")
            for label, r in (("inspect --json", inspect), ("classify", classify)):
                if r:
                    log(f"  {label:<15} {r['seconds']:8.3f} s best, {r['mean_seconds']:.3f} s mean  "
                        f"{mbps(json_bytes, r['seconds']):6.0f} MB/s  peak RSS "
                        f"{r['peak_rss'] / 2**20:7.1f} MiB")
        if with_baselines:
            base = []
            if not a.no_python:
                log("== Python json.loads")
                py = lambda p: ([sys.executable, "-c",
                                 "import json,sys;json.loads(open(sys.argv[1],'rb').read())", p], None)
                base.append(baseline("python json.loads", py, plain, probe, a.baseline_timeout))
            if hta_py is not None:
                log("== HolisticTraceAnalysis TraceAnalysis(trace_dir=...)")
                base.append(baseline("HTA TraceAnalysis", lambda p: hta_command(hta_py, work, p),
                                     plain, probe, a.baseline_timeout))
            if any("full" not in b for b in base):
                row["probe_inspect"] = best_of([replay, "inspect", "--json", "--quiet", probe],
                                               a.repeat)
            row["baselines"] = base
        results.append(row)

    log("\nsummary (best of %d; MB/s of decompressed JSON; RSS of the best run's process)" % a.repeat)
    log(f"  library baseline (`replay --version`): {libs / 2**20:.1f} MiB")
    met = []
    for row in results:
        gb = row["json_bytes"] / 1e9
        for kind, r in row["inputs"].items():
            st, ins, cls = r["stages"], r["inspect"], r["classify"]
            if not (st and ins and cls):
                log(f"  {gb:.2f} GB {kind}: a run failed")
                met.append(False)
                continue
            parse_s = next(s["best_seconds"] for s in st["stages"] if s["stage"] == "parse")
            parse = mbps(row["json_bytes"], parse_s)
            e2e = mbps(row["json_bytes"], ins["seconds"])
            rounds = [p / i for p, i in zip(st["parse_seconds"], ins["all_seconds"]) if i > 0]
            log(f"  {gb:.2f} GB {kind:<5}: parse stage {parse:6.0f} MB/s | inspect --json {e2e:6.0f} MB/s "
                f"({e2e / parse:.2f}x parse; {min(rounds):.2f}-{max(rounds):.2f}x round by round) | "
                f"classify {mbps(row['json_bytes'], cls['seconds']):6.0f} MB/s"
                f" | analysis stages {mbps(row['json_bytes'], st['best_run_seconds']):6.0f} MB/s")
            per_gb = ins["peak_rss"] / gb
            log(f"  {'':13}peak RSS inspect {ins['peak_rss'] / 1e6:7.0f} MB = {per_gb / 1e6:4.0f} MB/GB "
                f"({(ins['peak_rss'] - libs) / gb / 1e6:4.0f} MB/GB without the library baseline), "
                f"classify {cls['peak_rss'] / 1e6:7.0f} MB, analysis_bench {st['peak_rss'] / 1e6:7.0f} MB")
            if kind == "plain" and abs(gb - 1.05) < 0.3:
                ok = e2e >= TARGET_INSPECT_MBPS
                log(f"  {'':13}target inspect >= {TARGET_INSPECT_MBPS:.0f} MB/s: {verdict(ok)}")
                met.append(ok)
                ok = e2e >= TARGET_VS_PARSE * parse
                log(f"  {'':13}target inspect >= {TARGET_VS_PARSE}x parse: {verdict(ok)}")
                met.append(ok)
                ok = per_gb <= TARGET_RSS_PER_GB
                log(f"  {'':13}target peak RSS <= {TARGET_RSS_PER_GB / 1e6:.0f} MB/GB: {verdict(ok)} "
                    f"(without the library baseline: {verdict((ins['peak_rss'] - libs) / gb <= TARGET_RSS_PER_GB)})")
                met.append(ok)
            if kind == "zst" and gb >= 3.5:
                worst = max(ins["max_peak_rss"], cls["max_peak_rss"])
                ok = worst <= TARGET_ZST_4GB_RSS
                log(f"  {'':13}target 4 GB .zst peak RSS <= {TARGET_ZST_4GB_RSS / 1e9:.1f} GB: "
                    f"{worst / 1e9:.2f} GB {verdict(ok)} (without the library baseline: "
                    f"{(worst - libs) / 1e9:.2f} GB {verdict(worst - libs <= TARGET_ZST_4GB_RSS)})")
                met.append(ok)
        for b in row.get("baselines", []):
            ours = row["inputs"]["plain"]["inspect"]
            if "full" in b:
                theirs = b["full"]
                ratio = theirs["seconds"] / ours["seconds"] if ours else 0
                log(f"  {gb:.2f} GB vs {b['label']}: {mbps(row['json_bytes'], theirs['seconds']):6.1f} MB/s, "
                    f"peak RSS {theirs['peak_rss'] / 1e6:.0f} MB -> replay inspect --json is {ratio:.1f}x "
                    f"faster, {theirs['peak_rss'] / ours['peak_rss']:.1f}x less memory")
            elif "probe" in b and row.get("probe_inspect"):
                theirs, mine = b["probe"], row["probe_inspect"]
                n = os.path.getsize(theirs["path"])
                log(f"  {gb:.2f} GB vs {b['label']}: {b.get('note', '')}; on the {n / 1e6:.0f} MB prefix "
                    f"{mbps(n, theirs['seconds']):.1f} MB/s, peak RSS {theirs['peak_rss'] / 1e6:.0f} MB "
                    f"-> replay inspect --json {theirs['seconds'] / mine['seconds']:.1f}x faster, "
                    f"{theirs['peak_rss'] / mine['peak_rss']:.1f}x less memory there")
            else:
                log(f"  {gb:.2f} GB vs {b['label']}: {b.get('note', 'no result')}")
    if a.callgrind:
        path = make_trace(work, a.callgrind, False)[0]
        callgrind(bench, path)
    log(f"\nload average at the end {os.getloadavg()[0]:.2f} (wall-clock figures need both cores free)")
    return 0 if all(met) else 1


if __name__ == "__main__":
    sys.exit(main())
