"""Conversations in the input: the `messages` column (earlier turns) and a
`question` given as a whole conversation.

Tools write turns in a few shapes: OpenAI's `{role, content}` (the content a
text or a list of content parts), Ragas' and LangChain's `{type: human | ai |
system, content}`, a JSON array in a text cell (CSV), roles in any case. They
all become `[{"role": ..., "content": ...}]` with the roles a chat API knows,
in lower case, and text content, so every bot sends them the same way.
"""
from __future__ import annotations

import json
from typing import Any

ROLES = ("system", "user", "assistant")
_ALIASES = {"human": "user", "ai": "assistant", "bot": "assistant", "model": "assistant",
            "developer": "system"}


def _message(item: Any, name: str, i: int) -> dict[str, str]:
    if not isinstance(item, dict):
        raise TypeError(f"{name}[{i}] must be an object with role and content, got "
                        f"{type_name(item)}")
    role = item.get("role", item.get("type"))
    if isinstance(role, str):  # "User", "ASSISTANT": chat logs and LangChain exports
        role = role.strip().lower()
        role = _ALIASES.get(role, role)
    _no_tools(item, role, name, i)
    if "role" not in item and "type" not in item:
        raise TypeError(f"{name}[{i}] has no role ({', '.join(ROLES[:-1])} or {ROLES[-1]})")
    if role not in ROLES:
        raise TypeError(f"{name}[{i}].role must be one of {', '.join(ROLES)} "
                        f"(or human/ai), got {_shown(role)}")
    if "content" not in item:
        raise TypeError(f"{name}[{i}] has no content")
    content = item["content"]
    if content is None and isinstance(item.get("refusal"), str):
        content = item["refusal"]  # OpenAI's assistant message that refused: its words
    content = _content(content, f"{name}[{i}].content")
    if not content.strip():
        # a blank turn says nothing to a bot or a judge (and chat APIs refuse some)
        raise ValueError(f"{name}[{i}].content is empty ({role} turn without text)")
    return {"role": role, "content": content}


# OpenAI's content parts that hold text (chat completions; the Responses API's
# input_text / output_text), with the field holding it
_TEXT_PARTS = {"text": "text", "input_text": "text", "output_text": "text",
               "refusal": "refusal"}


# a tool call or its result inside a turn's content (Anthropic's Messages API),
# or as a turn of its own (OpenAI's Responses API items)
_TOOL_PARTS = ("tool_use", "tool_result", "function_call", "function_call_output")


def _content(content: Any, where: str) -> str:
    """A turn's text: a string, or OpenAI's list of content parts, whose text
    parts are joined with line breaks (as OpenAI-compatible servers such as
    vLLM join them). A part that is not text (an image, audio, a file) is
    refused naming it: a bot, a metric or a judge would miss what it holds."""
    if isinstance(content, str):
        return content
    if not isinstance(content, (list, tuple)):
        raise TypeError(f"{where} must be a string or a list of text parts, got "
                        f"{type_name(content)}")
    return "\n".join(_part_text(part, f"{where}[{j}]") for j, part in enumerate(content))


def _part_text(part: Any, where: str) -> str:
    if isinstance(part, str):  # LangChain's content lists may hold plain strings
        return part
    kind = part.get("type") if isinstance(part, dict) else None
    if not isinstance(kind, str):
        raise TypeError(f"{where} must be a content part {{type: text, text: ...}}, got "
                        f"{type_name(part) if not isinstance(part, dict) else 'no type'}")
    field = _TEXT_PARTS.get(kind)
    if kind in _TOOL_PARTS:
        raise TypeError(f"{where} is a tool's part (type {kind!r}); {_TEXT_ONLY}")
    if field is None:
        raise ValueError(f"{where} is a part of type {kind[:40]!r}; evalbeam evaluates text only: "
                         "leave multimodal turns out, or describe the part in text")
    text = part.get(field)
    if not isinstance(text, str):
        raise TypeError(f"{where}.{field} must be a string, got {type_name(text)}")
    return text


def type_name(value: Any) -> str:
    """A value's type for a row's error message: JSON's null by its name (not
    Python's NoneType), else the Python type (int, dict, list, ...)."""
    return "null" if value is None else type(value).__name__


_JSON_KINDS = {dict: "object", list: "array", str: "string", int: "number", float: "number",
               bool: "boolean", type(None): "null"}


def json_kind(value: Any) -> str:
    """A parsed value's JSON name, for messages (Python's said 'NoneType', 'dict')."""
    return _JSON_KINDS.get(type(value), type(value).__name__)


def _shown(role: Any) -> str:
    """A role as the row gave it, cut short: a text quoted, anything else in
    JSON's words (null, true, 1), not as a text it never was ('True')."""
    return repr(role[:20]) if isinstance(role, str) else json.dumps(role, default=str)[:20]


_TEXT_ONLY = ("evalbeam reads conversations of text turns (an agent's tool calls and tool "
              "results are not read)")


def _no_tools(item: dict, role: Any, name: str, i: int) -> None:
    """An agent's turn (Ragas' AIMessage with tool_calls, ToolMessage; OpenAI's
    tool_calls and role `tool`, and the older function_call) is refused saying
    so: a tool call's empty content was reported as a turn without text."""
    legacy = item.get("function_call")
    calls = item.get("tool_calls") or ([legacy] if isinstance(legacy, dict) else None)
    if calls:
        names = [c.get("name") or (c.get("function") or {}).get("name") for c in calls
                 if isinstance(c, dict)] if isinstance(calls, list) else []
        shown = ", ".join(str(n) for n in names if n) or "?"
        raise TypeError(f"{name}[{i}] calls a tool ({shown[:80]}); {_TEXT_ONLY}")
    if role in ("tool", "function"):
        raise TypeError(f"{name}[{i}] is a tool result (role {role!r}); {_TEXT_ONLY}")
    if role in _TOOL_PARTS:  # the Responses API's function_call items: a type, no role
        raise TypeError(f"{name}[{i}] is a tool's item (type {role!r}); {_TEXT_ONLY}")


def parse_messages(value: Any, name: str = "messages") -> list[dict[str, str]] | None:
    """A list of turns (or a JSON array of them in a string) -> normalised turns."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise TypeError(f"{name} must be a list of {{role, content}}, got a plain "
                            "string") from None
        except RecursionError:
            raise TypeError(f"{name} is a JSON text nested too deeply to read") from None
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{name} must be a list of {{role, content}}, got "
                        f"{type(value).__name__}")
    return [_message(item, name, i) for i, item in enumerate(value)]


def is_conversation(turns: list[dict[str, str]] | None) -> bool:
    """Whether the turns before the question make the case a conversation: a
    user or assistant turn. A system prompt alone is an instruction to the bot,
    not a turn: the case is a single exchange (sent with its system prompt)."""
    return any(m["role"] != "system" for m in turns or ())


def split_conversation(turns: list[dict[str, str]]) -> tuple[str, list[dict[str, str]]]:
    """A whole conversation given as the question (Ragas' MultiTurnSample, OpenAI
    evals, Inspect): its last user turn is the question, the turns before it are
    the history; what follows the last user turn (a recorded reply) is not part
    of either (schemas.cases reads it as the recorded answer)."""
    last = max((i for i, m in enumerate(turns) if m["role"] == "user"), default=None)
    if last is None:
        raise ValueError("the conversation has no user turn to answer")
    return turns[last]["content"], turns[:last]
