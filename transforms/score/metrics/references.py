"""Several references per case: each metric takes the best score over them,
as the reference implementations do with multiple references (rouge-score's
`score_multi`: the reference with the highest F1; BERTScore: the maximum over
the references). BLEU needs nothing here: sacrebleu counts n-grams against all
references at once.
"""
from __future__ import annotations

from typing import Callable, Sequence

from schemas.records import MetricResult


def best_result(results: Sequence[MetricResult]) -> MetricResult:
    """The result with the highest value (the first on ties); nulls only when
    no reference could be scored. With several references the details say
    which one won (1-based)."""
    scored = [(i, r) for i, r in enumerate(results) if r.value is not None]
    if not scored:
        return results[0]
    i, best = max(scored, key=lambda ir: (ir[1].value, -ir[0]))
    if len(results) > 1:
        best.details.update(reference=i + 1, references=len(results))
    return best


def best_over(references: Sequence[str], score: Callable[[str], MetricResult]) -> MetricResult:
    """score(reference) for every reference, then the best (see best_result)."""
    return best_result([score(ref) for ref in references])
