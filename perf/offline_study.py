#!/usr/bin/env python3
"""Offline-RL quality study and throughput: IQL, CQL and BC on recorded
datasets, against the behaviour policy's own mean return.

  python3 perf/offline_study.py datasets --foxrl build/host/foxrl --out study/
      Records the CartPole datasets: trains a DQN (perf/configs/cartpole-learn.json,
      every epoch's checkpoint kept), then
        mediocre.safetensors  100,000 transitions of an early checkpoint
                              (--mediocre-epoch, default 3) with epsilon 0.3
        mixed.safetensors     50,000 random + 50,000 greedy transitions of the
                              solved checkpoint (foxrl dataset merge)

  python3 perf/offline_study.py market-dataset --foxrl build/host/foxrl --out study/ [--set key=value ...]
      Records market.safetensors: trains a DQN on the market config (foxrl's
      built-in default plus --set), then collects --steps transitions (default
      100,000) of its final checkpoint with epsilon --epsilon (default 0.2).

  python3 perf/offline_study.py quality --foxrl build/host/foxrl --dataset study/mediocre.safetensors ...
      Trains every --algos x --seeds run on each dataset and prints a Markdown
      table: per algorithm the median, min and max over seeds of the greedy
      policy's mean return at the last epoch (no epoch is picked by its
      evaluation), next to the behaviour policy's mean episode return
      (`foxrl dataset info --json`). --json FILE writes every run's numbers.
      On a market dataset it also prints each run's test-split evaluation
      (evaluation.json: net total return and Sharpe of the greedy policy,
      next to buy-and-hold, flat and the turnover-matched random baseline).

  python3 perf/offline_study.py throughput --foxrl ... --dataset D
      Updates per second of each algorithm (eval off): the median over the
      epochs after the first (the first pays allocations and warm-up).

Every run is a plain `foxrl train-offline` command, printed before it runs.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys


def run(cmd, quiet=True):
    print("$ " + " ".join(cmd), flush=True)
    result = subprocess.run(cmd, stdout=subprocess.PIPE if quiet else None, stderr=subprocess.STDOUT if quiet else None,
                            text=True)
    if result.returncode != 0:
        if quiet:
            sys.stderr.write(result.stdout or "")
        sys.exit(f"offline_study: command failed with exit {result.returncode}")
    return result.stdout if quiet else ""


def metrics_lines(run_dir):
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def behaviour_return(foxrl, dataset):
    info = json.loads(run([foxrl, "dataset", "info", dataset, "--json"]))
    returns = info["episodes"]["return"]
    return returns["mean"], returns["count"]


def cmd_datasets(a):
    os.makedirs(a.out, exist_ok=True)
    dqn = os.path.join(a.out, "dqn")
    shutil.rmtree(dqn, ignore_errors=True)
    run([a.foxrl, "train", "--config", a.dqn_config, "--set", f"out_dir={dqn}", "--set", "keep_checkpoints=1000",
         "--set", f"seed={a.seed}"])
    checkpoints = sorted(os.listdir(os.path.join(dqn, "checkpoints")))
    final = os.path.join(dqn, "checkpoints", checkpoints[-1])
    early = os.path.join(dqn, "checkpoints", f"epoch-{a.mediocre_epoch:08d}")
    out = lambda name: os.path.join(a.out, name)
    run([a.foxrl, "collect", "--run", early, "--policy", "epsilon-greedy", "--epsilon", "0.3", "--steps", "100000",
         "--out", out("mediocre.safetensors")])
    run([a.foxrl, "collect", "--set", "env=cartpole", "--set", "num_envs=8", "--set", f"seed={a.seed + 10}",
         "--steps", "50000", "--out", out("random.safetensors")])
    run([a.foxrl, "collect", "--run", final, "--policy", "greedy", "--set", f"seed={a.seed + 11}", "--steps", "50000",
         "--out", out("expert.safetensors")])
    run([a.foxrl, "dataset", "merge", out("random.safetensors"), out("expert.safetensors"), "--out",
         out("mixed.safetensors")])
    for name in ("mediocre", "mixed"):
        mean, count = behaviour_return(a.foxrl, out(name + ".safetensors"))
        print(f"{name}: behaviour mean return {mean} over {count} episodes")


def cmd_market_dataset(a):
    os.makedirs(a.out, exist_ok=True)
    dqn = os.path.join(a.out, "market-dqn")
    shutil.rmtree(dqn, ignore_errors=True)
    cmd = [a.foxrl, "train", "--set", "env=market", "--set", f"out_dir={dqn}", "--set", f"seed={a.seed}"]
    for kv in a.set:
        cmd += ["--set", kv]
    run(cmd)
    checkpoints = sorted(os.listdir(os.path.join(dqn, "checkpoints")))
    final = os.path.join(dqn, "checkpoints", checkpoints[-1])
    out = os.path.join(a.out, "market.safetensors")
    run([a.foxrl, "collect", "--run", final, "--policy", "epsilon-greedy", "--epsilon", str(a.epsilon), "--steps",
         str(a.steps), "--out", out])
    mean, count = behaviour_return(a.foxrl, out)
    print(f"market: behaviour mean episode return {mean} over {count} episodes")


def market_rows(out_dir):
    """name -> (net total return, Sharpe, trades) of the run's test-split evaluation, if it has one."""
    path = os.path.join(out_dir, "evaluation.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        report = json.load(f)
    return {r["name"]: (r["total_return"], r["sharpe"], r["trades"]) for r in report["strategies"]}


def train(a, dataset, algo, seed, out_dir, extra):
    cmd = [a.foxrl, "train-offline", "--dataset", dataset, "--algo", algo, "--overwrite", "--set", f"seed={seed}",
           "--set", f"out_dir={out_dir}"]
    for kv in a.set + extra:
        cmd += ["--set", kv]
    run(cmd)
    return metrics_lines(out_dir)


def cmd_quality(a):
    rows = []
    records = []
    market_table = []
    for dataset in a.dataset:
        name = os.path.splitext(os.path.basename(dataset))[0]
        behaviour, episodes = behaviour_return(a.foxrl, dataset)
        finals = {}
        for algo in a.algos.split(","):
            finals[algo] = []
            for seed in [int(s) for s in a.seeds.split(",")]:
                out_dir = os.path.join(a.work, f"{name}-{algo}-{seed}")
                lines = train(a, dataset, algo, seed, out_dir, [])
                final = lines[-1]
                finals[algo].append(final["eval_return_mean"])
                record = {"dataset": name, "algo": algo, "seed": seed, "final_return": final["eval_return_mean"],
                          "final_return_std": final["eval_return_std"], "episodes": final["eval_episodes"],
                          "updates": final["updates"], "curve": [l.get("eval_return_mean") for l in lines]}
                market = market_rows(out_dir)
                if market:
                    record["test_split"] = market
                    market_table.append((name, algo, seed, market))
                records.append(record)
        rows.append((name, behaviour, episodes, finals))
    print()
    print("| dataset | behaviour (mean episode return) | " + " | ".join(
        f"{algo}: median [min, max]" for algo in a.algos.split(",")) + " |")
    print("|---|---|" + "---|" * len(a.algos.split(",")))
    for name, behaviour, episodes, finals in rows:
        cells = []
        for algo in a.algos.split(","):
            v = finals[algo]
            cells.append(f"{statistics.median(v):.4g} [{min(v):.4g}, {max(v):.4g}]")
        print(f"| {name} | {behaviour:.4g} ({episodes} episodes) | " + " | ".join(cells) + " |")
    if market_table:
        print()
        print("Test split (net of costs; `evaluation.json` of each run): total return / Sharpe / trades")
        print()
        print("| dataset | algo | seed | greedy policy | buy and hold | always flat | random, same turnover |")
        print("|---|---|---|---|---|---|---|")
        cell = lambda v: f"{v[0]:+.4f} / {v[1]:.2f} / {v[2]}" if v else "-"
        for name, algo, seed, m in market_table:
            agent = next((v for k, v in m.items() if k.startswith("agent")), None)
            random_row = next((v for k, v in m.items() if k.startswith("random")), None)
            print(f"| {name} | {algo} | {seed} | {cell(agent)} | {cell(m.get('buy and hold'))} | "
                  f"{cell(m.get('always flat'))} | {cell(random_row)} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(records, f, indent=1)


def cmd_throughput(a):
    print("| algo | updates/s (median of epochs 2..N) |")
    print("|---|---|")
    for algo in a.algos.split(","):
        out_dir = os.path.join(a.work, f"throughput-{algo}")
        lines = train(a, a.dataset[0], algo, 1, out_dir, ["eval_episodes=0"])
        rates = [l["updates_per_s"] for l in lines[1:]] or [lines[0]["updates_per_s"]]
        print(f"| {algo} | {statistics.median(rates):.0f} |", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("datasets")
    d.add_argument("--foxrl", required=True)
    d.add_argument("--out", required=True)
    d.add_argument("--dqn-config", default=os.path.join(os.path.dirname(__file__), "configs", "cartpole-learn.json"))
    d.add_argument("--mediocre-epoch", type=int, default=3)
    d.add_argument("--seed", type=int, default=1)
    m = sub.add_parser("market-dataset")
    m.add_argument("--foxrl", required=True)
    m.add_argument("--out", required=True)
    m.add_argument("--seed", type=int, default=1)
    m.add_argument("--epsilon", type=float, default=0.2)
    m.add_argument("--steps", type=int, default=100000)
    m.add_argument("--set", action="append", default=[], help="config override of the DQN run (key=value)")
    for name in ("quality", "throughput"):
        q = sub.add_parser(name)
        q.add_argument("--foxrl", required=True)
        q.add_argument("--dataset", action="append", required=True)
        q.add_argument("--algos", default="iql,cql,bc")
        q.add_argument("--seeds", default="1,2,3")
        q.add_argument("--work", default="offline-study-runs")
        q.add_argument("--set", action="append", default=[], help="config override for every run (key=value)")
        q.add_argument("--json")
    a = p.parse_args()
    {"datasets": cmd_datasets, "market-dataset": cmd_market_dataset, "quality": cmd_quality,
     "throughput": cmd_throughput}[a.command](a)


if __name__ == "__main__":
    main()
