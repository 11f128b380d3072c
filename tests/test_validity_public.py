"""bench/validity.py's public-benchmark report: the baselines, balanced accuracy,
AUC and the abstaining verdict's figures, checked by hand, then on a small
labelled evalbeam run against a computation written out here."""
from __future__ import annotations

import itertools
import os

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from bench import validity
from bench.validity_public import (balanced_accuracy, bigram_precision, content_word_share,
                                   idf_table, selective, tfidf_cosine)
from transforms.score.metrics.groundedness import long_answer_cut, verdict_cuts

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_baselines_by_hand():
    ctx = ["The sky is blue over Paris."]
    # content words: sky, green (the, is: stop words); sky found -> 1/2
    assert content_word_share("The sky is green", ctx) == 0.5
    # bigrams: (the sky) (sky is) (is green): two found -> 2/3
    assert bigram_precision("The sky is green", ctx) == pytest.approx(2 / 3)
    # one word: the content-word share
    assert bigram_precision("Paris", ctx) == 1.0
    assert content_word_share("the is", ctx) is None  # no content word
    idf = idf_table(["a b", "a c"])  # df(a) 2, df(b) 1, unseen 0; n = 2
    assert idf("a") == pytest.approx(1.0)
    assert idf("b") == pytest.approx(1 + __import__("math").log(3 / 2))
    # identical texts: cosine 1; disjoint: 0
    assert tfidf_cosine("b c", ["c b"], idf) == pytest.approx(1.0)
    assert tfidf_cosine("b", ["c"], idf) == 0.0


def test_balanced_accuracy_and_selective_by_hand():
    labels = [True, True, True, False, False]
    assert balanced_accuracy(labels, [True, False, True, False, True]) == \
        pytest.approx((2 / 3 + 1 / 2) / 2)
    assert balanced_accuracy([True, True], [True, False]) is None
    s = selective(labels, ["PASS", "WARN", "FAIL", "FAIL", "PASS"])
    assert s["decided"] == pytest.approx(4 / 5)
    assert s["decided_accuracy"] == pytest.approx(2 / 4)  # PASS/good, FAIL/bad right
    assert s["bad_passed"] == 0.5 and s["good_failed"] == pytest.approx(1 / 3)


KNOWLEDGE = "The Eiffel Tower in Paris was finished in 1889 and is 330 metres tall."
CASES = [  # answer, label
    ("The Eiffel Tower was finished in 1889.", "PASS"),
    ("The Eiffel Tower is 330 metres tall.", "PASS"),
    ("It is in Paris.", "PASS"),
    ("The Eiffel Tower was finished in 1925 by Gustave Klimt.", "FAIL"),
    ("The tower is made of glass and stands in Rome.", "FAIL"),
    ("Bananas are yellow and grow in Ecuador.", "FAIL"),
]


def _brute_auc(values, labels, higher_is_better):
    pos = [v for v, y in zip(values, labels) if y]
    neg = [v for v, y in zip(values, labels) if not y]
    sign = 1 if higher_is_better else -1
    wins = sum(1.0 if sign * (p - n) > 0 else 0.5 if p == n else 0.0
               for p, n in itertools.product(pos, neg))
    return wins / (len(pos) * len(neg))


def test_report_of_a_small_labelled_run(tmp_path):
    rows = [{"case_id": f"toy:{i}", "question": "Tell me about the Eiffel Tower.",
             "contexts": [KNOWLEDGE], "answer": a, "suite": "toy",
             "tags": ["set:toy", "task:dialogue", f"split:{'test' if i != 6 else 'dev'}"],
             "label": label} for i, (a, label) in enumerate(CASES + [("dev row", "PASS")])]
    path = str(tmp_path / "toy.parquet")
    pq.write_table(pa.Table.from_pylist(rows), path)
    work = tmp_path / "work"
    work.mkdir()
    # the default verdict held out: groundedness and the cut-offs as a fit without
    # the set would give them (here chosen by hand)
    refit = {"scores": {f"toy:{i}": v for i, v in enumerate([0.9, 0.6, 0.3, 0.05, 0.5, 0.95])},
             "cuts": {"fail_below": 0.1, "pass_from": 0.55}}
    report = validity.measure_public(ROOT, str(work), {"toy": {"path": path,
                                                               "committed": True}},
                                     refitted={"toy": refit})
    toy = report["sets"]["toy"]
    # by groundedness PASS PASS WARN | FAIL WARN PASS for labels good good good | bad bad
    # bad; the whole preset applies: unsupported_facts (Ecuador is in no context)
    # holds the last one at WARN
    held = toy["verdict_held_out"]
    assert held["decided"] == pytest.approx(3 / 6)
    assert held["decided_accuracy"] == 1.0
    assert held["bad_passed"] == 0.0 and held["good_failed"] == 0.0
    assert (held["fail_below"], held["pass_from"]) == (0.1, 0.55)
    # the run's own tables, read back, computed here by hand
    out = str(work / "public")
    results = ds.dataset(os.path.join(out, "results"), format="parquet",
                         partitioning="hive").to_table().to_pylist()
    scores = ds.dataset(os.path.join(out, "scores"), format="parquet",
                        partitioning="hive").to_table().to_pylist()
    assert len(results) == 6  # the test split only
    label = {r["case_id"]: r["label"] == "PASS" for r in results}
    verdict = {r["case_id"]: r["verdict"] for r in results}
    ids = sorted(label)
    decided = [c for c in ids if verdict[c] in ("PASS", "FAIL")]
    assert toy["n"] == 6 and toy["supported"] == 3
    assert toy["verdict"]["decided"] == pytest.approx(len(decided) / 6)
    if decided:
        right = sum(1 for c in decided if (verdict[c] == "PASS") == label[c])
        assert toy["verdict"]["decided_accuracy"] == pytest.approx(right / len(decided))
    assert toy["verdict"]["bad_passed"] == pytest.approx(
        sum(1 for c in ids if not label[c] and verdict[c] == "PASS") / 3)
    assert toy["verdict"]["good_failed"] == pytest.approx(
        sum(1 for c in ids if label[c] and verdict[c] == "FAIL") / 3)
    # the shipped default verdict: groundedness against the fitted cut-offs decides
    # (no reference here; unsupported_facts only holds a PASS at WARN)
    ground = {r["case_id"]: r["value"] for r in scores if r["metric"] == "groundedness"}
    facts = {r["case_id"]: r["value"] for r in scores if r["metric"] == "unsupported_facts"}
    chars = {r["case_id"]: r["value"] for r in scores if r["metric"] == "answer_length"}
    fail_below, pass_from = verdict_cuts()
    edge, pass_long = long_answer_cut() or (float("inf"), pass_from)
    assert [verdict[c] for c in ids] == [
        "FAIL" if ground[c] < fail_below else "WARN" if ground[c] < pass_from or (
            chars[c] > edge and ground[c] < pass_long) or facts[c] > 0.5
        else "PASS" for c in ids]
    accepted = [verdict[c] == "PASS" for c in ids]
    good_acc = sum(a for a, c in zip(accepted, ids) if label[c]) / 3
    bad_rej = sum(not a for a, c in zip(accepted, ids) if not label[c]) / 3
    decision = toy["decision"]
    if decision["cut"] is None:  # the verdict's PASS is the decision
        assert decision["balanced_accuracy"] == pytest.approx((good_acc + bad_rej) / 2)
    value = {(r["case_id"], r["metric"]): r["value"] for r in scores}
    assert value["toy:5", "unsupported_facts"] > 0.5
    lower = validity.lower_is_better(out, "validity-public")
    for metric in ("hallucination", "key_fact_recall"):
        vals = [value[c, metric] for c in ids]
        assert toy["metrics"][metric] == pytest.approx(
            _brute_auc(vals, [label[c] for c in ids], metric not in lower)), metric
    # the bigram baseline: answers 1-2 copy the knowledge, answer 6 shares nothing
    share = [bigram_precision(dict(zip(ids, [a for a, _ in CASES]))[c], [KNOWLEDGE])
             for c in ids]
    assert toy["baselines"]["bigram_precision"] == pytest.approx(
        _brute_auc(share, [label[c] for c in ids], True))


def test_the_report_shows_the_held_out_verdict_and_judges_the_goals_by_it():
    from bench.validity_report import public_section
    verdict = {"n": 10, "decided": 0.5, "decided_accuracy": 0.8, "bad_passed": 0.3,
               "good_failed": 0.1, "pass_ba": 0.6}
    held = dict(verdict, bad_passed=0.05, fail_below=0.1, pass_from=0.55,
                long_answers={"above_chars": 140, "pass_from": 0.7})
    sets = {n: {"committed": True, "task": "qa", "n": 10, "supported": 5, "metrics": {},
                "null": [], "baselines": dict.fromkeys(("content_word_share",
                                                        "bigram_precision", "tfidf_cosine")),
                "decision": {"metric": "groundedness", "cut": 0.3, "balanced_accuracy": 0.7},
                "verdict": verdict, "verdict_held_out": held}
            for n in ("begin", "q2")}
    lodo = {n: {"n": 10, "auc": 0.8, "bigram_auc": 0.7, "balanced_accuracy": 0.7}
            for n in sets}
    text = "\n".join(public_section({"public": {"sets": sets, "leave_one_set_out": lodo}}))
    assert ("| begin | 10 | 0.1 / 0.55 (0.7 above 140 chars) | 0.500 | 0.800 | 0.050 | 0.100 |"
            in text)
    # the goal is judged held out: 5% unsupported PASS, not the shipped cut-offs' 30%
    assert "mean 0.050, worst 0.050 | met |" in text


def test_the_verdict_rules_section_includes_the_candidate_rule_page(tmp_path):
    from bench.validity_report import verdict_rules_section
    rules, candidates = tmp_path / "rules.md", tmp_path / "cand.md"
    rules.write_text("| a |\n|---|\n")
    assert verdict_rules_section(str(rules), str(candidates))[-2:] == ["|---|", ""]
    candidates.write_text("`cmd`: finding\n")
    assert verdict_rules_section(str(rules), str(candidates))[-4:] == [
        "### A second FAIL rule (measured, not shipped)", "", "`cmd`: finding", ""]


def test_the_ablation_section_includes_the_embedding_candidates_page(tmp_path):
    from bench.validity_report import ablation_section
    ablation, candidates = tmp_path / "ablation.md", tmp_path / "emb.md"
    cross, rare = str(tmp_path / "cross.md"), str(tmp_path / "rare.md")
    spans = str(tmp_path / "spans.md")
    pages = [str(candidates), cross, rare, spans]
    assert ablation_section(str(ablation), pages) == []
    ablation.write_text("| a |\n|---|\n")
    assert ablation_section(str(ablation), pages)[-2:] == ["|---|", ""]
    candidates.write_text("`cmd`: finding\n")
    assert ablation_section(str(ablation), pages)[-4:] == [
        "### Meaning rather than words: the embedder as a groundedness signal "
        "(measured, not shipped)", "", "`cmd`: finding", ""]
    (tmp_path / "cross.md").write_text("`xenc`: finding\n")
    assert ablation_section(str(ablation), pages)[-8:] == [
        "### Meaning rather than words: the embedder as a groundedness signal "
        "(measured, not shipped)", "", "`cmd`: finding", "",
        "### Reading the answer against its source: MiniLM as a cross-encoder "
        "(measured, not shipped)", "", "`xenc`: finding", ""]
    (tmp_path / "rare.md").write_text("`rare`: finding\n")
    assert ablation_section(str(ablation), pages)[-4:] == [
        "### Rare words the contexts lack: rarity-weighted support (measured, not shipped)",
        "", "`rare`: finding", ""]
    (tmp_path / "spans.md").write_text("`spans`: finding\n")
    assert ablation_section(str(ablation), pages)[-4:] == [
        "### Stitched from the source: copied runs, and summaries that copy (measured, not "
        "shipped)", "", "`spans`: finding", ""]


def test_embedding_alignment_by_hand():
    """bench/embedding_signal_candidates.alignment on token vectors made by hand
    ([CLS] and [SEP] rows first and last; sentence vectors are their means)."""
    import numpy as np
    from bench.embedding_signal_candidates import alignment
    cls, sep = [0.0, 0.0, 1.0], [0.0, 0.0, -1.0]
    ctx = [np.array([cls, [1.0, 0.0, 0.0], [1.0, 0.0, 0.0], sep])]  # mean (0.5, 0, 0)
    exact = np.array([cls, [2.0, 0.0, 0.0], sep])                   # same direction
    half = np.array([cls, [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], sep])   # one token off
    sentence, tokens = alignment([exact, half], ctx)
    # sentences: exact's mean (2/3, 0, 0) cosine 1; half's mean (0.25, 0.25, 0) cosine 0.7071
    assert sentence == pytest.approx(2 ** -0.5)
    # tokens: cosines 1 (exact), 1 and 0 (half): mean 2/3
    assert tokens == pytest.approx(2 / 3)


def test_joint_fail_cuts_take_the_second_rule_only_where_it_fails_more_within_the_goals():
    """joint_cuts (bench/fail_rule_candidates.py) by hand: 10 supported and 10
    unsupported rows per set, goals 10% mean / 20% worst."""
    import numpy as np
    from bench.fail_rule_candidates import NONE, joint_cuts
    y = np.array([True] * 10 + [False] * 10)
    p = np.full(20, 0.5)  # the score separates nothing: its cut FAILs all or none
    h = np.array([0.0] * 9 + [0.95] + [0.97] * 10)  # one supported row is flagged
    # t = 0.5 FAILs the 10 unsupported rows and 1 of 10 supported: at the 10% goal
    assert joint_cuts([(p, h, y)], 0.10, 0.20) == (0.5, 0.5)
    # no room for that supported row (h = 0.95): the lowest t that spares it
    assert joint_cuts([(p, h, y)], 0.05, 0.10) == (0.95, 0.5)
    # a rule that can only FAIL nothing, or too much, stays off
    assert joint_cuts([(p, np.full(20, 0.99), y)], 0.05, 0.10) == (NONE, 0.5)
