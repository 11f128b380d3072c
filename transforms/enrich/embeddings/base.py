"""The embedder interface shared by the local, hashing and endpoint embedders."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence, runtime_checkable

import numpy as np


MAX_TOKEN_VECTORS = 512  # token vectors kept per text (BERTScore's matrix is n x m)


@dataclass
class TokenVectors:
    """Contextual vectors of one text's tokens (what BERTScore matches).

    tokens: wordpieces without padding, and without [CLS]/[SEP] unless
    `embed_tokens(..., special_tokens=True)` asked for them;
    ids: their vocabulary ids; vectors: (len(tokens), dim) float32, raw (not
    normalised) last-layer hidden states. A long text keeps its first tokens
    only (the local model: 254 wordpieces, the others MAX_TOKEN_VECTORS), so one
    huge answer costs bounded memory; `total` then says how many it had.
    """
    tokens: list[str]
    ids: list[int]
    vectors: np.ndarray
    total: int | None = None  # the text's token count when it was cut to fewer (else None)


class EmbeddingError(RuntimeError):
    """Some texts of a call got no vector: a request failed after its retries, or
    a spend cap refused it (the message is then the cap's: "budget reached: …").
    `done`: what the call did embed (text -> its row of `embed`, or its
    TokenVectors from `embed_tokens`); `reasons`: text -> why it has none."""

    def __init__(self, message: str, done: dict | None = None,
                 reasons: dict[str, str] | None = None):
        super().__init__(message)
        self.done, self.reasons = dict(done or {}), dict(reasons or {})

    def reason(self, text: str) -> str:
        """Why `text` got no vector (the call's message when it does not say)."""
        return self.reasons.get(text, str(self))


@runtime_checkable
class Embedder(Protocol):
    name: str   # e.g. "local:all-MiniLM-L6-v2", "hashing:256"
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, rows L2-normalised; "" gives a valid vector.
        A remote embedder raises EmbeddingError when texts got no vector."""
        ...

    def embed_tokens(self, texts: Sequence[str], special_tokens: bool = False
                     ) -> list[TokenVectors]:
        """One TokenVectors per text, in input order; special_tokens keeps [CLS]/[SEP]
        where the model has them (bert_score matches them, at idf weight 0)."""
        ...


def l2_normalise(x: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    """Rows divided by max(norm, eps), like torch.nn.functional.normalize."""
    norms = np.sqrt(np.einsum("ij,ij->i", x, x, dtype=np.float32))[:, None]
    return (x / np.maximum(norms, np.float32(eps))).astype(np.float32, copy=False)


def unit_length(vector: list[float]) -> list[float]:
    """The vector at length 1, computed in float64 after dividing by its largest
    |value|: kept as float32 later, values of 1e39 became inf and of 1e-46 zero,
    and the cosine of a vector so spoilt with any other was 0, a score. A cosine
    does not change; all zeros stay zeros (unusable, said by the caller). numpy:
    a Python loop took ~0.2 ms per 1,536-d vector, minutes of CPU a million texts."""
    x = np.asarray(vector, dtype=np.float64)
    top = float(np.max(np.abs(x))) if x.size else 0.0
    if not top:
        return vector
    x = x / top
    return (x / np.sqrt(np.dot(x, x))).tolist()
