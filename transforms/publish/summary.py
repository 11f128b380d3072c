"""Summaries: CombineFns over metric values and verdicts, bounded in memory.

Percentiles are exact (numpy's linear interpolation) while a group holds at
most EXACT_LIMIT values; beyond that they come from a DDSketch-style
histogram of logarithmic buckets (every value within 0.5% of the true one),
whose size depends on the range of the values, not their number. (Beam's
ApproximateQuantiles sketch, sized for 10^9 elements, grew to ~1.6 MB of
Python floats per group and dominated the memory of million-row runs.)

Every mean gets a 95% confidence interval (`ci_low`, `ci_high`) from count,
mean and M2 (the sum of squared deviations, merged exactly across workers):
Student's t interval, or Wilson's when every value is 0 or 1 (and for the
pass rate); see `intervals.py`. A 20-bin histogram over [0, 1] rides along
for the HTML report's distributions (not a table column).
"""
from __future__ import annotations

import math
from array import array
from typing import Iterable, Iterator, Mapping

import apache_beam as beam
import numpy as np

from schemas.tables import ALL_SUITES, VERDICT_METRIC
from transforms.publish.intervals import (merge_moments, sampled_interval, stratified_mean,
                                          t_interval, wilson_interval)

EXACT_LIMIT = 10_000
HIST_BINS = 20  # over [0, 1]; dropped once a value falls outside


class LogBuckets:
    """Mergeable quantile sketch with relative accuracy ALPHA (DDSketch).

    A value v > 0 falls in bucket i = ceil(log_γ v) with γ = (1+α)/(1-α); the
    bucket's representative 2γ^i/(γ+1) is within α of every value in it.
    Negative values mirror into their own buckets; |v| < TINY counts as zero.
    """

    ALPHA = 0.005
    GAMMA = (1 + ALPHA) / (1 - ALPHA)
    LOG_GAMMA = math.log(GAMMA)
    TINY = 1e-12

    __slots__ = ("pos", "neg", "zeros", "count")

    def __init__(self):
        self.pos: dict[int, int] = {}
        self.neg: dict[int, int] = {}
        self.zeros = self.count = 0

    def add(self, value: float) -> None:
        self.count += 1
        if abs(value) < self.TINY:
            self.zeros += 1
            return
        store = self.pos if value > 0 else self.neg
        i = math.ceil(math.log(abs(value)) / self.LOG_GAMMA)
        store[i] = store.get(i, 0) + 1

    def merge(self, other: "LogBuckets") -> None:
        for mine, theirs in ((self.pos, other.pos), (self.neg, other.neg)):
            for i, n in theirs.items():
                mine[i] = mine.get(i, 0) + n
        self.zeros += other.zeros
        self.count += other.count

    def _value(self, i: int) -> float:
        return 2 * self.GAMMA ** i / (self.GAMMA + 1)

    def quantile(self, q: float) -> float | None:
        """The value at rank q·(n-1), nearest rank, from the most negative up."""
        if not self.count:
            return None
        rank, seen = q * (self.count - 1), 0
        for i in sorted(self.neg, reverse=True):
            seen += self.neg[i]
            if seen > rank:
                return -self._value(i)
        seen += self.zeros
        if seen > rank:
            return 0.0
        for i in sorted(self.pos):
            seen += self.pos[i]
            if seen > rank:
                return self._value(i)
        return self._value(max(self.pos)) if self.pos else 0.0


class MetricStats:
    """Accumulator: count, missing, sum, M2, min, max, the values (or a sketch),
    whether every value is 0 or 1, and a histogram while values stay in [0, 1]."""

    __slots__ = ("count", "missing", "total", "m2", "lo", "hi", "values", "sketch", "binary",
                 "hist")

    def __init__(self):
        self.count = self.missing = 0
        self.total = self.m2 = 0.0
        self.lo, self.hi = math.inf, -math.inf
        self.values: array | None = array("d")
        self.sketch = None
        self.binary = True
        self.hist: list[int] | None = [0] * HIST_BINS

    def add(self, value: float | None) -> None:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            self.missing += 1
            return
        delta = value - self.total / self.count if self.count else 0.0
        self.count += 1
        self.total += value
        self.m2 += delta * (value - self.total / self.count)  # Welford
        self.lo, self.hi = min(self.lo, value), max(self.hi, value)
        self.binary = self.binary and value in (0, 1)
        if self.hist is not None:
            if 0.0 <= value <= 1.0:
                self.hist[min(int(value * HIST_BINS), HIST_BINS - 1)] += 1
            else:
                self.hist = None
        if self.values is not None:
            self.values.append(value)
            if len(self.values) > EXACT_LIMIT:
                self._to_sketch()
        else:
            self.sketch.add(value)

    def _to_sketch(self) -> None:
        self.sketch = LogBuckets()
        for v in self.values:
            self.sketch.add(v)
        self.values = None

    def merge(self, other: "MetricStats") -> None:
        if other.count:
            self.m2 = merge_moments(self.count, self.total / self.count if self.count else 0.0,
                                    self.m2, other.count, other.total / other.count, other.m2)
        self.count += other.count
        self.missing += other.missing
        self.total += other.total
        self.lo, self.hi = min(self.lo, other.lo), max(self.hi, other.hi)
        self.binary = self.binary and other.binary
        self.hist = (None if self.hist is None or other.hist is None
                     else [a + b for a, b in zip(self.hist, other.hist)])
        if self.values is not None and other.values is not None:
            self.values.extend(other.values)
            if len(self.values) > EXACT_LIMIT:
                self._to_sketch()
            return
        if self.values is not None:
            self._to_sketch()
        if other.values is None:
            self.sketch.merge(other.sketch)
        else:
            for v in other.values:
                self.sketch.add(v)

    def percentile(self, q: int) -> float | None:
        """The q-th percentile (integer 0..100): exact, or from the sketch."""
        if self.count == 0:
            return None
        if self.values is not None:
            return float(np.percentile(np.frombuffer(self.values, dtype=np.float64), q))
        return self.sketch.quantile(q / 100)

    def percentiles(self) -> tuple[float | None, float | None]:
        return self.percentile(50), self.percentile(90)

    def interval(self) -> tuple[float | None, float | None]:
        """95% interval of the mean: Wilson for 0/1 values, else Student's t
        (clipped to [0, 1] when every value lies there)."""
        if self.count and self.binary:
            return wilson_interval(self.total, self.count)
        mean = self.total / self.count if self.count else None
        unit = 0.0 <= self.lo and self.hi <= 1.0
        return t_interval(self.count, mean, self.m2, (0.0, 1.0) if unit else None)

    def as_row(self) -> dict:
        p50, p90 = self.percentiles()
        empty = self.count == 0
        ci_low, ci_high = self.interval()
        return {"count": self.count, "missing": self.missing,
                "mean": None if empty else self.total / self.count, "p50": p50, "p90": p90,
                "min": None if empty else self.lo, "max": None if empty else self.hi,
                "ci_low": ci_low, "ci_high": ci_high,
                "hist": None if empty else self.hist,  # for the HTML report (not a column)
                "m2": self.m2, "binary": self.binary}  # for sampled metrics' intervals


class MergingCombineFn(beam.CombineFn):
    """A CombineFn whose accumulator (of class `accumulator`) adds an input
    with add(value) and takes another in with merge(other)."""

    accumulator: type

    def create_accumulator(self):
        return self.accumulator()

    def add_input(self, acc, value):
        acc.add(value)
        return acc

    def merge_accumulators(self, accs: Iterable):
        accs = iter(accs)
        first = next(accs)
        for acc in accs:
            first.merge(acc)
        return first


class MetricStatsFn(MergingCombineFn):
    """Values (float or None) -> summary statistics row fragment."""

    accumulator = MetricStats

    def extract_output(self, acc: MetricStats) -> dict:
        return acc.as_row()


# The stratum of the rows without a suite, for sampled metrics only: their
# statistics enter the all-suites estimate but are no summary row of their own.
NO_SUITE = "\x00no suite"


def summary_keys(bot: str, suite: str | None, metric: str,
                 sampled: bool = False) -> tuple[tuple[str, str, str], ...]:
    """Every group a value belongs to: its suite and the all-suites roll-up
    (a sampled metric's rows without a suite: also their own stratum)."""
    overall = (bot, ALL_SUITES, metric)
    if suite is None or suite == ALL_SUITES:
        return (overall, (bot, NO_SUITE, metric)) if sampled else (overall,)
    return (overall, (bot, suite, metric))


def metric_values(bot: str, suite: str | None, scores, sampled: frozenset[str] = frozenset(),
                  not_sampled: str = "") -> Iterator[tuple[tuple[str, str, str], float | None]]:
    """(summary key, value) of every score of a row. A sampled metric's rows
    outside the sample are left out: they are neither values nor missing."""
    for metric, result in scores.items():
        is_sampled = metric in sampled
        if is_sampled and result.error == not_sampled:
            continue
        for key in summary_keys(bot, suite, metric, is_sampled):
            yield key, result.value


def _rows_per_group(verdicts: Iterable[tuple[tuple[str, str, str], int]]
                    ) -> dict[tuple[str, str], int]:
    """Rows (case × bot) per (bot, suite), the rows without a suite under NO_SUITE."""
    rows = {key: sum(c.values()) for key, c in group_verdicts(verdicts).items()}
    for (bot, suite), n in list(rows.items()):
        if suite == ALL_SUITES:
            rest = n - sum(m for (b, s), m in rows.items() if b == bot and s != ALL_SUITES)
            rows[(bot, NO_SUITE)] = rest
    return rows


def sampled_rows(rows: list[dict], population: Mapping[tuple[str, str], int]) -> list[dict]:
    """A sampled metric's summary rows as estimates of the whole population:
    each suite's interval with the finite population correction, the
    all-suites mean and interval stratified by suite (transforms/publish/
    intervals.py); `population` says how many rows the sample was drawn from."""
    by_group: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        by_group.setdefault((r["bot"], r["metric"]), []).append(r)
    out = []
    for (bot, metric), group in by_group.items():
        strata = []
        for r in group:
            r.update(sampled=True, population=population.get((bot, r["suite"]), 0))
            bounds = (0.0, 1.0) if r["count"] and 0.0 <= r["min"] and r["max"] <= 1.0 else None
            if r["suite"] != ALL_SUITES:
                r["ci_low"], r["ci_high"] = sampled_interval(
                    r["count"], r["mean"], r["m2"], r["count"] + r["missing"],
                    r["population"], r["binary"], bounds)
                strata.append((r["population"], r["count"] + r["missing"], r["count"],
                               r["mean"], r["m2"]))
        for r in group:
            if r["suite"] == ALL_SUITES:
                bounds = (0.0, 1.0) if r["count"] and 0.0 <= r["min"] and r["max"] <= 1.0 \
                    else None
                r["mean"], r["ci_low"], r["ci_high"] = stratified_mean(strata, bounds)
        out += [r for r in group if r["suite"] != NO_SUITE]
    return out


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
                 lower_is_better: frozenset[str],
                 sampled: frozenset[str] = frozenset()) -> list[dict]:
    """Rows of the summary table, sorted for stable output; `sampled`: the
    metrics computed on a sample (their rows are estimates, see sampled_rows)."""
    verdicts = list(verdicts)
    rows, drawn = [], []
    for (bot, suite, metric), stats in metric_stats:
        row = {"run_id": run_id, "bot": bot, "suite": suite, "metric": metric, **stats,
               "higher_is_better": metric not in lower_is_better, "sampled": False}
        (drawn if metric in sampled else rows).append(row)
    if drawn:
        rows += sampled_rows(drawn, _rows_per_group(verdicts))
    for (bot, suite), counts in group_verdicts(verdicts).items():
        n = sum(counts.values())
        ci_low, ci_high = wilson_interval(counts["PASS"], n)
        rows.append({"run_id": run_id, "bot": bot, "suite": suite, "metric": VERDICT_METRIC,
                     "count": n, "missing": 0,
                     "mean": counts["PASS"] / n if n else None,  # the pass rate
                     "ci_low": ci_low, "ci_high": ci_high,
                     "pass_count": counts["PASS"], "warn_count": counts["WARN"],
                     "fail_count": counts["FAIL"], "error_count": counts["ERROR"],
                     "sampled": False})
    rows.sort(key=lambda r: (r["bot"], r["suite"] != ALL_SUITES, r["suite"], r["metric"]))
    return rows
