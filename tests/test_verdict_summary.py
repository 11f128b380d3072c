import numpy as np
import pytest

from pipeline.config import VerdictRule
from transforms.decide.presets import SEED_RULES as DEFAULT_RULES
from schemas.records import MetricResult as R
from transforms.publish.summary import MetricStatsFn, summary_rows
from transforms.stats.accumulator import EXACT_LIMIT
from transforms.decide.rules import decide


def test_rules_are_ordered_and_first_match_wins():
    scores = {"hallucination": R(0.8), "lexical_relevance": R(0.05), "completeness": R(0.1)}
    assert decide(scores, DEFAULT_RULES, "PASS") == ("FAIL", "hallucination 0.8 > 0.5")
    scores["hallucination"] = R(0.5)  # not above 0.5
    assert decide(scores, DEFAULT_RULES, "PASS")[0:1] == ("FAIL",)
    assert "lexical_relevance" in decide(scores, DEFAULT_RULES, "PASS")[1]
    scores["lexical_relevance"] = R(0.3)
    assert decide(scores, DEFAULT_RULES, "PASS") == ("WARN", "completeness 0.1 < 0.6")
    scores["completeness"] = R(0.9)
    assert decide(scores, DEFAULT_RULES, "PASS") == ("PASS", "no rule matched")


def test_null_metric_rules_are_skipped_and_said():
    scores = {"hallucination": R.null("no contexts"), "lexical_relevance": R(0.5),
              "completeness": R(1.0)}
    verdict, reason = decide(scores, DEFAULT_RULES, "PASS")
    assert verdict == "PASS" and "skipped: hallucination (no contexts)" in reason


def test_bot_error_is_error_and_custom_threshold():
    assert decide({}, DEFAULT_RULES, "PASS", bot_error="timeout")[0] == "ERROR"
    rules = (VerdictRule("hallucination", "FAIL", above=0.6),)
    assert decide({"hallucination": R(0.55)}, rules, "PASS")[0] == "PASS"


def _stats(values):
    fn = MetricStatsFn()
    halves = [fn.add_inputs(fn.create_accumulator(), values[: len(values) // 2]),
              fn.add_inputs(fn.create_accumulator(), values[len(values) // 2:])]
    return fn.extract_output(fn.merge_accumulators(halves))


def test_stats_exact_for_small_groups_with_nulls():
    vals = [0.1, None, 0.5, 0.9, None, 0.3]
    s = _stats(vals)
    real = [v for v in vals if v is not None]
    assert (s["count"], s["missing"]) == (4, 2)
    assert s["mean"] == pytest.approx(np.mean(real))
    assert s["p50"] == pytest.approx(np.percentile(real, 50))
    assert s["p90"] == pytest.approx(np.percentile(real, 90))
    assert (s["min"], s["max"]) == (0.1, 0.9)


def test_stats_switch_to_sketch_beyond_limit():
    rng = np.random.default_rng(0)
    vals = list(rng.random(EXACT_LIMIT * 3))
    s = _stats(vals)
    assert s["count"] == len(vals)
    assert s["p50"] == pytest.approx(np.percentile(vals, 50), abs=0.01)
    assert s["p90"] == pytest.approx(np.percentile(vals, 90), abs=0.01)


def test_all_null_group_has_null_stats():
    s = _stats([None, None])
    assert s["count"] == 0 and s["missing"] == 2 and s["mean"] is None and s["p50"] is None


def test_summary_rows_carry_verdict_counts():
    rows = summary_rows("r", [(("b", "*", "bleu"), _stats([0.2]))],
                        [(("b", "*", "PASS"), 3), (("b", "*", "FAIL"), 1)], frozenset())
    v = [r for r in rows if r["metric"] == "verdict"][0]
    assert (v["count"], v["pass_count"], v["fail_count"], v["warn_count"]) == (4, 3, 1, 0)
    assert v["mean"] == 0.75


@pytest.mark.parametrize("make", [
    lambda rng: rng.random(50_000),                                   # scores in [0, 1]
    lambda rng: np.concatenate([np.zeros(20_000), rng.random(30_000)]),  # many exact zeros
    lambda rng: rng.lognormal(5, 2, 50_000),                          # latencies, lengths
    lambda rng: rng.normal(0, 1, 50_000),                             # negatives too
])
def test_sketch_percentiles_within_half_a_percent(make):
    from transforms.stats.accumulator import LogBuckets
    vals = make(np.random.default_rng(3))
    halves = [LogBuckets(), LogBuckets()]
    for i, v in enumerate(vals):
        halves[i % 2].add(float(v))
    halves[0].merge(halves[1])
    ordered = np.sort(vals)
    for q in (0.1, 0.5, 0.9, 0.99):
        rank = q * (len(vals) - 1)  # the value at this rank, give or take one rank, ±0.5%
        lo, hi = ordered[max(int(rank) - 1, 0)], ordered[min(int(rank) + 2, len(vals) - 1)]
        got = halves[0].quantile(q)
        assert lo - 0.005 * abs(lo) - 1e-12 <= got <= hi + 0.005 * abs(hi) + 1e-12, (q, got)


def test_sketch_size_depends_on_the_value_range_not_the_count():
    import pickle
    from transforms.stats.accumulator import LogBuckets
    rng = np.random.default_rng(0)
    few, many = LogBuckets(), LogBuckets()
    for v in rng.uniform(0.01, 1.0, 10_000):
        few.add(float(v))
    for v in rng.uniform(0.01, 1.0, 1_000_000):
        many.add(float(v))
    # [0.01, 1] spans ln(100) / ln(γ) ≈ 461 buckets, whatever the count
    assert len(few.pos) <= len(many.pos) <= 462
    assert len(pickle.dumps(many)) < 20_000


def test_a_row_no_rule_could_judge_is_warn_not_pass():
    """Issue 22 item 21: with every rule's metric null or missing, the row PASSed."""
    verdict, reason = decide({"exact_match": R(1.0)}, DEFAULT_RULES, "PASS")
    assert verdict == "WARN"
    assert reason == ("no verdict rule could be evaluated: hallucination, lexical_relevance "
                      "and completeness (not computed)")
    nulls = {m: R.null("no contexts") for m in ("hallucination", "lexical_relevance",
                                                "completeness")}
    assert decide(nulls, DEFAULT_RULES, "FAIL")[0] == "WARN"
    nulls["completeness"] = R(0.9)  # one rule could be checked and did not match
    assert decide(nulls, DEFAULT_RULES, "PASS")[0] == "PASS"
    assert decide({}, (), "PASS") == ("PASS", "no verdict rule for this run's metrics")
