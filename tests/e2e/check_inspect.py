#!/usr/bin/env python3
"""`replay inspect --json` on every bundled trace (each rank of the dlrm archive too) must give
exactly the kernel/memcpy/memset counts and summed kernel time of traces/expected_counts.json,
which tests/tools/reference_counts.py computed with Python's json module."""
import json, os, subprocess, sys, tarfile, tempfile

replay, traces = sys.argv[1], sys.argv[2]
expected = json.load(open(os.path.join(traces, "expected_counts.json")))
failures = 0
with tempfile.TemporaryDirectory() as tmp:
    for name, want in sorted(expected.items()):
        if ".tar.gz:" in name:
            archive, member = name.split(".tar.gz:")
            with tarfile.open(os.path.join(traces, archive + ".tar.gz")) as tar:
                tar.extract(member, tmp)
            path = os.path.join(tmp, member)
        else:
            path = os.path.join(traces, name)
        out = subprocess.run([replay, "inspect", "--json", "--quiet", path], capture_output=True, text=True)
        if out.returncode != 0:
            print(f"FAIL {name}: exit {out.returncode}: {out.stderr.strip()}")
            failures += 1
            continue
        got = json.loads(out.stdout)
        problems = [k for k in ("kernel", "memcpy", "memset") if got["counts"][k] != want[k]]
        if got["kernel_time_ns"] != want["kernel_time_ns"]:
            problems.append("kernel_time_ns")
        if abs(got["kernel_time_us"] - want["kernel_time_us"]) > 1e-6 * max(1.0, want["kernel_time_us"]):
            problems.append("kernel_time_us")
        if not 0.0 <= got["coverage"] <= 1.0:
            problems.append("coverage")
        status = "ok  " if not problems else "FAIL"
        print(f"{status} {name}: kernel {got['counts']['kernel']} memcpy {got['counts']['memcpy']} "
              f"memset {got['counts']['memset']} kernel_time_us {got['kernel_time_us']:.3f} "
              f"unique {got['unique_kernels']} coverage {got['coverage']:.4f} {problems or ''}")
        failures += bool(problems)
sys.exit(1 if failures else 0)
