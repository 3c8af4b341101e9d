#!/usr/bin/env bash
# Run ON the GPU machine (no network), from a copy of the repository that carries .deps/prefix
# (made with scripts/make_offline_prefix.sh --with-gtest on a machine with network): configures
# against that prefix and against the Python install's libtorch, builds for sm_90 with all cores
# (the binary in BUILD_DIR/cli, the backend modules in BUILD_DIR/lib/replay) and runs the
# `gpu`-labelled tests and the check that the core binary links none of the backends' libraries.
#
# Usage: scripts/gpu_build.sh [BUILD_DIR]      (default: build-gpu)
# Environment: REPLAY_CMAKE_ARGS  extra configure arguments (e.g. "-DREPLAY_TORCH=OFF")
#              CTEST_ARGS         extra ctest arguments (e.g. "-V")
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build-gpu}"
prefix="$PWD/.deps/prefix"

if [ ! -d "$prefix" ]; then
  echo "gpu_build.sh: $prefix is missing; run scripts/make_offline_prefix.sh --with-gtest where there is network" >&2
  exit 2
fi
if ! compgen -G "$prefix/lib/*/cmake/GTest" >/dev/null; then
  echo "gpu_build.sh: note: no GoogleTest in $prefix (make it with --with-gtest) unless the machine has its own" >&2
fi
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
torch_prefix="$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')"
# libtorch's CMake config otherwise probes the GPUs to pick its own architecture list.
export TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-9.0}"

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
# shellcheck disable=SC2086
cmake -S . -B "$build" "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=Release \
  -DREPLAY_DEPS_PREFIX="$prefix" \
  -DCMAKE_PREFIX_PATH="$torch_prefix" \
  -DREPLAY_CUDA=ON -DREPLAY_TORCH=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 \
  ${REPLAY_CMAKE_ARGS:-}
cmake --build "$build" -j"$(nproc)"
# The backends are modules that $build/cli/replay loads from $build/lib/replay (README, "Building").
if [ ! -f "$build/lib/replay/libreplay_backend_cuda.so" ]; then
  echo "gpu_build.sh: $build/lib/replay/libreplay_backend_cuda.so was not built" >&2
  exit 1
fi
# shellcheck disable=SC2086
ctest --test-dir "$build" -L gpu --output-on-failure ${CTEST_ARGS:-}
# The core binary starts without libtorch and the CUDA libraries on this host too.
# shellcheck disable=SC2086
ctest --test-dir "$build" -R '^e2e_core_dependencies$' --output-on-failure ${CTEST_ARGS:-}
