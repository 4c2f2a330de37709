#!/usr/bin/env bash
# Fails when the library's layers (docs/design.md, "Layers") are crossed:
# - src/ launches a kernel itself (Kokkos::parallel_for/reduce/scan): every
#   kernel is a functor or launch function of kernels/, so each one has one
#   home, one label and one instance-first signature;
# - a file of kernels/ includes from src/ anything but core/, or a file of
#   views/ includes from kernels/ or src/ beyond core/: includes go one way,
#   src/ -> kernels/ -> views/.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
mapfile -t src_files < <(git ls-files 'src/*.hpp' 'src/*.cpp')
# Launch calls in code, not in a comment.
launches=$(grep -nE "Kokkos::parallel_(for|reduce|scan)[[:space:]]*\(" "${src_files[@]}" |
  grep -vE "^[^:]+:[0-9]+:[[:space:]]*//" || true)
if [ -n "$launches" ]; then
  echo "$launches" | sed 's/^/  /'
  echo "ci: src/ launches a kernel (above); move the functor and its launch into kernels/ (e.g. kernels::call_once in kernels/core/call_once.hpp)"
  status=1
fi
# Includes of project headers that leave the allowed folders ($2) in the files of $1.
upward_includes() {
  local -a files
  mapfile -t files < <(git ls-files "${@:3}")
  grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "${files[@]}" |
    grep -vE "#[[:space:]]*include[[:space:]]*\"($2)/" || true
}
upward=$(upward_includes kernels 'kernels|views|core' 'kernels/*.hpp' 'kernels/*.cuh' 'kernels/*.cpp' 'kernels/*.cu')
upward+=$(upward_includes views 'views|core' 'views/*.hpp' 'views/*.cpp')
if [ -n "$upward" ]; then
  echo "$upward" | sed 's/^/  /'
  echo "ci: kernels/ or views/ includes against the layers (above); includes go src/ -> kernels/ -> views/, and both may include src/core/"
  status=1
fi
if [ "$status" -eq 0 ]; then
  echo "ci: layers hold (${#src_files[@]} src/ files launch no kernel; kernels/ includes only kernels/, views/ and core/; views/ only views/ and core/)"
fi
exit "$status"
