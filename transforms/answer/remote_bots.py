"""Bots that call a model or an assistant over HTTP, through the remote-call layer.

latency_ms is the successful attempt's time on the wire; attempts and the
total time including retries and rate-limit waits are in the bot's details.
A failed call is a Turn with `error` (the row reaches results/ as ERROR).
"""
from __future__ import annotations

import copy
import json
from importlib import resources
from typing import Any

from apache_beam.io.filesystems import FileSystems

from schemas.records import EvalCase, Turn
from transforms.remote.client import CallRecord, resolve_env_refs
from transforms.remote.openai_api import (chat, estimate_tokens, prompt_tokens, split_reasoning,
                                         text_problem)
from transforms.remote.runtime import AsyncRuntime
from transforms.text.templates import fill_placeholders

QUESTION = "{question}"
# finish reasons of an answer that stopped before its end (the token limit, a
# content filter): the text is scored as it is, the reason kept in bot_details
CUT_SHORT = ("length", "content_filter")
KNOWLEDGE = "{knowledge}"


def read_text(path: str) -> str:
    with FileSystems.open(path) as fh:
        return fh.read().decode("utf-8")


def default_prompt_template() -> str:
    return resources.files("transforms").joinpath("data/full_context_prompt.txt").read_text("utf-8")


def _call_details(rec: CallRecord) -> dict[str, Any]:
    return {"endpoint": rec.endpoint, "model": rec.model, "status": rec.status,
            "attempts": rec.attempts, "total_ms": round(rec.total_ms, 3),
            "rate_limited": rec.rate_limited, "prompt_tokens": rec.prompt_tokens,
            "completion_tokens": rec.completion_tokens}


TOO_LARGE = ("request ~{n} tokens over bot {bot}'s limit {limit} ({where}.max_prompt_tokens): "
             "not sent")


def _too_large(bot, size: int) -> str | None:
    """Why a bot's request is not sent (None: it is): larger than its max_prompt_tokens."""
    limit = bot.max_prompt_tokens
    return TOO_LARGE.format(n=size, bot=bot.name, limit=limit, where=f"bots.{bot.name}") \
        if limit and size > limit else None


def _not_sent(bot, case: EvalCase, reason: str) -> Turn:
    """An ERROR turn for a request not sent (usage/ counts it as a failure, no call)."""
    rec = bot.client.refused(bot.model, f"bot:{bot.name}", reason, budget=False).record
    bot.runtime.record(rec, bot.log)
    return _turn(case, bot.name, None, rec)


def _turn(case: EvalCase, bot: str, answer: str | None, rec: CallRecord,
          contexts: list[str] | None = None, **details: Any) -> Turn:
    if rec.scrubbed:  # results/ says that the answer (or its trace) held a secret
        details["secrets_scrubbed"] = True
    return Turn(case, bot, answer if rec.ok else None,
                latency_ms=rec.latency_ms if rec.ok else None,
                error=None if rec.ok else rec.error, contexts=contexts,
                details={**_call_details(rec), **details})


class ChatBot:
    """A chat model answering the question directly (optional system prompt)."""

    remote = True

    def __init__(self, cfg, runtime: AsyncRuntime, log):
        self.name, self.model = cfg.name, cfg.model
        self.client = runtime.client(cfg.endpoint)
        self.runtime, self.log = runtime, log
        self.system_prompt = cfg.system_prompt
        self.temperature = float(cfg.options.get("temperature", 0.0))
        self.max_tokens = cfg.options.get("max_tokens")
        self.max_prompt_tokens = cfg.max_prompt_tokens

    def messages(self, case: EvalCase) -> list[dict[str, str]]:
        return self._conversation(case, case.question)

    def _conversation(self, case: EvalCase, last: str) -> list[dict[str, str]]:
        """The system prompt (its `{contexts}` the case's passages, as a RAG
        prompt holds them), the case's earlier turns in order, then `last`."""
        msgs = [{"role": "system", "content": fill_placeholders(
            self.system_prompt, {"contexts": "\n\n".join(case.contexts or [])})}] \
            if self.system_prompt else []
        return msgs + list(case.messages or []) + [{"role": "user", "content": last}]

    async def answer_async(self, case: EvalCase) -> Turn:
        messages = self.messages(case)
        too_large = _too_large(self, prompt_tokens(messages) if self.max_prompt_tokens else 0)
        if too_large:
            return _not_sent(self, case, too_large)
        reply = await chat(self.client, self.model, messages,
                           purpose=f"bot:{self.name}", temperature=self.temperature,
                           max_tokens=self.max_tokens)
        extras = reply.message_extras[0] if reply.message_extras else {}
        text = reply.texts[0] if reply.texts else None
        self.runtime.record(reply.record, self.log)
        kept = {k: extras[k] for k in ("reasoning_content", "refusal") if extras.get(k)}
        if extras.get("finish_reason") in CUT_SHORT:  # scored as it is, and says so
            kept["finish_reason"] = extras["finish_reason"]
        return _turn(case, self.name, text, reply.record, **kept)


class FullContextBot(ChatBot):
    """The whole knowledge document and the question in one prompt template."""

    def __init__(self, cfg, runtime: AsyncRuntime, log):
        super().__init__(cfg, runtime, log)
        self.knowledge = read_text(cfg.knowledge)
        self.template = read_text(cfg.prompt_template) if cfg.prompt_template \
            else default_prompt_template()

    def messages(self, case: EvalCase) -> list[dict[str, str]]:
        prompt = fill_placeholders(self.template, {"knowledge": self.knowledge,
                                                   "question": case.question})
        return self._conversation(case, prompt)


def json_path(data: Any, path: str) -> Any:
    """Follow "a.b.0.c" through dicts and lists; KeyError with the failing step."""
    for step in path.split(".") if path else []:
        if isinstance(data, list) and step.lstrip("-").isdigit():
            data = data[int(step)]
        elif isinstance(data, dict) and step in data:
            data = data[step]
        else:
            raise KeyError(f"no '{step}' at '{path}'")
    return data


MESSAGES = "{messages}"


def _substitute(value: Any, question: str, case_id: str,
                messages: list[dict[str, str]] | None = None) -> Any:
    """Fill the body template; a value that is exactly "{messages}" becomes the
    conversation's earlier turns (a JSON list of {role, content}, [] for none)."""
    if value == MESSAGES:
        return list(messages or [])
    if isinstance(value, str):
        return fill_placeholders(value, {"question": question, "case_id": case_id})
    if isinstance(value, dict):
        return {k: _substitute(v, question, case_id, messages) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, question, case_id, messages) for v in value]
    return value


def with_env(value: Any, where: str) -> Any:
    """The body template with each ${VAR} in its texts replaced by the environment
    variable's value (MissingSecret when unset), as a header's: read on the worker,
    before {question} is filled in, so a question holding "${VAR}" is sent as it is."""
    if isinstance(value, str):
        return resolve_env_refs(value, where)
    if isinstance(value, dict):
        return {k: with_env(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [with_env(v, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


def _mentions(value: Any, text: str) -> bool:
    if isinstance(value, str):
        return value == text
    if isinstance(value, dict):
        return any(_mentions(v, text) for v in value.values())
    if isinstance(value, list):
        return any(_mentions(v, text) for v in value)
    return False


HTTP_BOT_OPTIONS = {"path", "body", "answer_path", "contexts_path", "context_field"}


class HttpBot:
    """Any JSON HTTP assistant: a body template, and JSON paths to the answer and
    (for RAG assistants) the retrieved contexts, so context metrics apply."""

    remote = True

    def __init__(self, cfg, runtime: AsyncRuntime, log):
        self.name, self.runtime, self.log = cfg.name, runtime, log
        self.client = runtime.client(cfg.endpoint)
        opts = cfg.options
        self.path = opts.get("path", "")
        self.body = with_env(copy.deepcopy(opts.get("body", {"question": QUESTION})),
                             f"bots.{cfg.name}.options.body")
        self.answer_path = opts["answer_path"]
        self.contexts_path = opts.get("contexts_path")
        self.context_field = opts.get("context_field", "text")
        self.model = cfg.model or "http"
        self.sends_messages = _mentions(self.body, MESSAGES)
        self.max_prompt_tokens = cfg.max_prompt_tokens

    def _contexts(self, data: Any) -> list[str] | None:
        if not self.contexts_path:
            return None
        items = json_path(data, self.contexts_path)
        if not isinstance(items, list):
            raise KeyError(f"'{self.contexts_path}' is not a list")
        texts = [i if isinstance(i, str) else str(json_path(i, self.context_field)) for i in items]
        for i, text in enumerate(texts):
            problem = text_problem(text, f"context {i}")
            if problem:
                raise KeyError(problem)
        return texts

    async def answer_async(self, case: EvalCase) -> Turn:
        body = _substitute(self.body, case.question, case.case_id, case.messages)
        too_large = _too_large(self, estimate_tokens(json.dumps(body, ensure_ascii=False))
                               if self.max_prompt_tokens else 0)
        if too_large:
            return _not_sent(self, case, too_large)
        result = await self.client.post_json(self.path, body, model=self.model,
                                             purpose=f"bot:{self.name}")
        rec = result.record
        answer, contexts, thought = None, None, None
        if rec.ok:
            try:
                # a reasoning model behind the assistant: its thinking is not the answer;
                # parts (Gemini's candidates.0.content.parts) are their joined text
                answer, thought = split_reasoning(json_path(result.data, self.answer_path))
                only_thought = thought is not None and (answer is None or (
                    isinstance(answer, str) and not answer.strip()))
                problem = None if only_thought else text_problem(answer, f"'{self.answer_path}'")
                if problem:
                    raise KeyError(problem)
                contexts = self._contexts(result.data)
            except (KeyError, IndexError, TypeError) as exc:
                rec.ok, rec.error = False, f"response does not match the bot's paths: {exc}"
            else:
                if only_thought:
                    rec.ok, rec.error = False, (f"'{self.answer_path}' is only reasoning "
                                                "(thinking), no answer")
        self.runtime.record(rec, self.log)
        details = {} if self.sends_messages or not case.messages else {
            "note": "the conversation's earlier turns were not sent: the body has no "
                    "\"{messages}\" value"}
        if thought:
            details["reasoning_content"] = thought
        return _turn(case, self.name, answer, rec, contexts, **details)
