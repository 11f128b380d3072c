"""Fused element-wise kernels of the local MiniLM's forward pass, compiled by numba
(the optional extra `evalbeam[fast]`); the numpy code in local_minilm.py is the
reference and the fallback.

Each kernel does in one pass over a row what numpy does in 5-15 ufunc passes
over the whole array, with the same float32 operations in the same order where
that is possible (GELU: bit-for-bit the numpy formula except exp's last-ulp
rounding), so that values stay within float32 rounding of the numpy path
(tests/test_minilm_fused.py):

- `bias_gelu(h, b)`: h = GELU(h + b) in place, GELU exact as in local_minilm
  (x + |x| erf(|x|/sqrt 2)) / 2 with A&S 7.1.26 for erfc;
- `bias_residual_layer_norm(a, bias, x, g, beta, eps)`: a = LN(a + bias + x) in place;
- `softmax_keys(s)`: softmax over axis -2 of (..., keys, queries) scores, in place.

exp is written out (Cody-Waite range reduction, degree-6 polynomial, 2^n put
into the exponent bits) because LLVM without a vector maths library calls
scalar expf per element; this one vectorises (8 float32 lanes here).
`fastmath` stays off (no approximate division or sqrt, no flush to zero)
except for reassociating the two sums of LayerNorm, as numpy's own pairwise
and SIMD sums do.

Importing this module imports numba and compiles (or loads from numba's cache)
on first call; local_minilm imports it only for large runs (see `available`).
"""
from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

F32 = np.float32
_LOG2E = F32(1.4426950408889634)
_LN2_HI = F32(0.693359375)            # ln 2 split so that n * _LN2_HI is exact
_LN2_LO = F32(-2.12194440e-4)
# exp(r) on |r| <= ln2/2: Cephes expf's polynomial (rel. error ~1 ulp)
_E = tuple(F32(c) for c in (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3,
                            4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1))
_AS_P = F32(0.3275911 / math.sqrt(2.0))
_AS_A = tuple(F32(c) for c in (1.061405429, -1.453152027, 1.421413741, -0.284496736,
                                0.254829592))  # a5 .. a1 (as local_minilm)
_OPTS = dict(nogil=True, cache=True, fastmath=False, error_model="numpy", boundscheck=False)


@intrinsic
def _bits_to_f32(typingctx, i):
    """The float32 whose bits are the int32 i (a register bitcast)."""
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.FloatType())
    return types.float32(types.int32), codegen


@njit(**_OPTS, inline="always")
def _exp(x):
    """float32 exp for x <= 88; x below -80 counts as -80 (e^-80 = 1.8e-35: keeps
    the products after it out of denormals, which cost ~100 cycles each)."""
    x = max(x, F32(-80.0))
    n = np.floor(x * _LOG2E + F32(0.5))
    r = x - n * _LN2_HI
    r = r - n * _LN2_LO
    p = _E[0]
    p = p * r + _E[1]
    p = p * r + _E[2]
    p = p * r + _E[3]
    p = p * r + _E[4]
    p = p * r + _E[5]
    p = p * (r * r) + r + F32(1.0)
    return p * _bits_to_f32(np.int32(n + F32(127.0)) << 23)


@njit(**_OPTS)
def bias_gelu(h, b):
    """In place over a C-contiguous (n, m) float32 h: h = GELU(h + b), b (m,)."""
    a5, a4, a3, a2, a1 = _AS_A
    n, m = h.shape
    for i in range(n):
        row = h[i]
        for j in range(m):
            x = row[j] + b[j]
            a = abs(x)
            u = F32(1.0) / (a * _AS_P + F32(1.0))
            e = _exp(a * a * F32(-0.5))
            q = ((((u * a5 + a4) * u + a3) * u + a2) * u + a1) * u * e   # erfc(|x|/sqrt 2)
            row[j] = (x + (F32(1.0) - q) * a) * F32(0.5)
    return h


@njit(**{**_OPTS, "fastmath": {"reassoc", "nsz"}})
def _row_sum(v, squares):
    """sum(v), or with squares sum(v * v), in SIMD lanes (reassociated, as numpy's sums)."""
    s = F32(0.0)
    if squares:
        for j in range(v.shape[0]):
            s += v[j] * v[j]
    else:
        for j in range(v.shape[0]):
            s += v[j]
    return s


@njit(**_OPTS)
def bias_residual_layer_norm(a, bias, x, g, beta, eps):
    """In place over C-contiguous (n, d) float32 a: a = LayerNorm(a + bias + x) * g + beta."""
    n, d = a.shape
    inv_d = F32(1.0) / F32(d)
    for i in range(n):
        row = a[i]
        res = x[i]
        for j in range(d):
            row[j] = row[j] + bias[j] + res[j]
        mean = _row_sum(row, False) * inv_d
        for j in range(d):
            row[j] = row[j] - mean
        r = F32(1.0) / math.sqrt(_row_sum(row, True) * inv_d + eps)
        for j in range(d):
            row[j] = row[j] * r * g[j] + beta[j]
    return a


@njit(**_OPTS)
def softmax_keys(s):
    """In place over C-contiguous (b, keys, queries) float32 s: softmax over the keys."""
    nb, nk, nq = s.shape
    m = np.empty(nq, dtype=np.float32)
    t = np.empty(nq, dtype=np.float32)
    for i in range(nb):
        blk = s[i]
        m[:] = blk[0]
        for k in range(1, nk):
            row = blk[k]
            for q in range(nq):
                m[q] = max(m[q], row[q])
        t[:] = F32(0.0)
        for k in range(nk):
            row = blk[k]
            for q in range(nq):
                e = _exp(row[q] - m[q])
                row[q] = e
                t[q] += e
        for q in range(nq):
            t[q] = F32(1.0) / t[q]
        for k in range(nk):
            row = blk[k]
            for q in range(nq):
                row[q] *= t[q]
    return s


def warm() -> None:
    """Compile (or load from numba's cache) every kernel now, on tiny arrays."""
    a = np.ones((2, 16), dtype=F32)
    bias_gelu(a.copy(), a[0])
    bias_residual_layer_norm(a.copy(), a[0], a, a[0], a[0], F32(1e-12))
    softmax_keys(np.ones((2, 3, 3), dtype=F32))
