"""CachingEmbedder: per-call dedupe + a bounded LRU cache around any Embedder.

Within one `embed` call the texts are deduplicated; the distinct texts not yet
cached are sent to the inner embedder in batches of `batch_size`; rows come
back in input order. The cache is keyed by a blake2b hash of the UTF-8 text
(16 bytes, so long texts cost no more memory than short ones) and holds at most
`max_items` vectors, least recently used evicted first. Thread-safe: the lock
guards the cache only, never the inner (possibly slow or remote) call.

Counters, per distinct text of a call: `hits` (already cached), `misses`
(had to be embedded); `embedded_batches` counts calls to the inner embed.
`embed_tokens` results are deduplicated within the call and kept in a second
LRU bounded by bytes (`max_token_bytes`, 64 MiB by default: token matrices
are large), so a reference repeated across batches is run once. When the
inner model's sentence vector is the mean of its token vectors
(`sentence_from_tokens`, the local MiniLM), the sentence vectors of those
texts are derived from that same forward pass and cached, so a text needing
both (expected answer, answer) is run once, not twice. A text the inner model
read the start of only (`embed_counted`: the local MiniLM, the multilingual
model) keeps its length with its vector, cached or not, so a cache hit says it
too.

When the inner embedder raises EmbeddingError for some texts (a remote
request failed), what it did embed is cached and the error is raised again
with every vector of the call that is known (`done`), so a caller keeps them.
"""
from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Sequence

import numpy as np

from transforms.enrich.embeddings.base import Embedder, EmbeddingError, TokenVectors


def text_key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class _Lru:
    """A map bounded by the total weight of its values (1 per value, or bytes),
    least recently used evicted first. Not locked: the caller holds a lock."""

    def __init__(self, budget: int, weight=lambda value: 1):
        self.budget, self._weight = budget, weight
        self._items: OrderedDict = OrderedDict()
        self.total = 0

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key) -> bool:
        return key in self._items

    def get(self, key):
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key, value) -> None:
        """Add a value not yet held (one heavier than the whole budget is not kept)."""
        weight = self._weight(value)
        if key in self._items or weight > self.budget:
            return
        self._items[key] = value
        self.total += weight
        while self.total > self.budget:
            _, old = self._items.popitem(last=False)
            self.total -= self._weight(old)

    def clear(self) -> None:
        self._items.clear()
        self.total = 0


class CachingEmbedder:
    def __init__(self, inner: Embedder, max_items: int = 100_000, batch_size: int = 64,
                 max_token_bytes: int = 64 << 20):
        if batch_size <= 0 or max_items < 0:
            raise ValueError("batch_size must be > 0 and max_items >= 0")
        self.inner = inner
        self.batch_size = batch_size
        self._cache = _Lru(max_items)          # text key -> (vector, (length, read[, unit]) if cut)
        self._tokens = _Lru(max_token_bytes, lambda tv: tv.vectors.nbytes)  # -> TokenVectors
        self._lock = threading.Lock()
        self.hits = self.misses = self.token_hits = 0
        self.embedded_batches = 0

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim  # an endpoint embedder may only know it after a call

    def __len__(self) -> int:
        return len(self._cache)

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_counted(texts)[0]

    def embed_counted(self, texts: Sequence[str]
                      ) -> tuple[np.ndarray, dict[str, tuple]]:
        """embed's rows, and {text: (its tokens, the tokens read)} for the texts
        the inner model cut to its input length ((its characters, the characters
        read, "characters") from the multilingual model; only an inner model with
        `embed_counted` says: the local ones; an endpoint's reply does not)."""
        keys = [text_key(t) for t in texts]
        unique: dict[bytes, str] = {}
        for k, t in zip(keys, texts):
            unique.setdefault(k, t)
        found: dict[bytes, tuple] = {}  # key -> (row, (tokens, read) or None)
        with self._lock:
            for k in unique:
                hit = self._cache.get(k)
                if hit is not None:
                    found[k] = hit
            self.hits += len(found)
            self.misses += len(unique) - len(found)
        todo = [(k, t) for k, t in unique.items() if k not in found]
        errors: list[EmbeddingError] = []
        counted = getattr(self.inner, "embed_counted", None)
        for start in range(0, len(todo), self.batch_size):
            chunk = todo[start:start + self.batch_size]
            cut: dict = {}
            try:
                batch = [t for _, t in chunk]
                rows, cut = counted(batch) if counted else (self.inner.embed(batch), cut)
                got = list(zip(chunk, np.asarray(rows, dtype=np.float32)))
            except EmbeddingError as exc:  # keep what the other requests brought
                errors.append(exc)
                got = [((k, t), exc.done[t]) for k, t in chunk if t in exc.done]
            with self._lock:
                self.embedded_batches += 1
                for i, ((k, _), row) in enumerate(got):
                    # own the row: never pin a batch
                    found[k] = hit = (np.array(row, dtype=np.float32), cut.get(i))
                    self._cache.put(k, hit)
        if errors:
            raise _partial(errors, {unique[k]: hit[0] for k, hit in found.items()})
        cut_texts = {unique[k]: hit[1] for k, hit in found.items() if hit[1]}
        if not keys:
            dim = self.inner.dim or 0
            return np.zeros((0, dim), dtype=np.float32), cut_texts
        return np.stack([found[k][0] for k in keys]).astype(np.float32, copy=False), cut_texts

    def embed_tokens(self, texts: Sequence[str], special_tokens: bool = False
                     ) -> list[TokenVectors]:
        keys = {t: (text_key(t), special_tokens) for t in dict.fromkeys(texts)}
        if not keys:
            return []
        by_text: dict[str, TokenVectors] = {}
        with self._lock:
            for t, k in keys.items():
                got = self._tokens.get(k)
                if got is not None:
                    by_text[t] = got
            self.token_hits += len(by_text)
        todo = [t for t in keys if t not in by_text]
        error = None
        if todo:
            try:
                fresh = dict(zip(todo, self.inner.embed_tokens(todo,
                                                               special_tokens=special_tokens)))
            except EmbeddingError as exc:  # keep what the other requests brought
                error, fresh = exc, {t: exc.done[t] for t in todo if t in exc.done}
            by_text.update(fresh)
            pooled = getattr(self.inner, "sentence_from_tokens", False) and special_tokens
            with self._lock:
                for t, tv in fresh.items():
                    if tv.vectors.base is not None:  # own it: never pin a whole batch
                        tv = TokenVectors(tv.tokens, tv.ids, tv.vectors.copy(), tv.total)
                    self._tokens.put(keys[t], tv)
                    if pooled and len(tv.vectors):  # read: the wordpieces, [CLS]/[SEP] not
                        cut = (tv.total, len(tv.vectors) - 2) if tv.total else None
                        self._cache.put(keys[t][0], (_pooled(tv.vectors), cut))
        if error is not None:
            raise _partial([error], by_text)
        return [by_text[t] for t in texts]


def _partial(errors: list[EmbeddingError], done: dict) -> EmbeddingError:
    """One EmbeddingError for a call: the first error's message, every vector
    the call has (`done`), every text's reason."""
    reasons = {t: why for exc in errors for t, why in exc.reasons.items() if t not in done}
    return EmbeddingError(str(errors[0]), done, reasons)


def _pooled(vectors: np.ndarray) -> np.ndarray:
    """Mean pooling over every token ([CLS] and [SEP] included, as
    sentence-transformers pools) + L2 normalisation = the sentence vector."""
    row = vectors.mean(axis=0, dtype=np.float64)
    norm = np.linalg.norm(row)
    return (row / norm if norm else row).astype(np.float32)
