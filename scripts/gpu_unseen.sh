#!/usr/bin/env bash
# Replay on architectures the engine was not developed on, ON a GPU machine: captures them the
# way users record (scripts/gpu_capture_set.sh: record_shapes, no Execution Trace; eager, a CUDA
# graph, torch.compile), then replays each sequentially (3 iterations) and in unique mode, the
# CUDA-graph decode with --recipes from its eager capture and the compiled model with its
# --inductor-cache. Prints scripts/report_table.py's line per run and the largest reasons for
# what was not replayed; OUT_DIR gets the reports and logs
# (unseen_reports.tar.gz) and the captures, one archive each (unseen_capture_<name>.tar.gz, in
# 15 MiB parts .partNN when larger: the device tool brings back files of 16 MiB at most, and a
# max-autotune Inductor cache is larger).
#
# Usage: scripts/gpu_unseen.sh OUT_DIR [names...]   (gpu_capture_set.sh names; default below)
#   SKIP_BUILD=1 reuses build-gpu; DEADLINE (epoch seconds): no capture or replay starts after it
#   TRACE_DIR=DIR replays DIR/<name>.json.gz (and what goes beside it) instead of capturing
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: gpu_unseen.sh OUT_DIR [names...]}"
shift
names=("$@")
[ ${#names[@]} -eq 0 ] &&
  names=(qwen2_decode qwen2_decode_graph bert_infer t5_train vit_infer resnet_train resnet_compiled)
work="${TMPDIR:-/tmp}/unseen"
mkdir -p "$out" "$work"
build=build-gpu
replay="$build/cli/replay"
source scripts/pytorch_nvidia_libs.sh  # the cuBLAS/CUPTI PyTorch uses
source scripts/replay_inputs.sh        # replay_inputs: --recipes / --inductor-cache by name
late() { [ -n "${DEADLINE:-}" ] && [ "$(date +%s)" -ge "$DEADLINE" ]; }

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  echo "== build"
  CTEST_ARGS="-N" scripts/gpu_build.sh "$build" > "$work/build.log" 2>&1 || { tail -50 "$work/build.log"; exit 1; }
fi

captured=()
if [ -n "${TRACE_DIR:-}" ]; then  # replay captures made before (traces/h200 holds a set)
  captures="$TRACE_DIR"
  captured=("${names[@]}")
else
  echo "== capture"
  for name in "${names[@]}"; do
    late && { echo "DEADLINE: no capture of $name"; break; }
    TMPDIR="$work" scripts/gpu_capture_set.sh "$work/archives" "$name" | grep -v "^-" && captured+=("$name")
  done
  captures="$(ls -d "$work"/captures_* 2>/dev/null | head -1)"
fi

echo "== replay"
reports=()
for name in "${captured[@]}"; do
  trace="$captures/$name.json.gz"
  [ -f "$trace" ] || continue
  replay_inputs "$trace"  # sets `extra`
  for mode in sequential unique; do
    late && { echo "DEADLINE: no $mode replay of $name"; break 2; }
    iterations=()
    [ "$mode" = sequential ] && iterations=(--iterations 3)
    dir="$work/replays/$name.$mode"
    mkdir -p "$(dirname "$dir")"
    start=$(date +%s)
    "$replay" "$trace" "${extra[@]}" --mode "$mode" "${iterations[@]}" --out "$dir" -q > "$dir.log" 2>&1
    echo "$name $mode: exit $? in $(( $(date +%s) - start )) s"
    reports+=("$dir")
  done
done
[ ${#reports[@]} -gt 0 ] && python3 scripts/report_table.py "${reports[@]}"
for dir in "${reports[@]}"; do  # what was not replayed, largest recorded time first
  python3 - "$dir/report.json" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    sys.exit()
why = {}
for k in r["kernels"]:
    if k["disposition"] in ("failed", "skipped", "not_replayable"):
        key = f"{k['disposition']}: {k.get('reason', '')[:150]}"
        why.setdefault(key, [0, 0.0])
        why[key][0] += 1
        why[key][1] += k["recorded_us"]["sum"]
if why:
    print(sys.argv[1].split("/")[-2])
    for key, (n, us) in sorted(why.items(), key=lambda kv: -kv[1][1])[:4]:
        print(f"  {n:4d} kernels {us:10.1f} us  {key}")
PY
done
# Two archives (the device tool brings back files of 16 MiB at most): the reports and logs, and
# the captures with what replays them.
tar -C "$work" -czf "$out/unseen_reports.tar.gz" --exclude=replay_trace.json --exclude=kernels.csv replays
if [ -z "${TRACE_DIR:-}" ]; then
  for name in "${captured[@]}"; do
    archive="$out/unseen_capture_$name.tar.gz"
    (cd "$captures" && ls -d "$name".* 2>/dev/null | grep -v -e '\.inductor$' -e '\.log$' |
       tar -czf "$archive" -T -)
    # Larger than the device tool brings back (a max-autotune cache): in parts, `cat` joins them.
    if [ "$(stat -c %s "$archive")" -gt $((15 * 1024 * 1024)) ]; then
      split -b 15M -d "$archive" "$archive.part" && rm "$archive"
    fi
  done
fi
ls -la "$out"/unseen_*
