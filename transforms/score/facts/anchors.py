"""What the facts layer finds in a text: an `Anchor` (a figure, date or time
with its normal forms), and `Spans`, the characters already read, so that
the digits of a date are not read again as a number."""
from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Callable, Iterable


@dataclass(frozen=True, slots=True)
class Anchor:
    """A number, date or time found in a text.

    `norm` is the canonical form ("10000", "5%", "2024-03-03", "09:00");
    `keys` are all its possible readings (an ambiguous "03/04/2024" has two:
    the 4th of March and the 3rd of April), each a normal form.
    """

    kind: str  # number | money | percent | date | time
    text: str
    norm: str
    start: int  # offsets in the NFKC-normalised text
    end: int
    keys: tuple[str, ...] = ()


class Spans:
    """Characters already claimed by an anchor, so that nothing is counted twice."""

    def __init__(self, length: int) -> None:
        self._taken = bytearray(length)

    def free(self, start: int, end: int) -> bool:
        return self._taken.find(1, start, end) == -1

    def take(self, start: int, end: int) -> None:
        self._taken[start:end] = b"\x01" * (end - start)


def claim_matches(text: str, patterns: Iterable[tuple[str, re.Pattern[str]]], spans: Spans,
                  kind: str, read: Callable[[str, re.Match[str]], tuple[str, tuple[str, ...]] | None]
                  ) -> list[Anchor]:
    """Anchors of `kind` for the matches of `patterns` ((name, regex) pairs, in
    order) whose characters are still free and that `read(name, match)` reads
    as (norm, keys); each claims its characters."""
    found = []
    for name, pattern in patterns:
        for m in pattern.finditer(text):
            start, end = m.span()
            if not spans.free(start, end):
                continue
            parsed = read(name, m)
            if parsed is None:
                continue
            spans.take(start, end)
            norm, keys = parsed
            found.append(Anchor(kind, m.group(), norm, start, end, keys))
    return found


def decimal_text(value: Decimal) -> str:
    """Canonical decimal string: no exponent, no trailing zeros ("1500000", "0.5")."""
    return format(value.normalize(), "f")
