"""The `endpoint` embedder: any OpenAI-compatible /embeddings service through
the remote-call layer (rate limits, retries, usage and cost like every call).

Texts are sent `request_size` at a time, the requests of one call
concurrently. BERTScore needs token vectors; an API gives one vector per text,
so each unique word is embedded once as its own text (non-contextual, like
the `hashing` embedder). Empty texts are not sent (APIs reject them): they get
a zero vector, whose cosine with anything is 0.

With the call cache on, each text's vector is cached under its own content
address (endpoint, model, text), not per request: Beam batches differ from
run to run, so a per-request key would miss on a re-run of the same inputs.

A request that fails (or that a spend cap refuses) costs only its own texts:
the EmbeddingError raised carries the vectors the other requests brought
(`done`) and, per text without one, the reason. One text over the model's
input limit fails its whole request (OpenAI's 400 "maximum context length",
TEI's 413 "must have less than 512 tokens"): such a request is sent again in
halves down to that text, whose one request fails alone (never retried); each
request, the refused ones too, is a call in usage/.
"""
from __future__ import annotations

import asyncio
from collections import Counter
from typing import Sequence

import numpy as np

from transforms.enrich.embeddings.base import (  # noqa: F401 (EmbeddingError is also read from here)
    MAX_TOKEN_VECTORS, EmbeddingError, TokenVectors, l2_normalise, unit_length)
from transforms.remote.batches import ask_in_parts
from transforms.remote.cache import cache_key
from transforms.remote.client import CallRecord, attributed, refused_as_too_long
from transforms.remote.openai_api import embeddings, embeddings_path
from transforms.remote.runtime import AsyncRuntime
from transforms.text.tokens import tokenize


class EndpointEmbedder:
    def __init__(self, runtime: AsyncRuntime, endpoint: str, model: str,
                 request_size: int = 64, log=None, metrics: Sequence[str] = ()):
        self.runtime, self.model, self.request_size = runtime, model, request_size
        self.log, self.metrics = log, tuple(metrics)  # the metrics its calls serve
        self.client = runtime.client(endpoint)
        self.name = f"endpoint:{endpoint}/{model}"
        self.dim: int | None = None  # known after the first answer

    def _key(self, text: str) -> str:
        c = self.client
        return cache_key(c.cfg.base_url, embeddings_path(c, self.model), c.params, self.model,
                         {"model": self.model, "input": text})

    async def _embed_all(self, texts: list[str]
                         ) -> tuple[dict[str, list[float]], list, list, dict[str, str]]:
        """(vectors found in the call cache, their records, [(chunk, vectors or None,
        record)] sent, text -> why its vector cannot be used). A vector is cached
        only when usable: of the endpoint's dimension (the one it gave before in
        this process, else in the cache, else most often in these replies), not
        all zeros (see _unusable)."""
        cache = self.client.cache
        found, hits = {}, []
        if cache is not None:
            looked = await asyncio.gather(*(cache.lookup(self._key(t)) for t in texts))
            for t, (v, tier) in zip(texts, looked):
                if v is not None and t not in found and _unusable(v, self.dim) is None:
                    found[t] = v
                    hits.append(self.client.hit_record(self.model, "embeddings", tier))
        todo = [t for t in texts if t not in found]
        chunks = [todo[i:i + self.request_size] for i in range(0, len(todo), self.request_size)]
        sent = [x for part in await asyncio.gather(*(self._send(c) for c in chunks))
                for x in part]
        fresh = [v for _, got, _ in sent for v in got or []]
        dim = self.dim or _most_common_length(list(found.values()) or fresh)
        unusable = {t: why for chunk, got, _ in sent
                    for t, v in zip(chunk, got or []) if (why := _unusable(v, dim))}
        if found:  # a cached vector of another dimension than the call's (self.dim unknown)
            unusable.update({t: why for t, v in found.items() if (why := _unusable(v, dim))})
        if cache is not None:
            await asyncio.gather(*(cache.store(self._key(t), v) for chunk, got, _ in sent
                                   for t, v in zip(chunk, got or []) if t not in unusable))
        return found, hits, sent, unusable

    async def _send(self, texts: list[str]
                    ) -> list[tuple[list[str], list[np.ndarray] | None, CallRecord]]:
        """[(texts, their vectors or None, record)] per request made for texts: a
        request refused because one of its texts is over the model's input limit
        is sent again in halves, one over a TEI's batch limit in batches of it
        (ask_in_parts: the refused request stays with no texts)."""
        parts = await ask_in_parts(self.client, texts,
                                   lambda part: embeddings(self.client, self.model, part),
                                   refused_as_too_long)
        return [(part, got if got is None else [unit_length(v) for v in got], rec)
                for part, got, rec in parts]

    def _vectors(self, texts: list[str]) -> tuple[dict[str, np.ndarray], dict[str, str]]:
        """(text -> its L2-normalised vector, text -> why it has none): an empty
        text's vector is zero; a failed request's texts have the reason."""
        to_send = [t for t in texts if t.strip()]
        by_text, hits, sent, unusable = self.runtime.run(attributed(
            self._embed_all(to_send), None, self.metrics)) if to_send else (
            {}, [], [], {})
        for record in hits:  # one cache hit per text served from the cache
            self.runtime.record(record, self.log)
        failed: dict[str, str] = {t: f"embeddings reply unusable: {why}"
                                  for t, why in unusable.items()}
        for text in unusable:
            by_text.pop(text, None)
        for chunk, got, record in sent:
            self.runtime.record(record, self.log)
            if got is None:
                failed.update(dict.fromkeys(chunk, _failure(record)))
            else:
                by_text.update((t, v) for t, v in zip(chunk, got) if t not in unusable)
        if by_text:
            self.dim = len(next(iter(by_text.values())))
        have = [t for t in dict.fromkeys(texts) if t not in failed]
        rows = np.zeros((len(have), self.dim or 1), dtype=np.float32)
        for i, text in enumerate(have):
            if text.strip():
                rows[i] = by_text[text]
        return dict(zip(have, l2_normalise(rows))), failed  # an empty text's row stays zero

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) float32, L2-normalised; raises EmbeddingError (with the vectors
        it got) if a request failed."""
        texts = list(texts)
        vectors, failed = self._vectors(texts)
        if failed:
            raise EmbeddingError(next(iter(failed.values())), vectors, failed)
        return np.stack([vectors[t] for t in texts]) if texts else np.zeros(
            (0, self.dim or 1), np.float32)

    tokenize = staticmethod(tokenize)  # words: an API has no wordpieces to offer

    def embed_tokens(self, texts: Sequence[str], special_tokens: bool = False
                     ) -> list[TokenVectors]:
        """Non-contextual word vectors (no special tokens exist here) of at most
        MAX_TOKEN_VECTORS words per text (`total` counts all when it had more)."""
        words = [self.tokenize(t) for t in texts]
        per_text = [w[:MAX_TOKEN_VECTORS] for w in words]
        vocab = sorted({tok for toks in per_text for tok in toks})
        index = {tok: i for i, tok in enumerate(vocab)}
        vectors, failed = self._vectors(vocab)
        done: dict[str, TokenVectors] = {}
        reasons: dict[str, str] = {}  # a text some of whose words got no vector: the first's reason
        for text, toks, w in zip(texts, per_text, words):
            missing = [failed[t] for t in toks if t in failed]
            if missing:
                reasons[text] = missing[0]
                continue
            done[text] = TokenVectors(
                toks, [index[t] for t in toks],
                np.stack([vectors[t] for t in toks]) if toks
                else np.zeros((0, self.dim or 1), np.float32),
                len(w) if len(w) > len(toks) else None)
        if reasons:
            raise EmbeddingError(next(iter(reasons.values())), done, reasons)
        return [done[t] for t in texts]


def _failure(record: CallRecord) -> str:
    """Why a failed request's texts have no vector: a cap's refusal is no failure
    (its rows say the cap, as the judge's do); a text over the model's input
    limit is named as such (its request held it alone)."""
    if record.budget_refused:
        return record.error
    if refused_as_too_long(record):
        return f"text over the embedding model's input limit: {record.error}"
    return f"embeddings failed: {record.error}"


def _most_common_length(vectors: list) -> int | None:
    lengths = Counter(len(v) for v in vectors)
    return lengths.most_common(1)[0][0] if lengths else None


def _unusable(vector, dim: int | None) -> str | None:
    """Why an embedding cannot be used (None: it can): a length other than the
    endpoint's (a replica serving another model; one reply's check cannot see
    it), or all zeros (what some servers send for a text they failed on: its
    cosine with everything would be 0, a score, not an error)."""
    if dim is not None and len(vector) != dim:
        return f"a vector of {len(vector)} dimensions where the endpoint's have {dim}"
    if not any(vector):
        return "a vector of zeros"
    return None
