#!/usr/bin/env bash
# Fails when a test names a path in the temp directory that is not its
# process's own. CTest runs every TEST_CASE (and each backend's instance of
# a TEMPLATE_TEST_CASE) as its own process, side by side under `ctest -j`:
# two processes sharing a fixed name write, read and delete each other's
# files, and the suite passes serially but fails in parallel. A path is its
# own when it holds the process id (::getpid()) or comes from
# foxrl::test::TempDir (tests/support/env_test_util.hpp), which adds it.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t sources < <(git ls-files 'tests/*.cpp' 'tests/*.hpp' | grep -v '^tests/fuzz/')  # fuzzers: one process each
bad=""
for f in "${sources[@]}"; do
  # The statement that names temp_directory_path(): its line and the next two.
  hits=$(awk '/temp_directory_path\(\)/ { line = NR; text = $0; getline n1; getline n2;
           s = text n1 n2; if (s !~ /getpid/) print FILENAME ":" line ": " text }' "$f")
  [ -n "$hits" ] && bad+="$hits"$'\n'
done
if [ -n "$bad" ]; then
  printf '%s' "$bad" | sed 's/^/  /'
  echo "ci: a test path in the temp directory without the process id (above); use foxrl::test::TempDir"
  exit 1
fi
echo "ci: every test path in the temp directory is its process's own (${#sources[@]} files)"
