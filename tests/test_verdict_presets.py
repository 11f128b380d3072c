"""Verdict presets: `seed` is seed 002's three rules exactly and reproduces the
verdicts evalbeam gave before issue 8; `default` abstains (groundedness against
cut-offs fitted on the public dev splits: FAIL, WARN between, PASS) and fails
no answer for being short; rules written in the config override both."""
from __future__ import annotations

import json
import os

import pytest

from pipeline.config import ConfigError, parse_config
from schemas.records import MetricResult
from tests.conftest import ROOT
from transforms.decide.presets import DEFAULT_RULES, PRESETS, SEED_RULES, Rule, When
from transforms.decide.rules import decide
from transforms.score.metrics.coverage import reference_coverage
from transforms.score.metrics.groundedness import (MODEL_PATH, groundedness, long_answer_cut,
                                                   verdict_cuts)

SNAPSHOT = os.path.join(ROOT, "tests", "fixtures", "seed_verdicts.json")


def test_seed_preset_is_exactly_seed_002():
    assert SEED_RULES == (Rule("hallucination", "FAIL", above=0.5),
                          Rule("lexical_relevance", "FAIL", below=0.1),
                          Rule("completeness", "WARN", below=0.6))
    assert parse_config({"verdict": {"preset": "seed"}}).verdict.rules == SEED_RULES


def test_seed_preset_reproduces_the_verdicts_before_issue_8():
    """Every one of the 516 verdicts of the bundled example (2 bots × 258 cases),
    recorded with the code before issue 8, follows from the seed preset's rules
    and the metric values of that run."""
    with open(SNAPSHOT, encoding="utf-8") as fh:
        rows = json.load(fh)["rows"]
    assert len(rows) == 516
    for row in rows:
        scores = {m: MetricResult(v) if v is not None else MetricResult.null("null")
                  for m, v in row["scores"].items()}
        verdict, _ = decide(scores, SEED_RULES, "PASS")
        assert verdict == row["verdict"], row


def test_default_preset_decides_grounding_by_groundedness_and_correctness_by_reference():
    assert parse_config({}).verdict.rules == DEFAULT_RULES
    assert parse_config({"verdict": {"preset": "default"}}).verdict.rules == DEFAULT_RULES
    assert [(r.metric, r.verdict) for r in DEFAULT_RULES] == [
        ("reference_coverage", "FAIL"), ("groundedness", "FAIL"),
        ("groundedness", "WARN"), ("groundedness", "WARN"), ("unsupported_facts", "WARN"),
        ("reference_coverage", "WARN")]
    # a fluent wrong answer to a case with an expected answer does not pass
    scores = {"groundedness": MetricResult(0.9), "reference_coverage": MetricResult(0.2)}
    assert decide(scores, DEFAULT_RULES, "PASS")[0] == "FAIL"


def test_a_long_answer_needs_the_higher_pass_cut_off():
    """The same groundedness between the two PASS cut-offs PASSes a short answer
    and holds a long one (a copied summary's wrong join keeps its bigrams) at
    WARN, and the reason says why; nothing FAILs for its length."""
    (edge, pass_long), (_, pass_from) = long_answer_cut(), verdict_cuts()
    value = (pass_from + pass_long) / 2
    short = {"groundedness": MetricResult(value), "answer_length": MetricResult(edge)}
    long = {"groundedness": MetricResult(value), "answer_length": MetricResult(edge + 1)}
    assert decide(short, DEFAULT_RULES, "PASS")[0] == "PASS"
    verdict, reason = decide(long, DEFAULT_RULES, "PASS")
    assert verdict == "WARN" and f"where answer_length {edge + 1:g} > {edge:g}" in reason
    assert decide({**long, "groundedness": MetricResult(pass_long)}, DEFAULT_RULES,
                  "PASS")[0] == "PASS"


def test_the_default_cut_offs_are_the_fitted_ones():
    """Not hand-picked: the groundedness thresholds are the file's, written by
    bench/fit_groundedness.py with the command and figures beside them."""
    with open(MODEL_PATH, encoding="utf-8") as fh:
        fitted = json.load(fh)
    cuts = fitted["verdict_cuts"]
    rules = [r for r in DEFAULT_RULES if r.metric == "groundedness"]
    long = cuts.get("long_answers")
    assert [(r.verdict, r.below, r.when) for r in rules] == [
        ("FAIL", cuts["fail_below"], None), ("WARN", cuts["pass_from"], None)] + (
        [("WARN", long["pass_from"], When("answer_length", above=long["above_chars"]))]
        if long else [])
    assert 0 < cuts["fail_below"] < cuts["pass_from"] < 1
    assert fitted["command"] == "python bench/fit_groundedness.py"
    assert set(fitted["leave_one_set_out"]) == set(fitted["fitted_on"])
    assert all("verdict" in r for r in fitted["leave_one_set_out"].values())


def _default_verdict(question, contexts, answer, reference=None):
    scores = {}
    if contexts:
        scores["groundedness"] = groundedness(question, contexts, answer)
    if reference:
        scores["reference_coverage"] = reference_coverage(answer, reference)
    return decide(scores, DEFAULT_RULES, "PASS")


@pytest.mark.parametrize("question, context, answer", [
    ("Which magazine was started first, Arthur's Magazine or First for Women?",
     "Arthur's Magazine (1844-1846) was an American literary periodical published in "
     "Philadelphia. First for Women is a woman's magazine published by Bauer Media Group "
     "in the USA; it was started in 1989.", "Arthur's Magazine"),
    ("Were Scott Derrickson and Ed Wood of the same nationality?",
     "Scott Derrickson (born July 16, 1966) is an American director. Edward Davis Wood Jr. "
     "(October 10, 1924 - December 10, 1978) was an American filmmaker.", "yes"),
    ("What year was the Eiffel Tower finished?",
     "The Eiffel Tower in Paris was finished in 1889.", "1889"),
])
def test_a_short_correct_answer_with_supporting_contexts_does_not_fail(question, context,
                                                                       answer):
    """Issue 21: 326 of 333 short correct answers FAILed by key_fact_recall < 0.15."""
    verdict, reason = _default_verdict(question, [context], answer)
    assert verdict != "FAIL", reason
    assert not any(r.metric == "key_fact_recall" for r in DEFAULT_RULES)
    if answer == "yes":  # nothing a passage could state: the offline check cannot tell
        assert verdict == "WARN" and reason.startswith("groundedness null: the answer has no "
                                                       "content word")


def test_the_default_verdict_fails_what_the_contexts_do_not_hold():
    ctx = ["The Eiffel Tower in Paris was finished in 1889 and is 330 metres tall."]
    q = "Tell me about the Eiffel Tower."
    assert _default_verdict(q, ctx, "The Eiffel Tower in Paris was finished in 1889.")[0] == "PASS"
    verdict, reason = _default_verdict(q, ctx, "Bananas are yellow and grow in Ecuador.")
    assert verdict == "FAIL" and reason.startswith("groundedness ")
    # an empty answer: nothing to look for (WARN); with a reference it misses all of it
    assert _default_verdict(q, ctx, "")[0] == "WARN"
    assert _default_verdict(q, ctx, "", "It was finished in 1889.") == (
        "FAIL", "reference_coverage 0 < 0.25")


def test_without_contexts_there_is_no_grounding_decision():
    """No contexts: groundedness is not computed, the reference rules decide, and
    without a reference either no rule could judge the row: WARN, the checks named."""
    q = "Can I change my email address?"
    verdict, reason = _default_verdict(q, None, "Yes, open Settings and choose Email.")
    assert (verdict, reason) == ("WARN", "no verdict rule could be evaluated: reference_coverage, "
                                         "groundedness and unsupported_facts (not computed)")
    assert _default_verdict(q, None, "No.", "Yes, open Settings and choose Email.")[0] == "FAIL"
    assert _default_verdict(q, None, "Yes, open Settings and choose Email.",
                            "Yes, open Settings and choose Email.")[0] == "PASS"
    # as the pipeline scores such a row: null for want of contexts, not "could not tell"
    scores = {"groundedness": MetricResult.null("no contexts"),
              "reference_coverage": MetricResult(0.9)}
    verdict, reason = decide(scores, DEFAULT_RULES, "PASS")
    assert (verdict, reason) == ("PASS", "no rule matched; skipped: groundedness (no contexts), "
                                         "unsupported_facts (not computed)")


def test_the_reason_names_each_skipped_metric_once():
    """The default preset has two rules on groundedness and two on
    reference_coverage: a row without contexts read 'skipped: groundedness (no
    contexts), groundedness (no contexts), unsupported_facts (no contexts)'.
    Each metric is named once, metrics skipped for one reason together."""
    no_contexts = {"groundedness": MetricResult.null("no contexts"),
                   "unsupported_facts": MetricResult.null("no contexts")}
    assert decide({**no_contexts, "reference_coverage": MetricResult(0.9)}, DEFAULT_RULES,
                  "PASS") == ("PASS", "no rule matched; skipped: groundedness and "
                                      "unsupported_facts (no contexts)")
    nothing = {**no_contexts, "reference_coverage": MetricResult.null("no expected_answer")}
    assert decide(nothing, DEFAULT_RULES, "PASS") == (
        "WARN", "no verdict rule could be evaluated: reference_coverage (no expected_answer), "
                "groundedness and unsupported_facts (no contexts)")
    # the rule that decides is still named with its threshold; skips before it are not
    assert decide({**no_contexts, "reference_coverage": MetricResult(0.5)}, DEFAULT_RULES,
                  "PASS") == ("WARN", "reference_coverage 0.5 < 0.7")


def test_or_null_matches_a_null_the_metric_gave_not_a_missing_input():
    rule = Rule("groundedness", "WARN", below=0.5, or_null=True)
    assert decide({"groundedness": MetricResult.null("cannot tell")}, [rule], "PASS") == (
        "WARN", "groundedness null: cannot tell")
    other = Rule("bleu", "FAIL", below=0.1)  # evaluated, does not match
    for missing in ("no contexts", "no answer"):  # skipped: the input is not there
        assert decide({"groundedness": MetricResult.null(missing), "bleu": MetricResult(0.5)},
                      [rule, other], "PASS") == (
            "PASS", f"no rule matched; skipped: groundedness ({missing})")
    assert decide({"bleu": MetricResult(0.5)}, [rule, other], "PASS")[0] == "PASS"
    plain = Rule("groundedness", "WARN", below=0.5)
    assert decide({"groundedness": MetricResult.null("cannot tell"), "bleu": MetricResult(0.5)},
                  [plain, other], "PASS")[0] == "PASS"
    cfg = parse_config({"verdict": {"rules": [
        {"metric": "groundedness", "below": 0.5, "verdict": "WARN", "or_null": True}]}})
    assert cfg.verdict.rules == (rule,)
    with pytest.raises(ConfigError, match=r"verdict.rules\[0\].or_null must be true or false"):
        parse_config({"verdict": {"rules": [
            {"metric": "groundedness", "below": 0.5, "verdict": "WARN", "or_null": "yes"}]}})


def test_or_null_skips_a_metric_that_was_not_asked_for_the_row():
    """With judge.sample, an `or_null` rule on a judge metric matched every row
    outside the sample ('faithfulness null: not sampled'): a sample of 200 per
    suite WARNed all the other rows. Not asked (outside the sample, no judge or
    classifier configured) is not "could not tell": the rule is skipped, as
    summary/ does not count those rows as missing. A failed judge still matches."""
    rule = Rule("faithfulness", "WARN", below=0.6, or_null=True)
    other = Rule("bleu", "FAIL", below=0.1)
    for not_asked in ("not sampled", "no judge configured"):
        assert decide({"faithfulness": MetricResult.null(not_asked), "bleu": MetricResult(0.5)},
                      [rule, other], "PASS") == (
            "PASS", f"no rule matched; skipped: faithfulness ({not_asked})")
    classifier = Rule("grounding_classifier", "WARN", below=0.5, or_null=True)
    assert decide({"grounding_classifier": MetricResult.null("no classifier configured")},
                  [classifier], "PASS")[0] == "WARN"  # no rule could be evaluated
    failed = MetricResult.null("judge reply unusable after one repair: no JSON object")
    assert decide({"faithfulness": failed, "bleu": MetricResult(0.5)}, [rule, other], "PASS") == (
        "WARN", "faithfulness null: judge reply unusable after one repair: no JSON object")


def test_rules_in_the_config_override_the_presets():
    cfg = parse_config({"verdict": {"preset": "seed",
                                    "rules": [{"metric": "bleu", "below": 0.2, "verdict": "WARN"}]}})
    assert cfg.verdict.rules == (Rule("bleu", "WARN", below=0.2),)
    assert cfg.verdict.explicit


def test_unknown_preset_is_a_one_line_error():
    with pytest.raises(ConfigError, match="verdict.preset must be one of"):
        parse_config({"verdict": {"preset": "strict"}})
    assert set(PRESETS) == {"default", "seed"}


def test_a_rule_with_unless_is_skipped_where_the_better_metric_has_a_value():
    """key_fact_recall guesses the key facts from the contexts; with a reference,
    reference_coverage knows them and the guess must not FAIL a correct answer."""
    rule = Rule("key_fact_recall", "FAIL", below=0.15, unless="reference_coverage")
    with_ref = {"key_fact_recall": MetricResult(0.0), "reference_coverage": MetricResult(0.9)}
    covered = Rule("reference_coverage", "FAIL", below=0.25)
    assert decide(with_ref, [rule, covered], "PASS") == (
        "PASS", "no rule matched; skipped: key_fact_recall (set aside: reference_coverage "
                "has a value)")
    no_ref = {"key_fact_recall": MetricResult(0.0),
              "reference_coverage": MetricResult.null("no expected answer")}
    assert decide(no_ref, [rule], "PASS") == ("FAIL", "key_fact_recall 0 < 0.15")
    assert decide({"key_fact_recall": MetricResult(0.0)}, [rule], "PASS")[0] == "FAIL"


def test_a_row_whose_only_rules_are_set_aside_is_undecided_not_otherwise():
    """A rule set aside by its `unless` metric checked nothing: with no rule on
    that metric, the row PASSed "no rule matched" unchecked (nothing PASSes
    unchecked: WARN, saying why)."""
    rule = Rule("key_fact_recall", "FAIL", below=0.15, unless="reference_coverage")
    with_ref = {"key_fact_recall": MetricResult(0.0), "reference_coverage": MetricResult(0.9)}
    assert decide(with_ref, [rule], "PASS") == (
        "WARN", "no verdict rule could be evaluated: key_fact_recall (set aside: "
                "reference_coverage has a value)")


def test_unless_is_parsed_and_checked():
    cfg = parse_config({"verdict": {"rules": [
        {"metric": "bleu", "below": 0.2, "verdict": "WARN", "unless": "rougeL"}]}})
    assert cfg.verdict.rules == (Rule("bleu", "WARN", below=0.2, unless="rougeL"),)
    with pytest.raises(ConfigError, match=r"verdict.rules\[0\].unless must be a metric name"):
        parse_config({"verdict": {"rules": [
            {"metric": "bleu", "below": 0.2, "verdict": "WARN", "unless": 3}]}})
    from pipeline.plan import applicable_rules
    with pytest.raises(ConfigError, match=r"verdict.rules\[0\].unless 'rougeL' is not a metric"):
        applicable_rules(cfg, ("bleu",))
    assert applicable_rules(cfg, ("bleu", "rougeL")) is cfg


def test_a_run_whose_metrics_no_preset_rule_uses_is_warn_with_a_note(tmp_path, capsys):
    """Issue 22 item 21: `metrics: [answer_length, rougeL]` dropped every rule of the
    default preset, so five "I don't know." answers got PASS 5."""
    from tests.pipeline_helpers import manifest, read_rows, run_sample
    rows = [{"case_id": f"c{i}", "question": f"What is {i}?", "answer": "I don't know.",
             "expected_answer": f"It is {i}."} for i in range(5)]
    code, out = run_sample(tmp_path, "metrics: [answer_length, rougeL]\n", "idk", rows)
    assert code == 0
    results = read_rows(out, "results")
    assert [r["verdict"] for r in results] == ["WARN"] * 5
    assert {r["verdict_reason"] for r in results} == {"no verdict rule for this run's metrics"}
    note = ("no rule of verdict preset 'default' applies to this run's metrics, so every row a bot "
            "answered is WARN; write verdict.rules over the metrics you chose")
    assert note in capsys.readouterr().err and note in manifest(out, "idk")["notes"]
