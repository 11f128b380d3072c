"""Names of an answer against the contexts, in any language.

A name of the answer (found by the facts layer: capitalised runs, acronyms,
codes) is supported when its words occur in a context, or in the question,
adjacent and in order, or as an acronym (`ContextIndex.has_words`).
"""
from __future__ import annotations

from dataclasses import dataclass

from transforms.score.facts.dates import MONTH_WORDS
from transforms.score.facts.evidence import ContextIndex
from transforms.score.facts.names import (NOUNS_CAPITALISED, Entity, extract_entities,
                                          is_strong_name_word)
from transforms.score.facts.sentences import split_sentences
from transforms.score.facts.values import value_anchors
from transforms.text.languages import language_near
from transforms.text.stopwords import stop_words_of

MAX_SENTENCES = 1000     # sentences of one answer read for names (figures are read in all)


@dataclass(frozen=True)
class Check:
    """One name of the answer and whether the contexts support it."""

    text: str
    supported: bool


def check_names(answer: str, index: ContextIndex) -> list[Check]:
    """Each distinct name of the answer (case-insensitive), in order, checked once."""
    lang = language_near(answer, index.lang)
    stops = stop_words_of(lang, index.lang)
    checks: list[Check] = []
    seen: set[tuple[str, ...]] = set()
    seen_text: set[str] = set()
    for sentence in split_sentences(answer)[:MAX_SENTENCES]:
        for e in extract_entities(sentence, lang, stops, MONTH_WORDS):
            if e.words in seen:
                continue
            seen.add(e.words)
            ok = index.has_words(e.words) or (
                lang in NOUNS_CAPITALISED and _has_name_after_noun(e.words, index)) or \
                _opening_word_and_figure(e, index, lang)
            if e.text.lower() not in seen_text:
                seen_text.add(e.text.lower())
                checks.append(Check(e.text, ok))
    return checks


def _opening_word_and_figure(e: Entity, index: ContextIndex, lang: str) -> bool:
    """A capital opening a sentence and a figure read as one name ("Expect 5–7
    days", "Tingginya 132 meter"): when the contexts never use that word, it
    names nothing, and the figure is checked alone. A word they use keeps the
    pair a name ("Voyager 2 crossed …")."""
    parts = e.text.split(None, 1)
    if e.start != 0 or len(e.words) != 2 or not e.words[1][:1].isdigit() or len(parts) != 2:
        return False  # ("Model-3" is one word: a name)
    opener, figure = parts
    if e.words[0] in index.tokens or e.words[0] in index.question_tokens or \
            is_strong_name_word(opener, lang):
        return False
    keys = {k for a in value_anchors(figure, lang) for k in a.keys}
    return bool(keys) and any(keys & s["values"] for s in index.sentences)


def _has_name_after_noun(words: tuple[str, ...], index: ContextIndex) -> bool:
    """In German a common noun before a name is capitalised like it and joins its
    run ("Kantone Thurgau", "Tuchregion Flandern"): the name after it is checked."""
    return any(index.has_words(words[k:]) for k in range(1, len(words)))
