#!/usr/bin/env bash
# Build and test the cuda-sm90 preset on a GPU machine. Expects Kokkos (with
# CUDA) and Kokkos Kernels installed under $Kokkos_ROOT, and the header-only
# dependencies (Catch2, CLI11, nlohmann-json) under $FOXRL_PREFIX_PATH or a
# system prefix. Usage: ci/gpu-build-and-test.sh [preset] [log dir]
# TEST_STAGE=0 builds only; CTEST_ARGS passes extra arguments to ctest.
set -uo pipefail
cd "$(dirname "$0")/.."
preset="${1:-cuda-sm90}"
logs="${2:-build/$preset-logs}"
mkdir -p "$logs"
: "${Kokkos_ROOT:?set Kokkos_ROOT to a Kokkos install with CUDA}"
nvcc_path="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
{
  echo "commit: ${FOXRL_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  "$nvcc_path" --version | tail -1
  cmake --version | head -1
  "${CXX:-c++}" --version | head -1
} | tee "$logs/machine.txt"
cmake --preset "$preset" -DCMAKE_CUDA_COMPILER="$nvcc_path" > "$logs/configure.log" 2>&1 \
  || { tail -40 "$logs/configure.log"; exit 1; }
# -k 0: report every failing translation unit, not only the first.
if ! cmake --build --preset "$preset" -j "$(nproc)" -- -k 0 > "$logs/build.log" 2>&1; then
  grep -E -B2 -A12 "error|FAILED" "$logs/build.log" | head -150
  exit 1
fi
grep -E "warning: " "$logs/build.log" | sort -u | head -20
[ "${TEST_STAGE:-1}" = 1 ] || exit 0
ctest --preset "$preset" -j 4 ${CTEST_ARGS:-} > "$logs/ctest.log" 2>&1
rc=$?
grep -E "tests passed|\*\*\*Failed|Failed  |Timeout|Not Run" "$logs/ctest.log"
exit $rc
