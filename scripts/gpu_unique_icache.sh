#!/usr/bin/env bash
# Run ON a GPU machine: unique mode with the SMs' instruction caches emptied before each timed run
# (--instruction-cache cold, the default) against the old warm runs, on this GPU's captures, the
# CUDA-graph decode (--recipes) and the compiled MLP (--inductor-cache) where TRACE_DIR has them;
# the other GPU's captures replayed here against this GPU's own (--target); and compute-sanitizer
# memcheck on a Mixtral capture. Prints one line per run; the reports land in OUT_DIR.
#
# Usage: scripts/gpu_unique_icache.sh OUT_DIR TRACE_DIR [OTHER_DIR]
#   e.g. scripts/gpu_unique_icache.sh /tmp/icache traces/h200 traces/h100
# Environment: SKIP_BUILD=1 reuses build-gpu; DEADLINE (epoch seconds) no replay starts after it;
#              ICACHES (default "cold warm") the --instruction-cache values to run; WORKLOADS
#              (default "llama_decode mixtral_decode mixtral_prefill gpt2_train bloom_b1").
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: gpu_unique_icache.sh OUT_DIR TRACE_DIR [OTHER_DIR]}"
dir="${2:?usage: gpu_unique_icache.sh OUT_DIR TRACE_DIR [OTHER_DIR]}"
other="${3:-}"
mkdir -p "$out"
replay=build-gpu/cli/replay
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  scripts/gpu_build.sh build-gpu > "$out/build.log" 2>&1
  echo "build and gpu tests: exit $?"
  grep -E "tests passed|FAILED" "$out/build.log" | head -4
fi
build-gpu/tests/test_cuda_backend --gtest_filter='*Instruction*' 2>&1 | grep -E " ns |OK|FAILED"

in_time() { [ -z "${DEADLINE:-}" ] || [ "$(date +%s)" -lt "$DEADLINE" ]; }
figures() {  # report.json label
  python3 - "$1" "$2" <<'PY'
import json, sys
try:
    t = json.load(open(sys.argv[1]))["totals"]
    print(f"{sys.argv[2]:44s} replayed={100 * t['replayed_coverage']:.1f}% total={t['total_error_pct']:+.2f}% median|err|={t['median_abs_error_pct']:.2f}%")
except (OSError, ValueError, KeyError, TypeError) as e:
    print(f"{sys.argv[2]:44s} no report ({e!r})")
PY
}
unique() {  # name trace cache [replay args...]
  local name="$1" trace="$2" cache="$3"
  shift 3
  in_time || { echo "$name $cache: skipped, DEADLINE passed"; return; }
  "$replay" "$trace" "$@" --mode unique --instruction-cache "$cache" --no-sequential-check \
    --out "$out/$name.$cache" -q > "$out/$name.$cache.log" 2>&1
  figures "$out/$name.$cache/report.json" "$name unique $cache"
}

for w in ${WORKLOADS:-llama_decode mixtral_decode mixtral_prefill gpt2_train bloom_b1}; do
  [ -f "$dir/$w.json.gz" ] || continue
  for cache in ${ICACHES:-cold warm}; do unique "$w" "$dir/$w.json.gz" "$cache"; done
done
for cache in ${ICACHES:-cold warm}; do
  [ -f "$dir/llama_decode_graph.json.gz" ] &&
    unique graph_decode "$dir/llama_decode_graph.json.gz" "$cache" --recipes "$dir/llama_decode.json.gz"
  [ -f "$dir/mlp_compiled.inductor.tar.gz" ] &&
    unique mlp_compiled "$dir/mlp_compiled.json.gz" "$cache" --inductor-cache "$dir/mlp_compiled.inductor.tar.gz"
done
if [ -n "$other" ]; then
  for w in llama_decode bloom_b1 mixtral_decode mixtral_prefill gpt2_train; do
    [ -f "$other/$w.json.gz" ] && [ -f "$dir/$w.json.gz" ] && in_time || continue
    "$replay" "$other/$w.json.gz" --target "$dir/$w.json.gz" --mode unique --no-sequential-check \
      --out "$out/cross.$w" -q > "$out/cross.$w.log" 2>&1
    python3 - "$out/cross.$w/target.json" "$other/$w on this GPU vs its own capture" <<'PY'
import json, sys
try:
    t = json.load(open(sys.argv[1]))["totals"]
    print(f"{sys.argv[2]:44s} total={t['total_error_pct']:+.2f}% median|err|={t['median_abs_error_pct']:.2f}% GEMMs named alike {t['gemms_same_name']}/{t['gemms']}")
except (OSError, ValueError, KeyError) as e:
    print(f"{sys.argv[2]:44s} no target comparison ({e!r})")
PY
  done
fi
for w in mixtral_prefill mixtral_decode; do
  [ -f "$dir/$w.json.gz" ] && in_time || continue
  echo "compute-sanitizer memcheck, $w unique:"
  compute-sanitizer --tool memcheck "$replay" "$dir/$w.json.gz" --mode unique --no-sequential-check \
    --isolation none --warmup 1 --runs 3 --out "$out/memcheck.$w" -q 2>&1 | tail -1
  break
done
