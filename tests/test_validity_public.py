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
    report = validity.measure_public(ROOT, str(work), {"toy": {"path": path,
                                                               "committed": True}})
    toy = report["sets"]["toy"]
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
    accepted = [verdict[c] == "PASS" for c in ids]
    good_acc = sum(a for a, c in zip(accepted, ids) if label[c]) / 3
    bad_rej = sum(not a for a, c in zip(accepted, ids) if not label[c]) / 3
    decision = toy["decision"]
    if decision["cut"] is None:  # the verdict's PASS is the decision
        assert decision["balanced_accuracy"] == pytest.approx((good_acc + bad_rej) / 2)
    value = {(r["case_id"], r["metric"]): r["value"] for r in scores}
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
