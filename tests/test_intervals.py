"""Summary intervals: Student's t and Wilson, checked against scipy, and the
CombineFn's merged moments against one pass over all values."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from transforms.stats import intervals
from transforms.stats.intervals import t_interval, wilson_interval
from transforms.publish.summary import MetricStatsFn, summary_rows


def _combined(values, parts=3):
    """The CombineFn's output when the values arrive split across workers."""
    fn = MetricStatsFn()
    chunks = np.array_split(np.asarray(values, dtype=object), parts)
    accs = [fn.add_inputs(fn.create_accumulator(), list(c)) for c in chunks]
    return fn.extract_output(fn.merge_accumulators(accs))


@pytest.mark.parametrize("seed,n", [(0, 2), (1, 7), (2, 40), (3, 25_000)])
def test_t_interval_of_merged_accumulators_matches_scipy(seed, n):
    rng = np.random.default_rng(seed)
    values = rng.lognormal(3, 1, n)
    values[0] = -values[0]  # one value below 0, none clipped (tested below)
    got = _combined(list(values))
    want = stats.ttest_1samp(values, 0).confidence_interval(0.95)
    assert got["mean"] == pytest.approx(values.mean(), rel=1e-12)
    assert (got["ci_low"], got["ci_high"]) == pytest.approx((want.low, want.high), rel=1e-9)


def test_quantiles_from_scipy_special_equal_scipy_stats_bit_for_bit():
    """intervals.py avoids importing scipy.stats at start-up; same numbers."""
    assert intervals.Z == float(stats.norm.ppf(0.975))
    for df in [*range(1, 3000), 10_000, 123_457, 10**6, 2**31 - 1]:
        assert intervals._t_quantile(df) == float(stats.t.ppf(0.975, df)), df


def test_unit_scale_interval_is_clipped_and_single_values_have_none():
    got = _combined([0.99, 1.0, 0.97, 1.0, 0.2])
    want = stats.ttest_1samp([0.99, 1.0, 0.97, 1.0, 0.2], 0).confidence_interval(0.95)
    assert got["ci_low"] == pytest.approx(want.low) and want.high > 1 and got["ci_high"] == 1.0
    one = _combined([0.5], parts=1)
    assert one["ci_low"] is None and one["ci_high"] is None
    assert t_interval(0, None, 0.0) == (None, None)


def test_a_non_negative_metric_has_no_negative_interval_end():
    """A count (unsupported_facts) over three rows: t's interval reached -2.2."""
    values = [0.0, 0.0, 5.0]
    got = _combined(values)
    want = stats.ttest_1samp(values, 0).confidence_interval(0.95)
    assert want.low < 0 and got["ci_low"] == 0.0 and got["ci_high"] == pytest.approx(want.high)
    signed = [-1.0, 0.0, 5.0]  # a value below 0: nothing to clip
    want = stats.ttest_1samp(signed, 0).confidence_interval(0.95)
    assert _combined(signed)["ci_low"] == pytest.approx(want.low)


@pytest.mark.parametrize("k,n", [(0, 5), (3, 10), (10, 10), (733, 1000), (1, 1)])
def test_wilson_matches_scipy(k, n):
    want = stats.binomtest(k, n).proportion_ci(0.95, method="wilson")
    assert wilson_interval(k, n) == pytest.approx((want.low, want.high), rel=1e-9, abs=1e-12)


def test_wilson_ends_are_exact_at_zero_and_all():
    assert wilson_interval(0, 25)[0] == 0.0 and wilson_interval(25, 25)[1] == 1.0


def test_zero_one_metrics_and_the_pass_rate_get_wilson():
    values = [1.0, 0.0, 1.0, 1.0, None, 0.0, 1.0]
    got = _combined(values)
    want = stats.binomtest(4, 6).proportion_ci(0.95, method="wilson")
    assert (got["ci_low"], got["ci_high"]) == pytest.approx((want.low, want.high))
    rows = summary_rows("r", [], [(("b", "*", "PASS"), 7), (("b", "*", "FAIL"), 3)], frozenset())
    want = stats.binomtest(7, 10).proportion_ci(0.95, method="wilson")
    assert (rows[0]["ci_low"], rows[0]["ci_high"]) == pytest.approx((want.low, want.high))


def test_histogram_rides_along_for_unit_metrics_only():
    got = _combined([0.0, 0.04, 0.5, 1.0, 1.0])
    assert sum(got["hist"]) == 5 and got["hist"][0] == 2 and got["hist"][-1] == 2
    assert _combined([0.5, 3.0])["hist"] is None
