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

Prints a markdown table and writes bench/results/dask_vs_fnapi.json.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psutil

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))
import run_deterministic as rd  # noqa: E402
from tests.dask_cluster import DaskCluster  # noqa: E402
from tests.table_equality import table_differences  # noqa: E402

MiB = 1024 * 1024
EXAMPLE = ROOT / "examples" / "support"
WORK = BENCH / "data" / "runs" / f"dask-pid{os.getpid()}"


def _sample(roots: list[int], peaks: dict[int, dict]) -> None:
    for root in roots:
        try:
            procs = [psutil.Process(root)]
            procs += procs[0].children(recursive=True)
        except psutil.NoSuchProcess:
            continue
        for p in procs:
            try:
                rss = p.memory_info().rss
                name = " ".join(p.cmdline()[1:4])[:60]
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
            info = peaks.setdefault(p.pid, {"process": name, "peak_rss_mib": 0.0})
            info["peak_rss_mib"] = max(info["peak_rss_mib"], rss / MiB)


def timed_run(cmd: list[str], also: list[int], log: Path) -> dict:
    """Run cmd; its wall time and every involved process's peak RSS."""
    log.parent.mkdir(parents=True, exist_ok=True)
    peaks: dict[int, dict] = {}
    with open(log, "w") as fh:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT)
        while proc.poll() is None:
            _sample([proc.pid, *also], peaks)
            time.sleep(0.2)
        wall = time.perf_counter() - t0
    return {"returncode": proc.returncode, "wall_s": wall, "log": str(log),
            "max_process_rss_mib": max((p["peak_rss_mib"] for p in peaks.values()), default=0),
            "processes": sorted(peaks.values(), key=lambda p: -p["peak_rss_mib"])}


def evalbeam(input_path: Path, config: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "pipeline", "run", "--input", str(input_path), "--config",
            str(config), "--output", str(out), "--run-id", "bench", *extra]


def run_fnapi(input_path, config, workers, out, log) -> dict:
    return timed_run(evalbeam(input_path, config, out, "--direct_running_mode=multi_processing",
                              f"--direct_num_workers={workers}"), [], log)


def run_dask(input_path, config, workers, out, log) -> dict:
    with DaskCluster(workers=workers) as cluster:
        pids = [cluster.scheduler.pid, *cluster.worker_pids()]
        return timed_run(evalbeam(input_path, config, out, "--runner=dask",
                                  f"--dask_client_address={cluster.address}",
                                  "--shared-filesystem"), pids, log)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=0, help="0: the bundled example")
    ap.add_argument("--config", default=str(EXAMPLE / "config.yaml"))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
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
            print(f"   {res['wall_s']:.1f} s, max process RSS {res['max_process_rss_mib']:.0f} MiB,"
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
              f"{x['max_process_rss_mib']:.0f} | {x.get('tables_equal', '?')} | "
              f"{x['load_avg']:.1f} |")
    print(f"\nDask / FnApiRunner wall time per round: "
          f"{', '.join(f'{r:.2f}' for r in ratios)} (median {result['median_ratio']:.2f})")
    shutil.rmtree(WORK, ignore_errors=True)
    return 0 if all(x["returncode"] == 0 and x.get("tables_equal", True) for x in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
