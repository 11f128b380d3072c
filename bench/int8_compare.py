"""`embeddings.precision: int8` against float32 (issue 26 item 2).

    python bench/int8_compare.py [--public-rows 150] [--repeats 3]

Accuracy: `evalbeam run` (offline: recorded answers, the default metrics, local
MiniLM) on the validation sets (validation/cases.parquet), the bundled example
(examples/support) and a sample of issue 21's public benchmark
(validation/public/data: every set's rows at an even stride, --public-rows per
set), once with `embeddings.precision: float32` and once with `int8`, arms
interleaved per set. Per set and semantic metric (every metric read from the
embedder: answer_similarity, bertscore, answer_relevance): the largest |change|
of a row's value, the rows compared, ROC AUC against the labels in float32 and
int8; per set, the share of rows whose verdict is the same, and each run's
rows/s and CPU seconds (the run's process tree).

Speed of the embedder alone: the texts the semantic path embeds for the
validation set (questions, expected answers, answers, answer sentences),
LocalMiniLM and Int8MiniLM each on one thread, interleaved, best of --repeats
CPU seconds per pass; texts/CPU-s side by side.

`--sweep ROWS`: instead, which dense layers can be int8: for each candidate set
(every layer's QKV, attention output, FFN up or down projection, and some
unions), the semantic metrics computed in-process from each embedder's vectors
on ROWS validation rows (at an even stride), the largest |change| against
float32 and the CPU seconds of the embedding (one thread).

`--profile SET` (a --sweep set's name, or "float32 graph" for none in int8):
onnxruntime's own profile of that graph over the validation set's answers and
questions, kernel time per operator type: where the time goes once the GEMMs
are int8.

Needs the int8 extra (`pip install -e '.[int8]'`). Writes
bench/results/int8_compare.json and prints the tables BENCHMARKS.md quotes.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one thread per engine, before numpy

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from bench.validity import prepare_example, read_run, run_evalbeam  # noqa: E402
from pipeline.postrun.agreement import acceptable, roc_auc  # noqa: E402

SEMANTIC = ("answer_similarity", "bertscore", "answer_relevance")
PRECISIONS = ("float32", "int8")
RESULTS = os.path.join(ROOT, "bench", "results", "int8_compare.json")


def public_sample(tmp: str, per_set: int) -> str:
    """Every public set's rows at an even stride, per_set of each, in one file."""
    folder = os.path.join(ROOT, "validation", "public", "data")
    parts = []
    for name in sorted(os.listdir(folder)):
        table = pq.read_table(os.path.join(folder, name))
        step = max(1, table.num_rows // per_set)
        parts.append(table.take(list(range(0, table.num_rows, step))[:per_set]))
    path = os.path.join(tmp, "public.parquet")
    pq.write_table(pa.concat_tables(parts, promote_options="default"), path)
    return path


def timed_run(cases: str, out: str, precision: str) -> dict:
    """One `evalbeam run` with the precision; its wall and CPU seconds (children)."""
    before, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    run_evalbeam(ROOT, cases, out, f"int8-{precision}", None,
                 {"embeddings": {"provider": "local", "precision": precision}})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"wall_s": time.perf_counter() - t0,
            "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)}


def compare_set(cases: str, tmp: str, name: str) -> dict:
    runs, timing = {}, {}
    for precision in PRECISIONS:
        out = os.path.join(tmp, f"{name}-{precision}")
        timing[precision] = timed_run(cases, out, precision)
        runs[precision] = read_run(out, f"int8-{precision}")
    (rows32, vals32), (rows8, vals8) = runs["float32"], runs["int8"]
    verdict8 = {r["case_id"]: r["verdict"] for r in rows8}
    n_rows = len(rows32)
    for precision in PRECISIONS:
        timing[precision]["rows_per_s"] = n_rows / timing[precision]["wall_s"]
        timing[precision]["cpu_ms_per_row"] = 1000 * timing[precision]["cpu_s"] / n_rows
    labels = {r["case_id"]: acceptable(r.get("label")) for r in rows32}
    metrics = {}
    for m in SEMANTIC:
        pairs = [(c, vals32[c][m], vals8.get(c, {}).get(m)) for c in vals32
                 if vals32[c].get(m) is not None]
        if not pairs:
            continue
        missing = sum(b is None for _, _, b in pairs)
        both = [(c, a, b) for c, a, b in pairs if b is not None]
        labelled = [(a, b, labels[c]) for c, a, b in both if labels.get(c) is not None]
        metrics[m] = {
            "rows": len(both), "null_in_int8_only": missing,
            "max_abs_change": max(abs(a - b) for _, a, b in both),
            "mean_abs_change": sum(abs(a - b) for _, a, b in both) / len(both),
            "auc_float32": roc_auc([a for a, _, _ in labelled], [ok for *_, ok in labelled]),
            "auc_int8": roc_auc([b for _, b, _ in labelled], [ok for *_, ok in labelled])}
    same = sum(verdict8.get(r["case_id"]) == r["verdict"] for r in rows32)
    return {"rows": n_rows, "verdict_agreement": same / n_rows if n_rows else None,
            "verdicts_changed": n_rows - same, "metrics": metrics, "timing": timing}


def embedder_speed(repeats: int) -> dict:
    """CPU seconds per pass over the validation set's semantic texts, one thread each,
    the two embedders interleaved; best of `repeats`."""
    from transforms.enrich.embeddings.int8_minilm import Int8MiniLM
    from transforms.enrich.embeddings.local_minilm import LocalMiniLM
    from transforms.text.sentences import MAX_SENTENCES, answer_sentences
    rows = pq.read_table(os.path.join(ROOT, "validation", "cases.parquet")).to_pylist()
    texts = {t for r in rows for t in (r["question"], r["expected_answer"], r["answer"]) if t}
    texts |= {s for r in rows if r["answer"] for s in answer_sentences(r["answer"])[:MAX_SENTENCES]}
    texts = sorted(texts)
    engines = {"float32": LocalMiniLM(workers=1), "int8": Int8MiniLM(workers=1)}
    best = dict.fromkeys(engines, float("inf"))
    for _ in range(repeats):
        for name, engine in engines.items():
            t0 = time.process_time()
            engine.embed_tokens(texts, special_tokens=True)
            best[name] = min(best[name], time.process_time() - t0)
    return {"texts": len(texts), "tokens": sum(len(e.ids) for e in engines["float32"]._encode(texts)),
            **{name: {"cpu_s": s, "texts_per_cpu_s": len(texts) / s} for name, s in best.items()},
            "speed_int8_vs_float32": best["float32"] / best["int8"]}


SWEEP = {  # name -> the (layer, matmul) set run in int8
    "all dense": [(i, m) for i in range(6) for m in ("qkv", "o", "up", "down")],
    "qkv+o+up": [(i, m) for i in range(6) for m in ("qkv", "o", "up")],
    "o+up": [(i, m) for i in range(6) for m in ("o", "up")],
    "qkv": [(i, "qkv") for i in range(6)],
    "o": [(i, "o") for i in range(6)],
    "up (default)": [(i, "up") for i in range(6)],
}


def sweep(n_rows: int) -> dict:
    """Per candidate int8 set: the largest |change| of each semantic metric against
    float32 on n_rows validation rows, and the embedding's CPU seconds."""
    import numpy as np
    from transforms.enrich.embeddings.base import l2_normalise
    from transforms.enrich.embeddings.int8_minilm import Int8MiniLM
    from transforms.enrich.embeddings.local_minilm import LocalMiniLM
    from transforms.score.metrics import semantic
    from transforms.text.sentences import MAX_SENTENCES, answer_sentences
    from transforms.score.metrics.coverage import novelty
    rows = [r for r in pq.read_table(os.path.join(ROOT, "validation", "cases.parquet")).to_pylist()
            if r["answer"]]
    rows = rows[::max(1, len(rows) // n_rows)][:n_rows]
    sentences = {r["answer"]: answer_sentences(r["answer"]) for r in rows}
    tok_texts = sorted({r["answer"] for r in rows} | {r["expected_answer"] for r in rows
                                                      if r["expected_answer"]})
    vec_texts = sorted({r["question"] for r in rows} | {
        s for v in sentences.values() for s in v[:MAX_SENTENCES]})

    def scores(m) -> tuple[dict, float]:
        t0 = time.process_time()
        tok = dict(zip(tok_texts, m.embed_tokens(tok_texts, special_tokens=True)))
        vec = dict(zip(vec_texts, m.embed(vec_texts)))
        cpu = time.process_time() - t0
        out: dict = {k: [] for k in SEMANTIC}
        for r in rows:
            e, a = r["expected_answer"], r["answer"]
            if e:
                pe, pa = (l2_normalise(tok[t].vectors.mean(0, keepdims=True))[0] for t in (e, a))
                out["answer_similarity"].append(semantic.answer_similarity(pe, pa).value)
                out["bertscore"].append(semantic.bertscore(tok[e].tokens, tok[e].vectors,
                                                           tok[a].tokens, tok[a].vectors).value)
            said = sentences[a]
            out["answer_relevance"].append(semantic.answer_relevance(
                vec[r["question"]], np.array([vec[x] for x in said[:MAX_SENTENCES]]),
                len(said), novelty(r["question"], a)).value)
        return {k: np.array(v, float) for k, v in out.items()}, cpu

    ref, ref_cpu = scores(LocalMiniLM(workers=1))
    result = {"rows": len(rows), "float32_cpu_s": ref_cpu, "sets": {}}
    for name, layers in SWEEP.items():
        got, cpu = scores(Int8MiniLM(workers=1, int8=frozenset(layers)))
        result["sets"][name] = {"cpu_s": cpu, "speed": ref_cpu / cpu, **{
            k: float(np.max(np.abs(got[k] - ref[k]))) for k in SEMANTIC}}
        print(name, json.dumps(result["sets"][name]), flush=True)
    return result


def sweep_table(res: dict) -> str:
    lines = [f"{res['rows']} validation rows; float32 {res['float32_cpu_s']:.1f} CPU-s", "",
             "| int8 layers | " + " | ".join(f"max \\|Δ\\| {m}" for m in SEMANTIC)
             + " | CPU s | speed vs float32 |", "|---|" + "---:|" * (len(SEMANTIC) + 2)]
    for name, r in res["sets"].items():
        lines.append(f"| {name} | " + " | ".join(f"{r[m]:.4f}" for m in SEMANTIC)
                     + f" | {r['cpu_s']:.1f} | {r['speed']:.2f}x |")
    return "\n".join(lines)


def profile(name: str) -> str:
    """Kernel time per operator type of the int8 graph with SWEEP[name] in int8."""
    import collections
    import onnxruntime as ort
    from transforms.enrich.embeddings import int8_minilm as i8
    from transforms.enrich.embeddings.local_minilm import LocalMiniLM
    rows = pq.read_table(os.path.join(ROOT, "validation", "cases.parquet")).to_pylist()
    texts = sorted({t for r in rows for t in (r["question"], r["answer"]) if t})
    f32 = LocalMiniLM(workers=1)
    model = i8.minilm_graph(f32, i8.calibrate(f32, i8.calibration_texts()),
                            frozenset(SWEEP.get(name, ())))
    m = i8.Int8MiniLM(workers=1)
    opts = i8.session_options()
    opts.enable_profiling = True
    m._session = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    m.embed(texts)
    with open(m._session.end_profiling()) as fh:
        events = json.load(fh)
    by_op: collections.Counter = collections.Counter()
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            by_op[e["args"]["op_name"]] += e["dur"]
    total = sum(by_op.values())
    lines = [f"{name}: {len(texts)} texts, kernel time {total / 1e6:.2f} s", "",
             "| operator | s | share |", "|---|---:|---:|"]
    lines += [f"| {op} | {us / 1e6:.2f} | {100 * us / total:.1f}% |"
              for op, us in by_op.most_common(12)]
    return "\n".join(lines)


def table(report: dict) -> str:
    lines = ["| set | metric | rows | max \\|change\\| | mean \\|change\\| | AUC float32 | AUC int8 |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for name, res in report["sets"].items():
        for m, r in res["metrics"].items():
            auc = [f"{v:.4f}" if v is not None else "—" for v in (r["auc_float32"], r["auc_int8"])]
            lines.append(f"| {name} | {m} | {r['rows']} | {r['max_abs_change']:.4f} | "
                         f"{r['mean_abs_change']:.4f} | {auc[0]} | {auc[1]} |")
    lines += ["", "| set | rows | verdicts agree | float32 rows/s | int8 rows/s | "
              "float32 CPU ms/row | int8 CPU ms/row |", "|---|---:|---:|---:|---:|---:|---:|"]
    for name, res in report["sets"].items():
        t = res["timing"]
        lines.append(f"| {name} | {res['rows']} | {res['verdict_agreement']:.4f} "
                     f"({res['verdicts_changed']} changed) | {t['float32']['rows_per_s']:.1f} | "
                     f"{t['int8']['rows_per_s']:.1f} | {t['float32']['cpu_ms_per_row']:.1f} | "
                     f"{t['int8']['cpu_ms_per_row']:.1f} |")
    s = report.get("embedder")
    if s:
        lines += ["", f"Embedder alone ({s['texts']} texts, {s['tokens']} tokens, one thread): "
                  f"float32 {s['float32']['texts_per_cpu_s']:.1f} texts/CPU-s, int8 "
                  f"{s['int8']['texts_per_cpu_s']:.1f} ({s['speed_int8_vs_float32']:.2f}x)"]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--public-rows", type=int, default=150, help="rows per public set")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", default="validation,example,public,embedder")
    ap.add_argument("--sweep", type=int, default=0, metavar="ROWS",
                    help="only the sweep of which dense layers can be int8, on ROWS rows")
    ap.add_argument("--profile", metavar="SET", help="only the operator profile of one graph")
    args = ap.parse_args(argv)
    if args.profile:
        print(profile(args.profile))
        return 0
    if args.sweep:
        res = {"load_before": os.getloadavg(), **sweep(args.sweep), "load_after": os.getloadavg()}
        with open(RESULTS.replace(".json", "_sweep.json"), "w") as fh:
            json.dump(res, fh, indent=1)
        print(sweep_table(res))
        print("load average before/after:", res["load_before"], res["load_after"])
        return 0
    only = set(args.only.split(","))
    report: dict = {"load_before": os.getloadavg(), "sets": {}}
    with tempfile.TemporaryDirectory(prefix="int8-") as tmp:
        sets = {"validation": lambda: os.path.join(ROOT, "validation", "cases.parquet"),
                "example": lambda: prepare_example(tmp),
                "public": lambda: public_sample(tmp, args.public_rows)}
        for name, cases in sets.items():
            if name in only:
                report["sets"][name] = compare_set(cases(), tmp, name)
                print(name, json.dumps(report["sets"][name]["timing"]), flush=True)
    if "embedder" in only:
        report["embedder"] = embedder_speed(args.repeats)
    report["load_after"] = os.getloadavg()
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS, "w") as fh:
        json.dump(report, fh, indent=1)
    print(table(report))
    print("load average before/after:", report["load_before"], report["load_after"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
