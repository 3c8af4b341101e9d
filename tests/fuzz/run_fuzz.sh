#!/usr/bin/env bash
# Builds libFuzzer targets with clang (ASan + UBSan) and runs each for a number of seconds.
#
#   tests/fuzz/run_fuzz.sh [SECONDS] [TARGET...]
#
# SECONDS: per target (default 60); fuzz_splitter also gets SECONDS/4 (at least 10) for each other
# splitter instruction set. TARGET: any of fuzz_splitter, fuzz_event_parser (the Kineto parser),
# fuzz_report_reader (report.json), fuzz_signature_reader (kernel_signatures.json); all of them
# when none is named.
#
# Seeds: small slices of the bundled traces (trace targets) or of the pinned outputs in
# tests/golden/data (reader targets), made by tests/fuzz/make_seeds.py, plus the saved regression
# inputs (tests/fuzz/regressions/<target>/), which are also replayed once up front. The growing
# corpus, the seeds and any crash artifacts live under ${TMPDIR:-/tmp}/replay_fuzz, never in the
# repository. A crash input found here belongs in tests/fuzz/regressions/<target>/ once fixed.
# KEEP_GOING=1 runs each target in libFuzzer's fork mode with -ignore_crashes=1: it goes on after
# a crash for its whole time and keeps every crash input (for a target with a known, unfixed bug).
# Exit status: 0 when no target crashed.
set -euo pipefail

secs="${1:-60}"
shift || true
all=(fuzz_splitter fuzz_event_parser fuzz_report_reader fuzz_signature_reader)
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=("${all[@]}")
for t in "${targets[@]}"; do
  [[ " ${all[*]} " == *" $t "* ]] || { echo "unknown target: $t (one of: ${all[*]})" >&2; exit 2; }
done

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="${TMPDIR:-/tmp}/replay_fuzz"
cxx="${CLANGXX:-clang++}"
mkdir -p "$work/artifacts"

flags=(-std=c++20 -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
       -fno-sanitize-recover=undefined -I"$root/parsers/include" -I"$root/parsers"
       -I"$root/engine/include")
parsers=("$root"/parsers/*.cpp "$root"/parsers/kineto/*.cpp)
# Every engine source but the sweep config reader (yaml-cpp; no reader under fuzz uses it).
engine=()
for f in "$root"/engine/*.cpp; do [[ $f == */sweep_config.cpp ]] || engine+=("$f"); done
libs=(-lsimdjson -lzstd -lz -lpthread)

for t in "${targets[@]}"; do
  echo "== building $work/$t"
  sources=("${parsers[@]}")
  [[ $t == *_reader ]] && sources+=("${engine[@]}")
  "$cxx" "${flags[@]}" "${sources[@]}" "$here/$t.cpp" -o "$work/$t" "${libs[@]}" &
done
wait

# Seeds per kind of input: traces (with the options byte), reports, signature files.
seeds_of() {
  case "$1" in
    fuzz_report_reader) echo "$work/seeds_reports" ;;
    fuzz_signature_reader) echo "$work/seeds_signatures" ;;
    *) echo "$work/seeds" ;;
  esac
}
[[ -d "$work/seeds" ]] || python3 "$here/make_seeds.py" --traces "$root/traces" --out "$work/seeds"
[[ -d "$work/seeds_reports" && -d "$work/seeds_signatures" ]] ||
  python3 "$here/make_seeds.py" --golden "$root/tests/golden/data" \
    --reports-out "$work/seeds_reports" --signatures-out "$work/seeds_signatures"

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
status=0
# name:isa:seconds. The splitter's block indexer is picked by CPU at start-up; the extra, shorter
# runs force the AVX2 and the portable ones (REPLAY_SPLITTER_ISA) over the same corpus.
quarter=$(( secs / 4 > 10 ? secs / 4 : 10 ))
runs=()
for t in "${targets[@]}"; do
  runs+=("$t::$secs")
  [[ $t == fuzz_splitter ]] && runs+=("$t:avx2:$quarter" "$t:generic:$quarter")
done
for run in "${runs[@]}"; do
  IFS=: read -r t isa run_secs <<< "$run"
  label="$t${isa:+ (REPLAY_SPLITTER_ISA=$isa)}"
  log="$work/$t${isa:+.$isa}.log"
  regress="$here/regressions/$t"
  mkdir -p "$work/corpus/$t"
  if [[ -z "$isa" ]] && compgen -G "$regress/*" > /dev/null; then
    echo "== $t: replaying $(ls "$regress" | wc -l) regression input(s)"
    if ! "$work/$t" "$regress"/* > "$work/$t.regressions.log" 2>&1; then
      echo "   FAILED (log: $work/$t.regressions.log)"; tail -20 "$work/$t.regressions.log" || true; status=1
    fi
  fi
  echo "== $label: fuzzing for ${run_secs}s"
  # The regression inputs join the corpus as copies: libFuzzer writes new units into the first
  # directory only, but the repository's folder is never handed to it.
  compgen -G "$regress/*" > /dev/null && cp "$regress"/* "$work/corpus/$t/"
  dict=()
  [[ $t == *_reader ]] || dict=(-dict="$here/kineto.dict")
  [[ "${KEEP_GOING:-0}" == 1 ]] && dict+=(-fork=1 -ignore_crashes=1)
  if REPLAY_SPLITTER_ISA="$isa" "$work/$t" -max_total_time="$run_secs" -max_len=16384 -timeout=20 -rss_limit_mb=4096 \
       "${dict[@]}" -artifact_prefix="$work/artifacts/$t-" -print_final_stats=1 \
       "$work/corpus/$t" "$(seeds_of "$t")" > "$log" 2>&1; then
    if grep -q "crash-" "$log"; then
      echo "   CRASHES (kept going; log: $log)"; grep -E "runtime error|ERROR: |Test unit written|crash-" "$log" | sort -u | head -10 || true; status=1
    else
      echo "   no crash"
    fi
    grep -E "^stat::number_of_executed_units|^stat::new_units_added|^stat::peak_rss_mb" "$log" | sed 's/^/   /' || true
    grep -E "^#[0-9]+: cov" "$log" | tail -1 | sed 's/^/   /' || true  # KEEP_GOING's progress
  else
    echo "   CRASH (log: $log)"
    grep -E "ERROR|SUMMARY|runtime error|fuzz_[a-z_]+: |Test unit written" "$log" | head -10 || true
    status=1
  fi
done
exit $status
