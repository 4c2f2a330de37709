#!/usr/bin/env bash
# Checks that every tracked C++ source is formatted as .clang-format says
# (clang-format 14, Debian 12's). `ci/check-format.sh --fix` formats them.
set -euo pipefail
cd "$(dirname "$0")/.."
format="${CLANG_FORMAT:-clang-format-14}"
command -v "$format" > /dev/null || { echo "ci: $format not found (ci/install-debian-packages.sh installs it)"; exit 1; }
mapfile -t files < <(git ls-files '*.hpp' '*.cpp' '*.cu' '*.cuh')
if [ "${1:-}" = "--fix" ]; then
  "$format" -i "${files[@]}"
  echo "ci: formatted ${#files[@]} files"
  exit 0
fi
if ! "$format" --dry-run --Werror "${files[@]}" 2> /tmp/foxrl-format.log; then
  grep -E "^[^ ].*error:" /tmp/foxrl-format.log | cut -d: -f1 | sort -u | sed 's/^/  not formatted: /'
  echo "ci: formatting differs from .clang-format in the files above; run ci/check-format.sh --fix"
  exit 1
fi
echo "ci: format ok (${#files[@]} files)"
