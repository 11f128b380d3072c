"""OpenAI-compatible adapters: chat completions and embeddings.

Works with OpenAI, vLLM, Ollama's /v1, LiteLLM (base_url ends in /v1) and
Azure OpenAI (set `api_version`; base_url is the resource URL, the model is
the deployment name, the key goes in the `api-key` header).
"""
from __future__ import annotations

import base64
import binascii
import math
import re
import struct
from dataclasses import dataclass, field
from typing import Any, Sequence

from transforms.remote.cache import USE
from transforms.remote.client import CallRecord, EndpointClient

DEFAULT_MAX_TOKENS_ESTIMATE = 512  # completion tokens assumed before the call
NOT_CACHED = "no answer in the call cache"


# Han, kana, Hangul (and their punctuation and full-width forms): about a token a
# character in the tokenizers of OpenAI, Llama, Qwen and Mistral
_DENSE = re.compile("[\u1100-\u11ff\u2e80-\u9fff\ua960-\ua97f\uac00-\ud7ff"
                    "\uf900-\ufaff\uff00-\uffef\U00020000-\U0003ffff]")


def estimate_tokens(text: str) -> int:
    """Tokens a text is likely to be, without a tokenizer (none is downloaded): ~4
    ASCII characters a token, ~1 Chinese, Japanese or Korean character, ~2 of any
    other script (Cyrillic, Greek, accented letters). Paces a tokens/minute budget
    and is what judge.max_prompt_tokens is checked against; len/4 alone took a
    Chinese prompt for a quarter of its size."""
    ascii_chars = sum(c.isascii() for c in text) if not text.isascii() else len(text)
    dense = len(_DENSE.findall(text)) if ascii_chars < len(text) else 0
    return ascii_chars // 4 + dense + (len(text) - ascii_chars - dense) // 2 + 1


def prompt_tokens(messages: Sequence[dict[str, Any]]) -> int:
    """The estimated prompt of a chat request: its messages' text."""
    return sum(estimate_tokens(m.get("content") or "") if isinstance(m.get("content"), str)
               else 0 for m in messages)


def embeddings_path(client: EndpointClient, model: str) -> str:
    return _path(client, model, "embeddings")


def _path(client: EndpointClient, model: str, op: str) -> str:
    if client.cfg.api_version:
        return f"/openai/deployments/{model}/{op}"
    return f"/{op}"


@dataclass(slots=True)
class ChatReply:
    texts: list[str]                      # one per choice
    # per choice: the message's other fields (e.g. reasoning_content) and the
    # choice's finish_reason ("length": cut off at the token limit)
    message_extras: list[dict[str, Any]] = field(default_factory=list)
    record: CallRecord | None = None
    error: str | None = None
    unstored: tuple[str, Any, bool] | None = None  # chat(defer_store=True): client.keep it


async def chat(client: EndpointClient, model: str, messages: Sequence[dict[str, str]], *,
               purpose: str, temperature: float = 0.0, max_tokens: int | None = None,
               n: int = 1, extra: dict[str, Any] | None = None,
               cache_salt: str | None = None,
               cache_messages: Sequence[dict[str, str]] | None = None,
               defer_store: bool = False, cache_mode: str = USE,
               retry_unusable: bool = False) -> ChatReply:
    """One chat completion; cache_salt (judge calls only) lets the call cache answer
    it, keyed by the request with `cache_messages` when given (the messages
    without anything that changes from run to run, e.g. salted block ids).
    defer_store: a fresh reply is cached only when the caller keeps it
    (`client.keep(reply.unstored)`), once it has read a usable answer in it.
    cache_mode: see EndpointClient.post_json (ONLY: the reply's error is
    NOT_CACHED when the cache has no answer; no request is made).
    retry_unusable: a 200 reply without an answer in every choice (null
    content, no choices, a refusal) is retried within max_attempts (the
    judge's calls; a bot under test is measured as it answers)."""
    body: dict[str, Any] = {"model": model, "messages": list(messages), "temperature": temperature}
    if max_tokens:
        body["max_tokens"] = max_tokens
    if n > 1:
        body["n"] = n
    body.update(extra or {})
    completion = (max_tokens or DEFAULT_MAX_TOKENS_ESTIMATE) * n
    est = prompt_tokens(messages) + completion
    keyed = {**body, "messages": list(cache_messages)} if cache_messages is not None else None
    result = await client.post_json(_path(client, model, "chat/completions"), body, model=model,
                                    purpose=purpose, estimated_tokens=est, cache_salt=cache_salt,
                                    cache_body=keyed, completion_cap=completion,
                                    cache_if=_has_answer, defer_store=defer_store,
                                    cache_mode=cache_mode,
                                    reject=_no_answer if retry_unusable else None)
    if result.record is None:
        return ChatReply([], error=NOT_CACHED)
    if result.data is None:
        return ChatReply([], record=result.record, error=result.record.error)
    texts, extras, problem = read_choices(result.data)
    if problem is not None:
        result.record.ok = False
        result.record.error = problem
        return ChatReply([], extras, record=result.record, error=problem)
    return ChatReply(texts, extras, result.record, unstored=result.unstored)


def text_problem(value: Any, what: str) -> str | None:
    """Why a value from a server cannot be used as text (None: it can)."""
    if value is None:
        return f"{what} is null"
    skipped = _non_text_parts(value)
    if skipped:
        return f"{what} has no text part: only {skipped}"
    if not isinstance(value, str):
        return f"{what} is {type(value).__name__}, not text"
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return (f"{what} is not valid Unicode (lone surrogate "
                    f"U+{ord(value[exc.start]):04X} at character {exc.start})")
    return None


FILTERED = ("the provider's content filter stopped the reply (finish_reason "
            "'content_filter')")
CUT_BEFORE_TEXT = ("the reply was cut off at the token limit before any text (finish_reason "
                   "'length'): raise max_tokens")
# a choice that ended so holds no answer the same request would bring: not asked again
FINAL = ("content_filter", "length")


def read_choices(data: Any) -> tuple[list[str], list[dict[str, Any]], str | None]:
    """(texts, other message fields, problem) of a chat completion. Whatever the
    server sent, the worst outcome is a problem for that row: no choices, a
    choice without a message, content that is null, not text or not Unicode.
    A `refusal` (OpenAI's field when the model declines) is the reason then.
    A reasoning model's thinking sent in the content (a leading <think> block,
    thinking parts) is moved to `reasoning_content`: the answer is what follows."""
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list):
        return [], [], "unexpected chat response shape (missing 'choices')"
    if not choices:
        return [], [], "the chat response has no choices"
    texts, extras = [], []
    for i, choice in enumerate(choices):
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            return texts, extras, f"unexpected chat response shape (choice {i} has no message)"
        extras.append({k: v for k, v in message.items() if k not in ("role", "content")})
        if isinstance(choice.get("finish_reason"), str):
            extras[-1]["finish_reason"] = choice["finish_reason"]
        content, thought = split_reasoning(message.get("content"))
        if thought is not None and not extras[-1].get("reasoning_content"):
            extras[-1]["reasoning_content"] = thought
        blank = content is None or (isinstance(content, str) and not content.strip())
        refusal = message.get("refusal")
        if blank and isinstance(refusal, str) and refusal:
            return texts, extras, f"the model refused: {refusal[:300]}"
        if blank and extras[-1].get("finish_reason") == "content_filter":
            return texts, extras, FILTERED
        if blank and thought is None and extras[-1].get("finish_reason") == "length":
            # a reasoning model that spent max_tokens thinking: no answer, not an empty one
            return texts, extras, CUT_BEFORE_TEXT
        tools = message.get("tool_calls")
        if blank and isinstance(tools, list) and tools:
            names = [str(c.get("function", {}).get("name", "?"))[:60] for c in tools
                     if isinstance(c, dict) and isinstance(c.get("function"), dict)]
            return texts, extras, (f"reply content of choice {i} is empty: the reply holds "
                                   f"only tool calls ({', '.join(names) or '?'}), no text")
        if blank and thought is not None:
            cut = extras[-1].get("finish_reason") == "length"
            return texts, extras, (f"reply content of choice {i} is only reasoning (thinking), "
                                   "no answer" + (": cut off at the token limit (finish_reason "
                                                  "'length')" if cut else ""))
        problem = text_problem(content, f"reply content of choice {i}")
        if problem:
            return texts, extras, problem
        texts.append(content)
    return texts, extras, None


TEXT_PARTS = ("text", "output_text")
REASONING_PARTS = ("thinking", "reasoning", "redacted_thinking")
# Gemini's parts (candidates[0].content.parts) that are not the answer's text:
# skipped beside text parts, named when there is no text part
OTHER_PARTS = {"functionCall": "function calls", "functionResponse": "function responses",
               "executableCode": "code", "codeExecutionResult": "code results",
               "inlineData": "inline data", "fileData": "files"}
_THINK = re.compile(r"\s*<(think|thinking|reasoning)>(.*?)</\1>\s*", re.S | re.I)
_THINK_OPEN = re.compile(r"\s*<(think|thinking|reasoning)>", re.I)
_ANY_OPEN = re.compile(r"<(think|thinking|reasoning)>", re.I)
# a closing tag that ends its line (DeepSeek-R1, QwQ: "...\n</think>\n\nanswer")
_THINK_CLOSE = re.compile(r"</(think|thinking|reasoning)>[ \t]*(?:\r?\n|$)", re.I)


def _lone_close(content: str) -> re.Match | None:
    """The closing tag that ends thinking sent without its opening tag (the opening
    tag was in the prompt), else None. Only one that ends a line and stands outside
    code counts: a tag named in running text ("close it with </think> and ..."),
    in a JSON string or in a code block is the answer's own text."""
    if _ANY_OPEN.search(content):
        return None
    for m in _THINK_CLOSE.finditer(content):
        before = content[:m.start()]
        line = before[before.rfind("\n") + 1:]
        if before.count("```") % 2 == 0 and line.count("`") % 2 == 0:
            return m
    return None


def _part_text(value: Any) -> str | None:
    """A part's text: a string, or a list of text parts (Mistral's thinking)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(p, dict) and isinstance(p.get("text"), str)
                                       for p in value):
        return "".join(p["text"] for p in value)
    return None


def _joined_parts(content: Any) -> tuple[Any, str | None]:
    """(text, reasoning) of content sent as a list of parts ([{"type": "text",
    "text": ...}], with "thinking" / "reasoning" parts beside them): the text
    parts joined, the reasoning parts' text apart (text None: only reasoning).
    Anything else is returned as it is (a list with a part that is neither
    stays a list: a problem)."""
    if not (isinstance(content, list) and content and all(isinstance(p, dict) for p in content)):
        return content, None
    kinds = [_part_kind(p) for p in content]
    if "unknown" in kinds or not {"text", "reasoning"} & set(kinds):
        return content, None  # not parts, or no text in them: a problem (text_problem)
    texts = [p["text"] for p, k in zip(content, kinds) if k == "text"]
    thoughts = [next((t for k in ("thinking", "reasoning", "text")
                      if (t := _part_text(p.get(k))) is not None), "")
                for p, kind in zip(content, kinds) if kind == "reasoning"]
    return ("".join(texts) if texts else None), ("\n".join(thoughts) if thoughts else None)


def _part_kind(part: dict[str, Any]) -> str:
    """text, reasoning, other (a Gemini function call, code, data) or unknown.
    Gemini's parts have no type: a text part is {"text"}, a thought part
    {"text", "thought": true}."""
    kind = part.get("type")
    if kind in TEXT_PARTS and isinstance(part.get("text"), str):
        return "text"
    if kind in REASONING_PARTS:
        return "reasoning"
    if kind is None and isinstance(part.get("text"), str):
        return "reasoning" if part.get("thought") is True else "text"
    if kind is None and any(k in part for k in OTHER_PARTS):
        return "other"
    return "unknown"


def _non_text_parts(value: Any) -> str | None:
    """'function calls (lookup)' for a list of Gemini parts none of which is text
    or thinking, else None."""
    if not (isinstance(value, list) and value and all(isinstance(p, dict) for p in value)
            and all(_part_kind(p) == "other" for p in value)):
        return None
    kinds = dict.fromkeys(OTHER_PARTS[next(k for k in OTHER_PARTS if k in p)] for p in value)
    names = [str(p["functionCall"].get("name", "?"))[:60] for p in value
             if isinstance(p.get("functionCall"), dict)]
    return ", ".join(f"{k} ({', '.join(names)})" if k == "function calls" and names else k
                     for k in kinds)


def split_reasoning(content: Any) -> tuple[Any, str | None]:
    """(the answer, the reasoning before it, None if none) of a message's content.
    A reasoning model served without a reasoning parser (DeepSeek-R1 on vLLM or
    Ollama's /v1, QwQ) sends its thinking in the content: `<think>...</think>`
    then the answer, or the thinking and `</think>` alone at a line's end (the
    opening tag was in the prompt). Scored as the answer it would be someone else's text; an
    unclosed <think> is only reasoning (answer None)."""
    content, thought = _joined_parts(content)
    if not isinstance(content, str):
        return content, thought
    m = _THINK.match(content)
    if m:
        more, content = m.group(2).strip(), content[m.end():]
    elif _THINK_OPEN.match(content):
        more, content = content[_THINK_OPEN.match(content).end():].strip(), None
    elif (close := _lone_close(content)) is not None:
        more, content = content[:close.start()].strip(), content[close.end():].lstrip()
    else:
        return content, thought
    return content, "\n".join(t for t in (thought, more) if t)


def _no_answer(data: Any) -> str | None:
    """Why a chat reply holds no answer worth asking again for (None: every
    choice holds text, or one ended without an answer by a content filter or
    the token limit: the same request would end so again, each attempt paid)."""
    _, extras, problem = read_choices(data)
    if problem is not None and any(e.get("finish_reason") in FINAL for e in extras):
        return None
    return problem


def _has_answer(data: Any) -> bool:
    """A chat reply worth caching: one whose choices all hold text."""
    return read_choices(data)[2] is None


def by_index(rows: Any, n: int, what: str) -> list[Any]:
    """The items of a batch reply in input order by their `index` (OpenAI
    embeddings, vLLM /score); ValueError unless there is exactly one per
    input: with two of index 0 for two inputs, sorting alone gave the second
    input the first one's answer. Items none of which has an index are in
    input order (servers that omit it); some with and some without is refused."""
    if not isinstance(rows, list):
        raise ValueError("the items are not a list")
    if len(rows) != n:
        raise ValueError(f"{len(rows)} items for {n} {what}s")
    indices = [r.get("index") if isinstance(r, dict) else None for r in rows]
    if all(i is None for i in indices) and all(isinstance(r, dict) for r in rows):
        return rows
    if sorted(i if type(i) is int else -1 for i in indices) != list(range(n)):
        raise ValueError(f"item indices {indices[:8]} are not one per {what} (0 to {n - 1})")
    return sorted(rows, key=lambda r: r["index"])


def vector(value: Any) -> list[float]:
    """An embedding's values: a list of numbers, or the base64 of little-endian
    float32 (OpenAI's encoding_format=base64, which some gateways and SDKs ask
    for on their own; evalbeam asks for none)."""
    if not isinstance(value, str):
        return list(map(float, value))
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"the embedding is a string that is not base64 ({value[:20]!r}...)") \
            from None
    if len(raw) % 4:
        raise ValueError(f"the embedding is base64 of {len(raw)} bytes, not float32 values")
    return [float(x) for x in struct.unpack(f"<{len(raw) // 4}f", raw)]


async def embeddings(client: EndpointClient, model: str, texts: Sequence[str], *,
                     purpose: str = "embeddings") -> tuple[list[list[float]] | None, CallRecord]:
    est = sum(estimate_tokens(t) for t in texts)
    result = await client.post_json(_path(client, model, "embeddings"),
                                    {"model": model, "input": list(texts)}, model=model,
                                    purpose=purpose, estimated_tokens=est)
    if result.data is None:
        return None, result.record
    try:
        rows = by_index(result.data["data"], len(texts), "text")
        vectors = [vector(d["embedding"]) for d in rows]
        sizes = sorted({len(v) for v in vectors})
        if len(sizes) > 1:
            raise ValueError(f"vectors of {sizes[0]} and {sizes[-1]} dimensions in one reply")
        if sizes and not sizes[0]:
            raise ValueError("an empty vector")
        if not all(math.isfinite(x) for v in vectors for x in v):
            raise ValueError("a vector value is not a finite number")
    except (KeyError, TypeError, ValueError) as exc:
        result.record.ok = False
        result.record.error = f"unexpected embeddings response: {exc}"
        return None, result.record
    return vectors, result.record
