#!/usr/bin/env bash
# Crash campaigns: kill a small checkpointing job (SIGKILL, by strace's
# fault injection) on entering every rename, every fsync, unlink, mkdir and
# truncate, a sample of its writes, and at random times; resume each with
# `--auto-resume` (as a requeued job would; a few of these resumes are
# killed, too) and compare the result with the uninterrupted job's. Prints
# one summary line per campaign; exit 1 if any job could not be resumed or
# differs.
#
#   ci/crash-campaign.sh [--short] [--campaign NAME]... [path/to/foxrl]   (default build/host/foxrl)
#
# Campaigns (default: all four):
#   train         `foxrl train` (the synthetic market, 4 epochs):
#                 checkpoint bytes, metrics (timings aside), evaluation, one "Epoch N
#                 complete" line per epoch in train.log, the list of
#                 generations, no temporaries (write probes included)
#   seeds         a seed study, `foxrl train --seeds 1-2` (tiny market, 2
#                 epochs, keep_checkpoints=1): study.json, the manifest and,
#                 per seed, the same as train plus the evaluation backtests
#                 and the list of checkpoint and best-model generations
#   walk-forward  `foxrl train --walk-forward` of 2 folds: walk_forward.json
#                 and its backtest, the manifest, per fold as seeds
#   offline       `foxrl train-offline` (IQL on a collected CartPole
#                 dataset, 3 epochs): learner, guard and manifest bytes,
#                 metrics, evaluation, generations
#   --campaign studies names seeds and walk-forward.
#
# --short (CI, about 1 minute in all on 2 cores): train: every rename and
# about 30 other kill points; the others: about 12 renames and 8 other kill
# points each. The full form (~25 minutes) takes every rename and more than
# 300 other kill points of train, and of each other campaign every rename
# and up to 60 kill points per other call and 20 random times.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=full
campaigns=()
while [ $# -gt 0 ]; do
  case "$1" in
    --short) mode=short ;;
    --campaign)
      shift
      if [ "$1" = studies ]; then campaigns+=(seeds walk-forward); else campaigns+=("$1"); fi
      ;;
    *) break ;;
  esac
  shift
done
[ ${#campaigns[@]} -gt 0 ] || campaigns=(train seeds walk-forward offline)
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

# Strips what differs between two identical runs: timings, the log lengths
# (a resumed train.log holds the restart's lines) and the out_dir, with the
# manifest checksum that covers them.
metrics_without_timings() { sed -E 's/"(seconds|env_steps_per_s|updates_per_s)":[^,}]*,?//g' "$1"; }
manifest_without_logs() { grep -vE '"(metrics\.jsonl|train\.log|crc32c|out_dir)":' "$1"; }

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

# What every campaign checks in a run directory $1 (relative to the
# reference's $2): the newest generation's files (the names in $files),
# the manifest without its logs, the other files in $outputs, the list of
# generations (checkpoints and best models), metrics, one "Epoch N
# complete" line per epoch.
run_differs() {
  local d=$1 ref=$2 f final e
  final=$(cd "$ref/checkpoints" && ls -d epoch-* | tail -1)
  for f in "${files[@]}"; do
    cmp -s "$ref/checkpoints/$final/$f" "$d/checkpoints/$final/$f" || { echo "$d/checkpoints/$final/$f"; return; }
  done
  diff -q <(manifest_without_logs "$ref/checkpoints/$final/$manifest") \
    <(manifest_without_logs "$d/checkpoints/$final/$manifest") > /dev/null || { echo "$d/checkpoints/$final/$manifest"; return; }
  for f in "${outputs[@]}"; do
    cmp -s "$ref/$f" "$d/$f" || { echo "$d/$f"; return; }
  done
  for f in checkpoints best; do
    [ "$(ls "$ref/$f" 2> /dev/null || true)" = "$(ls "$d/$f" 2> /dev/null || true)" ] || { echo "$d/$f/ (generations)"; return; }
  done
  diff -q <(metrics_without_timings "$ref/metrics.jsonl") <(metrics_without_timings "$d/metrics.jsonl") \
    > /dev/null || { echo "$d/metrics.jsonl"; return; }
  for e in $(seq 1 "$epochs"); do
    [ "$(grep -c "^Epoch $e complete" "$d/train.log")" = 1 ] || { echo "$d/train.log (epoch $e lines)"; return; }
  done
}

temporaries_in() { find "$1" -name '*.tmp.*' -o -name '.staging-*' -o -name '.deleting-*' -o -name '.foxrl-write-test.*'; }

# Compares the job's output directory $1 with the reference; prints what differs.
differs() {
  local d=$1 m
  for m in "${members[@]}"; do
    local what
    what=$(run_differs "$d/$m" "$work/ref/$m")
    [ -z "$what" ] || { echo "$what"; return; }
  done
  local f
  for f in "${top_files[@]}"; do
    cmp -s "$work/ref/$f" "$d/$f" || { echo "$f"; return; }
  done
  if [ -f "$work/ref/study_manifest.json" ]; then
    diff -q <(manifest_without_logs "$work/ref/study_manifest.json") <(manifest_without_logs "$d/study_manifest.json") \
      > /dev/null || { echo "study_manifest.json"; return; }
  fi
  if [ -n "$(temporaries_in "$d")" ]; then
    echo "temporaries left: $(temporaries_in "$d" | head -3)"
  fi
}

failed=0
summaries=()

# run_campaign NAME: the job in ${job[@]} (out_dir appended), checked by
# differs(); kill points per ${per_call[@]} and $random_kills.
run_campaign() {
  local name=$1
  rm -rf "$work/ref" "$work/count" "$work/t"
  "${job[@]}" --set out_dir="$work/ref" > "$work/ref.out" 2>&1
  local start run_ms
  start=$(date +%s%N)
  "${job[@]}" --overwrite --set out_dir="$work/ref" > "$work/ref.out" 2>&1
  run_ms=$(( ($(date +%s%N) - start) / 1000000 ))

  # How often the uninterrupted job enters each call.
  local calls=(rename fsync unlink mkdir truncate write) c
  strace -f -o "$work/trace" -e trace="$(IFS=,; echo "${calls[*]}")" \
    "${job[@]}" --set out_dir="$work/count" > /dev/null 2>&1
  declare -A count
  for c in "${calls[@]}"; do count[$c]=$(grep -cE "^[0-9]+ +$c\(" "$work/trace" || true); done

  kills=0 landed=0 resumed=0 identical=0 unresumable=0 different=0
  declare -A kills_by=()
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
      : # the kill point was not reached: the job completed
    else
      landed=$((landed + 1))
    fi
    local ok=0 attempt
    if [ -n "${resume_kill:-}" ]; then  # the first resume is killed, too
      (strace -f -o /dev/null -e trace="${resume_kill%:*}" -e inject="${resume_kill%:*}":signal=SIGKILL:when="${resume_kill#*:}" \
        "${job[@]}" --auto-resume --set out_dir="$d" > "$work/resume.out" 2>&1; exit $?) 2> /dev/null || true
    fi
    for attempt in 1 2; do
      if "${job[@]}" --auto-resume --set out_dir="$d" > "$work/resume.out" 2>&1; then
        ok=1
        break
      fi
    done
    if [ $ok = 0 ]; then
      unresumable=$((unresumable + 1))
      echo "crash-campaign ($name): unresumable after a kill at $label ($*):" >&2
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
      echo "crash-campaign ($name): after a kill at $label ($*), $what differs from the uninterrupted job" >&2
    fi
  }
  # kill_at CALL N: SIGKILL on entering the N-th CALL.
  kill_at() {
    trial "$1" strace -f -o /dev/null -e trace="$1" -e inject="$1":signal=SIGKILL:when="$2" \
      "${job[@]}" --set out_dir="$work/t"
  }

  local n i ms
  for n in $(sample "$renames" "${count[rename]}"); do kill_at rename "$n"; done
  for ((i = 0; i < ${#per_call[@]}; i += 2)); do
    c=${per_call[i]}
    for n in $(sample "${per_call[i + 1]}" "${count[$c]}"); do kill_at "$c" "$n"; done
  done
  for i in $(seq 1 "$random_kills"); do
    ms=$(( (RANDOM * 32768 + RANDOM) % (run_ms + 1) ))
    trial "random time" timeout -s KILL "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))" \
      "${job[@]}" --set out_dir="$work/t"
  done
  # Kills during the resume of a killed job (cutting the logs back, setting
  # a generation aside, the first new checkpoint): the job killed at a
  # rename five eighths in, its resume at its N-th rename or truncate.
  local late_rename=$(( count[rename] * 5 / 8 ))
  for c in truncate rename; do
    for n in $(seq 1 "$resume_kills"); do
      resume_kill="$c:$n" trial "the resume's $c" strace -f -o /dev/null -e trace=rename \
        -e inject=rename:signal=SIGKILL:when=$late_rename "${job[@]}" --set out_dir="$work/t"
    done
  done

  local by=""
  for c in rename "${calls[@]:1}" "random time" "the resume's truncate" "the resume's rename"; do
    by+="${by:+, }${kills_by[$c]:-0} at $c"
  done
  summaries+=("crash campaign $name ($mode): $kills kill points ($by), $landed kills landed; $resumed resumed, $identical identical to the uninterrupted job, $unresumable unresumable, $different different")
  echo "${summaries[-1]}"
  if [ $unresumable != 0 ] || [ $different != 0 ]; then failed=1; fi
}

# The market config of the study campaigns: tiny, checkpointing every epoch.
tiny_market=(--set num_envs=4 --set hidden=16,16 --set batch_size=16 --set buffer_capacity=96
  --set learning_starts=64 --set iterations_per_epoch=40 --set target_update_every=10
  --set eps_decay_env_steps=200 --set synthetic_bars=2000 --set episode_length=30 --set window=16
  --set checkpoint_every=1 --set keep_checkpoints=1)
online_files=(checkpoint.safetensors trainer_state.safetensors)
market_outputs=(evaluation.json evaluation_backtest.csv equity.svg)

for campaign in "${campaigns[@]}"; do
  case $campaign in
    train)
      epochs=4
      job=("$bin" train --set epochs=$epochs --set iterations_per_epoch=20 --set num_envs=8 --set batch_size=32
        --set learning_starts=64 --set checkpoint_every=1 --set keep_checkpoints=2)
      members=(.) top_files=() files=("${online_files[@]}") manifest=checkpoint.json outputs=(evaluation.json)
      if [ $mode = short ]; then
        renames=1000 per_call=(fsync 8 unlink 3 mkdir 2 truncate 2 write 12) random_kills=4 resume_kills=2
      else
        renames=1000 per_call=(fsync 1000 unlink 1000 mkdir 1000 truncate 1000 write 250) random_kills=40 resume_kills=8
      fi
      ;;
    seeds)
      epochs=2
      job=("$bin" train --seeds 1-2 --bootstrap-resamples 200 --set epochs=$epochs "${tiny_market[@]}")
      members=(seed_1 seed_2) top_files=(study.json) files=("${online_files[@]}") manifest=checkpoint.json
      outputs=("${market_outputs[@]}" evaluation_best_backtest.csv equity_best.svg)
      ;;
    walk-forward)
      epochs=2
      job=("$bin" train --walk-forward train=600,test=300,step=300 --set epochs=$epochs "${tiny_market[@]}"
        --set synthetic_bars=1200)
      members=(fold_0 fold_1) top_files=(walk_forward.json walk_forward_backtest.csv walk_forward_equity.svg)
      files=("${online_files[@]}") manifest=checkpoint.json outputs=("${market_outputs[@]}")
      ;;
    offline)
      epochs=3
      "$bin" collect --set env=cartpole --set num_envs=4 --set seed=3 --steps 800 --out "$work/cartpole.safetensors" \
        > /dev/null
      job=("$bin" train-offline --dataset "$work/cartpole.safetensors" --algo iql --set hidden=16,8 --set batch_size=32
        --set updates_per_epoch=20 --set eval_episodes=3 --set epochs=$epochs --set checkpoint_every=1
        --set keep_checkpoints=2)
      members=(.) top_files=() files=(learner.safetensors guard.safetensors) manifest=offline_checkpoint.json
      outputs=(evaluation_episodes.json)
      ;;
    *)
      echo "crash-campaign: no campaign '$campaign' (train, seeds, walk-forward, offline or studies)" >&2
      exit 2
      ;;
  esac
  if [ "$campaign" != train ]; then
    if [ $mode = short ]; then
      renames=12 per_call=(fsync 3 unlink 2 mkdir 1 truncate 1 write 1) random_kills=1 resume_kills=1
    else
      renames=1000 per_call=(fsync 60 unlink 60 mkdir 60 truncate 60 write 60) random_kills=20 resume_kills=4
    fi
  fi
  run_campaign "$campaign"
done
[ $failed = 0 ]
