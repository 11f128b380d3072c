"""HashingEmbedder: deterministic, dependency-free (numpy only) text vectors.

Feature hashing of lower-cased word unigrams and character trigrams (of each
word, with "<" and ">" as word boundaries). Each feature is hashed with
blake2b (stable across processes, unlike Python's salted `hash()`): the first
8 bytes pick the bucket, one more bit the sign. Sentence vectors are the signed
counts, L2-normalised; a text without any word (e.g. "" or "!!!") gets the
vector of a fixed "<empty>" feature so every row is a valid unit vector.

`embed_tokens` gives one vector per word, each word hashed on its own (not
contextual), unnormalised like the raw hidden states of a real model. Meant for
fast tests and dry runs, not for quality.
"""
from __future__ import annotations

import hashlib
import re
from collections import Counter
from functools import lru_cache
from typing import Sequence

import numpy as np

from transforms.enrich.embeddings.base import MAX_TOKEN_VECTORS, TokenVectors, l2_normalise

_WORD = re.compile(r"\w+", re.UNICODE)
_EMPTY = "<empty>"


@lru_cache(maxsize=200_000)
def _feature(feature: str, dim: int) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=9).digest()
    index = int.from_bytes(digest[:8], "little") % dim
    return index, (1.0 if digest[8] & 1 else -1.0)


def _word_features(word: str) -> list[str]:
    padded = f"<{word}>"
    return [f"w:{word}"] + [f"c:{padded[i:i + 3]}" for i in range(len(padded) - 2)]


class HashingEmbedder:
    def __init__(self, dim: int = 256):
        if dim <= 0:
            raise ValueError("dim must be positive")
        self.dim = dim
        self.name = f"hashing:{dim}"

    def tokenize(self, text: str) -> list[str]:
        return _WORD.findall(text.lower())

    def _add(self, row: np.ndarray, features: list[str]) -> None:
        for f in features:
            index, sign = _feature(f, self.dim)
            row[index] += sign

    def _raw(self, text: str) -> np.ndarray:
        row = np.zeros(self.dim, dtype=np.float32)
        # each distinct word hashed once, weighted by its count (the same sums:
        # a 10 MB answer costs its distinct words, not 1.6 million lookups)
        for word, n in Counter(m.group() for m in _WORD.finditer(text.lower())).items():
            for f in _word_features(word):
                index, sign = _feature(f, self.dim)
                row[index] += sign * n
        if not row.any():
            self._add(row, [_EMPTY])
        return row

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i] = self._raw(text)
        return l2_normalise(out)

    def embed_tokens(self, texts: Sequence[str], special_tokens: bool = False
                     ) -> list[TokenVectors]:
        """Non-contextual word vectors (no special tokens exist here) of at most
        MAX_TOKEN_VECTORS words per text (`total` counts all when it had more)."""
        result = []
        for text in texts:
            low = text.lower()
            words = [m.group() for _, m in zip(range(MAX_TOKEN_VECTORS), _WORD.finditer(low))]
            total = None
            if len(words) == MAX_TOKEN_VECTORS:
                n = sum(1 for _ in _WORD.finditer(low))
                total = n if n > MAX_TOKEN_VECTORS else None
            vectors = np.zeros((len(words), self.dim), dtype=np.float32)
            for j, word in enumerate(words):
                self._add(vectors[j], _word_features(word))
            ids = [_feature(f"w:{w}", self.dim)[0] for w in words]
            result.append(TokenVectors(words, ids, vectors, total))
        return result
