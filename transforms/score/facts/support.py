"""What the contexts support of an answer: its names, and all its facts.

A name of the answer (capitalised runs, acronyms, codes) is supported when its
words occur in a context, or in the question, adjacent and in order, or as an
acronym (`ContextIndex.has_words`). `checked_facts` reads the answer's figures,
amounts, dates, times and names and says which the contexts (or, for a value,
the question) support: what `hallucination`, `unsupported_facts` and
`groundedness` build on.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

from transforms.score.facts.anchors import Anchor
from transforms.score.facts.dates import MONTH_WORDS
from transforms.score.facts.evidence import ContextIndex, evidence_for, index_for
from transforms.score.facts.names import (NOUNS_CAPITALISED, Entity, extract_entities,
                                          is_strong_name_word)
from transforms.score.facts.numbers import is_approximate
from transforms.score.facts.sentences import split_sentences
from transforms.score.facts.values import prepare_text, scan_values, value_anchors, value_keys
from transforms.text.languages import language_near
from transforms.text.scripts import script_of
from transforms.text.stopwords import stop_words_of

MAX_SENTENCES = 1000     # sentences of one answer read for names (figures are read in all)


@dataclass(frozen=True)
class Check:
    """One name of the answer and whether the contexts support it."""

    text: str
    supported: bool


def check_names(answer: str, index: ContextIndex) -> tuple[list[Check], set[str]]:
    """Each distinct name of the answer (case-insensitive), in order, checked
    once; and the common words that open a sentence before a figure, read as
    a name with it but naming nothing (see `_common_opener`)."""
    lang = language_near(answer, index.lang)
    stops = stop_words_of(lang, index.lang)
    checks: list[Check] = []
    openers: set[str] = set()
    seen: set[tuple[str, ...]] = set()
    seen_text: set[str] = set()
    for sentence in split_sentences(answer)[:MAX_SENTENCES]:
        for e in extract_entities(sentence, lang, stops, MONTH_WORDS):
            if e.words in seen:
                continue
            seen.add(e.words)
            ok = index.has_words(e.words) or (
                lang in NOUNS_CAPITALISED and _has_name_after_noun(e.words, index))
            if not ok and (opener := _common_opener(e, index, lang)):
                openers.add(opener)  # its figure is a figure fact, checked as one
                continue
            if e.text.lower() not in seen_text:
                seen_text.add(e.text.lower())
                checks.append(Check(e.text, ok))
    return checks, openers


def _common_opener(e: Entity, index: ContextIndex, lang: str) -> str | None:
    """The first word of a capital opening a sentence and a figure read as one
    name ("Expect 5–7 days", "Currently 40 people", "Tingginya 132 meter"),
    when it is a common word: the contexts or the question write it in lower
    case, or never use it and state the figure. A word they use only as a
    name keeps the pair a name ("Voyager 3 crossed …" against "Voyager 2
    crossed …"), and so does a word they never use before a figure they do
    not state either ("React 18" against contexts about Vue): nothing tells a
    name from a common word there."""
    parts = e.text.split(None, 1)
    if e.start != 0 or len(e.words) != 2 or not e.words[1][:1].isdigit() or len(parts) != 2:
        return None  # ("Model-3" is one word: a name)
    opener, word = parts[0], e.words[0]
    if is_strong_name_word(opener, lang):
        return None
    if word in index.lower or word in index.question_lower:
        return opener
    if word in index.tokens or word in index.question_tokens:
        return None
    keys = {k for a in value_anchors(parts[1], lang) for k in a.keys}
    return opener if keys and any(keys & s["values"] for s in index.sentences) else None


def _figures_after(text: str, openers: set[str], numbers: list[Anchor], lang: str) -> list[Anchor]:
    """The figures of the text right after one of `openers` at a sentence's
    start, that `numbers` lack (the scan read them as part of a name)."""
    have = {a.start for a in numbers}
    found = []
    for a in scan_values(text, lang=lang, names_too=True, answer=True)[1]:
        if a.start in have:
            continue
        head = text[:a.start].rstrip(" ")
        for opener in openers:
            if head.endswith(opener) and (len(head) == len(opener) or
                                          not head[-len(opener) - 1].isalnum()):
                found.append(a)
                break
    return found


def _has_name_after_noun(words: tuple[str, ...], index: ContextIndex) -> bool:
    """In German a common noun before a name is capitalised like it and joins its
    run ("Kantone Thurgau", "Tuchregion Flandern"): the name after it is checked."""
    return any(index.has_words(words[k:]) for k in range(1, len(words)))


def _dedupe_values(anchors: Iterable[Anchor]) -> list[Anchor]:
    """One anchor per value ("$12,000" and "12k" are one): repeating a figure
    does not make it weigh more."""
    seen: dict[str, Anchor] = {}
    for a in anchors:
        seen.setdefault(a.norm, a)
    return list(seen.values())


def unsupported_fact_count(answer: str, contexts: Sequence[str], question: str = "") -> int:
    """How many of the answer's figures, dates, times and names neither the
    contexts nor the question support (a signal of `groundedness`)."""
    return sum(1 for row, _ in checked_facts(answer, tuple(contexts), question or "", None)
               if not row["supported"])


# The metrics of one row ask in turn, so a few entries suffice; more would keep
# rows' texts alive (a key holds a megabyte answer or context as well).
@lru_cache(maxsize=16)
def checked_facts(answer: str, contexts: tuple[str, ...], question: str,
                  other: tuple[str, str] | None) -> tuple[tuple[dict, frozenset | None], ...]:
    """(fact row, its value keys, or None for a name) for each fact of the answer,
    checked against the contexts and the question; memoised, since hallucination,
    unsupported_facts and groundedness read the same answer's facts. Callers copy
    a row before changing it."""
    evidence = evidence_for(contexts)
    index = index_for(contexts, question)
    prepared = prepare_text(answer)
    # read in the contexts' language unless the answer clearly is in another one
    lang = language_near(answer, index.lang)
    temporal, numbers = scan_values(prepared, unique=True, answer=True, lang=lang)
    names, openers = check_names(answer, index)
    if openers:  # the figures after them, which the scan gave to a name
        numbers = sorted(numbers + _figures_after(prepared, openers, numbers, lang),
                         key=lambda a: a.start)
    asked = value_keys(question) if question else set()
    facts: list[tuple[dict, frozenset | None]] = []
    for a in _dedupe_values((*temporal, *numbers)):
        in_contexts = evidence.supports_value(a)
        rounded = not in_contexts and is_approximate(prepared, a) and evidence.supports_roughly(a)
        in_question = not (in_contexts or rounded) and any(k in asked for k in a.keys)
        row = {"kind": a.kind, "text": a.text, "normalized": a.norm,
               "supported": in_contexts or rounded or in_question}
        if in_question or rounded:
            row["note"] = "stated in the question" if in_question else "a rounded context figure"
        facts.append((row, frozenset(a.keys)))
    script = script_of("\n".join(contexts)) if other else None
    for name in names:
        if other and script_of(name.text) != script:
            continue  # a name in another script cannot match the contexts'
        facts.append(({"kind": "entity", "text": name.text, "normalized": name.text.lower(),
                       "supported": name.supported}, None))
    return tuple(facts)
