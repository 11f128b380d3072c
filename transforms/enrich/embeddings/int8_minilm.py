"""Int8MiniLM: all-MiniLM-L6-v2 with int8 dense layers (`embeddings.precision: int8`).

Opt-in and approximate: the default stays LocalMiniLM's float32 numpy pass.
numpy has no int8 GEMM, so the encoder is written as an ONNX graph (onnx's
helpers, from the same safetensors weights LocalMiniLM loads: nothing is
downloaded) and run by onnxruntime's CPU kernels; both come with the extra
evalbeam's `int8` extra (`pip install '.[int8]'` in its clone).

What is int8 and what is not (measured in BENCHMARKS.md section 12, "int8"):

- Only the FFN up-projections (384 -> 1536, a third of the dense work) run in
  int8; QKV, the attention output and the FFN down-projections, attention,
  LayerNorm and GELU stay float32. QKV in int8, or the attention output with
  the up-projections, or every dense layer, moved answer_relevance or
  answer_similarity by more than 0.01 on the validation set; so the speed-up
  is small (~1.1-1.2x on AVX2 without VNNI).
- Weights: per output column, symmetric 8-bit.
- Activations: per token (each row its own scale, from its own max), so a
  text's vectors do not depend on the other texts of its batch.
- SmoothQuant factors move an input channel's outliers into the weight
  (x / s, s * W; s_j = sqrt(max|x_j| / max|W_j|)), with max|x_j| calibrated
  once at load (~1 s) through the float32 pass on bundled texts
  (transforms/data/int8_calibration.txt, not the validation sets); the
  OUTLIERS loudest input channels skip quantisation (a small float32 GEMM
  beside the int8 one, as LLM.int8() does).

The tokenizer, batching, pooling and `embed` / `embed_tokens` are
LocalMiniLM's; only `_forward` differs. Texts are run packed as there, and
attention uses a padded grid gathered from the packed tokens.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Sequence

import numpy as np

from transforms.enrich.embeddings.local_minilm import F32, LocalMiniLM, _Packed

MS = "com.microsoft"
WEIGHT_LEVELS = 127  # symmetric 8-bit weights (7-bit ones measured worse, no saturation seen)
ALPHA = 0.5          # SmoothQuant's migration strength (0.35 and 0.65 measured worse)
OUTLIERS = 8         # per dense layer, the input channels of largest calibrated max run float32
# (layer index, matmul: qkv | o | up | down) run in int8; everything else stays float32.
# The FFN up-projections alone keep every semantic metric within 0.01 of float32
# (BENCHMARKS.md section 12, "int8", has the sweep).
INT8_MATMULS = frozenset((i, "up") for i in range(6))
CALIBRATION = Path(__file__).resolve().parents[2] / "data" / "int8_calibration.txt"
INSTALL_HINT = ("embeddings.precision int8 needs onnxruntime and onnx: pip install onnxruntime "
                "onnx (or '.[int8]' in evalbeam's clone)")


def int8_missing() -> str | None:
    """Why the int8 embedder cannot run here (None: it can); cheap, for planning."""
    import importlib.util
    if importlib.util.find_spec("onnxruntime") is None or importlib.util.find_spec("onnx") is None:
        return INSTALL_HINT
    return None


def quantize_columns(w: np.ndarray, levels: int = WEIGHT_LEVELS) -> tuple[np.ndarray, np.ndarray]:
    """(K, N) float -> int8 (K, N) and the per-column scale (N,): w ≈ q * scale."""
    scale = np.abs(w).max(axis=0) / levels
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(w / scale), -levels, levels).astype(np.int8)
    return q, scale.astype(F32)


def smooth_factors(x_max: np.ndarray, w: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """SmoothQuant: per input channel s with x / s and s * W balanced in range."""
    w_max = np.abs(w).max(axis=1)
    s = np.power(np.maximum(x_max, 1e-5), alpha) / np.power(np.maximum(w_max, 1e-5), 1 - alpha)
    return s.astype(F32)


class _Graph:
    """Builds the ONNX graph: nodes and initialisers, names made unique by prefix."""

    def __init__(self):
        from onnx import helper, numpy_helper
        self.helper, self.numpy_helper = helper, numpy_helper
        self.inits, self.nodes = [], []

    def const(self, name: str, value: np.ndarray) -> str:
        value = np.asarray(value, order="C")  # (ascontiguousarray would make a scalar 1-d)
        self.inits.append(self.numpy_helper.from_array(value, name))
        return name

    def node(self, op: str, inputs: list[str], out: str, domain: str = "", **attrs) -> str:
        self.nodes.append(self.helper.make_node(op, inputs, [out], name=out, domain=domain,
                                                **attrs))
        return out

    def dense(self, x: str, w: np.ndarray, b: np.ndarray, name: str,
              x_max: np.ndarray | None) -> str:
        """x @ w + b; in int8 when x_max (the calibrated per-channel max |x|) is given:
        the OUTLIERS largest input channels in float32, the others SmoothQuant-scaled,
        quantised per token (uint8 around 128) against per-column int8 weights."""
        bias = self.const(name + "_b", b)
        if x_max is None:
            return self.node("Add", [self.node("MatMul", [x, self.const(name + "_w", w)],
                                               name + "_mm"), bias], name)
        s = smooth_factors(x_max, w)
        inv_s, w_s = (1.0 / s).astype(F32), w * s[:, None]
        outliers = np.sort(np.argsort(-x_max)[:OUTLIERS])
        inv_s[outliers], w_s[outliers] = 0.0, 0.0  # these run in float32 beside the int8 GEMM
        q, w_scale = quantize_columns(w_s)
        float_part = self.node("MatMul", [
            self.node("Gather", [x, self.const(name + "_oidx", outliers.astype(np.int64))],
                      name + "_xo", axis=1), self.const(name + "_wo32", w[outliers])],
            name + "_mm32")
        xs = self.node("Mul", [x, self.const(name + "_inv_s", inv_s)], name + "_xs")
        amax = self.node("ReduceMax", [self.node("Abs", [xs], name + "_abs")], name + "_amax",
                         axes=[1], keepdims=0)
        a_scale = self.node("Max", [self.node("Mul", [amax, self.const(
            name + "_r127", np.array(1 / 127, F32))], name + "_as0"),
            self.const(name + "_tiny", np.array(1e-12, F32))], name + "_ascale")
        xq = self.node("QuantizeLinear", [xs, a_scale, "zp128"], name + "_xq", axis=0)
        y = self.node("MatMulIntegerToFloat", [
            xq, self.const(name + "_q", q), self.const(name + "_one", np.array(1.0, F32)),
            self.const(name + "_wscale", w_scale),
            self.const(name + "_azp", np.array(128, np.uint8))], name + "_yq", domain=MS)
        y = self.node("Mul", [y, self.node("Unsqueeze", [a_scale, self.const(
            name + "_ax1", np.array([1], np.int64))], name + "_ascol")], name + "_ya")
        return self.node("Add", [self.node("Add", [y, float_part], name + "_yf"), bias], name)

    def layer_norm(self, x: str, g: np.ndarray, b: np.ndarray, eps: float, name: str) -> str:
        return self.node("LayerNormalization", [x, self.const(name + "_g", g),
                                                self.const(name + "_b", b)],
                         name, axis=-1, epsilon=float(eps))


def minilm_graph(m: LocalMiniLM, x_max: dict, int8: frozenset = INT8_MATMULS) -> bytes:
    """The serialised ONNX encoder over packed tokens.

    Inputs: ids (T,) int64, positions (T,), grid (B*L,) int64 (each padded slot's
    packed token; padding points at any token and is masked), unpack (T,) (each
    token's slot), mask (B, 1, 1, L) float32 additive, shape (5,) int64 =
    (B, L, 3, heads, head_dim). Output: hidden (T, dim) float32.
    x_max[(layer, matmul)]: calibrated per-channel max |input| of the int8 matmuls."""
    from onnx import TensorProto
    g = _Graph()
    x = g.node("Gather", [g.const("word", m._word), "ids"], "tok")
    x = g.node("Add", [x, g.node("Gather", [g.const("pos_type", m._pos_type), "positions"],
                                 "pos")], "emb")
    x = g.layer_norm(x, *m._ln0, m.eps, "ln0")
    dim = m.dim
    for i, ly in enumerate(m._layers):
        p = f"l{i}_"

        def xm(kind: str):
            return x_max[(i, kind)] if (i, kind) in int8 else None

        qkv = g.dense(x, ly.wqkv, ly.bqkv, p + "qkv", xm("qkv"))
        grid = g.node("Reshape", [g.node("Gather", [qkv, "grid"], p + "grid"), "shape"],
                      p + "grid5")
        qkv5 = g.node("Transpose", [grid], p + "qkv5", perm=[2, 0, 3, 1, 4])  # 3,B,nh,L,hd
        q, k, v = (g.node("Gather", [qkv5, g.const(p + f"i{j}", np.array(j, np.int64))],
                          p + "qkv"[j], axis=0) for j in range(3))
        s = g.node("MatMul", [q, g.node("Transpose", [k], p + "kt", perm=[0, 1, 3, 2])],
                   p + "scores")
        s = g.node("Softmax", [g.node("Add", [s, "mask"], p + "masked")], p + "probs", axis=-1)
        ctx = g.node("Transpose", [g.node("MatMul", [s, v], p + "ctx4")], p + "ctxt",
                     perm=[0, 2, 1, 3])
        ctx = g.node("Gather", [g.node("Reshape", [ctx, g.const(p + "flat", np.array(
            [-1, dim], np.int64))], p + "ctxg"), "unpack"], p + "ctx")
        a = g.dense(ctx, ly.wo, ly.bo, p + "o", xm("o"))
        x = g.layer_norm(g.node("Add", [a, x], p + "res1"), ly.ln1_g, ly.ln1_b, m.eps, p + "ln1")
        h = g.dense(x, ly.w1, ly.b1, p + "up", xm("up"))
        h = g.node("Gelu", [h], p + "gelu", domain=MS)
        f = g.dense(h, ly.w2, ly.b2, p + "down", xm("down"))
        x = g.layer_norm(g.node("Add", [f, x], p + "res2"), ly.ln2_g, ly.ln2_b, m.eps, p + "ln2")
    g.node("Identity", [x], "hidden")
    h = g.helper
    inputs = [h.make_tensor_value_info(n, t, s) for n, t, s in (
        ("ids", TensorProto.INT64, ["T"]), ("positions", TensorProto.INT64, ["T"]),
        ("grid", TensorProto.INT64, ["G"]), ("unpack", TensorProto.INT64, ["T"]),
        ("mask", TensorProto.FLOAT, ["B", 1, 1, "L"]), ("shape", TensorProto.INT64, [5]),
        ("zp128", TensorProto.UINT8, ["T"]))]
    graph = h.make_graph(g.nodes, "all-MiniLM-L6-v2-int8", inputs,
                         [h.make_tensor_value_info("hidden", TensorProto.FLOAT, ["T", dim])],
                         g.inits)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17), h.make_opsetid(MS, 1)])
    model.ir_version = 8  # readable by onnxruntime >= 1.14
    return model.SerializeToString()


def calibrate(m: LocalMiniLM, texts: Sequence[str]) -> dict:
    """Per-channel max |input| of every dense layer, (layer, matmul) -> (K,), from the
    float32 pass over `texts` (the same maths as LocalMiniLM._forward)."""
    enc = m._encode(texts)
    lens = [len(e.ids) for e in enc]
    ids = np.fromiter((t for e in enc for t in e.ids), np.int64, sum(lens))
    packed = _Packed(lens)
    x = m._word[ids] + m._pos_type[packed.positions]
    x = m._layer_norm(x, *m._ln0)
    out: dict = {}

    def seen(key, v):
        out[key] = np.abs(v).max(axis=0)

    for i, ly in enumerate(m._layers):
        seen((i, "qkv"), x)
        ctx = m._attention_per_sequence(x @ ly.wqkv + ly.bqkv, packed)
        seen((i, "o"), ctx)
        x = m._layer_norm(ctx @ ly.wo + ly.bo + x, ly.ln1_g, ly.ln1_b)
        seen((i, "up"), x)
        h = m._gelu(x @ ly.w1 + ly.b1)
        seen((i, "down"), h)
        x = m._layer_norm(h @ ly.w2 + ly.b2 + x, ly.ln2_g, ly.ln2_b)
    return out


def calibration_texts() -> list[str]:
    return [t for t in CALIBRATION.read_text(encoding="utf-8").splitlines() if t.strip()]


def session_options():
    """One thread per call (LocalMiniLM's `workers` threads call the session), no spinning."""
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    opts.log_severity_level = 3
    return opts


class Int8MiniLM(LocalMiniLM):
    """LocalMiniLM whose forward pass runs int8 dense layers on onnxruntime."""

    precision = "int8"

    def __init__(self, model_dir: str | os.PathLike | None = None, batch_size: int = 32,
                 workers: int | None = None, int8: frozenset = INT8_MATMULS):
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise ImportError(INSTALL_HINT) from exc
        super().__init__(model_dir, batch_size=batch_size, workers=workers)
        self.name = f"{self.name}:int8"
        model = minilm_graph(self, calibrate(self, calibration_texts()), int8)
        self._session = ort.InferenceSession(model, session_options(),
                                             providers=["CPUExecutionProvider"])
        self._layers = []  # the float32 weights live in the session now

    def _forward(self, ids: np.ndarray, lens: Sequence[int]) -> np.ndarray:
        packed = _Packed(lens)
        B, L = len(packed.lens), packed.width
        grid = np.zeros(B * L, dtype=np.int64)
        grid[packed.slots] = np.arange(len(ids))
        mask = packed.neg
        feeds = {"ids": np.asarray(ids, np.int64), "positions": packed.positions.astype(np.int64),
                 "grid": grid, "unpack": packed.slots.astype(np.int64),
                 "mask": np.zeros((B, 1, 1, L), F32) if mask is None else mask,
                 "shape": np.array([B, L, 3, self.heads, self.head_dim], np.int64),
                 "zp128": np.full(len(ids), 128, np.uint8)}
        return self._session.run(["hidden"], feeds)[0]


_INSTANCE: Int8MiniLM | None = None
_INSTANCE_LOCK = threading.Lock()


def get_int8_minilm() -> Int8MiniLM:
    """The process-wide Int8MiniLM, built on first use (thread-safe)."""
    global _INSTANCE
    if _INSTANCE is None:
        with _INSTANCE_LOCK:
            if _INSTANCE is None:
                _INSTANCE = Int8MiniLM()
    return _INSTANCE
