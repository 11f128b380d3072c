"""The cascade, `judge.escalate: undecided`: offline metrics decide what they
can; only the rows they leave undecided (WARN) are sent to the judge and the
classifier, whose rules then decide them.

    offline Score -> Decide -> WARN rows -> Enrich (judge, classifier) -> Score -> Decide

Every row passes every stage (a linear graph, no split and merge): rows
decided offline carry skip features, so the judge and the classifier pass
them through without a call and their metrics are null with the reason
("decided offline (PASS)"); their offline verdict stands. An escalated row
gets the verdict of the escalation rules (the verdict rules on the judge's
and the classifier's metrics, in their order; `otherwise` when none
matches; an `or_null` rule matches a failed call, as it does without the
cascade; a rule with `when` needs its `when` metric's value too); when none
of those metrics could be computed (a failed call, a spend cap, an open
breaker, not sampled) the offline WARN stands, decided_by says
"escalation_failed" (not "offline": the offline rules had left it
undecided) and the reason says why.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from schemas.records import MetricResult, Turn
from transforms.decide.rules import UNDECIDED, decide, readable, skipped_text, skip_why
from transforms.enrich.classifier.reading import SKIP as CLASSIFIER_SKIP
from transforms.enrich.judge.keys import JUDGE_SKIP

ESCALATED = "cascade:escalated"  # feature: the row was sent to the judge and classifier
# results/ decided_by: the offline rules decided; the escalation rules did; the
# row was escalated but no escalation metric could be computed (its WARN stands)
OFFLINE, BY_ESCALATION, ESCALATION_FAILED = "offline", "escalated", "escalation_failed"


DECIDED_OFFLINE = "decided offline"


def decided_offline(verdict: str) -> str:
    """Why an escalation metric is null on a row the cascade did not escalate."""
    return f"{DECIDED_OFFLINE} ({verdict})"


def mark_undecided(turn: Turn) -> Turn:
    """An undecided row is marked for escalation; any other keeps its verdict
    and tells the judge and the classifier not to ask."""
    if turn.verdict == UNDECIDED and turn.error is None:
        return turn.evolve(features={**turn.features, ESCALATED: True})
    why = decided_offline(turn.verdict)
    return turn.evolve(features={**turn.features, JUDGE_SKIP: why, CLASSIFIER_SKIP: why})


def escalated_decision(scores: Mapping[str, MetricResult], rules: Sequence, otherwise: str,
                       offline_verdict: str, offline_reason: str) -> tuple[str, str, str]:
    """(verdict, reason, decided_by) of an escalated row."""
    if any(readable(r, scores) for r in rules):
        verdict, reason = decide(scores, rules, otherwise)
        return verdict, f"escalated: {reason}", BY_ESCALATION
    why = skipped_text([(r.metric, skip_why(r, scores)) for r in rules])
    return (offline_verdict, f"escalated, but no escalation metric could be computed: {why}; "
            f"offline: {offline_reason}", ESCALATION_FAILED)
