"""Semantic metric maths on hand-made vectors (no model needed)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from transforms.score.metrics.semantic import (BertIdf, answer_relevance, answer_similarity,
                                               bertscore, bertscore_idf, greedy_match)
from transforms.text.sentences import answer_sentences as split_sentences


def test_answer_similarity_is_cosine_clamped_at_zero():
    assert answer_similarity(np.array([1.0, 0]), np.array([1.0, 1.0])).value == pytest.approx(
        1 / math.sqrt(2))
    opposite = answer_similarity(np.array([1.0, 0]), np.array([-1.0, 0]))
    assert opposite.value == 0.0 and opposite.details["cosine"] == pytest.approx(-1)
    assert answer_similarity(np.zeros(3), np.ones(3)).value == 0.0


def _naive_bertscore(ref, cand, ref_w, cand_w):
    """The definition written out with loops (what greedy_match must equal)."""
    def cos(a, b):
        return float(np.dot(a, b) / np.linalg.norm(a) / np.linalg.norm(b))
    p = sum(w * max(0, max(cos(c, r) for r in ref)) for c, w in zip(cand, cand_w)) / sum(cand_w)
    r = sum(w * max(0, max(cos(r_, c) for c in cand)) for r_, w in zip(ref, ref_w)) / sum(ref_w)
    return p, r, 2 * p * r / (p + r)


def test_greedy_match_equals_the_definition():
    rng = np.random.default_rng(0)
    for _ in range(50):
        ref, cand = rng.normal(size=(rng.integers(1, 9), 8)), rng.normal(size=(rng.integers(1, 9), 8))
        ref_w, cand_w = rng.random(len(ref)) + 0.1, rng.random(len(cand)) + 0.1
        got = greedy_match(ref, cand, ref_w, cand_w)
        assert got == pytest.approx(_naive_bertscore(ref, cand, ref_w, cand_w), abs=1e-12)


def test_bertscore_identical_and_disjoint():
    vecs = np.eye(4)
    same = bertscore(["a", "b"], vecs[:2], ["a", "b"], vecs[:2])
    assert same.value == pytest.approx(1.0)
    assert same.details["precision"] == pytest.approx(1) == same.details["recall"]
    disjoint = bertscore(["a", "b"], vecs[:2], ["c", "d"], vecs[2:])
    assert disjoint.value == 0.0
    partial = bertscore(["a", "b"], vecs[:2], ["a"], vecs[:1])  # precise but incomplete
    assert partial.details["precision"] == pytest.approx(1.0)
    assert partial.details["recall"] == pytest.approx(0.5)
    assert partial.value == pytest.approx(2 / 3)


def test_bertscore_empty_sides():
    assert bertscore([], np.zeros((0, 3)), ["a"], np.ones((1, 3))).value is None
    empty_answer = bertscore(["a"], np.ones((1, 3)), [], np.zeros((0, 3)))
    assert empty_answer.value == 0.0 and empty_answer.details["note"] == "empty answer"


def test_bertscore_idf_is_bert_score_formula_and_weights_rare_tokens():
    idf = bertscore_idf([["the", "refund"], ["the", "plan"], ["the", "window"]])
    w = idf.weights(["the", "refund", "unseen"])
    assert w == pytest.approx([math.log(4 / 4), math.log(4 / 2), math.log(4 / 1)])
    vecs = np.eye(3)
    # the answer gets "the" right but misses "refund": with idf the miss weighs more
    plain = bertscore(["the", "refund"], vecs[:2], ["the"], vecs[:1])
    weighted = bertscore(["the", "refund"], vecs[:2], ["the"], vecs[:1], idf)
    assert weighted.details["recall"] < plain.details["recall"]
    assert BertIdf(*idf.__getstate__()).weights(["plan"]) == pytest.approx(idf.weights(["plan"]))


def test_sentences_and_answer_relevance():
    assert split_sentences("Refunds take 30 days. Is that ok?\nYes!  ") == [
        "Refunds take 30 days.", "Is that ok?", "Yes!"]
    assert split_sentences("第一句。第二句。") == ["第一句。", "第二句。"]
    q = np.array([1.0, 0.0])
    rel = answer_relevance(q, np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]]), 3)
    # the better half (2 of 3) of 1, 0 and a negative clamped to 0
    assert rel.value == pytest.approx(1 / 2)
    capped = answer_relevance(q, np.array([[1.0, 0.0]]), 100)
    assert "first 1 of 100" in capped.details["note"]
    empty = answer_relevance(q, np.zeros((0, 2)), 0)
    assert empty.value == 0.0 and empty.details["note"] == "empty answer"


def test_list_markers_are_not_sentences():
    # "1." once became a sentence of its own, with ~0.05 similarity, dragging the mean down
    assert split_sentences("Steps:\n1. Open Settings.\n2. Tap Reset.\n- Done") == [
        "Steps:", "Open Settings.", "Tap Reset.", "Done"]
    assert split_sentences("1.\n2)\n•") == []


def test_multi_part_answer_is_not_penalised_for_its_background_sentences():
    q = np.array([1.0, 0.0])
    direct = answer_relevance(q, np.array([[1.0, 0.0]]), 1)
    full = answer_relevance(q, np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 1.0]]), 4)
    assert full.value > 0.9 * direct.value  # the mean over all four was ~0.5


def test_restating_the_question_is_not_an_answer():
    q = np.array([1.0, 0.0])
    restated = answer_relevance(q, np.array([[1.0, 0.0]]), 1, novelty=0.0)
    answered = answer_relevance(q, np.array([[0.8, 0.6]]), 1, novelty=0.8)
    assert restated.value == 0.0 and restated.details["note"] == "restates the question"
    assert answered.value > restated.value


def test_novelty_of_a_restatement_is_low():
    from transforms.score.metrics.coverage import novelty
    q = "When did Voyager 1 reach interstellar space?"
    assert novelty(q, "So you are asking when Voyager 1 reached interstellar space.") < 0.3
    assert novelty(q, "It crossed the heliopause on 25 August 2012, 121 AU from the Sun.") > 0.6


def test_values_stay_on_the_unit_scale_when_a_self_cosine_rounds_above_one():
    """Issue 22 item 22: bertscore gave 1.0000000000000002 for an answer equal to
    its reference, and the report's charts dropped the metric (above 1)."""
    v = np.array([[1.0, 1.0, 4.0], [1.0, 1.0, 4.0]]) / 7  # |v|^2 / |v|^2 rounds to 1 + 2e-16
    unit = v / np.linalg.norm(v, axis=1, keepdims=True)
    assert float(unit[0] @ unit[0]) > 1.0  # the rounding this test is about
    result = bertscore(["a", "b"], v, ["a", "b"], v.copy())
    assert result.value == 1.0 and result.details["precision"] == 1.0
    assert result.details["recall"] == 1.0
    assert answer_relevance(v[0] * 2, v, 2).value == 1.0
    assert answer_similarity(v[0], v[1]).value == 1.0
