"""Benchmark: evalbeam's deterministic suite vs a plain Python loop, side by side.

    python bench/run_deterministic.py [--rows 100000] [--memory-rows 1000000] [--skip-1m]
                                      [--skip-in-memory] [--seed 0]

Generates synthetic inputs (cached in bench/data/), then runs, each as a
subprocess, one after the other:

  a. baseline   bench/baseline_loop.py on --rows rows (plain Python, no Beam);
  b. pipeline   `python -m pipeline run` on --rows rows, multi_processing, 2 workers
                (and in_memory, for information);
  c. pipeline   on --memory-rows rows, multi_processing, 2 workers (memory ratio).

Wall time is measured around each subprocess; memory is the peak of the RSS
summed over the whole process tree (the process and all its descendants,
e.g. Beam's SDK worker processes), sampled every 0.2 s with psutil. CPU time
is the user+system time of every process seen in the tree (last sample).

Every run's output is verified: row counts of results/ and scores/ read back
(pyarrow.dataset, hive partitioning) equal the input, the manifest reconciles,
and the pipeline's per-metric counts and means equal the baseline's.

Prints a markdown table and writes bench/results/deterministic.json (+ .md).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
DATA = BENCH / "data"
RESULTS = BENCH / "results"
CONFIG = BENCH / "config_deterministic.yaml"
# Outputs and logs of this invocation only, so that two invocations never share them.
RUNS = DATA / "runs" / f"pid{os.getpid()}"
LOGS = RESULTS / "logs" / RUNS.name
PY = sys.executable
N_METRICS = 13  # exact_match keyword_recall answer_length politeness latency_ms bleu
                # rouge1 rouge2 rougeL lexical_relevance completeness hallucination
                # unsupported_facts
MiB = 1024 * 1024
SPEEDUP_GOAL, MEMORY_GOAL = 4.0, 1.3  # issue 13


# ---------------------------------------------------------------- measuring

def _tree(proc: psutil.Process) -> list[psutil.Process]:
    try:
        return [proc] + proc.children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _busy_seconds() -> float:
    """CPU seconds spent busy by the whole machine since boot (all cores)."""
    t = psutil.cpu_times()
    return sum(t) - t.idle - getattr(t, "iowait", 0.0)


def wait_quiet(max_wait: float, threshold: float = 0.3, window: float = 5.0) -> float:
    """Wait (at most max_wait s) until other processes use < threshold cores; returns the load."""
    deadline = time.monotonic() + max_wait
    announced = False
    while True:
        b0, t0 = _busy_seconds(), time.monotonic()
        time.sleep(window)
        load = (_busy_seconds() - b0) / (time.monotonic() - t0)
        if load < threshold or time.monotonic() >= deadline:
            if announced:
                print(f"   machine load now {load:.2f} cores", flush=True)
            return load
        if not announced:
            print(f"   waiting for a quiet machine (other processes use {load:.2f} cores) ...",
                  flush=True)
            announced = True


def _role(p: psutil.Process, root: psutil.Process, named: dict[int, str]) -> str:
    if p.pid == root.pid:
        return "main"
    if p.pid in named:
        return named[p.pid]
    try:
        cmd = " ".join(p.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return "?"
    if "sdk_worker_main" in cmd:
        return "beam sdk worker"
    return cmd[:80]


def _cpu_s(p: psutil.Process) -> float:
    t = p.cpu_times()
    return t.user + t.system


def _processes(pids) -> list[psutil.Process]:
    procs = []
    for pid in pids:
        try:
            procs.append(psutil.Process(pid))
        except psutil.NoSuchProcess:
            pass
    return procs


def measure(cmd: list[str], log_path: Path, interval: float = 0.2, cwd: Path = ROOT,
            env: dict | None = None, also: dict[int, str] | None = None) -> dict:
    """Run cmd (in cwd, with env added); wall time, peak tree RSS, per-process
    peaks, CPU seconds, and every 5 s each process's RSS.

    `also` names running processes (pid -> role) that work for cmd without
    being its children, e.g. a Dask cluster's scheduler and workers: they and
    their children count as part of the tree, their CPU from cmd's launch on."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
    also = also or {}
    others = _processes(also)
    cpu_before = {(p.pid, p.create_time()): _cpu_s(p) for o in others for p in _tree(o)}
    with open(log_path, "w") as log:
        log.write("$ " + shlex.join(cmd) + "\n")
        log.flush()
        t0 = time.perf_counter()
        busy0 = _busy_seconds()
        proc = psutil.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=cwd, env=env)
        peak_tree = max_procs = 0
        cpu: dict[tuple[int, float], float] = {}
        per_proc: dict[tuple[int, float], dict] = {}
        timeline: list[dict] = []
        while True:
            total, members, main_rss, by_pid = 0, 0, 0, {}
            for p in [q for root in (proc, *others) for q in _tree(root)]:
                try:
                    with p.oneshot():
                        rss = p.memory_info().rss
                        key = (p.pid, p.create_time())
                        cpu[key] = _cpu_s(p) - cpu_before.get(key, 0.0)
                except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                    continue
                total += rss
                members += 1
                if p.pid == proc.pid:
                    main_rss = rss
                info = per_proc.get(key)
                if info is None:
                    info = per_proc[key] = {"pid": p.pid, "role": _role(p, proc, also),
                                            "peak_rss_mib": 0.0}
                info["peak_rss_mib"] = max(info["peak_rss_mib"], rss / MiB)
                info["cpu_s"] = cpu[key]
                by_pid[str(p.pid)] = round(rss / MiB)
            peak_tree = max(peak_tree, total)
            max_procs = max(max_procs, members)
            now = time.perf_counter() - t0
            if not timeline or now - timeline[-1]["t"] >= 5.0:
                timeline.append({"t": round(now, 1), "tree_mib": round(total / MiB),
                                 "main_mib": round(main_rss / MiB), "procs": members,
                                 "by_pid_mib": by_pid})
            if proc.poll() is not None:
                break
            time.sleep(interval)
        wall = time.perf_counter() - t0
        busy = _busy_seconds() - busy0
    procs = sorted(per_proc.values(), key=lambda d: -d["peak_rss_mib"])
    return {"cmd": shlex.join(cmd), "returncode": proc.returncode, "wall_s": wall,
            "peak_rss_tree_mib": peak_tree / MiB,
            "peak_rss_single_mib": procs[0]["peak_rss_mib"] if procs else 0.0,
            "max_processes": max_procs, "cpu_s": sum(cpu.values()), "processes": procs,
            # cores used on average by processes outside the measured tree (0 = quiet machine)
            "other_load_cores": max(0.0, (busy - sum(cpu.values())) / wall),
            "rss_timeline_mib": timeline, "log": str(log_path.relative_to(ROOT))}


# ---------------------------------------------------------------- inputs

def input_file(rows: int, seed: int) -> Path:
    path = DATA / f"cases_{rows}_seed{seed}.parquet"
    if path.exists() and pq.ParquetFile(path).metadata.num_rows == rows:
        print(f"input: {path.relative_to(ROOT)} (cached)", flush=True)
        return path
    t0 = time.perf_counter()
    subprocess.run([PY, str(BENCH / "make_synthetic.py"), str(rows), str(path),
                    "--seed", str(seed)], check=True, cwd=ROOT)
    print(f"input: {path.relative_to(ROOT)} generated in {time.perf_counter() - t0:.1f} s",
          flush=True)
    return path


# ---------------------------------------------------------------- verifying

def _count(path: Path, hive: bool) -> int:
    if not path.exists():
        return -1
    return ds.dataset(str(path), format="parquet",
                      partitioning="hive" if hive else None).count_rows()


def metric_stats(path: Path, hive: bool) -> dict[str, tuple[int, float | None]]:
    table = ds.dataset(str(path), format="parquet",
                       partitioning="hive" if hive else None).to_table(columns=["metric", "value"])
    grouped = table.group_by("metric").aggregate([("value", "count"), ("value", "mean")])
    return {m: (c, v) for m, c, v in zip(grouped["metric"].to_pylist(),
                                         grouped["value_count"].to_pylist(),
                                         grouped["value_mean"].to_pylist())}


def verify_baseline(out: Path, rows: int) -> dict:
    res, sco = _count(out / "results.parquet", False), _count(out / "scores.parquet", False)
    ok = res == rows and sco == rows * N_METRICS
    return {"results_rows": res, "scores_rows": sco, "ok": ok}


def verify_pipeline(out: Path, rows: int, run_id: str, n_metrics: int | None = None) -> dict:
    res, sco = _count(out / "results", True), _count(out / "scores", True)
    manifest_path = out / "runs" / run_id / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    reconciled = bool(manifest.get("reconciliation", {}).get("ok"))
    verdicts = None
    if res > 0:
        t = ds.dataset(str(out / "results"), format="parquet",
                       partitioning="hive").to_table(columns=["verdict"])
        verdicts = {d["values"]: d["counts"] for d in pc.value_counts(t["verdict"]).to_pylist()}
    ok = (res == rows and sco == rows * (n_metrics or N_METRICS) and reconciled
          and manifest.get("counts", {}).get("input_rows") == rows)
    return {"results_rows": res, "scores_rows": sco, "manifest_reconciled": reconciled,
            "manifest_counts": manifest.get("counts"), "verdicts": verdicts, "ok": ok}


def parity(baseline_out: Path, pipeline_out: Path) -> dict:
    a = metric_stats(baseline_out / "scores.parquet", False)
    b = metric_stats(pipeline_out / "scores", True)
    diffs = {}
    for m in sorted(set(a) | set(b)):
        (ca, ma), (cb, mb) = a.get(m, (None, None)), b.get(m, (None, None))
        diffs[m] = {"baseline_count": ca, "pipeline_count": cb, "baseline_mean": ma,
                    "pipeline_mean": mb,
                    "abs_mean_diff": None if ma is None or mb is None else abs(ma - mb)}
    ok = all(d["baseline_count"] == d["pipeline_count"] and (
        d["abs_mean_diff"] < 1e-9 if d["abs_mean_diff"] is not None
        else d["baseline_mean"] is None and d["pipeline_mean"] is None) for d in diffs.values())
    return {"ok": ok, "metrics": diffs}


# ---------------------------------------------------------------- runs

def run_baseline(path: Path, rows: int) -> dict:
    out = RUNS / f"baseline_{rows}"
    shutil.rmtree(out, ignore_errors=True)
    m = measure([PY, str(BENCH / "baseline_loop.py"), "--input", str(path), "--output", str(out)],
                LOGS / f"baseline_{rows}.log")
    m.update(name="baseline loop (plain Python, sacrebleu + rouge-score)", rows=rows,
             mode="baseline", out=str(out), check=verify_baseline(out, rows))
    return m


def run_pipeline(path: Path, rows: int, mode: str, workers: int = 2, config: Path = CONFIG,
                 tag: str = "", n_metrics: int | None = None) -> dict:
    run_id = f"bench-{mode}-{rows}{tag}"
    out = RUNS / run_id
    shutil.rmtree(out, ignore_errors=True)
    cmd = [PY, "-m", "pipeline", "run", "--input", str(path), "--output", str(out),
           "--config", str(config), "--run-id", run_id, f"--direct_running_mode={mode}"]
    if mode == "multi_processing":
        cmd.append(f"--direct_num_workers={workers}")
    m = measure(cmd, LOGS / f"{run_id}.log")
    label = f"evalbeam {mode}" + (f", {workers} workers" if mode == "multi_processing" else "")
    m.update(name=label, rows=rows, mode=mode, out=str(out),
             check=verify_pipeline(out, rows, run_id, n_metrics))
    return m


def quiet_pipeline_runs(specs, wait_quiet_s: float, keep_outputs: bool) -> list[dict]:
    """Run `run_pipeline(**spec)` for each spec on a quiet machine, one line each;
    this invocation's outputs are deleted afterwards unless kept."""
    runs = []
    try:
        for spec in specs:
            if wait_quiet_s > 0:
                wait_quiet(wait_quiet_s)
            r = run_pipeline(**spec)
            print(f"{spec.get('config', CONFIG).name}, {r['rows']:,} rows: {r['wall_s']:.0f} s, "
                  f"{r['rows'] / r['wall_s']:.0f} rows/s, CPU {r['cpu_s']:.0f} s, peak tree "
                  f"RSS {r['peak_rss_tree_mib']:.0f} MiB, other load "
                  f"{r['other_load_cores']:.2f}, check {r['check'].get('ok')}", flush=True)
            runs.append(r)
    finally:
        if not keep_outputs:
            remove_outputs()
    return runs


def command_line(script: str, argv: list[str] | None) -> str:
    """The command that produced a result, as recorded next to it."""
    return "python " + shlex.join([f"bench/{script}", *(sys.argv[1:] if argv is None else argv)])


def remove_outputs() -> None:
    """Delete this invocation's output tables (the logs stay)."""
    shutil.rmtree(RUNS, ignore_errors=True)


def _git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                              capture_output=True, text=True).stdout.strip()
    except OSError:
        return "?"


def _fmt(x, digits=1):
    return "–" if x is None else f"{x:,.{digits}f}"


def table(runs: list[dict], base: dict | None, ratio: float | None) -> str:
    lines = ["| run | rows | wall s | rows/s | CPU s | other load (cores) | peak RSS MiB (tree) "
             "| procs | speed-up vs baseline | memory ratio 1M/100k | output ok |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in runs:
        speed = (r["rows_per_s"] / base["rows_per_s"]) if base and r is not base \
            and r["rows"] == base["rows"] else None
        mem = ratio if r.get("is_memory_run") else None
        lines.append(
            f"| {r['name']} | {r['rows']:,} | {_fmt(r['wall_s'])} | {_fmt(r['rows_per_s'], 0)} "
            f"| {_fmt(r['cpu_s'])} | {_fmt(r['other_load_cores'], 2)} "
            f"| {_fmt(r['peak_rss_tree_mib'], 0)} | {r['max_processes']} "
            f"| {'1.00× (reference)' if r is base else (_fmt(speed, 2) + '×' if speed else '–')} "
            f"| {_fmt(mem, 2) + '×' if mem else '–'} "
            f"| {'yes' if r['check']['ok'] and r['returncode'] == 0 else 'NO'} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--memory-rows", type=int, default=1_000_000)
    ap.add_argument("--skip-1m", action="store_true", help="skip the --memory-rows run")
    ap.add_argument("--skip-in-memory", action="store_true", help="skip the in_memory run")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--wait-quiet", type=float, default=900, metavar="S",
                    help="before each run, wait up to S seconds until other processes use "
                         "< 0.3 cores (default 900; 0 = do not wait)")
    ap.add_argument("--json", default=str(RESULTS / "deterministic.json"))
    ap.add_argument("--keep-outputs", action="store_true",
                    help=f"keep the runs' output tables (default: delete {RUNS.parent}/pid<PID> at the end)")
    args = ap.parse_args(argv)
    command = command_line("run_deterministic.py", argv)
    RESULTS.mkdir(parents=True, exist_ok=True)
    print(f"$ {command}", flush=True)
    commit_at_start = _git_commit()

    small = input_file(args.rows, args.seed)
    big = None if args.skip_1m else input_file(args.memory_rows, args.seed)

    runs = []

    def step(title, fn, *a):
        print(f"-- {title} ...", flush=True)
        if args.wait_quiet > 0:
            wait_quiet(args.wait_quiet)
        r = fn(*a)
        r["rows_per_s"] = r["rows"] / r["wall_s"]
        print(f"   {r['wall_s']:.1f} s, {r['rows_per_s']:.0f} rows/s, CPU {r['cpu_s']:.0f} s, "
              f"other load {r['other_load_cores']:.2f} cores, "
              f"peak tree RSS {r['peak_rss_tree_mib']:.0f} MiB, rc={r['returncode']}, "
              f"check={'ok' if r['check']['ok'] else r['check']}", flush=True)
        runs.append(r)
        return r

    base = step(f"baseline loop, {args.rows} rows", run_baseline, small, args.rows)
    mp = step(f"pipeline multi_processing, {args.rows} rows", run_pipeline, small, args.rows,
              "multi_processing", args.workers)
    if not args.skip_in_memory:
        step(f"pipeline in_memory, {args.rows} rows", run_pipeline, small, args.rows, "in_memory")
    big_run = None
    if big is not None:
        big_run = step(f"pipeline multi_processing, {args.memory_rows} rows", run_pipeline, big,
                       args.memory_rows, "multi_processing", args.workers)
        big_run["is_memory_run"] = True

    par = parity(Path(base["out"]), Path(mp["out"])) if base["check"]["ok"] and mp["check"]["ok"] \
        else {"ok": False, "note": "skipped: a run failed"}
    speedup = mp["rows_per_s"] / base["rows_per_s"]
    ratio = big_run["peak_rss_tree_mib"] / mp["peak_rss_tree_mib"] if big_run else None
    goals = {  # issue 13's goals (issue 2 asked for 1.5× and 1.5×)
        "speedup_vs_baseline": speedup, "speedup_goal": SPEEDUP_GOAL,
        "speedup_met": speedup >= SPEEDUP_GOAL,
        "memory_ratio": ratio, "memory_ratio_goal": MEMORY_GOAL,
        "memory_met": None if ratio is None else ratio <= MEMORY_GOAL,
        # CPU seconds per row, baseline / pipeline (all processes): what the
        # speed-up would be on idle cores, as far as CPU time tells
        "cpu_per_row_ratio": base["cpu_s"] / mp["cpu_s"] if mp["cpu_s"] else None,
    }
    md = [f"Command: `{command}`", "",
          f"Machine: {psutil.cpu_count()} CPUs, {psutil.virtual_memory().total / 2**30:.0f} GiB RAM, "
          f"Python {platform.python_version()}, {platform.platform()}, "
          f"evalbeam commit {commit_at_start}"
          + ("" if _git_commit() == commit_at_start else f" (HEAD moved to {_git_commit()} during the runs)"),
          "",
          table(runs, base, ratio), "",
          f"Speed-up (multi_processing, {args.workers} workers, vs baseline at {args.rows:,} rows): "
          f"{speedup:.2f}× (goal ≥ {SPEEDUP_GOAL}×: {'met' if goals['speedup_met'] else 'NOT met'}); "
          f"CPU seconds baseline / pipeline: {goals['cpu_per_row_ratio']:.2f}×"]
    if ratio is not None:
        md.append(f"Memory ratio (peak tree RSS {args.memory_rows:,} / {args.rows:,} rows, "
                  f"multi_processing): {ratio:.2f}× (goal ≤ {MEMORY_GOAL}×: "
                  f"{'met' if goals['memory_met'] else 'NOT met'})")
    loaded = [r["name"] + f" ({r['rows']:,} rows)" for r in runs if r["other_load_cores"] > 0.3]
    if loaded:
        md.append("WARNING: other processes competed for the CPUs during: " + "; ".join(loaded))
    md.append(f"Metric parity pipeline vs baseline (per-metric count and mean): "
              f"{'identical' if par['ok'] else 'DIFFERENT, see JSON'}")
    text = "\n".join(md)
    print("\n" + text, flush=True)

    from importlib.metadata import version
    beam_version = version("apache-beam")
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", ".", ":!bench"], cwd=ROOT,
                               capture_output=True, text=True).stdout.split("\n")
        dirty = [line for line in dirty if line.strip()]
    except OSError:
        commit, dirty = None, []
    report = {"command": command, "git_commit_at_start": commit_at_start, "git_commit": commit, "git_dirty_outside_bench": dirty, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "machine": {"cpus": psutil.cpu_count(), "ram_gib": psutil.virtual_memory().total / 2**30,
                          "python": platform.python_version(), "platform": platform.platform(),
                          "apache_beam": beam_version},
              "rows": args.rows, "memory_rows": None if args.skip_1m else args.memory_rows,
              "seed": args.seed, "runs": runs, "goals": goals, "parity": par, "markdown": text}
    Path(args.json).write_text(json.dumps(report, indent=2, default=str))
    Path(args.json).with_suffix(".md").write_text(text + "\n")
    print(f"\nwrote {args.json}", flush=True)
    if not args.keep_outputs:
        remove_outputs()
    return 0 if all(r["check"]["ok"] and r["returncode"] == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
