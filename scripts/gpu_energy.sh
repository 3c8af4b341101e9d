#!/usr/bin/env bash
# Energy ON a GPU machine (issue 11's must-show figures), from the H200 captures of BLOOM-560M b1
# and a GPT-2 training step (traces/h200/{bloom_b1,gpt2_train}.json.gz, each with the unprofiled
# step's timing.json beside it):
#   1. five separate processes of `replay --mode unique --energy` on each trace: the first measures
#      every kernel (the sum over kernels needs them all), the other four the kernels of >= 5 us
#      (--energy-min-us 5), which are the ones whose agreement is checked;
#   2. agreement: per kernel of >= 5 us, the largest deviation of a process's median J/launch from
#      the median of the five (must be <= 3%);
#   3. J/FLOP (pJ/FLOP) of the largest GEMMs, per process and across shapes;
#   4. the sum over kernels of count x J/launch vs the measured sequential step, per process: the
#      sum's dynamic energy plus the idle power over the step's duration against the step whole
#      (one idle power on both sides; the W figure is the difference spread over the step), and
#      the same against the real step (timing.json);
#   5. `replay --mode sequential --graph --energy` of each trace (the step captured in one CUDA
#      graph, so that the step looped through the windows is paced by the GPU, not by the host's
#      issue and meter reads: without --graph the H100's looped BLOOM step took 70 ms against a
#      20 ms timed iteration, and its energy was mostly idle power x time): the replayed step's
#      duration beside the real one's, its dynamic energy plus this run's idle power over the real
#      step's duration vs the real step whole (the capture's own idle probe differs by watts:
#      dynamic vs dynamic across two probes is printed too, but is no measure), and dynamic energy
#      per ms of GPU-busy (kernel) time of each; replay_trace.json with the board's power track;
#   6. `compare --energy` of run 1 against runs 2-5 (fresh runs: nothing may be flagged), of runs 1
#      and 2 pooled against runs 3-5 (a one-process baseline carries its process's offset), and a
#      `regress --energy` of BLOOM against run 1's report with its largest kernel's energy lowered
#      by 10% (that kernel must be flagged, nothing else).
# The probe's counter and power periods are printed from every report. Expects a build from
# scripts/gpu_build.sh (BUILD, default build-gpu; built here with the offline prefix when missing).
# About 15-18 minutes on an H100 or H200 once built (ENERGY_WINDOW_MS x ENERGY_WINDOWS per kernel:
# 2 s; about 290 kernel measurements in all).
#
# Usage: scripts/gpu_energy.sh OUT
# Environment: ENERGY_WINDOW_MS (default 400: four counter periods of the H100/H200, the fewest a
#              window may span: one period's energy alternated by up to 2x from the next),
#              ENERGY_WINDOWS (default 5: the rank test of compare/regress needs >= 5 per side),
#              ENERGY_TRACES (default traces/h200: the folder of bloom_b1 and gpt2_train),
#              ENERGY_WORKLOADS (default "bloom_b1 gpt2_train": the captures to measure),
#              ENERGY_DEADLINE (epoch seconds: each replay gets what is left before it as its
#              timeout and is skipped with under a minute left, so that a device call limited to
#              10 minutes still ends with its summary)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
out="${1:?usage: gpu_energy.sh OUT}"
build="${BUILD:-build-gpu}"
replay="$build/cli/replay"
window="${ENERGY_WINDOW_MS:-400}"
windows="${ENERGY_WINDOWS:-5}"
# The captures to measure (bloom_b1 and gpt2_train, each with its timing.json): those of the GPU
# this runs on, for the step against the real one (out-captures/captures_h100 on an H100).
traces="${ENERGY_TRACES:-traces/h200}"
mkdir -p "$out"
log() { echo "== $(date +%T) $*" | tee -a "$out/energy.log"; }
if [ ! -x "$replay" ]; then
  log build
  scripts/gpu_build.sh "$build" > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
fi
# The cuBLAS/CUPTI that PyTorch uses, as scripts/gpu_validate.sh does.
source scripts/pytorch_nvidia_libs.sh
# ENERGY_ARGS: more replay options for every run (e.g. --warm-inputs all).
read -r -a more <<< "${ENERGY_ARGS:-}"
energy=(--backend cuda --energy --energy-window "$window" --energy-windows "$windows" -q "${more[@]}")

# ENERGY_RUNS picks the unique processes to run now and ENERGY_PHASES the steps (unique,
# sequential, compare): a device call limited to 10 minutes can run the script in parts into the
# same OUT, the summary reading whatever is there.
phases="${ENERGY_PHASES:-unique,sequential,compare}"
has() { [[ ",$phases," == *",$1,"* ]]; }
read -r -a workloads <<< "${ENERGY_WORKLOADS:-bloom_b1 gpt2_train}"
# time_left: the seconds a replay may take before ENERGY_DEADLINE (1 day without one); fails
# with under a minute left.
time_left() {
  local left=86400
  [ -n "${ENERGY_DEADLINE:-}" ] && left=$(( ENERGY_DEADLINE - $(date +%s) ))
  if [ "$left" -lt 60 ]; then log "skipped: ${left} s left before ENERGY_DEADLINE"; return 1; fi
  echo "$left"
}
has unique && for i in ${ENERGY_RUNS:-1 2 3 4 5}; do
  min=5
  [ "$i" = 1 ] && min=0
  for t in "${workloads[@]}"; do
    left=$(time_left) || continue
    log "unique --energy run $i of $t (--energy-min-us $min)"
    timeout "$left" "$replay" "$traces/$t.json.gz" --mode unique "${energy[@]}" --energy-min-us "$min" \
      --out "$out/unique_${t}_$i" > "$out/unique_${t}_$i.txt" 2>&1 || { echo "run failed:"; tail -20 "$out/unique_${t}_$i.txt"; }
  done
done
has sequential && for t in "${workloads[@]}"; do
  left=$(time_left) || continue
  log "sequential --graph --energy of $t"
  timeout "$left" "$replay" "$traces/$t.json.gz" --mode sequential --graph --iterations 20 "${energy[@]}" \
    --out "$out/sequential_$t" > "$out/sequential_$t.txt" 2>&1 || { echo "run failed:"; tail -20 "$out/sequential_$t.txt"; }
done

if has compare; then
log "fresh runs against run 1 (compare --energy)"
for t in "${workloads[@]}"; do
  for i in 2 3 4 5; do
    [ -f "$out/unique_${t}_$i/report.json" ] || continue
    "$replay" compare --energy "$out/unique_${t}_1/report.json" "$out/unique_${t}_$i/report.json" \
      --out "$out/compare_${t}_$i" > "$out/compare_${t}_$i.md" 2>&1
    echo "compare $t run 1 vs run $i: exit $?" | tee -a "$out/energy.log"
  done
  # A baseline of two processes (runs 1 and 2, pooled) against the other fresh ones: one
  # process's windows spread less than processes do.
  for i in 3 4 5; do
    [ -f "$out/unique_${t}_2/report.json" ] && [ -f "$out/unique_${t}_$i/report.json" ] || continue
    "$replay" compare --energy "$out/unique_${t}_1/report.json" "$out/unique_${t}_2/report.json" \
      "$out/unique_${t}_$i/report.json" --out "$out/compare_pooled_${t}_$i" \
      > "$out/compare_pooled_${t}_$i.md" 2>&1
    echo "compare $t runs 1+2 vs run $i: exit $?" | tee -a "$out/energy.log"
  done
done

if [[ " ${workloads[*]} " == *" bloom_b1 "* && -f "$out/unique_bloom_b1_1/report.json" ]] && left=$(time_left); then
log "doctored baseline: run 1 of bloom_b1 with the energy of its largest kernel of >= 5 us lowered by 10%"
python3 - "$out/unique_bloom_b1_1/report.json" "$out/doctored_bloom_b1.json" <<'PY' | tee "$out/doctored_id.txt"
import json, sys
r = json.load(open(sys.argv[1]))
# Of the kernels of >= 5 us: the regress below measures those only (--energy-min-us 5).
measured = [k for k in r["kernels"]
            if k.get("energy", {}).get("samples_uj") and k["recorded_us"]["median"] >= 5]
k = max(measured, key=lambda k: k["count"] * k["energy"]["uj"]["median"])
k["energy"]["samples_uj"] = [x * 0.9 for x in k["energy"]["samples_uj"]]
json.dump(r, open(sys.argv[2], "w"), indent=1)
print(k["id"], k["name"][:80])
PY
timeout "$left" "$replay" regress --baseline "$out/doctored_bloom_b1.json" "$traces/bloom_b1.json.gz" \
  --mode unique "${energy[@]}" --energy-min-us 5 --no-sequential-check --out "$out/regress_doctored" \
  > "$out/regress_doctored.md" 2>&1
echo "doctored regress: exit $? (1 expected)" | tee -a "$out/energy.log"
# The regress measured a fresh process too: against the undoctored run 1 it is the fifth fresh
# run, which must flag nothing.
fresh=$(ls "$out"/regress_doctored/*/report.json 2>/dev/null | head -1)
if [ -n "$fresh" ]; then
  "$replay" compare --energy "$out/unique_bloom_b1_1/report.json" "$fresh" \
    --out "$out/compare_bloom_b1_6" > "$out/compare_bloom_b1_6.md" 2>&1
  echo "compare bloom_b1 run 1 vs the regress's fresh run: exit $?" | tee -a "$out/energy.log"
fi
fi
fi

log summary
python3 - "$out" <<'PY' | tee "$out/summary.txt"
import glob, json, os, statistics, sys
out = sys.argv[1]
def load(p):
    try:
        return json.load(open(p))
    except (OSError, ValueError):
        return None
def pct(a, b):
    return None if a is None or not b else (a - b) / b * 100
def fmt(x, f=".2f"):
    return "n/a" if x is None else format(x, f)
print("probe (every report): counter period ms / jitter ms / power period ms / idle W")
for p in sorted(glob.glob(f"{out}/*/report.json")):
    r = load(p)
    e = (r or {}).get("energy")
    if not e:
        continue
    if not e["available"]:
        print(f"  {os.path.basename(os.path.dirname(p))}: energy n/a: {e['why']}")
        continue
    print(f"  {os.path.basename(os.path.dirname(p)):24s} {fmt(e['counter_period_ms'])} / {fmt(e['counter_jitter_ms'])}"
          f" / {fmt(e['power_period_ms'])} / {fmt(e['idle_power_w'], '.1f')}  ({r['environment'].get('gpu')})")
for t in ("bloom_b1", "gpt2_train"):
    runs = [load(f"{out}/unique_{t}_{i}/report.json") for i in range(1, 10)]
    runs = [r for r in runs if r]
    print(f"\n{t}: {len(runs)} unique --energy processes")
    if not runs:
        continue
    def medians(group):
        per = {}
        for r in group:
            for k in r["kernels"]:
                e = k.get("energy", {})
                if e.get("samples_uj") and k["recorded_us"]["median"] >= 5:
                    per.setdefault(k["id"], (k, []))[1].append(e["uj"]["median"])
        return per
    # Agreement per board (boards of one model differ by several percent: two H200s measured
    # GPT-2's kernels 6 % apart in the median), then over all processes where there are several
    # boards. The issue asks for five processes; fewer are said.
    def agreement(group, label):
        worst, bad = [], 0
        for kid, (k, meds) in medians(group).items():
            if len(meds) < len(group):
                continue
            m = statistics.median(meds)
            dev = max(abs(x - m) / m * 100 for x in meds)
            worst.append((dev, k["name"][:60], m))
            bad += dev > 3
        worst.sort(reverse=True)
        print(f"  agreement of kernels >= 5 us over {len(group)} processes {label}: {len(worst)} kernels, {bad} beyond 3%"
              f"{' (median deviation %.2f%%)' % statistics.median(d for d, _, _ in worst) if worst else ''}"
              f"{'' if len(group) >= 5 else ' (fewer than five processes)'}")
        return worst
    boards = {}
    for r in runs:
        boards.setdefault(r["environment"].get("gpu_uuid") or "?", []).append(r)
    worst = []
    for uuid, group in boards.items():
        if len(group) >= 2:
            worst = agreement(group, f"on board {uuid[:12]}") or worst
    if len(boards) > 1:
        worst = agreement(runs, f"on {len(boards)} boards")
    per = medians(runs)
    within = []
    for r in runs:
        for k in r["kernels"]:
            s = k.get("energy", {}).get("samples_uj") or []
            if len(s) >= 2 and k["recorded_us"]["median"] >= 5 and statistics.median(s) > 0:
                m = statistics.median(s)
                within.append(1.4826 * statistics.median(abs(x - m) for x in s) / m * 100)
    if within:
        print(f"  spread of one process's windows (robust, % of the median): median {statistics.median(within):.2f}%, "
              f"max {max(within):.2f}% ({runs[0]['energy'].get('window_updates')} counter periods a window)")
    for dev, name, m in worst[:5]:
        print(f"    worst {dev:5.2f}%  {m:10.1f} uJ  {name}")
    # What moved with the misses: each process's deviation from the kernel's median beside its
    # windows' SM clock and temperature (reports from 2026-11-25 on carry them).
    pairs = []
    for kid, (k, meds) in per.items():
        if len(meds) < min(5, len(runs)):
            continue
        m = statistics.median(meds)
        for r in runs:
            for q in r["kernels"]:
                e = q.get("energy", {})
                if q["id"] == kid and e.get("samples_uj"):
                    pairs.append(((e["uj"]["median"] / m - 1) * 100, e.get("sm_clock_mhz"),
                                  e.get("temperature_c"), q["name"][:40]))
    def corr(xs, ys):
        if len(xs) < 3 or statistics.pstdev(xs) == 0 or statistics.pstdev(ys) == 0:
            return float("nan")
        mx, my = statistics.mean(xs), statistics.mean(ys)
        return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / len(xs) / statistics.pstdev(xs) / statistics.pstdev(ys)
    for i, what in ((1, "SM clock"), (2, "temperature")):
        got = [(q[0], q[i]) for q in pairs if q[i] is not None]
        if got:
            print(f"  deviation vs the windows' {what}: r = {corr([g[0] for g in got], [g[1] for g in got]):+.2f} "
                  f"over {len(got)} kernel-processes (range {min(g[1] for g in got):.0f}-{max(g[1] for g in got):.0f})")
    for d, mhz, c, name in sorted(pairs, key=lambda p: -abs(p[0]))[:8]:
        print(f"    {d:+6.2f}%  {fmt(mhz, '.0f')} MHz  {fmt(c, '.1f')} C  {name}")
    gemms = {}
    for r in runs:
        for k in r["kernels"]:
            e = k.get("energy", {})
            if k.get("tier") == 2 and e.get("pj_per_flop") is not None and e.get("flops"):
                gemms.setdefault(k["id"], (k, e["flops"], []))[2].append(e["pj_per_flop"])
    top = sorted(gemms.values(), key=lambda g: -g[1])[:6]
    if top:
        print("  largest GEMMs: GFLOP, pJ/FLOP median over processes (spread max-min %)")
        meds = []
        for k, flops, v in top:
            m = statistics.median(v)
            meds.append(m)
            print(f"    {flops/1e9:8.3f}  {m:7.3f}  ({(max(v)-min(v))/m*100:4.1f}%)  {k['name'][:60]}")
        print(f"  across these shapes: pJ/FLOP {min(meds):.3f} to {max(meds):.3f} "
              f"({(max(meds)-min(meds))/statistics.median(meds)*100:.1f}% of the median)")
    # The sum over kernels against a step whole, the sum's dynamic energy put on the step's
    # footing (plus this process's idle power over the step's duration): one idle power on both
    # sides. Its W figure spreads the difference over the step: the above-idle power of the step's
    # gaps between kernels (the sum's launches ran back to back) and the idle probe's drift.
    print("  sum of count x J/launch (dynamic) + idle x step duration vs the step whole, per process:")
    at_pass, at_model = [], []
    for i, r in enumerate(runs, 1):
        e = r["energy"]
        if e.get("min_us"):  # a sum over the longer kernels only: no estimate of the step
            print(f"    run {i}: kernels of >= {e['min_us']:g} us only (coverage {fmt(e['coverage'], '.3f')}): no sum")
            continue
        at_pass.append(e.get("predicted_at_step_vs_step_pct"))
        at_model.append(e.get("predicted_at_model_vs_model_pct"))
        print(f"    run {i}: sum {fmt(e['predicted_mj'])} mJ ({fmt(e['predicted_dynamic_mj'])} dynamic, coverage "
              f"{fmt(e['coverage'], '.3f')}); sequential pass step {fmt(e['step']['mj'])} mJ over "
              f"{fmt(e['step']['step_us'], '.0f')} us ({fmt(e['step']['dynamic_mj'])} dynamic, dynamic sum vs step "
              f"{fmt(e['predicted_vs_step_pct'], '+.2f')}%): at the pass step's duration "
              f"{fmt(e.get('predicted_at_step_vs_step_pct'), '+.2f')}% ({fmt(e.get('predicted_at_step_w'), '+.2f')} W); "
              f"at the real step's {fmt(e.get('predicted_at_model_vs_model_pct'), '+.2f')}%")
    def median_of(xs):
        xs = [x for x in xs if x is not None]
        return statistics.median(xs) if xs else None
    print(f"    median over the processes that measured every kernel: vs the pass step {fmt(median_of(at_pass), '+.2f')}% (must be within 5%), "
          f"vs the real step {fmt(median_of(at_model), '+.2f')}%")
    s = load(f"{out}/sequential_{t}/report.json")
    if s and s.get("energy"):
        e = s["energy"]
        st, mo, tot = e["step"], e["model"], s["totals"]
        print(f"  sequential --energy (issue path {s['options'].get('issue_path')}): looped step "
              f"{fmt(st['step_us'], '.0f')} us (timed iteration span {fmt(tot.get('replayed_span_us'), '.0f')} us) "
              f"vs real step {fmt(mo['step_us'], '.0f')} us ({mo.get('gpu') or '?'}): duration "
              f"{fmt(pct(st['step_us'], mo['step_us']), '+.1f')}%")
        print(f"    warm-up reads looped alone: {fmt(st.get('warm_read_mj'))} mJ dynamic per step, left out of the step's energy")
        print(f"    whole: {fmt(st['mj'])} mJ vs {fmt(mo['mj'])} mJ ({fmt(e['step_vs_model_pct'], '+.2f')}%: "
              f"idle power x duration, comparable only when the durations are)")
        print(f"    replayed dynamic + idle x real step: {fmt(e.get('step_at_model_mj'))} mJ vs {fmt(mo['mj'])} mJ "
              f"({fmt(e.get('step_at_model_vs_model_pct'), '+.2f')}%, {fmt(e.get('step_at_model_w'), '+.2f')} W over the "
              f"real step; must be within 10% on the same GPU)")
        print(f"    dynamic with this run's idle {fmt(e['idle_power_w'], '.1f')} W: {fmt(st['dynamic_mj'])} mJ vs "
              f"{fmt(e.get('model_dynamic_same_idle_mj'))} mJ ({fmt(e.get('step_vs_model_dynamic_same_idle_pct'), '+.2f')}%); "
              f"with the capture's idle {fmt(mo['idle_power_w'], '.1f')} W: {fmt(mo['dynamic_mj'])} mJ "
              f"({fmt(e['step_vs_model_dynamic_pct'], '+.2f')}%, two idle probes apart)")
        # Dynamic energy (this run's idle power on both) per ms of GPU-busy time: the replayed
        # iteration's kernel time, and the recorded step's (the profiled capture of the real
        # step) for the real one. Both include their gaps' above-idle energy.
        def per_busy(mj, us):
            return None if mj is None or not us else mj / (us / 1000.0)
        a, b = per_busy(st['dynamic_mj'], tot.get('replayed_kernel_us')), per_busy(e.get('model_dynamic_same_idle_mj'), tot.get('recorded_kernel_us'))
        print(f"    dynamic per GPU-busy ms: {fmt(a, '.3f')} mJ/ms (replayed kernels {fmt(tot.get('replayed_kernel_us'), '.0f')} us) "
              f"vs {fmt(b, '.3f')} mJ/ms (recorded kernels {fmt(tot.get('recorded_kernel_us'), '.0f')} us): "
              f"{fmt(pct(a, b), '+.2f')}%")
        trace = load(f"{out}/sequential_{t}/replay_trace.json")
        n = sum(1 for ev in (trace or {}).get("traceEvents", []) if ev.get("ph") == "C")
        print(f"  replay_trace.json: {n} power samples on the counter track")
    for i in range(2, 7):
        g = load(f"{out}/compare_{t}_{i}/regression.json")
        if g:
            print(f"  compare --energy run 1 vs {i}: {g['summary']['regressed']} regressed, "
                  f"{g['summary']['improved']} improved, {g['summary']['unchanged']} unchanged")
    for i in range(3, 6):
        g = load(f"{out}/compare_pooled_{t}_{i}/regression.json")
        if g:
            print(f"  compare --energy runs 1+2 (pooled) vs {i}: {g['summary']['regressed']} regressed, "
                  f"{g['summary']['improved']} improved, {g['summary']['unchanged']} unchanged")
g = load(glob.glob(f"{out}/regress_doctored/*/regression.json")[0]) if glob.glob(f"{out}/regress_doctored/*/regression.json") else None
doctored = open(f"{out}/doctored_id.txt").read().split()[0] if os.path.exists(f"{out}/doctored_id.txt") else "?"
if g:
    flagged = [k["id"] for k in g["kernels"] if k["verdict"] == "regressed"]
    print(f"\ndoctored baseline (kernel {doctored} lowered 10%): regressed {flagged} "
          f"-> {'OK' if flagged == [doctored] else 'NOT as expected'}")
PY
