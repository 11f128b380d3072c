"""How fast `evalbeam view` answers on a 100k-case run (issue 25's goal: every
page under 1 s).

    python bench/viewer_speed.py [--cases 100000] [--repeat 5] [--work DIR]

Two runs of N cases × 2 bots × 16 metrics are written straight in the
published layout, with a completion marker, from the synthetic cases of
bench/make_synthetic.py (real question, reference, answer and context texts;
verdicts and metric values drawn at random): running the pipeline on 100k
cases twice would take an hour on this machine and measure the pipeline, not
the viewer. The viewer then runs in this process and every page is fetched
over HTTP on 127.0.0.1, `--repeat` times; the first open of each run (which
loads it into DuckDB) is reported on its own.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import urllib.parse
import uuid

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from schemas.tables import RESULTS, SCORES  # noqa: E402

METRICS = [f"metric_{j:02d}" for j in range(14)] + ["hallucination", "rougeL"]
VERDICTS = np.array(["PASS", "WARN", "FAIL", "ERROR"])
BOTS = ("faq", "recorded")


def _write(output: str, table: str, parts: tuple[str, ...], name: str, data: pa.Table) -> str:
    folder = os.path.join(output, table, *parts)
    os.makedirs(folder, exist_ok=True)
    pq.write_table(data, os.path.join(folder, name), row_group_size=10_000)
    return "/".join((table, *parts, name))


def write_run(output: str, run_id: str, run_date: str, cases: pa.Table, seed: int) -> dict:
    """One run's results and scores for both bots, and its manifest (last)."""
    rng = np.random.default_rng(seed)
    attempt = uuid.uuid4().hex[:12]
    n = cases.num_rows
    files: dict[str, list[str]] = {"results": [], "scores": []}
    for b, bot in enumerate(BOTS):
        answers = cases["answer"] if bot == "recorded" else \
            cases["answer"].take(pa.array(rng.permutation(n)))
        verdicts = VERDICTS[rng.choice(4, n, p=[0.45, 0.25, 0.28, 0.02])]
        results = pa.table({
            "run_id": pa.array([run_id] * n), "case_id": cases["case_id"],
            "suite": cases["suite"], "question": cases["question"],
            "expected_answer": cases["expected_answer"], "answer": answers,
            "contexts": cases["contexts"], "tags": cases["tags"] if "tags" in
            cases.column_names else pa.nulls(n, pa.list_(pa.string())),
            "latency_ms": pa.array(rng.gamma(2, 40, n)), "verdict": pa.array(verdicts),
            "verdict_reason": pa.array([f"metric_03 {v:.2f} < 0.5" for v in rng.random(n)]),
            "error": pa.nulls(n, pa.string())})
        for field in RESULTS.schema:
            if field.name not in results.column_names:
                results = results.append_column(field.name, pa.nulls(n, field.type))
        results = results.select(RESULTS.schema.names).cast(RESULTS.schema)
        files["results"].append(_write(output, "results", (f"run_date={run_date}",
                                                           f"bot={bot}"),
                                       f"part-{run_id}.{attempt}.r{b}.parquet", results))
        m = len(METRICS)
        values = rng.beta(4, 2, n * m)
        values[rng.random(n * m) < 0.02] = np.nan
        take = pa.array(np.tile(np.arange(n), m))
        scores = pa.table({
            "run_id": pa.array([run_id] * (n * m)), "case_id": cases["case_id"].take(take),
            "suite": cases["suite"].take(take),
            "metric": pa.array(np.repeat(METRICS, n)),
            "value": pa.array(values, mask=np.isnan(values)),
            "details": pa.array([json.dumps({"precision": 0.5, "recall": 0.5})] * (n * m)),
            "error": pa.nulls(n * m, pa.string())}).cast(SCORES.schema)
        files["scores"].append(_write(output, "scores", (f"run_date={run_date}", f"bot={bot}"),
                                      f"part-{run_id}.{attempt}.s{b}.parquet", scores))
    manifest = {"run_id": run_id, "run_date": run_date, "attempt": attempt, "input": "synthetic",
                "output": output, "bots": list(BOTS), "metrics": METRICS,
                "counts": {"input_rows": n, "valid_cases": n, "invalid_rows": 0,
                           "bot_errors": 0, "results_rows": 2 * n,
                           "scores_rows": 2 * n * len(METRICS), "errors_rows": 0},
                "tables": {"results": 2 * n, "scores": 2 * n * len(METRICS)},
                "reconciliation": {"ok": True}, "finished_at": time.strftime(
                    "%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "files": files}
    folder = os.path.join(output, "runs", run_id)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "manifest.json"), "w", encoding="utf-8") as fh:
        json.dump(manifest, fh)
    return manifest


def cpu_s() -> float:
    """CPU seconds of this process (the server and its DuckDB threads run here)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def fetch(port: int, path: str) -> tuple[int, float, float, int]:
    """(status, wall seconds, CPU seconds, bytes) of one page."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    start, cpu = time.perf_counter(), cpu_s()
    conn.request("GET", path)
    resp = conn.getresponse()
    body = resp.read()
    took, used = time.perf_counter() - start, cpu_s() - cpu
    conn.close()
    return resp.status, took, used, len(body)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--work", default=os.path.join(ROOT, "bench", "data", "viewer"))
    args = ap.parse_args()
    source = os.path.join(args.work, f"cases{args.cases}.parquet")
    output = os.path.join(args.work, "out")
    if not os.path.exists(source):
        os.makedirs(args.work, exist_ok=True)
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "make_synthetic.py"),
                        str(args.cases), source], check=True)
    if not os.path.exists(os.path.join(output, "runs", "v2", "manifest.json")):
        cases = pq.read_table(source)
        t = time.perf_counter()
        write_run(output, "v1", "2026-11-21", cases, 1)
        write_run(output, "v2", "2026-11-22", cases, 2)
        print(f"wrote two runs of {args.cases:,} cases × 2 bots × {len(METRICS)} metrics in "
              f"{time.perf_counter() - t:.0f} s")
    from pipeline.viewer.server import start_in_thread
    server = start_in_thread(output, 0)
    port = server.server_address[1]
    some = pq.read_table(source, columns=["case_id"]).column(0)[args.cases // 2].as_py()
    search = "/run/v1?q=" + urllib.parse.quote("refund")
    print(f"evalbeam view on {args.cases:,} cases × 2 bots ({2 * args.cases:,} results rows, "
          f"{2 * args.cases * len(METRICS):,} scores rows); wall and CPU seconds (the server "
          "and DuckDB run in this process)")
    print("opening a run, then filtering at once (what is built on first use is in these):")
    for label, path in (("open run v1 (page 1)", "/run/v1"),
                        ("then a text search", search),
                        ("then a metric range", "/run/v1?metric=hallucination&min=0.2&max=0.4"),
                        ("open run v2", "/run/v2"),
                        ("then v1 and v2 side by side", "/compare?a=v1&b=v2")):
        status, took, used, _ = fetch(port, path)
        assert status == 200, (label, status)
        print(f"  {label:32s} {took:7.3f}s wall {used:7.3f}s cpu")
    pages = {
        "runs list": "/",
        "explorer, page 1": "/run/v1",
        "explorer, bot + verdict": "/run/v1?bot=recorded&verdict=FAIL",
        "explorer, metric range": "/run/v1?metric=hallucination&min=0.2&max=0.4",
        "explorer, text search": "/run/v1?q=" + urllib.parse.quote("refund"),
        "explorer, all filters": "/run/v1?bot=faq&suite=billing&verdict=WARN&metric=rougeL"
                                 "&min=0.5&q=" + urllib.parse.quote("plan"),
        "explorer, page 2,000": "/run/v1?page=2000",
        "case page": "/run/v1/case/" + urllib.parse.quote(some, safe=""),
        "side by side": "/compare?a=v1&b=v2",
        "side by side, changed + text": "/compare?a=v1&b=v2&changed=1&q=" +
                                        urllib.parse.quote("refund"),
    }
    print(f"then every page {args.repeat} times (medians; max of the wall times):")
    print(f"  {'page':32s} {'wall':>8s} {'max':>8s} {'cpu':>8s} {'bytes':>9s}")
    for name, path in pages.items():
        walls, cpus, size = [], [], 0
        for _ in range(args.repeat):
            status, took, used, size = fetch(port, path)
            assert status == 200, (name, status)
            walls.append(took)
            cpus.append(used)
        print(f"  {name:32s} {statistics.median(walls):7.3f}s {max(walls):7.3f}s "
              f"{statistics.median(cpus):7.3f}s {size:9,d}")
    server.shutdown()


if __name__ == "__main__":
    main()
