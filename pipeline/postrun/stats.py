"""Paired statistics of a comparison: plain numpy/scipy functions.

- Interval of the paired delta: a percentile bootstrap that resamples cases
  (multinomial counts, i.e. n cases drawn with replacement), with a fixed
  seed. Every metric and suite of a bot shares the same resampled cases, and
  a resample's mean delta of a group is Σ w·d / Σ w over its non-null pairs,
  so all of them come from one matrix product per chunk of resamples.
- p-values: Wilcoxon's signed-rank test (scipy) for continuous metrics,
  McNemar's exact test for 0/1 metrics and the pass rate.
- Multiple comparisons: Holm's step-down adjustment (family-wise error):
  a regression gate that fails a build should be wrong at most 5% of the
  time across all the metrics it looks at, not 5% per metric.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy import stats

SEED = 20_240_611
RESAMPLES = 1000
LEVEL = 0.95
TIE = 1e-9          # |delta| at or below this is a tie (float noise between runs)
_CHUNK_CELLS = 8_000_000  # resamples × cases per weight matrix (64 MB as float64)


def resample_weights(rng: np.random.Generator, n: int, count: int) -> np.ndarray:
    """`count` bootstrap resamples of n cases as a (count, n) matrix of how
    often each case was drawn (multinomial(n, 1/n) per row)."""
    draws = rng.integers(0, n, size=(count, n))
    draws += (np.arange(count) * n)[:, None]
    return np.bincount(draws.ravel(), minlength=count * n).reshape(count, n).astype(np.float64)


def bootstrap_intervals(deltas: np.ndarray, cuts: Sequence[int] = (),
                        resamples: int = RESAMPLES, seed: int | Sequence[int] = SEED,
                        level: float = LEVEL) -> list[tuple[np.ndarray, np.ndarray]]:
    """Percentile bootstrap interval of the mean of each column of `deltas`
    (n cases × m metrics, NaN where a pair has no value): first over all
    rows, then for each part between consecutive `cuts` (row indexes that
    split rows sorted by suite into suites). Returns (low, high) arrays of m
    values per group, NaN where a group has no pair.
    """
    n, m = deltas.shape
    bounds = [0, *sorted(c for c in cuts if 0 < c < n), n]
    parts = list(zip(bounds[:-1], bounds[1:]))
    if n == 0:
        return [(np.full(m, np.nan), np.full(m, np.nan)) for _ in range(len(parts) + 1)]
    present = ~np.isnan(deltas)
    x = np.hstack([np.where(present, deltas, 0.0), present.astype(np.float64)])
    rng = np.random.default_rng(seed)
    chunk = max(1, min(resamples, _CHUNK_CELLS // n))
    means: list[list[np.ndarray]] = [[] for _ in range(len(parts) + 1)]
    done = 0
    with np.errstate(invalid="ignore", divide="ignore"):
        while done < resamples:
            count = min(chunk, resamples - done)
            w = resample_weights(rng, n, count)
            sums = [w[:, a:b] @ x[a:b] for a, b in parts]
            for g, s in enumerate([sum(sums), *sums] if len(parts) > 1 else sums * 2):
                means[g].append(s[:, :m] / s[:, m:])
            done += count
    tail = (1 - level) / 2 * 100
    out = []
    for reps in means:
        stacked = np.vstack(reps)
        low, high = np.full(m, np.nan), np.full(m, np.nan)
        for j in range(m):
            col = stacked[:, j][~np.isnan(stacked[:, j])]
            if col.size:
                low[j], high[j] = np.percentile(col, [tail, 100 - tail])
        out.append((low, high))
    return out


def wilcoxon_p(deltas: np.ndarray) -> float:
    """Two-sided p of Wilcoxon's signed-rank test; ties (|d| <= TIE) are
    dropped first (Wilcoxon's own rule). 1.0 when nothing changed."""
    d = deltas[np.abs(deltas) > TIE]
    if d.size == 0:
        return 1.0
    return float(stats.wilcoxon(d).pvalue)


def mcnemar_p(worse: int, better: int) -> float:
    """Two-sided exact McNemar p: of the discordant pairs (1→0 and 0→1),
    is the split different from even? (binomial, as statsmodels' exact=True)."""
    n = worse + better
    if n == 0:
        return 1.0
    return float(min(1.0, 2 * stats.binom.cdf(min(worse, better), n, 0.5)))


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values (None stays None, not counted)."""
    idx = [i for i, p in enumerate(pvalues) if p is not None]
    m = len(idx)
    out: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, i in enumerate(sorted(idx, key=lambda i: pvalues[i])):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        out[i] = running
    return out


def is_binary(*columns: np.ndarray) -> bool:
    """Every non-null value is 0 or 1 (then McNemar applies)."""
    for col in columns:
        v = col[~np.isnan(col)]
        if v.size and not np.all((v == 0) | (v == 1)):
            return False
    return True
