#!/usr/bin/env python3
"""Seed corpora for the fuzz targets.

Traces (--out): for every bundled Kineto trace (traces/h200/*.json.gz, traces/public/*/*.json.gz and
the members of traces/public/param/dlrm_kineto.tar.gz): a few documents of 1-12 consecutive events
each, wrapped with a little of the trace's own metadata, and the first few KiB of the trace as a
cut-short document. Each seed starts with one byte that the trace targets read as options (chunk
size, strict).

Reports and signature files (--golden with --reports-out / --signatures-out): the pinned outputs of
tests/golden/data (report.json and kernel_signatures.json contents) cut down to a few kernels, as
plain JSON and gzip, for the report and signature readers.
"""

import argparse
import glob
import gzip
import io
import json
import os
import random
import tarfile


def sources(root):
    for path in sorted(glob.glob(os.path.join(root, "h200", "*.json.gz")) +
                       glob.glob(os.path.join(root, "public", "*", "*.json.gz"))):
        with gzip.open(path, "rb") as f:
            yield path, f.read()
    for path in sorted(glob.glob(os.path.join(root, "public", "*", "*.tar.gz"))):
        with tarfile.open(path) as tar:
            for member in tar.getmembers():
                if member.isfile() and member.name.endswith(".json"):
                    yield path + ":" + member.name, tar.extractfile(member).read()


def reader_seeds(golden, suffix, out, rng):
    os.makedirs(out, exist_ok=True)
    count = 0
    for path in sorted(glob.glob(os.path.join(golden, "*" + suffix))):
        doc = json.load(gzip.open(path))
        for n in (1, 2, 4):
            seed = dict(doc)
            seed["kernels"] = doc.get("kernels", [])[:n]
            text = json.dumps(seed, indent=rng.choice([None, 1])).encode()
            if len(text) > 12000:
                continue
            for data in (text, gzip.compress(text)) if n == 2 else (text,):
                with open(os.path.join(out, f"seed{count:04d}"), "wb") as f:
                    f.write(data)
                count += 1
    print(f"{count} seeds in {out}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces")
    ap.add_argument("--out")
    ap.add_argument("--per-trace", type=int, default=12)
    ap.add_argument("--golden")
    ap.add_argument("--reports-out")
    ap.add_argument("--signatures-out")
    a = ap.parse_args()
    rng = random.Random(1234)
    if a.golden:
        if a.reports_out:
            reader_seeds(a.golden, "report.json.gz", a.reports_out, rng)
        if a.signatures_out:
            reader_seeds(a.golden, "classify.json.gz", a.signatures_out, rng)
    if not a.out:
        return
    os.makedirs(a.out, exist_ok=True)
    count = 0

    def write(data):
        nonlocal count
        with open(os.path.join(a.out, f"seed{count:04d}"), "wb") as f:
            f.write(bytes([rng.randrange(256)]) + data)
        count += 1

    for path, raw in sources(a.traces):
        doc = json.load(io.BytesIO(raw))
        if not isinstance(doc, dict) or "traceEvents" not in doc:
            continue
        events = doc["traceEvents"]
        meta = {k: v for k, v in doc.items() if k != "traceEvents" and k != "deviceProperties"}
        if "deviceProperties" in doc:
            meta["deviceProperties"] = doc["deviceProperties"][:1]
        # Prefer the interesting events: kernels, launches, ops with shapes, flows.
        for _ in range(a.per_trace):
            n = rng.randint(1, 12)
            start = rng.randrange(max(1, len(events) - n))
            seed = dict(list(meta.items())[: rng.randint(0, len(meta))])
            seed["traceEvents"] = events[start:start + n]
            text = json.dumps(seed, indent=rng.choice([None, 1, 2]))
            if len(text) < 12000:
                write(text.encode())
        write(raw[: rng.randint(512, 6000)])  # the trace's own bytes, cut short
    print(f"{count} seeds in {a.out}")


if __name__ == "__main__":
    main()
