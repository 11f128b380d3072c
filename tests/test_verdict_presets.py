"""Verdict presets: `seed` is seed 002's three rules exactly and reproduces the
verdicts evalbeam gave before issue 8; `default` is the calibrated rule set;
rules written in the config override both."""
from __future__ import annotations

import json
import os

import pytest

from pipeline.config import ConfigError, parse_config
from schemas.records import MetricResult
from tests.conftest import ROOT
from transforms.decide.presets import DEFAULT_RULES, PRESETS, SEED_RULES, Rule
from transforms.decide.verdict import decide

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


def test_default_preset_uses_reference_grounding_and_relevance_metrics():
    assert parse_config({}).verdict.rules == DEFAULT_RULES
    assert parse_config({"verdict": {"preset": "default"}}).verdict.rules == DEFAULT_RULES
    metrics = {r.metric for r in DEFAULT_RULES}
    assert {"hallucination", "reference_coverage", "key_fact_recall",
            "unsupported_facts"} <= metrics
    # a fluent wrong answer to a case with an expected answer no longer passes
    scores = {"hallucination": MetricResult(0.1), "reference_coverage": MetricResult(0.2),
              "key_fact_recall": MetricResult(0.6), "unsupported_facts": MetricResult(0.0)}
    assert decide(scores, DEFAULT_RULES, "PASS")[0] == "FAIL"


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
    assert rule in DEFAULT_RULES
    with_ref = {"key_fact_recall": MetricResult(0.0), "reference_coverage": MetricResult(0.9)}
    assert decide(with_ref, [rule], "PASS") == ("PASS", "no rule matched")
    no_ref = {"key_fact_recall": MetricResult(0.0),
              "reference_coverage": MetricResult.null("no expected answer")}
    assert decide(no_ref, [rule], "PASS") == ("FAIL", "key_fact_recall 0 < 0.15")
    assert decide({"key_fact_recall": MetricResult(0.0)}, [rule], "PASS")[0] == "FAIL"


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
    note = ("no rule of verdict preset 'default' applies to this run's metrics, so every row "
            "is WARN; write verdict.rules over the metrics you chose")
    assert note in capsys.readouterr().err and note in manifest(out, "idk")["notes"]
