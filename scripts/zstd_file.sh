#!/usr/bin/env bash
# zstd_file.sh LEVEL IN OUT: compresses IN to OUT with the zstd tool, or, where only libzstd is
# installed (the GPU image), with scripts/zstd_file.c built on the fly under $TMPDIR.
set -euo pipefail
level="$1" in="$2" out="$3"
if command -v zstd >/dev/null; then
  exec zstd -q -f "-$level" -T2 "$in" -o "$out"
fi
helper="${TMPDIR:-/tmp}/replay_zstd_file"
src="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/zstd_file.c"
if [[ ! -x "$helper" || "$src" -nt "$helper" ]]; then
  ${CC:-cc} -O2 -Wall -Wextra "$src" -o "$helper" -lzstd
fi
exec "$helper" "$level" "$in" "$out"
