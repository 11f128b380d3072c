"""The judge metrics' arithmetic: small pure functions over verdicts.

Every function returns None when the formula has nothing to divide by; the
caller turns that into a null metric with the reason, never a 0.
"""
from __future__ import annotations

from typing import Mapping, Sequence


def share(numerator: int, denominator: int) -> float | None:
    return None if denominator == 0 else numerator / denominator


def factual_f1(tp: int, fp: int, fn: int) -> float | None:
    """F1 over classified statements: TP / (TP + (FP + FN) / 2); None when there are none."""
    if tp + fp + fn == 0:
        return None
    return tp / (tp + 0.5 * (fp + fn))


def answer_correctness(f1: float, similarity: float, factual_weight: float = 0.75,
                       similarity_weight: float = 0.25) -> float:
    """Weighted mean of factual F1 and answer similarity (weights need not sum to 1)."""
    return (factual_weight * f1 + similarity_weight * similarity) / (factual_weight
                                                                       + similarity_weight)


def average_precision(useful: Sequence[int]) -> float | None:
    """Average precision of ranked contexts from 0/1 usefulness verdicts:
    sum over useful ranks k of precision@k, divided by the number useful.
    0 when no context is useful (a real score: the retrieval missed); None with
    no contexts."""
    if not useful:
        return None
    hits, total = 0, 0.0
    for k, v in enumerate(useful, start=1):
        if v:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


def normalise_score(score: float, low: float, high: float) -> float:
    """A rubric's raw score on [low, high] mapped to [0, 1]."""
    return (score - low) / (high - low)


def majority(votes: Sequence[int | None], needed: int) -> int | None:
    """1 if at least `needed` votes flag, 0 if at least `needed` do not, else None
    (failed votes are None: 1 flag + 1 clear + 1 failure decides nothing)."""
    flags = sum(1 for v in votes if v == 1)
    clears = sum(1 for v in votes if v == 0)
    if flags >= needed:
        return 1
    if clears >= needed:
        return 0
    return None


def count_verdicts(verdicts: Mapping[str, int], ids: Sequence[str]) -> tuple[int, int]:
    """(supported, total) over the given ids."""
    return sum(1 for i in ids if verdicts[i]), len(ids)
