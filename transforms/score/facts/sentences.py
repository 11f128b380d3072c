"""Sentences and list items: the units an answer's statements are checked in."""
from __future__ import annotations

import re

MAX_ITEM_WORDS = 8
_SENTENCE_END = re.compile(r"(?<=[.!?؟])\s+|(?<=[。！？；])\s*|\n+")
_ITEM_SPLIT = re.compile(r"\s*[,;、،]\s*")
_LAST_ITEM = re.compile(r"\s+(?:and|or|und|oder|et|ou|y|o|e|ed|en|و)\s+|\s*[和及或]\s*")
_BULLET = re.compile(r"^\s*(?:[-*•·–]|\d{1,2}[.)])\s+(.*\S)\s*$", re.M)


def split_sentences(text: str) -> list[str]:
    """Sentences, ended by . ! ? ؟ and a space, by 。！？； or by a line break."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


# Western sentence ends only: the pieces claims are read from, and the
# sentences whose word positions support a claim (empty pieces kept)
_WESTERN_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def western_sentence_pieces(text: str) -> list[str]:
    """The text split after . ! ? and a space, and at line breaks, unstripped."""
    return _WESTERN_SENTENCE_END.split(text)


# a part of a sentence that opens with a relative or subordinating word is a
# clause, not an item of an enumeration
_CLAUSE_OPENER = re.compile(
    r"(?i)(?:which|who|whom|whose|where|whereas|while|although|because|qui|dont|où|"
    r"quien|quienes|donde|cuyo|cuya|welche[rsnm]?|wobei|weil|obwohl)(?![^\W_])")


def list_items(answer: str) -> list[str]:
    """Items of bullet lists and of inline enumerations of three or more."""
    items: list[str] = []
    for m in _BULLET.finditer(answer):
        text = m.group(1)
        if len(text.split()) <= MAX_ITEM_WORDS:
            items.append(text.rstrip(".;,"))
    for sentence in split_sentences(_BULLET.sub("", answer)):
        body = sentence.split(":", 1)[1] if ":" in sentence else sentence
        parts = _ITEM_SPLIT.split(body.strip().rstrip(".!?。"))
        # "the practical effect, which is usually simple and sensible": from a
        # relative or subordinate clause on, the parts are no items
        clause = next((k for k, p in enumerate(parts) if k and _CLAUSE_OPENER.match(p.strip())), None)
        parts = parts[:clause]
        if len(parts) < 2:
            continue
        last = _LAST_ITEM.split(parts[-1])
        if len(last) < 2:
            continue
        parts = parts[:-1] + last
        if len(parts) < 3:
            continue
        # the first item often carries the sentence's start: keep its last words
        parts[0] = " ".join(parts[0].split()[-3:])
        if all(0 < len(p.split()) <= MAX_ITEM_WORDS for p in parts) or _cjk_items(parts):
            items += [p for p in parts if p]
    return items


def _cjk_items(parts: list[str]) -> bool:
    return all(0 < len(p) <= 12 and not re.search(r"\s", p) for p in parts)
