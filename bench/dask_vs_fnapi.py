"""evalbeam on a Dask cluster against the FnApiRunner, side by side, interleaved.

    python bench/dask_vs_fnapi.py [--rows 0] [--config examples/support/config.yaml]
                                  [--rounds 2] [--workers 2]

--rows 0 is the bundled example (258 cases); N > 0 is N synthetic cases
(bench/make_synthetic.py, cached in bench/data/), e.g. --rows 100000 with
--config bench/config_deterministic.yaml. Each round runs, in alternating
order, `evalbeam run` on the FnApiRunner with --direct_running_mode=
multi_processing and --direct_num_workers=W, and on a fresh Dask cluster of W
worker processes with one thread each (`dask scheduler` + `dask worker`, as
tests/dask_cluster.py starts them; the cluster's start-up is not timed, as a
standing cluster's would not be). Measured per run: wall time of the launcher
process, and the peak RSS of every process involved (the launcher and its
children; the scheduler and each worker), sampled every 0.2 s with psutil.
Each Dask run's tables are compared with the FnApiRunner's of the same round
(tests/table_equality.py: equal apart from latencies and 1e-6).

Prints a markdown table and writes bench/results/dask_vs_fnapi_<rows>.json.

    python bench/dask_vs_fnapi.py --memory-only [--sizes 100000 1000000] [--profiler]

runs only the Dask side, once at each size (bench/config_deterministic.yaml
unless --config says otherwise; a fresh cluster each), checks each run's
outputs as bench/run_deterministic.py does (row counts read back, manifest
reconciled; the check assumes the deterministic suite's 13 metrics), and
reports each process's peak RSS at both sizes, the ratio of the largest
single process's peaks (issue 24's goal: ≤ 1.3×), and each process's RSS
over time (bench/results/dask_memory_<small>_<big>.json has it every 5 s).
The workers run with dask's statistical profiler off unless --profiler.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))
import run_deterministic as rd  # noqa: E402
from tests.dask_cluster import DaskCluster  # noqa: E402
from tests.table_equality import table_differences  # noqa: E402

EXAMPLE = ROOT / "examples" / "support"
WORK = BENCH / "data" / "runs" / f"dask-pid{os.getpid()}"
# A dask worker samples its running task's stack every 10 ms and keeps the last
# 1,000 one-second profiles: memory that grows with the run's duration, up to
# ~1,000 s, whatever the rows (BENCHMARKS §9); the memory mode turns it off.
NO_PROFILER = {"DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False"}


def timed_run(cmd: list[str], also: dict[int, str], log: Path) -> dict:
    """Run cmd; its wall time, and every involved process's peak RSS and RSS timeline."""
    return rd.measure(cmd, log, also=also)


def evalbeam(input_path: Path, config: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "pipeline", "run", "--input", str(input_path), "--config",
            str(config), "--output", str(out), "--run-id", "bench", *extra]


def run_fnapi(input_path, config, workers, out, log) -> dict:
    return timed_run(evalbeam(input_path, config, out, "--direct_running_mode=multi_processing",
                              f"--direct_num_workers={workers}"), {}, log)


def run_dask(input_path, config, workers, out, log, env: dict | None = None) -> dict:
    # the workers run in a folder of their own: without PYTHONPATH they would import
    # evalbeam from wherever the environment's editable install points, not from here
    with DaskCluster(workers=workers, env={"PYTHONPATH": str(ROOT), **(env or {})}) as cluster:
        roles = {cluster.scheduler.pid: "dask scheduler",
                 **{pid: f"dask worker{i}" for i, pid in enumerate(cluster.worker_pids())}}
        return timed_run(evalbeam(input_path, config, out, "--runner=dask",
                                  f"--dask_client_address={cluster.address}",
                                  "--shared-filesystem"), roles, log)


def _role(process: dict) -> str:
    if process["role"] == "main":
        return "launcher"
    if "vl_convert" in process["role"]:  # the report's chart engine, a worker's child
        return "chart engine"
    return process["role"]


def _peaks(run: dict) -> dict[str, float]:
    """Peak RSS per role (the launcher, the scheduler, each worker; children by command)."""
    peaks: dict[str, float] = {}
    for p in run["processes"]:
        peaks[_role(p)] = max(peaks.get(_role(p), 0.0), p["peak_rss_mib"])
    return peaks


def _timeline(run: dict, points: int = 12) -> list[str]:
    """RSS of each process at about `points` moments of the run, as table rows."""
    roles = {str(p["pid"]): _role(p) for p in run["processes"]}
    line = run["rss_timeline_mib"]
    step = max(1, len(line) // points)
    rows = []
    for sample in line[::step] + ([line[-1]] if (len(line) - 1) % step else []):
        cells = ", ".join(f"{roles.get(pid, pid)} {mib}" for pid, mib in
                          sorted(sample["by_pid_mib"].items(), key=lambda kv: roles.get(kv[0], "")))
        rows.append(f"| {sample['t']:.0f} | {cells} |")
    return rows


def memory_only(args, argv) -> int:
    """The Dask side alone at two sizes: each process's peak RSS, and how much
    the largest one grows (issue 24's goal: at most 1.3x from 100 k to 1 M rows)."""
    config = Path(args.config or rd.CONFIG).resolve()
    runs = []
    for rows in args.sizes:
        out = WORK / f"memory-{rows}"
        shutil.rmtree(out, ignore_errors=True)
        print(f"dask, {rows:,} rows ...", flush=True)
        load = os.getloadavg()[0]
        res = run_dask(rd.input_file(rows, 0), config, args.workers, out,
                       rd.RESULTS / "logs" / WORK.name / f"memory-{rows}.log",
                       None if args.profiler else NO_PROFILER)
        res.update(rows=rows, load_avg=[load, os.getloadavg()[0]],
                   check=rd.verify_pipeline(out, rows, "bench"), peaks=_peaks(res))
        shutil.rmtree(out, ignore_errors=True)
        print(f"   {res['wall_s']:.0f} s, CPU {res['cpu_s']:.0f} s, other load "
              f"{res['other_load_cores']:.2f} cores, exit {res['returncode']}, check "
              f"{res['check']['ok']}, peaks MiB {json.dumps(res['peaks'])}", flush=True)
        runs.append(res)
    small, big = runs
    ratio = big["peak_rss_single_mib"] / small["peak_rss_single_mib"]
    ok = all(r["returncode"] == 0 and r["check"]["ok"] for r in runs)
    md = [f"Command: `{rd.command_line('dask_vs_fnapi.py', argv)}` (dask's worker profiler "
          f"{'on' if args.profiler else 'off'})", "",
          f"| process | peak RSS MiB, {small['rows']:,} rows | {big['rows']:,} rows | ratio |",
          "|---|---:|---:|---:|"]
    for role in sorted(set(small["peaks"]) | set(big["peaks"])):
        a, b = small["peaks"].get(role), big["peaks"].get(role)
        md.append(f"| {role} | {a or 0:.0f} | {b or 0:.0f} | "
                  f"{f'{b / a:.2f}×' if a and b else '–'} |")
    md += ["", f"Largest single process: {small['peak_rss_single_mib']:.0f} → "
               f"{big['peak_rss_single_mib']:.0f} MiB, **{ratio:.2f}×** (goal ≤ "
               f"{rd.MEMORY_GOAL}×: {'met' if ratio <= rd.MEMORY_GOAL else 'NOT met'}); outputs "
               f"{'checked (counts, manifest reconciled, tables read back)' if ok else 'NOT correct'}",
           f"Wall s {small['wall_s']:.0f} / {big['wall_s']:.0f}, CPU s {small['cpu_s']:.0f} / "
           f"{big['cpu_s']:.0f}, load average {small['load_avg']} / {big['load_avg']}, other load "
           f"(cores) {small['other_load_cores']:.2f} / {big['other_load_cores']:.2f}"]
    for r in runs:
        md += ["", f"RSS timeline MiB, {r['rows']:,} rows:", "", "| t s | process MiB |",
               "|---:|---|", *_timeline(r)]
    text = "\n".join(md)
    print("\n" + text)
    rd.RESULTS.mkdir(parents=True, exist_ok=True)
    name = f"dask_memory_{small['rows']}_{big['rows']}.json"
    (rd.RESULTS / name).write_text(json.dumps(
        {"command": rd.command_line("dask_vs_fnapi.py", argv), "config": str(config),
         "workers": args.workers, "worker_profiler": args.profiler, "runs": runs, "ratio": ratio, "goal": rd.MEMORY_GOAL,
         "outputs_ok": ok, "markdown": text}, indent=2, default=str))
    shutil.rmtree(WORK, ignore_errors=True)
    return 0 if ok else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=0, help="0: the bundled example")
    ap.add_argument("--config", default=None,
                    help="default: the example's; with --memory-only the deterministic suite's")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory-only", action="store_true",
                    help="only the Dask side, at the two --sizes: peak RSS per process")
    ap.add_argument("--sizes", type=int, nargs=2, default=[100_000, 1_000_000],
                    metavar=("SMALL", "BIG"))
    ap.add_argument("--profiler", action="store_true",
                    help="with --memory-only: keep dask's statistical profiler on in the "
                         "workers (default off, see NO_PROFILER)")
    args = ap.parse_args(argv)
    if args.memory_only:
        return memory_only(args, argv)
    args.config = args.config or str(EXAMPLE / "config.yaml")
    input_path = EXAMPLE / "cases.parquet" if args.rows == 0 else rd.input_file(args.rows, 0)
    config = Path(args.config).resolve()
    load_before = os.getloadavg()
    runs = []
    for r in range(args.rounds):
        order = ["fnapi", "dask"] if r % 2 == 0 else ["dask", "fnapi"]
        outs = {}
        for kind in order:
            outs[kind] = WORK / f"r{r}-{kind}"
            shutil.rmtree(outs[kind], ignore_errors=True)
            fn = run_fnapi if kind == "fnapi" else run_dask
            print(f"round {r + 1}: {kind} ...", flush=True)
            res = fn(input_path, config, args.workers, outs[kind],
                     rd.RESULTS / "logs" / WORK.name / f"r{r}-{kind}.log")
            res.update(runner=kind, round=r + 1, load_avg=os.getloadavg()[0])
            print(f"   {res['wall_s']:.1f} s, max process RSS {res['peak_rss_single_mib']:.0f} MiB,"
                  f" exit {res['returncode']}", flush=True)
            runs.append(res)
        if all(x["returncode"] == 0 for x in runs[-2:]):
            diffs = table_differences(str(outs["dask"]), "bench", str(outs["fnapi"]), "bench")
            runs[-1]["tables_equal"] = runs[-2]["tables_equal"] = not diffs
            if diffs:
                print("   tables differ: " + "; ".join(diffs[:5]), flush=True)
        for out in outs.values():
            shutil.rmtree(out, ignore_errors=True)
    ratios = [d["wall_s"] / f["wall_s"] for f, d in
              zip([x for x in runs if x["runner"] == "fnapi"],
                  [x for x in runs if x["runner"] == "dask"])]
    result = {"command": rd.command_line("dask_vs_fnapi.py", argv), "rows": args.rows or 258,
              "config": str(config.relative_to(ROOT)), "workers": args.workers,
              "load_avg_before": load_before, "cpu_count": os.cpu_count(), "runs": runs,
              "wall_ratio_dask_over_fnapi": ratios,
              "median_ratio": statistics.median(ratios) if ratios else None}
    rd.RESULTS.mkdir(parents=True, exist_ok=True)
    name = f"dask_vs_fnapi_{args.rows or 'example'}.json"
    (rd.RESULTS / name).write_text(json.dumps(result, indent=2, default=str))
    print("\n| round | runner | wall s | max process RSS MiB | tables equal | load avg |")
    print("|---|---|---|---|---|---|")
    for x in runs:
        print(f"| {x['round']} | {x['runner']} | {x['wall_s']:.1f} | "
              f"{x['peak_rss_single_mib']:.0f} | {x.get('tables_equal', '?')} | "
              f"{x['load_avg']:.1f} |")
    print(f"\nDask / FnApiRunner wall time per round: "
          f"{', '.join(f'{r:.2f}' for r in ratios)} (median {result['median_ratio']:.2f})")
    shutil.rmtree(WORK, ignore_errors=True)
    return 0 if all(x["returncode"] == 0 and x.get("tables_equal", True) for x in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
