"""Grounding checks: each name, figure-name pairing, polarity, list item and
sentence of an answer against the contexts' index, in any language.

- entities: a name of the answer is supported when its words occur in a
  context (or the question), adjacent and in order, or as an acronym.
- bindings: a figure or date and the name it is said of ("Voyager 2 ... on
  25 August 2012"). Both may appear in the contexts while the pairing is wrong
  (swapped roles); the pairing is unsupported when the contexts state the
  figure next to another name the answer also uses, and never next to this one.
- negations: an answer sentence that restates a context sentence with the
  opposite polarity ("is contagious" / "is not contagious").
- list items: each item of an enumeration ("A, B, C and D", bullet lists).
- sentences: an answer sentence whose content words are mostly absent from
  the contexts (and the question) says something the contexts do not; this
  is what makes an off-topic answer without figures score high.

The facts (names, values, sentences) come from `transforms.score.facts`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from transforms.score.facts.dates import MONTH_WORDS
from transforms.score.facts.evidence import ContextIndex
from transforms.score.facts.names import (NOUNS_CAPITALISED, Entity, extract_entities,
                                          is_strong_name_word)
from transforms.score.facts.sentences import list_items, split_sentences
from transforms.score.facts.values import value_anchors
from transforms.text.languages import language_near
from transforms.text.negation import is_negated
from transforms.text.stemming import stemmer_for
from transforms.text.stopwords import stop_words_of
from transforms.text.tokens import tokenize

SENTENCE_SUPPORT = 0.5   # share of a sentence's content words the contexts must hold
NEGATION_MATCH = 0.6     # share of content words shared with the context sentence compared
MIN_SENTENCE_WORDS = 3   # shorter sentences are not judged as a whole
MAX_SENTENCES = 1000     # sentences of one answer checked (figures are checked in all)


@dataclass(frozen=True)
class Check:
    """One statement of the answer and whether the contexts support it."""

    kind: str  # entity | binding | negation | list_item | sentence
    text: str
    supported: bool
    note: str = ""


def check_answer(answer: str, index: ContextIndex) -> list[Check]:
    """Entities, bindings, negations, list items and sentences of the answer."""
    lang = language_near(answer, index.lang)
    stops = stop_words_of(lang, index.lang)
    stem = stemmer_for(index.lang)
    checks: list[Check] = []
    seen_entities: dict[tuple, bool] = {}
    answer_entities: dict[tuple, None] = {}  # in the answer's order: the details are reproducible
    sentences = split_sentences(answer)[:MAX_SENTENCES]
    per_sentence = []
    for sentence in sentences:
        ents = extract_entities(sentence, lang, stops, MONTH_WORDS)
        per_sentence.append(ents)
        answer_entities.update(dict.fromkeys(e.words for e in ents))
    for sentence, ents in zip(sentences, per_sentence):
        for e in ents:
            if e.words not in seen_entities:
                ok = index.has_words(e.words) or (
                    lang in NOUNS_CAPITALISED and _has_name_after_noun(e.words, index)) or \
                    _opening_word_and_figure(e, index, lang)
                seen_entities[e.words] = ok
                checks.append(Check("entity", e.text, ok))
        checks += _bindings(sentence, ents, seen_entities, answer_entities, index, lang)
        stoks = tokenize(sentence)
        content = {stem(t) for t in stoks if t not in stops and not t.isdigit()}
        if len(content) >= MIN_SENTENCE_WORDS:
            found = content & (index.stems | index.question_stems)
            share = len(found) / len(content)
            checks.append(Check("sentence", sentence[:120], share >= SENTENCE_SUPPORT,
                                f"{share:.2f} of its words in the contexts"))
            neg = _negation_flip(sentence, stoks, content, lang, index)
            if neg is not None:
                checks.append(neg)
    checks += _list_items(answer, index, stops, stem)
    return checks


def _opening_word_and_figure(e: Entity, index: ContextIndex, lang: str) -> bool:
    """A capital opening a sentence and a figure read as one name ("Expect 5–7
    days", "Tingginya 132 meter"): when the contexts never use that word, it
    names nothing, and the figure is checked alone. A word they use keeps the
    pair a name ("Voyager 2 crossed …"), so its figure's pairing is checked."""
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


def _bindings(sentence: str, ents: list[Entity], supported: dict, answer_entities: dict,
              index: ContextIndex, lang: str) -> list[Check]:
    out = []
    if not ents:
        return out
    for value in value_anchors(sentence, lang):
        before = [e for e in ents if e.end <= value.start and supported.get(e.words)]
        if not before:
            continue
        entity = before[-1]
        keys = set(value.keys)
        holding = [s for s in index.sentences if keys & s["values"]]
        if not holding:
            continue  # the value itself is unsupported: counted once, as a value
        needle = " " + " ".join(entity.words) + " "
        if any(needle in s["joined"] for s in holding):
            continue
        rivals = [w for w in answer_entities if w != entity.words and _is_real_name(w) and
                  any(" " + " ".join(w) + " " in s["joined"] for s in holding)]
        if rivals:
            out.append(Check("binding", f"{entity.text} … {value.text}", False,
                             f"the contexts state {value.text} of {' '.join(rivals[0])}"))
        else:
            out.append(Check("binding", f"{entity.text} … {value.text}", True))
    return out


def _is_real_name(words: tuple[str, ...]) -> bool:
    """A rival name is a name, not a stray letter, unit or figure ("a", "k", "8")."""
    return sum(1 for w in words for c in w if c.isalpha()) >= 3


def _negation_flip(sentence: str, stoks: list[str], content: set[str], lang: str,
                   index: ContextIndex) -> Check | None:
    best, best_share = None, 0.0
    for s in index.sentences:
        share = len(content & s["stems"]) / len(content)
        if share > best_share:
            best, best_share = s, share
    if best is None or best_share < NEGATION_MATCH:
        return None
    negated = is_negated(sentence, stoks, lang)
    if negated == best["negated"]:
        return Check("negation", " ".join(stoks[:20]), True)
    return Check("negation", " ".join(stoks[:20]), False,
                 "the closest context sentence states the opposite polarity")


def _list_items(answer: str, index: ContextIndex, stops, stem) -> list[Check]:
    checks = []
    for item in list_items(answer):
        toks = tokenize(item)
        content = [stem(t) for t in toks if t not in stops]
        if not content:
            continue
        found = sum(1 for c in content if c in index.stems or c in index.question_stems)
        ok = found / len(content) >= 0.5
        checks.append(Check("list_item", item[:80], ok))
    return checks


def unique_checks(checks: Iterable[Check]) -> list[Check]:
    """The first check of each kind and text (case-insensitive)."""
    seen, out = set(), []
    for c in checks:
        key = (c.kind, c.text.lower())
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out
