"""judge.sample: a stratified, seeded, reproducible sample of the cases is
judged; the rest is null with "not sampled"; summaries are estimates whose
intervals account for the sampling."""
from __future__ import annotations

import json
import math
import re

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from schemas.records import EvalCase
from tests.fake_server import FakeOpenAI
from tests.judge_script import ScriptedJudge
from tests.pipeline_helpers import manifest, read_rows, run_sample
from transforms.enrich.judge.sample import SampleCases, sample_rank
from transforms.stats.intervals import (sampled_interval, stratified_mean, t_interval,
                                          wilson_interval)


def _cases(sizes: dict[str, int]) -> list[EvalCase]:
    return [EvalCase(f"{suite}-{i}", "q?", suite=suite) for suite, n in sizes.items()
            for i in range(n)]


def _expected(cases, n, seed):
    """The sample by hand: the n smallest seeded ranks of each suite's distinct ids."""
    by_suite = {}
    for c in cases:
        by_suite.setdefault(c.suite or "", set()).add(c.case_id)
    return sorted(cid for ids in by_suite.values()
                  for cid in sorted(ids, key=lambda i: sample_rank(seed, i))[:n])


def _check(cases, n, seed, expected):
    with TestPipeline(options=beam.options.pipeline_options.PipelineOptions(
            ["--runner=FnApiRunner"])) as p:
        assert_that(p | beam.Create(cases) | SampleCases(n, seed), equal_to(expected))


def test_the_sample_is_per_suite_seeded_and_independent_of_order():
    cases = _cases({"billing": 10, "returns": 6, "tiny": 2}) + [EvalCase("x-0", "q?")]
    first = _expected(cases, 3, seed=7)
    assert sorted({c.split("-")[0]: sum(1 for d in first if d.split("-")[0] == c.split("-")[0])
                   for c in first}.items()) == [("billing", 3), ("returns", 3), ("tiny", 2),
                                                ("x", 1)]
    _check(cases, 3, 7, first)
    _check(list(reversed(cases)) + cases[:4], 3, 7, first)  # another order, repeated ids
    assert _expected(cases, 3, seed=8) != first
    _check(cases, 3, 8, _expected(cases, 3, seed=8))


def test_sampled_intervals_by_hand():
    # 10 values from 100 rows: the t interval shrunk by sqrt(1 - 0.1)
    lo, hi = t_interval(10, 0.5, 0.9)
    slo, shi = sampled_interval(10, 0.5, 0.9, 10, 100, binary=False)
    assert (shi - slo) == pytest.approx((hi - lo) * math.sqrt(0.9))
    assert sampled_interval(10, 0.5, 0.9, 10, 10, binary=False) == (0.5, 0.5)  # a census
    # 0/1 values: Wilson at the effective size n / (1 - f)
    assert sampled_interval(8, 0.25, 1.5, 8, 16, binary=True) == wilson_interval(4.0, 16.0)
    # two strata: N = 90 and 10 rows, 3 sampled each
    mean, lo, hi = stratified_mean([(90, 3, 3, 0.2, 0.02), (10, 3, 3, 0.8, 0.08)])
    assert mean == pytest.approx(0.9 * 0.2 + 0.1 * 0.8)  # 0.26, not the sample's 0.5
    var = 0.9 ** 2 * (1 - 3 / 90) * (0.02 / 2) / 3 + 0.1 ** 2 * (1 - 3 / 10) * (0.08 / 2) / 3
    half = 2.7764451051977987 * math.sqrt(var)  # t(0.975, df = 2 + 2)
    assert (lo, hi) == (pytest.approx(mean - half), pytest.approx(mean + half))
    assert stratified_mean([(5, 1, 1, 0.5, 0.0), (5, 2, 2, 0.4, 0.02)])[1:] == (None, None)


@pytest.mark.parametrize("value", [0.0, 0.75, 1.0])
def test_one_sampled_value_of_many_rows_has_no_interval_whatever_the_value(value):
    """A suite of 500 rows with one sampled value: no interval, as in the
    all-suites row. One 0 or 1 does not make a metric 0/1 (a judge score of
    0.0 was given Wilson's (0, 0.79) while 0.75 got none)."""
    for binary in (False, value in (0.0, 1.0)):  # "binary": every value is 0 or 1
        assert sampled_interval(1, value, 0.0, 1, 500, binary=binary) == (None, None)
        assert sampled_interval(0, None, 0.0, 1, 500, binary=binary) == (None, None)
    assert sampled_interval(1, value, 0.0, 1, 1, binary=False) == (value, value)  # a census


def _score_by_answer(request, rule):
    """judge_relevance: the digit in the answer, as the rubric score."""
    answer = re.search(r"\[\[ANSWER [0-9a-f]+\]\]\n(.*?)\n", request["messages"][1]["content"],
                       re.S).group(1)
    return json.dumps({"score": int(re.search(r"\d", answer).group()), "reason": "by digit"})


ROWS = ([{"case_id": f"b{i}", "question": "q?", "answer": f"Score {1 + i % 5}, row b{i}.",
          "suite": "billing", "tags": []} for i in range(9)]
        + [{"case_id": f"r{i}", "question": "q?", "answer": f"Score {5 - i % 2}, row r{i}.",
            "suite": "returns", "tags": []} for i in range(4)]
        + [{"case_id": "n0", "question": "q?", "answer": "Score 3, row n0.", "suite": None,
            "tags": []}])


def test_a_sampled_run_judges_n_per_suite_and_a_rerun_judges_the_same_rows(tmp_path):
    script = ScriptedJudge(overrides={"judge_relevance": _score_by_answer})
    with FakeOpenAI() as server:
        server.set_chat_handler(script)
        config = (f"endpoints:\n  judge: {{base_url: '{server.openai_base_url}', "
                  "requests_per_second: 500}\n"
                  "judge: {endpoint: judge, model: j, sample: {per_suite: 3, seed: 11}}\n"
                  "metrics: [judge_relevance, answer_length]\n")
        code, out = run_sample(tmp_path, config, "s1", ROWS)
        assert code == 0 and server.stats()["total"] == 3 + 3 + 1  # billing, returns, no suite
        code, _ = run_sample(tmp_path, config, "s2", ROWS)
        assert code == 0 and server.stats()["total"] == 7  # the same rows: all cache hits
    assert manifest(out, "s1")["reconciliation"]["ok"]
    scores = [s for s in read_rows(out, "scores") if s["metric"] == "judge_relevance"]
    judged = {r: sorted(s["case_id"] for s in scores if s["run_id"] == r and s["value"] is not None)
              for r in ("s1", "s2")}
    assert judged["s1"] == judged["s2"] and len(judged["s1"]) == 7
    assert {s["error"] for s in scores if s["value"] is None} == {"not sampled"}
    assert sum(s["value"] is None for s in scores if s["run_id"] == "s1") == 14 - 7
    # the rows left out of the sample are counted as saved (Publish's SkippedKeys)
    usage = [u for u in read_rows(out, "usage") if u["run_id"] == "s1"
             and u["metric"] == "judge_relevance"]
    assert usage and {u["skipped_rows"] for u in usage} == {14 - 7}

    summary = {(r["suite"], r["metric"]): r for r in read_rows(out, "summary")
               if r["run_id"] == "s1"}
    billing, returns = summary[("billing", "judge_relevance")], summary[("returns",
                                                                         "judge_relevance")]
    assert (billing["count"], billing["missing"], billing["population"]) == (3, 0, 9)
    assert (returns["count"], returns["population"]) == (3, 4)
    assert billing["sampled"] and not summary[("*", "answer_length")]["sampled"]
    overall = summary[("*", "judge_relevance")]
    assert overall["count"] == 7 and overall["population"] == 14
    values = {s["case_id"]: s["value"] for s in scores if s["run_id"] == "s1" and s["value"]
              is not None}
    strata = {"billing": (9, [v for c, v in values.items() if c[0] == "b"]),
              "returns": (4, [v for c, v in values.items() if c[0] == "r"]),
              None: (1, [values["n0"]])}
    expected = sum(n / 14 * sum(v) / len(v) for n, v in strata.values())
    assert overall["mean"] == pytest.approx(expected)  # stratified, not the sample's mean
    assert overall["ci_low"] <= overall["mean"] <= overall["ci_high"]
    with open(f"{out}/runs/s1/report.md", encoding="utf-8") as fh:
        report = fh.read()
    assert "(sampled: n=7 of 14 rows, missing 0)" in report


@pytest.mark.parametrize("sample, words", [
    ({"per_suite": 0}, "judge.sample.per_suite must be an integer >= 1"),
    ({"per_suite": 5, "seed": -1}, "judge.sample.seed must be an integer >= 0"),
    ({"seed": 1}, "missing key 'judge.sample.per_suite'"),
    ({"per_suite": 5, "stratify": "suite"}, "unknown key 'judge.sample.stratify'"),
])
def test_sample_config_errors(sample, words):
    from pipeline.config import ConfigError, parse_config
    with pytest.raises(ConfigError, match=re.escape(words)):
        parse_config({"endpoints": {"llm": {"base_url": "http://x"}},
                      "judge": {"endpoint": "llm", "model": "m", "sample": sample}})


def test_with_the_cascade_rows_decided_offline_outside_the_sample_are_not_missing(tmp_path):
    """cascade + sample: a row outside the sample that the offline verdict decided
    keeps its reason ("decided offline (PASS)") but, like a "not sampled" row, is
    not one of the sample's missing values: missing counts the sample's rows only."""
    rows = [{"case_id": f"k{i}", "question": f"Question {i}?", "expected_answer": f"Yes {i}.",
             "answer": f"Yes {i}." if i % 2 else f"Score {1 + i % 5}, row k{i}.",
             "suite": "big", "tags": []} for i in range(40)]
    sample = sorted((f"k{i}" for i in range(40)), key=lambda c: sample_rank(3, c))[:4]
    with FakeOpenAI() as server:
        server.set_chat_handler(ScriptedJudge(overrides={"judge_relevance": _score_by_answer}))
        config = (f"endpoints:\n  judge: {{base_url: '{server.openai_base_url}', "
                  "requests_per_second: 500}\n"
                  "judge: {endpoint: judge, model: j, escalate: undecided, "
                  "sample: {per_suite: 4, seed: 3}}\n"
                  "metrics: [exact_match, judge_relevance]\n"
                  "verdict:\n  rules:\n    - {metric: exact_match, below: 1, verdict: WARN}\n"
                  "    - {metric: judge_relevance, below: 0.5, verdict: FAIL}\n")
        code, out = run_sample(tmp_path, config, "cs", rows)
        assert code == 0
        asked = server.stats()["total"]
    escalated = [c for c in sample if int(c[1:]) % 2 == 0]  # the sample's undecided rows
    assert asked == len(escalated)
    scores = {s["case_id"]: s for s in read_rows(out, "scores") if s["metric"] ==
              "judge_relevance"}
    assert scores["k1"]["error"] == "decided offline (PASS)"  # the reason stays
    row = {r["suite"]: r for r in read_rows(out, "summary")
           if r["metric"] == "judge_relevance"}["big"]
    assert (row["count"], row["missing"], row["population"]) == (
        len(escalated), len(sample) - len(escalated), 40)
    with open(f"{out}/runs/cs/report.md", encoding="utf-8") as fh:
        report = fh.read()
    assert f"(sampled: n={len(escalated)} of 40 rows, missing {len(sample) - len(escalated)})" \
        in report


def test_report_html_marks_sampled_means_as_report_md_does():
    """report.html showed a sampled metric as `0.25 [0.25, 0.25]  n=2, missing 9`, a
    plain mean of 2 rows, where report.md says it estimates 508 rows from a sample."""
    from transforms.publish.report_html import _means
    row = {"bot": "b", "metric": "judge_relevance", "count": 2, "missing": 9, "mean": 0.25,
           "ci_low": None, "ci_high": None, "higher_is_better": True, "sampled": True,
           "population": 508}
    plain = {**row, "metric": "exact_match", "sampled": False, "population": None}
    page = str(_means([row, plain]))
    assert "0.250 (sampled: n=2 of 508 rows, missing 9)" in page
    assert "0.250  n=2, missing 9" in page  # the metric judged on every row: as before
    from transforms.publish.report import sampled_note  # the note both reports print
    assert "not counted as missing" in sampled_note()
