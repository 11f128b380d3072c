"""The pure helpers of bench/rarity_signal_candidates.py, computed by hand."""
import math
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bench.fit_groundedness import load_sets
from bench.rarity_signal_candidates import (answer_words, idf_weight, weighted_shares,
                                             with_facts)
from bench.validity_changes import CORE


def test_the_weighted_shares_weigh_the_missing_words_by_rarity():
    # sentence 1: a common word found (weight 1), a rare word missing (weight 3);
    # sentence 2: a common word missing (weight 1)
    words = [[("great", "great", True), ("zorblax", "zorblax", False)],
             [("really", "realli", False)]]
    weight = {"great": 1.0, "zorblax": 3.0, "really": 1.0}
    a, b = weighted_shares(words, lambda w, s: weight[w])
    assert a == pytest.approx((3 + 1) / (1 + 3 + 1))
    assert b == pytest.approx(1.0)  # sentence 2 lacks all its weight
    a1, b1 = weighted_shares(words, lambda w, s: 1.0)
    assert (a1, b1) == (pytest.approx(2 / 3), 1.0)
    assert weighted_shares([[("x", "x", True)]], lambda w, s: 0.0) == (0.0, 0.0)


def test_the_answer_words_are_the_content_words_looked_up_by_stem():
    row = {"contexts": ["The garden grows roses."], "answer": "The gardens grow tulips. Yes."}
    assert answer_words(row) == [[("gardens", "garden", True), ("grow", "grow", True),
                                  ("tulips", "tulip", False)]]


def test_idf_takes_each_fitted_set_alike():
    sets = {"a": {"df": Counter(x=1), "docs": 1}, "b": {"df": Counter(), "docs": 3}}
    idf = idf_weight(sets, ["a", "b"])
    assert idf("w", "x") == pytest.approx(-math.log((1.5 / 2 + 0.5 / 4) / 2))
    assert idf_weight(sets, ["a"])("w", "x") == pytest.approx(-math.log(0.75))


def test_load_sets_keeps_the_rows_it_measured_in_order(tmp_path):
    rows = [{"case_id": c, "question": "", "contexts": ["Roses grow in the garden."],
             "answer": a, "tags": ["split:dev"], "label": "PASS"}
            for c, a in (("1", "Roses grow."), ("2", "yes"), ("3", "Tulips grow."))]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "s.parquet")
    s = load_sets(str(tmp_path), keep_rows=True)["s"]
    assert [r["case_id"] for r in s["rows"]] == s["case_id"] == ["1", "3"]
    assert "rows" not in load_sets(str(tmp_path))["s"]


def test_with_facts_splits_the_rows_lacking_a_word_by_its_rarity():
    sets = {n: {"words": [], "x": np.zeros((0, 4))} for n in CORE}
    sets["begin"] = {"words": [[[("zorblax", "zorblax", False)]],     # rare missing, a fact
                               [[("zorblax", "zorblax", False)]],     # rare missing, none
                               [[("great", "great", False)]],         # common missing, none
                               [[("great", "great", True)]]],         # nothing missing: left out
                     "x": np.array([[0, 0, 0, 0.7], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0.7]])}
    assert with_facts(sets, lambda w, st: w == "zorblax") == (0.5, 0.0)
