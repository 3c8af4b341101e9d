#!/usr/bin/env bash
# Same-board A/B of a change, ON a GPU machine: the working tree ("after", build-gpu) against the
# same tree with PATCH reversed ("before", /tmp/before/build-gpu), replayed alternately.
#
# Usage: scripts/gpu_ab_patch.sh build PATCH      (make PATCH here first: git diff BASE -- DIRS)
#        scripts/gpu_ab_patch.sh run TRACE...
#   ROUNDS (default "1") round names, each a pass over every trace, mode and variant
#   MODES  (default "sequential unique"); sequential runs 3 iterations
# A capture named as scripts/gpu_capture_set.sh names them takes its --recipes or --inductor-cache
# (scripts/replay_inputs.sh). Prints per run: total replayed vs recorded, median per-kernel error,
# the time-weighted |error| and the share replayed.
set -u
cd "$(dirname "$0")/.." || exit 2
source scripts/pytorch_nvidia_libs.sh  # the cuBLAS/CUPTI PyTorch uses
source scripts/replay_inputs.sh        # replay_inputs: --recipes / --inductor-cache by name
if [ "${1:-}" = build ]; then
  patch_file="$(realpath "${2:?usage: gpu_ab_patch.sh build PATCH}")"
  CTEST_ARGS="-N" scripts/gpu_build.sh build-gpu > /tmp/build_after.log 2>&1 ||
    { tail -30 /tmp/build_after.log; exit 1; }
  rm -rf /tmp/before && mkdir -p /tmp/before
  for entry in * .[!.]*; do
    case "$entry" in build | build-gpu | .git | '.[!.]*') continue ;; esac
    cp -r "$entry" /tmp/before/
  done
  (cd /tmp/before && patch -s -R -p1 < "$patch_file") ||
    { echo "$patch_file does not reverse cleanly on this tree: make it from the tree's own history" >&2; exit 1; }
  (cd /tmp/before && CTEST_ARGS="-N" scripts/gpu_build.sh build-gpu > /tmp/build_before.log 2>&1) ||
    { tail -30 /tmp/build_before.log; exit 1; }
  echo "built after (build-gpu) and before (/tmp/before/build-gpu)"
  exit 0
fi
[ "${1:-}" = run ] || { sed -n 2,9p "$0"; exit 2; }
shift
nvidia-smi --query-gpu=name,uuid --format=csv,noheader
figures() {
  python3 - "$1" <<'PY'
import json, sys
try:
    t = json.load(open(sys.argv[1]))["totals"]
except (OSError, ValueError, KeyError) as e:
    print(f"no report ({e!r})"); sys.exit()
print(f"total {t['total_error_pct']:+.2f}% median {t['median_abs_error_pct']:.2f}% "
      f"weighted {t.get('weighted_abs_error_pct', float('nan')):.2f}% "
      f"replayed {100 * t['replayed_coverage']:.1f}%")
PY
}
for round in ${ROUNDS:-1}; do
  for trace in "$@"; do
    name="$(basename "$trace" .json.gz)"
    for mode in ${MODES:-sequential unique}; do
      for variant in after before; do
        replay=build-gpu/cli/replay
        [ "$variant" = before ] && replay=/tmp/before/build-gpu/cli/replay
        replay_inputs "$trace"  # a graph capture's recipes, a compiled one's Inductor cache
        args=("${extra[@]}" --mode "$mode")
        [ "$mode" = sequential ] && args+=(--iterations 3)
        dir="/tmp/ab/$name.$mode.$variant.$round"
        "$replay" "$trace" "${args[@]}" --out "$dir" -q > /dev/null 2>&1
        echo "$name $mode $variant r$round: $(figures "$dir/report.json")"
      done
    done
  done
done
