#!/usr/bin/env bash
# Fails when a header of the library (src/, kernels/, views/) launches a
# KOKKOS_LAMBDA. Headers are templates that several translation units of
# one program instantiate, and nvcc's host wrapper of an extended
# __host__ __device__ lambda keeps a per-translation-unit copy function that
# the linker can leave null where those instantiations meet: a host SIGSEGV
# at the launch, on CUDA only, and only for some link orders (seen in
# init_weights and in the collector's one-team record). Named functors have
# no such wrapper. A lambda in a .cpp file (one translation unit) is fine.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t headers < <(git ls-files 'src/*.hpp' 'kernels/*.hpp' 'kernels/*.cuh' 'views/*.hpp')
# Lines that use the macro in code, not in a comment.
found=$(grep -nE "KOKKOS_(CLASS_)?LAMBDA" "${headers[@]}" | grep -vE "^[^:]+:[0-9]+:[^\"]*//.*KOKKOS_(CLASS_)?LAMBDA" || true)
if [ -n "$found" ]; then
  echo "$found" | sed 's/^/  /'
  echo "ci: KOKKOS_LAMBDA in a library header (above); use a named functor (see RecordStepInOneTeam in kernels/collect/record_step.hpp)"
  exit 1
fi
echo "ci: no KOKKOS_LAMBDA in the library's headers (${#headers[@]} files)"
