#!/usr/bin/env python3
"""Every kind of report.html opened in headless Chromium: replay (sequential, with its timelines),
unique, regress and compare, each with and without energy. The page must raise no console error
and no script error, and every chart must hold, in the DOM the browser built, as many data points
as it says (data-points); a screenshot of each page is kept in OUTDIR. The page of the largest
bundled trace (8 GPUs) must stay under 10 MB; how fast it opens is measured by
tests/bench/report_html_bench.py.

usage: check_report_html.py REPLAY ROOT OUTDIR [CHROMIUM]   (exit 77, a skip, without Chromium)"""
import html.parser, json, math, os, shutil, subprocess, sys, tempfile, time

replay, root, outdir = sys.argv[1], sys.argv[2], sys.argv[3]
chromium = sys.argv[4] if len(sys.argv) > 4 else (shutil.which("chromium") or shutil.which("chromium-browser"))
if not chromium:
    print("SKIP no chromium (apt-get install chromium)")
    # scripts/test.sh (CI) sets REPLAY_E2E_REQUIRED: there a missing Chromium is a failure.
    sys.exit(1 if os.environ.get("REPLAY_E2E_REQUIRED") else 77)
os.makedirs(outdir, exist_ok=True)
failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    failures += not ok


def run(*args, expect=(0,)):
    r = subprocess.run([replay, *args], capture_output=True, text=True)
    check(r.returncode in expect, "replay " + " ".join(args) + f" -> exit {r.returncode}")
    if r.returncode not in expect:
        print(r.stdout[-2000:], r.stderr[-2000:])
    return r


def browser(*args, profile):
    # A profile of its own per run: two pages never share state, and nothing of the user's is read.
    return [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--allow-file-access-from-files", f"--user-data-dir={profile}",
            "--enable-logging=stderr", "--v=0", *args]


class Charts(html.parser.HTMLParser):
    """Points (elements of class "point") inside each element with data-chart, and script errors
    the page noted on <body data-js-errors>."""

    def __init__(self):
        super().__init__()
        self.stack = []  # (tag, chart index or None)
        self.charts = []  # [name, said, counted]
        self.js_errors = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body" and "data-js-errors" in a:
            self.js_errors = a["data-js-errors"]
        chart = next((c for _, c in reversed(self.stack) if c is not None), None)
        if "point" in (a.get("class") or "").split() and chart is not None:
            self.charts[chart][2] += 1
        if "data-chart" in a:
            self.charts.append([a["data-chart"], int(a.get("data-points", -1)), 0])
            self.stack.append((tag, len(self.charts) - 1))
        elif tag not in ("circle", "rect", "line", "path", "br", "img", "meta", "input", "link"):
            self.stack.append((tag, None))

    def handle_startendtag(self, tag, attrs):
        a = dict(attrs)
        chart = next((c for _, c in reversed(self.stack) if c is not None), None)
        if "point" in (a.get("class") or "").split() and chart is not None:
            self.charts[chart][2] += 1

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                return


def console_errors(stderr):
    # Chromium logs the page's console as "CONSOLE(line)] "message", source: ..." lines.
    lines = [l for l in stderr.splitlines() if "CONSOLE" in l]
    return [l for l in lines if "Uncaught" in l or "Error" in l or ":ERROR:" in l]


def open_page(page, name, expect_charts):
    """Loads `page`, counts its charts in the built DOM, saves a screenshot; returns the seconds
    the load took beyond a blank page's."""
    with tempfile.TemporaryDirectory() as profile:
        t0 = time.monotonic()
        r = subprocess.run(browser("--dump-dom", "file://" + os.path.abspath(page), profile=profile),
                           capture_output=True, text=True, timeout=120)
        seconds = time.monotonic() - t0
    check(r.returncode == 0 and "</html>" in r.stdout, f"{name}: Chromium opened {page}")
    errors = console_errors(r.stderr)
    charts = Charts()
    charts.feed(r.stdout)
    check(not errors and charts.js_errors is None,
          f"{name}: no console or script error {errors[:3]} {charts.js_errors or ''}")
    names = [c[0] for c in charts.charts]
    for want in expect_charts:
        check(want in names, f"{name}: has the {want} chart ({names})")
    for chart, said, counted in charts.charts:
        check(said > 0 and said == counted,
              f"{name}: chart {chart} holds {counted} data points in the DOM, says {said}")
    shot = os.path.join(outdir, name + ".png")
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(browser(f"--screenshot={shot}", "--window-size=1400,2600", "--hide-scrollbars",
                               "file://" + os.path.abspath(page), profile=profile),
                       capture_output=True, text=True, timeout=120)
    check(os.path.getsize(shot) > 10000 if os.path.exists(shot) else False, f"{name}: screenshot {shot}")
    return seconds


def blank_seconds():
    with tempfile.TemporaryDirectory() as d:
        blank = os.path.join(d, "blank.html")
        open(blank, "w").write("<!doctype html><html><body></body></html>")
        best = 1e9
        for _ in range(2):
            with tempfile.TemporaryDirectory() as profile:
                t0 = time.monotonic()
                subprocess.run(browser("--dump-dom", "file://" + blank, profile=profile),
                               capture_output=True, timeout=120)
                best = min(best, time.monotonic() - t0)
        return best


def with_energy(report_dir, into):
    """A copy of a replay's folder whose report.json has energy as --energy on a GPU writes it
    (schemas/report.schema.json; the cpu backend measures none): the page is then made by
    `replay report`."""
    shutil.copytree(report_dir, into)
    path = os.path.join(into, "report.json")
    report = json.load(open(path))

    def stats(xs):
        xs = sorted(xs)
        mid = xs[len(xs) // 2]
        return {"count": len(xs), "min": xs[0], "median": mid, "mean": sum(xs) / len(xs),
                "max": xs[-1], "sum": sum(xs), "stddev": 0.0, "p95": xs[-1], "p99": xs[-1]}

    def step(mj):
        return {"samples_mj": [mj - 0.5, mj + 0.5], "mj": mj, "dynamic_mj": mj * 0.7,
                "static_mj": mj * 0.3, "step_us": 1000.0, "power_w": 310.0, "idle_power_w": 70.5,
                "steps": 40, "source": "", "gpu": ""}

    report["energy"] = {"available": True, "why": "", "method": "nvmlDeviceGetTotalEnergyConsumption",
                        "counter_period_ms": 20.0, "power_period_ms": 100.0, "idle_power_w": 70.5,
                        "window_ms": 200.0, "windows": 2, "step": step(41.5),
                        "model": {"samples_mj": [], "mj": None, "dynamic_mj": None,
                                  "static_mj": None, "step_us": None, "power_w": None,
                                  "idle_power_w": None, "steps": 0, "source": "", "gpu": ""},
                        "predicted_mj": 38.0, "notes": []}
    for i, k in enumerate(report["kernels"]):
        if k.get("disposition") == "replayed":
            uj = 10.0 + i
            k["energy"] = {"samples_uj": [uj] * 3, "uj": stats([uj] * 3), "dynamic_uj": uj * 0.7,
                           "launches": 1000, "power_w": 300.0 + i, "edp_uj_us": uj * 2,
                           "flops": None, "pj_per_flop": None, "why": ""}
    json.dump(report, open(path, "w"))
    return into


with tempfile.TemporaryDirectory() as tmp:
    bloom = os.path.join(root, "traces/h200/bloom560m_fp16_b1_s5.json.gz")
    et = os.path.join(root, "traces/h200/bloom560m_fp16_b1_s5.et.json.gz")
    archived = os.path.join(root, "traces/h200/bloom560m_fp16_b1_s5.json.zst")
    fast = ["--backend", "cpu", "--quiet", "--warmup", "1", "--runs", "5"]
    pages = []  # (name, page, charts it must have)

    seq = os.path.join(tmp, "seq")
    run(bloom, "--et", et, "--mode", "sequential", "--out", seq, "--html", *fast)
    pages.append(("replay_sequential", os.path.join(seq, "report.html"), ["scatter", "tiers", "timeline"]))
    uniq = os.path.join(tmp, "unique")
    run(bloom, "--et", et, "--mode", "unique", "--out", uniq, "--html", *fast)
    pages.append(("replay_unique", os.path.join(uniq, "report.html"), ["scatter", "tiers"]))

    # regress: the archived copy of the same trace against the unique report as its baseline.
    base_dir = os.path.join(tmp, "baselines")
    os.makedirs(base_dir)
    shutil.copy(os.path.join(uniq, "report.json"), os.path.join(base_dir, "bloom.json"))
    reg = os.path.join(tmp, "regress")
    run("regress", "--baseline", base_dir, archived, "--et", et, "--out", reg, "--html", *fast,
        expect=(0, 1))
    pages.append(("regress", os.path.join(reg, os.path.basename(archived), "report.html"), ["scatter"]))

    # compare: a baseline whose slowest GEMM was 15% faster, so that a change (and its
    # distributions) shows; that kernel's runs made steady on both sides (1% jitter), as in
    # check_cpu_replay.py, since 5 CPU runs are too noisy to pin a verdict on.
    current = json.load(open(os.path.join(uniq, "report.json")))
    gemms = [k for k in current["kernels"] if k.get("tier") == 2 and k["samples_us"]]
    target = max(gemms, key=lambda k: k["replayed_us"]["median"])
    median = target["replayed_us"]["median"]
    target["samples_us"] = [median * (1 + 0.01 * math.sin(i)) for i in range(20)]
    cur_dir = os.path.join(tmp, "current")
    os.makedirs(cur_dir)
    json.dump(current, open(os.path.join(cur_dir, "report.json"), "w"))
    target["samples_us"] = [x * 0.85 for x in target["samples_us"]]
    target["replayed_us"]["median"] *= 0.85
    low_path = os.path.join(tmp, "low.json")
    json.dump(current, open(low_path, "w"))
    cmp = os.path.join(tmp, "cmp")
    run("compare", low_path, os.path.join(cur_dir, "report.json"), "--out", cmp, "--html", expect=(1,))
    pages.append(("compare", os.path.join(cmp, "report.html"), ["scatter", "distribution"]))

    # The same four with energy in their report.
    for name, page, charts in list(pages):
        # compare's --out has no report.json: its current side is the unique replay's.
        src = cur_dir if name == "compare" else os.path.dirname(page)
        energy_dir = with_energy(src, os.path.join(tmp, name + "_energy"))
        out_page = os.path.join(energy_dir, "report.html")
        args = ["report", energy_dir, "-o", out_page, "--quiet"]
        if name in ("regress", "compare"):
            args[2:2] = ["--baseline", os.path.join(base_dir, "bloom.json") if name == "regress" else low_path]
        run(*args)
        pages.append((name + "_energy", out_page, charts + ["energy"]))

    for name, page, charts in pages:
        if os.path.exists(page):
            open_page(page, name, charts)
        else:
            check(False, f"{name}: {page} was written")

    # The largest bundled trace (rank 3 of an 8-GPU job, 9450 activities): its page stays small and
    # opens fast. On the cpu backend its ops with more than 256 KB of tensors are left out
    # (--max-tensor-bytes: the whole replay takes over 8 GB and many minutes there); the page
    # still holds every unique kernel and the recorded timeline's 9450 activities.
    big = os.path.join(root, "traces/public/HolisticTraceAnalysis/control.json.gz")
    big_out = os.path.join(tmp, "big")
    run(big, "--mode", "sequential", "--out", big_out, "--html", "--backend", "cpu", "--quiet",
        "--max-tensor-bytes", "256kb", "--no-warm-inputs")
    big_page = os.path.join(big_out, "report.html")
    size = os.path.getsize(big_page)
    check(size < 10 * 1024 * 1024, f"largest trace: report.html is {size / 1e6:.2f} MB (< 10 MB)")
    # How fast it opens is a benchmark's business (tests/bench/report_html_bench.py, < 3 s beyond
    # a blank page): on a loaded machine a bound here failed what a user never sees. Said only.
    blank = blank_seconds()
    took = open_page(big_page, "largest_trace", ["scatter", "tiers", "timeline"])
    print(f"note largest trace: opened in {took:.2f} s headless, {took - blank:.2f} s beyond a blank "
          f"page's {blank:.2f} s (the bound is tests/bench/report_html_bench.py's)")

print("FAILED" if failures else "PASSED")
sys.exit(1 if failures else 0)
