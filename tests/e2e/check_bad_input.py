#!/usr/bin/env python3
"""Bad input through the CLI: exit 2 with a one-line error naming the file and byte offset, no
partial output file; a truncated trace exits 0 with a warning about the lost bytes."""
import gzip, os, subprocess, sys, tempfile

replay, traces = sys.argv[1], sys.argv[2]
failures = 0

def run(*args):
    return subprocess.run([replay, *args], capture_output=True, text=True)

with tempfile.TemporaryDirectory() as tmp:
    def write(name, data):
        path = os.path.join(tmp, name)
        open(path, "wb").write(data)
        return path

    bloom = gzip.open(os.path.join(traces, "h200/bloom560m_fp16_b1_s5.json.gz")).read()
    bad = {
        "empty.json": b"",
        "text.json": b"hello, world\n",
        "corrupt.json.gz": gzip.compress(bloom)[:200] + b"\x00" * 4000,
        "corrupt.json.zst": b"\x28\xb5\x2f\xfd" + b"\xff" * 4000,
        "no_events.json": b'{"traceEvents": []}',
    }
    for name, data in bad.items():
        path = write(name, data)
        out_file = os.path.join(tmp, name + ".signatures.json")
        r = run("classify", path, "-o", out_file)
        lines = r.stderr.strip().splitlines()
        ok = (r.returncode == 2 and len(lines) == 1 and name in lines[0] and "byte " in lines[0]
              and not os.path.exists(out_file) and not any(f.startswith(name + ".signatures") for f in os.listdir(tmp)))
        print(("ok   " if ok else "FAIL ") + f"{name}: exit {r.returncode}: {r.stderr.strip()}")
        failures += not ok

    path = write("truncated.json", bloom[: len(bloom) * 7 // 10])
    r = run("inspect", "--json", path)
    ok = r.returncode == 0 and "truncated" in r.stderr and "bytes after the last complete event" in r.stderr
    print(("ok   " if ok else "FAIL ") + f"truncated.json: exit {r.returncode}: {r.stderr.strip()}")
    failures += not ok

    r = run("inspect", os.path.join(tmp, "does-not-exist.json"))
    ok = r.returncode == 2 and "does-not-exist.json" in r.stderr
    print(("ok   " if ok else "FAIL ") + f"missing file: exit {r.returncode}: {r.stderr.strip()}")
    failures += not ok

    # Outputs that cannot be written: one line naming the output, exit 2, nothing left behind;
    # a symlinked output keeps its link and writes its target.
    gz = os.path.join(traces, "h200/bloom560m_fp16_b1_s5.json.gz")
    folder = os.path.join(tmp, "a_folder")
    os.makedirs(folder)
    for target, expect in ((folder, "is a directory"), (os.path.join(tmp, "no/such/dir.json"), "cannot write")):
        before = set(os.listdir(tmp))
        r = run("classify", gz, "-o", target)
        ok = (r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and target in r.stderr
              and expect in r.stderr and set(os.listdir(tmp)) == before and not os.listdir(folder))
        print(("ok   " if ok else "FAIL ") + f"-o {os.path.basename(target)}: exit {r.returncode}: {r.stderr.strip()}")
        failures += not ok
    real, link = os.path.join(tmp, "real.json"), os.path.join(tmp, "link.json")
    os.symlink(real, link)
    r = run("classify", gz, "-o", link, "--quiet")
    ok = r.returncode == 0 and os.path.islink(link) and os.path.getsize(real) > 0
    print(("ok   " if ok else "FAIL ") + f"-o through a symlink: exit {r.returncode}, link kept: {os.path.islink(link)}")
    failures += not ok
    r = run("classify", gz, "-o", "/dev/stdout", "--quiet")
    ok = r.returncode == 0 and r.stdout.lstrip().startswith("{") and os.path.islink("/dev/stdout")
    print(("ok   " if ok else "FAIL ") + f"-o /dev/stdout: exit {r.returncode}, {len(r.stdout)} bytes on stdout")
    failures += not ok
    r = run(gz, "--kernels", os.path.join(tmp, "real.json"), "--backend", "cpu")
    ok = r.returncode == 2 and "not both" in r.stderr
    print(("ok   " if ok else "FAIL ") + f"TRACE with --kernels: exit {r.returncode}: {r.stderr.strip()}")
    failures += not ok

    r = run("inspect", "--no-such-option", path)
    ok = r.returncode == 2
    print(("ok   " if ok else "FAIL ") + f"bad option: exit {r.returncode}")
    failures += not ok
sys.exit(1 if failures else 0)
