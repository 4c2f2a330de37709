#!/usr/bin/env python3
"""Floors of one training iteration of a pipeline config: gemm FLOPs, the
minimum bytes moved, and the time those take at an H200's peak rates.

  perf/floors.py [CONFIG.json ...] [--launches PIPELINE.jsonl] [--markdown] [--detail]

Without configs: the three pipeline benchmarks of perf/configs/. --launches
takes the JSON lines foxrl_bench_pipeline printed (their "config" is the
--label, matched against the config file's name without .json) and adds
their Kokkos launches per iteration. --markdown prints the table of
perf/README.md; --detail lists every FLOP and byte item. The model is
perf/README.md's "Floors"; this file is its reference implementation
(python3, standard library only).
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CONFIGS = ["market-throughput", "cartpole-throughput", "cartpole-learn"]

# H200 SXM peak rates the time floors divide by (dense, no sparsity).
HBM_BYTES_PER_S = 4.8e12
PEAK_FLOPS = {"fp32": 67e12, "tf32": 495e12, "bf16": 989e12}

# TrainConfig's defaults (src/config/train_config.hpp) for the keys the model reads.
DEFAULTS = {
    "env": "market", "features": "returns", "window": 64, "num_envs": 64, "hidden": [128, 128],
    "n_step": 3, "buffer_capacity": 1 << 18, "batch_size": 256, "updates_per_iteration": 1,
    "train_every": 1, "target_update_every": 500, "polyak_tau": 0.0, "per_alpha": 0.6,
}
SUM_TREE_FANOUT = 32  # views/replay/sum_tree_shape.hpp
CARTPOLE_OBS, CARTPOLE_ACTIONS, MARKET_ACTIONS = 4, 2, 3


class ConfigError(Exception):
    pass


def load_config(path):
    """The model's inputs from a config file; ConfigError names file and key."""
    def no_duplicates(pairs):
        keys = [k for k, _ in pairs]
        for k in keys:
            if keys.count(k) > 1:
                raise ConfigError(f"{path}: key \"{k}\" appears twice")
        return dict(pairs)
    try:
        with open(path) as f:
            raw = json.load(f, object_pairs_hook=no_duplicates)
    except OSError as e:
        raise ConfigError(f"{path}: cannot read the config: {e.strerror}")
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}:{e.lineno}:{e.colno}: not JSON: {e.msg}")
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a JSON object")
    c = dict(DEFAULTS)
    c.update({k: v for k, v in raw.items() if k in DEFAULTS})

    def integer(key, minimum):
        v = c[key]
        if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
            raise ConfigError(f"{path}: \"{key}\" must be an integer >= {minimum}, got {json.dumps(v)[:200]}")
        return v

    def number(key):
        v = c[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise ConfigError(f"{path}: \"{key}\" must be a number >= 0, got {json.dumps(v)[:200]}")
        return float(v)

    m = {"name": os.path.splitext(os.path.basename(path))[0]}
    if c["env"] == "cartpole":
        m["obs"], m["actions"], m["env_state"] = CARTPOLE_OBS, CARTPOLE_ACTIONS, 4 * 4 + 4 + 8
    elif c["env"] == "market":
        extra = {"returns": 1, "ohlcv": 4}.get(c["features"])
        if extra is None:
            raise ConfigError(f"{path}: \"features\" must be \"returns\" or \"ohlcv\", got {json.dumps(c['features'])[:200]}")
        m["obs"], m["actions"], m["env_state"] = integer("window", 1) + extra, MARKET_ACTIONS, 3 * 4 + 8
    else:
        raise ConfigError(f"{path}: \"env\" must be \"cartpole\" or \"market\", got {json.dumps(c['env'])[:200]}")
    m["env"] = c["env"]
    hidden = c["hidden"]
    if not isinstance(hidden, list) or not all(isinstance(h, int) and not isinstance(h, bool) and h > 0 for h in hidden):
        raise ConfigError(f"{path}: \"hidden\" must be a list of positive integers, got {json.dumps(hidden)[:200]}")
    m["hidden"] = hidden
    for key, minimum in [("num_envs", 1), ("n_step", 1), ("buffer_capacity", 1), ("batch_size", 1),
                         ("updates_per_iteration", 1), ("train_every", 1), ("target_update_every", 1)]:
        m[key] = integer(key, minimum)
    m["polyak_tau"], m["per_alpha"] = number("polyak_tau"), number("per_alpha")
    # Updates per iteration (averaged when train_every > 1).
    u = m["updates_per_iteration"] / m["train_every"]
    m["updates"] = int(u) if u == int(u) else u
    return m


def layers(m):
    """(in, out) of every dense layer: the trunk, then the dueling head (V + A outputs)."""
    widths = [m["obs"]] + m["hidden"] + [1 + m["actions"]]
    return list(zip(widths[:-1], widths[1:]))


def tree_levels(capacity):
    levels, nodes = 1, capacity
    while nodes > SUM_TREE_FANOUT:
        nodes = -(-nodes // SUM_TREE_FANOUT)
        levels += 1
    return levels


def gemm_calls(m):
    """cuBLAS calls per iteration of the blas dense backend (src/nn/mlp.hpp):
    per forward one per trunk layer (two for the first layer of the stacked
    [s; s'] pass), the head in a foxrl kernel; backward dW per trunk layer
    and dX per trunk layer but the first."""
    trunk = len(m["hidden"])
    if trunk == 0:
        return 1 * m["updates"]
    return trunk + m["updates"] * ((trunk + 1) + trunk + (2 * trunk - 1))


def floors(m):
    """FLOP and byte items of one iteration: lists of (phase, what, amount)."""
    N, B, D, H = m["num_envs"], m["batch_size"], m["obs"], 1 + m["actions"]
    U = m["updates"]
    W = sum(i * o for i, o in layers(m))  # weights (multiply-adds per row)
    W0 = layers(m)[0][0] * layers(m)[0][1]
    P = sum(i * o + o for i, o in layers(m))  # parameters, unpadded
    S = sum(m["hidden"])  # hidden activations per row
    per = m["per_alpha"] > 0
    L = tree_levels(m["buffer_capacity"])
    n = m["n_step"]
    flops = [
        ("collector", f"action forward, {N} rows", 2 * N * W),
        ("update", f"online forward [s; s'], {2 * B} rows", U * 2 * 2 * B * W),
        ("update", f"target forward s', {B} rows", U * 2 * B * W),
        ("update", "backward dW, every layer", U * 2 * B * W),
        ("update", "backward dX, every layer but the first", U * 2 * B * (W - W0)),
    ]
    target_copy = 8 * P if m["polyak_tau"] > 0 else 8 * P / m["target_update_every"]
    nbytes = [
        ("env", "state read + written", 2 * m["env_state"] * N),
        ("env", "action read; reward, terminated, truncated written", (4 + 6) * N),
        ("env", "next observation written once (its replay row)", 4 * N * D),
        ("collector", "observation read by the action forward", 4 * N * D),
        ("collector", "online weights read by the action forward", 4 * P),
        ("collector", "action written", 4 * N),
        ("collector", "episode statistics: running return read + written", 8 * N),
        ("replay", "insert: action, reward, discount, next_ref written", 16 * N),
        ("update", "online weights read (forward and backward)", U * 4 * P),
        ("update", "target weights read", U * 4 * P),
        ("update", "gradients written, then read by the guard's norm and Adam", U * 8 * P),
        ("update", "Adam: weights, m, v read and written", U * 24 * P),
        ("update", "target copy (hard every target_update_every updates, or Polyak)", U * target_copy),
        ("update", "sampled rows s and s' read from the ring", U * 8 * B * D),
        ("update", "sampled slots' action, reward, discount, next_ref read", U * 16 * B),
        ("update", "hidden activations at s saved for the backward (written + read)", U * 8 * B * S),
        ("update", "head outputs online [s; s'] and target s' (written + read)", U * 8 * 3 * B * H),
        ("update", "dL/d head (written + read), |td| (written + read)", U * (8 * B * H + 8 * B)),
    ]
    if n > 1:
        nbytes.append(("collector", f"{n}-step window: rewards and ends written, {n} read", (5 + 5 * n) * N))
    if per:
        upper = sum(-(-N // SUM_TREE_FANOUT ** lv) for lv in range(1, L))
        nbytes += [
            ("replay", "insert: leaves written, the levels above refreshed (32 children + node)", 4 * N + 132 * upper),
            ("update", f"sample: {L}-level descent, one 128-byte line per level; weight written",
             U * B * (128 * L + 4)),
            ("update", f"priority update: index, |td|, leaf + {L - 1} levels of 32 children + node",
             U * B * (20 + 132 * (L - 1))),
        ]
    return flops, nbytes


def summarize(m, launches):
    flops, nbytes = floors(m)
    total_flops = sum(v for _, _, v in flops)
    total_bytes = sum(v for _, _, v in nbytes)
    mem_us = total_bytes / HBM_BYTES_PER_S * 1e6
    row = {
        "config": m["name"],
        "network": "-".join(str(w) for w in [m["obs"]] + m["hidden"]) + f"-dueling({m['actions']})",
        "num_envs": m["num_envs"], "batch": m["batch_size"],
        "collector_mflop": sum(v for p, _, v in flops if p == "collector") / 1e6,
        "update_mflop": sum(v for p, _, v in flops if p == "update") / 1e6,
        "mb": total_bytes / 1e6,
        "weights_mb": sum(v for _, what, v in nbytes if "weights" in what or "Adam" in what or "gradients" in what
                          or "target copy" in what) / 1e6,
        "memory_us": mem_us,
        "gemm_calls": gemm_calls(m),
        "kokkos_launches": launches.get(m["name"]),
    }
    for precision, peak in PEAK_FLOPS.items():
        row[f"{precision}_us"] = total_flops / peak * 1e6
        row[f"floor_{precision}_us"] = max(row[f"{precision}_us"], mem_us)
    return row, flops, nbytes


def read_launches(path):
    found = {}
    try:
        with open(path) as f:
            for number, line in enumerate(f, 1):
                line = line.strip()
                if not line.startswith("{"):
                    continue
                try:
                    r = json.loads(line)
                except json.JSONDecodeError as e:
                    raise ConfigError(f"{path}:{number}: not JSON: {e.msg}")
                if r.get("bench") == "pipeline" and "launches_per_iteration" in r:
                    name = os.path.splitext(os.path.basename(str(r.get("config", ""))))[0]
                    found[name] = r["launches_per_iteration"]
    except OSError as e:
        raise ConfigError(f"{path}: cannot read the pipeline results: {e.strerror}")
    return found


def fmt(v, digits):
    return "-" if v is None else f"{v:.{digits}f}" if isinstance(v, float) else str(v)


# The two tables of --markdown: the work of an iteration, and its time floors.
WORK_COLUMNS = [
    ("config", "config", None), ("network", "network", None), ("num_envs", "envs", None), ("batch", "batch", None),
    ("collector_mflop", "MFLOP collector", 1), ("update_mflop", "MFLOP update", 1), ("mb", "MB moved", 3),
    ("weights_mb", "of it weights + optimizer", 3), ("gemm_calls", "gemm calls", None),
    ("kokkos_launches", "Kokkos launches", None),
]
TIME_COLUMNS = [
    ("config", "config", None), ("memory_us", "HBM us", 2), ("fp32_us", "fp32 us", 2), ("tf32_us", "TF32 us", 2),
    ("bf16_us", "BF16 us", 2), ("floor_fp32_us", "floor fp32 us", 2), ("floor_tf32_us", "floor TF32 us", 2),
    ("floor_bf16_us", "floor BF16 us", 2),
]


def table(rows, columns, markdown):
    cells = [[h for _, h, _ in columns]] + [[fmt(r[k], d) for k, _, d in columns] for r in rows]
    if markdown:
        lines = ["| " + " | ".join(cells[0]) + " |", "|" + "|".join("---" for _ in columns) + "|"]
        lines += ["| " + " | ".join(c) + " |" for c in cells[1:]]
    else:
        widths = [max(len(c[i]) for c in cells) for i in range(len(columns))]
        lines = ["  ".join(c[i].rjust(widths[i]) if i else c[i].ljust(widths[i]) for i in range(len(columns)))
                 for c in cells]
    print("\n".join(lines))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("configs", nargs="*", help="config JSON files (default: the three pipeline configs)")
    parser.add_argument("--launches", help="foxrl_bench_pipeline output (JSON lines) with launches_per_iteration")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("--detail", action="store_true", help="list every FLOP and byte item")
    args = parser.parse_args(argv)
    paths = args.configs or [os.path.join(HERE, "configs", c + ".json") for c in DEFAULT_CONFIGS]
    try:
        launches = read_launches(args.launches) if args.launches else {}
        results = [summarize(load_config(p), launches) for p in paths]
    except ConfigError as e:
        print(f"floors.py: {e}", file=sys.stderr)
        return 2
    rows = [r for r, _, _ in results]
    table(rows, WORK_COLUMNS, args.markdown)
    print()
    table(rows, TIME_COLUMNS, args.markdown)
    if args.detail:
        for r, flops, nbytes in results:
            print(f"\n{r['config']}: FLOPs (2 per multiply-add)")
            for phase, what, v in flops:
                print(f"  {phase:10} {v / 1e6:12.3f} MFLOP  {what}")
            print(f"{r['config']}: bytes")
            for phase, what, v in nbytes:
                print(f"  {phase:10} {v / 1e6:12.4f} MB     {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
