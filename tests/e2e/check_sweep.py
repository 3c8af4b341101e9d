#!/usr/bin/env python3
"""`replay sweep` and `replay fit` end to end on the cpu backend: a small op of a bundled trace
swept over a grid, a killed run resumed (a CSV with rows and a torn last line), --parts 2 as two
processes against one process, the CSV's columns against schemas/sweep_csv.md, a fit, and
`predict --model` naming the modelled kernel.

    check_sweep.py REPLAY SOURCE_DIR"""
import csv, json, os, re, subprocess, sys, tempfile

replay, source = sys.argv[1], sys.argv[2]
trace = os.path.join(source, "traces/h200/bloom_b1.json.gz")
failures = 0

def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    failures += 0 if ok else 1

def run(*args, expect=0):
    r = subprocess.run([replay, *args], capture_output=True, text=True)
    if r.returncode != expect:
        print(f"FAIL replay {' '.join(args)} -> {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
        sys.exit(1)
    return r

def rows(folder):
    found = sorted(f for f in os.listdir(folder) if f.endswith(".csv"))
    out = {}
    for f in found:
        with open(os.path.join(folder, f)) as handle:
            out[f] = list(csv.DictReader(handle))
    return out

def dims_of(table, names):
    return sorted(tuple(r[n] for n in names) for r in table)

work = tempfile.mkdtemp(prefix="replay_sweep_")
config = os.path.join(work, "sweep.yaml")
with open(config, "w") as f:
    f.write("""# the layer norm of BLOOM-560M: rows x hidden
warmup: 1
runs: 2
kernels: {names: ['native_layer_norm']}
dims: ['arg0.d1', 'arg0.d2']
starts: [1, 128]
steps: [2, 128]
ends: [8, 512]
operators: ['mul', 'add']
""")
names = ["arg0.d1", "arg0.d2"]
one = os.path.join(work, "one")
r = run("sweep", "--config", config, trace, "--backend", "cpu", "--out", one)
check("remaining" in r.stderr and "%" in r.stderr, "progress lines give the share done and the time remaining")
tables = rows(one)
check(len(tables) == 1, f"one CSV per GPU and kernel: {list(tables)}")
name, table = next(iter(tables.items()))
check(re.match(r".+_native_layer_norm-[0-9a-f]{8}_fp16\.csv$", name) is not None, f"file name {{gpu}}_{{kernel}}_{{dtype}}: {name}")
check(len(table) == 16 and all(r["status"] == "ok" for r in table), f"16 points (4 x 4) measured: {len(table)}")
check(all(float(r["median_us"]) > 0 and float(r["gb_per_s"]) > 0 and r["energy_j"] == "" for r in table),
      "medians and GB/s filled, energy empty")

# The CSV's columns are the ones schemas/sweep_csv.md documents, in its order.
doc = open(os.path.join(source, "schemas/sweep_csv.md")).read()
documented = re.findall(r"^\| `([a-z0-9_]+)` \|", doc, re.M)
with open(os.path.join(one, name)) as f:
    header = f.readline().strip().split(",")
check(header[len(names):] == documented, f"columns after the dims match schemas/sweep_csv.md: {header[len(names):]} vs {documented}")

# A killed run: keep 5 rows and half of the 6th; the rerun measures only what is missing.
path = os.path.join(one, name)
lines = open(path).read().splitlines(keepends=True)
with open(path, "w") as f:
    f.writelines(lines[:6])
    f.write(lines[6][: len(lines[6]) // 2])
kept = dims_of(list(csv.DictReader(open(path)))[:5], names)
r = run("sweep", "--config", config, trace, "--backend", "cpu", "--out", one)
check("torn last line" in r.stderr, "the rerun says it cut off a torn line")
check("5 already in" in r.stderr, "the rerun skips the 5 complete rows")
after = rows(one)[name]
check(dims_of(after, names) == dims_of(table, names), "after resuming, every point has exactly one row")
check(all(d in dims_of(after, names) for d in kept), "the rows written before the kill are kept")

# --parts 2 as two processes into one folder: the same points as one process.
two = os.path.join(work, "two")
procs = [subprocess.Popen([replay, "sweep", "--config", config, trace, "--backend", "cpu", "--out", two,
                           "--parts", "2", "--part", str(i), "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
         for i in (1, 2)]
for p in procs:
    p.wait()
check(all(p.returncode == 0 for p in procs), "both parts exit 0")
parted = rows(two)
check(list(parted) == [name], f"the parts share one CSV: {list(parted)}")
check(dims_of(parted.get(name, []), names) == dims_of(table, names), "two parts give the same rows as one process")
with open(os.path.join(two, name)) as f:
    check(sum(1 for line in f if line.startswith("arg0.d1,")) == 1, "one header in the shared CSV")

# SLURM_ARRAY_TASK_ID picks the part.
slurm = os.path.join(work, "slurm")
env = dict(os.environ, SLURM_ARRAY_TASK_ID="1", SLURM_ARRAY_TASK_MIN="0", SLURM_ARRAY_TASK_COUNT="4")
r = subprocess.run([replay, "sweep", "--config", config, trace, "--backend", "cpu", "--out", slurm],
                   capture_output=True, text=True, env=env)
check(r.returncode == 0 and "part 2/4 (SLURM_ARRAY_TASK_ID)" in r.stderr, "SLURM_ARRAY_TASK_ID 1 of 0-3 is part 2 of 4")
check(len(rows(slurm).get(name, [])) == 4, "a quarter of the grid")

# Fit, then predict with the model: the layer norm is modelled, by name.
model = os.path.join(work, "model.json")
r = run("fit", one, "-o", model)
m = json.load(open(model))
check(m["schema"] == "replay.timing_model/1" and len(m["kernels"]) == 1, "model.json has the layer norm's model")
k = m["kernels"][0]
check(k["points"] == 16 and k["held_out"]["piecewise_linear"]["median_pct"] is not None, "held-out errors reported")
check(k["masked"] == ["arg0.d1", "arg0.d2", "arg1.d0", "arg2.d0", "arg3.d0"], f"swept fields masked: {k['masked']}")
r = run("predict", trace, "--model", model)
check(re.search(r"modelled by .*native_layer_norm x50", r.stdout) is not None, "predict --model names the modelled kernel")
check("1 of 45 unique kernels timed by the model" in r.stdout, "and how many were modelled")

# Model-level dims: the softmax of the attention over model.batch x model.seq.
model_config = os.path.join(work, "model_dims.json")
json.dump({"warmup": 0, "runs": 2, "kernels": {"names": ["_softmax"]},
           "dims": {"model.batch": [1, 2], "model.seq": [8, 16]}}, open(model_config, "w"))
md = os.path.join(work, "model_dims")
run("sweep", "--config", model_config, trace, "--backend", "cpu", "--out", md, "-q")
soft = next(iter(rows(md).values()))
check([(r["model.batch"], r["model.seq"], r["elements"]) for r in soft] ==
      [("1", "8", "1024"), ("1", "16", "4096"), ("2", "8", "2048"), ("2", "16", "8192")],
      "model.batch/model.seq rewrite the trace: the softmax is [b, 16, s, s]")

# Mistakes are exit 2 with a reason.
r = run("sweep", "--config", config, "--kernels", "nowhere.json", trace, "--out", work, expect=2)
bad = os.path.join(work, "bad.yaml")
open(bad, "w").write("kernels: {names: [no_such_kernel_qq]}\ndims: {m: [1, 2]}\n")
r = run("sweep", "--config", bad, trace, "--backend", "cpu", "--out", work, expect=2)
check("no replayable kernel matches" in r.stderr, "a config that chooses no kernel says so")

print("ok" if not failures else f"{failures} failure(s)")
sys.exit(1 if failures else 0)
