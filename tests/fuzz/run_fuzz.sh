#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for N seconds.
#
#   tests/fuzz/run_fuzz.sh [SECONDS]        (default 60 per target; plus SECONDS/4 for each
#                                            other splitter instruction set)
#
# Seeds: small slices of the bundled traces (tests/fuzz/make_seeds.py) plus the saved regression
# inputs (tests/fuzz/regressions/<target>/), which are also replayed once up front. The growing
# corpus, the seeds and any crash artifacts live under ${TMPDIR:-/tmp}/replay_fuzz, never in the
# repository. A crash input found here belongs in tests/fuzz/regressions/<target>/ once fixed.
# Exit status: 0 when no target crashed.
set -euo pipefail

secs="${1:-60}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="${TMPDIR:-/tmp}/replay_fuzz"
cxx="${CLANGXX:-clang++}"
mkdir -p "$work/artifacts"

flags=(-std=c++20 -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
       -fno-sanitize-recover=undefined -I"$root/parsers/include" -I"$root/parsers")
parsers=("$root/parsers/source.cpp" "$root/parsers/event_splitter.cpp" "$root/parsers/kineto_parser.cpp"
         "$root"/parsers/kineto/*.cpp "$root/parsers/trace_model.cpp")
libs=(-lsimdjson -lzstd -lz -lpthread)

targets=(fuzz_splitter fuzz_event_parser)
for t in "${targets[@]}"; do
  echo "== building $work/$t"
  "$cxx" "${flags[@]}" "${parsers[@]}" "$here/$t.cpp" -o "$work/$t" "${libs[@]}" &
done
wait

if [[ ! -d "$work/seeds" ]]; then
  python3 "$here/make_seeds.py" --traces "$root/traces" --out "$work/seeds"
fi

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
status=0
# name:isa:seconds. The splitter's block indexer is picked by CPU at start-up; the extra, shorter
# runs force the AVX2 and the portable ones (REPLAY_SPLITTER_ISA) over the same corpus.
quarter=$(( secs / 4 > 10 ? secs / 4 : 10 ))
runs=("fuzz_splitter::$secs" "fuzz_splitter:avx2:$quarter" "fuzz_splitter:generic:$quarter" "fuzz_event_parser::$secs")
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
  dirs=("$work/corpus/$t" "$work/seeds")
  if REPLAY_SPLITTER_ISA="$isa" "$work/$t" -max_total_time="$run_secs" -max_len=16384 -timeout=20 -rss_limit_mb=4096 \
       -dict="$here/kineto.dict" -artifact_prefix="$work/artifacts/$t-" -print_final_stats=1 \
       "${dirs[@]}" > "$log" 2>&1; then
    echo "   no crash"
    grep -E "^stat::number_of_executed_units|^stat::new_units_added|^stat::peak_rss_mb" "$log" | sed 's/^/   /' || true
  else
    echo "   CRASH (log: $log)"
    grep -E "ERROR|SUMMARY|runtime error|fuzz_[a-z_]+: |Test unit written" "$log" | head -10 || true
    status=1
  fi
done
exit $status
