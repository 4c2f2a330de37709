#!/usr/bin/env bash
# Fails when the library's layers (docs/design.md, "Layers" and "Floors of
# src/") are crossed:
# - src/ launches a kernel itself (Kokkos::parallel_for/reduce/scan): every
#   kernel is a functor or launch function of kernels/, so each one has one
#   home, one label and one instance-first signature;
# - a file of kernels/ includes from src/ anything but core/, or a file of
#   views/ includes from kernels/ or src/ beyond core/: includes go one way,
#   src/ -> kernels/ -> views/;
# - a folder of src/ includes a folder of src/ on its own floor or above it
#   (the floors below, ground first): the domains never include the
#   orchestration (train/, study/, evaluate/), and no two domains include
#   each other.
#   ci/check-layers.sh [ROOT]   (default: this checkout)
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
cd "$root"
status=0

# The floors of src/, ground first; a folder may include folders of lower
# floors (and kernels/, views/). A new folder of src/ gets a floor here.
floors=(
  "core"
  "io"
  "config"
  "nn replay dist"
  "market"
  "envs"
  "agents"
  "collect offline"
  "train"
  "study evaluate"
  "cli cmake"
)
declare -A floor_of
for i in "${!floors[@]}"; do
  for folder in ${floors[$i]}; do floor_of[$folder]=$i; done
done

list() { find "$@" -type f \( -name '*.hpp' -o -name '*.cpp' -o -name '*.cuh' -o -name '*.cu' \) 2>/dev/null | sort; }
mapfile -t src_files < <(list src)

# Launch calls in code, not in a comment.
launches=$(grep -nE "Kokkos::parallel_(for|reduce|scan)[[:space:]]*\(" "${src_files[@]}" |
  grep -vE "^[^:]+:[0-9]+:[[:space:]]*//" || true)
if [ -n "$launches" ]; then
  echo "$launches" | sed 's/^/  /'
  echo "ci: src/ launches a kernel (above); move the functor and its launch into kernels/ (e.g. kernels::call_once in kernels/core/call_once.hpp)"
  status=1
fi

# Includes of project headers that leave the allowed folders ($2) in the files under $1.
upward_includes() {
  local -a files
  mapfile -t files < <(list "$1")
  [ ${#files[@]} -eq 0 ] && return 0
  grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "${files[@]}" |
    grep -vE "#[[:space:]]*include[[:space:]]*\"($2)/" || true
}
upward=$(upward_includes kernels 'kernels|views|core')
upward+=$(upward_includes views 'views|core')
if [ -n "$upward" ]; then
  echo "$upward" | sed 's/^/  /'
  echo "ci: kernels/ or views/ includes against the layers (above); includes go src/ -> kernels/ -> views/, and both may include src/core/"
  status=1
fi

# The floors inside src/.
crossings=""
unknown=""
for f in "${src_files[@]}"; do
  from=$(echo "$f" | cut -d/ -f2)
  if [ -z "${floor_of[$from]+x}" ]; then
    unknown+="  $f: src/$from/ has no floor in ci/check-layers.sh"$'\n'
    continue
  fi
  while IFS= read -r line; do
    [ -z "$line" ] && continue
    target=$(echo "$line" | sed -E 's/^([0-9]+):[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"/]+)\/.*/\2/')
    case "$target" in kernels | views) continue ;; esac
    [ "$target" = "$from" ] && continue
    [ -z "${floor_of[$target]+x}" ] && continue  # not a folder of src/ (e.g. "foxrl_commit.hpp")
    if [ "${floor_of[$target]}" -ge "${floor_of[$from]}" ]; then
      crossings+="  $f:${line%%:*}: src/$from/ (floor $((floor_of[$from] + 1))) includes src/$target/ (floor $((floor_of[$target] + 1)))"$'\n'
    fi
  done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"/]+/' "$f" || true)
done
if [ -n "$unknown$crossings" ]; then
  printf "%s%s" "$unknown" "$crossings"
  echo "ci: src/ includes against its floors (above); a folder includes only folders of lower floors:"
  for i in "${!floors[@]}"; do echo "    floor $((i + 1)): ${floors[$i]}"; done
  status=1
fi

if [ "$status" -eq 0 ]; then
  echo "ci: layers hold (${#src_files[@]} src/ files launch no kernel and include only lower floors; kernels/ includes only kernels/, views/ and core/; views/ only views/ and core/)"
fi
exit "$status"
