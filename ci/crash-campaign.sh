#!/usr/bin/env bash
# Crash campaign: kills a small checkpointing `foxrl train` (SIGKILL, by
# strace's fault injection) on entering every rename, every fsync, unlink,
# mkdir and truncate, a sample of its writes, and at random times; resumes
# each with `train --auto-resume` (as a requeued job would) and compares the
# result with an uninterrupted run: checkpoint bytes, metrics (timings
# aside), evaluation, one "Epoch N complete" line per epoch in train.log, no
# temporaries left behind. Prints one summary line; exit 1 if any run could
# not be resumed or differs.
#
#   ci/crash-campaign.sh [--short] [path/to/foxrl]    (default build/host/foxrl)
#
# --short (CI): every rename and about 30 other kill points. The full form
# takes every rename and more than 300 other kill points (~15 minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=full
if [ "${1:-}" = "--short" ]; then
  mode=short
  shift
fi
bin=$(realpath "${1:-build/host/foxrl}")
if ! command -v strace > /dev/null; then
  echo "crash-campaign: strace is missing (ci/install-debian-packages.sh installs it)" >&2
  exit 1
fi
if ! strace -f -o /dev/null true 2> /dev/null; then
  echo "crash-campaign: skipped: this machine does not allow ptrace, which the fault injection needs"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# One run id for all runs, so that checkpoints compare byte for byte.
export FOXRL_RUN_ID=crash-campaign
epochs=4
args=(--set epochs=$epochs --set iterations_per_epoch=20 --set num_envs=8 --set batch_size=32
  --set learning_starts=64 --set checkpoint_every=1 --set keep_checkpoints=2)
final=checkpoints/$(printf 'epoch-%08d' $epochs)

"$bin" train "${args[@]}" --set out_dir="$work/ref" > "$work/ref.out" 2>&1
start=$(date +%s%N)
"$bin" train "${args[@]}" --overwrite --set out_dir="$work/ref" > "$work/ref.out" 2>&1
run_ms=$(( ($(date +%s%N) - start) / 1000000 ))

# How often the uninterrupted run enters each call.
calls=(rename fsync unlink mkdir truncate write)
rm -rf "$work/count"
strace -f -o "$work/trace" -e trace="$(IFS=,; echo "${calls[*]}")" \
  "$bin" train "${args[@]}" --set out_dir="$work/count" > /dev/null 2>&1
declare -A count
for c in "${calls[@]}"; do count[$c]=$(grep -cE "^[0-9]+ +$c\(" "$work/trace" || true); done

# Strips what differs between two identical runs: timings, the log lengths
# (a resumed train.log holds the restart's lines) and the out_dir, with the
# manifest checksum that covers them.
metrics_without_timings() { sed -E 's/"(seconds|env_steps_per_s|updates_per_s)":[^,}]*,?//g' "$1"; }
manifest_without_logs() { grep -vE '"(metrics\.jsonl|train\.log|crc32c|out_dir)":' "$1"; }

# Compares run directory $1 with the reference; prints what differs.
differs() {
  local d=$1 f
  for f in "$final/checkpoint.safetensors" "$final/trainer_state.safetensors" evaluation.json; do
    cmp -s "$work/ref/$f" "$d/$f" || { echo "$f"; return; }
  done
  diff -q <(manifest_without_logs "$work/ref/$final/checkpoint.json") \
    <(manifest_without_logs "$d/$final/checkpoint.json") > /dev/null || { echo "$final/checkpoint.json"; return; }
  diff -q <(metrics_without_timings "$work/ref/metrics.jsonl") <(metrics_without_timings "$d/metrics.jsonl") \
    > /dev/null || { echo "metrics.jsonl"; return; }
  local e
  for e in $(seq 1 $epochs); do
    [ "$(grep -c "^Epoch $e complete" "$d/train.log")" = 1 ] || { echo "train.log (epoch $e lines)"; return; }
  done
  if [ -n "$(find "$d" -name '*.tmp.*' -o -name '.staging-*' -o -name '.deleting-*')" ]; then
    echo "temporaries left: $(find "$d" -name '*.tmp.*' -o -name '.staging-*' -o -name '.deleting-*' | head -3)"
  fi
}

kills=0 landed=0 resumed=0 identical=0 unresumable=0 different=0
declare -A kills_by
# trial LABEL COMMAND...: runs the command (which kills foxrl at some
# point), then resumes and compares.
trial() {
  local label=$1
  shift
  local d=$work/t
  rm -rf "$d"
  kills=$((kills + 1))
  kills_by[$label]=$(( ${kills_by[$label]:-0} + 1 ))
  # (in a subshell, so the shell's "Killed" notice goes nowhere)
  if ("$@" > "$work/killed.out" 2>&1; exit $?) 2> /dev/null; then
    : # the kill point was not reached: the run completed
  else
    landed=$((landed + 1))
  fi
  local ok=0 attempt
  if [ -n "${resume_kill:-}" ]; then  # the first resume is killed, too
    (strace -f -o /dev/null -e trace="${resume_kill%:*}" -e inject="${resume_kill%:*}":signal=SIGKILL:when="${resume_kill#*:}" \
      "$bin" train --auto-resume "${args[@]}" --set out_dir="$d" > "$work/resume.out" 2>&1; exit $?) 2> /dev/null || true
  fi
  for attempt in 1 2; do
    if "$bin" train --auto-resume "${args[@]}" --set out_dir="$d" > "$work/resume.out" 2>&1; then
      ok=1
      break
    fi
  done
  if [ $ok = 0 ]; then
    unresumable=$((unresumable + 1))
    echo "crash-campaign: unresumable after a kill at $label ($*):" >&2
    tail -3 "$work/resume.out" >&2
    return
  fi
  resumed=$((resumed + 1))
  local what
  what=$(differs "$d")
  if [ -z "$what" ]; then
    identical=$((identical + 1))
  else
    different=$((different + 1))
    echo "crash-campaign: after a kill at $label ($*), $what differs from the uninterrupted run" >&2
  fi
}

# kill_at CALL N: SIGKILL on entering the N-th CALL.
kill_at() {
  trial "$1" strace -f -o /dev/null -e trace="$1" -e inject="$1":signal=SIGKILL:when="$2" \
    "$bin" train "${args[@]}" --set out_dir="$work/t"
}

# N evenly spaced call numbers out of TOTAL (all of them if N >= TOTAL).
sample() {
  local n=$1 total=$2 i
  if [ "$total" -le 0 ]; then return; fi
  if [ "$n" -ge "$total" ]; then
    seq 1 "$total"
    return
  fi
  for i in $(seq 1 "$n"); do echo $(( (i * total + n / 2) / n )); done | uniq
}

if [ $mode = short ]; then
  per_call=(fsync 8 unlink 3 mkdir 2 truncate 2 write 12)
  random_kills=4
else
  per_call=(fsync 1000 unlink 1000 mkdir 1000 truncate 1000 write 250)
  random_kills=40
fi
for n in $(sample 1000 "${count[rename]}"); do kill_at rename "$n"; done
for ((i = 0; i < ${#per_call[@]}; i += 2)); do
  c=${per_call[i]}
  for n in $(sample "${per_call[i + 1]}" "${count[$c]}"); do kill_at "$c" "$n"; done
done
for i in $(seq 1 $random_kills); do
  ms=$(( (RANDOM * 32768 + RANDOM) % (run_ms + 1) ))
  trial "random time" timeout -s KILL "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))" \
    "$bin" train "${args[@]}" --set out_dir="$work/t"
done

# Kills during the resume of a killed run (cutting the logs back, setting
# a generation aside, the first new checkpoint): the run killed at a
# rename in its third epoch, its resume at its N-th rename or truncate.
third_epoch_rename=$(( count[rename] * 5 / 8 ))
for c in truncate rename; do
  for n in $(seq 1 $([ $mode = short ] && echo 2 || echo 8)); do
    resume_kill="$c:$n" trial "the resume's $c" strace -f -o /dev/null -e trace=rename \
      -e inject=rename:signal=SIGKILL:when=$third_epoch_rename "$bin" train "${args[@]}" --set out_dir="$work/t"
  done
done

by=""
for c in rename "${calls[@]:1}" "random time" "the resume's truncate" "the resume's rename"; do by+="${by:+, }${kills_by[$c]:-0} at $c"; done
echo "crash campaign ($mode): $kills kill points ($by), $landed kills landed; $resumed resumed," \
  "$identical identical to the uninterrupted run, $unresumable unresumable, $different different"
[ $unresumable = 0 ] && [ $different = 0 ]
