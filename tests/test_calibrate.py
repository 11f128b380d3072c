"""`evalbeam calibrate`: agreement statistics checked by hand and against
scipy, then a real labelled run whose calibration/ table, page and printout
equal a hand computation written out below."""
from __future__ import annotations

import json
import os
import random
import shutil

import duckdb
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
import yaml
from scipy.stats import mannwhitneyu

from pipeline.cli import run
from pipeline.config import load_config
from pipeline.postrun.agreement import (acceptable, best_threshold, cohen_kappa,
                                        label_category, label_value, pairwise_accuracy, roc_auc,
                                        verdict_agreement)
from pipeline.postrun.calibrate import (Answer, BotLabels, bots_to_calibrate, check_rules,
                                        metric_stats, run_calibrate, suggest_rules)
from pipeline.postrun.read import PostRunError
from tests.conftest import write_cases
from tests.pipeline_helpers import files_under, read_rows, write_marker

# ---- the agreement functions on small hand-computed cases -------------------


def test_labels_map_to_values_acceptability_and_categories():
    assert [label_value(x) for x in ("PASS", "WARN", "FAIL", "0.75", None)] == \
        [1.0, 0.5, 0.0, 0.75, None]
    assert [acceptable(x) for x in ("PASS", "WARN", "FAIL", "0.51", "0.5", None)] == \
        [True, False, False, True, False, None]
    assert [label_category(x) for x in ("WARN", "0.7", "0.66", "0.5", "0.3")] == \
        ["WARN", "PASS", "WARN", "WARN", "FAIL"]


def test_roc_auc_by_hand():
    # acceptable 0.9, 0.5; unacceptable 0.5, 0.1: pairs (0.9>0.5) (0.9>0.1) (0.5=0.5: ½) (0.5>0.1)
    assert roc_auc([0.9, 0.5, 0.5, 0.1], [True, True, False, False]) == 3.5 / 4
    # lower is better: only (0.5=0.5) scores a half
    assert roc_auc([0.9, 0.5, 0.5, 0.1], [True, True, False, False], False) == 0.5 / 4
    assert roc_auc([0.3, 0.2], [True, True]) is None


def _random_labelled(seed: int, cases: int, longest: int):
    """(values, acceptable) with both classes present and many ties."""
    rng = random.Random(seed)
    for _ in range(cases):
        n = rng.randint(2, longest)
        values = [rng.choice([0.0, 0.25, 0.5, 1.0, rng.random()]) for _ in range(n)]
        ok = [rng.random() < 0.5 for _ in range(n)]
        if any(ok) and not all(ok):
            yield values, ok


def test_roc_auc_is_mann_whitney_u_over_pairs():
    for values, ok in _random_labelled(7, 50, 40):
        good = [v for v, k in zip(values, ok) if k]
        bad = [v for v, k in zip(values, ok) if not k]
        u = mannwhitneyu(good, bad, alternative="two-sided").statistic
        assert roc_auc(values, ok) == pytest.approx(u / (len(good) * len(bad)), abs=1e-12)


def _brute_pairwise(items, higher_is_better=True):
    wins = pairs = 0.0
    for g1, v1, ok1 in items:
        for g2, v2, ok2 in items:
            if g1 == g2 and ok1 and not ok2:
                a, b = (v1, v2) if higher_is_better else (v2, v1)
                pairs += 1
                wins += 1 if a > b else 0.5 if a == b else 0
    return (wins / pairs if pairs else None), int(pairs)


def test_pairwise_accuracy_by_hand_and_brute_force():
    items = [("q1", 0.9, True), ("q1", 0.4, False), ("q1", 0.9, False),   # 1 + ½ of 2
             ("q2", 0.2, True), ("q2", 0.7, False),                       # 0 of 1
             ("q3", 0.5, True)]                                           # no pair
    assert pairwise_accuracy(items) == (1.5 / 3, 3)
    assert pairwise_accuracy(items, higher_is_better=False) == (1.5 / 3, 3)
    assert pairwise_accuracy([("q", 1.0, True)]) == (None, 0)
    rng = random.Random(3)
    for _ in range(200):
        items = [(rng.randint(0, 3), rng.choice([0.0, 0.5, 1.0, rng.random()]),
                  rng.random() < 0.5) for _ in range(rng.randint(0, 25))]
        for hib in (True, False):
            assert pairwise_accuracy(items, hib) == pytest.approx(_brute_pairwise(items, hib))


def _brute_threshold(values, ok, higher_is_better=True):
    """Youden's J at every candidate cut (each value, and above them all)."""
    n_pos, n_neg = sum(ok), len(ok) - sum(ok)
    best = None
    candidates = sorted(set(values)) + [max(values) + 1] if higher_is_better else \
        sorted(set(values), reverse=True) + [min(values) - 1]
    for cut in candidates:
        accepted = [v >= cut if higher_is_better else v <= cut for v in values]
        tp = sum(1 for a, k in zip(accepted, ok) if a and k)
        tn = sum(1 for a, k in zip(accepted, ok) if not a and not k)
        j = tp / n_pos + tn / n_neg - 1
        if best is None or j > best[0] + 1e-12:
            best = (j, (tp + tn) / len(values), accepted)
    return best


def test_best_threshold_by_hand():
    # acceptable 0.9, 0.8, 0.3; unacceptable 0.6, 0.2. Cuts between neighbours:
    #   >= 0.25: tp 3, tn 1 -> J = 1 + 0.5 - 1 = 0.5
    #   >= 0.45: tp 2, tn 1 -> J = 2/3 + 1/2 - 1 = 1/6
    #   >= 0.7:  tp 2, tn 2 -> J = 2/3 + 1 - 1 = 2/3   <- best, accuracy 4/5
    t = best_threshold([0.9, 0.8, 0.3, 0.6, 0.2], [True, True, True, False, False])
    assert (t.value, t.youden_j, t.accuracy) == (pytest.approx(0.7), pytest.approx(2 / 3), 0.8)
    assert t.rule("bleu") == {"metric": "bleu", "below": 0.7, "verdict": "FAIL"}
    low = best_threshold([0.1, 0.2, 0.9], [True, True, False], higher_is_better=False)
    assert (low.value, low.youden_j) == (pytest.approx(0.55), 1.0)
    assert low.rule("hallucination", "WARN") == {"metric": "hallucination", "above": 0.55,
                                                 "verdict": "WARN"}
    assert best_threshold([0.5, 0.6], [False, False]) is None


def test_best_threshold_sweep_equals_brute_force():
    for values, ok in _random_labelled(5, 300, 30):
        for hib in (True, False):
            t = best_threshold(values, ok, hib)
            j, accuracy, accepted = _brute_threshold(values, ok, hib)
            assert t.youden_j == pytest.approx(j) and t.accuracy == pytest.approx(accuracy)
            mine = [v >= t.value if hib else v <= t.value for v in values]
            assert mine == accepted  # the same answers on the accepted side


def test_cohen_kappa_by_hand():
    # 50 items: both yes 20, A yes B no 5, A no B yes 10, both no 15.
    # p_o = 35/50 = 0.7; p_e = (25·30 + 25·20) / 50² = 0.5; kappa = 0.2 / 0.5 = 0.4
    pairs = [(1, 1)] * 20 + [(1, 0)] * 5 + [(0, 1)] * 10 + [(0, 0)] * 15
    assert cohen_kappa(pairs) == pytest.approx(0.4)
    assert cohen_kappa([("a", "a")] * 3) is None and cohen_kappa([]) is None


def test_agreement_matches_sklearn():
    """scikit-learn comes with the test extra: this cross-check is never skipped."""
    from sklearn import metrics
    rng = random.Random(11)
    a = [rng.choice("PWF") for _ in range(60)]
    b = [x if rng.random() < 0.6 else rng.choice("PWF") for x in a]
    assert cohen_kappa(list(zip(a, b))) == pytest.approx(metrics.cohen_kappa_score(a, b))
    values = [rng.random() for _ in range(60)]
    ok = [v + rng.gauss(0, 0.3) > 0.5 for v in values]
    assert roc_auc(values, ok) == pytest.approx(metrics.roc_auc_score(ok, values))


def test_verdict_agreement_by_hand():
    rows = [("PASS", "PASS"), ("0.9", "FAIL"), ("FAIL", "PASS"), ("WARN", "WARN"),
            ("0.1", "FAIL"), ("FAIL", "ERROR"), (None, "PASS")]
    a = verdict_agreement(rows)
    # acceptable: PASS, 0.9. Accepted (PASS): rows 1 and 3. Agree: rows 1, 4, 5, 6 -> 4/6.
    # A (acceptable) yes 2 / no 4; B (PASS) yes 2 / no 4: p_e = (2·2 + 4·4)/36 = 20/36
    assert a.n == 6 and a.accuracy == pytest.approx(4 / 6)
    assert a.kappa == pytest.approx((4 / 6 - 20 / 36) / (1 - 20 / 36))
    assert a.confusion["PASS"] == {"PASS": 1, "WARN": 0, "FAIL": 1, "ERROR": 0}
    assert a.confusion["FAIL"] == {"PASS": 1, "WARN": 0, "FAIL": 1, "ERROR": 1}
    assert a.confusion["WARN"]["WARN"] == 1
    assert (a.acceptable_failed, a.unacceptable_passed) == (0.5, 0.25)


# ---- calibration's pure parts ------------------------------------------------

def _answers(*specs):
    return tuple(Answer(case_id, question, label, verdict)
                 for case_id, question, label, verdict in specs)


def test_metric_stats_count_missing_and_leave_out_unknown_case_ids():
    answers = _answers(("a", "q", "PASS", "PASS"), ("b", "q", "FAIL", "PASS"),
                       ("c", "q", "FAIL", "PASS"), ("d", "q", "PASS", "PASS"))
    stats = metric_stats(answers, {"a": 0.9, "b": 0.1, "c": None}, True)  # d: unknown
    assert (stats["n"], stats["missing"], stats["acceptable"]) == (2, 1, 1)
    assert (stats["auc"], stats["pairwise_accuracy"], stats["pairs"]) == (1.0, 1.0, 1)


def test_suggested_rules_take_the_best_auc_above_chance_and_are_checked():
    rows = [{"bot": "b", "metric": m, "auc": auc, "threshold": 0.5, "youden_j": j,
             "threshold_accuracy": 0.7, "higher_is_better": hib}
            for m, auc, j, hib in [("m1", 0.7, 0.4, True), ("m2", 0.9, 0.6, False),
                                   ("m3", 0.5, 0.1, True), ("m4", None, None, True),
                                   ("m5", 0.8, 0.0, True), ("m6", 0.6, 0.2, True),
                                   ("m7", 0.65, 0.3, True)]]
    rules = suggest_rules(rows, "b")
    assert [r["metric"] for r in rules] == ["m2", "m1", "m7"]
    assert rules[0] == {"metric": "m2", "above": 0.5, "verdict": "FAIL"}
    labels = BotLabels("b", _answers(("x", "q", "PASS", "PASS"), ("y", "q", "FAIL", "PASS"),
                                     ("z", "q", "FAIL", "ERROR")), 0,
                       {"m2": {"x": 0.2, "y": 0.8, "z": None}})
    check = check_rules(rules[:1], labels)
    # x PASS (0.2 not above 0.5), y FAIL, z stays ERROR: all three agree with the labels
    assert (check.n, check.accuracy) == (3, 1.0)
    assert check.confusion["FAIL"] == {"PASS": 0, "WARN": 0, "FAIL": 1, "ERROR": 1}


def test_default_bots_are_the_ones_answering_with_the_labelled_answer():
    manifest = {"run_id": "r", "bots": ["faq", "recorded"],
                "config": {"bots": [{"name": "faq", "type": "faq_match"},
                                    {"name": "recorded", "type": "precomputed"}]}}
    assert bots_to_calibrate(manifest, []) == ("recorded",)
    assert bots_to_calibrate(manifest, ["faq", "faq"]) == ("faq",)
    with pytest.raises(PostRunError, match="not a bot of run"):
        bots_to_calibrate(manifest, ["gpt"])
    manifest["config"]["bots"][1]["type"] = "chat"
    with pytest.raises(PostRunError, match="--bot"):
        bots_to_calibrate(manifest, [])


# ---- a real labelled run -----------------------------------------------------

RUN_ID, RUN_DATE = "cal", "2026-01-05"
SKY, LEGS = "What colour is the sky?", "How many legs does a spider have?"
PARIS = "Where is Paris?"
# case_id, question, expected, answer, label; and the values the metrics give
# (exact_match, keyword_recall = |E ∩ A| / |E| over token sets, completeness =
# share of the question's keywords in the answer: sky {colour, sky}, legs
# {legs, spider}, paris {paris}) and the verdict of the config's rules below.
CASES = [
    ("a1", SKY, "the sky is blue", "the sky is blue", "PASS", (1, 1.0, 0.5), "PASS"),
    ("a2", SKY, "the sky is blue", "sky blue", "0.9", (0, 0.5, 0.5), "PASS"),
    ("a3", SKY, "the sky is blue", "the grass is green", "FAIL", (0, 0.5, 0.0), "WARN"),
    ("a4", SKY, "the sky is blue", "sky is red", "warn", (0, 0.5, 0.5), "PASS"),
    ("b1", LEGS, "a spider has eight legs", "a spider has eight legs", "PASS", (1, 1.0, 1.0),
     "PASS"),
    ("b2", LEGS, "a spider has eight legs", "eight legs", 0.75, (0, 0.4, 0.5), "FAIL"),
    ("b3", LEGS, "a spider has eight legs", "a spider has six legs", "FAIL", (0, 0.8, 1.0),
     "PASS"),
    ("c1", PARIS, "Paris is in France", "Paris is in France", "PASS", (1, 1.0, 1.0), "PASS"),
    ("c2", PARIS, "Paris is in France", "in Texas", "0.2", (0, 0.25, 0.0), "FAIL"),
    ("c3", PARIS, "Paris is in France", "France", None, (0, 0.25, 0.0), "FAIL"),
    ("d1", "Who wrote Hamlet?", "Shakespeare wrote Hamlet", None, "FAIL", (None,) * 3, "ERROR"),
]
METRICS = ("exact_match", "keyword_recall", "completeness")
CONFIG = {"metrics": list(METRICS),
          "verdict": {"rules": [{"metric": "keyword_recall", "below": 0.5, "verdict": "FAIL"},
                                {"metric": "completeness", "below": 0.5, "verdict": "WARN"}]}}

# The hand computation. Labelled: 10 (c3 is not); acceptable (label > 0.5):
# a1, a2 (0.9), b1, b2 (0.75), c1; not: a3, a4 (WARN = 0.5), b3, c2 (0.2), d1.
# d1 has no answer, so its values are null (missing 1) and n = 9 per metric.
#
# keyword_recall, acceptable 1.0 1.0 1.0 0.5 0.4 vs unacceptable 0.5 0.5 0.8 0.25:
#   AUC: each 1.0 beats all 4 (12); 0.5 ties two 0.5 and beats 0.25 (2); 0.4 beats
#   0.25 (1) -> 15/20. Pairs within a question: sky a1 > a3, a4 (2), a2 ties a3, a4
#   (1); legs b1 > b3 (1), b2 < b3 (0); paris c1 > c2 (1) -> 5/7.
#   Cuts 0.25 .325 .45 .65 .9 2: (tp, tn) = (5,0) (5,1) (4,1) (4,3) (3,4) (0,4);
#   J = tp/5 + tn/4 - 1 is largest at 0.9: 3/5 + 4/4 - 1 = 0.6, accuracy 7/9.
# completeness, acceptable 0.5 0.5 1 0.5 1 vs unacceptable 0 0.5 1 0:
#   AUC: each 0.5 scores 2.5 (two wins, a tie), each 1 scores 3.5 -> 14.5/20.
#   Pairs: sky a1, a2 each win vs a3 and tie a4 (3 of 4); legs b1 ties b3 (½), b2
#   loses (0); paris 1 -> 4.5/7. Cuts 0 .25 .75 2: (5,0) (5,2) (2,3) (0,4): best
#   0.25 with J = 1 + 2/4 - 1 = 0.5, accuracy 7/9.
# exact_match, acceptable 1 0 1 0 1 vs unacceptable 0 0 0 0:
#   AUC: three 1s beat all 4 (12), two 0s tie all 4 (4) -> 16/20. Pairs: sky 2 + 1,
#   legs 1 + ½, paris 1 -> 5.5/7. Best cut 0.5: (3,4), J = 0.6, accuracy 7/9.
HAND_METRICS = {  # metric: (auc, pairwise accuracy, threshold, youden J)
    "exact_match": (16 / 20, 5.5 / 7, 0.5, 0.6),
    "keyword_recall": (15 / 20, 5 / 7, 0.9, 0.6),
    "completeness": (14.5 / 20, 4.5 / 7, 0.25, 0.5),
}
# Verdicts (label category × verdict), numbers: > 2/3 PASS, < 1/3 FAIL:
#   PASS labels a1 a2 b1 c1 -> PASS, b2 -> FAIL; WARN a4 -> PASS;
#   FAIL labels a3 -> WARN, b3 -> PASS, c2 -> FAIL, d1 -> ERROR.
HAND_CONFUSION = {"PASS": {"PASS": 4, "WARN": 0, "FAIL": 1, "ERROR": 0},
                  "WARN": {"PASS": 1, "WARN": 0, "FAIL": 0, "ERROR": 0},
                  "FAIL": {"PASS": 1, "WARN": 1, "FAIL": 1, "ERROR": 1}}
# Accepted (PASS) vs acceptable agree on a1 a2 a3 b1 c1 c2 d1: 7/10. Acceptable
# 5 yes / 5 no, PASS 6 yes / 4 no: p_e = (5·6 + 5·4)/100 = 0.5, kappa = 0.2/0.5.
# Acceptable given FAIL: b2 of 5; unacceptable given PASS: a4, b3 of 5.
HAND_VERDICT = {"n": 10, "unlabelled": 1, "acceptable": 5, "accuracy": 0.7, "kappa": 0.4,
                "acceptable_failed": 0.2, "unacceptable_passed": 0.4}
# Suggested: all three metrics (AUC order), FAIL below their cuts. On the same
# labels they PASS a1 b1 c1 only, fail the rest, d1 stays ERROR: agree on
# a1 a3 a4 b1 b3 c1 c2 d1 -> 8/10.
HAND_RULES = [{"metric": "exact_match", "below": 0.5, "verdict": "FAIL"},
              {"metric": "keyword_recall", "below": 0.9, "verdict": "FAIL"},
              {"metric": "completeness", "below": 0.25, "verdict": "FAIL"}]


def _write_run(folder: str, run_id: str, labels: bool = True) -> str:
    os.makedirs(folder, exist_ok=True)
    rows = [{"case_id": c, "question": q, "expected_answer": e, "answer": a,
             **({"label": None if label is None else str(label)} if labels else {})}
            for c, q, e, a, label, _, _ in CASES]
    cases = write_cases(os.path.join(folder, f"{run_id}.parquet"), rows)
    config = os.path.join(folder, "config.yaml")
    with open(config, "w", encoding="utf-8") as fh:
        yaml.safe_dump(CONFIG, fh)
    out = os.path.join(folder, "out")
    assert run(["run", "--input", cases, "--output", out, "--config", config,
                "--run-id", run_id, "--run-date", RUN_DATE]) == 0
    return out


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    """A labelled run, calibrated once: (output, printed text)."""
    out = _write_run(str(tmp_path_factory.mktemp("calibrate")), RUN_ID)
    return out, run_calibrate(out, RUN_ID)


def _calibration(out: str, run_id: str = RUN_ID) -> dict[str, dict]:
    """The run's calibration/ rows by metric, read back with hive partitioning."""
    rows = [r for r in read_rows(out, "calibration") if r["run_id"] == run_id]
    assert len({r["bot"] for r in rows}) == 1
    return {r["metric"]: r for r in rows}


def test_the_run_scored_what_the_hand_computation_assumes(calibrated):
    out, _ = calibrated
    scores = {(r["case_id"], r["metric"]): r["value"] for r in read_rows(out, "scores")}
    results = {r["case_id"]: r for r in read_rows(out, "results")}
    for case_id, *_, label, values, verdict in CASES:
        assert tuple(scores[case_id, m] for m in METRICS) == values, case_id
        assert results[case_id]["verdict"] == verdict, case_id


def test_metric_statistics_equal_the_hand_computation(calibrated):
    rows = _calibration(calibrated[0])
    assert set(rows) == {"verdict", *METRICS}
    for metric, (auc, pairwise, threshold, j) in HAND_METRICS.items():
        r = rows[metric]
        assert (r["n"], r["missing"], r["unlabelled"], r["acceptable"], r["pairs"]) == \
            (9, 1, 1, 5, 7), metric
        assert r["auc"] == pytest.approx(auc) and r["pairwise_accuracy"] == pytest.approx(pairwise)
        assert r["threshold"] == pytest.approx(threshold) and r["youden_j"] == pytest.approx(j)
        assert r["threshold_accuracy"] == pytest.approx(7 / 9) and r["higher_is_better"]
        assert r["accuracy"] is None and r["confusion"] is None


def test_verdict_agreement_equals_the_hand_computation(calibrated):
    v = _calibration(calibrated[0])["verdict"]
    assert {k: v[k] for k in HAND_VERDICT} == pytest.approx(HAND_VERDICT)
    assert json.loads(v["confusion"]) == HAND_CONFUSION
    assert v["auc"] is None and v["threshold"] is None


def test_duckdb_reads_the_calibration_table(calibrated):
    out, _ = calibrated
    glob = os.path.join(out, "calibration", "**", "*.parquet")
    got = duckdb.sql(f"select run_date, metric, auc, kappa from read_parquet('{glob}', "
                     f"hive_partitioning=true) where run_id = '{RUN_ID}' order by metric").fetchall()
    assert [(str(d), m) for d, m, _, _ in got] == [(RUN_DATE, m) for m in
                                                   sorted(("verdict", *METRICS))]
    assert dict((m, a) for _, m, a, _ in got)["keyword_recall"] == pytest.approx(0.75)
    assert dict((m, k) for _, m, _, k in got)["verdict"] == pytest.approx(0.4)
    table = ds.dataset(os.path.join(out, "calibration"), format="parquet",
                       partitioning="hive").to_table()
    assert table.num_rows == 4
    assert pq.read_schema(os.path.join(out, "calibration", f"run_date={RUN_DATE}",
                                       f"part-{RUN_ID}.0.parquet")).names[:3] == \
        ["run_id", "bot", "metric"]


def _rules_block(text: str) -> dict:
    lines = text.splitlines()
    start = lines.index("verdict:")
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("  otherwise:"))
    return yaml.safe_load("\n".join(lines[start:end + 1]))


def test_printout_suggests_a_rules_block_that_is_a_valid_config(calibrated, tmp_path):
    out, text = calibrated
    block = _rules_block(text)
    assert block["verdict"]["rules"] == HAND_RULES
    assert "in-sample): accuracy 0.800" in text
    assert "held-out labelled data" in text and "representative of production" in text
    assert "1 unlabelled (ignored)" in text
    config = tmp_path / "suggested.yaml"
    config.write_text(yaml.safe_dump({"metrics": list(METRICS), **block}))
    rules = load_config(str(config)).verdict.rules
    assert [(r.metric, r.below, r.verdict) for r in rules] == \
        [(r["metric"], r["below"], "FAIL") for r in HAND_RULES]


def test_page_holds_the_same_figures(calibrated):
    out, _ = calibrated
    with open(os.path.join(out, "runs", RUN_ID, "calibration.md"), encoding="utf-8") as fh:
        page = fh.read()
    assert page.startswith(f"# Calibration of run `{RUN_ID}` ({RUN_DATE})")
    assert "| keyword_recall | 9 | 1 | 0.750 | 0.714 (7) | >= 0.9 | 0.778 | 0.600 |" in page
    assert "| PASS | 4 | 0 | 1 | 0 |" in page and "| FAIL | 1 | 1 | 1 | 1 |" in page
    assert "Accuracy 0.700, Cohen's kappa 0.400" in page
    assert "```yaml\nverdict:\n  rules:\n    - {metric: exact_match, below: 0.5, verdict: FAIL}" \
        in page


def test_cli_exits_0_prints_and_a_rerun_replaces_the_file(calibrated, capsys):
    out, _ = calibrated
    assert run(["calibrate", "--output", out, "--run-id", RUN_ID]) == 0
    printed = capsys.readouterr().out
    assert _rules_block(printed)["verdict"]["rules"] == HAND_RULES
    assert files_under(os.path.join(out, "calibration")) == \
        [os.path.join(f"run_date={RUN_DATE}", f"part-{RUN_ID}.0.parquet")]
    assert len(_calibration(out)) == 4


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("evalbeam: error: ")
    return err[0]


def test_unknown_run_and_bot_exit_2_with_one_line(calibrated, capsys):
    out, _ = calibrated
    assert run(["calibrate", "--output", out, "--run-id", "nope"]) == 2
    assert "run nope has no completed attempt" in _one_error_line(capsys)
    assert run(["calibrate", "--output", out, "--run-id", RUN_ID, "--bot", "gpt"]) == 2
    assert "'gpt' is not a bot" in _one_error_line(capsys)
    assert run(["calibrate", "--output", out, "--run-id", "../x"]) == 2
    _one_error_line(capsys)


def test_missing_table_exits_2(calibrated, tmp_path, capsys):
    out = str(tmp_path / "out")
    shutil.copytree(calibrated[0], out)
    shutil.rmtree(os.path.join(out, "scores"))
    assert run(["calibrate", "--output", out, "--run-id", RUN_ID]) == 2
    err = _one_error_line(capsys)  # the file the marker lists, and that it is gone
    assert "its completion marker lists the scores/ file" in err and "missing" in err


def test_a_marker_without_config_is_named_as_corrupt_not_blamed_on_the_bots(calibrated, tmp_path,
                                                                            capsys):
    """Which bots are precomputed is in the marker's config: without it the
    command names the marker (exit 2), not 'no bot of type precomputed'."""
    out = str(tmp_path / "out")
    shutil.copytree(calibrated[0], out)
    path = os.path.join(out, "runs", RUN_ID, "manifest.json")
    with open(path, encoding="utf-8") as fh:
        manifest = json.load(fh)
    bot = manifest["bots"][0]
    del manifest["config"]
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(manifest, fh)
    assert run(["calibrate", "--output", out, "--run-id", RUN_ID]) == 2
    line = _one_error_line(capsys)
    assert f"corrupt manifest {path}: no 'config'" in line and "--bot" in line
    assert "no bot of type" not in line
    assert run(["calibrate", "--output", out, "--run-id", RUN_ID, "--bot", bot]) == 0


def test_rerun_without_labels_drops_stale_calibration_and_exits_2(tmp_path, capsys):
    out = _write_run(str(tmp_path), "again")
    assert run(["calibrate", "--output", out, "--run-id", "again"]) == 0
    page = os.path.join(out, "runs", "again", "calibration.md")
    assert os.path.exists(page)
    _write_run(str(tmp_path), "again", labels=False)  # the same run id, now unlabelled
    assert not os.path.exists(os.path.join(out, "calibration", f"run_date={RUN_DATE}",
                                           "part-again.0.parquet"))
    assert not os.path.exists(page)
    capsys.readouterr()
    assert run(["calibrate", "--output", out, "--run-id", "again"]) == 2
    line = _one_error_line(capsys)
    assert "run again has no labelled rows: add a `label` column" in line


def _handmade_run(out: str, answers: list[tuple], label_column: bool = True,
                  metric: str = "m", higher_is_better: bool | None = True) -> None:
    """Run "r" of one precomputed bot "b" and one metric (default "m"), written
    directly: answers are (case_id, label, verdict, value)."""
    def put(table: str, rows: list[dict], *partitions: str):
        folder = os.path.join(out, table, f"run_date={RUN_DATE}", *partitions)
        os.makedirs(folder)
        pq.write_table(pa.Table.from_pylist(rows),
                       os.path.join(folder, f"part-r.{'0' * 12}.0.parquet"))

    put("results", [{"run_id": "r", "case_id": c, "question": "q", "contexts": ["c"],
                     "verdict": v,
                     **({"label": lab} if label_column else {})}
                    for c, lab, v, _ in answers], "bot=b")
    put("scores", [{"run_id": "r", "case_id": c, "metric": metric, "value": val}
                   for c, _, _, val in answers], "bot=b")
    put("summary", [{"run_id": "r", "bot": "b", "suite": "*", "metric": metric,
                     "higher_is_better": higher_is_better}])
    write_marker(out, "r", RUN_DATE, bots=["b"], metrics=[metric],
                 config={"bots": [{"name": "b", "type": "precomputed"}]})


def test_repeated_case_ids_keep_their_verdicts_but_not_their_values(tmp_path):
    """Two rows share case_id "x": their scores cannot be told apart."""
    out = str(tmp_path / "out")
    _handmade_run(out, [("x", "PASS", "PASS", 0.9), ("x", "FAIL", "FAIL", 0.1),
                        ("y", "PASS", "PASS", 0.8), ("z", "FAIL", "PASS", 0.2)])
    text = run_calibrate(out, "r")
    rows = _calibration(out, "r")
    assert (rows["verdict"]["n"], rows["verdict"]["accuracy"]) == (4, 0.75)
    assert (rows["m"]["n"], rows["m"]["auc"]) == (2, 1.0)  # y (0.8) vs z (0.2) only
    assert "2 labelled answers have a case_id that repeats" in text


def test_rows_lost_to_unreadable_labels_are_counted_in_a_note(tmp_path):
    """A label that is not PASS, WARN, FAIL or a number in [0, 1] makes its row
    invalid (errors/, stage read): it is neither evaluated nor calibrated, and
    calibrate says how many, so its counts reconcile with the labels given."""
    rows = [{"case_id": c, "question": f"What does plan {c} cost?",
             "expected_answer": "10 dollars", "answer": a, "label": label}
            for c, a, label in (("a", "10 dollars", "PASS"), ("b", "no idea", "FAIL"),
                                ("c", "10 dollars", "maybe"), ("d", "no idea", "1.5"),
                                ("e", "10 dollars", None))]
    cases = write_cases(str(tmp_path / "c.parquet"), rows)
    out = str(tmp_path / "out")
    assert run(["run", "--input", cases, "--output", out, "--run-id", "r"]) == 0
    text = run_calibrate(out, "r")
    assert "2 labelled answers (1 acceptable, 1 not), 1 unlabelled" in text
    assert ("note: 2 input rows have a label that is not PASS, WARN, FAIL or a number in "
            "[0, 1]: they were not evaluated, so not calibrated (errors/, stage read)") in text


def test_results_without_a_label_column_mean_no_labels(tmp_path, capsys):
    out = str(tmp_path / "out")
    _handmade_run(out, [("x", None, "PASS", 0.9)], label_column=False)
    assert run(["calibrate", "--output", out, "--run-id", "r"]) == 2
    assert "run r has no labelled rows" in _one_error_line(capsys)


@pytest.mark.parametrize("label", ["PASS", "FAIL"])
def test_labels_of_one_kind_say_so_instead_of_blaming_the_metrics(tmp_path, label):
    """Every labelled answer acceptable (or every one not): AUC and thresholds
    need both kinds, so there is nothing to rank; the metrics are not at fault."""
    out = str(tmp_path / "out")
    _handmade_run(out, [(c, label, "PASS", v) for c, v in (("x", 0.9), ("y", 0.2), ("z", 0.5))])
    text = run_calibrate(out, "r")
    kind = "acceptable" if label == "PASS" else "unacceptable"
    assert (f"no suggested rules: every labelled answer is {kind}; AUC and thresholds need "
            "both acceptable and unacceptable ones") in text
    assert "better than chance" not in text
    assert "These rules are fitted" not in text  # there are no rules
    page = open(os.path.join(out, "runs", "r", "calibration.md")).read()
    assert f"None: every labelled answer is {kind}" in page and "better than chance" not in page


@pytest.mark.parametrize("summary_says", [None, True], ids=["null", "old-run-said-higher"])
def test_a_metric_with_no_direction_is_oriented_by_the_labels(tmp_path, summary_says):
    """answer_length has no better direction (summary/ null; a run written before
    that said higher): calibrate takes the side the labels favour. Here the short
    answers are the acceptable ones, so lower is better: AUC 1 (not 0), the
    threshold keeps the short side and the suggested rule fails the long answers."""
    out = str(tmp_path / "out")
    _handmade_run(out, [("a", "PASS", "PASS", 12.0), ("b", "PASS", "PASS", 20.0),
                        ("c", "FAIL", "PASS", 80.0), ("d", "FAIL", "PASS", 95.0),
                        ("e", "PASS", "PASS", 30.0)],
                  metric="answer_length", higher_is_better=summary_says)
    text = run_calibrate(out, "r")
    row = _calibration(out, "r")["answer_length"]
    assert (row["auc"], row["pairwise_accuracy"], row["youden_j"]) == (1.0, 1.0, 1.0)
    assert row["higher_is_better"] is False and row["threshold"] == 55.0
    assert "- {metric: answer_length, above: 55.0, verdict: FAIL}" in text
    assert ("note: bot b: answer_length has no better direction; the labels oriented it "
            "(lower values were more often acceptable), so its AUC 1.000 is max(AUC, 1 − AUC)"
            " and its threshold keeps the lower side") in text
    assert "answer_length ↓" in text and "<= 55" in text
    page = open(os.path.join(out, "runs", "r", "calibration.md")).read()
    assert "answer_length has no better direction; the labels oriented it" in page


def test_a_direction_free_metric_the_labels_cannot_orient_stays_higher():
    """One class only: no AUC, so nothing to orient by; the row says higher."""
    answers = _answers(("a", "q", "PASS", "PASS"), ("b", "q", "PASS", "PASS"))
    stats = metric_stats(answers, {"a": 10.0, "b": 50.0}, None)
    assert stats["auc"] is None and stats["higher_is_better"] is True
    longer = _answers(("a", "q", "FAIL", "PASS"), ("b", "q", "PASS", "PASS"))
    assert metric_stats(longer, {"a": 10.0, "b": 50.0}, None)["higher_is_better"] is True


# ---- one question over many documents (a summarisation set) -------------------

SUMMARIZE = "Summarize the document."
DOCS = {"d1": "The plant opened in 1990 in Ohio and employs 300 people.",
        "d2": "The council voted to close the library on Sundays from May."}
# Two documents asked the same question. Within each, the faithful summary has the
# higher keyword_recall against the reference; across documents it does not, so
# "all pairs" (the old behaviour when every row shares the question) mixes them.
SUMMARIES = [  # case_id, document, reference, answer, label
    ("s1", "d1", "plant opened 1990 ohio", "the plant opened", "PASS"),
    ("s2", "d1", "plant opened 1990 ohio", "a plant", "FAIL"),
    ("s3", "d2", "council voted close library", "council voted close library", "PASS"),
    ("s4", "d2", "council voted close library", "council voted close", "FAIL"),
]


def test_pairwise_is_within_a_question_and_its_contexts(tmp_path):
    """keyword_recall: s1 2/4 > s2 1/4; s3 4/4 > s4 3/4. Within each document both
    pairs are ordered right (2 of 2); across documents s1 (0.5) < s4 (0.75), so
    "all pairs" gave 3 of 4 (as the AUC does)."""
    rows = [{"case_id": c, "question": SUMMARIZE, "contexts": [DOCS[d]], "expected_answer": e,
             "answer": a, "label": label} for c, d, e, a, label in SUMMARIES]
    cases = write_cases(str(tmp_path / "sum.parquet"), rows)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"metrics": ["keyword_recall"]}))
    out = str(tmp_path / "out")
    assert run(["run", "--input", cases, "--output", out, "--config", str(config),
                "--run-id", "sum", "--run-date", RUN_DATE]) == 0
    run_calibrate(out, "sum")
    row = _calibration(out, "sum")["keyword_recall"]
    assert (row["pairwise_accuracy"], row["pairs"]) == (1.0, 2)
    assert row["auc"] == pytest.approx(3 / 4)


def test_a_run_whose_every_metric_is_null_says_so_instead_of_blaming_the_metrics(tmp_path):
    """Every recorded answer missing (the bot's errors are in errors/): each
    metric has n 0, yet calibrate said 'no suggested rules: no metric ranks
    the labelled answers better than chance', as if the metrics had been
    measured and found useless."""
    rows = [{"case_id": c, "question": f"What does plan {c} cost?",
             "expected_answer": "10 dollars", "answer": None, "label": label}
            for c, label in (("a", "PASS"), ("b", "FAIL"), ("c", "PASS"), ("d", "FAIL"))]
    cases = write_cases(str(tmp_path / "c.parquet"), rows)
    out = str(tmp_path / "out")
    assert run(["run", "--input", cases, "--output", out, "--run-id", "r"]) == 0
    text = run_calibrate(out, "r")
    said = ("no metric has a value for any labelled answer (every one is null: errors/ says "
            "why)")
    assert f"no suggested rules: {said}" in text and "better than chance" not in text, text
    page = open(os.path.join(out, "runs", "r", "calibration.md")).read()
    assert f"None: {said}." in page


def test_unlabelled_rows_contexts_are_not_loaded(tmp_path, monkeypatch):
    """A nightly run holds many answers and few labels. calibrate reads the
    question and contexts of the labelled rows only: an earlier read took them
    for every row and split by label afterwards, so a run of a million rows
    with a thousand labels held every row's contexts in memory as Python
    objects (here 2,000 rows of 4 KB contexts for 2 labels)."""
    from pipeline.postrun import calibrate as calibrate_module
    from transforms.publish.completed import CompletedRun
    out = str(tmp_path / "out")
    answers = [(f"c{i}", ("PASS", "FAIL")[i] if i < 2 else None, "PASS", i / 2000)
               for i in range(2000)]
    _handmade_run(out, answers)
    loaded = []
    original = CompletedRun.read

    def read(self, spec, columns=None, where=None, dataset=None):
        table = original(self, spec, columns, where, dataset)
        if "contexts" in table.column_names:
            loaded.append(table.num_rows)
        return table

    monkeypatch.setattr(CompletedRun, "read", read)
    result = calibrate_module.calibrate(out, "r")
    assert loaded == [2]
    verdict = next(r for r in result.rows if r["metric"] == "verdict")
    assert (verdict["n"], verdict["unlabelled"]) == (2, 1998)
