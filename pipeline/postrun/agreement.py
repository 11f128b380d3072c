"""How well metric values and verdicts agree with people's labels.

Small pure functions (no Beam, no I/O): `evalbeam calibrate` and
bench/validity.py both use them, so the figures in VALIDITY.md and what a
team computes on its own labels are the same computation.

Labels are verdict names or numbers in [0, 1] (see schemas.cases.parse_label):
PASS = 1, WARN = 0.5, FAIL = 0. An answer is *acceptable* when its label is
above 0.5; a verdict accepts an answer when it is PASS (WARN asks a person to
look, so it does not count as accepting).
"""
from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections import defaultdict
from dataclasses import dataclass
from typing import Hashable, Iterable, Sequence

VERDICT_VALUES = {"PASS": 1.0, "WARN": 0.5, "FAIL": 0.0}
VERDICTS = ("PASS", "WARN", "FAIL", "ERROR")


def label_value(label: str | None) -> float | None:
    """PASS 1, WARN 0.5, FAIL 0, or the number itself; None when unlabelled."""
    if label is None:
        return None
    if label in VERDICT_VALUES:
        return VERDICT_VALUES[label]
    return float(label)


def acceptable(label: str | None) -> bool | None:
    value = label_value(label)
    return None if value is None else value > 0.5


def label_category(label: str) -> str:
    """The verdict a label stands for (numbers: > 2/3 PASS, < 1/3 FAIL, else WARN)."""
    if label in VERDICT_VALUES:
        return label
    value = float(label)
    return "PASS" if value > 2 / 3 else "FAIL" if value < 1 / 3 else "WARN"


def _oriented(values: Sequence[float], higher_is_better: bool) -> list[float]:
    return list(values) if higher_is_better else [-v for v in values]


def roc_auc(values: Sequence[float], positive: Sequence[bool],
            higher_is_better: bool = True) -> float | None:
    """P(a random acceptable answer scores better than a random unacceptable
    one), ties counting one half (the Mann-Whitney U statistic / n+ n-).
    None when one class is empty."""
    scores = _oriented(values, higher_is_better)
    n_pos = sum(1 for p in positive if p)
    n_neg = len(scores) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    rank_sum, i = 0.0, 0
    while i < len(order):  # average ranks over ties
        j = i
        while j + 1 < len(order) and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        avg_rank = (i + j) / 2 + 1
        rank_sum += sum(avg_rank for k in range(i, j + 1) if positive[order[k]])
        i = j + 1
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def pairwise_accuracy(items: Iterable[tuple[Hashable, float, bool]],
                      higher_is_better: bool = True) -> tuple[float | None, int]:
    """Within each group (e.g. the answers to one question), the share of
    (acceptable, unacceptable) pairs the metric orders correctly, ties one
    half. Returns (accuracy, number of pairs). Sorted and bisected per group,
    so a question with thousands of answers costs n log n, not n²."""
    groups: dict[Hashable, list[tuple[float, bool]]] = defaultdict(list)
    for group, value, ok in items:
        groups[group].append((value if higher_is_better else -value, ok))
    wins = 0.0
    pairs = 0
    for members in groups.values():
        bad = sorted(v for v, ok in members if not ok)
        for good in (v for v, ok in members if ok):
            below = bisect_left(bad, good)
            wins += below + 0.5 * (bisect_right(bad, good) - below)
            pairs += len(bad)
    return (wins / pairs if pairs else None), pairs


@dataclass(frozen=True)
class Threshold:
    """The cut that separates acceptable from unacceptable answers best."""

    value: float            # acceptable when metric >= value (or <= for lower-is-better)
    youden_j: float         # sensitivity + specificity - 1 at that cut
    accuracy: float
    higher_is_better: bool

    def rule(self, metric: str, verdict: str = "FAIL") -> dict:
        """The verdict rule that fails what falls on the wrong side of the cut."""
        key = "below" if self.higher_is_better else "above"
        return {"metric": metric, key: round(self.value, 4), "verdict": verdict}


def best_threshold(values: Sequence[float], positive: Sequence[bool],
                   higher_is_better: bool = True) -> Threshold | None:
    """The cut maximising Youden's J (balanced: it does not favour the larger
    class), cutting midway between adjacent distinct values; the first such cut
    (lowest oriented value) wins ties. One sweep over the sorted distinct
    values, so large labelled sets cost n log n."""
    n_pos = sum(1 for p in positive if p)
    n_neg = len(values) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    counts: dict[float, list[int]] = defaultdict(lambda: [0, 0])  # value -> [pos, neg]
    for score, ok in zip(_oriented(values, higher_is_better), positive):
        counts[score][0 if ok else 1] += 1
    distinct = sorted(counts)
    cuts = [distinct[0]] + [(a + b) / 2 for a, b in zip(distinct, distinct[1:])] + \
        [distinct[-1] + 1.0]
    tp, tn = n_pos, 0  # accepted when score >= cut: the first cut accepts everything
    best = None
    for k, cut in enumerate(cuts):
        if k:  # distinct[k - 1] falls below this cut
            pos, neg = counts[distinct[k - 1]]
            tp, tn = tp - pos, tn + neg
        j = tp / n_pos + tn / n_neg - 1
        if best is None or j > best[0] + 1e-12:
            best = (j, cut, (tp + tn) / len(values))
    j, cut, acc = best
    return Threshold(cut if higher_is_better else -cut, j, acc, higher_is_better)


def cohen_kappa(pairs: Sequence[tuple[Hashable, Hashable]]) -> float | None:
    """Cohen's kappa of (rater A, rater B) category pairs; None when undefined
    (no pairs, or chance agreement is 1)."""
    n = len(pairs)
    if n == 0:
        return None
    observed = sum(1 for a, b in pairs if a == b) / n
    count_a: dict = defaultdict(int)
    count_b: dict = defaultdict(int)
    for a, b in pairs:
        count_a[a] += 1
        count_b[b] += 1
    expected = sum(count_a[c] * count_b.get(c, 0) for c in count_a) / (n * n)
    if math.isclose(expected, 1.0):
        return None
    return (observed - expected) / (1 - expected)


@dataclass(frozen=True)
class VerdictAgreement:
    n: int
    accuracy: float | None   # verdict accepts (PASS) exactly the acceptable answers
    kappa: float | None      # Cohen's kappa of that binary agreement
    confusion: dict          # {label category: {verdict: count}}
    acceptable_failed: float | None    # share of acceptable answers given FAIL
    unacceptable_passed: float | None  # share of unacceptable answers given PASS


def verdict_agreement(rows: Iterable[tuple[str, str]]) -> VerdictAgreement:
    """(label, verdict) pairs -> accuracy, kappa and the confusion matrix."""
    rows = [(label, verdict) for label, verdict in rows if label is not None]
    binary = [(acceptable(label), verdict == "PASS") for label, verdict in rows]
    confusion: dict = {c: {v: 0 for v in VERDICTS} for c in ("PASS", "WARN", "FAIL")}
    for label, verdict in rows:
        confusion[label_category(label)][verdict if verdict in VERDICTS else "ERROR"] += 1
    good = [verdict for label, verdict in rows if acceptable(label)]
    bad = [verdict for label, verdict in rows if not acceptable(label)]
    return VerdictAgreement(
        n=len(rows),
        accuracy=(sum(1 for a, b in binary if a == b) / len(binary)) if binary else None,
        kappa=cohen_kappa(binary),
        confusion=confusion,
        acceptable_failed=(good.count("FAIL") / len(good)) if good else None,
        unacceptable_passed=(bad.count("PASS") / len(bad)) if bad else None)
