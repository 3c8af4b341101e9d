#!/usr/bin/env python3
"""One line per report.json: mode, share of recorded kernel time replayed, replayed vs recorded
total, median per-kernel |error|, |error| weighted by time (errors of opposite sign do not
offset), GEMM name match, failures, and the share of recorded kernel time timed by launches of
another grid than the recorded one (replayed_grids: the library configured them otherwise, as a
cuDNN plan made inside a capture did). For GPU sessions' logs.

Usage: scripts/report_table.py REPORT_OR_DIR...   (a folder means its report.json)
"""
import json
import os
import sys


def num(value, fmt):
    return "-" if value is None else format(value, fmt)


def main(paths):
    print(f"{'report':<44}{'mode':<11}{'replayed':>9}{'total err':>10}{'med |err|':>10}{'w |err|':>9}"
          f"{'gemm names':>11}{'failed':>7}{'grid':>7}")
    status = 0
    for path in paths:
        file = os.path.join(path, "report.json") if os.path.isdir(path) else path
        try:
            with open(file) as f:
                report = json.load(f)
        except (OSError, ValueError) as e:
            print(f"{path:<44}no report ({e})")
            status = 1
            continue
        t = report.get("totals", {})
        kernels = report.get("kernels", [])
        failed = sum(1 for k in kernels if k.get("disposition") == "failed")
        recorded = t.get("recorded_kernel_us") or 0
        other_grid = sum(k.get("recorded_us", {}).get("sum", 0) for k in kernels if k.get("replayed_grids"))
        grid = other_grid / recorded if recorded > 0 else None
        print(f"{path[-43:]:<44}{report.get('mode', '?'):<11}"
              f"{num(t.get('replayed_coverage'), '.4f'):>9}{num(t.get('total_error_pct'), '+.2f'):>10}"
              f"{num(t.get('median_abs_error_pct'), '.2f'):>10}{num(t.get('weighted_abs_error_pct'), '.2f'):>9}"
              f"{num(t.get('gemm_name_match'), '.3f'):>11}"
              f"{failed:>7}{num(grid, '.3f'):>7}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]) if len(sys.argv) > 1 else print(__doc__) or 2)
