"""Strict reading of judge replies.

A reply is accepted when it holds exactly one JSON object — alone, in a
```json fence, or with prose around it — whose fields have the expected types
and ranges. Anything else is a *problem* (a one-line description) that the
caller answers with one repair request, then records as an error. Nothing
here ever turns a bad reply into a score.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from schemas.messages import json_kind


class _Repeated(ValueError):
    """An object gives one field twice with two values (json would keep the last)."""

    def __init__(self, name: str):
        super().__init__(name)
        self.problem = f"the reply gives field {name[:40]!r} twice"


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out and out[key] != value:
            raise _Repeated(key)
        out[key] = value
    return out


def extract_object(text: str) -> tuple[dict | None, str | None]:
    """(the JSON object in the reply, None) or (None, the problem)."""
    if not isinstance(text, str) or not text.strip():
        return None, "the reply is empty"
    stripped = text.strip()
    try:
        obj = json.loads(stripped, object_pairs_hook=_no_repeats)
    except _Repeated as exc:
        return None, exc.problem
    except ValueError:
        pass
    else:
        if isinstance(obj, dict):
            return obj, None
        return None, f"the reply is a JSON {json_kind(obj)}, not an object"
    # an object in a ```json fence or with prose around it: every outermost object
    # of the reply counts, fenced or not, so a draft and a final answer (two fences,
    # or one in prose and one fenced) are two objects, not the first one found
    found = []
    decoder = json.JSONDecoder(object_pairs_hook=_no_repeats)
    for m in re.finditer(r"\{", text):
        try:
            obj, end = decoder.raw_decode(text, m.start())
        except _Repeated as exc:
            return None, exc.problem
        except ValueError:
            continue
        if isinstance(obj, dict):
            found.append((m.start(), end, obj))
    outer = [f for f in found if not any(o[0] < f[0] and f[1] <= o[1] for o in found)]
    if outer and all(o[2] == outer[0][2] for o in outer):  # one, or the same one repeated
        return outer[0][2], None
    if len(outer) > 1:
        return None, f"the reply holds {len(outer)} JSON objects, expected one"
    return None, "no JSON object found in the reply"


def whole_object(text: str) -> bool:
    """The reply is one complete JSON object and nothing else (a ```json fence
    around it aside): what a reply cut off at the token limit must be to be read."""
    body = text.strip()
    if body.startswith("```") and body.endswith("```") and len(body) > 6:
        body = body[3:-3].strip()
        body = body[4:] if body[:4].lower() == "json" else body
    try:
        return isinstance(json.loads(body), dict)
    except ValueError:
        return False


@dataclass(frozen=True)
class Shape:
    """What a reply must look like: `check(obj) -> (value, problem)`, and the
    JSON form quoted to the judge in a repair request."""

    example: str
    check: Callable[[dict], tuple[Any, str | None]]

    def read(self, text: str) -> tuple[Any, str | None]:
        obj, problem = extract_object(text)
        if problem:
            return None, problem
        return self.check(obj)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _flag(v: Any) -> int | None:
    """0/1 from 0, 1, true or false; None for anything else."""
    if isinstance(v, bool):
        return int(v)
    if _number(v) and v in (0, 1):
        return int(v)
    return None


def _reason(obj: dict, required: bool) -> tuple[str, str | None]:
    reason = obj.get("reason")
    if reason is None and not required:
        return "", None
    if not isinstance(reason, str):
        return "", "field 'reason' must be a string"
    return reason, None


def rubric(low: float, high: float) -> Shape:
    def check(obj: dict):
        if "score" not in obj:
            return None, "missing field 'score'"
        score = obj["score"]
        if not _number(score):
            return None, f"field 'score' must be a number, got {json.dumps(score)[:40]}"
        if not low <= score <= high:
            return None, f"score {score} is outside the scale {low:g}..{high:g}"
        reason, problem = _reason(obj, required=True)
        if problem:
            return None, problem
        return {"score": float(score), "reason": reason}, None
    return Shape(f'{{"score": <number from {low:g} to {high:g}>, "reason": "<one sentence>"}}',
                 check)


def _string_list(obj: dict, name: str) -> tuple[list[str] | None, str | None]:
    if name not in obj:
        return None, f"missing field '{name}'"
    items = obj[name]
    if not isinstance(items, list) or not all(isinstance(s, str) for s in items):
        return None, f"field '{name}' must be a list of strings"
    return [s.strip() for s in items if s.strip()], None


def statements() -> Shape:
    def check(obj: dict):
        items, problem = _string_list(obj, "statements")
        return (None, problem) if problem else ({"statements": items}, None)
    return Shape('{"statements": ["<one self-contained claim>", ...]}', check)


def statements_and_entities() -> Shape:
    def check(obj: dict):
        out = {}
        for name in ("statements", "entities"):
            items, problem = _string_list(obj, name)
            if problem:
                return None, problem
            out[name] = items
        return out, None
    return Shape('{"statements": ["<claim>", ...], "entities": ["<entity>", ...]}', check)


def verdicts(ids: Sequence[str]) -> Shape:
    """One 0/1 verdict for each id, each id exactly once: {id: (verdict, reason)}."""
    wanted = list(ids)

    def check(obj: dict):
        items = obj.get("verdicts")
        if not isinstance(items, list):
            return None, "missing field 'verdicts' (a list)"
        out: dict[str, tuple[int, str]] = {}
        for item in items:
            if not isinstance(item, dict) or "id" not in item or "verdict" not in item:
                return None, "each verdict must be an object with 'id' and 'verdict'"
            key = str(item["id"]).strip()
            if key not in wanted:
                return None, f"verdict for unknown id {key[:20]!r}"
            if key in out:
                return None, f"two verdicts for id {key}"
            flag = _flag(item["verdict"])
            if flag is None:
                return None, f"verdict for {key} must be 0 or 1, got {json.dumps(item['verdict'])[:20]}"
            reason, problem = _reason(item, required=False)
            if problem:
                return None, problem
            out[key] = (flag, reason)
        missing = [i for i in wanted if i not in out]
        if missing:
            return None, f"no verdict for {', '.join(missing[:5])}"
        return out, None
    return Shape('{"verdicts": [{"id": "<id as given>", "verdict": <1 or 0>, '
                 '"reason": "<short>"}, ...]}', check)


def flags(categories: Sequence[str]) -> Shape:
    """A 0/1 flag for every category, plus an optional reason."""
    cats = list(categories)

    def check(obj: dict):
        out = {}
        for c in cats:
            if c not in obj:
                return None, f"missing field {c!r}"
            flag = _flag(obj[c])
            if flag is None:
                return None, f"field {c!r} must be 0 or 1, got {json.dumps(obj[c])[:20]}"
            out[c] = flag
        reason, problem = _reason(obj, required=False)
        if problem:
            return None, problem
        return {"flags": out, "reason": reason}, None
    fields = ", ".join(f'"{c}": <1 or 0>' for c in cats)
    return Shape(f'{{{fields}, "reason": "<short, for any flag>"}}', check)


def intentions() -> Shape:
    """The user's intentions in a conversation, each satisfied (1) or not (0)."""
    def check(obj: dict):
        items = obj.get("intentions")
        if not isinstance(items, list):
            return None, "missing field 'intentions' (a list)"
        out = []
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("intention"), str):
                return None, "each intention must be an object with 'intention' and 'satisfied'"
            flag = _flag(item.get("satisfied"))
            if flag is None:
                return None, (f"'satisfied' must be 0 or 1, got "
                              f"{json.dumps(item.get('satisfied'))[:20]}")
            reason, problem = _reason(item, required=False)
            if problem:
                return None, problem
            out.append((item["intention"].strip(), flag, reason))
        return out, None
    return Shape('{"intentions": [{"intention": "<what the user wanted>", "satisfied": <1 or 0>, '
                 '"reason": "<short>"}, ...]}', check)
