"""The comparison statistics against scipy on small cases, and the coverage
of the bootstrap interval on simulated paired data with a known effect."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from transforms.publish.paired import (bootstrap_intervals, holm, is_binary, mcnemar_p,
                                    poisson_weights, wilcoxon_p)


@pytest.mark.parametrize("seed,n,method", [(0, 8, "exact"), (1, 30, "exact"),
                                           (2, 60, "asymptotic"), (3, 500, "asymptotic")])
# no ties: the exact distribution (ours, a convolution) equals scipy's table
def test_wilcoxon_matches_scipy(seed, n, method):
    rng = np.random.default_rng(seed)
    d = rng.normal(0.05, 0.2, n)  # no ties
    d[::7] = 0.0                  # zeros are dropped (Wilcoxon's rule)
    want = stats.wilcoxon(d[d != 0], method=method).pvalue
    assert wilcoxon_p(d) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("seed,n", [(4, 9), (5, 13)])
def test_wilcoxon_with_ties_is_the_exact_sign_flip_distribution(seed, n):
    d = np.round(np.random.default_rng(seed).normal(0.05, 0.2, n), 1)  # tied |d|, zeros
    nz = d[d != 0]
    assert np.unique(np.abs(nz)).size < nz.size
    # scipy enumerates every sign flip when 2^n <= n_resamples: exact, the reference
    want = stats.wilcoxon(nz, method=stats.PermutationMethod(n_resamples=9999)).pvalue
    assert wilcoxon_p(d) == pytest.approx(want, rel=1e-9)


def test_wilcoxon_exact_with_ties_beyond_enumeration():
    d = np.round(np.random.default_rng(6).normal(0.05, 0.2, 45), 1)
    nz = d[d != 0]
    assert wilcoxon_p(d) == pytest.approx(stats.wilcoxon(nz, method="asymptotic").pvalue,
                                          abs=0.02)
    assert wilcoxon_p(np.full(10, -0.5)) == pytest.approx(2 / 2 ** 10)  # ten equal drops
    assert wilcoxon_p(np.full(60, 0.1)) < 1e-10  # beyond 50: the normal approximation


def test_wilcoxon_without_changes_is_one():
    assert wilcoxon_p(np.zeros(10)) == 1.0 and wilcoxon_p(np.array([1e-12, -1e-12])) == 1.0


@pytest.mark.parametrize("worse,better", [(0, 0), (3, 0), (10, 4), (40, 25), (7, 7)])
def test_mcnemar_exact_matches_scipy_binomtest(worse, better):
    want = 1.0 if worse + better == 0 else stats.binomtest(worse, worse + better).pvalue
    assert mcnemar_p(worse, better) == pytest.approx(want, rel=1e-12)


def test_holm_step_down():
    # hand-checked: sorted 0.01, 0.02, 0.03, 0.5 -> 0.04, 0.06, 0.06, 0.5
    assert holm([0.03, 0.01, None, 0.5, 0.02]) == pytest.approx([0.06, 0.04, None, 0.5, 0.06])
    assert holm([0.9, 0.8]) == [1.0, 1.0] and holm([0.04, 0.3]) == [0.08, 0.3]


def test_poisson_weights_follow_poisson_one():
    w = poisson_weights(np.random.default_rng(0), 1000, 500)
    assert w.shape == (1000, 500) and np.all(w == np.round(w)) and w.min() == 0
    counts = np.bincount(w.astype(int).ravel(), minlength=8)[:6] / w.size
    assert counts == pytest.approx(stats.poisson.pmf(np.arange(6), 1.0), abs=0.002)


def test_bootstrap_is_seeded_and_agrees_with_scipy():
    rng = np.random.default_rng(5)
    d = rng.normal(0.1, 0.3, 120)
    ours = bootstrap_intervals(d[:, None], resamples=5000, seed=1)[0]
    again = bootstrap_intervals(d[:, None], resamples=5000, seed=1)[0]
    assert np.array_equal(ours[0], again[0]) and np.array_equal(ours[1], again[1])
    ref = stats.bootstrap((d,), np.mean, n_resamples=5000, method="percentile",
                          random_state=1).confidence_interval
    # different random draws: equal within Monte Carlo error (~1% of the spread)
    assert ours[0][0] == pytest.approx(ref.low, abs=0.006)
    assert ours[1][0] == pytest.approx(ref.high, abs=0.006)


def test_bootstrap_groups_and_missing_values():
    d = np.array([[0.1, np.nan], [0.3, 0.2], [0.2, np.nan], [0.4, 0.4], [np.nan, np.nan]])
    (lo_all, hi_all), (lo_a, hi_a), (lo_b, hi_b), (lo_e, hi_e) = bootstrap_intervals(
        d, [2, 4], resamples=400, seed=0)  # suites: rows 0-1, 2-3, 4
    assert 0.1 <= lo_all[0] <= hi_all[0] <= 0.4 + 1e-6 and 0.2 <= lo_all[1] <= hi_all[1] <= 0.4 + 1e-6
    assert 0.1 <= lo_a[0] <= hi_a[0] <= 0.3 + 1e-6 and (lo_a[1], hi_a[1]) == pytest.approx((0.2, 0.2))
    assert 0.2 <= lo_b[0] <= hi_b[0] <= 0.4 + 1e-6
    assert np.isnan(lo_e).all() and np.isnan(hi_e).all()  # a group without pairs
    again = bootstrap_intervals(d, [2, 4], resamples=400, seed=0)[0]  # seeded: reproducible
    assert np.array_equal(again[0], lo_all) and np.array_equal(again[1], hi_all)


def test_binary_detection():
    assert is_binary(np.array([0.0, 1.0, np.nan]), np.array([1.0, 1.0]))
    assert not is_binary(np.array([0.0, 0.5]))


def test_interval_covers_the_true_delta_in_93_to_97_percent_of_400_simulations():
    """Paired scores with a known effect: candidate = baseline + 0.03 + noise,
    clipped to [0, 1] like a metric; the true delta is computed on a huge sample."""
    def draw(rng, n):
        base = rng.beta(4, 2, n)
        cand = np.clip(base + 0.03 + rng.normal(0, 0.15, n), 0, 1)
        return cand - base
    truth = draw(np.random.default_rng(99), 4_000_000).mean()
    rng = np.random.default_rng(2024)
    covered = 0
    for sim in range(400):
        d = draw(rng, 200)
        lo, hi = bootstrap_intervals(d[:, None], resamples=1000, seed=sim)[0]
        covered += lo[0] <= truth <= hi[0]
    assert 0.93 <= covered / 400 <= 0.97, covered / 400
