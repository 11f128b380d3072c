"""The verdict rules' maths: ordered rules over one row's metric values ->
(verdict, reason). Pure; the Beam stage (verdict.py) and the cascade both use it.

The first rule that matches decides. A rule whose metric is null (or was not
computed) is skipped, and the reason says so, so a PASS is never mistaken for
"checked and fine" when the check could not run. A row for which no rule could
be evaluated at all is WARN (undecided), never `otherwise`: five "I don't know."
answers must not PASS because every rule's metric was missing. A rule set aside
by its `unless` metric counts as not evaluated too: if no rule reads that
metric, nothing checked the row.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from schemas.reasons import NOT_ASKED
from schemas.records import MetricResult
from transforms.score.scoring import MISSING

# Nulls an `or_null` rule skips: the row lacks the metric's input, or the metric was
# not asked for it (outside the judge's sample; no judge or classifier configured).
# It matches only where the metric was asked and could not tell.
_NO_INPUT = frozenset(MISSING.values()) | NOT_ASKED


UNDECIDED = "WARN"  # the verdict of a row that no rule could judge


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def skipped_text(skipped: Sequence[tuple[str, str]]) -> str:
    """(metric, why) of skipped rules, for a reason: each metric once (its rules
    are skipped for one reason, its null), metrics skipped for the same reason
    together, in the rules' order: `groundedness and unsupported_facts (no
    contexts), reference_coverage (no expected_answer)`."""
    by_why: dict[str, list[str]] = {}
    for metric, why in skipped:
        metrics = by_why.setdefault(why, [])
        if metric not in metrics:
            metrics.append(metric)
    return ", ".join(f"{_and(metrics)} ({why})" for why, metrics in by_why.items())


def _and(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def matches_null(rule, result: MetricResult | None) -> bool:
    """An `or_null` rule matches a null the metric gave where it was asked and
    could not tell (a failed judge call), not one of a row it was not asked for."""
    return (getattr(rule, "or_null", False) and result is not None and result.value is None
            and result.error not in _NO_INPUT)


def decide(scores: Mapping[str, MetricResult], rules: Sequence, otherwise: str,
           bot_error: str | None = None) -> tuple[str, str]:
    """(verdict, reason) for one turn."""
    if bot_error:
        return "ERROR", f"bot failed: {bot_error}"
    if not rules:
        return otherwise, "no verdict rule for this run's metrics"
    skipped = []
    for rule in rules:
        if rule.unless is not None:
            other = scores.get(rule.unless)
            if other is not None and other.value is not None:  # a better metric decides
                skipped.append((rule.metric, f"set aside: {rule.unless} has a value"))
                continue
        result = scores.get(rule.metric)
        if matches_null(rule, result):
            return rule.verdict, f"{rule.metric} null: {result.error or 'no value'}"
        if result is None or result.value is None:
            why = "not computed" if result is None else (result.error or "null")
            skipped.append((rule.metric, why))
            continue
        v = result.value
        if rule.above is not None and v > rule.above:
            return rule.verdict, f"{rule.metric} {_fmt(v)} > {_fmt(rule.above)}"
        if rule.below is not None and v < rule.below:
            return rule.verdict, f"{rule.metric} {_fmt(v)} < {_fmt(rule.below)}"
    if len(skipped) == len(rules):
        return UNDECIDED, "no verdict rule could be evaluated: " + skipped_text(skipped)
    reason = "no rule matched"
    if skipped:
        reason += "; skipped: " + skipped_text(skipped)
    return otherwise, reason
