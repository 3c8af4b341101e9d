#!/usr/bin/env python3
"""Builds a large Kineto trace for the parse benchmark out of the bundled real traces.

The traceEvents of every bundled Kineto trace (traces/h200/*.json.gz, traces/public/*/*.json.gz and
the members of traces/public/param/dlrm_kineto.tar.gz; Execution Traces are left out) are repeated
until the document reaches --size bytes. Each copy of a source gets a fresh block of ids: the
correlation, "External id"/"external id", "Record function id" args and the id of flow events
(ph s/f/t) are shifted by copy*10^9, so launches, kernels and flows still pair up inside a copy and
never across copies. Everything else (names, shapes, ts, pid/tid) is kept. The events sit inside
one {"schemaVersion": ..., "deviceProperties": [...], "traceEvents": [...], ...} document whose
other members come from the H200 trace. One event per line, Python's json.dumps formatting (denser
than Kineto's own indented layout, so MB/s figures are, if anything, conservative).

--prefix-out also writes a smaller document (--prefix-size bytes) made of the first events of the
big one, closed properly: the same mix of events, for tools too slow for the big one.
"""

import argparse
import glob
import gzip
import io
import json
import os
import sys
import tarfile

ID_ARGS = ("correlation", "External id", "external id", "Record function id")
BLOCK = 10**9


def load_sources(root):
    docs = []
    files = sorted(glob.glob(os.path.join(root, "h200", "*.json.gz")))
    files += sorted(glob.glob(os.path.join(root, "public", "*", "*.json.gz")))
    for path in files:
        with gzip.open(path, "rb") as f:
            doc = json.load(f)
        if "traceEvents" in doc:
            docs.append((path, doc))
    for path in sorted(glob.glob(os.path.join(root, "public", "*", "*.tar.gz"))):
        with tarfile.open(path) as tar:
            for member in tar.getmembers():
                if member.isfile() and member.name.endswith(".json"):
                    doc = json.load(io.BytesIO(tar.extractfile(member).read()))
                    if isinstance(doc, dict) and "traceEvents" in doc:
                        docs.append((path + ":" + member.name, doc))
    return docs


def shifted(event, offset):
    if offset == 0:
        return event
    args = event.get("args")
    if isinstance(args, dict):
        changed = None
        for key in ID_ARGS:
            v = args.get(key)
            if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
                if changed is None:
                    changed = dict(args)
                changed[key] = v + offset
        if changed is not None:
            event = dict(event)
            event["args"] = changed
    if event.get("ph") in ("s", "f", "t") and isinstance(event.get("id"), int):
        event = dict(event)
        event["id"] = event["id"] + offset
    return event


class Doc:
    def __init__(self, path, head, tail, limit):
        self.f = open(path, "w", encoding="utf-8")
        self.tail = tail
        self.limit = limit
        self.first = True
        self.f.write(head)
        self.size = len(head.encode())
        self.open = True

    def add(self, lines):
        if not self.open:
            return
        text = ("" if self.first else ",\n") + ",\n".join(lines)
        self.first = False
        self.f.write(text)
        self.size += len(text.encode())
        if self.size >= self.limit:
            self.close()

    def close(self):
        if self.open:
            self.f.write(self.tail)
            self.f.close()
            self.open = False


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", default=os.path.join(os.path.dirname(__file__), "..", "..", "traces"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--size", type=float, default=1.05e9, help="bytes (default 1.05e9)")
    ap.add_argument("--prefix-out")
    ap.add_argument("--prefix-size", type=float, default=256e6)
    a = ap.parse_args()

    sources = load_sources(a.traces)
    meta_doc = next((d for p, d in sources if "h200" in p), sources[0][1])
    before = {k: v for k, v in meta_doc.items() if k in ("schemaVersion", "deviceProperties", "distributedInfo",
                                                          "record_shapes", "cuda_driver_version",
                                                          "cuda_runtime_version", "cupti_version", "trace_id")}
    after = {k: v for k, v in meta_doc.items() if k in ("traceName", "displayTimeUnit", "baseTimeNanoseconds")}
    head = "{\n" + "".join(f"  {json.dumps(k)}: {json.dumps(v)},\n" for k, v in before.items()) + '  "traceEvents": [\n'
    tail = "\n  ]" + "".join(f",\n  {json.dumps(k)}: {json.dumps(v)}" for k, v in after.items()) + "\n}\n"

    docs = [Doc(a.out, head, tail, a.size)]
    if a.prefix_out:
        docs.append(Doc(a.prefix_out, head, tail, a.prefix_size))
    copy = 0
    events = 0
    while docs[0].open:
        for path, doc in sources:
            lines = [json.dumps(shifted(e, copy * BLOCK)) for e in doc["traceEvents"]]
            events += len(lines)
            for d in docs:
                d.add(lines)
            copy += 1
            if not docs[0].open:
                break
    for d in docs:
        d.close()
    print(f"{a.out}: {docs[0].size} bytes, {copy} source copies, <= {events} events", file=sys.stderr)


if __name__ == "__main__":
    main()
