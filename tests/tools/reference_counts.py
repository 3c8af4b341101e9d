#!/usr/bin/env python3
"""Reference numbers for the bundled Kineto traces, computed with plain Python.

The C++ parser's tests compare against the JSON this script writes
(traces/expected_counts.json and traces/expected_gemms_bloom.json), so the
definitions here are the contract:

  * An event counts only when ph == "X". Its cat, compared case-insensitively:
      "kernel"                  -> kernel
      "gpu_memcpy" or "memcpy"  -> memcpy
      "gpu_memset" or "memset"  -> memset
      "cpu_op" or "operator"    -> cpu_op
  * kernel_time_us: sum of the kernel events' dur, as float, added in file order.
    (Float addition is order dependent; compare it with a relative tolerance.)
  * kernel_time_ns: sum over kernel events of round(dur * 1000), an exact integer.
    round() here is round-half-away-from-zero (C's llround); the script checks
    that no dur in the bundled traces lies on a .5 ns tie, so Python's
    banker's round() would give the same result.
  * trace_events: len(traceEvents).
  * Files without a top-level traceEvents list (PyTorch Execution Traces, which
    have a top-level "nodes" key, and other JSON such as reference.json) are
    skipped and reported on stderr.

Inputs: .json, .json.gz, .json.zst (zstandard module if installed, else the
zstd command line) and .tar.gz / .tgz archives whose members are traces; each
member is counted on its own under the name "archive.tar.gz:member".
Directories are searched recursively for those file types.

Usage:
  reference_counts.py [--root DIR] [--out FILE] PATH...
  reference_counts.py --gemm-check TRACE [--gemm-out FILE]

Names are given relative to --root (default: the common traces/ directory if
the path lies under one, else as given).
"""

import argparse
import gzip
import io
import json
import math
import os
import shutil
import subprocess
import sys
import tarfile

TRACE_SUFFIXES = (".json", ".json.gz", ".json.zst")
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz")

KERNEL_CATS = {"kernel"}
MEMCPY_CATS = {"gpu_memcpy", "memcpy"}
MEMSET_CATS = {"gpu_memset", "memset"}
CPU_OP_CATS = {"cpu_op", "operator"}

GEMM_OPS = ("aten::addmm", "aten::mm", "aten::bmm", "aten::baddbmm")


# ---------------------------------------------------------------- loading

def _zstd_decompress(data):
    try:
        import zstandard  # type: ignore
    except ImportError:
        zstandard = None
    if zstandard is not None:
        dctx = zstandard.ZstdDecompressor()
        # stream_reader copes with frames that lack a content size
        with dctx.stream_reader(io.BytesIO(data)) as r:
            return r.read()
    exe = shutil.which("zstd")
    if exe is None:
        raise RuntimeError("need the 'zstandard' module or the 'zstd' command")
    return subprocess.run([exe, "-d", "-c", "-q"], input=data,
                          stdout=subprocess.PIPE, check=True).stdout


def decode_bytes(name, data):
    """Return the JSON text bytes of a trace named `name` (suffix decides)."""
    if name.endswith(".gz"):
        return gzip.decompress(data)
    if name.endswith(".zst"):
        return _zstd_decompress(data)
    return data


def iter_traces(path, display):
    """Yield (name, raw_json_bytes) for a file; archives yield one per member."""
    if path.endswith(ARCHIVE_SUFFIXES):
        with tarfile.open(path, "r:*") as tf:
            for m in tf.getmembers():
                if not m.isfile():
                    continue
                base = os.path.basename(m.name)
                if base.startswith("._") or not base.endswith(TRACE_SUFFIXES):
                    continue
                data = tf.extractfile(m).read()
                yield display + ":" + m.name, decode_bytes(m.name, data)
    else:
        with open(path, "rb") as f:
            data = f.read()
        yield display, decode_bytes(path, data)


def collect_files(paths):
    out = []
    for p in paths:
        if os.path.isdir(p):
            for dirpath, dirnames, filenames in os.walk(p):
                dirnames.sort()
                for fn in sorted(filenames):
                    if fn.endswith(TRACE_SUFFIXES + ARCHIVE_SUFFIXES):
                        out.append(os.path.join(dirpath, fn))
        else:
            out.append(p)
    return out


# ---------------------------------------------------------------- counting

def round_half_away(x):
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


def trace_events_of(doc):
    if isinstance(doc, dict):
        ev = doc.get("traceEvents")
        return ev if isinstance(ev, list) else None
    return None


def count_events(events):
    kernel = memcpy = memset = cpu_op = 0
    t_us = 0.0
    t_ns = 0
    ties = 0
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        cat = e.get("cat")
        if not isinstance(cat, str):
            continue
        c = cat.lower()
        if c in KERNEL_CATS:
            kernel += 1
            dur = e.get("dur", 0)
            t_us += dur
            x = dur * 1000
            r = round_half_away(x)
            if r != round(x):
                ties += 1
            t_ns += r
        elif c in MEMCPY_CATS:
            memcpy += 1
        elif c in MEMSET_CATS:
            memset += 1
        elif c in CPU_OP_CATS:
            cpu_op += 1
    return {
        "kernel": kernel,
        "memcpy": memcpy,
        "memset": memset,
        "cpu_op": cpu_op,
        "trace_events": len(events),
        "kernel_time_us": t_us,
        "kernel_time_ns": t_ns,
    }, ties


def display_name(path, root):
    if root:
        return os.path.relpath(path, root).replace(os.sep, "/")
    ap = os.path.abspath(path)
    parts = ap.split(os.sep)
    if "traces" in parts:
        i = len(parts) - 1 - parts[::-1].index("traces")
        return "/".join(parts[i + 1:])
    return path


def run_counts(args):
    result = {}
    skipped = []
    for path in collect_files(args.paths):
        disp = display_name(path, args.root)
        for name, raw in iter_traces(path, disp):
            doc = json.loads(raw)
            events = trace_events_of(doc)
            if events is None:
                why = "no traceEvents"
                if isinstance(doc, dict) and "nodes" in doc:
                    why += " (has 'nodes': PyTorch Execution Trace)"
                skipped.append((name, why))
                continue
            counts, ties = count_events(events)
            if ties:
                print("warning: %s: %d kernel durations on a .5 ns tie; "
                      "Python round() and llround() disagree there" % (name, ties),
                      file=sys.stderr)
            result[name] = counts
    for name, why in skipped:
        print("skipped %s: %s" % (name, why), file=sys.stderr)

    text = json.dumps(result, sort_keys=True, indent=1) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)

    # human-readable table on stderr
    w = max([len(k) for k in result] + [4])
    print("%-*s %7s %6s %6s %7s %8s %16s" % (w, "file", "kernel", "memcpy",
          "memset", "cpu_op", "events", "kernel_time_us"), file=sys.stderr)
    for k in sorted(result):
        r = result[k]
        print("%-*s %7d %6d %6d %7d %8d %16.3f" % (w, k, r["kernel"], r["memcpy"],
              r["memset"], r["cpu_op"], r["trace_events"], r["kernel_time_us"]),
              file=sys.stderr)


# ---------------------------------------------------------------- GEMM check

def infer_gemm(op, dims):
    """Return (batch, m, n, k, note) a reader would infer from Input Dims."""
    note = ""
    if op in ("aten::mm", "aten::addmm"):
        a, b = (dims[0], dims[1]) if op == "aten::mm" else (dims[1], dims[2])
        m, k = a
        k2, n = b
        batch = 1
    elif op == "aten::bmm":
        a, b = dims[0], dims[1]
        batch, m, k = a
        b2, k2, n = b
        if b2 != batch:
            note = "batch mismatch %d vs %d" % (batch, b2)
    elif op == "aten::baddbmm":
        # self may be broadcast (e.g. [B,1,N] in BLOOM's alibi), so M comes
        # from batch1, N from batch2.
        a, b = dims[1], dims[2]
        batch, m, k = a
        b2, k2, n = b
        if b2 != batch:
            note = "batch mismatch %d vs %d" % (batch, b2)
    else:
        raise ValueError(op)
    if k2 != k:
        note = (note + "; " if note else "") + "K mismatch %d vs %d" % (k, k2)
    return batch, m, n, k, note


def run_gemm_check(args):
    name = args.gemm_check
    out = []
    for disp, raw in iter_traces(name, name):
        events = trace_events_of(json.loads(raw))
        if events is None:
            sys.exit("%s: not a Kineto trace" % disp)
        for e in events:
            if (e.get("ph") != "X" or not isinstance(e.get("cat"), str)
                    or e["cat"].lower() not in CPU_OP_CATS
                    or e.get("name") not in GEMM_OPS):
                continue
            a = e.get("args", {})
            dims = a.get("Input Dims", a.get("Input dims"))
            ext = a.get("External id", a.get("external id"))
            batch, m, n, k, note = infer_gemm(e["name"], dims)
            print("ext=%-6s %-14s dims=%-40s -> batch=%d M=%d N=%d K=%d%s" % (
                ext, e["name"], json.dumps(dims), batch, m, n, k,
                ("  !! " + note) if note else ""))
            out.append({"external_id": ext, "op": e["name"], "m": m, "n": n,
                        "k": k, "batch": batch, "input_dims": dims})
    print("%d GEMM cpu_ops" % len(out), file=sys.stderr)
    if args.gemm_out:
        with open(args.gemm_out, "w") as f:
            # one object per line: easy to diff and to read
            f.write("[\n" + ",\n".join(" " + json.dumps(o) for o in out) + "\n]\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="*", help="trace files, archives or directories")
    ap.add_argument("--root", help="names are made relative to this directory")
    ap.add_argument("--out", help="write the JSON here instead of stdout")
    ap.add_argument("--gemm-check", metavar="TRACE",
                    help="list aten::addmm/mm/bmm/baddbmm cpu_ops with inferred M,N,K")
    ap.add_argument("--gemm-out", metavar="FILE", help="write the --gemm-check list here")
    args = ap.parse_args()
    if args.gemm_check:
        run_gemm_check(args)
        return
    if not args.paths:
        ap.error("give trace files or directories")
    run_counts(args)


if __name__ == "__main__":
    main()
