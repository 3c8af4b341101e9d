#!/usr/bin/env bash
# Replay fidelity of traces recorded WITHOUT an Execution Trace, ON a GPU machine: with the
# dataflow inferred from the Kineto trace (the default) and with --no-dataflow (buffers reused by
# size and role, as before the inference), sequential (3 iterations) and unique. Prints, per trace
# and run, the dataflow used, the share of kernel time replayed, total replayed vs recorded and
# the median per-kernel error; everything else lands in OUT_DIR.
#
# Usage: scripts/gpu_fidelity.sh OUT_DIR [trace...]
#   traces default to traces/h200/{llama_decode,bloom_b1,gpt2_train}.json.gz
#   SKIP_BUILD=1 reuses build-gpu (scripts/gpu_build.sh builds it otherwise)
#   DATAFLOWS    (default "inferred no-dataflow") which dataflow variants run
#   MODES        (default "sequential unique")
#   ICACHES      (default "cold") unique mode's --instruction-cache values, each a run of its own
#   DEADLINE     (epoch seconds) no replay starts after it, so a time-limited call still ends
#                with its summary
#   EXTRA_ARGS   more replay arguments for every run
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: gpu_fidelity.sh OUT_DIR [trace...]}"
shift
traces=("$@")
[ ${#traces[@]} -eq 0 ] &&
  traces=(traces/h200/llama_decode.json.gz traces/h200/bloom_b1.json.gz traces/h200/gpt2_train.json.gz)
mkdir -p "$out"
build=build-gpu
replay="$build/cli/replay"

source scripts/pytorch_nvidia_libs.sh  # the cuBLAS/CUPTI PyTorch uses

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  echo "== build"
  CTEST_ARGS="-N" scripts/gpu_build.sh "$build" > "$out/build.log" 2>&1 || { tail -50 "$out/build.log"; exit 1; }
fi

figures() {  # report.json -> one line
  python3 - "$1" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    print(f"no report ({e!r})"); sys.exit()
t = r["totals"]
fmt = lambda v, f: "n/a" if v is None else format(v, f)
print(f"dataflow={r['inputs'].get('dataflow', '?'):18s} replayed={fmt(100 * t['replayed_coverage'], '.1f')}% "
      f"total={fmt(t['total_error_pct'], '+.1f')}% median|err|={fmt(t['median_abs_error_pct'], '.1f')}%")
PY
}

printf "%-34s %-24s %s\n" trace run figures | tee "$out/summary.txt"
for trace in "${traces[@]}"; do
  name="$(basename "$trace" .json.gz)"
  "$replay" inspect "$trace" > "$out/$name.inspect.txt" 2>&1
  for variant in ${DATAFLOWS:-inferred no-dataflow}; do
    extra=()
    [ "$variant" = no-dataflow ] && extra=(--no-dataflow)
    for mode in ${MODES:-sequential unique}; do
      caches=(-)
      [ "$mode" = unique ] && read -r -a caches <<< "${ICACHES:-cold}"
      for cache in "${caches[@]}"; do
        if [ -n "${DEADLINE:-}" ] && [ "$(date +%s)" -ge "$DEADLINE" ]; then
          echo "DEADLINE passed: stopping before $name $variant $mode" | tee -a "$out/summary.txt"
          break 4
        fi
        run="$variant $mode"
        dir="$out/$name.$variant.$mode"
        args=(--mode "$mode")
        [ "$mode" = sequential ] && args+=(--iterations 3)
        if [ "$cache" != - ]; then
          args+=(--instruction-cache "$cache")
          run+=" $cache"
          dir+=".$cache"
        fi
        # shellcheck disable=SC2086
        "$replay" "$trace" "${extra[@]}" "${args[@]}" ${EXTRA_ARGS:-} --out "$dir" -q > "$dir.log" 2>&1
        printf "%-34s %-24s %s\n" "$name" "$run" "$(figures "$dir/report.json")" | tee -a "$out/summary.txt"
      done
    done
  done
done
echo "summary: $out/summary.txt; inspect (dataflow line, tensor lists): $out/*.inspect.txt"
