#!/usr/bin/env bash
# Runs clang-tidy 14 with the checks of .clang-tidy over the library's and
# the tool's translation units (headers of src/, kernels/ and views/ are
# checked through them). Needs a configured build with compile commands:
#   ci/check-tidy.sh [build dir, default build/host]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build/host}"
tidy="${CLANG_TIDY:-clang-tidy-14}"
command -v "$tidy" > /dev/null || { echo "ci: $tidy not found (ci/install-debian-packages.sh installs it)"; exit 1; }
[ -f "$build/compile_commands.json" ] || { echo "ci: $build/compile_commands.json missing (configure with a preset first)"; exit 1; }
# Only the units this configuration builds: a source of another
# configuration (src/dist/nccl_all_reduce.cpp needs a CUDA build with NCCL)
# has no compile command here.
mapfile -t units < <(git ls-files 'src/*.cpp' | while read -r u; do
  grep -q "\"file\": \"[^\"]*/$u\"" "$build/compile_commands.json" && echo "$u"; done)
log="$(mktemp)"
# One process per core; every diagnostic is an error (WarningsAsErrors).
if ! printf '%s\n' "${units[@]}" | xargs -P "$(nproc)" -n 1 "$tidy" -p "$build" --quiet > "$log" 2>&1; then
  grep -E "(error|warning): " "$log" | sort -u
  echo "ci: clang-tidy found the problems above"
  rm -f "$log"
  exit 1
fi
rm -f "$log"
echo "ci: clang-tidy ok (${#units[@]} translation units)"
