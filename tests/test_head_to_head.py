"""The report's head to head of two bots: pairing by case, the paired
statistics per suite, and the Beam transform (order-independent)."""
from __future__ import annotations

import math

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.util import assert_that, equal_to

from schemas.records import EvalCase, MetricResult, Turn
from transforms.publish import head_to_head as h2h
from transforms.publish.report import render_report

METRICS = ("score", "halluc")


def _turn(case_id: str, bot: str, score: float | None, halluc: float, verdict: str,
          suite: str | None = "s") -> Turn:
    return Turn(EvalCase(case_id, f"q {case_id}", suite=suite), bot, "a",
                scores={"score": MetricResult(score), "halluc": MetricResult(halluc)},
                verdict=verdict)


def _turns(n: int = 40) -> list[Turn]:
    """b scores 0.1 higher than a on every case and hallucinates less; a
    passes the first 10 cases b fails."""
    turns = []
    for i in range(n):
        suite = ("x", "y", None)[i % 3]
        turns.append(_turn(f"c{i:02d}", "a", 0.5 + i / 200, 0.3, "PASS" if i < 10 else "FAIL",
                           suite))
        turns.append(_turn(f"c{i:02d}", "b", 0.6 + i / 200, 0.2, "FAIL" if i < 10 else "FAIL",
                           suite))
    return turns


def test_a_case_pairs_only_when_both_bots_answered_it_once():
    entries = [("a", "s", 0, (1.0,)), ("b", "s", 2, (0.5,)), ("c", "s", 0, (0.0,)),
               ("c", "s", 0, (0.1,))]
    pairs = dict(h2h.bot_pairs(("k", entries), ["a", "b", "c"]))
    assert pairs == {("a", "b"): ("k", "s", 0, 2, (1.0,), (0.5,))}  # c answered twice
    assert list(h2h.bot_pairs(("k", entries[:1]), ["a", "b"])) == []


def _by_hand(turns: list[Turn], pair: tuple[str, str] = ("a", "b")) -> tuple:
    """The pair's statistics without Beam: group by case, pair, combine."""
    by_case: dict = {}
    for t in turns:
        case_id, entry = h2h.case_entry(t, METRICS)
        by_case.setdefault(case_id, []).append(entry)
    acc = h2h.PairRowsFn().create_accumulator()
    for item in by_case.items():
        for _, row in h2h.bot_pairs(item, list(pair)):
            acc.add(row)
    return h2h.rows_statistics(pair, acc, METRICS, (True, False))


def test_pair_statistics_all_suites_then_each_suite():
    pair, stats = _by_hand(_turns())
    assert pair == ("a", "b") and stats["paired"] == 40
    got = {(r["suite"], r["metric"]): r for r in stats["rows"]}
    assert {s for s, _ in got} == {"*", "x", "y"}  # suiteless cases only in '*'
    score = got[("*", "score")]
    assert score["delta"] == pytest.approx(0.1) and score["wins"] == 40
    assert score["significant"] and h2h.change(score) == "better"
    assert score["ci_low"] == pytest.approx(0.1) and score["ci_high"] == pytest.approx(0.1)
    halluc = got[("*", "halluc")]  # lower is better: b's 0.2 beats a's 0.3
    assert halluc["delta"] == pytest.approx(-0.1) and halluc["wins"] == 40
    assert h2h.change(halluc) == "better"
    passes = got[("*", "pass_rate")]
    assert passes["delta"] == pytest.approx(-0.25) and passes["losses"] == 10
    assert passes["transitions"]["PASS->FAIL"] == 10 and passes["transitions"]["FAIL->FAIL"] == 30
    assert got[("x", "score")]["n_pairs"] == 14 and got[("y", "score")]["n_pairs"] == 13
    text = " ".join(h2h.findings(pair, stats))
    assert "a passes significantly more cases" in text
    assert "Metrics significantly better for b: score, halluc" in text
    assert "The pass rate and the metrics disagree" in text


def test_the_transform_gives_the_same_figures_in_any_order():
    turns = _turns()
    expected = _by_hand(turns)
    rng = np.random.default_rng(1)
    for data in (turns, [turns[i] for i in rng.permutation(len(turns))]):
        with TestPipeline(options=PipelineOptions(["--runner=FnApiRunner"])) as p:
            out = (p | beam.Create(data, reshuffle=False)
                   | h2h.HeadToHead(["a", "b"], METRICS, frozenset({"halluc"})))
            assert_that(out, equal_to([expected]))


def _manifest(bots: list[str], cases: int = 2) -> dict:
    return {"run_id": "r", "run_date": "2026-01-01", "input": "i", "bots": bots,
            "counts": {"input_rows": cases, "valid_cases": cases, "invalid_rows": 0,
                       "duplicate_case_ids": 0, "results_rows": 2 * cases, "bot_errors": 0},
            "reconciliation": {"ok": True}, "tables": {}, "output": "/nonexistent"}


def test_nulls_pair_nothing_and_report_sections():
    turns = [_turn("c1", "a", None, 0.1, "PASS"), _turn("c1", "b", 0.4, 0.1, "PASS"),
             _turn("c2", "a", 0.2, 0.1, "PASS"), _turn("c2", "b", 0.5, 0.2, "WARN")]
    pair, stats = _by_hand(turns)
    score = next(r for r in h2h.overall(stats) if r["metric"] == "score")
    assert score["n_pairs"] == 1 and score["null_pairs"] == 1
    assert not math.isnan(score["delta"])
    manifest = _manifest(["a", "b"])
    worst = {"a": [{"case_id": "c<1>", "verdict": "FAIL", "reason": "score 0.1 < 0.2",
                    "question": "q", "answer": "<script>x</script>", "reference": "ref | 1",
                    "metrics": {"halluc": 0.1, "score": 0.1}}]}
    md = render_report(manifest, [], worst, [(pair, stats)])
    assert "## Head to head" in md and "### b − a (2 paired cases)" in md
    assert "| b − a [95% CI] |" in md
    assert "| c&lt;1&gt; | – | FAIL |" in md and "ref \\| 1" in md and "<script>" not in md
    assert "score 0.10, halluc 0.10" in md  # the metric the reason names comes first


def test_worst_case_metric_values_name_the_reason_first_and_fold_the_rest():
    from transforms.publish.report import metrics_text
    from transforms.publish.report_html import _metrics_cell
    case = {"reason": "hallucination 0.91 > 0.7", "metrics": {
        "rougeL": 0.1, "hallucination": 0.91, "bleu": 0.25, "x<b>": 0.5}}
    assert metrics_text(case) == "hallucination 0.91, bleu 0.25, rougeL 0.10, x<b> 0.50"
    cell = _metrics_cell(case)
    assert cell.startswith("hallucination 0.91<details><summary>3 more</summary>")
    assert "x&lt;b&gt; 0.50" in cell and "<b>" not in cell
    assert _metrics_cell({"reason": "otherwise", "metrics": {"a": 1.0, "b": 0.0}}) == \
        "a 1.00, b 0.00"
    assert _metrics_cell({"reason": "x", "metrics": {}}) == "–"
    from transforms.publish.rows import shortened
    assert shortened("x" * 300, 200) == "x" * 199 + "…" and shortened("x" * 200, 200) == "x" * 200
    assert shortened(None, 200) is None


def test_right_to_left_bot_names_are_isolated_in_the_html_sentences():
    """An Arabic or Hebrew bot name pulls the figures next to it into its run
    unless it is set apart (seen: 'Pass rate ... 0.333, ;0.000 مساعد'); the
    HTML isolates such names, the Markdown and left-to-right names stay as they are."""
    from transforms.publish.html import isolated
    from transforms.publish.report_html import render_html_report
    assert isolated("a 3, مساعد 5, עוזר 2, b 1", ["a", "مساعد", "עוזר", "b"]) == \
        "a 3, \u2068مساعد\u2069 5, \u2068עוזר\u2069 2, b 1"
    assert isolated("plain b vs a", ["a", "b"]) == "plain b vs a"
    rtl = "مساعد"
    turns = [_turn(c, bot, 0.3, 0.1, "PASS") for c in ("c1", "c2") for bot in ("a", rtl)]
    pair, stats = _by_hand(turns, pair=("a", rtl))
    manifest = _manifest(["a", rtl])
    page = render_html_report(manifest, [], {}, [], [(pair, stats)])
    assert f"\u2068{rtl}\u2069 − a (2 paired cases)" in page
    assert f"\u2068{rtl}\u2069" in page.split("Pass rate on")[1].split("</p>")[0]
    assert "\u2068" not in render_report(manifest, [], {}, [(pair, stats)])


def test_head_to_head_names_its_bots_not_first_and_second():
    """The head to head was titled 'concise vs app' while its chart's axis read
    'second bot − first' and its legend 'better' / 'worse' (readers could not tell
    which bot was second). Title, axis, legend and caption now name the bots as
    the differences read: 'concise − app', 'concise better', 'app better'."""
    import base64
    import re
    from transforms.publish.report_html import render_html_report
    turns = [_turn(f"c{i:02d}", bot, 0.5, 0.3, "PASS" if bot == "app" or i < 4 else "FAIL")
             for i in range(30) for bot in ("app", "concise")]
    pair, stats = _by_hand(turns, pair=("app", "concise"))
    manifest = _manifest(["app", "concise"], 30)
    md = render_report(manifest, [], {}, [(pair, stats)])
    assert "### concise − app (30 paired cases)" in md and " vs " not in md
    assert "second bot" not in md and "Δ, as a pair's title reads (b − a)" in md
    page = render_html_report(manifest, [], {}, [], [(pair, stats)])
    assert "<h3>concise − app (30 paired cases)</h3>" in page and "second bot" not in page
    assert ("concise − app, paired by case, with the 95% bootstrap interval; green: concise "
            "is significantly better, red: app") in page
    uri = re.search(r'src="data:image/svg\+xml;base64,([^"]+)" alt="head to head', page)
    svg = base64.b64decode(uri.group(1)).decode()
    for text in ("concise − app (95% interval)", "concise better", "app better",
                 "no significant difference"):
        assert text in svg, text
    assert "second bot" not in svg and ">better<" not in svg
