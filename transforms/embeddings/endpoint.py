"""The `endpoint` embedder: any OpenAI-compatible /embeddings service through
the remote-call layer (rate limits, retries, usage and cost like every call).

Texts are sent `request_size` at a time, the requests of one call
concurrently. BERTScore needs token vectors; an API gives one vector per text,
so each unique word is embedded once as its own text (non-contextual, like
the `hashing` embedder). Empty texts are not sent (APIs reject them): they get
a zero vector, whose cosine with anything is 0.
"""
from __future__ import annotations

import asyncio
from typing import Sequence

import numpy as np

from transforms.embeddings.base import TokenVectors
from transforms.remote.openai_api import embeddings
from transforms.remote.runtime import AsyncRuntime
from transforms.text import tokenize


class EmbeddingError(RuntimeError):
    """The endpoint could not embed a batch after its retries."""


class EndpointEmbedder:
    def __init__(self, runtime: AsyncRuntime, endpoint: str, model: str,
                 request_size: int = 64, log=None):
        self.runtime, self.model, self.request_size = runtime, model, request_size
        self.log = log
        self.client = runtime.client(endpoint)
        self.name = f"endpoint:{endpoint}/{model}"
        self.dim: int | None = None  # known after the first answer

    async def _embed_all(self, texts: list[str]) -> list:
        chunks = [texts[i:i + self.request_size] for i in range(0, len(texts), self.request_size)]
        return await asyncio.gather(*(embeddings(self.client, self.model, c) for c in chunks))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) float32, L2-normalised; raises EmbeddingError if a request failed."""
        texts = list(texts)
        to_send = [t for t in texts if t.strip()]
        vectors: list[list[float]] = []
        for got, record in self.runtime.run(self._embed_all(to_send)) if to_send else []:
            self.runtime.record(record, self.log)
            if got is None:
                raise EmbeddingError(f"embeddings failed: {record.error}")
            vectors.extend(got)
        if vectors:
            self.dim = len(vectors[0])
        out = np.zeros((len(texts), self.dim or 1), dtype=np.float32)
        sent = iter(vectors)
        for i, text in enumerate(texts):
            if text.strip():
                out[i] = next(sent)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)

    def tokenize(self, text: str) -> list[str]:
        return tokenize(text)

    def embed_tokens(self, texts: Sequence[str], special_tokens: bool = False
                     ) -> list[TokenVectors]:
        """Non-contextual word vectors (no special tokens exist here)."""
        per_text = [self.tokenize(t) for t in texts]
        vocab = sorted({tok for toks in per_text for tok in toks})
        index = {tok: i for i, tok in enumerate(vocab)}
        table = self.embed(vocab) if vocab else np.zeros((0, self.dim or 1), np.float32)
        return [TokenVectors(toks, [index[t] for t in toks],
                             table[[index[t] for t in toks]] if toks
                             else np.zeros((0, table.shape[1]), np.float32))
                for toks in per_text]
