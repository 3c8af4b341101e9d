#!/usr/bin/env bash
# Energy A/B ON a GPU machine: unique --energy of a few kernels of one capture in alternating
# processes under two option sets, to see which setting steadies the loops (loop_us, J/launch).
# Usage: scripts/gpu_energy_ab.sh OUT TRACE "IDS" "ARGS_A" "ARGS_B" [PAIRS]
# ARGS words of the form NAME=VALUE are set in the environment of that side's processes.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
out="$1" trace="$2" ids="$3" a="$4" b="$5" pairs="${6:-3}"
build="${BUILD:-build-gpu}"
mkdir -p "$out"
[ -x "$build/cli/replay" ] || scripts/gpu_build.sh "$build" > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
rm -f "$out/build.log"
source scripts/pytorch_nvidia_libs.sh
read -r -a only <<< "$ids"
for i in $(seq 1 "$pairs"); do
  for side in A B; do
    args="$a"; [ "$side" = B ] && args="$b"
    read -r -a words <<< "$args"
    envs=() more=()
    for w in "${words[@]}"; do [[ "$w" =~ ^[A-Z_]+= ]] && envs+=("$w") || more+=("$w"); done
    d="$out/${side}_$i"
    s=$(date +%s)
    timeout "${AB_TIMEOUT:-150}" env "${envs[@]}" "$build/cli/replay" "$trace" --mode unique --backend cuda --energy \
      --energy-window 400 --energy-windows 5 --energy-min-us 0 -q --only "${only[@]}" "${more[@]}" \
      --out "$d" > "$d.txt" 2>&1 || { echo "$side $i failed:"; tail -5 "$d.txt"; }
    echo "$side $i ($args): $(( $(date +%s) - s )) s"
    rm -f "$d/kernels.csv"
  done
done
python3 - "$out" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
rows = {}
for p in sorted(glob.glob(out + "/*_*/report.json")):
    run = os.path.basename(os.path.dirname(p))
    r = json.load(open(p))
    for k in r["kernels"]:
        e = k.get("energy") or {}
        if e.get("loop_us") is None: continue
        rep = k["replayed_us"]["median"]
        rows.setdefault(k["id"], []).append((run, rep, e["loop_us"], e.get("dynamic_uj"), e.get("loop_power_w"), k["name"][:40]))
for kid, rs in rows.items():
    print(kid, rs[0][5])
    for run, rep, loop, dyn, w, _ in rs:
        print(f"  {run:5} replayed {rep:8.2f} loop {loop:8.2f} ({loop/rep:4.2f}x) dyn {dyn:9.0f} uJ  {w:6.1f} W")
PY
tar czf "$out/reports.tgz" -C "$out" $(cd "$out" && ls -d *_*) 2>/dev/null && find "$out" -mindepth 1 -maxdepth 1 ! -name reports.tgz -exec rm -rf {} +
