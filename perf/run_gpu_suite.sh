#!/usr/bin/env bash
# The GPU benchmark suite: builds the cuda-sm90 preset (unless BUILD=0), runs
# the tests, every benchmark, the market-throughput epoch of `foxrl train`,
# and (when ANCHORS points at the peers' programs) the PyTorch and JAX peers
# on the same machine in the same call. Results go to $1 (JSON lines + logs).
#   Kokkos_ROOT=... perf/run_gpu_suite.sh OUTDIR
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: perf/run_gpu_suite.sh OUTDIR}"
mkdir -p "$out"
preset="${PRESET:-cuda-sm90}"
bin="build/$preset"
if [ "${BUILD:-1}" = 1 ]; then
  bash ci/gpu-build-and-test.sh "$preset" "$out" > "$out/tests.txt" 2>&1
  grep -E "tests passed|\*\*\*Failed|Failed  " "$out/tests.txt" | head -20
fi
bench="$out/benchmarks.jsonl"
: > "$bench"
for b in update replay envs; do
  timeout 300 "$bin/perf/foxrl_bench_$b" >> "$bench" 2> "$out/bench_$b.err" || echo "bench_$b failed ($?)"
done
for cfg in market-throughput cartpole-throughput; do
  timeout 300 "$bin/perf/foxrl_bench_pipeline" --config "perf/configs/$cfg.json" --label "$cfg" >> "$bench" \
    2> "$out/pipeline_$cfg.err" || echo "pipeline $cfg failed ($?)"
done
grep -E '"bench":"(pipeline|dqn_update|replay_sample_update)"' "$bench" | cut -c1-260
# CartPole-v1 learning (the CI test's config) on this backend, with its wall time.
start=$(date +%s.%N)
timeout 300 "$bin/foxrl" train --config perf/configs/cartpole-learn.json --set out_dir="$out/cartpole-learn" \
  > "$out/cartpole_learn.txt" 2>&1 || echo "cartpole learn failed ($?)"
echo "cartpole-learn wall $(echo "$(date +%s.%N) - $start" | bc) s"; grep -E "solved|Epoch" "$out/cartpole_learn.txt" | tail -2
# The acceptance epoch: 10,000 iterations of the market-throughput config.
timeout 300 "$bin/foxrl" train --config perf/configs/market-throughput.json --set out_dir="$out/market-epoch" \
  > "$out/market_epoch.txt" 2>&1 || echo "market epoch failed ($?)"
grep -E "collected|Epoch" "$out/market_epoch.txt"
if [ -n "${ANCHORS:-}" ] && [ -d "$ANCHORS" ]; then
  (cd "$ANCHORS/.." && for cfg in market-throughput cartpole-throughput; do
     timeout 240 python3 anchors/jax_dqn.py --config "$cfg" --results "$out/anchors.jsonl" > "$out/anchors_$cfg.log" 2>&1
     timeout 240 python3 anchors/torch_dqn.py --config "$cfg" --mode graph --results "$out/anchors.jsonl" >> "$out/anchors_$cfg.log" 2>&1
   done
   python3 anchors/report.py "$out/anchors.jsonl" > "$out/anchors_table.txt" 2>&1; cat "$out/anchors_table.txt")
fi
