"""In-flight records: what travels between the pipeline's stages.

Plain dataclasses with slots so that they are cheap to create, pickle and
compare; no Beam import here (layers point pipeline -> transforms -> schemas).
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from typing import Any

from schemas.messages import is_conversation


def is_blank(text: str | None) -> bool:
    """Whether a text says nothing: empty, or only whitespace and invisible format
    characters (zero-width space and joiners, word joiner, BOM, bidi marks; Unicode
    category Cf), which str.strip() keeps. One notion for every metric and judge
    question that treats an empty expected answer, answer or passage as missing."""
    return not text or all(c.isspace() or unicodedata.category(c) == "Cf" for c in text)


@dataclass(slots=True)
class EvalCase:
    """One validated input row."""

    case_id: str
    question: str
    expected_answer: str | None = None
    contexts: list[str] | None = None
    answer: str | None = None  # recorded answer, used by the `precomputed` bot
    suite: str | None = None
    tags: list[str] = field(default_factory=list)
    source: str = ""  # "file#row" so that errors can point at the input
    label: str | None = None  # a reviewer's verdict or score, for `evalbeam calibrate`
    # Every reference when the input gave several (expected_answer is the first).
    references: list[str] | None = None
    # Earlier turns of a conversation, [{role, content}], before the question.
    messages: list[dict[str, str]] | None = None
    # `answer` is the assistant's reply after the last user turn of a question
    # given as a whole conversation (the answer column had none)
    answer_from_conversation: bool = False

    @property
    def all_references(self) -> list[str]:
        """The references to score against: several, one, or none."""
        if self.references is not None:
            return self.references
        return [] if self.expected_answer is None else [self.expected_answer]

    @property
    def is_conversation(self) -> bool:
        """Earlier user or assistant turns precede the question (a system prompt
        alone does not make a conversation)."""
        return is_conversation(self.messages)

    @property
    def user_text(self) -> str:
        """Everything the user said: the earlier user turns of a conversation and
        the question, one per paragraph. A figure or name the user stated is not
        invented by the answer that repeats it, whichever turn stated it."""
        said = [m["content"] for m in self.messages or () if m.get("role") == "user"]
        return "\n\n".join([*said, self.question]) if said else self.question

    @property
    def reference_text(self) -> str | None:
        """The references as one text (what a judge reads): the reference, or
        several numbered one per paragraph."""
        if not self.references:
            return self.expected_answer
        return "\n\n".join(f"Reference {i}: {r}" for i, r in enumerate(self.references, 1))


@dataclass(slots=True)
class MetricResult:
    """A metric's value, or null with the reason it could not be computed.

    `value` is None exactly when the metric could not be computed; `error`
    then says why. A computed 0 is a real score, never a stand-in for failure.
    """

    value: float | None
    details: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @staticmethod
    def null(reason: str, **details: Any) -> "MetricResult":
        return MetricResult(None, dict(details), reason)


@dataclass(slots=True)
class Turn:
    """One case answered by one bot, collecting scores as it passes each metric."""

    case: EvalCase
    bot: str
    answer: str | None
    latency_ms: float | None = None
    error: str | None = None  # set when the bot could not answer
    details: dict[str, Any] = field(default_factory=dict)
    contexts: list[str] | None = None  # retrieved by the bot, else the case's
    scores: dict[str, MetricResult] = field(default_factory=dict)
    verdict: str | None = None
    verdict_reason: str | None = None
    # Enrichment for the metrics (vectors, token vectors); never written out.
    features: dict[str, Any] = field(default_factory=dict)
    # With judge.escalate: the stage whose verdict stands, "offline" or "escalated"
    decided_by: str | None = None

    @property
    def effective_contexts(self) -> list[str] | None:
        return self.contexts if self.contexts is not None else self.case.contexts

    @property
    def has_contexts(self) -> bool:
        """Whether a passage holds text: only blank ones ([""]) are no contexts, for
        every metric that needs them (null "no contexts", no call made)."""
        return not all(is_blank(c) for c in self.effective_contexts or ())

    def has_input(self, name: str) -> bool:
        """Whether the turn has an input a metric or a judge question reads: its
        answer, the case's expected_answer, contexts with text, a conversation
        (`messages`); any other input (the question) is always there."""
        if name == "answer":
            return self.answer is not None
        if name == "expected_answer":
            return self.case.expected_answer is not None
        if name == "contexts":
            return self.has_contexts
        if name == "messages":
            return self.case.is_conversation
        return True

    def evolve(self, *, scores: dict[str, MetricResult] | None = None,
               verdict: str | None = None, verdict_reason: str | None = None,
               features: dict[str, Any] | None = None,
               decided_by: str | None = None) -> "Turn":
        """A copy with new scores, verdict or features (4× cheaper than
        dataclasses.replace, which matters at ten steps per row)."""
        return Turn(self.case, self.bot, self.answer, self.latency_ms, self.error, self.details,
                    self.contexts, self.scores if scores is None else scores,
                    verdict or self.verdict, verdict_reason or self.verdict_reason,
                    self.features if features is None else features,
                    decided_by or self.decided_by)
