"""Micro-benchmark: the local MiniLM's element-wise steps, numpy against the numba
kernels of transforms/enrich/embeddings/fused.py, on the pipeline's own inputs.

    PYTHONPATH=. python bench/fused_kernels.py [--turns 64] [--repeat 30]

The synthetic cases of bench/make_synthetic.py (bench/data/cases_10000_seed0.parquet)
give `--turns` turns' texts (question, answer, expected answer), embedded as
EmbedTurns does (embed_tokens with the special tokens, batches of 32 texts);
each forward pass's real intermediate arrays (layer 0..5) are recorded and each
step is timed on them both ways (best of --repeat, one thread, one BLAS
thread), with the largest |difference| of its output. Also: the first-call
compile time and the cached-load time of the kernels (a fresh process each).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

F32 = np.float32


def texts(turns: int) -> list[str]:
    import pyarrow.parquet as pq
    path = ROOT / "bench" / "data" / "cases_10000_seed0.parquet"
    if not path.exists():
        subprocess.run([sys.executable, str(ROOT / "bench" / "make_synthetic.py"), "10000",
                        str(path)], check=True)
    t = pq.read_table(path, columns=["question", "answer", "expected_answer"]).slice(0, turns)
    d = t.to_pydict()
    return [s for row in zip(d["question"], d["answer"], d["expected_answer"]) for s in row]


def record(model, items: list[str]) -> list[dict]:
    """Each layer's element-wise inputs of each forward pass (copies)."""
    steps: list[dict] = []
    forward = model._forward

    def spy(ids, lens):
        from transforms.enrich.embeddings.local_minilm import _Packed
        packed = _Packed(lens)
        x = model._word[ids]
        x += model._pos_type[packed.positions]
        x = model._layer_norm(x, *model._ln0)
        for ly in model._layers:
            qkv = x @ ly.wqkv
            qkv += ly.bqkv
            att = model._attention(qkv, packed) @ ly.wo
            rec = dict(packed=packed, qkv=qkv.copy(), att=att.copy(), x=x.copy(), ly=ly)
            att += ly.bo
            att += x
            x = model._layer_norm(att, ly.ln1_g, ly.ln1_b)
            h = x @ ly.w1
            rec.update(h=h.copy(), x1=x.copy())
            h += ly.b1
            h = model._gelu(h)
            rec.update(f=h @ ly.w2)
            steps.append(rec)
            f = rec["f"] + ly.b2
            f += x
            x = model._layer_norm(f, ly.ln2_g, ly.ln2_b)
        return forward(ids, lens)

    model._forward = spy
    try:
        model.embed_tokens(items, special_tokens=True)
    finally:
        del model._forward
    return steps


def best(fn, repeat: int) -> float:
    out = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t)
    return out * 1e3


def numpy_softmax(s):
    s -= s.max(axis=-2, keepdims=True)
    np.exp(s, out=s)
    s *= np.reciprocal(s.sum(axis=-2, keepdims=True))
    return s


def scores(qkv, packed, nh=12, hd=32):
    """The attention scores (g, nh, keys, queries) of each length run, as _attention."""
    out = []
    for first, n, count in packed.groups:
        block = qkv[first:first + count * n].reshape(count, n, 3, nh, hd)
        q, k, _ = block.transpose(2, 0, 3, 1, 4)
        out.append(np.ascontiguousarray(np.matmul(k, q.transpose(0, 1, 3, 2))))
    return out


def compile_times() -> dict:
    """Seconds for `import fused` + the first call of each kernel, in a fresh process:
    with an empty numba cache (compile) and then with it filled (load)."""
    code = ("import time; t=time.perf_counter(); import numpy as np; "
            "from transforms.enrich.embeddings import fused as f; t1=time.perf_counter(); "
            "f.bias_gelu(np.ones((2,8),np.float32),np.ones(8,np.float32)); "
            "a=np.ones((2,8),np.float32); f.bias_residual_layer_norm(a,a[0],a,a[0],a[0],"
            "np.float32(1e-12)); f.softmax_keys(np.ones((2,3,3),np.float32)); "
            "print(t1-t, time.perf_counter()-t1)")
    out = {}
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache,
               "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        for name in ("cold", "cached"):
            r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                               text=True, check=True)
            imp, first = map(float, r.stdout.split())
            out[name] = {"import_s": round(imp, 3), "first_calls_s": round(first, 3)}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args(argv)
    from transforms.enrich.embeddings import fused
    from transforms.enrich.embeddings.local_minilm import LocalMiniLM
    model = LocalMiniLM(workers=1)
    items = texts(args.turns)
    steps = record(model, items)
    tokens = sum(int(r["h"].shape[0]) for r in steps) // len(model._layers)
    rows = args.turns
    res: dict[str, dict] = {}

    def time_step(name, numpy_fn, fused_fn, make_input):
        tn = tf = copy = 0.0
        diff = 0.0
        for rec in steps:
            src = make_input(rec)
            bufs = [a.copy() for a in src]
            for fn, _ in ((numpy_fn, 0), (fused_fn, 1)):
                fn(*[b for b in bufs])  # warm (and compile)
            copy_ms = best(lambda: [b.__setitem__(Ellipsis, a) for a, b in zip(src, bufs)],
                           args.repeat)

            def run(fn):
                for a, b in zip(src, bufs):
                    b[...] = a
                fn(*bufs)
            tn += best(lambda: run(numpy_fn), args.repeat) - copy_ms
            tf += best(lambda: run(fused_fn), args.repeat) - copy_ms
            copy += copy_ms
            run(numpy_fn)
            a = [b.copy() for b in bufs]
            run(fused_fn)
            diff = max(diff, max(float(np.abs(x - y).max()) for x, y in zip(a, bufs)))
        res[name] = {"numpy_ms_per_row": round(tn / rows, 4), "fused_ms_per_row": round(tf / rows, 4),
                     "speedup": round(tn / tf, 2), "max_abs_diff": diff}
        print(f"{name:28s} numpy {tn / rows:.4f}  fused {tf / rows:.4f} ms/row  "
              f"({tn / tf:.2f}x)  max|diff| {diff:.2e}", flush=True)

    def gelu_np(h, b):
        h += b
        model._gelu(h)

    def ln_np(a, bias, x, g, beta):
        a += bias
        a += x
        model._layer_norm(a, g, beta)

    def ln_fused(a, bias, x, g, beta):
        fused.bias_residual_layer_norm(a, bias, x, g, beta, model.eps)

    def softmax_np(*ss):
        for s in ss:
            numpy_softmax(s)

    def softmax_fused(*ss):
        for s in ss:
            fused.softmax_keys(s.reshape(-1, s.shape[-2], s.shape[-1]))

    time_step("bias + GELU (T x 1536)", gelu_np, fused.bias_gelu,
              lambda r: [r["h"], r["ly"].b1])
    time_step("bias + residual + LN (attn)", ln_np, ln_fused,
              lambda r: [r["att"], r["ly"].bo, r["x"], r["ly"].ln1_g, r["ly"].ln1_b])
    time_step("bias + residual + LN (FFN)", ln_np, ln_fused,
              lambda r: [r["f"], r["ly"].b2, r["x1"], r["ly"].ln2_g, r["ly"].ln2_b])
    time_step("softmax (keys, queries)", softmax_np, softmax_fused,
              lambda r: scores(r["qkv"], r["packed"]))
    total_n = sum(v["numpy_ms_per_row"] for v in res.values())
    total_f = sum(v["fused_ms_per_row"] for v in res.values())
    print(f"{'all four':28s} numpy {total_n:.4f}  fused {total_f:.4f} ms/row  "
          f"({len(items)} texts, {tokens} tokens per layer, {rows} rows)")
    res["compile"] = compile_times()
    print("first use:", res["compile"])
    out = ROOT / "bench" / "results" / "fused_kernels.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"turns": rows, "texts": len(items), "tokens": tokens,
                               "steps": res}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
