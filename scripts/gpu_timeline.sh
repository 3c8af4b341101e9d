#!/usr/bin/env bash
# Sequential replay's timeline ON a GPU (issue 17): the bundled H200 captures of a Llama decode
# step, BLOOM-560M at batch 1 and a GPT-2 training step, replayed with --pace none (step by step,
# and from CUDA graphs), --pace recorded (step by step, and one graph per step), each for three
# iterations with every iteration in replay_trace.json; then one table per trace of what each
# report.json says: per iteration the span, kernel time, warm-up read time, median and max gap,
# their ratios to the recorded step ("e2s": end to next start, warm-up reads counted as gap), and
# the issue's targets met or not. Builds nothing: build
# first (scripts/gpu_build.sh), or point REPLAY at a binary.
#
# Usage: scripts/gpu_timeline.sh OUT_DIR [trace...]     (traces: decode bloom gpt2, default all)
# Environment: REPLAY     the replay binary (default build-gpu/cli/replay)
#              TRACE_DIR  where the captures are (default traces/h200)
#              VARIANTS   which replays (default "none none-graph recorded recorded-graph", with
#                         replay's default --warm-inputs all; each also as NAME-all, which names
#                         --warm-inputs all outright; recorded-host and recorded-graph-host:
#                         --pace-clock host; recorded-device: --pace-clock device)
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: gpu_timeline.sh OUT_DIR [decode|bloom|gpt2 ...]}"
shift
names=("$@")
[ ${#names[@]} -eq 0 ] && names=(decode bloom gpt2)
replay="${REPLAY:-build-gpu/cli/replay}"
[ -x "$replay" ] || { echo "gpu_timeline.sh: no $replay (build with scripts/gpu_build.sh, or set REPLAY)" >&2; exit 2; }
mkdir -p "$out"

# The cuBLAS/CUPTI that PyTorch itself uses, as scripts/gpu_validate.sh does.
source scripts/pytorch_nvidia_libs.sh

# This GPU's own captures: TRACE_DIR, else traces/h200 (the bundled set). decode, bloom and gpt2
# name the issue's three captures; any other name is TRACE_DIR/NAME.json.gz (a prefill capture,
# to see the stretch of a GPU-bound step).
trace_dir="${TRACE_DIR:-traces/h200}"
declare -A alias=([decode]=llama_decode [bloom]=bloom_b1 [gpt2]=gpt2_train)
trace_of() { echo "$trace_dir/${alias[$1]:-$1}.json.gz"; }
read -r -a variants <<< "${VARIANTS:-none none-graph recorded recorded-graph}"
declare -A variant_args=(
  [none]="--pace none"
  [none-graph]="--pace none --graph"
  [recorded]="--pace recorded"
  [recorded-graph]="--pace recorded --graph"
  # --pace recorded by the host's waits alone (before 2026-11-28; the default, auto, holds each
  # graph step on the GPU's clock too), and with every direct step held as well.
  [recorded-host]="--pace recorded --pace-clock host"
  [recorded-graph-host]="--pace recorded --graph --pace-clock host"
  [recorded-device]="--pace recorded --pace-clock device"
  # The same with --warm-inputs all named (it is the default again since the ninth session).
  [none-all]="--pace none --warm-inputs all"
  [none-graph-all]="--pace none --graph --warm-inputs all"
  [recorded-all]="--pace recorded --warm-inputs all"
  [recorded-graph-all]="--pace recorded --graph --warm-inputs all"
)

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$out/gpu.txt" 2>&1
for name in "${names[@]}"; do
  [ -f "$(trace_of "$name")" ] || { echo "gpu_timeline.sh: no $(trace_of "$name") (names: decode, bloom, gpt2 or a capture in TRACE_DIR)" >&2; exit 2; }
  for variant in "${variants[@]}"; do
    dir="$out/${name}_${variant}"
    echo "== $(date +%T) $name $variant"
    # shellcheck disable=SC2086
    "$replay" "$(trace_of "$name")" --mode sequential --iterations 3 --trace-iterations all \
      ${variant_args[$variant]} --out "$dir" -q > "$dir.txt" 2>&1
    echo "exit $?" >> "$dir.txt"
  done
done

VARIANTS="${variants[*]}" python3 - "$out" "${names[@]}" <<'EOF' | tee "$out/timeline_table.txt"
import json, math, os, sys
out, names = sys.argv[1], sys.argv[2:]
variants = os.environ["VARIANTS"].split()

def num(x, f=".1f"):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, f)

def mark(ok):
    return "ok " if ok else "NO "

for name in names:
    print(f"\n## {name}")
    recorded_printed = False
    for variant in variants:
        path = os.path.join(out, f"{name}_{variant}", "report.json")
        try:
            r = json.load(open(path))
        except (OSError, ValueError) as e:
            print(f"{variant}: no report ({e}); see {out}/{name}_{variant}.txt")
            continue
        t, totals = r["timeline"], r["totals"]
        rec = t["recorded"]
        if not recorded_printed:
            print(f"recorded step: span {num(rec['span_us'])} us, kernels {num(rec['kernel_us'])} us, "
                  f"{rec['activities']} activities, median gap {num(rec['median_gap_us'])} us, "
                  f"max gap {num(rec['max_gap_us'])} us")
            print(f"{'variant':<15}{'it':>3}{'span us':>12}{'kernel us':>11}{'warm us':>10}"
                  f"{'med gap':>9}{'max gap':>10}{'span/rec':>10}{'stretch':>9}{'gap/rec':>9}"
                  f"{'e2s gap':>9}{'e2s/rec':>9}{'host us':>12}{'untied':>7}")
            recorded_printed = True
        for it in t["iterations"]:
            print(f"{variant:<15}{it['iteration']:>3}{num(it['span_us']):>12}{num(it['kernel_us']):>11}"
                  f"{num(it['warm_read_us']):>10}{num(it['median_gap_us'], '.2f'):>9}"
                  f"{num(it['max_gap_us']):>10}{num(it['span_ratio'], '.3f'):>10}{num(it['stretch'], '.3f'):>9}"
                  f"{num(it['median_gap_ratio'], '.3f'):>9}{num(it.get('median_kernel_gap_us'), '.2f'):>9}"
                  f"{num(it.get('kernel_gap_ratio'), '.3f'):>9}{num(it['issue_host_us']):>12}{it['unattributed']:>7}")
        its = t["iterations"]
        checks = []
        if variant.startswith("none"):
            checks.append(f"{mark(all(i['median_gap_us'] is not None and i['median_gap_us'] <= 3 for i in its[1:]))}"
                          "median gap <= 3 us (iterations 2-3)")
            checks.append(f"{mark(all(i['stretch'] is not None and i['stretch'] <= 1.1 for i in its[1:]))}"
                          "span <= 1.1 x (kernels + warm-up reads) (GPU-bound traces)")
        else:
            checks.append(f"{mark(all(i['span_ratio'] is not None and abs(i['span_ratio'] - 1) <= 0.05 for i in its))}"
                          "span within 5% of the recorded one (every iteration)")
            # End to next start: the warm-up reads inside a gap stand for cache state that took
            # no time in the recording, so the paced kernels' own spacing is what must match.
            checks.append(f"{mark(all(i.get('kernel_gap_ratio') is not None and abs(i['kernel_gap_ratio'] - 1) <= 0.10 for i in its))}"
                          "median end-to-next-start gap within 10% of the recorded one (every iteration)")
            checks.append(f"{mark(all(i['median_gap_ratio'] is not None and abs(i['median_gap_ratio'] - 1) <= 0.10 for i in its))}"
                          "median idle gap (warm-up reads out) within 10% of the recorded one (every iteration)")
        first_last = t["first_to_last_max_gap"]
        checks.append(f"{mark(first_last is not None and first_last <= 2)}"
                      f"iteration 1's max gap / iteration 3's = {num(first_last, '.2f')} (<= 2)")
        checks.append(f"{mark(not t['first_uses'])}first uses after the plan was sealed: "
                      f"{'; '.join(t['first_uses']) or 'none'}")
        print(f"  {variant}: issue path {t['issue_path']}; kernel time {num(totals['total_error_pct'], '+.2f')}% "
              f"vs recorded, median |error| {num(totals['median_abs_error_pct'], '.2f')}% per kernel, "
              f"GEMM names {num(totals['gemm_name_match'], '.3f')}, coverage {num(totals['replayed_coverage'], '.4f')}")
        for c in checks:
            print(f"    {c}")
        for note in r["notes"]:
            if note.startswith(("--graph", "timed records", "steps whose records", "first uses", "warm-up reads before")):
                print(f"    note: {note[:300]}")
EOF
