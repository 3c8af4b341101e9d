#!/usr/bin/env bash
# The whole test suite (everything but the `gpu` label), then the parser and dataflow tests
# again under AddressSanitizer + UndefinedBehaviorSanitizer (both read what a trace says).
set -euo pipefail
cd "$(dirname "$0")/.."
# HolisticTraceAnalysis's venv (scripts/install_deps.sh) and Chromium are required here: their
# tests fail instead of skipping.
hta_python=()
[ -x .deps/venv-hta/bin/python ] && hta_python=(-DREPLAY_HTA_PYTHON="$PWD/.deps/venv-hta/bin/python")
cmake -S . -B build -G Ninja "${hta_python[@]}"
cmake --build build
REPLAY_E2E_REQUIRED=1 ctest --test-dir build --output-on-failure -j2 -LE gpu
cmake -S . -B build-asan -G Ninja -DREPLAY_SANITIZE=ON -DREPLAY_TORCH=OFF -DREPLAY_CUDA=OFF \
  -DREPLAY_BUILD_BENCHMARKS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build-asan --target test_parser test_bad_input test_mutations test_execution_trace \
  test_shape_log test_fuzz_regressions test_dataflow test_dataflow_shapes test_tensor_lists
ctest --test-dir build-asan --output-on-failure -j2 \
  -R '^(Parser|BadInput|Mutations|ExecutionTrace|ShapeLog|FuzzRegressions|Dataflow|DataflowAgainstEt|TensorLists)\.'
