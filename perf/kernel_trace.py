#!/usr/bin/env python3
"""Summarise `foxrl_bench_pipeline --kernel-trace FILE`: CUPTI's record of
every kernel, copy and fill of N fenced training iterations, warm.

Per iteration: `lead` (from the host's call to the first GPU activity),
`span` (first activity's start to last one's end), `busy` (the time at
least one activity ran) and `gaps` (span - busy: the chain waiting between
graph nodes). Per position in the iteration (the activities of the
iterations that have the most common count, in start order): the median
time of that node in place and the median gap before it. Medians over the
iterations.
Usage: kernel_trace.py [--json] TRACE.csv [TITLE] | kernel_trace.py --self-test"""
import csv
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ncu_summary import short_name  # noqa: E402


def read(path):
    """Rows of the trace: {iteration: [(start_ns, end_ns, name), ...]} in start order."""
    iterations = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            iterations.setdefault(int(row["iteration"]), []).append(
                (int(row["start_ns"]), int(row["end_ns"]), row["name"]))
    for acts in iterations.values():
        acts.sort()
    return iterations


def busy_and_gaps(acts):
    """Union length of the intervals, and the gap before each activity (0 when it overlaps what ran before)."""
    busy = 0
    covered_to = None
    gaps = []
    for start, end, _ in acts:
        if covered_to is None:
            gaps.append(0)
            busy += end - start
            covered_to = end
        elif start >= covered_to:
            gaps.append(start - covered_to)
            busy += end - start
            covered_to = end
        else:
            gaps.append(0)
            if end > covered_to:
                busy += end - covered_to
                covered_to = end
    return busy, gaps


def summarise(iterations):
    med = statistics.median
    per = []
    for acts in iterations.values():
        if not acts:
            continue
        busy, gaps = busy_and_gaps(acts)
        span = max(e for _, e, _ in acts) - acts[0][0]
        per.append({"lead": acts[0][0], "span": span, "busy": busy, "count": len(acts), "acts": acts, "gaps": gaps})
    if not per:
        return None
    mode = statistics.mode(p["count"] for p in per)
    same = [p for p in per if p["count"] == mode]
    nodes = []
    for k in range(mode):
        nodes.append({"name": short_name(same[0]["acts"][k][2]),
                      "us": med((p["acts"][k][1] - p["acts"][k][0]) for p in same) / 1e3,
                      "gap_before_us": med(p["gaps"][k] for p in same) / 1e3})
    return {"iterations": len(per), "iterations_with_mode_count": len(same), "activities_per_iteration": mode,
            "lead_us": med(p["lead"] for p in per) / 1e3, "span_us": med(p["span"] for p in per) / 1e3,
            "busy_us": med(p["busy"] for p in per) / 1e3,
            "gaps_us": med(p["span"] - p["busy"] for p in per) / 1e3, "nodes": nodes}


def print_summary(s, title):
    print(f"[{title}] warm, median of {s['iterations']} fenced iterations: span {s['span_us']:.2f} us = "
          f"busy {s['busy_us']:.2f} + gaps {s['gaps_us']:.2f}; lead {s['lead_us']:.2f} us; "
          f"{s['activities_per_iteration']} activities per iteration")
    print("  #   us in place  gap before  activity")
    for k, n in enumerate(s["nodes"]):
        print(f"  {k:2d} {n['us']:10.2f} {n['gap_before_us']:11.2f}  {n['name'][:70]}")


def self_test():
    import tempfile
    # Two iterations of three activities: a 10 us kernel, a 2 us gap, a 5 us kernel overlapping a 3 us one
    # by 1 us, then a 4 us gap and a 1 us copy. Span 10+2+5+... = start 1000 to end 23000.
    rows = []
    for it in range(3):
        rows += [(it, 1000, 11000, "void foxrl::kernels::A<int>(int)"), (it, 13000, 18000, "cublasB_kernel"),
                 (it, 17000, 19000, "void foxrl::kernels::C(int)"), (it, 23000, 24000, "[memcpy]")]
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        f.write("iteration,start_ns,end_ns,graph_node,name\n")
        for it, s, e, n in rows:
            f.write(f'{it},{s},{e},0,"{n}"\n')
        path = f.name
    s = summarise(read(path))
    os.unlink(path)
    want = {"span_us": 23.0, "busy_us": 10 + 6 + 1, "gaps_us": 23.0 - 17.0, "lead_us": 1.0,
            "activities_per_iteration": 4, "iterations": 3}
    for k, v in want.items():
        assert abs(s[k] - v) < 1e-9, (k, s[k], v)
    assert [n["gap_before_us"] for n in s["nodes"]] == [0.0, 2.0, 0.0, 4.0], s["nodes"]
    assert [n["us"] for n in s["nodes"]] == [10.0, 5.0, 2.0, 1.0], s["nodes"]
    assert s["nodes"][0]["name"] == "foxrl::kernels::A", s["nodes"][0]["name"]
    print("kernel_trace.py: self-test ok")


def main():
    args = sys.argv[1:]
    if args == ["--self-test"]:
        self_test()
        return
    as_json = bool(args) and args[0] == "--json"
    if as_json:
        args = args[1:]
    if not args:
        sys.exit(__doc__)
    title = args[1] if len(args) > 1 else args[0]
    s = summarise(read(args[0]))
    if s is None:
        sys.exit(f"kernel_trace.py: {args[0]}: no activity in the trace")
    if as_json:
        print(json.dumps({"bench": "kernel_trace", "config": title, **s}))
    else:
        print_summary(s, title)


if __name__ == "__main__":
    main()
