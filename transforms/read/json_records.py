"""JSON records whose values nest deeper than Python's parser can follow.

`json.loads` recurses once per level of nesting and raises RecursionError
at about a thousand levels; a single such value (`[[[[...]]]]` in one field
of one record) must cost that record only, never the run. These helpers
find the members of a JSON container without recursing (a scan over its
strings and brackets), so the other fields of the record, and the other
records of a `.json` array, still parse. A member that is too deep to parse
becomes `TooDeep`; ReadCases turns a row with one in a column it reads into
an errors/ row naming the column.
"""
from __future__ import annotations

import json
import re
from typing import Any

from schemas.cases import TooDeep

_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}:,]', re.S)


def _members(text: str) -> list[tuple[int, int | None, int]] | None:
    """(start, colon or None, end) of each top-level member of the JSON array or
    object `text` holds; None when it is not one (or its brackets do not balance)."""
    depth, members, start, colon = 0, [], 0, None
    opened = text.lstrip()[:1]
    if opened not in ("[", "{"):
        return None
    for m in _TOKENS.finditer(text):
        c = m.group()[0]
        if c == '"':
            continue
        if c in "[{":
            depth += 1
            if depth == 1:
                start = m.end()
        elif c in "]}":
            depth -= 1
            if depth == 0:
                if text[start:m.start()].strip():
                    members.append((start, colon, m.start()))
                return members if not text[m.end():].strip() else None
        elif depth == 1 and c == ":":
            colon = m.start()
        elif depth == 1 and c == ",":
            members.append((start, colon, m.start()))
            start, colon = m.end(), None
    return None


def loads(text: str, levels: int = 1) -> Any:
    """json.loads, except that a value nested too deeply to parse becomes
    TooDeep. When the whole is too deep, the containers of the first `levels`
    levels are taken apart and their members parsed one by one (1: the fields
    of a record; 2: the records of an array and their fields), so only the
    deep member is lost. ValueError when the text is not JSON."""
    try:
        return json.loads(text)
    except RecursionError:
        pass
    if levels <= 0:
        return TooDeep()
    members = _members(text)
    if members is None:
        raise ValueError("a JSON value too deep to parse whose brackets do not balance")
    if text.lstrip()[0] == "[":
        return [loads(text[s:e], levels - 1) for s, _, e in members]
    obj = {}
    for s, colon, e in members:
        if colon is None:
            raise ValueError("an object member without a ':'")
        key = json.loads(text[s:colon])
        if not isinstance(key, str):
            raise ValueError("an object key that is not a string")
        obj[key] = loads(text[colon + 1:e], levels - 1)
    return obj
