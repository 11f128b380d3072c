"""The history behind the trend charts: headline metrics of every completed
run in the same output folder over the last N run dates. summary/'s layout
(summary/run_date=D/part-<run_id>.*.parquet) says which runs to look at; each
run is then read through its completion marker (the files its manifest
lists), so a killed attempt's summary never shows. Beam's FileSystems, so it
works on every filesystem the pipeline writes to."""
from __future__ import annotations

import logging
import re
from typing import Any, Iterable, Mapping

import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from schemas.tables import ALL_SUITES, PASS_RATE, SUMMARY, VERDICT_METRIC
from transforms.publish.completed import RunUnreadable, read_completed_run

TREND_DATES = 30
# the metrics a person looks at first, in this order (those the run has)
HEADLINE = (PASS_RATE, "faithfulness", "answer_correctness", "hallucination",
            "lexical_relevance", "completeness", "answer_relevance", "rougeL", "bleu")
MAX_TREND_METRICS = 6
_DATE = re.compile(r"run_date=(\d{4}-\d{2}-\d{2})")


def headline_metrics(summary: Iterable[Mapping[str, Any]]) -> list[str]:
    have = {PASS_RATE if r["metric"] == VERDICT_METRIC else r["metric"] for r in summary}
    return [m for m in HEADLINE if m in have][:MAX_TREND_METRICS]


def trend_point(row: Mapping[str, Any], run_date: str) -> dict:
    metric = PASS_RATE if row["metric"] == VERDICT_METRIC else row["metric"]
    return {"run_date": run_date, "run_id": row["run_id"], "bot": row["bot"], "metric": metric,
            "mean": row.get("mean"), "ci_low": row.get("ci_low"), "ci_high": row.get("ci_high")}


def summary_files(output: str) -> dict[str, list[str]]:
    """run_date -> summary files of that date (any run, any attempt: a listing
    to find candidate runs, never read as is)."""
    pattern = FileSystems.join(output, SUMMARY.name, "run_date=*", "*.parquet")
    try:
        found = FileSystems.match([pattern])[0].metadata_list
    except Exception:  # noqa: BLE001 - no summary yet
        return {}
    by_date: dict[str, list[str]] = {}
    for meta in found:
        m = _DATE.search(meta.path)
        if m:
            by_date.setdefault(m.group(1), []).append(meta.path)
    return by_date


def _run_id_of(path: str) -> str | None:
    """part-<run_id>.<attempt>.<n>.parquet -> run_id (run ids hold no '.')."""
    name = path.rsplit("/", 1)[-1]
    return name[5:].split(".", 1)[0] if name.startswith("part-") else None


def committed_summaries(output: str, run_ids: Iterable[str]) -> dict[str, list[str]]:
    """run_id -> the summary files its completion marker lists; runs without a
    completed attempt (killed, running) or with a corrupt marker are left out."""
    found = {}
    for run_id in sorted(set(run_ids)):
        try:
            found[run_id] = read_completed_run(output, run_id).files(SUMMARY.name)
        except RunUnreadable as exc:
            logging.getLogger(__name__).info("trends leave out run %s: %s", run_id, exc)
    return found


def load_history(output: str, run_id: str, run_date: str,
                 current: Iterable[Mapping[str, Any]], dates: int = TREND_DATES) -> list[dict]:
    """Headline points (one per run × bot × metric, all suites) of the last
    `dates` run dates up to this run's, this run's from `current`; other runs
    are read through their completion markers."""
    current = [r for r in current if r["suite"] == ALL_SUITES]
    wanted = set(headline_metrics(current))
    points = [p for p in (trend_point(r, run_date) for r in current) if p["metric"] in wanted]
    by_date = summary_files(output)
    kept = set(sorted(d for d in by_date if d <= run_date)[-dates:])
    others = {r for d in kept for r in map(_run_id_of, by_date[d]) if r and r != run_id}
    for other, paths in committed_summaries(output, others).items():
        for path in paths:
            date = _DATE.search(path)
            if date is None or date.group(1) not in kept:
                continue
            with FileSystems.open(path) as fh:
                rows = pq.read_table(fh).to_pylist()
            for r in rows:
                if r["run_id"] != other or r.get("suite") != ALL_SUITES:
                    continue
                point = trend_point(r, date.group(1))
                if point["metric"] in wanted and point["mean"] is not None:
                    points.append(point)
    return points
