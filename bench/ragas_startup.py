"""Ragas' side of bench/startup.py: its four metrics that evalbeam also computes
(exact match, BLEU, ROUGE-1, ROUGE-L F1) over the same rows, start to exit.

    /tmp/ragas-venv/bin/python bench/ragas_startup.py CASES.parquet OUT.json

Runs under Ragas' own interpreter (Ragas 0.4.3 pins langchain < 1; make the
venv as bench/ragas_judge_calls.py's docstring says, then add what Ragas' BLEU
and ROUGE import, which it does not require: `/tmp/ragas-venv/bin/pip install
sacrebleu==2.6.0 rouge_score==0.1.2`, evalbeam's versions). One `ragas.evaluate`
with ExactMatch, BleuScore and RougeScore (rouge1 and rougeL, F-measure: Ragas
stems, as evalbeam's `rouge.use_stemmer` default does not; the values are
written for reference, not compared), the rows' question / answer /
expected_answer as user_input / response / reference (a missing answer or
reference as ""). Telemetry is off (RAGAS_DO_NOT_TRACK). Writes the mean of each
metric and the row count to OUT.json, which shows it ran.
"""
from __future__ import annotations

import json
import os
import sys
import warnings

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")  # no usage reports over the network


def main(cases: str, out: str) -> None:
    warnings.simplefilter("ignore")
    import pyarrow.parquet as pq
    from ragas import EvaluationDataset, evaluate
    from ragas.metrics import BleuScore, ExactMatch, RougeScore
    rows = pq.read_table(cases, columns=["question", "answer", "expected_answer"]).to_pylist()
    data = EvaluationDataset.from_list([
        {"user_input": r["question"], "response": r["answer"] or "",
         "reference": r["expected_answer"] or ""} for r in rows])
    metrics = [ExactMatch(), BleuScore(), RougeScore(rouge_type="rouge1"),
               RougeScore(rouge_type="rougeL")]
    for m in metrics[2:]:
        m.name = m.rouge_type  # two RougeScores would share one column name
    result = evaluate(data, metrics=metrics, show_progress=False)
    means = {key: sum(float(row[key]) for row in result.scores) / max(1, len(rows))
             for key in (result.scores[0] if result.scores else {})}
    with open(out, "w", encoding="utf-8") as fh:
        json.dump({"rows": len(rows), "means": means}, fh)


if __name__ == "__main__":
    main(*sys.argv[1:3])
