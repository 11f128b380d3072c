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
from transforms.publish import pass_rate
from transforms.publish.completed import CompletedRun, RunUnreadable, read_completed_run

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
    """A chart point of a summary row as pass_rate.shown gives it: a pass rate
    no rule decided has no mean (a gap in its line, not a 0) and says why."""
    metric = PASS_RATE if row["metric"] == VERDICT_METRIC else row["metric"]
    point = {"run_date": run_date, "run_id": row["run_id"], "bot": row["bot"], "metric": metric,
             "mean": row.get("mean"), "ci_low": row.get("ci_low"), "ci_high": row.get("ci_high")}
    if row.get("undecided"):
        point["undecided"] = row["undecided"].replace(pass_rate.SEE_NOTE, "")
    return point


def shown_point(point: Mapping[str, Any]) -> bool:
    """A point the trends draw: a value, or a pass rate no rule decided (a gap)."""
    return point["mean"] is not None or bool(point.get("undecided"))


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


def committed_runs(output: str, run_ids: Iterable[str]) -> dict[str, CompletedRun]:
    """run_id -> its committed attempt (its manifest, the summary files its
    completion marker lists); runs without a completed attempt (killed,
    running) or with a corrupt marker are left out."""
    found = {}
    for run_id in sorted(set(run_ids)):
        try:
            found[run_id] = read_completed_run(output, run_id)
        except RunUnreadable as exc:
            logging.getLogger(__name__).info("trends leave out run %s: %s", run_id, exc)
    return found


def load_history(output: str, run_id: str, run_date: str,
                 current: Iterable[Mapping[str, Any]], dates: int = TREND_DATES,
                 manifest: Mapping[str, Any] | None = None) -> list[dict]:
    """Headline points (one per run × bot × metric, all suites) of the last
    `dates` run dates up to this run's, this run's from `current` (its
    manifest: its verdict rules); other runs are read through their completion
    markers. A night whose pass rate no rule decided (every row ERROR, no rule,
    or every rule's metric without a value) is a point without a mean and with
    `undecided`, the reason: a gap in its line, never a 0."""
    current = list(current)
    points = [trend_point(r, run_date) for r in pass_rate.shown(
        [r for r in current if r["suite"] == ALL_SUITES], manifest or {})]
    wanted = set(headline_metrics(current))
    points = [p for p in points if p["metric"] in wanted]
    by_date = summary_files(output)
    kept = set(sorted(d for d in by_date if d <= run_date)[-dates:])
    others = {r for d in kept for r in map(_run_id_of, by_date[d]) if r and r != run_id}
    for other, run in committed_runs(output, others).items():
        rows = []  # the run's rows of the kept dates (its every file: shown reads them together)
        for path in run.files(SUMMARY.name):
            date = _DATE.search(path)
            if date is None or date.group(1) not in kept:
                continue
            with FileSystems.open(path) as fh:
                rows += [{**r, "run_date": date.group(1)} for r in pq.read_table(fh).to_pylist()
                         if r["run_id"] == other and r.get("suite") == ALL_SUITES]
        for r in pass_rate.shown(rows, run.manifest):
            point = trend_point(r, r["run_date"])
            if point["metric"] in wanted and shown_point(point):
                points.append(point)
    return points


def undecided_nights(points: Iterable[Mapping[str, Any]]) -> list[tuple[str, str, str]]:
    """(run, bot, why) of the pass-rate points no rule decided, in run order."""
    return sorted((p.get("run", p["run_date"]), p["bot"], p["undecided"]) for p in points
                  if p["metric"] == PASS_RATE and p.get("undecided"))
