"""TF-IDF / Jaccard relevance, the IDF table, and completeness."""
from __future__ import annotations

import math
import pickle
import random

import pytest

from transforms.score.metrics.relevance import (
    IdfTable,
    completeness,
    document_terms,
    lexical_relevance,
)
from transforms.text.terms import keywords

CORPUS = [
    "How do I get a refund for my order?",
    "What is the price of the Pro plan?",
    "How do I reset my password?",
    "Can I change my order after payment?",
]


@pytest.fixture(scope="module")
def idf() -> IdfTable:
    return IdfTable.fit(CORPUS)


# --- IdfTable ---------------------------------------------------------------

def test_idf_follows_sklearn_smooth_idf(idf):
    # N = 4. "refund" is in 1 document, "order" in 2, "my" in 3, "how" in 2.
    assert idf.n_docs == 4
    assert idf.idf("refund") == pytest.approx(math.log(5 / 2) + 1)
    assert idf.idf("order") == pytest.approx(math.log(5 / 3) + 1)
    assert idf.idf("my") == pytest.approx(math.log(5 / 4) + 1)
    # Unseen terms have df = 0: the largest weight, ln(1 + N) + 1.
    assert idf.idf("zebra") == pytest.approx(math.log(5) + 1)
    assert idf.idf("zebra") > idf.idf("refund") > idf.idf("order") > idf.idf("my") > 1.0


def test_idf_of_a_term_in_every_document_is_one():
    table = IdfTable.fit(["a cat", "a dog", "a bird"])
    assert table.idf("a") == 1.0


def test_document_terms_are_unique_tokens():
    assert document_terms("My order, my ORDER!") == {"my", "order"}
    assert document_terms("") == set()


def test_from_document_frequencies_equals_fit(idf):
    df: dict[str, int] = {}
    for text in CORPUS:
        for term in document_terms(text):
            df[term] = df.get(term, 0) + 1
    assert IdfTable.from_document_frequencies(df, len(CORPUS)) == idf


def test_from_document_frequencies_rejects_impossible_counts():
    with pytest.raises(ValueError):
        IdfTable.from_document_frequencies({"x": 5}, 3)
    with pytest.raises(ValueError):
        IdfTable.from_document_frequencies({"x": -1}, 3)
    with pytest.raises(ValueError):
        IdfTable.from_document_frequencies({}, -1)


def test_idf_table_pickles_and_stays_compact():
    rng = random.Random(0)
    df = {f"term{i}": rng.randint(1, 1000) for i in range(20_000)}
    table = IdfTable.from_document_frequencies(df, 1000)
    blob = pickle.dumps(table)
    clone = pickle.loads(blob)
    assert clone == table and clone.idf("term7") == table.idf("term7")
    # Only terms and integer counts travel: ~ a dozen bytes per term, no floats.
    assert len(blob) < 20 * len(df)


def test_empty_idf_table_works():
    table = IdfTable.fit([])
    assert table.n_docs == 0 and table.idf("x") == 1.0
    assert lexical_relevance("refund", "refund", table).value == pytest.approx(1.0)


# --- lexical_relevance ------------------------------------------------------

def test_identical_texts_are_fully_relevant(idf):
    result = lexical_relevance("How do I get a refund?", "how do i get a REFUND", idf)
    assert result.value == pytest.approx(1.0)
    assert result.details["cosine"] <= 1.0


def test_disjoint_texts_score_zero(idf):
    result = lexical_relevance("How do I get a refund?", "Bananas grow in tropical climates.", idf)
    assert result.value == 0.0 and result.error is None


def test_partial_overlap_against_hand_computed_tfidf(idf):
    question = "refund order order"
    answer = "refund policy"
    # Hand computation from the definition: tf = raw counts, weight = tf * idf, L2-normalised.
    w_refund, w_order, w_policy = idf.idf("refund"), idf.idf("order"), idf.idf("policy")
    q_norm = math.hypot(1 * w_refund, 2 * w_order)
    a_norm = math.hypot(w_refund, w_policy)
    cosine = (w_refund * w_refund) / (q_norm * a_norm)
    jaccard = 1 / 3  # {refund} / {refund, order, policy}
    result = lexical_relevance(question, answer, idf)
    assert result.details["cosine"] == pytest.approx(cosine)
    assert result.details["jaccard"] == pytest.approx(jaccard)
    assert result.value == pytest.approx((cosine + jaccard) / 2)


def test_sharing_a_rare_word_beats_sharing_a_common_one(idf):
    question = "my refund"
    rare = lexical_relevance(question, "refund", idf)   # shares the rare word
    common = lexical_relevance(question, "my", idf)     # shares the common word
    assert rare.details["jaccard"] == common.details["jaccard"]
    assert rare.value > common.value


def test_empty_answer_is_a_real_zero(idf):
    for answer in ("", "   ", "?!"):
        result = lexical_relevance("How do I get a refund?", answer, idf)
        assert result.value == 0.0 and result.error is None


@pytest.mark.parametrize("question", ["", "   ", "???"])
def test_question_without_tokens_is_null(idf, question):
    result = lexical_relevance(question, "some answer", idf)
    assert result.value is None and "question" in result.error


def test_relevance_other_scripts(idf):
    arabic = lexical_relevance("ما هي سياسة الاسترداد", "سياسة الاسترداد ثلاثون يوما", idf)
    assert 0.0 < arabic.value < 1.0
    hebrew = lexical_relevance("מה מדיניות ההחזרים", "מדיניות ההחזרים היא שלושים יום", idf)
    assert 0.0 < hebrew.value < 1.0
    chinese = lexical_relevance("退款政策是什么", "退款政策是什么", idf)
    assert chinese.value == pytest.approx(1.0)


def test_relevance_megabyte_answer(idf):
    """Its CPU time: python bench/megabyte_inputs.py (no time limits in tests)."""
    answer = "refund order policy days " * 50_000
    result = lexical_relevance("How do I get a refund for my order?", answer, idf)
    assert 0.0 < result.value < 1.0


# --- completeness -----------------------------------------------------------

def test_completeness_share_of_question_keywords():
    question = "refund annual plans invoices"
    assert keywords(question) == ["refund", "annual", "plans", "invoices"]  # no stop words
    result = completeness(question, "An annual plan can be refunded within 30 days.")
    assert result.value == pytest.approx(3 / 4)
    # matching is on Porter stems: "refunded" covers "refund", "plan" covers "plans"
    assert result.details["found"] == ["refund", "annual", "plans"]
    assert result.details["missing"] == ["invoices"]


def test_completeness_ignores_stop_words_of_the_question():
    full = completeness("What is the refund policy for annual plans?", "Refund policy: annual plans, 30 days.")
    assert full.value == 1.0
    assert "what" not in full.details["found"] and "the" not in full.details["found"]


def test_completeness_null_without_keywords():
    result = completeness("What is it?", "It is a plan.")
    assert result.value is None and "keywords" in result.error


def test_completeness_empty_answer_is_zero():
    result = completeness("refund annual plans", "")
    assert result.value == 0.0 and result.error is None


def test_completeness_other_scripts():
    # Arabic words are keywords (Arabic stop words come from the stop-words package).
    result = completeness("سياسة الاسترداد", "سياسة الاسترداد ثلاثون يوما")
    assert result.value == 1.0
    # Ideographs are tokens one by one, so the same words inside a longer run match.
    assert completeness("退款政策", "我们的退款政策").value == 1.0


def test_completeness_uses_the_questions_language_stop_words():
    # German function words ("wann", "das", "und") are not keywords to cover.
    result = completeness("Wann wurde das Museum gebaut und eröffnet?",
                          "Das Museum wurde 1889 gebaut und eröffnet.")
    assert "wann" not in result.details["found"] + result.details["missing"]
    assert "das" not in result.details["found"] + result.details["missing"]
    assert result.value == 1.0
