#!/usr/bin/env python3
"""Summarise an `ncu --csv --metrics gpu__time_duration.sum` log: one line per
launch (short kernel name, grid, block, microseconds) and the total.
Usage: ncu_summary.py LOG.csv [TITLE]"""
import csv
import re
import sys


def short_name(name):
    # Kokkos kernels carry the functor or lambda in the template arguments.
    m = re.search(r"foxrl::[A-Za-z_:]+[A-Za-z_]", name)
    if m:
        return m.group(0)
    return re.sub(r"\(.*", "", name)[:70]


def main():
    path = sys.argv[1]
    title = sys.argv[2] if len(sys.argv) > 2 else path
    lines = open(path, errors="replace").read().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        print(f"[{title}] no kernels profiled; last lines of the log:")
        print("\n".join(lines[-5:]))
        return
    total = 0.0
    print(f"[{title}] kernel, grid, block, us")
    for row in csv.DictReader(lines[start:]):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(row["Metric Value"].replace(",", ""))
        us = value / 1000.0 if row.get("Metric Unit", "ns") in ("ns", "nsecond") else value
        total += us
        print(f"  {short_name(row['Kernel Name'])[:60]:60s} {row.get('Grid Size', ''):>14s} "
              f"{row.get('Block Size', ''):>14s} {us:9.2f}")
    print(f"[{title}] total {total:.2f} us")


if __name__ == "__main__":
    main()
