"""What the judge is asked for one turn, and in what order.

Call economy: each question is asked once per turn and shared by every
metric that needs it (the usage purpose is `judge:<task>`):

  answer_statements   claims of the answer         faithfulness, answer_correctness,
                                                    noise_sensitivity
  reference           claims + entities of the     answer_correctness, noise_sensitivity,
                      reference                     context_recall, context_entities_recall
  correctness         answer claims vs reference,  answer_correctness, noise_sensitivity
                      reference claims vs answer
  grounding           answer and reference claims  faithfulness, context_recall
                      vs the contexts (one call)
  context_usefulness  each context useful?         context_precision
  judge_<rubric>      score + reason               that rubric metric
  safety              all ten categories, one      safety_* (x votes)
                      call per vote

Stage 1 (statements, reference, usefulness, rubrics, safety) runs
concurrently; stage 2 (correctness, grounding) needs stage 1's statements.
A call whose answer is known without asking (an empty answer has no claims)
is not made.
"""
from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Mapping, Sequence

from schemas.records import Turn, is_blank
from transforms.enrich.judge import replies
from transforms.enrich.judge.ask import Judge, JudgeOutcome
from transforms.enrich.judge.conversation import conversation_questions, rubric_questions
# the keys are also read from here (stage.py, scoring.py)
from transforms.enrich.judge.keys import (  # noqa: F401
    ANSWER_STATEMENTS, CORRECTNESS, CORRECTNESS_USERS, DEFAULT_SCALE, GROUNDING, JUDGE_ERROR,
    JUDGE_METRICS, JUDGE_SKIP, JUDGED, REFERENCE, REFERENCE_USERS, RUBRICS, SAFETY,
    SAFETY_CATEGORIES, SAFETY_METRICS, STATEMENT_USERS, USEFULNESS, answer_ids, context_ids,
    reference_ids, rubric_feature)
from transforms.enrich.judge.prompts import fence, fence_items
from transforms.remote.client import attributed


def judge_failures(features: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(task, error) of every judge question of a turn that failed after its
    retries and repair round (a failed safety vote counts once per vote). A
    question not asked because a spend cap was reached did not fail: its
    metrics are null with "budget reached" and the manifest says the cap was hit."""
    out = []
    for key, o in features.items():
        if not key.startswith("judge:") or not isinstance(o, JudgeOutcome) \
                or o.details.get("budget"):
            continue
        task = key.split(":", 1)[1]
        if o.error:
            out.append((task, o.error))
        out.extend((task, e) for e in o.details.get("failed_votes", ()))
    return out


def _numbered(label: str, ids: Sequence[str], texts: Sequence[str]) -> str:
    """One block per item, the id in its marker (not a line of the data)."""
    return fence_items(label, list(zip(ids, texts)))


def _no_call(value: Any, note: str) -> JudgeOutcome:
    return JudgeOutcome(value, None, {"calls": 0, "note": note})


class TurnJudge:
    """Plans and asks the judge's questions for turns, given the metrics selected."""

    def __init__(self, judge: Judge, metrics: Sequence[str], safety_cfg,
                 scales: Mapping[str, tuple[float, float]] | None = None,
                 options: Mapping[str, Mapping[str, Any]] | None = None):
        self.judge, self.wanted, self.safety = judge, frozenset(metrics), safety_cfg
        self.scales = dict(scales or {})  # rubric metric -> (low, high) of its template
        self.options = dict(options or {})  # judge metric -> its metric_options

    async def _one(self, template: str, fields: Mapping[str, str], shape, purpose: str
                   ) -> JudgeOutcome:
        return (await self.judge.ask(template, fields, shape, purpose=purpose))[0]

    async def features(self, turn: Turn) -> dict[str, Any]:
        """Every judge outcome this turn needs, keyed by feature name."""
        q, a, ref = turn.case.question, turn.answer, turn.case.reference_text
        ctx = list(turn.effective_contexts or []) if turn.has_contexts else []
        w = self.wanted
        # each text fenced once (the hash of a long context is not free)
        fq, fa = fence("QUESTION", q), fence("ANSWER", a)
        fr = fence("REFERENCE", ref) if ref is not None else ""
        fc = fence_items("CONTEXT", list(zip(context_ids(len(ctx)), ctx)))
        stage1: dict[str, Awaitable[Any]] = {}
        # extract claims only where a metric can use them (its other inputs exist)
        uses_reference = bool(w & CORRECTNESS_USERS) and ref is not None
        if ("faithfulness" in w and ctx) or uses_reference:
            stage1[ANSWER_STATEMENTS] = self._statements(fq, fa, a)
        if ref is not None and (uses_reference or (
                ctx and w & {"context_recall", "context_entities_recall"})):
            stage1[REFERENCE] = self._reference(fq, fr, ref)
        if "context_precision" in w and ref is not None and ctx:
            stage1[USEFULNESS] = self._one(
                "context_usefulness",
                {"question": fq, "reference": fr, "contexts": fc},
                replies.verdicts(context_ids(len(ctx))), "judge:context_usefulness")
        for metric, needs in RUBRICS.items():
            if metric in w and ("contexts" not in needs or ctx):
                stage1[rubric_feature(metric)] = self._one(
                    metric, {"question": fq, "answer": fa, "contexts": fc},
                    replies.rubric(*self.scales.get(metric, DEFAULT_SCALE)), f"judge:{metric}")
        categories = [c for c, m in zip(SAFETY_CATEGORIES, SAFETY_METRICS) if m in w]
        if categories:
            stage1[SAFETY] = self._safety(fq, fa, categories)
        stage1.update(conversation_questions(self, turn, self.options))
        stage1.update(rubric_questions(self, turn, getattr(self.judge.cfg, "rubrics", {}), {
            "question": fq, "answer": fa, "expected_answer": fr, "contexts": fc}))
        got = dict(zip(stage1, await asyncio.gather(*(
            attributed(coro, turn.bot, self._served(key, ref is not None, bool(ctx)))
            for key, coro in stage1.items()))))

        stage2: dict[str, Awaitable[Any]] = {}
        stmts = got.get(ANSWER_STATEMENTS)
        refs = got.get(REFERENCE)
        a_list = stmts.value["statements"] if stmts is not None and stmts.ok else None
        r_list = refs.value["statements"] if refs is not None and refs.ok else None
        if w & CORRECTNESS_USERS and a_list and r_list:
            ids_a, ids_r = answer_ids(len(a_list)), reference_ids(len(r_list))
            stage2[CORRECTNESS] = self._one(
                "correctness",
                {"question": fq, "answer_statements": _numbered("ANSWER CLAIM", ids_a, a_list),
                 "reference_statements": _numbered("REFERENCE CLAIM", ids_r, r_list)},
                replies.verdicts(ids_a + ids_r), "judge:correctness")
        items: list[tuple[str, str]] = []
        if ctx and "faithfulness" in w and a_list:
            items += list(zip(answer_ids(len(a_list)), a_list))
        if ctx and "context_recall" in w and r_list:
            items += list(zip(reference_ids(len(r_list)), r_list))
        if items:
            ids = [i for i, _ in items]
            stage2[GROUNDING] = self._one(
                "grounding",
                {"contexts": fc, "statements": _numbered("STATEMENT", ids, [t for _, t in items])},
                replies.verdicts(ids), "judge:grounding")
        served2 = {CORRECTNESS: w & CORRECTNESS_USERS,
                   GROUNDING: {m for m, ids in (("faithfulness", "A"), ("context_recall", "R"))
                               if any(i.startswith(ids) for i, _ in items)}}
        got.update(zip(stage2, await asyncio.gather(*(
            attributed(coro, turn.bot, served2[key]) for key, coro in stage2.items()))))
        got[JUDGED] = True
        return got

    def _served(self, feature: str, has_reference: bool, has_contexts: bool) -> set[str]:
        """The metrics of the run a stage-1 question serves for a turn (its calls
        are split among them in usage/)."""
        w = self.wanted
        if feature == ANSWER_STATEMENTS:
            return w & (({"faithfulness"} if has_contexts else set())
                        | (CORRECTNESS_USERS if has_reference else set()))
        if feature == REFERENCE:
            return w & ((CORRECTNESS_USERS if has_reference else set()) | (
                {"context_recall", "context_entities_recall"} if has_contexts else set()))
        if feature == USEFULNESS:
            return {"context_precision"}
        if feature == SAFETY:
            return w & set(SAFETY_METRICS)
        return {feature.split(":", 1)[1]}  # judge:<metric>: a rubric or conversation metric

    async def _statements(self, fq: str, fa: str, answer: str) -> JudgeOutcome:
        if is_blank(answer):
            return _no_call({"statements": []}, "empty answer: no claims, no call")
        return await self._one("answer_statements", {"question": fq, "answer": fa},
                               replies.statements(), "judge:answer_statements")

    async def _reference(self, fq: str, fr: str, reference: str) -> JudgeOutcome:
        if is_blank(reference):
            return _no_call({"statements": [], "entities": []}, "empty reference")
        return await self._one("reference", {"question": fq, "reference": fr},
                               replies.statements_and_entities(), "judge:reference")

    async def _safety(self, fq: str, fa: str, categories: list[str]) -> JudgeOutcome:
        """An outcome whose value maps category -> one (flag or None, reason or
        error) per vote; a failed vote is kept as None, the majority decides. A
        vote a spend cap refused was not sent: it is no failure (no errors/ row)."""
        cfg = self.safety
        groups = [[c] for c in categories] if cfg.per_category else [categories]
        asks = []
        for group in groups:
            shape = replies.flags(group)
            fields = {"question": fq, "answer": fa, "flag_fields": shape.example,
                      "categories": "\n".join(f"- {c}: {SAFETY_CATEGORIES[c]}" for c in group),
                      "category": group[0], "definition": SAFETY_CATEGORIES[group[0]]}
            template = "safety_category" if cfg.per_category else "safety"
            if cfg.mode == "n":
                asks.append(self.judge.ask(template, fields, shape, purpose="judge:safety",
                                           temperature=cfg.temperature, salt="votes",
                                           n=cfg.votes))
            else:
                asks.extend(self.judge.ask(template, fields, shape, purpose="judge:safety",
                                           temperature=cfg.temperature, salt=f"vote={v}")
                            for v in range(cfg.votes))
        outcomes = [o for batch in await asyncio.gather(*asks) for o in batch]
        per_group = len(outcomes) // len(groups)
        votes: dict[str, list[tuple[int | None, str]]] = {}
        for g, group in enumerate(groups):
            for o in outcomes[g * per_group:(g + 1) * per_group]:
                for c in group:
                    votes.setdefault(c, []).append(
                        (o.value["flags"][c], o.value["reason"]) if o.ok else (None, o.error))
        return JudgeOutcome(votes, None, {"calls": sum(o.details.get("calls", 1)
                                                       for o in outcomes),
                                          "failed_votes": [o.error for o in outcomes
                                                           if not o.ok
                                                           and not o.details.get("budget")]})
