"""evalbeam.evaluate(df) against `evalbeam run` on the same 30 rows (issue 25's
goal: the API within 1.5x of the command line).

    python bench/api_speed.py [--rows 30] [--pairs 5]

Each pair runs, in turn, `python -m pipeline run` on a Parquet file of the
first N rows of the bundled example, and a fresh Python process that imports
evalbeam and pandas, reads the same rows into a DataFrame and calls
evalbeam.evaluate(df) on them; both with the default config (the recorded
answers, every metric the inputs allow) and a new output folder. Reported:
the command's wall time, the evaluate() call's own time, and the whole API
process's time (imports included), each process's CPU seconds (the steadier
figure on a loaded machine), each pair's ratios and their medians.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "support", "cases.parquet")

API = """
import sys, time
import pandas as pd
import evalbeam
df = pd.read_parquet(sys.argv[1])
start = time.perf_counter()
result = evalbeam.evaluate(df, output=sys.argv[2], run_id="api", progress=False)
took = time.perf_counter() - start
assert result.counts["valid_cases"] == len(df), result.counts
print(f"EVALUATE {took:.3f}")
"""


def children_cpu() -> float:
    """CPU seconds of the finished child processes (and theirs)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd: list[str]) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds, stdout) of one process; on a loaded machine
    the CPU seconds are the steadier measure."""
    start, cpu = time.perf_counter(), children_cpu()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "EVALBEAM_PROGRESS_S": "0"})
    took, used = time.perf_counter() - start, children_cpu() - cpu
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[:4]} failed: {proc.stderr[-2000:]}")
    return took, used, proc.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=30)
    ap.add_argument("--pairs", type=int, default=5)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="evalbeam-api-bench-")
    try:
        cases = os.path.join(work, "cases.parquet")
        pq.write_table(pq.read_table(EXAMPLE).slice(0, args.rows), cases)
        rows = []
        for i in range(args.pairs):
            cli, cli_cpu, _ = timed([sys.executable, "-m", "pipeline", "run", "--input", cases,
                                     "--output", os.path.join(work, f"cli{i}"),
                                     "--run-id", "cli"])
            total, api_cpu, out = timed([sys.executable, "-c", API, cases,
                                         os.path.join(work, f"api{i}")])
            call = float(out.split("EVALUATE ")[1].split()[0])
            rows.append((cli, call, total, cli_cpu, api_cpu))
            print(f"pair {i + 1}: evalbeam run {cli:6.2f} s | evaluate() {call:6.2f} s "
                  f"({call / cli:.2f}x) | API process {total:6.2f} s ({total / cli:.2f}x) | "
                  f"CPU: evalbeam run {cli_cpu:5.2f} s, API process {api_cpu:5.2f} s "
                  f"({api_cpu / cli_cpu:.2f}x)", flush=True)
        cli, call, total, cli_cpu, api_cpu = (statistics.median(c) for c in zip(*rows))
        print(f"median of {args.pairs}: evalbeam run {cli:.2f} s, evaluate() {call:.2f} s "
              f"({statistics.median(r[1] / r[0] for r in rows):.2f}x), whole API process "
              f"{total:.2f} s ({statistics.median(r[2] / r[0] for r in rows):.2f}x); CPU "
              f"{cli_cpu:.2f} s vs {api_cpu:.2f} s "
              f"({statistics.median(r[4] / r[3] for r in rows):.2f}x)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
