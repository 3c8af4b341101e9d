#!/usr/bin/env bash
# Parse benchmark, one run: builds parse_bench, builds a >= 1 GB Kineto trace out of the bundled
# traces (under $TMPDIR, never in the repository) plus a .zst copy (zstd -3 -T2) and a ~256 MB
# document for Python, then prints throughput (plain, .zst), peak RSS, parser memory and the ratio
# against Python's json.loads, each against its target.
#
#   tests/bench/run_parse_bench.sh [--size BYTES] [--repeat N] [--no-python] [--regen] [--bench EXE]
#
# --bench uses an already built parse_bench (e.g. build/tests/bench/parse_bench); otherwise it is
# compiled here with g++ -O3 (the Release flags) straight from the Kineto parser sources.
# Wall-clock figures need both cores free: the bench prints the load average and the CPU time
# (user+sys) of each parse, so that a run on a busy machine can be recognised.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
size=1.05e9
repeat=3
python=1
regen=0
bench=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --size) size="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    --no-python) python=0; shift ;;
    --regen) regen=1; shift ;;
    --bench) bench="$2"; shift 2 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done

work="${TMPDIR:-/tmp}/replay_parse_bench"
mkdir -p "$work"
case "$work" in "$root"/*) echo "refusing to write the benchmark data inside the repository" >&2; exit 2 ;; esac

if [[ -z "$bench" ]]; then
  bench="$work/parse_bench"
  echo "== building $bench"
  ${CXX:-g++} -std=c++20 -O3 -DNDEBUG -I"$root/parsers/include" -I"$root/parsers" \
    "$root"/parsers/{source,event_splitter,kineto_parser,trace_model}.cpp "$root"/parsers/kineto/*.cpp \
    "$here/parse_bench.cpp" \
    -o "$bench" -lsimdjson -lzstd -lz -lpthread
fi

big="$work/big_${size}.json"
small="$work/big_${size}.prefix256MB.json"
if [[ $regen == 1 || ! -s "$big" || ! -s "$small" || "$here/make_big_trace.py" -nt "$big" ]]; then
  echo "== generating $big (and $small) from $root/traces"
  python3 "$here/make_big_trace.py" --traces "$root/traces" --out "$big" --size "$size" \
    --prefix-out "$small" --prefix-size 256e6
fi
if [[ ! -s "$big.zst" || "$big" -nt "$big.zst" ]]; then
  echo "== compressing $big.zst (zstd -3 -T2)"
  "$root/scripts/zstd_file.sh" 3 "$big" "$big.zst"
fi
ls -l "$big" "$big.zst" "$small"

args=(--plain "$big" --zst "$big.zst" --repeat "$repeat")
[[ $python == 1 ]] && args+=(--python-doc "$small")
echo "== $bench ${args[*]}"
"$bench" "${args[@]}"
