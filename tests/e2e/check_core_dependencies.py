#!/usr/bin/env python3
"""The core `replay` binary starts without the backends: it links simdjson, zstd and zlib (plus
the C and C++ runtimes) alone, loads no backend module for inspect or --version, and a backend
module that is built never links libcuda or its stub.

    check_core_dependencies.py REPLAY MODULE_DIR TRACE"""
import os, re, subprocess, sys

replay, module_dir, trace = sys.argv[1], sys.argv[2], sys.argv[3]
failures = 0

def fail(message):
    global failures
    print("FAIL " + message)
    failures += 1

def needed(path):
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)

# The C and C++ runtimes (libdl and libpthread are separate libraries before glibc 2.34).
ALLOWED = re.compile(r"^(libsimdjson|libzstd|libz|libstdc\+\+|libm|libgcc_s|libc|libdl|libpthread"
                     r"|ld-linux-x86-64|ld-linux-aarch64)\.so(\.\d+)*$")
direct = needed(replay)
print("replay needs: " + " ".join(direct))
for lib in direct:
    if not ALLOWED.match(lib):
        fail(f"replay links {lib}: the core must depend on simdjson, zstd and zlib alone")
for lib in ("libsimdjson", "libzstd", "libz."):
    if not any(n.startswith(lib) for n in direct):
        fail(f"replay does not link {lib}: is this the core binary?")

# Nothing heavy arrives indirectly either.
HEAVY = re.compile(r"torch|c10|cuda|cublas|cupti|opencv|nvrtc|cudnn")
ldd = subprocess.run(["ldd", replay], capture_output=True, text=True).stdout
for line in ldd.splitlines():
    # Names and paths only: a load address is hex, and one with "c10" in it failed the check
    # ("linux-vdso.so.1 (0x00007fe3f50c1000)", in a fresh clone's scripts/test.sh).
    if HEAVY.search(re.sub(r"\(0x[0-9a-fA-F]+\)", "", line)):
        fail("replay loads at start: " + line.strip())

# inspect and --version open no backend module (LD_DEBUG=files lists every object loaded).
env = dict(os.environ, LD_DEBUG="files")
for args in (["--version"], ["inspect", "--quiet", trace]):
    r = subprocess.run([replay, *args], capture_output=True, text=True, env=env)
    loaded = sorted({m for m in re.findall(r"file=(\S+)", r.stderr) if HEAVY.search(m) or "replay_backend" in m})
    if r.returncode != 0:
        fail(f"replay {' '.join(args)} -> exit {r.returncode}: {r.stderr[-500:]}")
    elif loaded:
        fail(f"replay {' '.join(args)} loaded {loaded}")
    else:
        print(f"ok   replay {' '.join(args)} loads no backend module")

# The built modules: the CUDA one must load on a machine without a driver.
if os.path.isdir(module_dir):
    for name in sorted(os.listdir(module_dir)):
        libs = needed(os.path.join(module_dir, name))
        print(f"{name} needs: " + " ".join(libs))
        if any(lib.startswith("libcuda.so") for lib in libs):
            fail(f"{name} links libcuda: a module must not depend on the driver (or its stub)")

print("ok" if not failures else f"{failures} failure(s)")
sys.exit(1 if failures else 0)
