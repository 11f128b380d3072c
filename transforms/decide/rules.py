"""The verdict rules' maths: ordered rules over one row's metric values ->
(verdict, reason). Pure; the Beam stage (verdict.py) and the cascade both use it.

The first rule that matches decides. A rule whose metric is null (or was not
computed) is skipped, and the reason says so, so a PASS is never mistaken for
"checked and fine" when the check could not run. A row for which no rule could
be evaluated at all is WARN (undecided), never `otherwise`: five "I don't know."
answers must not PASS because every rule's metric was missing. A rule set aside
by its `unless` metric counts as not evaluated too: if no rule reads that
metric, nothing checked the row.

A rule with `when` applies only to a row whose `when` metric has a value
meeting its bound: on a row where that value does not meet it the rule does
not apply (it is not skipped: the row was checked, and it is left to the next
rules); on a row where that metric is null or not computed the rule is
skipped like any other. A row is WARN (undecided) when a rule was skipped and
none that applies could be evaluated; when no rule applies at all, it gets
`otherwise`.
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


def _null_why(result: MetricResult | None) -> str:
    return "not computed" if result is None else (result.error or "null")


def skip_why(rule, scores: Mapping[str, MetricResult]) -> str:
    """Why a rule that is not readable() was skipped: its own metric's null where
    it has one that the rule cannot match (it says more: "no contexts"), else its
    `when` metric's gap."""
    own = scores.get(rule.metric)
    if (own is None or own.value is None) and not matches_null(rule, own):
        return _null_why(own)
    return when_gap(rule, scores) or _null_why(own)


def when_gap(rule, scores: Mapping[str, MetricResult]) -> str | None:
    """Why a rule with `when` is set aside for a row: its `when` metric has no
    value (None: it has one, or the rule has no `when`)."""
    when = getattr(rule, "when", None)
    if when is None:
        return None
    cond = scores.get(when.metric)
    if cond is not None and cond.value is not None:
        return None
    return f"set aside: {when.metric} " + (
        "not computed" if cond is None else f"null: {cond.error}" if cond.error else "null")


def when_text(when, value: float | None = None) -> str:
    """`answer_length > 140`, or with the row's value `answer_length 240 > 140`."""
    op, bound = (">", when.above) if when.above is not None else ("<", when.below)
    shown = "" if value is None else f" {_fmt(value)}"
    return f"{when.metric}{shown} {op} {_fmt(bound)}"


def when_holds(when, value: float) -> bool:
    return value > when.above if when.above is not None else value < when.below


def readable(rule, scores: Mapping[str, MetricResult]) -> bool:
    """The rule could be evaluated on the row if it applies: its metric has a
    value (or a null an `or_null` rule matches) and its `when` metric a value."""
    result = scores.get(rule.metric)
    return when_gap(rule, scores) is None and (
        result is not None and result.value is not None or matches_null(rule, result))


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
    skipped, evaluated = [], 0
    for rule in rules:
        if rule.unless is not None:
            other = scores.get(rule.unless)
            if other is not None and other.value is not None:  # a better metric decides
                skipped.append((rule.metric, f"set aside: {rule.unless} has a value"))
                continue
        where = ""
        if getattr(rule, "when", None) is not None:
            if when_gap(rule, scores):
                skipped.append((rule.metric, skip_why(rule, scores)))
                continue
            cond = scores[rule.when.metric].value
            if not when_holds(rule.when, cond):
                continue  # the rule does not apply to this row
            where = f" where {when_text(rule.when, cond)}"
        result = scores.get(rule.metric)
        if matches_null(rule, result):
            return rule.verdict, f"{rule.metric} null: {result.error or 'no value'}{where}"
        if result is None or result.value is None:
            skipped.append((rule.metric, _null_why(result)))
            continue
        evaluated += 1
        v = result.value
        if rule.above is not None and v > rule.above:
            return rule.verdict, f"{rule.metric} {_fmt(v)} > {_fmt(rule.above)}{where}"
        if rule.below is not None and v < rule.below:
            return rule.verdict, f"{rule.metric} {_fmt(v)} < {_fmt(rule.below)}{where}"
    if skipped and not evaluated:
        return UNDECIDED, "no verdict rule could be evaluated: " + skipped_text(skipped)
    reason = "no rule matched"
    if skipped:
        reason += "; skipped: " + skipped_text(skipped)
    return otherwise, reason
