#!/usr/bin/env python3
"""Performance-regression check: runs the benchmark suite of a build N times
and compares each metric's median with this machine's stored baseline.

  perf/regress.py [--build-dir build/host] [--repeats 5] [--size full|quick|smoke]
                  [--machine NAME | --baseline FILE] [--tolerance 0.10] [--noise-k 2]
                  [--update-baseline] [--output FILE] [--current FILE]
  perf/regress.py --smoke [--build-dir build/host]     # tiny sizes, runs everything, compares nothing
  perf/regress.py --self-test                          # checks the comparison logic

The suite: foxrl_bench_update, foxrl_bench_replay, foxrl_bench_envs and
foxrl_bench_pipeline on perf/configs/{market-throughput,cartpole-throughput,
cartpole-learn}.json. Every median_us (and replay's stream_us) a benchmark
prints is a metric (microseconds, lower is better). Across the --repeats
runs a metric has a median and a spread, 1.4826 MAD / median (the median
absolute deviation, scaled to estimate a relative standard deviation; one
outlier run does not move it). A metric regresses when current / baseline >
1 + threshold, with threshold = max(tolerance, noise_k * sqrt(spread_baseline^2
+ spread_current^2)); a baseline metric missing from the run fails too.

--current FILE compares stored results instead of running (a file written
by --output or --update-baseline, or raw JSON lines as the benchmarks print
them, e.g. perf/results/h200-<commit>.jsonl; repeated lines of one metric
are its runs). --baseline FILE may be either kind as well.

Exit status: 0 no regression (or baseline written, or smoke run done),
1 regression or missing metric, 2 usage or input error (missing build
directory, executable or baseline; malformed file; a benchmark failed).
perf/README.md documents the sizes and the baseline format.
"""
import argparse
import datetime
import json
import math
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FORMAT = "foxrl-perf-results"
VERSION = 1
PIPELINE_CONFIGS = ["market-throughput", "cartpole-throughput", "cartpole-learn"]
TIME_FIELDS = ("median_us", "stream_us")

# What each size runs. "full" is the definition of perf/README.md (GPU
# machines); "quick" keeps every config but times fewer iterations, so a
# 2-core host finishes a run in ~15 s; "smoke" shrinks the configs too.
TINY = ["num_envs=16", "hidden=16,16", "batch_size=32", "buffer_capacity=2048", "learning_starts=256"]
SIZES = {
    "full": {
        "update": [], "replay": [], "envs": [],
        "pipeline": {c: {"iterations": 1000, "repeats": 3, "set": []} for c in PIPELINE_CONFIGS},
    },
    "quick": {
        "update": ["--quick"], "replay": ["--quick"], "envs": ["--quick"],
        "pipeline": {
            "market-throughput": {"iterations": 5, "repeats": 3, "set": []},
            "cartpole-throughput": {"iterations": 20, "repeats": 3, "set": []},
            "cartpole-learn": {"iterations": 300, "repeats": 3, "set": []},
        },
    },
    "smoke": {
        "update": ["--quick", "--repeats", "2"], "replay": ["--quick"], "envs": ["--quick"],
        "pipeline": {
            "market-throughput": {"iterations": 3, "repeats": 1, "set": TINY + ["synthetic_bars=20000"]},
            "cartpole-throughput": {"iterations": 3, "repeats": 1, "set": TINY},
            "cartpole-learn": {"iterations": 3, "repeats": 1, "set": TINY},
        },
    },
}


class InputError(Exception):
    """Bad user input or environment: exit 2 with the message."""


# ---- statistics and comparison (pure; --self-test checks them) ----

def median(values):
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


MAD_TO_SIGMA = 1.4826  # MAD of a normal distribution x this = its standard deviation


def spread(values):
    """Relative spread of the runs: 1.4826 x the median absolute deviation
    / the median (robust: a single outlier run barely moves it); 0 for one
    run."""
    m = median(values)
    if len(values) < 2 or m <= 0:
        return 0.0
    return MAD_TO_SIGMA * median([abs(v - m) for v in values]) / m


def summarize(runs):
    """{metric: [values]} -> {metric: {"median", "spread", "runs"}}."""
    return {k: {"median": median(v), "spread": spread(v), "runs": list(v)} for k, v in runs.items()}


def threshold(base_spread, cur_spread, tolerance, noise_k):
    return max(tolerance, noise_k * math.hypot(base_spread, cur_spread))


def compare(base, cur, tolerance, noise_k):
    """Rows (metric, base, cur, ratio, threshold, verdict) over both metric
    sets; verdict is one of ok, faster, REGRESSION, MISSING, new."""
    rows = []
    for k in sorted(set(base) | set(cur)):
        b, c = base.get(k), cur.get(k)
        if c is None:
            rows.append((k, b, None, None, None, "MISSING"))
            continue
        if b is None:
            rows.append((k, None, c, None, None, "new"))
            continue
        # A zero baseline (a raw line printing 0.00) cannot scale: any time above it regresses.
        ratio = c["median"] / b["median"] if b["median"] > 0 else (1.0 if c["median"] <= 0 else math.inf)
        t = threshold(b["spread"], c["spread"], tolerance, noise_k)
        verdict = "REGRESSION" if ratio > 1 + t else "faster" if ratio < 1 - t else "ok"
        rows.append((k, b, c, ratio, t, verdict))
    return rows


def failed(rows):
    return [r for r in rows if r[5] in ("REGRESSION", "MISSING")]


# ---- result files ----

def metric_lines(line_objects):
    """(metric name, value) of every time field of benchmark JSON lines."""
    for row in line_objects:
        if not isinstance(row, dict) or "bench" not in row:
            continue
        for field in TIME_FIELDS:
            v = row.get(field)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                yield f"{row['bench']} | {row.get('config', '')} | {field}", float(v), row.get("backend", "")


def read_jsonl(path, text):
    """Raw benchmark output: every repeated metric line is one more run."""
    runs, backends = {}, set()
    objects = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line.startswith("{"):
            continue  # benchmarks may print human-readable lines too
        try:
            objects.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise InputError(f"{path}:{number}: not a JSON line: {e.msg}")
    for name, value, backend in metric_lines(objects):
        runs.setdefault(name, []).append(value)
        if backend:
            backends.add(backend)
    if not runs:
        raise InputError(f"{path}: no benchmark lines with median_us in it")
    return {"format": FORMAT, "version": VERSION, "backend": ",".join(sorted(backends)), "size": "",
            "machine": "", "metrics": summarize(runs)}


def validate(path, doc):
    """Checks a results/baseline document; InputError names file and field."""
    def bad(field, why, value):
        raise InputError(f"{path}: {field}: {why}, got {json.dumps(value)[:200]}")
    if not isinstance(doc, dict):
        bad("top level", "must be a JSON object", doc)
    if doc.get("format") != FORMAT:
        bad("format", f'must be "{FORMAT}"', doc.get("format"))
    if doc.get("version") != VERSION:
        bad("version", f"must be {VERSION}", doc.get("version"))
    for key in ("machine", "size", "backend"):
        if not isinstance(doc.get(key), str):
            bad(key, "must be a string", doc.get(key))
    metrics = doc.get("metrics")
    if not isinstance(metrics, dict) or not metrics:
        bad("metrics", "must be a non-empty object of metric name -> {median, spread, runs}", metrics)
    for name, m in metrics.items():
        field = f"metrics.{json.dumps(name)}"
        if not isinstance(m, dict):
            bad(field, "must be an object with median, spread and runs", m)
        med, spr, runs = m.get("median"), m.get("spread"), m.get("runs")
        if isinstance(med, bool) or not isinstance(med, (int, float)) or not math.isfinite(med) or med <= 0:
            bad(field + ".median", "must be a positive number of microseconds", med)
        if isinstance(spr, bool) or not isinstance(spr, (int, float)) or not math.isfinite(spr) or spr < 0:
            bad(field + ".spread", "must be a number >= 0", spr)
        if (not isinstance(runs, list) or not runs or
                not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in runs)):
            bad(field + ".runs", "must be a non-empty list of positive numbers", runs)
    return doc


def read_results(path, what):
    if not os.path.exists(path):
        raise InputError(f"{path}: no such {what} file")
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise InputError(f"{path}: cannot read the {what} file: {e.strerror}")
    # A results document (regress.py writes it indented, so its first line
    # alone is not JSON) or benchmark JSON lines (each line one object).
    stripped = text.lstrip()
    first = stripped.split("\n", 1)[0].strip()
    try:
        first_is_line = isinstance(json.loads(first), dict) and "format" not in json.loads(first)
    except json.JSONDecodeError:
        first_is_line = False
    if stripped.startswith("{") and not first_is_line:
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise InputError(f"{path}:{e.lineno}:{e.colno}: not JSON: {e.msg}")
        return validate(path, doc)
    return read_jsonl(path, text)


def write_results(path, doc):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


# ---- machine and suite ----

def sanitize(name):
    s = re.sub(r"\((r|tm)\)", "", name.lower())
    s = re.sub(r"[^a-z0-9]+", "-", s).strip("-")
    return s[:80] or "unknown"


def machine_name():
    """The GPU's name (nvidia-smi) or else the CPU model and core count."""
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                                 text=True, timeout=30)
            first = out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else ""
            if first:
                return sanitize(first)
        except (OSError, subprocess.SubprocessError):
            pass
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    if not model:
        import platform
        model = platform.processor() or platform.machine() or "cpu"
    return sanitize(f"{model}-{os.cpu_count() or 1}c")


def build_commit(build_dir):
    """The commit the benchmarks were built from, as the build recorded it
    (generated/foxrl_commit.cpp, written by src/cmake/foxrlWriteCommit.cmake
    at every build), so a build carried to another machine, whose copy of
    the tree may have other git metadata, is named right; the checkout's
    HEAD when the build recorded none."""
    try:
        with open(os.path.join(build_dir, "generated", "foxrl_commit.cpp"), encoding="utf-8") as f:
            m = re.search(r'return "([^"]+)";', f.read())
        if m and m.group(1) != "unknown":
            return m.group(1)
    except OSError:
        pass
    return git_describe()


def git_describe():
    try:
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              timeout=30)
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=30)
        if head.returncode == 0:
            return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return "unknown"


def suite_commands(build_dir, size):
    """[(label, argv)] of one run of the suite at `size`."""
    if not os.path.isdir(build_dir):
        raise InputError(f"build directory {build_dir} not found (configure and build first, e.g. "
                         f"`cmake --preset host && cmake --build --preset host`)")
    spec = SIZES[size]
    commands = []

    def exe(name):
        path = os.path.join(build_dir, "perf", f"foxrl_bench_{name}")
        if not os.access(path, os.X_OK):
            raise InputError(f"{path}: benchmark executable not found (build the target foxrl_bench_{name}; "
                             f"benchmarks need FOXRL_ENABLE_PERF=ON)")
        return path
    for name in ("update", "replay", "envs"):
        commands.append((f"bench_{name}", [exe(name)] + spec[name]))
    for config, p in spec["pipeline"].items():
        cfg = os.path.join(HERE, "configs", f"{config}.json")
        if not os.path.isfile(cfg):
            raise InputError(f"{cfg}: pipeline config not found")
        argv = [exe("pipeline"), "--config", cfg, "--label", config, "--iterations", str(p["iterations"]),
                "--repeats", str(p["repeats"])]
        for kv in p["set"]:
            argv += ["--set", kv]
        commands.append((f"pipeline {config}", argv))
    return commands


def run_suite(build_dir, size, repeats, timeout):
    commands = suite_commands(build_dir, size)
    runs, backends = {}, set()
    for r in range(repeats):
        for label, argv in commands:
            print(f"regress: run {r + 1}/{repeats}: {label}", file=sys.stderr, flush=True)
            try:
                p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
            except subprocess.TimeoutExpired:
                raise InputError(f"{label}: did not finish within {timeout} s (--timeout): {' '.join(argv)}")
            if p.returncode != 0:
                tail = "\n".join((p.stderr or p.stdout).strip().splitlines()[-5:])
                raise InputError(f"{label}: exit {p.returncode}: {' '.join(argv)}\n{tail}")
            objects = []
            for line in p.stdout.splitlines():
                if line.startswith("{"):
                    try:
                        objects.append(json.loads(line))
                    except json.JSONDecodeError as e:
                        raise InputError(f"{label}: printed a line that is not JSON ({e.msg}): {line[:200]}")
            found = 0
            for name, value, backend in metric_lines(objects):
                runs.setdefault(name, []).append(value)
                backends.add(backend)
                found += 1
            if not found:
                raise InputError(f"{label}: printed no metric: {' '.join(argv)}")
    return {"format": FORMAT, "version": VERSION, "machine": "", "size": size, "backend": ",".join(sorted(backends)),
            "repeats": repeats, "commit": build_commit(build_dir),
            "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "build_dir": os.path.relpath(os.path.abspath(build_dir), ROOT), "metrics": summarize(runs)}


# ---- output ----

def pct(x):
    return "-" if x is None else f"{100 * x:.1f}%"


def print_summary(doc):
    width = max(len(k) for k in doc["metrics"])
    print(f"{'metric':{width}}  {'median us':>11} {'spread':>7}  runs")
    for k in sorted(doc["metrics"]):
        m = doc["metrics"][k]
        print(f"{k:{width}}  {m['median']:11.2f} {pct(m['spread']):>7}  {len(m['runs'])}")


def print_comparison(rows):
    width = max(len(r[0]) for r in rows)
    print(f"{'metric':{width}}  {'baseline us':>11} {'spread':>7}  {'current us':>11} {'spread':>7}  "
          f"{'ratio':>6} {'threshold':>9}  verdict")
    for k, b, c, ratio, t, verdict in rows:
        bm = f"{b['median']:11.2f} {pct(b['spread']):>7}" if b else f"{'-':>11} {'-':>7}"
        cm = f"{c['median']:11.2f} {pct(c['spread']):>7}" if c else f"{'-':>11} {'-':>7}"
        rt = f"{ratio:6.3f} {'+' + pct(t):>9}" if ratio is not None else f"{'-':>6} {'-':>9}"
        print(f"{k:{width}}  {bm}  {cm}  {rt}  {verdict}")


# ---- self-test ----

def self_test():
    """Checks the statistics and the comparison on hand-made numbers;
    returns the number of failed checks."""
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)
    check(median([3.0, 1.0, 2.0]) == 2.0, "median of three")
    check(median([4.0, 1.0, 2.0, 3.0]) == 2.5, "median of four")
    check(abs(spread([90.0, 100.0, 110.0]) - 0.14826) < 1e-12, "spread = 1.4826 MAD / median")
    check(abs(spread([100.0, 101.0, 99.0, 100.0, 400.0]) - 0.014826) < 1e-12, "one outlier run barely counts")
    check(spread([5.0]) == 0.0, "spread of one run")
    check(threshold(0.0, 0.0, 0.10, 2.0) == 0.10, "threshold floor is the tolerance")
    check(abs(threshold(0.06, 0.08, 0.10, 2.0) - 0.20) < 1e-12, "threshold k * hypot(spreads)")

    def m(values):
        return summarize({"x": values})["x"]
    base = {"a": m([100.0, 101.0, 99.0]), "b": m([50.0, 50.0, 50.0]), "gone": m([10.0])}
    cur = {"a": m([104.0, 105.0, 103.0]), "b": m([60.0, 61.0, 59.0]), "added": m([1.0])}
    v = {r[0]: r[5] for r in compare(base, cur, 0.10, 2.0)}
    check(v == {"a": "ok", "b": "REGRESSION", "gone": "MISSING", "added": "new"}, f"verdicts {v}")
    check(len(failed(compare(base, cur, 0.10, 2.0))) == 2, "two failures: b and gone")
    # Noise widens the threshold: 20% slower passes when both sides spread
    # by 22% (threshold 2 x 31%), fails when they spread by 1.5%.
    noisy_b, noisy_c = {"a": m([85.0, 100.0, 115.0])}, {"a": m([102.0, 120.0, 138.0])}
    check(compare(noisy_b, noisy_c, 0.10, 2.0)[0][5] == "ok", "20% slower within 2 x 31% threshold")
    quiet_b, quiet_c = {"a": m([99.0, 100.0, 101.0])}, {"a": m([118.8, 120.0, 121.2])}
    check(compare(quiet_b, quiet_c, 0.10, 2.0)[0][5] == "REGRESSION", "20% slower beyond a quiet 10% threshold")
    check(compare(base, {"a": m([80.0, 80.0, 80.0]), "b": base["b"], "gone": base["gone"]}, 0.10, 2.0)[0][5]
          == "faster", "20% faster is reported as faster")
    # Raw JSON lines: repeated lines are runs; malformed documents name the field.
    lines = "\n".join(json.dumps({"bench": "x", "config": "c", "backend": "Serial", "median_us": v})
                      for v in (10.0, 12.0, 11.0))
    doc = read_jsonl("lines", lines + "\nnot json\n")
    check(doc["metrics"]["x | c | median_us"]["runs"] == [10.0, 12.0, 11.0], "runs from repeated lines")
    check(doc["metrics"]["x | c | median_us"]["median"] == 11.0, "median from repeated lines")
    broken = {"format": FORMAT, "version": VERSION, "machine": "m", "size": "quick", "backend": "Serial",
              "metrics": {"x": {"median": -1, "spread": 0, "runs": [1.0]}}}
    try:
        validate("b.json", broken)
        check(False, "a negative median is rejected")
    except InputError as e:
        check('b.json: metrics."x".median' in str(e), f"error names file and field: {e}")
    check(sanitize("NVIDIA H200") == "nvidia-h200", "GPU name sanitized")
    check(sanitize("Intel(R) Xeon(R) Gold 6430 @ 2.1GHz-2c") == "intel-xeon-gold-6430-2-1ghz-2c", "CPU name sanitized")
    for f in failures:
        print(f"self-test FAILED: {f}")
    print(f"self-test: {'ok' if not failures else str(len(failures)) + ' failed'}")
    return len(failures)


# ---- main ----

def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default=os.path.join(ROOT, "build", "host"),
                        help="build tree holding perf/foxrl_bench_* (default: build/host)")
    parser.add_argument("--repeats", type=int, help="runs of the whole suite (default 5; smoke: 2)")
    parser.add_argument("--size", choices=sorted(SIZES),
                        help="full (the benchmark definitions), quick (host-sized iterations) or smoke; "
                             "default: the baseline's size, else full with an NVIDIA GPU and quick without")
    parser.add_argument("--machine", help="baseline name (default: derived from the GPU or CPU)")
    parser.add_argument("--baselines", default=os.path.join(HERE, "baselines"), help="baseline directory")
    parser.add_argument("--baseline", help="baseline file (default: BASELINES/MACHINE.json)")
    parser.add_argument("--tolerance", type=float, default=0.10, help="smallest slowdown that fails (default 0.10)")
    parser.add_argument("--noise-k", type=float, default=3.0,
                        help="threshold multiple of the combined spread (default 3)")
    parser.add_argument("--update-baseline", action="store_true", help="write the baseline instead of comparing")
    parser.add_argument("--current", help="compare this results file instead of running the suite")
    parser.add_argument("--output", help="also write the current results to this file")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per benchmark command (default 900)")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes on the host: run everything, compare nothing")
    parser.add_argument("--self-test", action="store_true", help="check the comparison logic and exit")
    args = parser.parse_args(argv)
    if args.self_test:
        return 1 if self_test() else 0
    try:
        if args.repeats is not None and args.repeats < 1:
            raise InputError(f"--repeats must be >= 1, got {args.repeats}")
        if not (args.tolerance >= 0) or not (args.noise_k >= 0):
            raise InputError(f"--tolerance and --noise-k must be >= 0, got {args.tolerance} and {args.noise_k}")
        if args.smoke:
            if args.size not in (None, "smoke") or args.update_baseline or args.current:
                raise InputError("--smoke runs the smoke size only (no --size, --update-baseline or --current)")
            doc = run_suite(args.build_dir, "smoke", args.repeats or 2, args.timeout)
            print_summary(doc)
            if args.output:
                write_results(args.output, doc)
            print(f"regress: smoke run of {len(doc['metrics'])} metrics done (nothing compared)")
            return 0

        machine = args.machine or machine_name()
        if args.machine is not None and sanitize(args.machine) != args.machine:
            raise InputError(f"--machine {json.dumps(args.machine)[:200]}: use letters, digits and dashes only "
                             f"(e.g. {sanitize(args.machine)})")
        baseline_path = args.baseline or os.path.join(args.baselines, f"{machine}.json")
        base = None
        if not args.update_baseline:
            if not os.path.exists(baseline_path):
                raise InputError(f"{baseline_path}: no baseline for machine {machine} (record one with "
                                 f"`perf/regress.py --update-baseline`, or name another with --machine/--baseline)")
            base = read_results(baseline_path, "baseline")
        size = args.size or (base["size"] if base and base["size"] else None)
        if size is None:
            size = "full" if machine.startswith("nvidia") else "quick"

        if args.current:
            cur = read_results(args.current, "results")
        else:
            cur = run_suite(args.build_dir, size, args.repeats or 5, args.timeout)
        cur["machine"] = cur["machine"] or machine
        if args.output:
            write_results(args.output, cur)
        if args.update_baseline:
            cur["machine"] = machine
            write_results(baseline_path, cur)
            print_summary(cur)
            print(f"regress: wrote baseline {baseline_path} ({len(cur['metrics'])} metrics, size {cur['size']}, "
                  f"{cur.get('repeats', '?')} runs, commit {cur.get('commit', '?')})")
            return 0

        for key in ("size", "backend"):
            if base[key] and cur[key] and base[key] != cur[key]:
                raise InputError(f"{baseline_path}: recorded with {key} {base[key]}, the current run has "
                                 f"{key} {cur[key]}; compare like with like (--size) or --update-baseline")
        rows = compare(base["metrics"], cur["metrics"], args.tolerance, args.noise_k)
        print(f"baseline {baseline_path} (commit {base.get('commit', '?')}, {base.get('created', '?')}); "
              f"current commit {cur.get('commit', '?')}; size {cur['size'] or '?'}, backend {cur['backend'] or '?'}")
        print_comparison(rows)
        bad = failed(rows)
        noisy = [r[0] for r in rows if r[4] is not None and r[4] > 3 * args.tolerance]
        if noisy:
            print(f"regress: {len(noisy)} metric(s) too noisy to judge below +{pct(3 * args.tolerance)} "
                  f"(more --repeats or a quieter machine narrow the threshold)")
        if bad:
            print(f"regress: FAILED: {len(bad)} metric(s): " +
                  ", ".join(f"{r[0]} ({'missing' if r[3] is None else f'x{r[3]:.3f}'})" for r in bad))
            return 1
        print(f"regress: ok ({len(rows)} metrics within their thresholds)")
        return 0
    except InputError as e:
        print(f"regress.py: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
