#!/usr/bin/env bash
# Builds an offline dependency prefix for machines without network (the GPU nodes): downloads
# the Debian packages of the build dependencies a CUDA/PyTorch image usually lacks, unpacks them
# and copies their headers, libraries and CMake configs into DEST (default .deps/prefix, which
# git ignores). Debian's multiarch layout (lib/x86_64-linux-gnu) is kept, so the packages'
# relocatable CMake configs still resolve wherever DEST is moved. Then, on the GPU node:
#   cmake -S . -B build -DREPLAY_DEPS_PREFIX=$PWD/.deps/prefix ...   (scripts/gpu_build.sh does this)
#
# Usage: scripts/make_offline_prefix.sh [--with-gtest] [--without-compression] [DEST]
#   --with-gtest           add GoogleTest (static libraries), needed to build the tests
#   --without-compression  leave out zstd and zlib headers (when the target has libzstd-dev and
#                          zlib1g-dev); by default their headers are shipped and libzstd.so /
#                          libz.so link to the target's system libraries (/lib/<arch>/lib*.so.1)
# Needs: a Debian or Ubuntu machine with apt-get and network, amd64 like the GPU nodes.
set -euo pipefail

with_gtest=0
with_compression=1
dest=""
for arg in "$@"; do
  case "$arg" in
    --with-gtest) with_gtest=1 ;;
    --without-compression) with_compression=0 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    -*) echo "make_offline_prefix.sh: unknown option $arg" >&2; exit 2 ;;
    *) dest="$arg" ;;
  esac
done
repo="$(cd "$(dirname "$0")/.." && pwd)"
dest="${dest:-$repo/.deps/prefix}"
mkdir -p "$(dirname "$dest")"
dest="$(cd "$(dirname "$dest")" && pwd)/$(basename "$dest")"

for tool in apt-get apt-cache dpkg-deb; do
  command -v "$tool" >/dev/null || { echo "make_offline_prefix.sh: needs $tool (Debian/Ubuntu)" >&2; exit 2; }
done
arch="$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)"

# Runtime packages that a -dev package depends on (libsimdjson-dev -> libsimdjson14, ...).
runtime_of() {
  apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces --no-enhances "$1" \
    | awk -v dev="$1" '/^ *Depends: lib/ { sub(/:.*$/, "", $2); if ($2 != dev) print $2 }'
}

packages=(libsimdjson-dev $(runtime_of libsimdjson-dev | grep "^libsimdjson") libcli11-dev libyaml-cpp-dev)
[ "$with_compression" = 1 ] && packages+=(libzstd-dev zlib1g-dev)
[ "$with_gtest" = 1 ] && packages+=(libgtest-dev)

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
chmod 1777 "$work"  # apt's sandbox user (_apt) writes the downloads
echo "downloading: ${packages[*]}"
(cd "$work" && apt-get download -q "${packages[@]}")

stage="$work/stage"
mkdir -p "$stage"
for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$stage"; done

rm -rf "$dest"
mkdir -p "$dest/lib"  # libraries stay in lib/<arch>: find_library and the CMake configs look there
cp -a "$stage/usr/include" "$dest/include"
cp -a "$stage/usr/lib/$arch" "$dest/lib/$arch"
if [ -d "$stage/usr/share/cmake" ]; then mkdir -p "$dest/share" && cp -a "$stage/usr/share/cmake" "$dest/share/cmake"; fi
if [ -d "$stage/usr/share/pkgconfig" ]; then mkdir -p "$dest/share" && cp -a "$stage/usr/share/pkgconfig" "$dest/share/pkgconfig"; fi

libdir="$dest/lib/$arch"
if [ "$with_compression" = 1 ]; then
  # Headers only: link against the target's own runtime libraries (zlib1g and libzstd1 are on
  # every Debian/Ubuntu system), not against copies that would shadow them at run time.
  rm -f "$libdir"/libz.a "$libdir"/libzstd.a "$libdir"/libz.so "$libdir"/libzstd.so
  rm -rf "$libdir/cmake/zstd"
  ln -s "/lib/$arch/libz.so.1" "$libdir/libz.so"
  ln -s "/lib/$arch/libzstd.so.1" "$libdir/libzstd.so"
fi

# pkg-config files: make them relative to where they are.
find "$dest" -name '*.pc' -print0 | while IFS= read -r -d '' pc; do
  rel="$(realpath --relative-to="$(dirname "$pc")" "$dest")"
  sed -i "s|^prefix=.*|prefix=\${pcfiledir}/$rel|" "$pc"
done

# Shared objects must carry no debug info (Debian's are stripped already).
find "$libdir" -name '*.so.*' -type f -exec strip --strip-unneeded {} + 2>/dev/null || true

{
  echo "# Packages unpacked into this prefix by scripts/make_offline_prefix.sh on $(date -u +%F)"
  for deb in "$work"/*.deb; do echo "$(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version)"; done
} > "$dest/PACKAGES.txt"

# Anything left that points outside the prefix and is missing here would break on the target too.
broken=0
while IFS= read -r -d '' link; do
  target="$(readlink "$link")"
  case "$target" in /lib/*) continue ;; esac  # system runtimes, resolved on the target
  if [ ! -e "$link" ]; then echo "broken link: $link -> $target" >&2; broken=1; fi
done < <(find "$dest" -type l -print0)
[ "$broken" = 0 ] || exit 1

size_kb="$(du -sk "$dest" | cut -f1)"
echo "prefix: $dest ($((size_kb / 1024)) MiB, ${size_kb} KiB)"
cat "$dest/PACKAGES.txt"
if [ "$size_kb" -gt $((60 * 1024)) ]; then
  echo "make_offline_prefix.sh: the prefix is larger than 60 MiB" >&2
  exit 1
fi
