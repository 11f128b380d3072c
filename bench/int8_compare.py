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
    from transforms.score.metrics.semantic import MAX_SENTENCES, split_sentences
    rows = pq.read_table(os.path.join(ROOT, "validation", "cases.parquet")).to_pylist()
    texts = {t for r in rows for t in (r["question"], r["expected_answer"], r["answer"]) if t}
    texts |= {s for r in rows if r["answer"] for s in split_sentences(r["answer"])[:MAX_SENTENCES]}
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
    args = ap.parse_args(argv)
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
