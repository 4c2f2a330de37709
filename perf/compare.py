#!/usr/bin/env python3
"""Perf-regression check: compare a benchmark run against a stored baseline.

Both files hold JSON lines as printed by perf/bench_* programs, one object per
measurement with at least "bench", "config", "backend" and "median_us".
A measurement regresses when its median is slower than the baseline's by more
than --tolerance (relative). Exit code 1 on any regression or on a baseline
measurement missing from the run, 0 otherwise.

  perf/compare.py perf/results/baseline-h200.jsonl new-run.jsonl --tolerance 0.10
"""
import argparse
import json
import sys


def load(path):
    rows = {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line.startswith("{"):
                continue  # benchmarks may print human-readable lines too
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"{path}:{number}: not JSON: {e}")
            if "median_us" not in row:
                continue
            key = (row.get("bench", "?"), row.get("config", ""), row.get("backend", ""))
            rows[key] = row
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("baseline")
    parser.add_argument("run")
    parser.add_argument("--tolerance", type=float, default=0.10,
                        help="allowed relative slow-down (default 0.10 = 10%%)")
    args = parser.parse_args()
    base, run = load(args.baseline), load(args.run)
    failed = False
    print(f"{'bench':24} {'config':34} {'backend':8} {'base us':>10} {'run us':>10} {'change':>8}")
    for key in sorted(base):
        b = base[key]["median_us"]
        if key not in run:
            print(f"{key[0]:24} {key[1]:34} {key[2]:8} {b:10.2f} {'missing':>10}")
            failed = True
            continue
        r = run[key]["median_us"]
        change = (r - b) / b if b > 0 else 0.0
        mark = "  REGRESSION" if change > args.tolerance else ""
        failed |= change > args.tolerance
        print(f"{key[0]:24} {key[1]:34} {key[2]:8} {b:10.2f} {r:10.2f} {change:+8.1%}{mark}")
    for key in sorted(set(run) - set(base)):
        print(f"{key[0]:24} {key[1]:34} {key[2]:8} {'new':>10} {run[key]['median_us']:10.2f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
