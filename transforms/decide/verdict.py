"""ApplyVerdict: ordered rules over metric values -> PASS / WARN / FAIL / ERROR.

The first rule that matches decides. A rule whose metric is null (or was not
computed) is skipped, and the reason says so, so a PASS is never mistaken for
"checked and fine" when the check could not run. A row for which no rule could
be evaluated at all is WARN (undecided), never `otherwise`: five "I don't know."
answers must not PASS because every rule's metric was missing.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import apache_beam as beam

from schemas.records import MetricResult, Turn
from transforms.score.scoring import MISSING

_NO_INPUT = frozenset(MISSING.values())  # a null because the row lacks the metric's input


UNDECIDED = "WARN"  # the verdict of a row that no rule could judge


def _fmt(x: float) -> str:
    return f"{x:.4g}"


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
            if other is not None and other.value is not None:
                continue  # set aside on purpose: a better metric has a value
        result = scores.get(rule.metric)
        if (getattr(rule, "or_null", False) and result is not None and result.value is None
                and result.error not in _NO_INPUT):
            return rule.verdict, f"{rule.metric} null: {result.error or 'no value'}"
        if result is None or result.value is None:
            why = "not computed" if result is None else (result.error or "null")
            skipped.append(f"{rule.metric} ({why})")
            continue
        v = result.value
        if rule.above is not None and v > rule.above:
            return rule.verdict, f"{rule.metric} {_fmt(v)} > {_fmt(rule.above)}"
        if rule.below is not None and v < rule.below:
            return rule.verdict, f"{rule.metric} {_fmt(v)} < {_fmt(rule.below)}"
    if len(skipped) == len(rules):
        return UNDECIDED, "no verdict rule could be evaluated: " + ", ".join(skipped)
    reason = "no rule matched"
    if skipped:
        reason += "; skipped: " + ", ".join(skipped)
    return otherwise, reason


SINGLE, OFFLINE, ESCALATION = "single", "offline", "escalation"  # ApplyVerdict's stages


class ApplyVerdict(beam.DoFn):
    """stage: SINGLE (no cascade), OFFLINE (the cascade's first decision:
    decided_by "offline") or ESCALATION (only escalated rows are decided again,
    transforms/decide/cascade.py). The evalbeam.verdict counters count each
    row's final verdict once."""

    def __init__(self, rules: Sequence, otherwise: str, stage: str = SINGLE):
        self._rules, self._otherwise, self._stage = tuple(rules), otherwise, stage

    def process(self, turn: Turn):
        from transforms.decide import cascade
        if self._stage == ESCALATION:
            if not turn.features.get(cascade.ESCALATED):
                yield turn
                return
            verdict, reason, by = cascade.escalated_decision(
                turn.scores, self._rules, self._otherwise, turn.verdict, turn.verdict_reason)
        else:
            verdict, reason = decide(turn.scores, self._rules, self._otherwise, turn.error)
            by = cascade.OFFLINE if self._stage == OFFLINE else None
        if self._stage != OFFLINE or verdict != UNDECIDED or turn.error is not None:
            beam.metrics.Metrics.counter("evalbeam.verdict", verdict).inc()
        yield turn.evolve(verdict=verdict, verdict_reason=reason, decided_by=by)
