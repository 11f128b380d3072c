"""Asking the judge: one request, strict reading, at most one repair round.

Every question ends as a JudgeOutcome: the validated value, or an error that
says what went wrong with the raw reply(ies) in details. Calls go through
the call cache (content-addressed), so a re-run asks nothing new. A reply is
cached only once it gave a usable answer: a question's first reply when every
outcome read from it is one (after its repair, if it needed one), a repair
reply when it is usable. A question that ended in an error leaves nothing in
the cache to repeat it: a re-run asks it again.

A cached reply that gives no answer (an older version kept every reply: one
without JSON, without the verdict's fields) is a miss, not a hit: unless it
is the first half of a pair kept with its usable repair (a repair found in
the cache, never asked), the question is asked again, counted as a call,
and its usable reply replaces the bad one in both cache tiers.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from transforms.enrich.judge.prompts import PLACEHOLDERS, render
from transforms.enrich.judge.replies import Shape, whole_object
from transforms.remote.cache import ONLY, REFRESH, USE
from transforms.remote.openai_api import FILTERED, ChatReply, chat, prompt_tokens

REPAIR = ("Your reply could not be used: {problem}. Reply again with only one JSON object "
          "of this form, with every field filled in: {example}")
RAW_LIMIT = 2000  # characters of a raw reply kept in details
CUT_OFF = "the reply was cut off at the token limit (finish_reason 'length')"
TOO_LARGE = "prompt ~{n} tokens over the judge's limit {limit} (judge.max_prompt_tokens): not sent"


@dataclass(slots=True)
class JudgeOutcome:
    value: Any | None
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None


def _trace(extras: Mapping[str, Any]) -> str | None:
    """A reasoning trace the server returned alongside the reply, if any."""
    for key in ("reasoning_content", "reasoning", "thinking"):
        value = extras.get(key)
        if isinstance(value, str) and value:
            return value[:RAW_LIMIT]
    return None


def _read(shape: Shape, text: str, extras: Mapping[str, Any]) -> tuple[Any, str | None]:
    """shape.read, but a reply cut off at the token limit is read only when it is
    one whole object: a draft before a cut final answer is not the answer."""
    value, problem = shape.read(text)
    if extras.get("finish_reason") == "length" and not whole_object(text):
        return None, CUT_OFF + (f"; {problem}" if problem else "")
    return value, problem


def smallest_prompt(templates: Mapping[str, str]) -> tuple[int, str]:
    """(estimated tokens, template name) of the smallest request the judge can
    send: the system prompt and one template with every field empty. A
    judge.max_prompt_tokens below it refuses every judge call of the run."""
    empty = {name: "" for name in PLACEHOLDERS}
    system = prompt_tokens([{"content": templates["system"]}])
    return min((system + prompt_tokens([{"content": render(text, empty)}]), name)
               for name, text in templates.items() if name != "system")


class Judge:
    """One judge model on one endpoint, with the run's templates and options."""

    def __init__(self, runtime, log, cfg, templates: Mapping[str, str]):
        self.runtime, self.log, self.cfg = runtime, log, cfg
        self.client = runtime.client(cfg.endpoint)
        self.templates = dict(templates)

    def messages(self, template: str, fields: Mapping[str, str], plain: bool = False
                 ) -> list[dict[str, str]]:
        """The request's messages; plain: with unsalted block ids (the cache key's form)."""
        return [{"role": "system", "content": self.templates["system"]},
                {"role": "user", "content": render(self.templates[template], fields, plain)}]

    async def _chat(self, messages, plain, purpose: str, temperature: float, salt: str,
                    records: list, n: int = 1, cache_mode: str = USE):
        """The reply; its call's record goes to `records` (counted by the caller)."""
        too_large = self.too_large(messages)
        if too_large:
            unsent = self.client.refused(self.cfg.model, purpose, too_large, budget=False)
            records.append(unsent.record)
            return ChatReply([], record=unsent.record, error=too_large)
        reply = await chat(self.client, self.cfg.model, messages, purpose=purpose,
                           temperature=temperature, max_tokens=self.cfg.max_tokens, n=n,
                           cache_salt=salt, cache_messages=plain, defer_store=True,
                           cache_mode=cache_mode, retry_unusable=True)
        if reply.record is not None:
            records.append(reply.record)
        return reply

    def too_large(self, messages) -> str | None:
        """Why a request is not sent (None: it is): its prompt, as estimated, is larger
        than judge.max_prompt_tokens. Sent, the server refuses it (400) or cuts it
        silently, and every question of the case asks again, each one paid."""
        limit = self.cfg.max_prompt_tokens
        size = prompt_tokens(messages) if limit else 0
        return TOO_LARGE.format(n=size, limit=limit) if limit and size > limit else None

    def _count(self, records: list) -> None:
        for record in records:
            self.runtime.record(record, self.log)

    async def ask(self, template: str, fields: Mapping[str, str], shape: Shape, *,
                  purpose: str, temperature: float | None = None, salt: str = "",
                  n: int = 1) -> list[JudgeOutcome]:
        """n outcomes (n choices of one request); each bad one gets one repair request."""
        t = self.cfg.temperature if temperature is None else temperature
        asked = (self.messages(template, fields), self.messages(template, fields, plain=True))
        records: list = []
        reply = await self._chat(*asked, purpose, t, salt, records, n)
        if reply.record is not None and reply.record.cache_hit:
            # a cached reply is an answer only with what the cache holds (its repair)
            outcomes = await self._outcomes(asked, reply, shape, purpose, t, salt, n, records,
                                            ONLY)
            if all(o.ok for o in outcomes):
                self._count(records)
                return outcomes
            # unusable (an older version kept it): a miss, asked again and replaced
            records = []
            reply = await self._chat(*asked, purpose, t, salt, records, n, REFRESH)
        try:
            if reply.record is not None and reply.record.budget_refused:
                return [JudgeOutcome(None, reply.error, {"calls": 0, "budget": True})] * n
            if reply.error and reply.error == self.too_large(asked[0]):  # never sent
                return [JudgeOutcome(None, reply.error, {"calls": 0})] * n
            if reply.error:
                return [JudgeOutcome(None, f"judge call failed: {reply.error}")] * n
            outcomes = await self._outcomes(asked, reply, shape, purpose, t, salt, n, records,
                                            USE)
        finally:
            self._count(records)
        if all(o.ok for o in outcomes):  # else a re-run asks again rather than repeat the error
            await self.client.keep(reply.unstored)
        return outcomes

    async def _outcomes(self, asked, reply, shape: Shape, purpose: str, temperature: float,
                        salt: str, n: int, records: list, repair_mode: str
                        ) -> list[JudgeOutcome]:
        texts = list(reply.texts) + [""] * (n - len(reply.texts))  # a server ignoring n
        extras = list(reply.message_extras) + [{}] * (n - len(reply.message_extras))
        return [await self._read(asked, text, extra, shape, purpose, temperature,
                                 f"{salt}|{i}", records, repair_mode)
                for i, (text, extra) in enumerate(zip(texts[:n], extras[:n]))]

    async def _read(self, asked, text: str, extras: Mapping[str, Any], shape: Shape,
                    purpose: str, temperature: float, salt: str, records: list,
                    repair_mode: str = USE) -> JudgeOutcome:
        value, problem = _read(shape, text, extras)
        details: dict[str, Any] = {"calls": 1}
        raws = [text]
        if problem is not None and extras.get("finish_reason") == "content_filter":
            # the repair would quote the same material to the same filter
            return JudgeOutcome(None, f"judge reply unusable: {FILTERED}; {problem}",
                                {**details, "raw": text[:RAW_LIMIT]})
        if problem is not None:
            more = [{"role": "assistant", "content": text},
                    {"role": "user", "content": REPAIR.format(problem=problem,
                                                              example=shape.example)}]
            again = await self._chat(asked[0] + more, asked[1] + more, purpose, temperature,
                                     salt + "|repair", records, cache_mode=repair_mode)
            details["calls"], details["repaired"] = 2, True
            if again.error:
                return JudgeOutcome(None, f"judge reply unusable ({problem}) and the repair "
                                          f"call failed: {again.error}",
                                    {**details, "raw": text[:RAW_LIMIT]})
            text = again.texts[0] if again.texts else ""
            extras = again.message_extras[0] if again.message_extras else {}
            raws.append(text)
            value, second = _read(shape, text, extras)
            if second is not None:
                return JudgeOutcome(None, f"judge reply unusable after one repair: {second} "
                                          f"(first reply: {problem})",
                                    {**details, "raw": [r[:RAW_LIMIT] for r in raws]})
            await self.client.keep(again.unstored)
        if self.cfg.keep_trace:
            details["raw"] = text[:RAW_LIMIT]
            trace = _trace(extras)
            if trace:
                details["trace"] = trace
        return JudgeOutcome(value, None, details)
