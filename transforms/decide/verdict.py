"""ApplyVerdict: the Beam stage that gives each row its PASS / WARN / FAIL / ERROR
from the ordered verdict rules (transforms/decide/rules.py), alone or as a stage of
the cascade (transforms/decide/cascade.py).
"""
from __future__ import annotations

from typing import Sequence

import apache_beam as beam

from schemas.records import Turn
from transforms.decide import cascade
from transforms.decide.rules import UNDECIDED, decide

SINGLE, OFFLINE, ESCALATION = "single", "offline", "escalation"  # ApplyVerdict's stages


class ApplyVerdict(beam.DoFn):
    """stage: SINGLE (no cascade), OFFLINE (the cascade's first decision:
    decided_by "offline") or ESCALATION (only escalated rows are decided again,
    transforms/decide/cascade.py). The evalbeam.verdict counters count each
    row's final verdict once."""

    def __init__(self, rules: Sequence, otherwise: str, stage: str = SINGLE):
        self._rules, self._otherwise, self._stage = tuple(rules), otherwise, stage

    def process(self, turn: Turn):
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
