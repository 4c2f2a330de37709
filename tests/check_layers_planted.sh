#!/usr/bin/env bash
# The layer check (ci/check-layers.sh) must fail on an upward include: on a
# copy of the tree it passes, then one domain header planted with an include
# of the orchestration floor (src/train/) and one kernel with an include of
# src/ beyond core/ must each make it fail, naming the file.
set -euo pipefail
source_dir="${1:?usage: check_layers_planted.sh SOURCE_DIR}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cp -r "$source_dir/src" "$source_dir/kernels" "$source_dir/views" "$tmp/"
check="$source_dir/ci/check-layers.sh"
bash "$check" "$tmp" > "$tmp/clean.log" || { cat "$tmp/clean.log"; echo "FAIL: the unmodified tree does not pass"; exit 1; }
plant() {  # plant FILE INCLUDE: the check must fail and name FILE
  local file="$1" include="$2"
  cp "$tmp/$file" "$tmp/$file.orig"
  printf '#include "%s"\n' "$include" >> "$tmp/$file"
  if bash "$check" "$tmp" > "$tmp/planted.log" 2>&1; then
    echo "FAIL: the check passed with '#include \"$include\"' planted in $file"
    exit 1
  fi
  grep -q "$file" "$tmp/planted.log" || { cat "$tmp/planted.log"; echo "FAIL: the message does not name $file"; exit 1; }
  mv "$tmp/$file.orig" "$tmp/$file"
}
plant src/market/market_data.hpp train/training_run.hpp
plant src/envs/vector_env.hpp agents/dqn/dqn_learner.hpp
plant src/nn/mlp.hpp replay/replay_buffer.hpp
plant kernels/nn/adam.hpp nn/mlp.hpp
echo "layer check: fails on every planted upward include"
