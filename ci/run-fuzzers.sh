#!/usr/bin/env bash
# Builds the libFuzzer targets (the `fuzz` preset: clang-14, ASan + UBSan)
# and runs each one for a time budget on a copy of its seed corpus
# (tests/fuzz/corpus/<name>/ plus seeds that foxrl_fuzz_seeds writes in the
# format of this build). The committed corpus never grows: new inputs stay in
# a temporary directory. Prints, per target, the executions and "0 crashes"
# or the path of the input that crashed; exits non-zero on any crash.
#
#   ci/run-fuzzers.sh [--long] [name ...]
#     default: 20 s per target (CI); --long: 300 s per target;
#     FUZZ_SECONDS=<n> sets the seconds per target either way; FUZZ_JOBS=<n>
#     targets run at once (default: the core count).
#     names: market_csv config_json safetensors trainer_state checkpoint action_file dataset
# Crashing inputs and each target's log are kept in build/fuzz/fuzz-out/.
set -euo pipefail
cd "$(dirname "$0")/.."

all=(market_csv config_json safetensors trainer_state checkpoint action_file dataset)
long=0
targets=()
for arg in "$@"; do
  case "$arg" in
    --long) long=1 ;;
    -h | --help)
      sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    -*)
      echo "run-fuzzers: unknown option '$arg' (see --help)" >&2
      exit 2
      ;;
    *)
      if [[ ! " ${all[*]} " == *" $arg "* ]]; then
        echo "run-fuzzers: unknown target '$arg' (one of: ${all[*]})" >&2
        exit 2
      fi
      targets+=("$arg")
      ;;
  esac
done
if [ ${#targets[@]} -eq 0 ]; then targets=("${all[@]}"); fi
default_seconds=20
if [ "$long" -eq 1 ]; then default_seconds=300; fi
# Accepted trainer states also run two training iterations, so a loaded
# value that passes validation but breaks a kernel is found too.
export FOXRL_FUZZ_ITERATE="${FOXRL_FUZZ_ITERATE:-1}"
seconds="${FUZZ_SECONDS:-$default_seconds}"
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "run-fuzzers: FUZZ_SECONDS must be a positive integer, got '$seconds'" >&2
  exit 2
fi

start=$(date +%s)
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
cmake --preset fuzz > /dev/null
cmake --build --preset fuzz --target foxrl_fuzzers
echo "fuzz: built in $(($(date +%s) - start)) s"

bin=build/fuzz/tests/fuzz
out=build/fuzz/fuzz-out
work=$(mktemp -d "${TMPDIR:-/tmp}/foxrl-fuzz.XXXXXX")
# The fuzzers write each input to a file here (memory-backed where possible).
scratch_root=/dev/shm
[ -d "$scratch_root" ] && [ -w "$scratch_root" ] || scratch_root="$work"
export FOXRL_FUZZ_SCRATCH
FOXRL_FUZZ_SCRATCH=$(mktemp -d "$scratch_root/foxrl-fuzz-scratch.XXXXXX")
trap 'rm -rf "$work" "$FOXRL_FUZZ_SCRATCH"' EXIT
"$bin/foxrl_fuzz_seeds" "$work/generated"

# Sanitizer reports abort with a stack; UBSan findings are errors.
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# One target per core at a time: each fuzzer is a single process, so the
# CI budget buys the same executions per target in less wall time.
fuzz_one() {
  local name=$1 corpus="$work/corpus/$1" artifacts="$out/$1"
  mkdir -p "$corpus"
  rm -rf "$artifacts"
  mkdir -p "$artifacts"
  cp -R "tests/fuzz/corpus/$name/." "$corpus/"
  if [ -d "$work/generated/$name" ]; then cp -R "$work/generated/$name/." "$corpus/"; fi
  local log="$artifacts/fuzz.log" t0 rc=0
  t0=$(date +%s)
  "$bin/${name}_fuzzer" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$corpus" > "$log" 2>&1 || rc=$?
  local took execs crash
  took=$(($(date +%s) - t0))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  crash=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
  if [ "$rc" -eq 0 ] && [ -z "$crash" ]; then
    echo "fuzz: $name: ${execs:-?} executions in $took s, 0 crashes" > "$work/result-$name"
  else
    {
      echo "fuzz: $name: CRASH after ${execs:-?} executions in $took s (exit $rc): input ${crash:-none saved}, log $log"
      grep -m 1 -E "ERROR: |runtime error: |fuzz: LogicError|uncaught exception|terminate called" "$log" | sed 's/^/fuzz:   /' || true
    } > "$work/result-$name"
    return 1
  fi
}
parallel="${FUZZ_JOBS:-$(nproc)}"
running=0
for name in "${targets[@]}"; do
  if [ "$running" -ge "$parallel" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  fuzz_one "$name" &
  running=$((running + 1))
done
wait || true
failed=0
for name in "${targets[@]}"; do
  cat "$work/result-$name" 2> /dev/null || echo "fuzz: $name: no result (the runner died)"
  grep -q "0 crashes" "$work/result-$name" 2> /dev/null || failed=1
done
echo "fuzz: done in $(($(date +%s) - start)) s"
exit "$failed"
