"""compare on tables written directly (no pipeline): duplicate case ids, a
bot only one run has, cases without a suite; and the gate's rules."""
from __future__ import annotations

import os

import numpy as np
import pytest

from pipeline.config import GateRule
from pipeline.cli import run
from pipeline.postrun.compare import Side, compare, gate_lines
from pipeline.postrun.gate import GateError, check_gate
from tests.compare_tables import write_run


def _values(n: int, shift: float = 0.0) -> dict[str, np.ndarray]:
    base = np.linspace(0.2, 0.8, n)
    return {"score": np.clip(base + shift, 0, 1), "halluc": np.full(n, 0.1 - shift)}


def test_duplicates_missing_bots_and_suiteless_cases_are_counted_not_paired(tmp_path):
    out = str(tmp_path)
    ids = [f"c{i}" for i in range(40)]
    suites = np.array([None] * 10 + ["a"] * 30, dtype=object)
    verdicts = np.array(["PASS"] * 40)
    lower = frozenset({"halluc"})
    write_run(out, "b", "2026-01-01", "bot", ids + ["c0"], np.append(suites, None),
              {k: np.append(v, 0.5) for k, v in _values(40).items()},
              np.append(verdicts, "FAIL"), lower_is_better=lower)  # c0 twice in the baseline
    write_run(out, "b", "2026-01-01", "old", ids[:5], suites[:5], _values(5), verdicts[:5],
              lower_is_better=lower)
    write_run(out, "c", "2026-01-02", "bot", ids[:-1], suites[:-1],
              {k: v[:-1] for k, v in _values(40, -0.05).items()}, verdicts[:-1],
              lower_is_better=lower)
    c = compare(out, Side("b"), Side("c"))
    assert c["bots"] == ["bot"] and c["paired"] == {"bot": 38}  # c0 (twice) and c39 unpaired
    assert c["unpaired"]["bot"] == {"only_in_baseline": 1, "only_in_candidate": 0,
                                    "duplicate_case_id": 1}
    assert c["unpaired"]["old"]["only_in_baseline"] == 5  # a bot the candidate lacks
    rows = {(r["suite"], r["metric"]): r for r in c["rows"]}
    assert rows[("*", "score")]["n_pairs"] == 38 and rows[("a", "score")]["n_pairs"] == 29
    assert {s for s, _ in rows} == {"*", "a"}  # suiteless cases: in '*' only
    assert rows[("*", "score")]["delta"] == pytest.approx(-0.05)
    assert rows[("*", "halluc")]["delta"] == pytest.approx(0.05)  # ↓ metric rose: worse
    assert rows[("*", "halluc")]["losses"] == 38 and not rows[("*", "halluc")]["higher_is_better"]
    with open(c["unpaired_csv"], encoding="utf-8") as fh:
        assert sorted(fh.read().splitlines()[1:]) == sorted(
            ["bot,duplicate_case_id,c0,", "bot,only_in_baseline,c39,a"]
            + [f"old,only_in_baseline,c{i}," for i in range(5)])


def test_a_numeric_bot_name_stays_text(tmp_path):
    out, ids = str(tmp_path), [f"c{i}" for i in range(12)]
    suites, verdicts = np.array(["s"] * 12), np.array(["PASS"] * 12)
    for run_id, shift in (("b", 0.0), ("c", 0.1)):
        for bot in ("2024", "007"):
            write_run(out, run_id, "2026-01-01", bot, ids, suites, _values(12, shift), verdicts)
    c = compare(out, Side("b"), Side("c"))
    assert sorted(c["bots"]) == ["007", "2024"] and c["paired"] == {"007": 12, "2024": 12}
    c = compare(out, Side("c", "007"), Side("c", "2024"))  # bot against bot
    assert c["paired"] == {"2024": 12} and c["stem"] == "c.007.vs.2024"


def test_bot_against_bot_takes_every_name_a_config_allows(tmp_path, capsys):
    """A config names bots in any script's letters (bots[].name); the
    command line's RUN:BOT refused those it would not take as a run id."""
    out, ids = str(tmp_path), [f"c{i}" for i in range(12)]
    suites, verdicts = np.array(["s"] * 12), np.array(["PASS"] * 12)
    for bot, shift in (("ассистент", 0.0), ("助手_2", 0.1)):
        write_run(out, "r", "2026-01-01", bot, ids, suites, _values(12, shift), verdicts)
    assert run(["compare", "--output", out, "--baseline", "r:ассистент",
                "--candidate", "r:助手_2"]) == 0
    assert "compare r:助手_2 (candidate) vs r:ассистент (baseline): 12 paired" in \
        capsys.readouterr().out
    assert run(["compare", "--output", out, "--baseline", "r:a.b", "--candidate", "r:c"]) == 2
    assert "must be RUN_ID or RUN_ID:BOT" in capsys.readouterr().err


def _row(metric="faithfulness", delta=-0.05, p=0.001, hib=True, bot="a", suite="*"):
    return {"bot": bot, "suite": suite, "metric": metric, "delta": delta, "p_adjusted": p,
            "higher_is_better": hib, "baseline_mean": 0.9, "candidate_mean": 0.9 + delta}


@pytest.mark.parametrize("row,rule,failed", [
    (_row(), GateRule("faithfulness", 0.02), True),
    (_row(delta=-0.01), GateRule("faithfulness", 0.02), False),            # allowed drop
    (_row(p=0.2), GateRule("faithfulness", 0.02), False),                  # could be noise
    (_row(delta=0.05), GateRule("faithfulness", 0.02), False),             # it improved
    (_row("halluc", 0.05, hib=False), GateRule("halluc", 0.02), True),     # ↓ metric rose
    (_row("halluc", -0.05, hib=False), GateRule("halluc", 0.02), False),
    (_row(p=0.03), GateRule("faithfulness", 0.02, alpha=0.01), False),
])
def test_gate_fails_on_significant_drops_larger_than_allowed(row, rule, failed):
    (check,) = check_gate([rule], [row])
    assert check.failed is failed
    assert check.describe().startswith("gate[0] {metric: ")


def test_a_bot_the_candidate_lacks_fails_the_gate_instead_of_passing_unchecked(tmp_path, capsys):
    """The baseline's bot faq is renamed faq2 in the candidate: nothing of faq
    could be checked, so every rule that applies to it fails (exit 4)."""
    out, ids = str(tmp_path), [f"c{i}" for i in range(12)]
    suites, verdicts = np.array(["s"] * 12), np.array(["PASS"] * 12)
    for run_id, bots in (("b", ("faq", "rec")), ("c", ("faq2", "rec"))):
        for bot in bots:
            write_run(out, run_id, "2026-01-01", bot, ids, suites, _values(12), verdicts)
    gate = tmp_path / "gate.yaml"
    gate.write_text("gate: [{metric: score, max_drop: 0.02}, "
                    "{metric: score, max_drop: 0.02, bot: faq}]\n")
    assert run(["compare", "--output", out, "--baseline", "b", "--candidate", "c",
                "--config", str(gate)]) == 4
    printed = capsys.readouterr().out
    assert ("gate: FAILED gate[0] {metric: score, max_drop: 0.02}: faq score: no case paired "
            "(12 only in the baseline): the candidate run lacks the bot") in printed
    assert "FAILED gate[1] {metric: score, max_drop: 0.02, bot: faq}: faq score" in printed
    assert "gate: 2 of 3 checks failed (2 rules)" in printed  # rec's check passed


def test_the_gates_outcome_counts_one_rule_and_one_check_in_the_singular():
    assert gate_lines([], 1, 1) == ["gate: passed (1 rule, 1 check)"]
    failed = check_gate([GateRule("faithfulness", 0.02)], [_row()])
    assert gate_lines(failed, 1, 2)[-1] == "gate: 1 of 2 checks failed (1 rule)"
    assert gate_lines(failed, 1, 1)[-1] == "gate: 1 of 1 check failed (1 rule)"


def test_an_unchanged_metric_drops_by_zero_not_minus_zero():
    (check,) = check_gate([GateRule("faithfulness", 0.02)], [_row(delta=0.0, p=1.0)])
    assert "(drop 0 (max 0.02), p_holm 1)" in check.finding() and not check.failed


def test_gate_rule_filters_and_unmatched_rules():
    rows = [_row(bot="a"), _row(bot="b", delta=0.0), _row(bot="a", suite="billing")]
    assert [c.row["bot"] for c in check_gate([GateRule("faithfulness", 0.02)], rows)] == ["a", "b"]
    assert len(check_gate([GateRule("faithfulness", 0.02, bot="b")], rows)) == 1
    assert check_gate([GateRule("faithfulness", 0.02, suite="billing")], rows)[0].failed
    with pytest.raises(GateError, match=r"gate\[0\] \{metric: rouge, max_drop: 0.1\} matches "
                                        r"nothing compared \(bots: a, b; metrics: faithfulness\)"):
        check_gate([GateRule("rouge", 0.1)], rows)
    # a suite the compared runs do not have: the message names the suites there are
    with pytest.raises(GateError, match=r"suite: shipping\} matches nothing compared \(bots: a, "
                                        r"b; suites: billing; metrics: faithfulness\)"):
        check_gate([GateRule("faithfulness", 0.02, suite="shipping")], rows)


def _noisy_twins(out: str, n: int = 200) -> None:
    """Two runs of the same answers whose continuous metric differs by float
    noise only (±1e-7, as embedding metrics between two runs of one input)."""
    rng = np.random.default_rng(3)
    ids = [f"c{i:03d}" for i in range(n)]
    suites = np.array(["a", "b"] * (n // 2))
    verdicts = np.array(["PASS", "FAIL"] * (n // 2))
    base = {"similarity": rng.random(n), "exact": (rng.random(n) < 0.5).astype(float)}
    cand = {"similarity": base["similarity"] + rng.choice([-1e-7, 1e-7], n) * rng.random(n),
            "exact": base["exact"]}
    write_run(out, "r1", "2026-01-01", "bot", ids, suites, base, verdicts)
    write_run(out, "r2", "2026-01-02", "bot", ids, suites, cand, verdicts)


def test_float_noise_between_identical_runs_is_no_change(tmp_path):
    out = str(tmp_path)
    _noisy_twins(out)
    c = compare(out, Side("r1"), Side("r2"))
    for row in c["rows"]:
        assert (row["wins"], row["losses"]) == (0, 0), row
        assert row["ties"] == row["n_pairs"] and not row["significant"]
        assert row["min_difference"] == 1e-3
    assert c["regressed"] == {"bot": []}  # nothing is "most regressed"
    sim = next(r for r in c["rows"] if r["metric"] == "similarity" and r["suite"] == "*")
    assert sim["n_pairs"] == 200 and sim["p_value"] == 1.0


def test_min_difference_widens_the_ties(tmp_path):
    out, ids = str(tmp_path), [f"c{i}" for i in range(60)]
    suites, verdicts = np.array(["s"] * 60), np.array(["PASS"] * 60)
    write_run(out, "b", "2026-01-01", "bot", ids, suites, _values(60), verdicts)
    write_run(out, "c", "2026-01-02", "bot", ids, suites, _values(60, -0.05), verdicts)
    strict = compare(out, Side("b"), Side("c"))
    loose = compare(out, Side("b"), Side("c"), min_difference=0.1)

    def score(c):
        return next(r for r in c["rows"] if r["metric"] == "score" and r["suite"] == "*")
    assert score(strict)["losses"] == 60 and score(strict)["significant"]
    assert (score(loose)["wins"], score(loose)["ties"], score(loose)["losses"]) == (0, 60, 0)
    assert not score(loose)["significant"] and loose["regressed"] == {"bot": []}


def test_failing_gate_rules_are_printed_first(tmp_path, capsys):
    from pipeline.cli import run
    out = str(tmp_path / "out")
    ids = [f"c{i}" for i in range(60)]
    suites, verdicts = np.array(["s"] * 60), np.array(["PASS"] * 60)
    write_run(out, "b", "2026-01-01", "bot", ids, suites, _values(60), verdicts)
    write_run(out, "c", "2026-01-02", "bot", ids, suites, _values(60, -0.05), verdicts)
    cfg = tmp_path / "gate.yaml"
    cfg.write_text("gate:\n  - {metric: pass_rate, max_drop: 0.1}\n"
                   "  - {metric: halluc, max_drop: 0.5}\n  - {metric: score, max_drop: 0.01}\n")
    assert run(["compare", "--output", out, "--baseline", "b", "--candidate", "c",
                "--config", str(cfg)]) == 4
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("gate: FAILED gate[2] {metric: score, max_drop: 0.01}: bot score")
    assert lines[1] == "gate: 1 of 3 checks failed (3 rules)"
    md = open(os.path.join(out, "runs", "c", "compare", "b.md"), encoding="utf-8").read()
    gate = [line for line in md.splitlines() if line.startswith("- **")]
    assert gate[0].startswith("- **FAIL** gate[2]") and len(gate) == 3
    assert "Minimum practical difference: 0.001" in md


def test_the_forest_axis_never_outgrows_the_scale_of_its_metrics(tmp_path, monkeypatch):
    """The axis is at least ±10 × --min-difference wide, but the plotted metrics
    and the pass rate move by at most 1: a large D must not squash every
    interval onto the zero line (D = 1 gave an axis of ±10.5)."""
    from transforms.publish import charts
    from transforms.publish.compare_page import render_compare_html
    out, ids = str(tmp_path), [f"c{i}" for i in range(60)]
    suites, verdicts = np.array(["s"] * 60), np.array(["PASS"] * 60)
    write_run(out, "b", "2026-01-01", "bot", ids, suites, _values(60), verdicts)
    write_run(out, "c", "2026-01-02", "bot", ids, suites, _values(60, -0.05), verdicts)
    floors = []
    real = charts.forest
    monkeypatch.setattr(charts, "forest",
                        lambda points, floor=0.01, **kw: floors.append(floor) or real(points, floor))
    for d in (0.001, 0.05, 1.0, 5.0):
        render_compare_html(compare(out, Side("b"), Side("c"), min_difference=d))
    assert floors == [0.01, 0.5, 1.0, 1.0]


def _longer_answers(out: str, n: int = 30) -> None:
    """Run b, then run c whose answers are all ~40% longer (and score a little
    lower): answer_length moved a lot, with no better side."""
    ids, suites, verdicts = [f"c{i}" for i in range(n)], np.array(["s"] * n), np.array(["PASS"] * n)
    base = np.linspace(80, 200, n)
    for run_id, grow, shift in (("b", 1.0, 0.0), ("c", 1.4, -0.05)):
        values = {**_values(n, shift), "answer_length": base * grow}
        write_run(out, run_id, "2026-01-01", "bot", ids, suites, values, verdicts,
                  lower_is_better=frozenset({"halluc"}))


def test_longer_answers_are_neither_a_regression_nor_an_improvement(tmp_path, capsys):
    """answer_length has no better direction: summary/ says so (null), and
    compare reports its change without calling it better or worse (it was
    "better", higher is better), with no wins or losses; its gate rule is a
    bound on the change either way."""
    from transforms.publish.compare_page import render_compare_md
    from transforms.publish.paired import change
    out = str(tmp_path)
    _longer_answers(out)
    c = compare(out, Side("b"), Side("c"))
    rows = {r["metric"]: r for r in c["rows"] if r["suite"] == "*"}
    length = rows["answer_length"]
    assert length["higher_is_better"] is None and length["significant"]
    assert length["delta"] == pytest.approx(0.4 * np.linspace(80, 200, 30).mean())
    assert change(length) == "changed" and length["wins"] is None and length["losses"] is None
    assert change(rows["score"]) == "worse" and rows["score"]["losses"] == 30
    assert run(["compare", "--output", out, "--baseline", "b", "--candidate", "c"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("  bot:"))
    assert line.endswith("| significantly worse: halluc, score | better: none | "
                         "changed (no direction): answer_length")
    page = render_compare_md(c)
    assert "| answer_length | 30 |" in page and "| –/0/– | changed |" in page
    assert "answer_length ↓" not in page and "answer_length ↑" not in page
    for max_drop, failed in ((10.0, True), (100.0, False)):  # |delta| is ~56 characters
        (check,) = check_gate([GateRule("answer_length", max_drop)], c["rows"])
        assert check.failed is failed and f"(change 56 " in check.finding()


def test_summary_and_the_report_give_answer_length_no_direction():
    from transforms.publish.paired import metric_label
    from transforms.publish.summary import summary_rows
    stats = [(("bot", "*", m), {"count": 1, "missing": 0, "mean": 1.0})
             for m in ("answer_length", "latency_ms", "rougeL")]
    rows = summary_rows("r", stats, [], frozenset({"latency_ms"}))
    assert {r["metric"]: r["higher_is_better"] for r in rows} == {
        "answer_length": None, "latency_ms": False, "rougeL": True}
    assert [metric_label(r["metric"], r["higher_is_better"]) for r in rows] == [
        "answer_length", "latency_ms ↓", "rougeL"]


def test_one_pair_has_no_interval_not_a_zero_wide_one(tmp_path, capsys):
    """One paired case printed `Δ -1.000 [-1.000, -1.000]`: a bootstrap of one
    value resamples it alone, a 95% interval of width 0 claiming certainty."""
    out = str(tmp_path)
    write_run(out, "b", "2026-01-01", "bot", ["c0"], np.array(["s"]), {"score": np.ones(1)},
              np.array(["PASS"]))
    write_run(out, "c", "2026-01-02", "bot", ["c0"], np.array(["s"]), {"score": np.zeros(1)},
              np.array(["FAIL"]))
    capsys.readouterr()
    assert run(["compare", "--output", out, "--baseline", "b", "--candidate", "c"]) == 0
    assert "pass rate 1.000 → 0.000 (Δ -1.000 [–, –], p_holm 1)" in capsys.readouterr().out
    c = compare(out, Side("b"), Side("c"))
    assert all(r["delta"] == -1.0 and r["ci_low"] is None and r["ci_high"] is None
               for r in c["rows"]), c["rows"]


def test_a_compare_of_many_bots_counts_one_suite_as_one(tmp_path, capsys):
    """With more than a few bots the compare page folds each bot's suites under
    a line per bot, which read '1 suites, 0 significantly worse' for a run of
    one suite (12 bots)."""
    out, ids = str(tmp_path), [f"c{i}" for i in range(12)]
    verdicts = np.array(["PASS"] * 12)
    for run_id, shift in (("b", 0.0), ("c", 0.1)):
        for i in range(12):
            write_run(out, run_id, "2026-01-01", f"bot_{i:02d}", ids, np.array(["s"] * 12),
                      _values(12, shift), verdicts)
            write_run(out, run_id, "2026-01-01", f"two_{i:02d}", ids,
                      np.array(["s", "t"] * 6), _values(12, shift), verdicts)
    assert run(["compare", "--output", out, "--baseline", "b", "--candidate", "c"]) == 0
    capsys.readouterr()
    with open(os.path.join(out, "runs", "c", "compare", "b.html"), encoding="utf-8") as fh:
        page = fh.read()
    assert "<b>bot_00</b>: 1 suite, " in page and "1 suites" not in page
    assert "<b>two_00</b>: 2 suites, " in page
