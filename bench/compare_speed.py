"""`evalbeam compare` at scale: wall time at 100,000 paired cases × 16
metrics, peak memory at 1,000,000, next to DuckDB's raw speed for the same
join (the physical reference: pairing the two runs' scores, nothing else).

    python bench/compare_speed.py [--cases 100000] [--memory-cases 1000000] [--metrics 16]

The two runs' tables are written straight in the documented layout
(tests/compare_tables.py; candidate = baseline - 0.005 + noise, 2% nulls,
8 suites, 2 metrics 0/1) and cached in bench/data/. Memory is the peak RSS of
the compare process tree (bench/run_deterministic.py's `measure`).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import run_deterministic as rd  # noqa: E402
from tests.compare_tables import paired_runs, write_run  # noqa: E402


def tables(cases: int, metrics: int) -> Path:
    out = rd.DATA / f"compare_{cases}_m{metrics}"
    if (out / "summary").exists():
        return out
    t0 = time.perf_counter()
    suites, base, cand, vb, vc = paired_runs(cases, metrics, seed=7, effect=-0.005)
    ids = [f"case-{i:08d}" for i in range(cases)]
    write_run(str(out), "baseline", "2026-11-20", "bot", ids, suites, base, vb)
    write_run(str(out), "candidate", "2026-11-21", "bot", ids, suites, cand, vc)
    print(f"   wrote {cases:,} cases × {metrics} metrics × 2 runs in "
          f"{time.perf_counter() - t0:.0f} s", flush=True)
    return out


def duckdb_join(out: Path) -> dict:
    """The same pairing join, straight in DuckDB (2 threads, as compare uses)."""
    import duckdb
    con = duckdb.connect(config={"threads": 2})
    scan = f"read_parquet('{out}/scores/**/*.parquet', hive_partitioning=true)"
    t0 = time.perf_counter()
    n, total = con.execute(f"""
        SELECT count(*), sum(c.value - b.value) FROM {scan} b JOIN {scan} c
          ON b.bot = c.bot AND b.case_id = c.case_id AND b.metric = c.metric
        WHERE b.run_id = 'baseline' AND c.run_id = 'candidate'""").fetchone()
    return {"wall_s": time.perf_counter() - t0, "pairs": n}


def one(cases: int, metrics: int, wait_quiet_s: float) -> dict:
    out = tables(cases, metrics)
    for f in out.glob("comparisons/**/*.parquet"):
        f.unlink()
    load = rd.wait_quiet(wait_quiet_s)
    cmd = [rd.PY, "-m", "pipeline", "compare", "--output", str(out),
           "--baseline", "baseline", "--candidate", "candidate"]
    run = rd.measure(cmd, rd.LOGS / f"compare_{cases}.log")
    run["load_before"] = load
    import duckdb
    rows = duckdb.connect().execute(
        f"SELECT count(*), sum(n_pairs) FROM read_parquet('{out}/comparisons/**/*.parquet', "
        "hive_partitioning=true) WHERE suite = '*' AND run_id = 'candidate'").fetchone()
    run["check"] = {"rows_all_suites": rows[0], "pairs_all_suites": rows[1],
                    "ok": run["returncode"] == 0 and rows[0] == metrics + 1}
    run["duckdb_join"] = duckdb_join(out)
    run.update(cases=cases, metrics=metrics)
    print(f"{cases:>9,} cases × {metrics}: compare {run['wall_s']:.1f} s, peak RSS "
          f"{run['peak_rss_tree_mib']:,.0f} MiB (other load {run['other_load_cores']:.2f} "
          f"cores); DuckDB join alone {run['duckdb_join']['wall_s']:.1f} s "
          f"({run['duckdb_join']['pairs']:,} pairs); output "
          f"{'checked' if run['check']['ok'] else 'NOT correct'}", flush=True)
    return run


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=100_000)
    ap.add_argument("--memory-cases", type=int, default=1_000_000)
    ap.add_argument("--metrics", type=int, default=16)
    ap.add_argument("--wait-quiet", type=float, default=120)
    args = ap.parse_args(argv)
    runs = [one(n, args.metrics, args.wait_quiet) for n in (args.cases, args.memory_cases) if n]
    rd.RESULTS.mkdir(parents=True, exist_ok=True)
    (rd.RESULTS / "compare_speed.json").write_text(json.dumps(
        {"command": rd.command_line("compare_speed.py", argv), "cpus": os.cpu_count(),
         "runs": runs}, indent=2, default=str))
    return 0 if all(r["check"]["ok"] for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
