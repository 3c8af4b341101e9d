#!/usr/bin/env bash
# Issue 15's Nsight Compute check, ON a GPU machine with `ncu` (nsys is not there): the command
# that `replay ncu-cmd` prints profiles exactly the kernel it names, selected through the replay's
# NVTX range (--nvtx). Two kernels of the BLOOM b1 capture of the GPU it runs on
# (traces/h100/bloom_b1.json.gz on an H100, traces/h200/bloom_b1.json.gz otherwise; TRACE to pick
# another): its largest GEMM and its layer norm. A trace of another GPU would not do: cuBLAS picks
# another GEMM kernel there (on an H100 the H200's nvjet_..._8x64_..._TNN runs as ..._64x8_..._TNT),
# so the kernel ncu-cmd names never runs. Everything lands in OUT_DIR; the last lines say PASS or
# FAIL per kernel.
#
# Usage: scripts/gpu_ncu.sh OUT_DIR [steps...]
#   steps: build ncu (default: both, in order; `ncu` alone reuses build-gpu)
# What passes, per kernel: the printed command exits 0, ncu profiled exactly one kernel, and the
# kernel ncu names is the one `replay ncu-cmd` was asked for (its function name, as ncu shows it).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: gpu_ncu.sh OUT_DIR [steps...]}"
shift
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(build ncu)
mkdir -p "$out"
out="$(cd "$out" && pwd)"
build=build-gpu
replay="$PWD/$build/cli/replay"
gpu_name="$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null || true)"
case "$gpu_name" in
  *H100*) trace="${TRACE:-traces/h100/bloom_b1.json.gz}" ;;
  *) trace="${TRACE:-traces/h200/bloom_b1.json.gz}" ;;
esac

# The cuBLAS/CUPTI that PyTorch itself uses (as gpu_validate.sh): cuBLAS then picks the kernels the
# recording picked, and the GEMM that ncu-cmd names is the one that runs.
source scripts/pytorch_nvidia_libs.sh
if ! command -v ncu >/dev/null; then
  for d in /usr/local/cuda/bin /opt/nvidia/nsight-compute/*/; do
    [ -x "$d/ncu" ] && export PATH="$d:$PATH" && break
  done
fi

log() { echo "== $(date +%T) $*" | tee -a "$out/ncu.log"; }

for step in "${steps[@]}"; do
  case "$step" in
    build)
      log build
      CTEST_ARGS="-N" scripts/gpu_build.sh "$build" > "$out/build.log" 2>&1 || { tail -50 "$out/build.log"; exit 1; }
      ;;
    ncu)
      command -v ncu >/dev/null || { log "FAIL no ncu on PATH"; exit 1; }
      log "ncu $(ncu --version | tail -1)"
      "$replay" classify "$trace" -o "$out/kernel_signatures.json" > "$out/classify.log" 2>&1 \
        || { cat "$out/classify.log"; exit 1; }
      # Candidates, best first: GEMMs (tier 2) by recorded time, then layer norms.
      python3 - "$out/kernel_signatures.json" > "$out/candidates.txt" <<'EOF'
import json, sys
kernels = json.load(open(sys.argv[1]))["kernels"]
kernels = [k for k in kernels if k["kind"] == "kernel"]
by_time = lambda k: -k["recorded_us"]["sum"]
for k in sorted((k for k in kernels if k["recipe"].get("tier") == 2), key=by_time):
    print("gemm", k["id"], k["name"])
for k in sorted((k for k in kernels if "layer_norm" in k["name"].lower()), key=by_time):
    print("layer_norm", k["id"], k["name"])
EOF
      for what in gemm layer_norm; do
        done_one=0
        while read -r kind id name; do
          [ "$kind" = "$what" ] || continue
          # ncu-cmd refuses a kernel that is not replayed on its own; the next candidate then.
          if ! cmd="$("$replay" ncu-cmd "$id" "$trace" --out "$out/replay_$id" -o "$out/ncu_$id" 2> "$out/ncu_cmd_$id.err")"; then
            log "$what $id: ncu-cmd refused: $(cat "$out/ncu_cmd_$id.err")"
            continue
          fi
          log "$what $id: $name"
          echo "$cmd" | tee "$out/ncu_cmd_$id.txt"
          bash -c "$cmd" > "$out/ncu_run_$id.log" 2>&1
          rc=$?
          tail -20 "$out/ncu_run_$id.log"
          # The kernels in the report, as ncu names them (--print-kernel-base function: the name
          # that -k matched).
          ncu --import "$out/ncu_$id.ncu-rep" --csv --page raw --print-kernel-base function \
            --metrics gpu__time_duration.sum > "$out/ncu_$id.csv" 2> "$out/ncu_import_$id.err"
          python3 - "$out/ncu_$id.csv" "$cmd" "$rc" "$what" "$id" <<'EOF' | tee -a "$out/ncu.log"
import csv, re, shlex, sys
path, cmd, rc, what, kid = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
rows = [r for r in csv.DictReader(l for l in open(path) if l.startswith('"'))]
rows = [r for r in rows if r.get("Kernel Name") and r.get("ID", "").isdigit()]
names = [r["Kernel Name"] for r in rows]
# The function name that the printed command's -k regex: selects (unescaped).
words = shlex.split(cmd)
base = re.sub(r"\\(.)", r"\1", words[words.index("-k") + 1][len("regex:"):])
ok = rc == 0 and len(rows) == 1 and base in names[0]
ms = [r.get("gpu__time_duration.sum") for r in rows]
print(f"{'PASS' if ok else 'FAIL'} {what} {kid}: command exit {rc}, ncu profiled {len(rows)} "
      f"kernel(s) {names} (gpu__time_duration.sum {ms}), wanted {base!r}")
EOF
          done_one=1
          break
        done < "$out/candidates.txt"
        [ $done_one = 1 ] || log "FAIL $what: no candidate that ncu-cmd accepts"
      done
      ;;
    *) echo "unknown step $step" >&2; exit 2 ;;
  esac
done
