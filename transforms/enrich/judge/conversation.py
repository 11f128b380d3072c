"""Conversation-level judge metrics and the config's own rubrics (G-Eval style).

Conversation metrics, in the style of DeepEval's, read the whole
conversation: the case's earlier turns, the question and the bot's answer
(the last assistant turn). Each is one judge question per conversation,
through the same machinery as every judge metric (packaged, overridable
templates; fenced turns; strict JSON with one repair; call cache; usage
purpose `judge:<metric>`):

  knowledge_retention        assistant turns that keep what the user said / assistant turns
  conversation_relevancy     assistant turns relevant to the message they answer / turns
  role_adherence             assistant turns that stay in the role / turns (the role:
                             metric_options.role_adherence.role, else the system turn)
  conversation_completeness  user intentions the assistant satisfied / intentions

A case without an earlier user or assistant turn (no messages, or a system
prompt alone) is not a conversation: these metrics are null ("no messages")
and nothing is asked.

Rubrics (`judge.rubrics: {name: {criteria, steps, scale, inputs}}`) become a
metric each: the criteria, the evaluation steps and the chosen inputs go into
the packaged `rubric` template; the reply is a score on the scale, read,
repaired and normalised to [0, 1] like the built-in rubric judges.
"""
from __future__ import annotations

from typing import Any, Awaitable, Mapping

from schemas.records import MetricResult, Turn
from transforms.enrich.judge import replies
from transforms.enrich.judge.keys import (  # noqa: F401 (names also read from here)
    CONVERSATION_METRICS, DEFAULT_SCALE, NO_ROLE, RUBRIC_INPUTS, rubric_feature)
from transforms.enrich.judge.prompts import Fenced, fence, join_fenced
from transforms.enrich.judge.scorers import LISTED, _guarded, _Null, _outcome

_PER_TURN = ("knowledge_retention", "conversation_relevancy", "role_adherence")


def conversation_turns(turn: Turn) -> list[tuple[str, str, str]]:
    """(id, role, text) of every turn: earlier turns, the question, the answer."""
    msgs = list(turn.case.messages or []) + [{"role": "user", "content": turn.case.question},
                                             {"role": "assistant", "content": turn.answer or ""}]
    return [(f"T{i}", m["role"], m["content"]) for i, m in enumerate(msgs, 1)]


def assistant_ids(turn: Turn) -> list[str]:
    return [i for i, role, _ in conversation_turns(turn) if role == "assistant"]


def render_conversation(turn: Turn) -> Fenced:
    """Each turn in its own fenced block, labelled with its role and id."""
    return join_fenced([fence(f"{role.upper()} {i}", text)
                        for i, role, text in conversation_turns(turn)])


def role_of(turn: Turn, options: Mapping[str, Any]) -> str | None:
    if options.get("role"):
        return str(options["role"])
    system = [m["content"] for m in turn.case.messages or [] if m["role"] == "system"]
    return system[0] if system else None


def conversation_questions(tj, turn: Turn, options: Mapping[str, Mapping[str, Any]]
                           ) -> dict[str, Awaitable[Any]]:
    """The conversation metrics' questions for a turn (none for a single turn)."""
    wanted = [m for m in CONVERSATION_METRICS if m in tj.wanted]
    if not wanted or not turn.case.is_conversation:
        return {}
    conversation = render_conversation(turn)
    ids = assistant_ids(turn)
    asks = {}
    for metric in wanted:
        fields = {"conversation": conversation, "turn_ids": ", ".join(ids)}
        shape = replies.intentions() if metric == "conversation_completeness" \
            else replies.verdicts(ids)
        if metric == "role_adherence":
            role = role_of(turn, options.get(metric, {}))
            if role is None:
                continue
            fields["role"] = fence("ROLE", role)
        asks[rubric_feature(metric)] = tj._one(metric, fields, shape, f"judge:{metric}")
    return asks


def _inputs(turn: Turn, inputs, fenced: Mapping[str, str]) -> Fenced:
    return join_fenced([render_conversation(turn) if name == "messages" else fenced[name]
                        for name in inputs])


def rubric_questions(tj, turn: Turn, rubrics: Mapping[str, Any], fenced: Mapping[str, str]
                     ) -> dict[str, Awaitable[Any]]:
    """One question per configured rubric whose inputs the turn has."""
    asks = {}
    for name, rubric in rubrics.items():
        if name not in tj.wanted or _lacks(turn, rubric.inputs):
            continue
        low, high = tj.scales.get(name, tuple(rubric.scale))
        steps = rubric.steps or ("Read the material and judge it by the criteria.",)
        fields = {"criteria": rubric.criteria, "scale": f"{low:g} to {high:g}",
                  "steps": "\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1)),
                  "inputs": _inputs(turn, rubric.inputs, fenced)}
        asks[rubric_feature(name)] = tj._one("rubric", fields, replies.rubric(low, high),
                                             f"judge:{name}")
    return asks


def _lacks(turn: Turn, inputs) -> bool:
    return not all(turn.has_input(i) for i in inputs)


# ------------------------------------------------------------------ metrics

def _share_of_turns(metric: str):
    missing = NO_ROLE if metric == "role_adherence" else "no verdicts"

    @_guarded(rubric_feature(metric))
    def score(turn: Turn, opts) -> MetricResult:
        verdicts = _outcome(turn, rubric_feature(metric), missing)
        ids = assistant_ids(turn)
        flags = [verdicts[i][0] for i in ids]
        failed = [f"{i}: {verdicts[i][1]}" for i in ids if not verdicts[i][0]]
        return MetricResult(sum(flags) / len(flags),
                            {"assistant_turns": len(ids), "passed": sum(flags),
                             "final_turn": flags[-1], "failed": failed[:LISTED]})
    return score


@_guarded(rubric_feature("conversation_completeness"))
def conversation_completeness(turn: Turn, opts) -> MetricResult:
    items = _outcome(turn, rubric_feature("conversation_completeness"), "no intentions")
    if not items:
        raise _Null("the judge found no user intention")
    done = [i for i, ok, _ in items if ok]
    missed = [i for i, ok, _ in items if not ok]
    return MetricResult(len(done) / len(items), {"intentions": len(items),
                                                 "satisfied": len(done),
                                                 "unsatisfied": missed[:LISTED]})


def conversation_metric(metric: str):
    """The score function of a conversation metric: (turn, opts, side) -> result."""
    if metric == "conversation_completeness":
        return conversation_completeness
    return _share_of_turns(metric)


def rubric_scale(rubric) -> tuple[float, float]:
    scale = tuple(rubric.scale) if rubric.scale else DEFAULT_SCALE
    return float(scale[0]), float(scale[1])
