"""Summaries: CombineFns over metric values and verdicts, bounded in memory.

Percentiles are exact (numpy's linear interpolation) while a group holds at
most EXACT_LIMIT values, and come from Beam's ApproximateQuantiles sketch
(relative rank error ≈ 1%) beyond that, so a million rows never sit in one list.
"""
from __future__ import annotations

import math
from array import array
from typing import Iterable

import apache_beam as beam
import numpy as np
from apache_beam.transforms.stats import ApproximateQuantilesCombineFn

from schemas.tables import ALL_SUITES, VERDICT_METRIC

EXACT_LIMIT = 10_000
_SKETCH = ApproximateQuantilesCombineFn.create(num_quantiles=101, epsilon=0.005)


class MetricStats:
    """Accumulator: count, missing, sum, min, max and the values (or a sketch)."""

    __slots__ = ("count", "missing", "total", "lo", "hi", "values", "sketch")

    def __init__(self):
        self.count = self.missing = 0
        self.total = 0.0
        self.lo, self.hi = math.inf, -math.inf
        self.values: array | None = array("d")
        self.sketch = None

    def add(self, value: float | None) -> None:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            self.missing += 1
            return
        self.count += 1
        self.total += value
        self.lo, self.hi = min(self.lo, value), max(self.hi, value)
        if self.values is not None:
            self.values.append(value)
            if len(self.values) > EXACT_LIMIT:
                self._to_sketch()
        else:
            self.sketch = _SKETCH.add_input(self.sketch, value)

    def _to_sketch(self) -> None:
        self.sketch = _SKETCH.add_inputs(_SKETCH.create_accumulator(), self.values)
        self.values = None

    def merge(self, other: "MetricStats") -> None:
        self.count += other.count
        self.missing += other.missing
        self.total += other.total
        self.lo, self.hi = min(self.lo, other.lo), max(self.hi, other.hi)
        if self.values is not None and other.values is not None:
            self.values.extend(other.values)
            if len(self.values) > EXACT_LIMIT:
                self._to_sketch()
            return
        if self.values is not None:
            self._to_sketch()
        other_sketch = other.sketch if other.values is None else _SKETCH.add_inputs(
            _SKETCH.create_accumulator(), other.values)
        self.sketch = _SKETCH.merge_accumulators([self.sketch, other_sketch])

    def percentile(self, q: int) -> float | None:
        """The q-th percentile (integer 0..100): exact, or from the sketch."""
        if self.count == 0:
            return None
        if self.values is not None:
            return float(np.percentile(np.frombuffer(self.values, dtype=np.float64), q))
        return float(_SKETCH.extract_output(_SKETCH.compact(self.sketch))[q])

    def percentiles(self) -> tuple[float | None, float | None]:
        return self.percentile(50), self.percentile(90)

    def as_row(self) -> dict:
        p50, p90 = self.percentiles()
        empty = self.count == 0
        return {"count": self.count, "missing": self.missing,
                "mean": None if empty else self.total / self.count, "p50": p50, "p90": p90,
                "min": None if empty else self.lo, "max": None if empty else self.hi}


class MetricStatsFn(beam.CombineFn):
    """Values (float or None) -> summary statistics row fragment."""

    def create_accumulator(self) -> MetricStats:
        return MetricStats()

    def add_input(self, acc: MetricStats, value) -> MetricStats:
        acc.add(value)
        return acc

    def merge_accumulators(self, accs: Iterable[MetricStats]) -> MetricStats:
        accs = iter(accs)
        first = next(accs)
        for acc in accs:
            first.merge(acc)
        return first

    def extract_output(self, acc: MetricStats) -> dict:
        return acc.as_row()


def summary_keys(bot: str, suite: str | None, metric: str) -> tuple[tuple[str, str, str], ...]:
    """Every group a value belongs to: its suite and the all-suites roll-up."""
    overall = (bot, ALL_SUITES, metric)
    if suite is None or suite == ALL_SUITES:
        return (overall,)
    return (overall, (bot, suite, metric))


def group_verdicts(counted: Iterable[tuple[tuple[str, str, str], int]]
                   ) -> dict[tuple[str, str], dict[str, int]]:
    """((bot, suite, verdict), n) pairs -> {(bot, suite): {verdict: n}} with every verdict."""
    grouped: dict[tuple[str, str], dict[str, int]] = {}
    for (bot, suite, verdict), n in counted:
        counts = grouped.setdefault((bot, suite), {"PASS": 0, "WARN": 0, "FAIL": 0, "ERROR": 0})
        counts[verdict] = counts.get(verdict, 0) + n
    return grouped


def summary_rows(run_id: str, metric_stats: Iterable[tuple[tuple[str, str, str], dict]],
                 verdicts: Iterable[tuple[tuple[str, str, str], int]],
                 lower_is_better: frozenset[str]) -> list[dict]:
    """Rows of the summary table, sorted for stable output."""
    rows = []
    for (bot, suite, metric), stats in metric_stats:
        rows.append({"run_id": run_id, "bot": bot, "suite": suite, "metric": metric, **stats,
                     "higher_is_better": metric not in lower_is_better})
    for (bot, suite), counts in group_verdicts(verdicts).items():
        n = sum(counts.values())
        rows.append({"run_id": run_id, "bot": bot, "suite": suite, "metric": VERDICT_METRIC,
                     "count": n, "missing": 0,
                     "mean": counts["PASS"] / n if n else None,  # the pass rate
                     "pass_count": counts["PASS"], "warn_count": counts["WARN"],
                     "fail_count": counts["FAIL"], "error_count": counts["ERROR"]})
    rows.sort(key=lambda r: (r["bot"], r["suite"] != ALL_SUITES, r["suite"], r["metric"]))
    return rows
