#!/usr/bin/env bash
# Worker isolation ON a GPU machine (issue 19 item 2, issue 16 item 2b). Expects a build from
# scripts/gpu_build.sh (BUILD, default build-gpu; built here when missing). About 3-5 minutes.
#   1. tests: ctest test_worker_isolation (label gpu). In mid-replay of traces/h200/bloom560m_fp16_
#      b1_s5.json.gz the CUDA backend, in its worker, launches a kernel that fails a device-side
#      assert right after one GEMM (sequential with 2 iterations; unique), or one that spins for
#      2 minutes (--kernel-timeout 2). Look for: "3 tests passed" (not skipped), and per test a
#      line "failed as expected: <gemm kernel>: device-side assert triggered ..." (or "ran past
#      its time limit of 2 s ..."); every other kernel's outcome and sample count equal a clean
#      replay's.
#   2. moe: replays traces/h200/mixtral_{prefill,decode}.json.gz in both modes with the defaults
#      (--isolation worker, --kernel-timeout 10). Each must exit 0 and write report.json; the
#      summary printed per run lists the failed kernels with their reasons and the notes about
#      worker restarts. Without faults: no failed kernel and no restart note. With faults (index
#      inputs out of range): the faulting ops named "failed", the rest replayed.
#   3. none: the same replays with --isolation none, for comparison (a device assert there ends
#      the run with exit 2 and no report: the behaviour issue 19 reported).
#   4. overhead: BLOOM sequential --iterations 5, worker vs none: wall seconds and replayed
#      kernel time of each; they should agree within run-to-run noise (a few percent).
#   5. timeline: ctest test_cuda_timeline and test_cuda_timeline_worker (the same tests with the
#      CUDA backend in a worker: phases, untagged records, graphs over the wire), then BLOOM
#      sequential --graph --iterations 3 in both isolations. Look for: both ctests "100% tests
#      passed" (not skipped); the "timed pass: X us of host time per issue" lines of the two
#      (the worker's one-way issue should cost at most a few us more); each replay exit 0 with
#      issue_path graph or graph+direct, no "first uses inside the timed iterations" note, and
#      span ratios of the worker run close to none's.
#
# Usage: scripts/gpu_isolation.sh OUT [steps...]
#   (steps: tests moe none overhead timeline; default all)
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: gpu_isolation.sh OUT [steps...]}"
shift
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(tests moe none overhead timeline)
build="${BUILD:-build-gpu}"
replay="$build/cli/replay"
mkdir -p "$out"
[ -x "$replay" ] || scripts/gpu_build.sh "$build" > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
source scripts/pytorch_nvidia_libs.sh
log() { echo "== $(date +%T) $*" | tee -a "$out/isolation.log"; }

# The failed kernels of a report, with their reasons, and the notes about the worker.
failures() {
  python3 - "$1" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    print(f"   no report: {e!r}")
    sys.exit()
failed = [k for k in r["kernels"] if k["disposition"] == "failed"]
print(f"   {len(failed)} failed of {len(r['kernels'])} unique kernels; replayed "
      f"{r['totals'].get('replayed_kernel_us', 0):.1f} us")
for k in failed:
    print(f"   failed: {k['name'][:60]}: {k['reason'][:300]}")
for n in r["notes"]:
    if "worker" in n or "fault" in n:
        print(f"   note: {n}")
PY
}

moe_runs() {  # $1: isolation
  for trace in traces/h200/mixtral_prefill.json.gz traces/h200/mixtral_decode.json.gz; do
    for mode in sequential unique; do
      name="$(basename "$trace" .json.gz)_${mode}_$1"
      log "$name"
      "$replay" "$trace" --backend cuda --mode "$mode" --isolation "$1" --out "$out/$name" \
        > "$out/$name.log" 2>&1
      echo "   exit $?" | tee -a "$out/isolation.log"
      failures "$out/$name/report.json" | tee -a "$out/isolation.log"
    done
  done
}

for step in "${steps[@]}"; do
  case "$step" in
    tests)
      log "ctest test_worker_isolation"
      ctest --test-dir "$build" -R test_worker_isolation -V > "$out/tests.log" 2>&1
      echo "   exit $?" | tee -a "$out/isolation.log"
      grep -E "failed as expected|replayed kernel time|tests passed|Skipped|FAILED|no CUDA" \
        "$out/tests.log" | tee -a "$out/isolation.log"
      ;;
    moe) moe_runs worker ;;
    none) moe_runs none ;;
    overhead)
      for isolation in worker none; do
        log "overhead: BLOOM sequential x5, --isolation $isolation"
        start=$(date +%s.%N)
        "$replay" traces/h200/bloom560m_fp16_b1_s5.json.gz --backend cuda --mode sequential \
          --iterations 5 --isolation "$isolation" --out "$out/bloom_$isolation" -q \
          > "$out/bloom_$isolation.log" 2>&1
        rc=$?
        end=$(date +%s.%N)
        echo "   exit $rc, $(python3 -c "print(f'{$end - $start:.2f}')") s wall" | tee -a "$out/isolation.log"
        failures "$out/bloom_$isolation/report.json" | tee -a "$out/isolation.log"
      done
      ;;
    timeline)
      log "ctest test_cuda_timeline (in-process, then in a worker)"
      ctest --test-dir "$build" -R '^test_cuda_timeline' -V > "$out/timeline_tests.log" 2>&1
      echo "   exit $?" | tee -a "$out/isolation.log"
      grep -E "timed pass:|tests passed|Skipped|FAILED|no CUDA|first use" \
        "$out/timeline_tests.log" | tee -a "$out/isolation.log"
      for isolation in worker none; do
        log "timeline: BLOOM sequential --graph x3, --isolation $isolation"
        "$replay" traces/h200/bloom560m_fp16_b1_s5.json.gz --backend cuda --mode sequential \
          --graph --iterations 3 --isolation "$isolation" --out "$out/graph_$isolation" -q \
          > "$out/graph_$isolation.log" 2>&1
        echo "   exit $?" | tee -a "$out/isolation.log"
        python3 - "$out/graph_$isolation/report.json" <<'PY' | tee -a "$out/isolation.log"
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    print(f"   no report: {e!r}")
    sys.exit()
t = r.get("timeline") or {}
print(f"   issue_path {t.get('issue_path')}; span ratio per iteration "
      f"{[round(i.get('span_ratio') or 0, 3) for i in t.get('iterations', [])]}; "
      f"first uses {t.get('first_uses')}")
for n in r["notes"]:
    if any(w in n for w in ("worker", "fault", "first uses", "graph", "not captured")):
        print(f"   note: {n[:300]}")
PY
      done
      ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
done
