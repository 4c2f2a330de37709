#!/usr/bin/env bash
# The GPU benchmark suite: builds the cuda-sm90 preset (unless BUILD=0), runs
# the tests, every benchmark, CartPole learning, the market-throughput epoch
# of `foxrl train`, the real-data runs (when DATA points at the CSVs) and the
# PyTorch and JAX peers (when ANCHORS points at their programs) on the same
# machine in the same call.
#   Kokkos_ROOT=... perf/run_gpu_suite.sh OUTDIR [STAGES]
# STAGES is a comma list out of build,tests,bench,pytorch,learn,epoch,data,
# peers,regress,trace,roofline,profile (default: all but regress, trace,
# roofline and profile); trace records the warm iteration graph's nodes
# (--kernel-trace), roofline each node's bytes, FLOPs and floor (ncu); they run in
# that order, so the diagnostic profile cannot crowd out a measurement under
# DEADLINE. bench times the three pipeline configs (market-throughput,
# cartpole-throughput, cartpole-learn) in us per iteration as perf/README.md
# defines; regress runs perf/regress.py against perf/baselines/<gpu>.json.
# OUTDIR receives summary.txt, benchmarks.jsonl and one logs.tgz holding
# every log, so that a transfer limited to a few files brings everything
# back.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: perf/run_gpu_suite.sh OUTDIR [STAGES]}"
stages=",${2:-build,tests,bench,pytorch,learn,epoch,data,peers},"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
logs="$(mktemp -d)"
preset="${PRESET:-cuda-sm90}"
bin="build/$preset"
summary="$out/summary.txt"
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }
suite_start=$(date +%s)
# DEADLINE (seconds since the start): stages not begun by then are skipped,
# so a time-limited call still returns its logs.
want() {
  [[ "$stages" == *",$1,"* ]] || return 1
  if [ $(( $(date +%s) - suite_start )) -gt "${DEADLINE:-1000000}" ]; then note "skipped $1 (deadline)"; return 1; fi
}
seconds_since() { python3 -c "import time,sys; print(f'{time.time()-float(sys.argv[1]):.1f}')" "$1"; }
# Checkpoints and trainer states (the replay buffer: hundreds of MB) stay
# out of the archive; the logs, metrics and charts go in.
finish() { tar czf "$out/logs.tgz" --exclude='*.safetensors' --exclude='*.bin' -C "$logs" . ; rm -rf "$logs"; }
trap finish EXIT

if want build; then
  t0=$(date +%s.%N)
  TEST_STAGE=$(want tests && echo 1 || echo 0) bash ci/gpu-build-and-test.sh "$preset" "$logs" > "$logs/build-and-test.txt" 2>&1
  note "build-and-test rc=$? in $(seconds_since "$t0") s"
  grep -E "error|tests passed|\*\*\*Failed|Failed  |Exception" "$logs/build-and-test.txt" | head -40 | tee -a "$summary"
fi
bench="$out/benchmarks.jsonl"
if want bench; then
  : > "$bench"
  for b in update replay envs; do
    timeout 300 "$bin/perf/foxrl_bench_$b" >> "$bench" 2> "$logs/bench_$b.err" || note "bench_$b failed ($?)"
  done
  for cfg in market-throughput cartpole-throughput cartpole-learn; do
    timeout 300 "$bin/perf/foxrl_bench_pipeline" --config "perf/configs/$cfg.json" --label "$cfg" >> "$bench" \
      2> "$logs/pipeline_$cfg.err" || note "pipeline $cfg failed ($?)"
  done
  grep -E '"bench":"(pipeline|dqn_update|replay_sample_update)"' "$bench" | cut -c1-300 | tee -a "$summary"
fi
if want pytorch; then
  # A foxrl checkpoint loaded in PyTorch through safetensors: same Q-values.
  "$bin/perf/foxrl_bench_update" --dense portable --repeats 3 --export-checkpoint "$logs" > /dev/null 2> "$logs/export.err"
  python3 docs/load_checkpoint_in_pytorch.py "$logs" --device cuda 2>&1 | tail -3 | tee -a "$summary"
fi
if want learn; then
  # CartPole-v1 learning (the CI test's config) on this backend, with its wall time.
  t0=$(date +%s.%N)
  timeout 300 "$bin/foxrl" train --config perf/configs/cartpole-learn.json --set out_dir="$logs/cartpole-learn" \
    > "$logs/cartpole_learn.txt" 2>&1 || note "cartpole learn failed ($?)"
  note "cartpole-learn wall $(seconds_since "$t0") s"
  grep -E "solved|Epoch|collected" "$logs/cartpole_learn.txt" | tail -3 | tee -a "$summary"
fi
if want epoch; then
  # The acceptance epoch: 10,000 iterations of the market-throughput config.
  timeout 300 "$bin/foxrl" train --config perf/configs/market-throughput.json --set out_dir="$logs/market-epoch" \
    > "$logs/market_epoch.txt" 2>&1 || note "market epoch failed ($?)"
  grep -E "collected|Epoch|launches" "$logs/market_epoch.txt" | tee -a "$summary"
fi
if want data && [ -n "${DATA:-}" ] && [ -d "$DATA" ]; then
  for run in sp500 eurusd; do
    t0=$(date +%s.%N)
    timeout 300 "$bin/foxrl" train --config "perf/configs/$run.json" --set data="$DATA/$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['data'].split('/')[-1])" "perf/configs/$run.json")" \
      --set out_dir="$logs/$run" > "$logs/$run.txt" 2>&1 || note "$run failed ($?)"
    note "$run wall $(seconds_since "$t0") s"
    sed -n '/Evaluation/,$p' "$logs/$run.txt" | head -12 | tee -a "$summary"
  done
fi
if want peers && [ -n "${ANCHORS:-}" ] && [ -d "$ANCHORS" ]; then
  (cd "$ANCHORS/.." && for cfg in ${PEER_CONFIGS:-market-throughput cartpole-throughput}; do
     timeout 240 python3 anchors/jax_dqn.py --config "$cfg" --results "$out/anchors.jsonl" > "$logs/anchors_jax_$cfg.log" 2>&1
     timeout 240 python3 anchors/torch_dqn.py --config "$cfg" --mode graph --results "$out/anchors.jsonl" > "$logs/anchors_torch_$cfg.log" 2>&1
   done
   python3 anchors/report.py "$out/anchors.jsonl" 2>&1 | tee -a "$summary")
fi
if want regress; then
  # The suite REGRESS_REPEATS times at full size, kept as OUTDIR/regress.json
  # (a baseline for perf/baselines/ when this GPU has none yet), then
  # compared with the stored baseline of this GPU.
  python3 perf/regress.py --build-dir "$bin" --size full --repeats "${REGRESS_REPEATS:-3}" --update-baseline \
    --baseline "$out/regress.json" > "$logs/regress_run.txt" 2>&1 || note "regress run failed ($?)"
  python3 perf/regress.py --current "$out/regress.json" > "$logs/regress.txt" 2>&1
  note "regress rc=$?"
  grep -E "REGRESSION|MISSING|regress" "$logs/regress.txt" | tail -20 | tee -a "$summary"
fi
if want trace; then
  # Warm, in place: each node of the replayed iteration graph and the gaps
  # between them (CUPTI, perf/kernel_trace.py), per pipeline config.
  for cfg in market-throughput cartpole-throughput cartpole-learn; do
    timeout 300 "$bin/perf/foxrl_bench_pipeline" --config "perf/configs/$cfg.json" --label "$cfg" --iterations 300 \
      --repeats 1 --kernel-trace "$logs/trace_$cfg.csv" > /dev/null 2> "$logs/trace_$cfg.err" ||
      { note "trace $cfg failed: $(tail -1 "$logs/trace_$cfg.err")"; continue; }
    python3 perf/kernel_trace.py "$logs/trace_$cfg.csv" "$cfg" | tee -a "$summary"
    python3 perf/kernel_trace.py --json "$logs/trace_$cfg.csv" "$cfg" >> "$out/kernel_trace.jsonl"
  done
fi
if want roofline; then
  # Per graph node of the replayed iteration: cold time, DRAM bytes, fp32
  # FLOPs, floor and issue 13's bar (ncu, each node replayed alone with its
  # caches flushed; perf/ncu_summary.py). The window starts past every
  # config's buffer fill and holds two iterations of the largest graph.
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  case "$gpu" in *H100*) hbm=3.35 ;; *H200*) hbm=4.8 ;; *) hbm=4.8; note "roofline: HBM peak of $gpu unknown, 4.8 TB/s assumed" ;; esac
  metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
  for op in ffma fadd fmul; do metrics+=",smsp__sass_thread_inst_executed_op_${op}_pred_on.sum"; done
  for cfg in ${ROOFLINE_CONFIGS:-market-throughput cartpole-throughput cartpole-learn cartpole-throughput-uniform cartpole-learn-peers}; do
    timeout 300 ncu --graph-profiling node --clock-control none --metrics "$metrics" --csv --launch-skip 12000 \
      --launch-count 60 "$bin/perf/foxrl_bench_pipeline" --config "perf/configs/$cfg.json" --iterations 4000 \
      --repeats 1 > "$logs/roofline_$cfg.csv" 2> "$logs/roofline_$cfg.err" || note "roofline $cfg failed ($?)"
    python3 perf/ncu_summary.py --hbm-tbps "$hbm" "$logs/roofline_$cfg.csv" "$cfg" | tee -a "$summary"
  done
fi
if want profile; then
  # Per-kernel GPU time (ncu, clocks left as they are) of one blas update,
  # of two market-throughput pipeline iterations, and of replay sample and
  # priority update; summarised by perf/ncu_summary.py.
  prof() { local name="$1"; shift; ncu --clock-control none --metrics gpu__time_duration.sum --csv "$@" \
             > "$logs/ncu_$name.csv" 2> "$logs/ncu_$name.err"; python3 perf/ncu_summary.py "$logs/ncu_$name.csv" "$name" | tee -a "$summary"; }
  prof update --launch-skip 150 --launch-count 30 "$bin/perf/foxrl_bench_update" --dense blas --repeats 20
  prof pipeline --launch-skip 2500 --launch-count 120 "$bin/perf/foxrl_bench_pipeline" \
    --config perf/configs/market-throughput.json --iterations 60 --repeats 1
  prof replay --kernel-name-base demangled -k 'regex:ReplaySample|ReplayUpdate|ReplayGather' --launch-skip 20 \
    --launch-count 6 "$bin/perf/foxrl_bench_replay"
fi
