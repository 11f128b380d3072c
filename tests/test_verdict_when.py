"""A verdict rule with `when: {metric: OTHER, above | below: X}` applies only to
the rows where OTHER has a value meeting the bound (docs/concepts/verdicts.md):
"long answers need stronger support to PASS" is a groundedness rule where
answer_length is above a number of characters."""
from __future__ import annotations

import dataclasses

import pytest
import yaml

from pipeline.config import ConfigError, parse_config
from pipeline.plan import applicable_rules
from schemas.records import MetricResult
from transforms.decide.cascade import BY_ESCALATION, ESCALATION_FAILED, escalated_decision
from transforms.decide.presets import Rule, When, default_rules
from transforms.decide.rules import decide
from transforms.score.metrics.groundedness import groundedness, verdict_cuts
from transforms.score.metrics.lexical import answer_length

LONG = Rule("groundedness", "WARN", below=0.805, when=When("answer_length", above=140))


def _scores(g=None, length=None) -> dict:
    out = {}
    if g is not None:
        out["groundedness"] = g if isinstance(g, MetricResult) else MetricResult(g)
    if length is not None:
        out["answer_length"] = length if isinstance(length, MetricResult) else MetricResult(length)
    return out


def test_a_when_rule_applies_only_where_its_condition_holds():
    assert decide(_scores(0.7, 240), [LONG], "PASS") == (
        "WARN", "groundedness 0.7 < 0.805 where answer_length 240 > 140")
    assert decide(_scores(0.9, 240), [LONG], "PASS") == ("PASS", "no rule matched")
    # a short answer: the rule does not apply, it is not skipped (the row was checked)
    assert decide(_scores(0.7, 60), [LONG], "PASS") == ("PASS", "no rule matched")
    below = Rule("bleu", "FAIL", below=0.2, when=When("answer_length", below=20))
    assert decide({"bleu": MetricResult(0.1), "answer_length": MetricResult(12)}, [below],
                  "PASS") == ("FAIL", "bleu 0.1 < 0.2 where answer_length 12 < 20")
    other = Rule("bleu", "FAIL", below=0.1)
    with_bleu = {"bleu": MetricResult(0.5)}
    assert decide({**_scores(0.7, 60), **with_bleu}, [LONG, other], "PASS") == (
        "PASS", "no rule matched")


def test_a_when_rule_whose_condition_metric_has_no_value_is_skipped_and_said():
    other = Rule("bleu", "FAIL", below=0.1)
    with_bleu = {"bleu": MetricResult(0.5)}
    assert decide({**_scores(0.7), **with_bleu}, [LONG, other], "PASS") == (
        "PASS", "no rule matched; skipped: groundedness (set aside: answer_length not computed)")
    assert decide({**_scores(0.7, MetricResult.null("no answer")), **with_bleu}, [LONG, other],
                  "PASS") == (
        "PASS", "no rule matched; skipped: groundedness (set aside: answer_length null: no "
                "answer)")
    # the only rule, skipped: no rule could be evaluated (WARN, not otherwise)
    assert decide(_scores(0.7), [LONG], "PASS") == (
        "WARN", "no verdict rule could be evaluated: groundedness (set aside: answer_length "
                "not computed)")


def test_a_row_no_applying_rule_could_evaluate_is_still_undecided():
    """A short answer without contexts or a reference: the long-answer rule does
    not apply and every other rule is skipped; nothing checked it (WARN), as
    without the `when` rule, not PASS because one rule did not apply."""
    rules = default_rules(0.13, 0.595, long_answers=(140, 0.8))
    scores = {"groundedness": MetricResult.null("no contexts"),
              "unsupported_facts": MetricResult.null("no contexts"),
              "reference_coverage": MetricResult.null("no expected_answer"),
              "answer_length": MetricResult(30)}
    assert decide(scores, rules, "PASS") == (
        "WARN", "no verdict rule could be evaluated: reference_coverage (no expected_answer), "
                "groundedness and unsupported_facts (no contexts)")


def test_or_null_with_when_matches_a_null_only_where_the_condition_holds():
    rule = dataclasses.replace(LONG, or_null=True)
    tell = MetricResult.null("the answer has no content word")
    assert decide(_scores(tell, 240), [rule], "PASS") == (
        "WARN", "groundedness null: the answer has no content word where answer_length 240 > 140")
    assert decide(_scores(tell, 60), [rule], "PASS") == ("PASS", "no rule matched")
    assert decide(_scores(tell), [rule], "PASS") == (
        "WARN", "no verdict rule could be evaluated: groundedness (set aside: answer_length "
                "not computed)")


def test_the_cascade_treats_a_when_rule_whose_condition_has_no_value_as_not_computed():
    """An escalation rule on a judge metric that has a value, but whose `when`
    metric has none, cannot decide: the offline WARN stands (escalation_failed),
    not "escalated: no verdict rule could be evaluated" by the escalation."""
    rule = Rule("faithfulness", "FAIL", below=0.5, when=When("answer_length", above=140))
    scores = {"faithfulness": MetricResult(0.2)}
    assert escalated_decision(scores, [rule], "PASS", "WARN", "groundedness 0.5 < 0.595") == (
        "WARN", "escalated, but no escalation metric could be computed: faithfulness (set "
                "aside: answer_length not computed); offline: groundedness 0.5 < 0.595",
        ESCALATION_FAILED)
    scores["answer_length"] = MetricResult(200)
    assert escalated_decision(scores, [rule], "PASS", "WARN", "x") == (
        "FAIL", "escalated: faithfulness 0.2 < 0.5 where answer_length 200 > 140", BY_ESCALATION)
    scores["answer_length"] = MetricResult(20)
    assert escalated_decision(scores, [rule], "PASS", "WARN", "x") == (
        "PASS", "escalated: no rule matched", BY_ESCALATION)


def _rules(when) -> dict:
    return {"verdict": {"rules": [
        {"metric": "groundedness", "below": 0.8, "verdict": "WARN", "when": when}]}}


def test_when_is_parsed():
    cfg = parse_config(_rules({"metric": "answer_length", "above": 140}))
    assert cfg.verdict.rules == (
        Rule("groundedness", "WARN", below=0.8, when=When("answer_length", above=140)),)


@pytest.mark.parametrize("when, message", [
    (140, "verdict.rules[0].when must be a mapping like {metric: answer_length, above: 140}, "
          "got 140"),
    ({"metric": "answer_length", "abov": 140},
     "unknown key 'verdict.rules[0].when.abov'; did you mean 'above'? (allowed here: above, "
     "below, metric)"),
    ({"above": 140}, "missing key 'verdict.rules[0].when.metric'"),
    ({"metric": "answer_length"}, "verdict.rules[0].when needs exactly one of 'above' or "
                                  "'below'"),
    ({"metric": "answer_length", "above": 140, "below": 400},
     "verdict.rules[0].when needs exactly one of 'above' or 'below'"),
    ({"metric": "answer_length", "above": "140 chars"},
     "verdict.rules[0].when.above must be a number, got a text of 9 characters (not "
     "shown)"),
    ({"metric": "answer_length", "below": float("nan")},
     "verdict.rules[0].when.below must be a finite number, got nan"),
    ({"metric": 3, "above": 140}, "verdict.rules[0].when.metric must be a metric name, got 3"),
])
def test_each_mistake_in_when_is_a_one_line_error(when, message):
    with pytest.raises(ConfigError) as info:
        parse_config(_rules(when))
    assert str(info.value) == message


def test_a_written_rule_must_name_a_when_metric_of_the_run_in_its_range():
    cfg = parse_config(_rules({"metric": "answer_length", "above": 140}))
    with pytest.raises(ConfigError) as info:
        applicable_rules(cfg, ("groundedness",))
    assert str(info.value) == ("verdict.rules[0].when.metric 'answer_length' is not a metric of "
                               "this run (metrics: groundedness)")
    assert applicable_rules(cfg, ("groundedness", "answer_length")) is cfg
    share = parse_config(_rules({"metric": "reference_coverage", "below": 70}))
    with pytest.raises(ConfigError) as info:
        applicable_rules(share, ("groundedness", "reference_coverage"))
    assert str(info.value) == (
        "verdict.rules[0].when.below 70 is outside reference_coverage's range [0, 1]: the rule "
        "would apply to every row with a value (a share is written 0.7, not 70)")


def test_a_preset_rule_whose_when_metric_is_not_in_the_run_holds_every_row_with_a_note():
    """Without answer_length the long answers' stricter PASS cut-off applies to
    every answer (it only holds answers back), not to none: dropping it left
    long answers at the lower cut-off."""
    rules = default_rules(0.13, 0.595, long_answers=(140, 0.8))
    cfg = parse_config({})
    cfg = dataclasses.replace(cfg, verdict=dataclasses.replace(cfg.verdict, rules=rules))
    notes: list[str] = []
    metrics = ("groundedness", "unsupported_facts", "reference_coverage")
    kept = applicable_rules(cfg, metrics, notes).verdict.rules
    assert kept == tuple(dataclasses.replace(r, when=None) for r in rules)
    assert notes == ["answer_length is not a metric of this run, so the default preset's rule on "
                     "groundedness for rows where answer_length > 140 applies to every row; add "
                     "answer_length to metrics"]
    notes.clear()
    assert applicable_rules(cfg, metrics + ("answer_length",), notes).verdict.rules == rules
    assert notes == []


def test_default_rules_put_the_long_answer_rule_after_the_pass_cut_off():
    fail, pass_from = verdict_cuts()
    plain = default_rules(fail, pass_from)
    rules = default_rules(fail, pass_from, long_answers=(140, 0.8))
    at = plain.index(Rule("groundedness", "WARN", below=pass_from, or_null=True)) + 1
    assert rules == plain[:at] + (
        Rule("groundedness", "WARN", below=0.8, when=When("answer_length", above=140)),
    ) + plain[at:]


def test_a_long_moderately_grounded_answer_warns_where_a_short_one_passes(tmp_path):
    """A real run with the default rules and a stricter cut-off for answers over
    140 characters: the long answer, as well supported as the short one, is
    WARN; the short one PASSes. The manifest's config keeps `when` (read back
    as the config, the same rules)."""
    from pipeline.reference import _plain
    from tests.pipeline_helpers import manifest, read_rows, run_sample
    fail, pass_from = verdict_cuts()
    rules = default_rules(fail, pass_from, long_answers=(140, 0.9))
    ctx = ["The Eiffel Tower in Paris was finished in 1889 and is 330 metres tall. It was "
           "designed by the engineering company of Gustave Eiffel for the World Fair, and "
           "millions of people visit it every year."]
    q = "Tell me about the Eiffel Tower."
    short = "The Eiffel Tower in Paris was finished in 1889."
    long = ("The Eiffel Tower in Paris was finished in 1889 and is 330 metres tall. It was "
            "designed by the company of Gustave Eiffel for the World Fair, and millions of "
            "people visit it every year.")
    g = {a: groundedness(q, ctx, a).value for a in (short, long)}
    assert all(pass_from <= v < 0.9 for v in g.values()), g  # both PASS without the rule
    rows = [{"case_id": "short", "question": q, "answer": short, "contexts": ctx},
            {"case_id": "long", "question": q, "answer": long, "contexts": ctx}]
    config = yaml.safe_dump({
        "metrics": ["groundedness", "unsupported_facts", "reference_coverage", "answer_length"],
        "verdict": {"rules": _plain(list(rules))}})
    code, out = run_sample(tmp_path, config, "when", rows)
    assert code == 0
    results = {r["case_id"]: r for r in read_rows(out, "results")}
    length = answer_length(long).value
    assert length > 140 >= answer_length(short).value
    assert (results["long"]["verdict"], results["long"]["verdict_reason"]) == (
        "WARN", f"groundedness {g[long]:.4g} < 0.9 where answer_length {length:.4g} > 140")
    assert results["short"]["verdict"] == "PASS", results["short"]["verdict_reason"]
    written = manifest(out, "when")["config"]["verdict"]["rules"]
    assert {"metric": "answer_length", "above": 140, "below": None} in [
        r["when"] for r in written]
    assert parse_config({"verdict": {"rules": written}}).verdict.rules == rules


def test_a_when_rule_whose_when_metric_has_no_value_on_any_row_decided_none():
    """The reports' pass rate is "–" where no rule could decide: a rule whose
    `when` metric (as the manifest's config writes it) has no value on any of
    the bot's rows was skipped on every one, however valued its own metric."""
    from transforms.publish import pass_rate
    row = {"run_id": "x", "bot": "b", "suite": "*", "metric": "verdict", "count": 4,
           "missing": 0, "mean": 0.0, "ci_low": 0.0, "ci_high": 0.49, "pass_count": 0,
           "warn_count": 4, "fail_count": 0, "error_count": 0}
    ruled = {"config": {"verdict": {"rules": [
        {"metric": "bleu", "below": 0.5, "verdict": "WARN",
         "when": {"metric": "answer_length", "above": 140, "below": None}}]}}}
    bleu = {**row, "metric": "bleu", "count": 4, "mean": 0.4}
    length = {**row, "metric": "answer_length", "count": 0, "mean": None}
    shown = pass_rate.shown([row, bleu, length], ruled)[0]
    assert shown["mean"] is None
    assert shown["undecided"] == ("no verdict rule could be evaluated: its rules read "
                                  "answer_length, which have no value on any of its rows "
                                  "(scores/ holds why), so every answered row is WARN")
    assert pass_rate.shown([row, bleu, {**length, "count": 4}], ruled)[0]["mean"] == 0.0


def test_a_rule_whose_when_metric_is_escalated_is_an_escalation_rule():
    """In the cascade an offline rule conditioned on a judge metric was decided
    offline, where the judge metric is never computed: skipped on every row,
    and never used where the judge had answered."""
    from pipeline.plan import Plan
    judged = Rule("groundedness", "WARN", below=0.8, when=When("faithfulness", below=0.5))
    offline = Rule("groundedness", "FAIL", below=0.13)
    cfg = parse_config({})
    cfg = dataclasses.replace(cfg, verdict=dataclasses.replace(cfg.verdict,
                                                               rules=(offline, judged)))
    plan = Plan(cfg, None, (), {}, (), escalation_metrics=("faithfulness",))
    assert (plan.offline_rules, plan.escalation_rules) == ((offline,), (judged,))
