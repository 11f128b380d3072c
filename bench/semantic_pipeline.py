"""Benchmark: end-to-end rows/s of the pipeline with the semantic metrics on.

    python bench/semantic_pipeline.py [--rows 10000] [--workers 2]
    python bench/semantic_pipeline.py --rows 2000 --rounds 2 \\
        --arm before=/tmp/main-archive --arm after=. [--env after:KEY=VALUE]

Runs `python -m pipeline run` (FnApiRunner, multi_processing, 2 workers) over
the synthetic cases of bench/make_synthetic.py twice, one after the other:
bench/config_deterministic.yaml (10 deterministic metrics) and
bench/config_semantic.yaml (the same + answer_similarity, bertscore and
answer_relevance on the local MiniLM embedder). Wall time, rows/s, CPU and
peak RSS of the process tree are measured as in bench/run_deterministic.py
(whose functions this reuses); outputs are read back and reconciled.
Writes bench/results/semantic_pipeline.json.

With --arm name=<checkout> (twice or more), the semantic config instead runs
once per arm and round, the arms interleaved (their order alternating from
round to round), each from its own checkout (its code, its config), on the
same input; the input is cut into one Parquet row group per worker so that
every worker has rows, as 10,000 rows (two shards) have. Each run's scores
are compared with the first arm's of the same round: the largest |value
difference| over every (case, bot, metric) and the share of equal verdicts.
Writes bench/results/semantic_arms.json.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_deterministic as rd  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--wait-quiet", type=float, default=600)
    ap.add_argument("--keep-outputs", action="store_true")
    ap.add_argument("--arm", action="append", default=[], metavar="NAME=PATH",
                    help="a checkout to run the semantic config from (give two or more)")
    ap.add_argument("--env", action="append", default=[], metavar="NAME:KEY=VALUE",
                    help="an environment variable for one arm's runs")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args(argv)
    if args.arm:
        return run_arms(args, argv)
    path = rd.input_file(args.rows, 0)
    configs = (("-det", rd.CONFIG, rd.N_METRICS),
               ("-sem", rd.BENCH / "config_semantic.yaml", rd.N_METRICS + 3))
    runs = rd.quiet_pipeline_runs(
        [dict(path=path, rows=args.rows, mode="multi_processing", workers=args.workers,
              config=config, tag=tag, n_metrics=n) for tag, config, n in configs],
        args.wait_quiet, args.keep_outputs)
    for r, (_, config, _) in zip(runs, configs):
        r["config"] = config.name
    (rd.RESULTS / "semantic_pipeline.json").write_text(json.dumps(
        {"command": rd.command_line("semantic_pipeline.py", argv), "runs": runs},
        indent=2, default=str))
    return 0 if all(r["check"].get("ok") for r in runs) else 1


# ---------------------------------------------------------------- arms

def split_input(rows: int, workers: int) -> Path:
    """The synthetic input with one row group (hence one shard) per worker."""
    import pyarrow.parquet as pq
    path = rd.DATA / f"cases_{rows}_seed0_rg{workers}.parquet"
    if not path.exists():
        table = pq.read_table(rd.input_file(rows, 0))
        pq.write_table(table, path, row_group_size=-(-rows // workers))
    return path


def _values(out: Path) -> tuple[dict, dict]:
    """{(case_id, bot, metric): value} of the scores, {(case_id, bot): verdict}."""
    import pyarrow.dataset as ds
    scores = ds.dataset(str(out / "scores"), format="parquet", partitioning="hive").to_table(
        columns=["case_id", "bot", "metric", "value"]).to_pydict()
    results = ds.dataset(str(out / "results"), format="parquet", partitioning="hive").to_table(
        columns=["case_id", "bot", "verdict"]).to_pydict()
    return ({(c, b, m): v for c, b, m, v in zip(scores["case_id"], scores["bot"],
                                                 scores["metric"], scores["value"])},
            {(c, b): v for c, b, v in zip(results["case_id"], results["bot"],
                                          results["verdict"])})


def compare(base: tuple[dict, dict], other: tuple[dict, dict]) -> dict:
    """Largest |value difference| (overall and per metric), values null in one
    only, and the share of equal verdicts."""
    (va, ra), (vb, rb) = base, other
    per_metric: dict[str, float] = {}
    null_mismatch = 0
    for key in va.keys() | vb.keys():
        a, b = va.get(key), vb.get(key)
        if (a is None) != (b is None):
            null_mismatch += 1
        elif a is not None:
            per_metric[key[2]] = max(per_metric.get(key[2], 0.0), abs(a - b))
    same = sum(ra.get(k) == rb.get(k) for k in ra.keys() | rb.keys())
    return {"max_abs_diff": max(per_metric.values(), default=0.0), "per_metric": per_metric,
            "null_mismatch": null_mismatch, "keys": [len(va), len(vb)],
            "verdict_agreement": same / max(1, len(ra.keys() | rb.keys()))}


def run_arms(args, argv) -> int:
    arms = dict(a.split("=", 1) for a in args.arm)
    envs: dict[str, dict] = {name: {} for name in arms}
    for e in args.env:
        name, _, kv = e.partition(":")
        key, _, value = kv.partition("=")
        envs[name][key] = value
    path = split_input(args.rows, args.workers)
    names, runs, ok = list(arms), [], True
    try:
        for rnd in range(args.rounds):
            order = names if rnd % 2 == 0 else names[::-1]
            values = {}
            for name in order:
                if args.wait_quiet > 0:
                    rd.wait_quiet(args.wait_quiet)
                r = run_arm(name, Path(arms[name]).resolve(), envs[name], path, args, rnd)
                values[name] = _values(Path(r["out"]))
                runs.append(r)
                ok = ok and r["check"]["ok"]
            for r in runs[-len(names):]:
                r["vs_first_arm"] = compare(values[names[0]], values[r["arm"]])
                print(f"round {rnd} {r['arm']}: {r['rows_per_s']:.2f} rows/s, CPU "
                      f"{r['cpu_s']:.1f} s ({1000 * r['cpu_s'] / args.rows:.1f} ms/row), load "
                      f"{r['loadavg'][0]:.1f}, other {r['other_load_cores']:.2f} cores, max "
                      f"|diff| {r['vs_first_arm']['max_abs_diff']:.2e}, verdicts "
                      f"{r['vs_first_arm']['verdict_agreement']:.4f}", flush=True)
    finally:
        if not args.keep_outputs:
            rd.remove_outputs()
    summary = {}
    for name in names:
        mine = [r for r in runs if r["arm"] == name]
        summary[name] = {"rows_per_s_median": statistics.median(r["rows_per_s"] for r in mine),
                         "cpu_ms_per_row_median": statistics.median(
                             1000 * r["cpu_s"] / args.rows for r in mine)}
    first = summary[names[0]]
    for name in names:
        s = summary[name]
        print(f"{name}: {s['rows_per_s_median']:.2f} rows/s "
              f"({s['rows_per_s_median'] / first['rows_per_s_median']:.2f}x), "
              f"{s['cpu_ms_per_row_median']:.1f} CPU ms/row "
              f"({s['cpu_ms_per_row_median'] / first['cpu_ms_per_row_median']:.2f}x)")
    (rd.RESULTS / "semantic_arms.json").write_text(json.dumps(
        {"command": rd.command_line("semantic_pipeline.py", argv), "arms": arms, "env": envs,
         "summary": summary, "runs": runs}, indent=2, default=str))
    return 0 if ok else 1


def run_arm(name: str, repo: Path, env: dict, path: Path, args, rnd: int) -> dict:
    run_id = f"arm-{name}-{rnd}"
    out = rd.RUNS / run_id
    shutil.rmtree(out, ignore_errors=True)
    cmd = [rd.PY, "-m", "pipeline", "run", "--input", str(path), "--output", str(out),
           "--config", str(repo / "bench" / "config_semantic.yaml"), "--run-id", run_id,
           "--direct_running_mode=multi_processing", f"--direct_num_workers={args.workers}"]
    load0 = os.getloadavg()
    m = rd.measure(cmd, rd.LOGS / f"{run_id}.log", cwd=repo,
                   env={"PYTHONPATH": str(repo), **env})
    m.update(arm=name, repo=str(repo), round=rnd, rows=args.rows, out=str(out),
             rows_per_s=args.rows / m["wall_s"], loadavg=[load0[0], os.getloadavg()[0]],
             check=rd.verify_pipeline(out, args.rows, run_id, rd.N_METRICS + 3))
    return m


if __name__ == "__main__":
    sys.exit(main())
