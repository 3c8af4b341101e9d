#!/usr/bin/env python3
"""How fast the report.html of the largest bundled trace (rank 3 of an 8-GPU job, 9450
activities) opens in headless Chromium, against a blank page opened in the same run: the target
is under 3 s beyond the blank page's time. A benchmark, not a test (tests/e2e/check_report_html.py
checks what the page holds): on a loaded machine both times grow, and the ratio says more than
either.

usage: report_html_bench.py REPLAY ROOT [--rounds N] [--chromium PATH]"""
import argparse, os, shutil, statistics, subprocess, sys, tempfile, time

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("replay")
p.add_argument("root")
p.add_argument("--rounds", type=int, default=3)
p.add_argument("--chromium", default=shutil.which("chromium") or shutil.which("chromium-browser"))
a = p.parse_args()
if not a.chromium:
    sys.exit("no chromium (apt-get install chromium)")


def open_seconds(page):
    """Seconds from starting Chromium to the page's DOM on stdout (a profile of its own)."""
    with tempfile.TemporaryDirectory() as profile:
        t0 = time.monotonic()
        r = subprocess.run([a.chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                            "--allow-file-access-from-files", f"--user-data-dir={profile}",
                            "--dump-dom", "file://" + os.path.abspath(page)],
                           capture_output=True, text=True, timeout=300)
        seconds = time.monotonic() - t0
    if r.returncode != 0 or "</html>" not in r.stdout:
        sys.exit(f"Chromium did not open {page}: exit {r.returncode}")
    return seconds


with tempfile.TemporaryDirectory() as tmp:
    # The page as tests/e2e/check_report_html.py makes it (the cpu backend, ops over 256 KB of
    # tensors left out: the page still holds every unique kernel and the whole timeline).
    out = os.path.join(tmp, "big")
    subprocess.run([a.replay, os.path.join(a.root, "traces/public/HolisticTraceAnalysis/control.json.gz"),
                    "--mode", "sequential", "--out", out, "--html", "--backend", "cpu", "--quiet",
                    "--max-tensor-bytes", "256kb", "--no-warm-inputs"], check=True)
    page = os.path.join(out, "report.html")
    blank = os.path.join(tmp, "blank.html")
    with open(blank, "w") as f:
        f.write("<!doctype html><html><body></body></html>")
    blanks, pages = [], []
    for _ in range(a.rounds):  # alternated, so that a change in load touches both alike
        blanks.append(open_seconds(blank))
        pages.append(open_seconds(page))
    b, t = statistics.median(blanks), statistics.median(pages)
    size = os.path.getsize(page) / 1e6
    beyond = t - b
    print(f"report.html of the largest trace: {size:.2f} MB; opens in {t:.2f} s (median of {a.rounds}), "
          f"a blank page in {b:.2f} s: {t / b:.2f}x, {beyond:.2f} s beyond "
          f"({'MET' if beyond < 3.0 else 'NOT MET'}, target < 3 s)")
    print(f"rounds: page {', '.join(f'{s:.2f}' for s in pages)}; blank {', '.join(f'{s:.2f}' for s in blanks)}; "
          f"load average {os.getloadavg()[0]:.2f}")
