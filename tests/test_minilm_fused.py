"""The numba kernels of the local MiniLM (transforms/enrich/embeddings/fused.py)
give the numpy path's values: each kernel against the numpy code it replaces,
the model with them against the model without, within 1e-6 (float32 rounding);
a small run never imports numba; without numba the numpy path runs."""
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import ROOT
from tests.test_embeddings_local import needs_model
from transforms.enrich.embeddings import local_minilm as lm

numba = pytest.importorskip("numba")
from transforms.enrich.embeddings import fused  # noqa: E402

F32 = np.float32
RNG = np.random.default_rng(26)


def _numpy_model():
    model = lm.LocalMiniLM.__new__(lm.LocalMiniLM)
    model.eps = F32(1e-12)
    return model


def test_exp_is_float32_exact_to_an_ulp():
    x = np.concatenate([np.linspace(-80, 10, 200_001, dtype=F32), -np.abs(
        RNG.standard_normal(10_000).astype(F32))])
    got = np.empty_like(x)

    @numba.njit
    def run(a, out):
        for i in range(a.size):
            out[i] = fused._exp(a[i])
    run(x, got)
    ref = np.exp(x.astype(np.float64))
    assert np.max(np.abs(got - ref) / ref) < 2.4e-7  # 2 ulp; numpy's own float32 exp: ~2e-7


def test_bias_gelu_equals_numpy():
    h = (RNG.standard_normal((300, 1536)) * 2).astype(F32)
    h[0, :8] = [0, -0.0, 14, -14, 30, -30, 1e-30, -1e-30]  # exp's floor, tiny values
    b = (RNG.standard_normal(1536) / 4).astype(F32)
    want = _numpy_model()._gelu(h + b)
    got = fused.bias_gelu(h.copy(), b)
    assert np.abs(got - want).max() <= 1e-6
    assert np.array_equal(got[0, 2:6], want[0, 2:6])  # x or 0 exactly out there
    assert (got == want).mean() > 0.8  # the same float32 operations: mostly bit-equal


def test_bias_residual_layer_norm_equals_numpy():
    a = (RNG.standard_normal((500, 384)) * 3).astype(F32)
    x = (RNG.standard_normal((500, 384)) * 3).astype(F32)
    bias, g, beta = ((RNG.standard_normal(384) / 4).astype(F32) for _ in range(3))
    g += F32(1.0)
    want = a + bias
    want += x
    want = _numpy_model()._layer_norm(want, g, beta)
    got = fused.bias_residual_layer_norm(a.copy(), bias, x, g, beta, F32(1e-12))
    # the sums' order differs (numpy's pairwise against the kernel's SIMD lanes): float32
    # rounding of outputs of a few units
    assert np.abs(got - want).max() <= 1e-6 * max(1.0, float(np.abs(want).max()))


def test_softmax_keys_equals_numpy():
    for n in (1, 7, 33, 100):
        s = (RNG.standard_normal((24, n, n)) * 4).astype(F32)
        s[0, 0, :] = -200.0  # a key far below the others: ~0, not a denormal
        want = s.copy()
        want -= want.max(axis=-2, keepdims=True)
        np.exp(want, out=want)
        want *= np.reciprocal(want.sum(axis=-2, keepdims=True))
        got = fused.softmax_keys(s.copy())
        assert np.abs(got - want).max() <= 1e-6, n
        assert np.allclose(got.sum(axis=-2), 1.0, atol=1e-6)


@needs_model
def test_the_model_with_the_kernels_equals_the_model_without(monkeypatch):
    monkeypatch.setenv(lm.ENV_FUSED, "0")  # no switching on by itself in between
    model = lm.get_local_minilm()
    texts = ["How do I reset my password?", "Paying yearly saves about 17% on Plus.",
             "The Cam Outdoor battery lasts up to 6 months with default settings " * 6, "ok"]
    kernels, model._kernels = model._kernels, None
    try:
        want = model.embed_tokens(texts, special_tokens=True)
        model._kernels = fused
        got = model.embed_tokens(texts, special_tokens=True)
        vec_got = model.embed(texts)
        model._kernels = None
        vec_want = model.embed(texts)
    finally:
        model._kernels = kernels
    for a, b in zip(want, got):
        assert np.abs(a.vectors - b.vectors).max() <= 1e-5  # raw hidden states, up to ~10
    assert np.abs(vec_want - vec_got).max() <= 1e-6


def test_kernels_switch_on_for_a_large_run_only(monkeypatch):
    monkeypatch.delenv(lm.ENV_FUSED, raising=False)
    monkeypatch.setattr(lm, "_PROCESS_CORES", [])
    model = _numpy_model()
    model._use_kernels(30)
    assert model._kernels is None
    model._use_kernels(lm.FUSED_MIN_TEXTS)
    assert model._kernels is fused
    worker = _numpy_model()
    monkeypatch.setattr(lm, "_PROCESS_CORES", [1])  # a worker of a multi-process run
    worker._use_kernels(1)
    assert worker._kernels is fused
    monkeypatch.setenv(lm.ENV_FUSED, "0")
    off = _numpy_model()
    off._use_kernels(10 * lm.FUSED_MIN_TEXTS)
    assert off._kernels is None


def test_without_numba_the_numpy_path_runs(monkeypatch):
    monkeypatch.setattr(lm, "_FUSED", [])
    import transforms.enrich.embeddings as package
    monkeypatch.delattr(package, "fused")  # `from ... import fused` then imports: ImportError
    monkeypatch.setitem(sys.modules, "transforms.enrich.embeddings.fused", None)
    assert lm.fused_kernels() is None
    model = _numpy_model()
    model._use_kernels(10 * lm.FUSED_MIN_TEXTS)
    assert model._kernels is None


@needs_model
def test_a_small_run_does_not_import_numba():
    code = ("import sys; from transforms.enrich.embeddings.local_minilm import get_local_minilm;"
            "m = get_local_minilm(); m.embed(['a question'] * 30); "
            "m.embed_tokens(['an answer'] * 30); print('numba' in sys.modules, m._kernels)")
    env = {k: v for k, v in os.environ.items() if k != lm.ENV_FUSED}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    assert out == ["False", "None"]
