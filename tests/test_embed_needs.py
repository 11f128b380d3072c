"""EmbedTurns embeds only what the configured semantic metrics read (issue 13):
no token vectors without bertscore, no sentence pass without answer_relevance,
no question without a metric that reads it."""
from __future__ import annotations

from pipeline.config import EmbeddingsConfig
from schemas.records import EvalCase, Turn
from transforms.enrich import embed as E
from transforms.score.scoring import SCORERS


class Recording:
    """Wraps the embedder of the DoFn and records the texts of each kind of call."""

    def __init__(self, inner):
        self.inner, self.vec, self.tok = inner, [], []

    def embed_counted(self, texts):
        self.vec.extend(texts)
        return self.inner.embed_counted(texts)

    def embed_tokens(self, texts, special_tokens=False):
        self.tok.extend(texts)
        return self.inner.embed_tokens(texts, special_tokens=special_tokens)


QUESTION = "How long is the refund window?"
EXPECTED = "Refunds are accepted within 30 days."
ANSWER = "You have 30 days. Refunds go back to your card."


def _enrich(metrics: list[str]) -> tuple[Recording, dict]:
    needs = frozenset(f for s in SCORERS if s.name in metrics for f in s.features)
    dofn = E.EmbedTurns(EmbeddingsConfig("hashing"), {}, needs)
    dofn.setup()
    dofn._embedder = rec = Recording(dofn._embedder)
    turn = Turn(EvalCase("c1", QUESTION, EXPECTED), "bot", ANSWER)
    (out,) = list(dofn.process([turn]))
    return rec, out.features


def test_bertscore_alone_takes_token_vectors_only():
    rec, features = _enrich(["bertscore"])
    assert rec.vec == [] and sorted(rec.tok) == sorted([EXPECTED, ANSWER])
    assert set(features) == {E.TOK_EXPECTED, E.TOK_ANSWER}


def test_answer_similarity_alone_embeds_reference_and_answer_only():
    rec, features = _enrich(["answer_similarity"])
    assert rec.tok == [] and sorted(rec.vec) == sorted([EXPECTED, ANSWER])
    assert set(features) == {E.VEC_EXPECTED, E.VEC_ANSWER}


def test_answer_relevance_alone_embeds_question_and_sentences_only():
    rec, features = _enrich(["answer_relevance"])
    assert rec.tok == []
    assert rec.vec == [QUESTION, "You have 30 days.", "Refunds go back to your card."]
    assert set(features) == {E.VEC_QUESTION, E.SENTENCES}
    assert features[E.SENTENCES][0] == 2

