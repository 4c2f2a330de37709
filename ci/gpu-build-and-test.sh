#!/usr/bin/env bash
# Build and test the cuda-sm90 preset on a GPU machine. Expects Kokkos (with
# CUDA) and Kokkos Kernels installed under $Kokkos_ROOT, and the header-only
# dependencies (Catch2, CLI11, nlohmann-json) under $FOXRL_PREFIX_PATH or a
# system prefix. Usage: ci/gpu-build-and-test.sh [preset] [log dir]
set -euo pipefail
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
} | tee "$logs/machine.txt"
cmake --preset "$preset" -DCMAKE_CUDA_COMPILER="$nvcc_path" 2>&1 | tee "$logs/configure.log" | tail -3
cmake --build --preset "$preset" -j "$(nproc)" 2>&1 | tee "$logs/build.log" | grep -E "error|warning: " | head -40 || true
set -o pipefail
ctest --preset "$preset" -j 4 ${CTEST_ARGS:-} 2>&1 | tee "$logs/ctest.log" | tail -25
