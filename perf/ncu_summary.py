#!/usr/bin/env python3
"""Summarise an `ncu --csv --metrics gpu__time_duration.sum[,dram__bytes.sum]`
log: one line per launch (short kernel name, grid, block, microseconds) and
the total. When the log also has dram__bytes.sum (or its two halves,
dram__bytes_read.sum and dram__bytes_write.sum, which are added), each line
gets the bytes the kernel moved to and from HBM, its achieved bandwidth as
a share of the peak (the H200's 4.8 TB/s unless --hbm-tbps says otherwise:
3.35 for an H100 SXM), and its memory floor (those bytes at peak bandwidth).
DRAM bytes count what missed the 50 MB L2, so for data that stays in L2
between kernels they understate the traffic the kernel asked for.
When the log also has the fp32 instruction counts
(smsp__sass_thread_inst_executed_op_{ffma,fadd,fmul}_pred_on.sum), each line
gets the kernel's fp32 FLOPs (2 per FMA), their share of the fp32 peak (the
H100's and H200's 66.9 TFLOP/s: 132 SMs x 128 lanes x 2 x 1.98 GHz, unless
--fp32-tflops says otherwise), its floor (the larger of the memory and the
FLOP floor), the time over that floor, and whether it meets the bar of
issue 13 for a kernel that is not a gemm: within 2x of its floor or under
3 us ("bar": yes, no, or "gemm" for the library's products).
Usage: ncu_summary.py [--hbm-tbps TB/s] [--fp32-tflops TF/s] LOG.csv [TITLE]"""
import csv
import re
import sys

DRAM_METRICS = ("dram__bytes.sum", "dram__bytes_read.sum", "dram__bytes_write.sum")
# fp32 instructions executed by active threads, and the FLOPs each counts.
FLOP_METRICS = {
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": 2.0,
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": 1.0,
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum": 1.0,
}


def is_gemm(name):
    return any(k in name for k in ("gemm", "cutlass", "splitKreduce"))


def short_name(name):
    # Kokkos kernels carry the functor or lambda in the template arguments;
    # some ncu versions drop the outer namespace (foxrl::) when they
    # demangle, so the functor, the function around a lambda or the
    # hand-written kernel is looked for without it too.
    # A hand-written kernel (kernels/cuda/) by its own name, not by the
    # first functor among its template arguments.
    m = re.match(r"void (?:foxrl::)?(?:kernels::)?(cuda::[A-Za-z_]+_kernel)\b", name)
    if m:
        return "foxrl::kernels::" + m.group(1)
    m = re.search(r"foxrl::[A-Za-z_:]+[A-Za-z_]", name)
    if m:
        return m.group(0)
    m = re.search(r"Parallel(?:For|Reduce|Scan)<(?:void )?((?:[A-Za-z_]+::)*[A-Za-z_]+)(<[^<>]*(?:<[^<>]*>[^<>]*)*>)?"
                  r"(::[a-z_]+)?", name)
    if m:
        return m.group(1) + (m.group(3) or "")
    m = re.match(r"void ((?:[A-Za-z_]+::)*[A-Za-z_]+_kernel)", name)
    if m:
        return m.group(1)
    return re.sub(r"\(.*", "", name)[:70]


def number(row):
    return float(row["Metric Value"].replace(",", ""))


def main():
    args = sys.argv[1:]
    hbm_tbps, fp32_tflops = 4.8, 66.9
    while len(args) >= 2 and args[0] in ("--hbm-tbps", "--fp32-tflops"):
        if args[0] == "--hbm-tbps":
            hbm_tbps = float(args[1])
        else:
            fp32_tflops = float(args[1])
        args = args[2:]
    if not args:
        sys.exit(__doc__)
    hbm_bytes_per_us = hbm_tbps * 1e12 / 1e6
    flops_per_us = fp32_tflops * 1e12 / 1e6
    path = args[0]
    title = args[1] if len(args) > 1 else path
    lines = open(path, errors="replace").read().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        print(f"[{title}] no kernels profiled; last lines of the log:")
        print("\n".join(lines[-5:]))
        return
    launches = {}
    for row in csv.DictReader(lines[start:]):
        launch = launches.setdefault(row["ID"], {"row": row})
        metric = row.get("Metric Name")
        if metric == "gpu__time_duration.sum":
            value = number(row)
            launch["us"] = value / 1000.0 if row.get("Metric Unit", "ns") in ("ns", "nsecond") else value
        elif metric in DRAM_METRICS:
            scale = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}.get(row.get("Metric Unit", "byte"), 1)
            launch["bytes"] = launch.get("bytes", 0.0) + number(row) * scale
        elif metric in FLOP_METRICS:
            launch["flops"] = launch.get("flops", 0.0) + number(row) * FLOP_METRICS[metric]
    with_bytes = any("bytes" in l for l in launches.values())
    with_flops = with_bytes and any("flops" in l for l in launches.values())
    total = total_floor = 0.0
    header = "kernel, grid, block, us" + (", DRAM MB, % of HBM peak, floor us" if with_bytes else "")
    if with_flops:
        header += ", MFLOP, % of fp32 peak, floor us (memory or FLOPs), x floor, bar"
    print(f"[{title}] {header}")
    for launch in launches.values():
        row, us = launch["row"], launch.get("us", 0.0)
        total += us
        name = short_name(row["Kernel Name"])
        line = f"  {name[:60]:60s} {row.get('Grid Size', ''):>14s} {row.get('Block Size', ''):>14s} {us:9.2f}"
        if with_bytes and "bytes" in launch:
            memory_floor = launch["bytes"] / hbm_bytes_per_us
            share = 100.0 * memory_floor / us if us > 0 else 0.0
            line += f" {launch['bytes'] / 1e6:9.2f} {share:6.1f}% {memory_floor:8.2f}"
            floor = memory_floor
            if with_flops:
                flop_floor = launch.get("flops", 0.0) / flops_per_us
                floor = max(memory_floor, flop_floor)
                over = us / floor if floor > 0 else float("inf")
                bar = "gemm" if is_gemm(name) else ("yes" if us < 3.0 or us <= 2.0 * floor else "no")
                line += f" {launch.get('flops', 0.0) / 1e6:9.2f} {100.0 * flop_floor / us if us > 0 else 0.0:6.1f}%" \
                        f" {floor:8.2f} {over:8.1f}x {bar:>4s}"
            total_floor += floor
        print(line)
    print(f"[{title}] total {total:.2f} us" + (f", floor {total_floor:.2f} us" if with_bytes else ""))


if __name__ == "__main__":
    main()
