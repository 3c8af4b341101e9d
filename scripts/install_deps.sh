#!/usr/bin/env bash
# Installs the build and test dependencies from Debian 12 packages (run as root or with sudo).
# libopenblas0-openmp: Debian's libtorch runs its CPU GEMMs on whatever libblas.so.3 the
# alternatives system selects; without OpenBLAS that is the reference BLAS, and the cpu backend's
# replays and the tests take 3-15x as long (ctest 173 s against about 600 s on 2 cores).
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  build-essential cmake ninja-build pkg-config python3 python3-jsonschema zstd \
  libsimdjson-dev libzstd-dev zlib1g-dev libcli11-dev libyaml-cpp-dev libgtest-dev libbenchmark-dev libtorch-dev libgloo-dev \
  libopenblas0-openmp \
  chromium python3-venv valgrind
# HolisticTraceAnalysis (PyPI only) for the e2e_hta test, in a venv of the checkout that
# scripts/test.sh hands to CMake (REPLAY_HTA_PYTHON).
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.deps/venv-hta"
if ! "$venv/bin/python" -c "import hta.trace_analysis" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q HolisticTraceAnalysis
fi
