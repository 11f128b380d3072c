"""Baseline: the deterministic suite in a plain Python loop, without Beam.

    python bench/baseline_loop.py --input CASES.parquet --output DIR

What a user would write by hand to score recorded answers (bot "recorded",
type precomputed) with the same metrics as evalbeam's deterministic suite:

* BLEU: `sacrebleu.sentence_bleu(answer, [expected]).score / 100`;
* ROUGE-1/2/L F1: one `rouge_score.rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"])`;
* exact_match, keyword_recall, answer_length, politeness, lexical_relevance,
  completeness, hallucination and unsupported_facts (read off hallucination's
  result): evalbeam's own plain functions
  (transforms/metrics), lexical_relevance with an IdfTable fitted over the
  input corpus in a first pass (the texts the pipeline's DocumentFrequencyFn
  counts: question, expected answer, answer and every context);
* latency_ms: null, nothing was timed (as evalbeam's precomputed bot reports);
* verdict: `transforms.decide.rules.decide` with `pipeline.config.DEFAULT_RULES`.

Reads the Parquet batch by batch and writes DIR/results.parquet (one row per
case) and DIR/scores.parquet (one row per case × metric, details as JSON like
evalbeam's scores table) in row groups of 10,000 rows.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import sacrebleu
from rouge_score import rouge_scorer

from pipeline.config import DEFAULT_RULES
from schemas.records import MetricResult
from transforms.score.metrics import hallucination as hall
from transforms.score.metrics import lexical, relevance
from transforms.decide.rules import decide

BATCH = 10_000
BOT = "recorded"
RUN_ID = "baseline"

RESULTS_SCHEMA = pa.schema([
    ("run_id", pa.string()), ("bot", pa.string()), ("case_id", pa.string()),
    ("suite", pa.string()), ("question", pa.string()), ("expected_answer", pa.string()),
    ("answer", pa.string()), ("contexts", pa.list_(pa.string())), ("tags", pa.list_(pa.string())),
    ("latency_ms", pa.float64()), ("verdict", pa.string()), ("verdict_reason", pa.string()),
])
SCORES_SCHEMA = pa.schema([
    ("run_id", pa.string()), ("bot", pa.string()), ("case_id", pa.string()),
    ("suite", pa.string()), ("metric", pa.string()), ("value", pa.float64()),
    ("details", pa.string()), ("error", pa.string()),
])
COLUMNS = ["case_id", "question", "expected_answer", "contexts", "answer", "suite", "tags"]


def fit_idf(path: str) -> relevance.IdfTable:
    """First pass: document frequencies over every text of the input."""
    df: Counter = Counter()
    n = 0
    pf = pq.ParquetFile(path)
    for batch in pf.iter_batches(batch_size=BATCH, columns=COLUMNS):
        for row in batch.to_pylist():
            texts = [row["question"]]
            texts += [t for t in (row["expected_answer"], row["answer"]) if t]
            texts += row["contexts"] or []
            for text in texts:
                df.update(relevance.document_terms(text))
                n += 1
    return relevance.IdfTable.from_document_frequencies(df, n)


def _null(reason: str) -> MetricResult:
    return MetricResult(None, {}, reason)


def score_row(row: dict, idf, rouge) -> dict[str, MetricResult]:
    answer, expected = row["answer"], row["expected_answer"]
    question, contexts = row["question"], row["contexts"]
    s: dict[str, MetricResult] = {}
    s["exact_match"] = lexical.exact_match(answer, expected)
    s["keyword_recall"] = lexical.keyword_recall(answer, expected)
    s["answer_length"] = lexical.answer_length(answer)
    s["politeness"] = lexical.politeness(answer)
    # a recorded answer has no measured latency (evalbeam's precomputed bot: null)
    s["latency_ms"] = _null("no latency measured (recorded answer)")
    if answer is None or expected is None or not expected.strip():
        reason = "no answer" if answer is None else "no expected answer"
        for m in ("bleu", "rouge1", "rouge2", "rougeL"):
            s[m] = _null(reason)
    else:
        b = sacrebleu.sentence_bleu(answer, [expected])
        s["bleu"] = MetricResult(min(1.0, b.score / 100.0),
                                 {"precisions": [p / 100.0 for p in b.precisions], "bp": b.bp,
                                  "sys_len": b.sys_len, "ref_len": b.ref_len})
        for m, r in rouge.score(expected, answer).items():
            s[m] = MetricResult(r.fmeasure, {"precision": r.precision, "recall": r.recall})
    s["lexical_relevance"] = relevance.lexical_relevance(question, answer, idf)
    s["completeness"] = relevance.completeness(question, answer)
    if not contexts:
        s["hallucination"] = _null("no contexts")
    else:
        # with the question and the expected answer, as evalbeam's scorer calls it
        s["hallucination"] = hall.hallucination(answer, contexts, question=question,
                                                references=[expected] if expected else [])
    s["unsupported_facts"] = hall.unsupported_facts(s["hallucination"])  # read off the result
    return s


def _to_json(d):
    return json.dumps(d, ensure_ascii=False, sort_keys=True, default=str) if d else None


def run(inp: str, out: str) -> dict:
    os.makedirs(out, exist_ok=True)
    t0 = time.perf_counter()
    idf = fit_idf(inp)
    t_idf = time.perf_counter() - t0
    rouge = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"])
    rw = pq.ParquetWriter(os.path.join(out, "results.parquet"), RESULTS_SCHEMA)
    sw = pq.ParquetWriter(os.path.join(out, "scores.parquet"), SCORES_SCHEMA)
    n_rows = n_scores = 0
    verdicts: Counter = Counter()
    pf = pq.ParquetFile(inp)
    for batch in pf.iter_batches(batch_size=BATCH, columns=COLUMNS):
        res = {n: [] for n in RESULTS_SCHEMA.names}
        sco = {n: [] for n in SCORES_SCHEMA.names}
        for row in batch.to_pylist():
            scores = score_row(row, idf, rouge)
            verdict, reason = decide(scores, DEFAULT_RULES, "PASS",
                                     None if row["answer"] is not None else "no recorded answer")
            verdicts[verdict] += 1
            for k, v in (("run_id", RUN_ID), ("bot", BOT), ("case_id", row["case_id"]),
                         ("suite", row["suite"]), ("question", row["question"]),
                         ("expected_answer", row["expected_answer"]), ("answer", row["answer"]),
                         ("contexts", row["contexts"]), ("tags", row["tags"]),
                         ("latency_ms", None), ("verdict", verdict), ("verdict_reason", reason)):
                res[k].append(v)
            for metric, r in scores.items():
                sco["run_id"].append(RUN_ID)
                sco["bot"].append(BOT)
                sco["case_id"].append(row["case_id"])
                sco["suite"].append(row["suite"])
                sco["metric"].append(metric)
                sco["value"].append(r.value)
                sco["details"].append(_to_json(r.details))
                sco["error"].append(r.error)
        rw.write_table(pa.table(res, schema=RESULTS_SCHEMA))
        sw.write_table(pa.table(sco, schema=SCORES_SCHEMA))
        n_rows += batch.num_rows
        n_scores += len(sco["metric"])
    rw.close()
    sw.close()
    return {"rows": n_rows, "scores_rows": n_scores, "verdicts": dict(verdicts),
            "idf_seconds": round(t_idf, 2), "seconds": round(time.perf_counter() - t0, 2)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input", required=True)
    ap.add_argument("--output", required=True)
    args = ap.parse_args(argv)
    summary = run(args.input, args.output)
    print(json.dumps(summary))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
