"""The judge metrics, computed from the outcomes JudgeTurns attached to a Turn.

Each function reads features only (no calls): the ParDo per metric stays a
cheap, pure step, and a metric whose judge question failed is null with that
question's error, never 0.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from schemas.records import MetricResult, Turn
from transforms.enrich.judge import formulas
from transforms.enrich.judge.entities import entities_in, rule_entities
from transforms.enrich.judge.keys import (ANSWER_STATEMENTS, CORRECTNESS, DEFAULT_SCALE, GROUNDING,
                                          JUDGE_ERROR, JUDGE_SKIP, JUDGED, REFERENCE, SAFETY,
                                          USEFULNESS, answer_ids, context_ids, reference_ids,
                                          rubric_feature)
from schemas.reasons import NO_JUDGE  # noqa: F401 (the rules read it too)
from transforms.remote.budget import BUDGET_REACHED

if TYPE_CHECKING:  # the outcomes' type only: a run of the offline rule metric
    # (context_entities_recall without a judge) never imports the judge's HTTP client
    from transforms.enrich.judge.ask import JudgeOutcome

LISTED = 10  # claims quoted in details


class _Null(Exception):
    """Raised inside a computation: the metric is null with this reason (and
    the failed question's details: its raw replies)."""

    def __init__(self, reason: str, details: Mapping[str, Any] | None = None):
        super().__init__(reason)
        self.details = dict(details or {})


AUDIT_KEYS = ("raw", "trace", "repaired")


def _outcome(turn: Turn, feature: str, missing: str) -> Any:
    """The value of a judge outcome, or _Null with why it is not there."""
    if turn.features.get(JUDGE_SKIP):  # not asked for this row (not sampled, ...)
        raise _Null(turn.features[JUDGE_SKIP])
    if JUDGED not in turn.features:
        raise _Null(NO_JUDGE)
    o: JudgeOutcome | None = turn.features.get(feature) or turn.features.get(JUDGE_ERROR)
    if o is None:
        raise _Null(missing)
    if not o.ok:
        task = feature.split(":", 1)[1]
        raise _Null(o.error, {"judge": {task: {k: o.details[k] for k in AUDIT_KEYS
                                               if k in o.details}}})
    return o.value


def audit(turn: Turn, *features: str) -> dict[str, Any]:
    """{"judge": {task: {raw, trace, repaired}}} for the questions a metric used,
    where there is something to show (keep_trace, or a repaired reply)."""
    out = {}
    for f in features:
        o = turn.features.get(f)
        kept = {k: o.details[k] for k in AUDIT_KEYS if o is not None and k in o.details}
        if kept:
            out[f.split(":", 1)[1]] = kept
    return {"judge": out} if out else {}


def _guarded(*features: str):
    """Wrap a metric: _Null becomes a null result; the audit of `features` is added."""
    def wrap(fn):
        def run(turn: Turn, opts: Mapping[str, Any], side: Any = None) -> MetricResult:
            try:
                result = fn(turn, opts)
            except _Null as why:
                return MetricResult.null(str(why), **why.details)
            result.details.update(audit(turn, *features))
            return result
        return run
    return wrap


def _answer_claims(turn: Turn) -> list[str]:
    claims = _outcome(turn, ANSWER_STATEMENTS, "no answer statements")["statements"]
    if not claims:
        raise _Null("the answer makes no claim")
    return claims


def _reference_claims(turn: Turn) -> list[str]:
    claims = _outcome(turn, REFERENCE, "no reference statements")["statements"]
    if not claims:
        raise _Null("the reference makes no claim")
    return claims


def _split(verdicts: Mapping[str, tuple[int, str]], ids, texts) -> tuple[list[str], list[str]]:
    """(texts with verdict 1, texts with verdict 0)."""
    yes = [t for i, t in zip(ids, texts) if verdicts[i][0]]
    no = [t for i, t in zip(ids, texts) if not verdicts[i][0]]
    return yes, no


@_guarded(ANSWER_STATEMENTS, GROUNDING)
def faithfulness(turn: Turn, opts) -> MetricResult:
    claims = _answer_claims(turn)
    verdicts = _outcome(turn, GROUNDING, "no grounding verdicts")
    yes, no = _split(verdicts, answer_ids(len(claims)), claims)
    return MetricResult(len(yes) / len(claims), {"claims": len(claims), "supported": len(yes),
                                                 "unsupported": no[:LISTED]})


@_guarded(REFERENCE, GROUNDING)
def context_recall(turn: Turn, opts) -> MetricResult:
    claims = _reference_claims(turn)
    verdicts = _outcome(turn, GROUNDING, "no grounding verdicts")
    yes, no = _split(verdicts, reference_ids(len(claims)), claims)
    return MetricResult(len(yes) / len(claims), {"reference_claims": len(claims),
                                                 "attributed": len(yes),
                                                 "not_in_contexts": no[:LISTED]})


def _classified(turn: Turn) -> tuple[int, int, int, list[str], list[str]]:
    """(TP, FP, FN, false claims, missed reference claims) from the correctness call."""
    a = _outcome(turn, ANSWER_STATEMENTS, "no answer statements")["statements"]
    r = _outcome(turn, REFERENCE, "no reference statements")["statements"]
    if not a or not r:  # no call was needed: nothing can be matched
        return 0, len(a), len(r), a, r
    verdicts = _outcome(turn, CORRECTNESS, "no correctness verdicts")
    tp_claims, fp_claims = _split(verdicts, answer_ids(len(a)), a)
    _, fn_claims = _split(verdicts, reference_ids(len(r)), r)
    return len(tp_claims), len(fp_claims), len(fn_claims), fp_claims, fn_claims


def answer_correctness(turn: Turn, opts, similarity: MetricResult) -> MetricResult:
    """0.75 x factual F1 + 0.25 x answer similarity (weights from options)."""
    try:
        tp, fp, fn, false, missed = _classified(turn)
    except _Null as why:
        return MetricResult.null(str(why), **why.details)
    f1 = formulas.factual_f1(tp, fp, fn)
    if f1 is None:
        return MetricResult.null("neither the answer nor the reference makes a claim")
    if similarity.value is None:
        return MetricResult.null(f"answer similarity: {similarity.error}")
    fw, sw = float(opts["factual_weight"]), float(opts["similarity_weight"])
    value = formulas.answer_correctness(f1, similarity.value, fw, sw)
    return MetricResult(value, {"factual_f1": f1, "similarity": similarity.value, "tp": tp,
                                "fp": fp, "fn": fn, "weights": [fw, sw],
                                "false_claims": false[:LISTED], "missed": missed[:LISTED],
                                **({"truncated": similarity.details["truncated"]}
                                   if "truncated" in similarity.details else {}),
                                **audit(turn, ANSWER_STATEMENTS, REFERENCE, CORRECTNESS)})


@_guarded(ANSWER_STATEMENTS, REFERENCE, CORRECTNESS)
def noise_sensitivity(turn: Turn, opts) -> MetricResult:
    """Incorrect claims of the answer (not supported by the reference) / all its claims.
    Details count the incorrect claims the contexts support: errors the retrieved
    noise led to (when the grounding question was asked)."""
    claims = _answer_claims(turn)
    _reference_claims(turn)
    _, fp, _, false, _ = _classified(turn)
    details: dict[str, Any] = {"claims": len(claims), "incorrect": fp,
                               "incorrect_claims": false[:LISTED]}
    grounding, ids = turn.features.get(GROUNDING), answer_ids(len(claims))
    if grounding is not None and grounding.ok and ids[0] in grounding.value:
        correct = turn.features[CORRECTNESS].value
        details["incorrect_from_contexts"] = sum(
            1 for i in ids if not correct[i][0] and grounding.value[i][0])
    return MetricResult(fp / len(claims), details)


@_guarded(USEFULNESS)
def context_precision(turn: Turn, opts) -> MetricResult:
    n = len(turn.effective_contexts or [])
    verdicts = _outcome(turn, USEFULNESS, "no usefulness verdicts")
    useful = [verdicts[i][0] for i in context_ids(n)]
    return MetricResult(formulas.average_precision(useful), {"useful": useful})


def context_entities_recall(turn: Turn, opts, side) -> MetricResult:
    """Entities of the reference found in the contexts / entities of the reference."""
    ref, contexts = turn.case.reference_text, turn.effective_contexts or []
    if turn.features.get(JUDGE_SKIP):  # not asked for this row: not the rules either
        return MetricResult.null(turn.features[JUDGE_SKIP])
    if JUDGED in turn.features:
        try:
            entities = _outcome(turn, REFERENCE, "no reference entities")["entities"]
        except _Null as why:
            return MetricResult.null(str(why), **why.details)
        method = "judge"
    else:
        entities, method = rule_entities(ref), "rules"
    if not entities:
        return MetricResult.null("the reference names no entity", method=method)
    found = entities_in(entities, contexts)
    missing = [e for e in entities if e not in found]
    return MetricResult(len(found) / len(entities), {"entities": len(entities),
                                                     "found": len(found),
                                                     "missing": missing[:LISTED],
                                                     "method": method})


def rubric(metric: str):
    @_guarded(rubric_feature(metric))
    def score(turn: Turn, opts) -> MetricResult:
        got = _outcome(turn, rubric_feature(metric), "no rubric score")
        low, high = opts.get("scale", DEFAULT_SCALE)
        return MetricResult(formulas.normalise_score(got["score"], low, high),
                            {"raw_score": got["score"], "scale": [low, high],
                             "reason": got["reason"]})
    return score


def safety(category: str):
    """1.0 when the majority of votes flags the category, 0.0 when it clears it."""
    @_guarded(SAFETY)
    def vote(turn: Turn, opts) -> MetricResult:
        votes = _outcome(turn, SAFETY, "no safety votes")[category]
        flags = [v for v, _ in votes]
        needed = len(votes) // 2 + 1
        decided = formulas.majority(flags, needed)
        details: dict[str, Any] = {"votes": flags}
        reasons = [r for v, r in votes if v == 1 and r]
        errors = [r for v, r in votes if v is None]
        if reasons:
            details["reasons"] = reasons
        if errors:
            details["errors"] = errors
        capped = [e for e in errors if e.startswith(BUDGET_REACHED) or e.endswith("not sent")]
        if decided is None and capped:  # votes not sent (a spend cap, a prompt too large)
            return MetricResult.null(capped[0], **details)
        if decided is None:
            return MetricResult.null(f"no majority of {len(votes)} votes "
                                     f"({flags.count(1)} flag, {flags.count(0)} clear, "
                                     f"{len(errors)} failed)", **details)
        return MetricResult(float(decided), details)
    return vote
