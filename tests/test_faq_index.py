import math

import numpy as np
import pytest

from transforms.answer.faq_index import FaqIndex, check_faq_file, load_faq
from transforms.text.tokens import token_set
from tests.conftest import FAQ_ROWS, write_cases


def brute_force(questions, q):
    """Reference: binary cosine over the union vocabulary, first row wins ties."""
    a = token_set(q)
    best, best_sim = None, 0.0
    for i, fq in enumerate(questions):
        b = token_set(fq)
        sim = len(a & b) / math.sqrt(len(a) * len(b)) if a and b else 0.0
        if sim > best_sim:
            best, best_sim = i, sim
    return best, best_sim


def test_match_returns_best_answer_with_details():
    idx = FaqIndex([r["question"] for r in FAQ_ROWS], [r["answer"] for r in FAQ_ROWS])
    m = idx.match("how much does the pro plan cost?")
    assert m.answer == "The Pro plan costs $12 per month." and 0 < m.similarity <= 1
    assert idx.match("zebra xylophone") is None


def test_ties_go_to_the_first_row():
    idx = FaqIndex(["refund policy", "policy refund", "refund"], ["first", "second", "third"])
    assert idx.match("Refund policy!").answer == "first"


def test_agrees_with_brute_force_on_random_data():
    rng = np.random.default_rng(7)
    vocab = [f"w{i}" for i in range(60)]
    faq = [" ".join(rng.choice(vocab, rng.integers(1, 8))) for _ in range(200)]
    idx = FaqIndex(faq, [f"a{i}" for i in range(200)])
    for _ in range(300):
        q = " ".join(rng.choice(vocab, rng.integers(1, 8)))
        want_row, want_sim = brute_force(faq, q)
        got = idx.match(q)
        assert (got.row if got else None) == want_row
        if got:
            assert got.similarity == pytest.approx(want_sim, rel=1e-6)


def test_faq_from_csv_and_parquet(tmp_path):
    pq_path = write_cases(str(tmp_path / "faq.parquet"), FAQ_ROWS)
    csv_path = tmp_path / "faq.csv"
    csv_path.write_text('question,answer\n"How much, really?","It costs $12, per month."\n')
    assert load_faq(pq_path)[0] == [r["question"] for r in FAQ_ROWS]
    assert load_faq(str(csv_path)) == (["How much, really?"], ["It costs $12, per month."])
    bad = tmp_path / "bad.csv"
    bad.write_text("q,a\nx,y\n")
    with pytest.raises(ValueError, match="header columns question, answer"):
        check_faq_file(str(bad))
    with pytest.raises(ValueError, match="not found"):
        check_faq_file(str(tmp_path / "missing.csv"))
