"""Two runs' tables written straight in the documented layout (results/,
scores/, summary/), without running the pipeline: for tests of `compare` on
chosen cases, and for the compare benchmark at 100k and 1M cases."""
from __future__ import annotations

import json
import os
import uuid

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from schemas.tables import RESULTS, SCORES, SUMMARY
from tests.pipeline_helpers import write_marker
from transforms.publish.summary import summary_rows

VERDICTS = np.array(["PASS", "WARN", "FAIL", "ERROR"])


ATTEMPT = "0" * 12  # every hand-written run is one committed attempt


def _write(output: str, table: str, partition: str, run_id: str, data: pa.Table) -> None:
    folder = os.path.join(output, table, partition)
    os.makedirs(folder, exist_ok=True)
    pq.write_table(data, os.path.join(
        folder, f"part-{run_id}.{ATTEMPT}.{uuid.uuid4().hex[:8]}.parquet"),
        row_group_size=1_000_000)


def write_run(output: str, run_id: str, run_date: str, bot: str, case_ids: list[str],
              suites: np.ndarray, values: dict[str, np.ndarray], verdicts: np.ndarray,
              answers: list[str] | None = None, lower_is_better: frozenset[str] = frozenset(),
              reasons: list[str] | None = None) -> None:
    """One bot of one run: results, scores (NaN = null) and summary rows."""
    n = len(case_ids)
    ids = pa.array(case_ids, pa.string())
    suite_arr = pa.array(suites, pa.string())
    answers = answers if answers is not None else [f"answer {i}" for i in range(n)]
    results = pa.table({
        "run_id": pa.array([run_id] * n, pa.string()).dictionary_encode(),
        "case_id": ids, "suite": suite_arr,
        "question": pa.array([f"question {c}" for c in case_ids], pa.string()),
        "expected_answer": pa.nulls(n, pa.string()), "answer": pa.array(answers, pa.string()),
        "contexts": pa.nulls(n, pa.list_(pa.string())), "tags": pa.nulls(n, pa.list_(pa.string())),
        "latency_ms": pa.nulls(n, pa.float64()), "verdict": pa.array(verdicts, pa.string()),
        "verdict_reason": pa.array(reasons if reasons is not None else
                                   [f"reason {v}" for v in verdicts], pa.string()),
        "error": pa.nulls(n, pa.string()), "bot_details": pa.nulls(n, pa.string())})
    for field in RESULTS.schema:  # columns added to results/ since (label, references, ...)
        if field.name not in results.column_names:
            results = results.append_column(field.name, pa.nulls(n, field.type))
    _write(output, "results", f"run_date={run_date}/bot={bot}", run_id,
           results.cast(pa.schema([f if f.name != "run_id" else pa.field("run_id", pa.string())
                                   for f in RESULTS.schema])))
    names = sorted(values)
    m = len(names)
    take = np.tile(np.arange(n), m)
    flat = np.concatenate([values[k] for k in names])
    scores = pa.table({
        "run_id": pa.array([run_id], pa.string()).take(pa.array(np.zeros(n * m, np.int64))),
        "case_id": ids.take(pa.array(take)), "suite": suite_arr.take(pa.array(take)),
        "metric": pa.array(names, pa.string()).take(pa.array(np.repeat(np.arange(m), n))),
        "value": pa.array(flat, pa.float64(), mask=np.isnan(flat)),
        "details": pa.nulls(n * m, pa.string()), "error": pa.nulls(n * m, pa.string())})
    _write(output, "scores", f"run_date={run_date}/bot={bot}", run_id,
           scores.cast(SCORES.schema))
    stats = []
    for k in names:
        ok = values[k][~np.isnan(values[k])]
        stats.append(((bot, "*", k), {
            "count": len(ok), "missing": n - len(ok), "mean": float(ok.mean()) if len(ok) else None,
            "min": float(ok.min()) if len(ok) else None,
            "max": float(ok.max()) if len(ok) else None}))
    counts = [((bot, "*", v), int((verdicts == v).sum())) for v in VERDICTS]
    rows = summary_rows(run_id, stats, counts, lower_is_better)
    _write(output, "summary", f"run_date={run_date}", run_id,
           pa.Table.from_pylist(rows, schema=SUMMARY.schema))
    marker = os.path.join(output, "runs", run_id, "manifest.json")
    bots = json.load(open(marker))["bots"] if os.path.exists(marker) else []
    write_marker(output, run_id, run_date, ATTEMPT, bots=sorted({*bots, bot}), metrics=names)


def paired_runs(n: int, metrics: int = 16, seed: int = 0, effect: float = 0.0,
                binary_metrics: int = 2, null_share: float = 0.02, suites: int = 8):
    """Baseline and candidate values of n cases: candidate = baseline + effect
    + noise, clipped to [0, 1]; the first `binary_metrics` metrics are 0/1."""
    rng = np.random.default_rng(seed)
    base, cand = {}, {}
    for j in range(metrics):
        name = f"metric_{j:02d}"
        if j < binary_metrics:
            b = (rng.random(n) < 0.6).astype(float)
            flip = rng.random(n) < 0.1
            c = np.where(flip, 1 - b, b)
        else:
            b = rng.beta(4, 2, n)
            c = np.clip(b + effect + rng.normal(0, 0.1, n), 0, 1)
        for arr in (b, c):
            arr[rng.random(n) < null_share] = np.nan
        base[name], cand[name] = b, c
    suite_names = np.array([f"suite{i}" for i in range(suites)])[rng.integers(0, suites, n)]

    def verdicts(vals):
        first = np.nan_to_num(vals[f"metric_{metrics - 1:02d}"], nan=0.0)
        return VERDICTS[np.select([first > 0.6, first > 0.4], [0, 1], 2)]
    return suite_names, base, cand, verdicts(base), verdicts(cand)
