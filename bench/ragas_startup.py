"""Ragas' side of bench/startup.py and bench/against_ragas.py: Ragas' non-LLM
metrics over the same rows, start to exit.

    /tmp/ragas-venv/bin/python bench/ragas_startup.py CASES.parquet OUT.json [shared|nonllm]

Runs under Ragas' own interpreter (Ragas 0.4.3 pins langchain < 1): bench/
against_ragas.py makes that venv (`RAGAS_PINS` there); by hand, as bench/
ragas_judge_calls.py's docstring says, then add what Ragas' BLEU, ROUGE and string
distance import but do not require: `pip install sacrebleu==2.6.0
rouge_score==0.1.2 rapidfuzz`.

- `shared` (default): the four metrics evalbeam also computes, ExactMatch,
  BleuScore and RougeScore (rouge1 and rougeL, F-measure; Ragas always stems,
  as evalbeam does with `rouge.use_stemmer: true`).
- `nonllm`: Ragas' six metrics that need no model and only a response and a
  reference: ExactMatch, StringPresence, BleuScore, RougeScore (rougeL),
  ChrfScore, NonLLMStringSimilarity (Levenshtein).

One `ragas.evaluate` over the rows' question / answer / expected_answer as
user_input / response / reference (a missing answer or reference as "").
Telemetry is off (RAGAS_DO_NOT_TRACK). Writes the row count, each metric's mean
and every row's values by case_id to OUT.json, which shows it ran and lets the
caller compare values row by row.
"""
from __future__ import annotations

import json
import os
import sys
import warnings

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")  # no usage reports over the network


def metrics_for(suite: str) -> list:
    from ragas.metrics import BleuScore, ExactMatch, RougeScore
    if suite == "shared":
        metrics = [ExactMatch(), BleuScore(), RougeScore(rouge_type="rouge1"),
                   RougeScore(rouge_type="rougeL")]
        for m in metrics[2:]:
            m.name = m.rouge_type  # two RougeScores would share one column name
        return metrics
    if suite == "nonllm":
        from ragas.metrics import ChrfScore, NonLLMStringSimilarity, StringPresence
        return [ExactMatch(), StringPresence(), BleuScore(), RougeScore(), ChrfScore(),
                NonLLMStringSimilarity()]
    raise SystemExit(f"unknown suite {suite!r}: shared or nonllm")


def main(cases: str, out: str, suite: str = "shared") -> None:
    warnings.simplefilter("ignore")
    import pyarrow.parquet as pq
    from ragas import EvaluationDataset, evaluate
    rows = pq.read_table(cases, columns=["case_id", "question", "answer",
                                         "expected_answer"]).to_pylist()
    data = EvaluationDataset.from_list([
        {"user_input": r["question"], "response": r["answer"] or "",
         "reference": r["expected_answer"] or ""} for r in rows])
    result = evaluate(data, metrics=metrics_for(suite), show_progress=False)
    keys = list(result.scores[0]) if result.scores else []
    # Ragas names a column "rouge1(mode=fmeasure)": keep the metric's name
    values = {k.split("(")[0]: {r["case_id"]: float(s[k]) for r, s in zip(rows, result.scores)}
              for k in keys}
    means = {k: sum(v.values()) / max(1, len(rows)) for k, v in values.items()}
    with open(out, "w", encoding="utf-8") as fh:
        json.dump({"rows": len(rows), "suite": suite, "means": means, "values": values}, fh)


if __name__ == "__main__":
    main(*sys.argv[1:4])
