#!/usr/bin/env python3
"""Where a --set-dims replay and the real capture's replay differ, op by op.

Usage: setdims_gap.py REWRITTEN_REPORT REWRITTEN_SIGNATURES REAL_REPORT REAL_SIGNATURES

Each report.json is a unique-mode replay; each kernel_signatures.json is `replay classify` of the
same trace with the same options (--set-dims for the rewritten one), which gives every kernel its
recipe. Kernels are grouped by what they do (a GEMM's op, m, n, k and batch; an op's name and input
dims), and each group's replayed time (count x median) is set against the other side's: the
groups present on one side only, or timed differently, are the gap.
"""
import collections
import json
import sys


def group_of(kernel):
    r = kernel["recipe"]
    if r.get("kind") == "gemm":
        key = f"{r.get('op')} m{r.get('m')} n{r.get('n')} k{r.get('k')} batch{r.get('batch')}"
        return key + (" (issued with its GEMM)" if r.get("issued_with_op") else "")
    if r.get("kind") == "aten":
        dims = ["x".join(map(str, t["dims"])) for a in r.get("args", []) for t in a.get("tensors", [])]
        return r["op"] + " " + " ".join(f"[{d}]" for d in dims)
    return f"{r.get('kind', 'none')} {kernel['name'][:40]}"


def load(report_path, signatures_path):
    recipes = {k["id"]: k for k in json.load(open(signatures_path))["kernels"]}
    groups = collections.defaultdict(lambda: {"launches": 0, "us": 0.0, "how": set()})
    for k in json.load(open(report_path))["kernels"]:
        g = groups[group_of(recipes[k["id"]]) if k["id"] in recipes else "unknown " + k["name"][:40]]
        median = k["replayed_us"]["median"] if isinstance(k.get("replayed_us"), dict) else 0.0
        g["launches"] += k["count"]
        g["us"] += k["count"] * (median or 0.0)
        g["how"].add(k["disposition"])
    return groups


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    a, b = load(sys.argv[1], sys.argv[2]), load(sys.argv[3], sys.argv[4])
    ta, tb = sum(g["us"] for g in a.values()), sum(g["us"] for g in b.values())
    print(f"kernel time (count x median): rewritten {ta:.1f} us, real {tb:.1f} us, "
          f"gap {ta - tb:+.1f} us ({100 * (ta / tb - 1):+.1f}%)")
    print(f"{'gap us':>8}  {'rewritten':>14}  {'real':>14}  group [dispositions other than replayed]")
    empty = {"launches": 0, "us": 0.0, "how": set()}
    keys = sorted(set(a) | set(b), key=lambda k: -abs(a.get(k, empty)["us"] - b.get(k, empty)["us"]))
    for key in keys:
        x, y = a.get(key, empty), b.get(key, empty)
        if abs(x["us"] - y["us"]) < 0.5 and x["launches"] == y["launches"]:
            continue
        how = ",".join(sorted(h for h in x["how"] | y["how"] if h != "replayed"))
        print(f"{x['us'] - y['us']:+8.1f}  {x['launches']:4d}x {x['us']:8.1f}  {y['launches']:4d}x {y['us']:8.1f}  "
              f"{key}{'  [' + how + ']' if how else ''}")
    print("(groups within 0.5 us and the same launches on both sides left out)")


if __name__ == "__main__":
    main()
