#!/usr/bin/env python3
"""Multi-rank replay on the cpu backend (c10d Gloo): the 8 per-rank DLRM traces of
traces/public/param/dlrm_kineto.tar.gz replayed by 8 `replay` processes that a plain launcher
(scripts/launch_ranks.py, torchrun's environment) starts, in sequential and unique mode; then a rank
whose trace is from another run, and a rank killed mid-replay: every other rank must stop with one
error naming the rank (or the op) well within the collective timeout, never hang."""
import json, os, re, shutil, subprocess, sys, tarfile, tempfile

replay, root = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(root, "scripts"))
from launch_ranks import launch  # noqa: E402

TIMEOUT = 15  # --collective-timeout
failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    failures += not ok


def logs(folder, n=8):
    return [open(os.path.join(folder, f"rank{r}.log")).read() for r in range(n)]


def errors(texts):
    return [next((l for l in t.splitlines() if l.startswith("replay: error:")), "") for t in texts]


work = tempfile.mkdtemp(prefix="replay_multirank_")
try:
    with tarfile.open(os.path.join(root, "traces/public/param/dlrm_kineto.tar.gz")) as tar:
        tar.extractall(work)
    traces = os.path.join(work, "dlrm_kineto")
    base = [replay, "--backend", "cpu", "--quiet", "--collective-timeout", str(TIMEOUT)]
    env = {"OMP_NUM_THREADS": "1"}
    os.environ.update(env)

    # ---- both modes, a folder of per-rank traces ----
    for mode, extra in (("sequential", []), ("unique", ["--warmup", "1", "--runs", "3", "--no-sequential-check"])):
        out, log_dir = os.path.join(work, mode), os.path.join(work, mode + "_logs")
        os.makedirs(log_dir)
        codes, seconds = launch(8, [*base[:1], traces, *base[1:], "--mode", mode, "--out", out, *extra],
                                deadline=150, log_dir=log_dir)
        check(codes == [0] * 8, f"{mode}: 8 ranks exit 0 in {seconds:.0f} s (codes {codes})")
        if codes != [0] * 8:
            for r, e in enumerate(errors(logs(log_dir))):
                print(f"     rank {r}: {e}")
            continue
        for r in range(8):
            report = json.load(open(os.path.join(out, f"rank{r}", "report.json")))
            collectives = [k for k in report["kernels"] if k["tier"] == 4]
            check(collectives and all(k["samples_us"] for k in collectives),
                  f"{mode}: rank {r} replayed all {len(collectives)} of its unique collectives")
        r = subprocess.run([sys.executable, os.path.join(root, "tests/tools/validate_schema.py"),
                            os.path.join(out, "collectives.json"),
                            os.path.join(root, "schemas/collectives.schema.json")], capture_output=True, text=True)
        check(r.returncode == 0, f"{mode}: collectives.json matches its schema {r.stdout[-300:]}{r.stderr[-300:]}")
        merged = json.load(open(os.path.join(out, "collectives.json")))
        ops = [c["op"] for c in merged["collectives"]]
        check(merged["world_size"] == 8 and ops.count("all_to_all") == 5 and ops.count("all_reduce") == 3,
              f"{mode}: collectives.json lists 5 all_to_all and 3 all_reduce in recorded order ({ops})")
        check(all(len(c["ranks"]) == 8 and c.get("replayed_busbw_gbps", 0) > 0 and c["recorded_busbw_gbps"] > 0
                  and 0 <= c["slowest_replayed_rank"] < 8 for c in merged["collectives"]),
              f"{mode}: every collective has 8 ranks, the slowest rank, replayed and recorded busbw")
        # The recorded uneven all_to_all (rank 0 sends 3392 ints, receives 768) keeps its sizes.
        uneven = merged["collectives"][3]["ranks"][0]
        check((uneven["in_nelems"], uneven["out_nelems"]) == (3392, 768),
              f"{mode}: all_to_all sizes from c10d::alltoall_base_'s dims ({uneven})")

    # ---- a rank whose trace is from another run ----
    bad = os.path.join(work, "bad")
    os.makedirs(bad)
    names = sorted(os.listdir(traces), key=lambda n: int(re.search(r"worker(\d+)", n).group(1)))
    for r, name in enumerate(names):
        text = open(os.path.join(traces, name)).read()
        if r == 3:  # another profiling window of the job: another step
            text = text.replace('"ProfilerStep#10"', '"ProfilerStep#11"')
        open(os.path.join(bad, f"rank{r}.json"), "w").write(text)
    log_dir = os.path.join(work, "bad_logs")
    os.makedirs(log_dir)
    codes, seconds = launch(8, [*base[:1], os.path.join(bad, "rank{rank}.json"), *base[1:], "--mode",
                                "sequential", "--out", os.path.join(work, "bad_out")],
                            deadline=TIMEOUT * 4, log_dir=log_dir)
    errs = errors(logs(log_dir))
    check(all(c not in (0, 124) for c in codes), f"another run's trace: every rank fails, none hangs (codes {codes})")
    check(all("rank 3's trace" in e and "ProfilerStep#11" in e for e in errs),
          f"another run's trace: every rank names rank 3 and what differs: {errs[0]!r}")

    # ---- a rank that dies mid-replay ----
    log_dir = os.path.join(work, "kill_logs")
    os.makedirs(log_dir)
    killed = {}

    def kill_rank5(procs):
        if "t" not in killed and "iteration 2 done" in open(os.path.join(log_dir, "rank5.log")).read():
            procs[5].kill()
            killed["t"] = True

    codes, seconds = launch(8, [replay, traces, "--backend", "cpu", "--collective-timeout", str(TIMEOUT),
                                "--mode", "sequential", "--iterations", "400", "--out", os.path.join(work, "kill_out")],
                            deadline=150, log_dir=log_dir, on_poll=kill_rank5)
    errs = errors(logs(log_dir))
    others = [r for r in range(8) if r != 5]
    check(killed and all(codes[r] not in (0, 124) for r in others),
          f"killed rank: every other rank fails, none hangs, in {seconds:.0f} s (codes {codes})")
    check(all(re.search(rf"rank {r}: \w+ \(collective #\d+", errs[r]) for r in others),
          f"killed rank: each rank's error names itself and the op: {errs[0]!r}")
finally:
    shutil.rmtree(work, ignore_errors=True)

print("failures:", failures)
sys.exit(1 if failures else 0)
