#!/usr/bin/env python3
"""Bad input through the CLI: exit 2 with a one-line error naming the file and byte offset, no
partial output file; a truncated trace exits 0 with a warning about the lost bytes; damage in the
middle loses only the event around it (exit 0 with a warning, exit 2 with --strict)."""
import gzip, json, os, struct, subprocess, sys, tempfile

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

    # One quote lost in the middle: the event around it is skipped, every kernel kept.
    damaged = write("damaged.json", bloom[:319024] + bloom[319025:])
    r = run("inspect", "--json", damaged)
    kernels = json.loads(r.stdout)["counts"]["kernel"] if r.returncode == 0 else None
    ok = r.returncode == 0 and kernels == 629 and "damaged text" in r.stderr and "byte 318990" in r.stderr
    print(("ok   " if ok else "FAIL ") + f"damaged.json: exit {r.returncode}, {kernels} kernels: {r.stderr.strip()}")
    failures += not ok
    r = run("inspect", "--strict", damaged)
    ok = r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "damaged.json: byte 318990" in r.stderr
    print(("ok   " if ok else "FAIL ") + f"damaged.json --strict: exit {r.returncode}: {r.stderr.strip()}")
    failures += not ok

    # An event beyond --max-event-bytes: one line naming the file and the event's offset.
    long_name = write("long_name.json", b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "' + b"k" * 5000 + b'"}]}')
    r = run("inspect", "--max-event-bytes", "4096", long_name)
    ok = r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "long_name.json: byte 17: an event longer than 4096 bytes" in r.stderr
    print(("ok   " if ok else "FAIL ") + f"long_name.json: exit {r.returncode}: {r.stderr.strip()}")
    failures += not ok

    # Packings other tools accept: gzip with zero padding, zstd behind a skippable frame.
    padded = write("padded.json.gz", gzip.compress(bloom) + b"\0" * 4096)
    skippable = write("skippable.json.zst", struct.pack("<II", 0x184D2A50, 3) + b"abc"
                      + open(os.path.join(traces, "h200/bloom560m_fp16_b1_s5.json.zst"), "rb").read())
    for path in (padded, skippable):
        r = run("inspect", "--json", path)
        ok = r.returncode == 0 and not r.stderr.strip() and json.loads(r.stdout)["counts"]["kernel"] == 629
        print(("ok   " if ok else "FAIL ") + f"{os.path.basename(path)}: exit {r.returncode}: {r.stderr.strip()}")
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
