"""Benchmark: wall time of a small run (30 rows), start to exit.

    python bench/startup.py [--rows 30] [--runs 5] [--config FILE] [--repo DIR ...]
                            [--importtime 15] [--shared-metrics]
                            [--ragas-python /tmp/ragas-venv/bin/python]

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

Bytecode: every arm keeps its compiled modules in one temporary
PYTHONPYCACHEPREFIX, written by the warm-up run, also where the environment sets
PYTHONDONTWRITEBYTECODE (these sessions' machines do). Otherwise a checkout's
own modules, which no `pip install` compiled, are compiled from source on every
run (~0.15 CPU-s for evalbeam's), while the compared installed packages (Beam,
Ragas) have theirs. --no-bytecode-cache keeps the environment's setting.

With two or more checkouts, the last run's outputs of each are compared with
the first checkout's: every table's rows (sorted, run-independent columns) and
report.md and report.html (but the attempt line and latency_ms lines) and
manifest.json (but attempt, output, times and file names) must be equal; the
measured latencies (results' latency_ms, the latency_ms metric, usage's call
latencies) differ between any two runs and are left out.

Against Ragas (issue 26): --ragas-python runs bench/ragas_startup.py under
Ragas' own interpreter on the same rows (its four metrics that evalbeam also
computes: exact match, BLEU, ROUGE-1, ROUGE-L), as one more arm of the same
alternation; --shared-metrics adds, per checkout, an evalbeam run of just those
four (`--metrics exact_match,bleu,rouge1,rougeL`) beside the default run. The
CPU seconds count the run's process and the children it waited for: a chart
engine child (transforms/publish/chart_engine.py, runs from CHILD_FROM_ROWS
rows) is not waited for, so its CPU is not in them.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shlex
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


def env_for(repo: Path, pycache: str | None = None) -> dict:
    """The checkout shadows any installed copy of evalbeam. With `pycache` (a
    folder), Python keeps its bytecode there, whatever PYTHONDONTWRITEBYTECODE
    says: the warm-up run compiles the checkout once, as `pip install` does."""
    env = {**os.environ, "PYTHONPATH": str(repo)}
    if pycache:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = pycache
    return env


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


SHARED_METRICS = "exact_match,bleu,rouge1,rougeL"  # the four Ragas computes too


def timed(cmd: list[str], cwd, env: dict) -> tuple[float, float]:
    """(wall seconds from process start to exit, CPU seconds of the process and
    the children it waited for); raises on failure."""
    cpu, start = children_cpu(), time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - start, children_cpu() - cpu
    if proc.returncode != 0:
        raise SystemExit(f"{shlex.join(cmd)} failed in {cwd} (exit {proc.returncode}):\n"
                         f"{proc.stderr}")
    return wall, cpu


def run_once(repo: Path, cases: str, output: str, config: str | None,
             metrics: str | None = None, pycache: str | None = None) -> tuple[float, float]:
    """One `python -m pipeline run` of the checkout: (wall s, CPU s)."""
    shutil.rmtree(output, ignore_errors=True)
    cmd = [sys.executable, "-m", "pipeline", "run", "--input", cases, "--output", output,
           "--run-id", "startup", "--run-date", "2024-01-01"]
    if config:
        cmd += ["--config", config]
    if metrics:
        cmd += ["--metrics", metrics]
    return timed(cmd, repo, env_for(repo, pycache))


def ragas_once(python: str, cases: str, output: str,
               pycache: str | None = None) -> tuple[float, float]:
    """One bench/ragas_startup.py run under Ragas' interpreter: (wall s, CPU s)."""
    env = {k: v for k, v in env_for(ROOT, pycache).items() if k != "PYTHONPATH"}
    env["RAGAS_DO_NOT_TRACK"] = "true"
    return timed([python, str(ROOT / "bench" / "ragas_startup.py"), cases, output],
                 os.path.dirname(output), env)


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
    ap.add_argument("--shared-metrics", action="store_true",
                    help=f"also run each checkout with --metrics {SHARED_METRICS}")
    ap.add_argument("--ragas-python", help="Ragas' interpreter: also run bench/ragas_startup.py")
    ap.add_argument("--no-bytecode-cache", action="store_true",
                    help="leave PYTHONDONTWRITEBYTECODE as the environment sets it (default: "
                         "every arm keeps its bytecode in a temporary PYTHONPYCACHEPREFIX)")
    args = ap.parse_args()
    repos = [r.resolve() for r in (args.repo or [ROOT])]
    config = os.path.abspath(args.config) if args.config else None
    tmp = tempfile.mkdtemp(prefix="evalbeam-startup-")
    try:
        cases = make_input(args.rows, tmp)
        pyc = None if args.no_bytecode_cache else os.path.join(tmp, "pycache")
        outs = {r: os.path.join(tmp, f"out{i}") for i, r in enumerate(repos)}
        arms = [(str(r), lambda r=r: run_once(r, cases, outs[r], config, pycache=pyc))
                for r in repos]
        if args.shared_metrics:
            arms += [(f"{r} --metrics {SHARED_METRICS}",
                      lambda r=r, i=i: run_once(r, cases, os.path.join(tmp, f"shared{i}"), None,
                                             SHARED_METRICS, pyc)) for i, r in enumerate(repos)]
        if args.ragas_python:
            ragas_out = os.path.join(tmp, "ragas.json")
            arms.append(("Ragas 4 metrics", lambda: ragas_once(args.ragas_python, cases,
                                                               ragas_out, pyc)))
        for _, once in arms:  # warm the page cache and the .pyc files; not counted
            once()
        load_before = os.getloadavg()
        walls: dict[str, list[float]] = {label: [] for label, _ in arms}
        cpus: dict[str, list[float]] = {label: [] for label, _ in arms}
        for _ in range(args.runs):
            for label, once in arms:
                wall, cpu = once()
                walls[label].append(wall)
                cpus[label].append(cpu)
        load_after = os.getloadavg()
        print(f"{args.rows} rows, config: {args.config or 'default'}, {args.runs} runs each, "
              f"load average before {load_before[0]:.2f} / after {load_after[0]:.2f} "
              f"(1 min), {os.cpu_count()} CPUs, bytecode "
              f"{'as the environment says' if pyc is None else 'cached (compiled at warm-up)'}")
        print("| run | wall min s | wall median s | CPU min s | CPU median s "
              "| wall of each run |")
        print("|---|---:|---:|---:|---:|---|")
        for label, _ in arms:
            w, c = walls[label], cpus[label]
            print(f"| {label} | {min(w):.2f} | {statistics.median(w):.2f} | {min(c):.2f} | "
                  f"{statistics.median(c):.2f} | {' '.join(f'{x:.2f}' for x in w)} |")
        if args.ragas_python:
            with open(ragas_out, encoding="utf-8") as fh:
                got = json.load(fh)
                print(f"Ragas: {json.dumps({k: got[k] for k in ('rows', 'means')})}")
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
