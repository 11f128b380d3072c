"""95% confidence intervals of a mean and of a proportion, from the few
numbers a CombineFn can carry (count, sum, sum of squared deviations).

- A mean: Student's t interval, mean ± t(0.975, n-1) · s / √n. It needs only
  n, the mean and M2 = Σ(x - mean)², which merge exactly across workers
  (Chan et al.), so the summary stays one pass with a bounded accumulator.
- A proportion (pass rate, or a metric whose values are all 0 or 1): the
  Wilson score interval, which stays inside [0, 1] and behaves near 0 and 1
  where the t interval (Wald) collapses to a point.
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Sequence

from transforms.stats.t_table import T_975, Z_975

LEVEL = 0.95  # the tables below are for this level
Z = Z_975  # 1.959964, = scipy.stats.norm.ppf(0.975)


@lru_cache(maxsize=4096)
def _t_quantile(df: int) -> float:
    """= scipy.stats.t.ppf(0.975, df), which computes exactly stdtrit(df, q):
    from the written-out table for small df, else from scipy.special (imported
    here, not at start: not scipy.stats, ~1 s; not even scipy.special, ~0.25 s,
    for a small run)."""
    if 1 <= df <= len(T_975):
        return T_975[df - 1]
    from scipy import special
    return float(special.stdtrit(df, 0.5 + LEVEL / 2))


def t_interval(n: int, mean: float | None, m2: float,
               bounds: tuple[float, float] | None = None) -> tuple[float | None, float | None]:
    """Student's t interval of a mean from n, the mean and M2; None below two
    values (no spread to estimate). `bounds` clips it to a known range."""
    if n < 2 or mean is None:
        return None, None
    half = _t_quantile(n - 1) * math.sqrt(max(m2, 0.0) / (n - 1) / n)
    lo, hi = mean - half, mean + half
    if bounds is not None:
        lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
    return lo, hi


def wilson_interval(k: float, n: int) -> tuple[float | None, float | None]:
    """Wilson score interval of the proportion k / n; None when n is 0."""
    if n <= 0:
        return None, None
    p = k / n
    z2 = Z * Z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    # at k = 0 or k = n one end is exactly 0 or 1 (not 1e-17 away from it)
    return (0.0 if k <= 0 else max(0.0, centre - half),
            1.0 if k >= n else min(1.0, centre + half))


def sampled_interval(n: int, mean: float | None, m2: float, sampled: int, population: int,
                     binary: bool, bounds: tuple[float, float] | None = None
                     ) -> tuple[float | None, float | None]:
    """95% interval of a mean estimated from a simple random sample of
    `sampled` rows out of `population` (n of them with a value): the interval
    of a mean (or proportion) with the finite population correction
    sqrt(1 - f), f = sampled / population: a census (f = 1) has no sampling
    error. For 0/1 values, Wilson's interval at the effective size n / (1 - f).
    Fewer than two values of a sample (not a census) have no interval, 0/1 or
    not: one value cannot tell a 0/1 metric from a score that happened to be
    0 or 1, and the all-suites interval (stratified_mean) is None then too."""
    if n == 0 or mean is None:
        return None, None
    f = min(1.0, sampled / population) if population else 1.0
    if f >= 1.0:
        return mean, mean
    if n < 2:
        return None, None
    if binary:
        n_eff = n / (1.0 - f)
        return wilson_interval(mean * n_eff, n_eff)
    lo, hi = t_interval(n, mean, m2)
    if lo is None:
        return None, None
    half = (hi - lo) / 2 * math.sqrt(1.0 - f)
    lo, hi = mean - half, mean + half
    if bounds is not None:
        lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
    return lo, hi


def stratified_mean(strata: Sequence[tuple[int, int, int, float, float]],
                    bounds: tuple[float, float] | None = None
                    ) -> tuple[float | None, float | None, float | None]:
    """(mean, ci_low, ci_high) of a population from a stratified sample.

    strata: (population N_h, sampled rows, n_h values, mean_h, M2_h) per
    stratum. The estimate weighs each stratum by its share of the population,
    Σ W_h ȳ_h, W_h = N_h / N (a plain mean over the sample would over-weigh
    small suites, which are sampled more densely); its variance is
    Σ W_h² (1 - f_h) s_h² / n_h, and the interval uses Student's t with
    Σ (n_h - 1) degrees of freedom. Strata without a value are left out of
    the weights; a stratum with one value and rows unsampled leaves the
    interval undefined (None)."""
    used = [s for s in strata if s[2] > 0 and s[0] > 0]
    if not used:
        return None, None, None
    total = sum(s[0] for s in used)
    mean = sum(s[0] / total * s[3] for s in used)
    var, df = 0.0, 0
    for population, sampled, n, _, m2 in used:
        f = min(1.0, sampled / population)
        if f >= 1.0:
            continue
        if n < 2:
            return mean, None, None
        var += (population / total) ** 2 * (1.0 - f) * (m2 / (n - 1)) / n
        df += n - 1
    if df == 0:
        return mean, mean, mean
    half = _t_quantile(df) * math.sqrt(var)
    lo, hi = mean - half, mean + half
    if bounds is not None:
        lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
    return mean, lo, hi


def merge_moments(n_a: int, mean_a: float, m2_a: float,
                  n_b: int, mean_b: float, m2_b: float) -> float:
    """M2 of the union of two groups (Chan, Golub & LeVeque's pairwise update)."""
    if n_a == 0:
        return m2_b
    if n_b == 0:
        return m2_a
    delta = mean_b - mean_a
    return m2_a + m2_b + delta * delta * n_a * n_b / (n_a + n_b)
