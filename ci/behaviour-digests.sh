#!/usr/bin/env bash
# The bit-for-bit check of a behaviour-preserving change: runs fixed-seed jobs
# with the given foxrl binary and writes the SHA-256 of every checkpoint
# tensor they leave (ci/tensor_digests.py) to OUTDIR/digests.txt. Run it with
# the binary of the commit before and after the change, then diff the two
# files: every line must match (host backend, same build flags).
#   ci/behaviour-digests.sh path/to/foxrl OUTDIR
# The jobs: `foxrl train` on its defaults, the CartPole learning config,
# a 3-seed study of a small market run, and train-offline with iql, cql and bc
# on a CartPole and a market dataset recorded by collect.
set -euo pipefail
foxrl="$(realpath "${1:?usage: ci/behaviour-digests.sh FOXRL OUTDIR}")"
out="${2:?usage: ci/behaviour-digests.sh FOXRL OUTDIR}"
here="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$out"
out="$(realpath "$out")"
export FOXRL_RUN_ID=0123456789abcdef  # the run id in every file's metadata
run() { echo "+ foxrl $*" >> "$out/commands.txt"; "$foxrl" "$@" > "$out/last.log" 2>&1 || { cat "$out/last.log"; exit 1; }; }
: > "$out/commands.txt"
run train --overwrite --set out_dir="$out/default"
run train --overwrite --config "$here/perf/configs/cartpole-learn.json" --set out_dir="$out/cartpole"
run train --overwrite --seeds 1-3 --set epochs=2 --set iterations_per_epoch=250 --set num_envs=16 \
  --set synthetic_bars=20000 --set out_dir="$out/study"
run collect --set env=cartpole --set num_envs=16 --steps 20000 --out "$out/cartpole.safetensors"
run collect --set env=market --set num_envs=16 --set synthetic_bars=20000 --steps 20000 --out "$out/market.safetensors"
for data in cartpole market; do
  for algo in iql cql bc; do
    run train-offline --overwrite --algo "$algo" --dataset "$out/$data.safetensors" --set epochs=2 \
      --set updates_per_epoch=300 --set out_dir="$out/offline-$data-$algo"
  done
done
python3 "$here/ci/tensor_digests.py" "$out" > "$out/digests.txt"
echo "behaviour-digests: $(wc -l < "$out/digests.txt") tensors in $out/digests.txt"
