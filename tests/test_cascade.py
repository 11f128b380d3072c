"""judge.escalate: undecided: offline Score -> Decide -> only the WARN rows ->
judge and classifier -> Score -> Decide again."""
from __future__ import annotations

import json
import re

import pytest

from pipeline.config import ConfigError
from schemas.records import EvalCase, MetricResult, Turn
from tests.fake_server import FakeOpenAI
from tests.judge_script import ScriptedJudge
from tests.pipeline_helpers import manifest, read_rows, run_sample
from transforms.decide.cascade import (ESCALATED, escalated_decision, mark_undecided)
from transforms.decide.presets import Rule
from transforms.enrich.classifier.reading import SKIP as CLASSIFIER_SKIP
from transforms.enrich.judge.tasks import JUDGE_SKIP

RULES = (Rule("judge_relevance", "FAIL", below=0.5), Rule("grounding_classifier", "WARN",
                                                          below=0.5))


def test_only_undecided_rows_are_marked_for_escalation():
    case = EvalCase("c", "q?")
    warn = mark_undecided(Turn(case, "b", "a", verdict="WARN"))
    passed = mark_undecided(Turn(case, "b", "a", verdict="PASS"))
    error = mark_undecided(Turn(case, "b", None, error="down", verdict="ERROR"))
    assert warn.features == {ESCALATED: True}
    assert passed.features[JUDGE_SKIP] == passed.features[CLASSIFIER_SKIP] == \
        "decided offline (PASS)"
    assert ESCALATED not in error.features


def test_escalated_rows_follow_the_escalation_rules():
    def scores(rel, cls):
        return {"judge_relevance": MetricResult(rel) if rel is not None else
                MetricResult.null("judge call failed: HTTP 500"),
                "grounding_classifier": MetricResult(cls) if cls is not None else
                MetricResult.null("budget reached: judge.max_calls (5 per run)")}
    assert escalated_decision(scores(0.25, 0.9), RULES, "PASS", "WARN", "x")[:2] == (
        "FAIL", "escalated: judge_relevance 0.25 < 0.5")
    assert escalated_decision(scores(0.75, 0.9), RULES, "PASS", "WARN", "x") == (
        "PASS", "escalated: no rule matched", "escalated")
    assert escalated_decision(scores(None, 0.2), RULES, "PASS", "WARN", "x")[0] == "WARN"
    verdict, reason, by = escalated_decision(scores(None, None), RULES, "PASS", "WARN",
                                             "exact_match 0 < 1")
    assert (verdict, by) == ("WARN", "escalation_failed")  # nothing to decide with: WARN stands
    assert "judge call failed: HTTP 500" in reason and "budget reached" in reason \
        and reason.endswith("offline: exact_match 0 < 1")
    two = (Rule("judge_relevance", "FAIL", below=0.3), Rule("judge_relevance", "WARN", below=0.6))
    assert escalated_decision(scores(None, None), two, "PASS", "WARN", "x")[1] == (
        "escalated, but no escalation metric could be computed: judge_relevance (judge call "
        "failed: HTTP 500); offline: x")  # the metric once, not once per rule


def _by_digit(request, rule):
    answer = re.search(r"\[\[ANSWER [0-9a-f]+\]\]\n(.*?)\n", request["messages"][1]["content"],
                       re.S).group(1)
    return json.dumps({"score": int(re.search(r"\d", answer).group()), "reason": "digit"})


# exact answers pass offline; the others are undecided (WARN) and go to the judge,
# whose relevance score is the digit in the answer (1-2 fail, 3-5 pass)
ROWS = [{"case_id": f"e{i}", "question": f"Question {i}?", "expected_answer": f"Yes {i}.",
         "answer": f"Yes {i}.", "contexts": [f"Yes {i} is the answer."], "suite": "s",
         "tags": []} for i in range(6)] + [
        {"case_id": f"w{i}", "question": f"Question w{i}?", "expected_answer": "Yes.",
         "answer": f"Maybe {1 + i % 5} days.", "contexts": [f"It takes {1 + i % 5} days."],
         "suite": "s", "tags": []} for i in range(4)]
OFFLINE_RULES = "    - {metric: exact_match, below: 1, verdict: WARN}\n"


def _config(server, rules=OFFLINE_RULES + "    - {metric: judge_relevance, below: 0.5, "
            "verdict: FAIL}\n    - {metric: grounding_classifier, below: 0.5, verdict: WARN}\n"):
    return (f"endpoints:\n  llm: {{base_url: '{server.openai_base_url}', requests_per_second: 500,"
            " price_per_million: {input: 1, output: 2}}\n"
            f"  nli: {{base_url: '{server.base_url}', requests_per_second: 500}}\n"
            "judge: {endpoint: llm, model: j, escalate: undecided}\n"
            "classifier: {endpoint: nli, model: nli, labels: {supported: ENTAILMENT}}\n"
            "metrics: [exact_match, judge_relevance, grounding_classifier]\n"
            "verdict:\n  rules:\n" + rules)


def test_the_cascade_judges_only_the_undecided_rows(tmp_path):
    with FakeOpenAI() as server:
        server.set_chat_handler(ScriptedJudge(overrides={"judge_relevance": _by_digit}))
        code, out = run_sample(tmp_path, _config(server), "cas", ROWS)
        stats = server.stats()["by_path"]
    assert code == 0
    assert stats["/v1/chat/completions"] == 4 and stats["/predict"] >= 1  # the 4 WARN rows
    predicted = [r for r in server.recorded() if r.path == "/predict"]
    assert {p[1] for r in predicted for p in r.json["inputs"]} == {
        f"Maybe {1 + i % 5} days." for i in range(4)}
    m = manifest(out, "cas")
    assert m["reconciliation"]["ok"]
    results = {r["case_id"]: r for r in read_rows(out, "results")}
    for i in range(6):  # decided offline, kept
        r = results[f"e{i}"]
        assert (r["verdict"], r["decided_by"]) == ("PASS", "offline")
    # w0: "Maybe 1 days" -> relevance (1-1)/4 = 0 -> FAIL; w1: 2 -> 0.25 FAIL; w2, w3 pass
    assert [results[f"w{i}"]["verdict"] for i in range(4)] == ["FAIL", "FAIL", "PASS", "PASS"]
    assert all(results[f"w{i}"]["decided_by"] == "escalated" for i in range(4))
    assert results["w0"]["verdict_reason"] == "escalated: judge_relevance 0 < 0.5"
    scores = {(s["case_id"], s["metric"]): s for s in read_rows(out, "scores")}
    assert scores[("e0", "judge_relevance")]["error"] == "decided offline (PASS)"
    assert scores[("e0", "grounding_classifier")]["error"] == "decided offline (PASS)"
    assert scores[("w2", "grounding_classifier")]["value"] > 0.5
    assert scores[("e0", "exact_match")]["value"] == 1.0

    c = m["cascade"]
    assert (c["rows"], c["escalated_rows"], c["decided_offline_rows"]) == (10, 4, 6)
    assert c["escalation_failed_rows"] == 0
    assert c["escalated_share"] == pytest.approx(0.4)
    asked = c["calls"]
    assert c["calls_per_1000_rows"] == pytest.approx(asked / 10 * 1000)
    assert c["every_row_calls_per_1000_rows"] == pytest.approx(asked / 4 * 1000)
    assert c["saved_calls"] == pytest.approx(asked / 4 * 6)
    usage = {u["purpose"]: u for u in read_rows(out, "usage")
             if u["purpose"] == "judge:judge_relevance"}
    rel = usage["judge:judge_relevance"]
    assert (rel["calls"], rel["skipped_rows"]) == (4, 6)
    assert rel["saved_calls"] == pytest.approx(4 / 4 * 6)
    with open(f"{out}/runs/cas/report.md", encoding="utf-8") as fh:
        report = fh.read()
    assert "## Cascade (judge.escalate: undecided)" in report
    assert "4 of 10 rows (40.0% of the answered ones) were undecided offline" in report
    with open(f"{out}/runs/cas/report.html", encoding="utf-8") as fh:
        page = fh.read()
    assert "<h2>Cascade (judge.escalate: undecided)</h2>" in page
    assert "4 of 10 rows (40.0% of the answered ones) were undecided offline" in page
    assert "(results/ decided_by)" in page and "<h2>Remote calls and cost</h2>" in page


def test_escalation_needs_rules_that_decide_with_the_escalated_metrics(tmp_path, capsys):
    with FakeOpenAI() as server:
        code, out = run_sample(tmp_path, _config(server, OFFLINE_RULES), "x", ROWS)
    assert code == 2 and "needs verdict rules on the judge's or the classifier's metrics " \
        "(judge_relevance, grounding_classifier)" in capsys.readouterr().err
    assert server.stats()["total"] == 0
    with pytest.raises(ConfigError, match="judge.escalate must be 'undecided'"):
        from pipeline.config import parse_config
        parse_config({"endpoints": {"llm": {"base_url": "http://x"}},
                      "judge": {"endpoint": "llm", "model": "m", "escalate": "always"}})


def test_escalation_needs_offline_rules_that_can_leave_a_row_undecided(tmp_path, capsys):
    """Only escalation rules: the offline Decide has no rule, every row gets
    `otherwise` (PASS) offline, nothing is escalated and the run said nothing."""
    escalation_only = ("    - {metric: judge_relevance, below: 0.5, verdict: FAIL}\n")
    with FakeOpenAI() as server:
        code, out = run_sample(tmp_path, _config(server, escalation_only), "x", ROWS)
        assert server.stats()["total"] == 0
    err = capsys.readouterr().err
    assert code == 2 and "judge.escalate: undecided needs offline verdict rules" in err
    assert len([line for line in err.splitlines() if "error" in line]) == 1
    # otherwise: WARN escalates every row the offline rules leave: allowed
    with FakeOpenAI() as server:
        server.set_chat_handler(ScriptedJudge(overrides={"judge_relevance": _by_digit}))
        code, out = run_sample(tmp_path, _config(server, escalation_only + "  otherwise: WARN\n"),
                               "w", ROWS)
        assert code == 0
    assert {r["decided_by"] for r in read_rows(out, "results")
            if r["run_id"] == "w"} == {"escalated"}


def test_a_row_whose_escalation_failed_says_so_in_decided_by(tmp_path):
    """A cap that stops the escalation's calls: the rows it left unjudged keep
    their offline WARN, but results/ must not say the offline rules decided
    them (decided_by "offline" is for rows the cascade chose not to escalate)."""
    with FakeOpenAI() as server:
        config = _config(server, OFFLINE_RULES + "    - {metric: judge_relevance, below: 0.5, "
                         "verdict: FAIL}\n").replace(
            "escalate: undecided}", "escalate: undecided, max_calls: 2}").replace(
            "metrics: [exact_match, judge_relevance, grounding_classifier]",
            "metrics: [exact_match, judge_relevance]")
        server.set_chat_handler(ScriptedJudge(overrides={"judge_relevance": _by_digit}))
        code, out = run_sample(tmp_path, config, "cap", ROWS)
        sent = server.stats()["by_path"].get("/v1/chat/completions", 0)
    assert code == 0 and sent == 2
    results = {r["case_id"]: r for r in read_rows(out, "results")}
    assert {results[f"e{i}"]["decided_by"] for i in range(6)} == {"offline"}
    unjudged = [results[f"w{i}"] for i in range(4)
                if results[f"w{i}"]["decided_by"] != "escalated"]
    assert len(unjudged) == 2
    for r in unjudged:
        assert (r["verdict"], r["decided_by"]) == ("WARN", "escalation_failed")
        assert r["verdict_reason"].startswith(
            "escalated, but no escalation metric could be computed: judge_relevance "
            "(budget reached")
    assert manifest(out, "cap")["cascade"]["escalation_failed_rows"] == 2
    with open(f"{out}/runs/cap/report.md", encoding="utf-8") as fh:
        assert "2 escalated rows got no judge or classifier metric" in fh.read()


def test_an_or_null_escalation_rule_matches_a_failed_judge_call(tmp_path):
    """`or_null: true` matches a judge call that could not tell (docs/concepts/
    verdicts.md); as an escalation rule it was ignored: a judge that refused
    every escalated row left them WARN where the user's rule says FAIL."""
    with FakeOpenAI() as server:
        server.set_chat_handler(lambda request: "I'm sorry, I can't help with that.")
        config = _config(server, OFFLINE_RULES + "    - {metric: judge_relevance, below: 0.5, "
                         "or_null: true, verdict: FAIL}\n").replace(
            "metrics: [exact_match, judge_relevance, grounding_classifier]",
            "metrics: [exact_match, judge_relevance]")
        code, out = run_sample(tmp_path, config, "on", ROWS)
    assert code == 0
    results = {r["case_id"]: r for r in read_rows(out, "results")}
    for i in range(4):
        r = results[f"w{i}"]
        assert (r["verdict"], r["decided_by"]) == ("FAIL", "escalated")
        assert r["verdict_reason"].startswith(
            "escalated: judge_relevance null: judge reply unusable after one repair")
    assert manifest(out, "on")["cascade"]["escalation_failed_rows"] == 0
