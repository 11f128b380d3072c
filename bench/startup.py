"""Benchmark: wall time of a small run (30 rows), start to exit.

    python bench/startup.py [--rows 30] [--runs 5] [--config FILE] [--repo DIR ...]
                            [--importtime 15]

Writes the first --rows rows of the bundled example (examples/support/
cases.parquet) to a temporary Parquet file, then runs `python -m pipeline run
--input ... --output ...` (default config unless --config) as a subprocess
--runs times per checkout, each into a fresh output folder, with the checkout
as working directory and on PYTHONPATH (so `--repo /work/main` measures another
checkout with the same interpreter). Runs of the checkouts alternate, so that
the machine's load falls on both alike. Prints min / median wall time per
checkout (and the CPU seconds of the run's process tree, steadier on a busy
machine), the load average before and after, and the `python -X importtime`
top offenders of `import pipeline.cli` (cumulative microseconds).

With two or more checkouts, the last run's outputs of each are compared with
the first checkout's: every table's rows (sorted, run-independent columns) and
report.md and report.html (but the attempt line and latency_ms lines) and
manifest.json (but attempt, output, times and file names) must be equal; the
measured latencies (results' latency_ms, the latency_ms metric, usage's call
latencies) differ between any two runs and are left out.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "support" / "cases.parquet"
TABLES = ("results", "scores", "summary", "errors", "usage")
# Times measured during the run (a bot's answer latency, a call's), which differ
# between any two runs: left out of the comparison, as is the latency_ms metric.
MEASURED = {"latency_ms", "latency_p50_ms", "latency_p95_ms"}


def make_input(rows: int, folder: str) -> str:
    """The first `rows` cases of the bundled example, as Parquet."""
    import pyarrow.parquet as pq
    path = os.path.join(folder, f"cases{rows}.parquet")
    pq.write_table(pq.read_table(EXAMPLE).slice(0, rows), path)
    return path


def env_for(repo: Path) -> dict:
    """The checkout shadows any installed copy of evalbeam."""
    return {**os.environ, "PYTHONPATH": str(repo)}


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(repo: Path, cases: str, output: str, config: str | None) -> tuple[float, float]:
    """(wall seconds from process start to exit, CPU seconds of the process and
    its children); raises on failure."""
    shutil.rmtree(output, ignore_errors=True)
    cmd = [sys.executable, "-m", "pipeline", "run", "--input", cases, "--output", output,
           "--run-id", "startup", "--run-date", "2024-01-01"]
    if config:
        cmd += ["--config", config]
    cpu, start = children_cpu(), time.perf_counter()
    proc = subprocess.run(cmd, cwd=repo, env=env_for(repo), capture_output=True, text=True)
    wall, cpu = time.perf_counter() - start, children_cpu() - cpu
    if proc.returncode != 0:
        raise SystemExit(f"run failed in {repo} (exit {proc.returncode}):\n{proc.stderr}")
    return wall, cpu


def import_offenders(repo: Path, top: int) -> list[tuple[int, str]]:
    """(cumulative µs, module) of `import pipeline.cli`, largest first."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", "import pipeline.cli"],
                          cwd=repo, env=env_for(repo), capture_output=True, text=True)
    rows = []
    for line in proc.stderr.splitlines():
        parts = line.split("|")
        if line.startswith("import time:") and len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    return sorted(rows, reverse=True)[:top]


def table_rows(output: str, name: str) -> list[str]:
    """A table's rows as sorted text, without what differs between runs anyway."""
    import pyarrow.dataset as ds
    folder = os.path.join(output, name)
    if not os.path.isdir(folder):
        return []
    rows = ds.dataset(folder, format="parquet", partitioning="hive").to_table().to_pylist()
    return sorted(repr(sorted((k, v) for k, v in r.items() if k not in MEASURED))
                  for r in rows if r.get("metric") != "latency_ms")


def run_file(output: str, name: str) -> str:
    with open(os.path.join(output, "runs", "startup", name), encoding="utf-8") as fh:
        return fh.read()


def report_text(output: str, name: str = "report.md") -> list[str]:
    """A report without its `Attempt <id>, finished <time>` line and the table
    rows of the latency_ms metric (a Markdown line, an HTML <tr>)."""
    text = re.sub(r"<tr><td>latency_ms.*?</tr>", "", run_file(output, name))
    return [ln for ln in text.splitlines()
            if not ln.startswith("Attempt ") and "latency_ms" not in ln]


def manifest_content(output: str) -> dict:
    """manifest.json without the attempt id, output folder, times and file names."""
    manifest = json.loads(run_file(output, "manifest.json"))
    for key in ("attempt", "output", "started_at", "finished_at", "files"):
        manifest.pop(key, None)
    return manifest


def differences(a: str, b: str) -> list[str]:
    """Names of the outputs whose content differs between two output folders."""
    bad = [t for t in TABLES if table_rows(a, t) != table_rows(b, t)]
    checks = (("report.md", report_text), ("report.html", lambda o: report_text(o, "report.html")),
              ("manifest.json", manifest_content))
    return bad + [name for name, content in checks if content(a) != content(b)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=30)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--config", help="config file (default: the built-in defaults)")
    ap.add_argument("--repo", action="append", type=Path,
                    help="checkout to measure (repeatable; default: this one)")
    ap.add_argument("--importtime", type=int, default=15, metavar="N",
                    help="how many import-time offenders to list (0: none)")
    args = ap.parse_args()
    repos = [r.resolve() for r in (args.repo or [ROOT])]
    config = os.path.abspath(args.config) if args.config else None
    tmp = tempfile.mkdtemp(prefix="evalbeam-startup-")
    try:
        cases = make_input(args.rows, tmp)
        outs = {r: os.path.join(tmp, f"out{i}") for i, r in enumerate(repos)}
        for r in repos:  # warm the page cache and the .pyc files; not counted
            run_once(r, cases, outs[r], config)
        load_before = os.getloadavg()
        walls: dict[Path, list[float]] = {r: [] for r in repos}
        cpus: dict[Path, list[float]] = {r: [] for r in repos}
        for _ in range(args.runs):
            for r in repos:
                wall, cpu = run_once(r, cases, outs[r], config)
                walls[r].append(wall)
                cpus[r].append(cpu)
        load_after = os.getloadavg()
        print(f"{args.rows} rows, config: {args.config or 'default'}, {args.runs} runs each, "
              f"load average before {load_before[0]:.2f} / after {load_after[0]:.2f} "
              f"(1 min), {os.cpu_count()} CPUs")
        print("| checkout | wall min s | wall median s | CPU min s | CPU median s "
              "| wall of each run |")
        print("|---|---:|---:|---:|---:|---|")
        for r in repos:
            w, c = walls[r], cpus[r]
            print(f"| {r} | {min(w):.2f} | {statistics.median(w):.2f} | {min(c):.2f} | "
                  f"{statistics.median(c):.2f} | {' '.join(f'{x:.2f}' for x in w)} |")
        for r in repos[1:]:
            bad = differences(outs[repos[0]], outs[r])
            print(f"outputs of {r} vs {repos[0]}: {'DIFFER: ' + ', '.join(bad) if bad else 'same'}")
        for r in repos if args.importtime else []:
            print(f"\nimport pipeline.cli in {r}, top offenders (cumulative ms):")
            for us, mod in import_offenders(r, args.importtime):
                print(f"  {us / 1000:8.1f}  {mod}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
