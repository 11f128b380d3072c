"""Entities for context_entities_recall: found in the contexts by word-sequence
match, and extracted by rules when no judge is configured.

The rules keep what a support reference usually hinges on: numbers with their
unit or currency, capitalised names (product, company, place, month; a lone
capitalised word opening a sentence is not taken), codes
that mix letters and digits, e-mail addresses and URLs. They are a fallback:
with a judge, the judge lists the entities (in the `reference` call).
"""
from __future__ import annotations

import re
from typing import Sequence

from transforms.text.stopwords import stop_words
from transforms.text.tokens import tokenize

_EMAIL_URL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|https?://\S+[\w/]")
# A unit must end at a word boundary: "2014 by" is not "2014 b", and "3.7 billion"
# keeps its whole word (it was cut to "3.7 b", which no context contains).
_NUMBER = re.compile(r"[$€£¥]?\d[\d,.:]*\d?(?:\s?(?:%|percent|thousand|million|billion|trillion|"
                     r"days?|hours?|minutes?|weeks?|months?|years?|am|pm|[kKmM]?[bB]|bn|GB|MB|kg|"
                     r"km|EUR|USD|GBP)(?![^\W_]))?")
_CODE = re.compile(r"\b(?=[A-Za-z0-9-]*\d)(?=[A-Za-z0-9-]*[A-Za-z])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)+\b"
                   r"|\b[A-Z]{2,}\d+[A-Z0-9]*\b")
_CAPITALISED = re.compile(r"\b[A-Z][\w’'&-]*(?:[ \t]+(?:of |de |the |and |& )?[A-Z][\w’'&-]*)*")


def rule_entities(text: str) -> list[str]:
    """Entities of a text by rules, in order of appearance, without duplicates."""
    found: list[tuple[int, str]] = []
    taken: list[tuple[int, int]] = []

    def add(m: re.Match) -> None:
        start, end = m.span()
        if any(s < end and start < e for s, e in taken):
            return
        value = m.group(0).strip(" .,:;-")
        if value:
            taken.append((start, end))
            found.append((start, value))

    for pattern in (_EMAIL_URL, _CODE, _NUMBER):
        for m in pattern.finditer(text):
            add(m)
    stops = stop_words()
    for m in _CAPITALISED.finditer(text):
        words = m.group(0).split()
        while words and words[0].lower() in stops:  # "The", "You", "Our" start sentences
            words = words[1:]
        sentence_start = not text[:m.start()].strip() or text[:m.start()].rstrip()[-1] in ".!?:"
        if len(words) == 1 and sentence_start and words[0] == m.group(0):
            continue  # "Returns are ...": a capitalised first word is not a name by itself
        if words:
            start = m.start() + m.group(0).index(words[0])
            add(_Span(start, start + len(" ".join(words)), " ".join(words)))
    seen, out = set(), []
    for _, value in sorted(found):
        key = " ".join(tokenize(value))
        if key and key not in seen:
            seen.add(key)
            out.append(value)
    return out


class _Span:
    """A match-like span (for a trimmed capitalised run)."""

    def __init__(self, start: int, end: int, text: str):
        self._span, self._text = (start, end), text

    def span(self) -> tuple[int, int]:
        return self._span

    def group(self, _: int = 0) -> str:
        return self._text


def _words(text: str) -> list[str]:
    """Tokens with the possessive 's dropped ("Qatar's" is "Qatar")."""
    return [t[:-2] if t.endswith("'s") and len(t) > 2 else t for t in tokenize(text)]


def entities_in(entities: Sequence[str], contexts: Sequence[str]) -> list[str]:
    """The entities whose words appear, in order and adjacent, in some context."""
    haystacks = [" " + " ".join(_words(c)) + " " for c in contexts]
    found = []
    for e in entities:
        needle = " ".join(_words(e))
        if needle and any(f" {needle} " in h for h in haystacks):
            found.append(e)
    return found
