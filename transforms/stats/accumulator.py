"""MetricStats: one group's values (a metric of a bot and suite, or an endpoint's
latencies), bounded in memory.

Percentiles are exact (numpy's linear interpolation) while a group holds at
most EXACT_LIMIT values; beyond that they come from a DDSketch-style
histogram of logarithmic buckets (every value within 0.5% of the true one),
whose size depends on the range of the values, not their number. Count,
mean and M2 merge exactly across workers, for the intervals of intervals.py.
"""
from __future__ import annotations

import math
from array import array

import numpy as np

from transforms.stats.intervals import merge_moments, t_interval, wilson_interval

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
        """95% interval of the mean: Wilson for 0/1 values, else Student's t,
        clipped to [0, 1] when every value lies there and at 0 when every value
        is at least 0 (a count or a length: a mean of such values is never
        negative, but t's symmetric interval over three values may reach -2)."""
        if self.count and self.binary:
            return wilson_interval(self.total, self.count)
        mean = self.total / self.count if self.count else None
        low = 0.0 if self.lo >= 0.0 else -math.inf
        high = 1.0 if low == 0.0 and self.hi <= 1.0 else math.inf
        return t_interval(self.count, mean, self.m2, (low, high))

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
