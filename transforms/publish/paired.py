"""Paired statistics of two sets of answers to the same cases (two runs in
`evalbeam compare`, two bots of one run in the report's head-to-head): plain
numpy/scipy functions, shared by both.

- Interval of the paired delta: a percentile bootstrap that resamples cases,
  with a fixed seed. It is the Poisson bootstrap (as TFMA's): in each
  resample a case is drawn w ~ Poisson(1) times, independently of the other
  cases, which for large n is the classic n-out-of-n resampling and, unlike
  it, lets the cases be processed block by block: the values are read once,
  and memory holds one block's weights (resamples × 8,000 cases), not
  resamples × n. A resample's mean delta of a group is Σ w·d / Σ w over the
  group's non-null pairs, so every metric of a block is one matrix product.
- p-values: Wilcoxon's signed-rank test (scipy) for continuous metrics,
  McNemar's exact test for 0/1 metrics and the pass rate.
- Minimum practical difference: a per-case change of at most
  `min_difference` (default MIN_DIFFERENCE) is a tie, in the wins / ties /
  losses and as a zero in the tests. Embedding metrics move in the 7th
  decimal between two runs of the same inputs (a float32 vector depends on
  its batch), which must never read as a change.
- Multiple comparisons: Holm's step-down adjustment (family-wise error):
  a regression gate that fails a build should be wrong at most 5% of the
  time across all the metrics it looks at, not 5% per metric.
"""
from __future__ import annotations

import functools
import zlib
from typing import Sequence

import numpy as np

from schemas.tables import MIN_DIFFERENCE, VERDICT_ORDER  # noqa: F401 (MIN_DIFFERENCE re-exported)

SEED = 20_240_611
RESAMPLES = 1000
LEVEL = 0.95
TIE = 1e-9          # |delta| at or below this is zero whatever the minimum difference
ALPHA = 0.05
MIN_INTERVAL_PAIRS = 2  # one pair resamples to itself: an interval of width 0, not one
_BLOCK_CELLS = 8_000_000  # resamples × cases per weight block (32 MB as float32)


@functools.cache
def _poisson_cdf() -> np.ndarray:
    """P(K <= k) of Poisson(1), k = 0.., for drawing weights by inverse CDF from
    uniforms (scipy.stats is imported on first use: the graph imports this
    module, and importing scipy.stats costs every run's start-up)."""
    from scipy import stats
    return stats.poisson.cdf(np.arange(0, 24), 1.0).astype(np.float32)


def bot_seed(bot: str) -> list[int]:
    """The bootstrap seed of one bot's pairs (the candidate's, bot against
    bot), so that a comparison and a run's head to head agree."""
    return [zlib.crc32(bot.encode()), 1]


def poisson_weights(rng: np.random.Generator, resamples: int, cases: int) -> np.ndarray:
    """How often each case is drawn in each resample: (resamples, cases)
    independent Poisson(1) counts (inverse CDF of float32 uniforms: twice as
    fast as Generator.poisson, exact to 2^-24)."""
    u = rng.random((resamples, cases), dtype=np.float32)
    return np.searchsorted(_poisson_cdf(), u, side="right").astype(np.float32)


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
    rng = np.random.default_rng(seed)
    block = max(1, _BLOCK_CELLS // resamples)
    sums = np.zeros((len(parts), resamples, 2 * m))  # per part: Σ w·d, then Σ w (non-null)
    for p, (start, stop) in enumerate(parts):
        for a in range(start, stop, block):
            d = deltas[a:min(stop, a + block)]
            present = ~np.isnan(d)
            x = np.hstack([np.where(present, d, 0.0), present]).astype(np.float32)
            sums[p] += poisson_weights(rng, resamples, len(d)) @ x
    tail = (1 - level) / 2 * 100
    out = []
    for s in [sums.sum(axis=0), *sums]:
        with np.errstate(invalid="ignore", divide="ignore"):
            means = s[:, :m] / s[:, m:]
        low, high = np.full(m, np.nan), np.full(m, np.nan)
        for j in range(m):
            col = means[:, j][~np.isnan(means[:, j])]
            if col.size:
                low[j], high[j] = np.percentile(col, [tail, 100 - tail])
        out.append((low, high))
    return out


EXACT_LIMIT = 50  # changed pairs up to which Wilcoxon's p is exact


def signed_rank_exact_p(d: np.ndarray) -> float:
    """Exact two-sided p of the signed-rank statistic over all 2^n sign flips,
    ties included: tied |d| share their average rank, so doubled ranks are
    integers and the null distribution of 2·T+ is a convolution over at most
    n(n+1) + 1 values (scipy's exact table assumes no ties; its permutation
    method samples and takes seconds)."""
    from scipy import stats
    doubled = np.rint(2 * stats.rankdata(np.abs(d))).astype(int)
    total = int(doubled.sum())
    dist = np.zeros(total + 1)
    dist[0] = 1.0
    for w in doubled:
        shifted = np.zeros_like(dist)
        shifted[w:] = dist[:total + 1 - w]
        dist = 0.5 * (dist + shifted)
    observed = int(doubled[d > 0].sum())
    return float(min(1.0, 2 * min(dist[:observed + 1].sum(), dist[observed:].sum())))


def wilcoxon_p(deltas: np.ndarray, zero: float = TIE) -> float:
    """Two-sided p of Wilcoxon's signed-rank test; zero deltas (|d| <= zero,
    the minimum practical difference) are dropped first (Wilcoxon's own
    rule). Exact up to EXACT_LIMIT changed pairs, else scipy's normal
    approximation with the tie correction. 1.0 when nothing changed."""
    d = deltas[np.abs(deltas) > max(zero, TIE)]
    if d.size == 0:
        return 1.0
    if d.size <= EXACT_LIMIT:
        return signed_rank_exact_p(d)
    from scipy import stats
    return float(stats.wilcoxon(d, method="asymptotic").pvalue)


def mcnemar_p(worse: int, better: int) -> float:
    """Two-sided exact McNemar p: of the discordant pairs (1→0 and 0→1),
    is the split different from even? (binomial, as statsmodels' exact=True)."""
    n = worse + better
    if n == 0:
        return 1.0
    from scipy import stats
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


def metric_row(base: np.ndarray, cand: np.ndarray, higher_is_better: bool | None,
               min_difference: float = MIN_DIFFERENCE) -> dict:
    """Paired statistics of one metric in one group (the interval comes
    apart): means, delta, wins / ties / losses and the test's p-value.
    A case whose change is within min_difference is a tie. A metric with no
    direction (higher_is_better None: answer_length) has no wins or losses
    (null), only its ties and its change."""
    delta = cand - base
    ok = ~np.isnan(delta)
    b, c, d = base[ok], cand[ok], delta[ok]
    n = int(ok.sum())
    zero = max(min_difference, TIE)
    gain = d if higher_is_better is not False else -d
    wins, losses = int((gain > zero).sum()), int((gain < -zero).sum())
    row = {"n_pairs": n, "null_pairs": int(len(delta) - n), "wins": wins, "losses": losses,
           "ties": n - wins - losses, "higher_is_better": higher_is_better,
           # cases with a value on each side (a side with none: nothing to compare)
           "baseline_values": int((~np.isnan(base)).sum()),
           "candidate_values": int((~np.isnan(cand)).sum()),
           "baseline_mean": None, "candidate_mean": None, "delta": None, "test": None,
           "p_value": None, "min_difference": min_difference}
    if higher_is_better is None:
        row.update(wins=None, losses=None)
    if n == 0:
        return row
    row.update(baseline_mean=float(b.mean()), candidate_mean=float(c.mean()),
               delta=float(d.mean()))
    if is_binary(b, c):
        row.update(test="mcnemar", p_value=mcnemar_p(int(((b == 1) & (c == 0)).sum()),
                                                     int(((b == 0) & (c == 1)).sum())))
    else:
        row.update(test="wilcoxon", p_value=wilcoxon_p(d, zero))
    return row


def group_rows(base: np.ndarray, cand: np.ndarray, higher: Sequence[bool],
               metrics: Sequence[str], cuts: Sequence[int], seed: Sequence[int],
               min_difference: float = MIN_DIFFERENCE) -> list[list[dict]]:
    """metric_row for every metric (columns of the pairs × metrics matrices),
    first over all pairs, then over each part between `cuts` (pairs sorted by
    suite), with the bootstrap interval of each delta and Holm's adjustment
    across the metrics of a group (`significant`: adjusted p < ALPHA); no
    interval (null) below MIN_INTERVAL_PAIRS pairs with a value."""
    n = len(base)
    bounds = [0, *sorted(c for c in cuts if 0 < c < n), n]
    groups = [(0, n)] + list(zip(bounds[:-1], bounds[1:]))
    intervals = bootstrap_intervals(cand - base, cuts, seed=seed)
    out = []
    for (a, b), (low, high) in zip(groups, intervals):
        group = []
        for j, metric in enumerate(metrics):
            row = metric_row(base[a:b, j], cand[a:b, j], higher[j], min_difference)
            known = row["n_pairs"] >= MIN_INTERVAL_PAIRS and not np.isnan(low[j])
            row.update(metric=metric, ci_low=float(low[j]) if known else None,
                       ci_high=float(high[j]) if known else None)
            group.append(row)
        for row, adjusted in zip(group, holm([r["p_value"] for r in group])):
            row["p_adjusted"] = adjusted
            row["significant"] = adjusted is not None and adjusted < ALPHA
        out.append(group)
    return out


def change(row) -> str:
    """better / worse / no significant change: significant after Holm and the
    mean moved by more than the minimum practical difference. A metric with no
    direction (higher_is_better null) that moved so is "changed", never better
    or worse."""
    delta = row.get("delta")
    if not row.get("significant") or delta is None \
            or abs(delta) <= max(row.get("min_difference") or 0.0, TIE):
        return "no significant change"
    if row["higher_is_better"] is None:
        return CHANGED
    return "better" if (delta > 0) == row["higher_is_better"] else "worse"


CHANGED = "changed"  # change() of a direction-free metric that moved


def metric_label(metric: str, higher_is_better: bool | None) -> str:
    """The metric's name as tables show it: ↓ marks lower-is-better, and a
    metric with no direction (None) gets no mark, like a higher-is-better one."""
    return f"{metric} ↓" if higher_is_better is False else metric


def wtl(row) -> str:
    """Wins/ties/losses as the tables show them (– for a direction-free metric)."""
    return "/".join("–" if row[k] is None else str(row[k]) for k in ("wins", "ties", "losses"))


def passed(codes: np.ndarray) -> np.ndarray:
    """The pass rate's column from verdict codes: 1 PASS, 0 another verdict,
    NaN unknown (-1)."""
    return np.where(codes >= 0, (codes == 0).astype(float), np.nan)[:, None]


def transitions(vb: np.ndarray, vc: np.ndarray) -> dict[str, int]:
    """Verdict pairs 'PASS->FAIL': count, all sixteen (unknown verdicts, coded
    -1, left out); verdicts are coded by their index in VERDICT_ORDER."""
    k = len(VERDICT_ORDER)
    known = (vb >= 0) & (vc >= 0)
    counts = np.bincount(vb[known] * k + vc[known], minlength=k * k)
    return {f"{a}->{b}": int(counts[i * k + j])
            for i, a in enumerate(VERDICT_ORDER) for j, b in enumerate(VERDICT_ORDER)}
