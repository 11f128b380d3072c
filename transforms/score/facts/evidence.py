"""Evidence: what the contexts state, indexed once per passage so that each
fact of an answer is looked up, not searched for.

- `Evidence`: the contexts' figures, dates and times by normal form (what an
  answer's values are checked against).
- `ContextIndex`: the contexts' words, names, acronyms and, per sentence, its
  words and values, with the question's words beside them (what an answer's
  names are checked against).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Sequence

from transforms.score.facts.anchors import Anchor
from transforms.score.facts.dates import implied_keys
from transforms.score.facts.names import ACRONYM_GLUE, acronyms_of, unelided_tokens
from transforms.score.facts.numbers import APPROX_TOLERANCE, magnitude
from transforms.score.facts.sentences import split_sentences, western_sentence_pieces
from transforms.score.facts.values import dates_by_year, prepare_text, scan_values, value_keys
from transforms.text.languages import detect_language
from transforms.text.stemming import stemmer_for
from transforms.text.stopwords import stop_words_for
from transforms.text.tokens import tokenize


class Evidence:
    """What the contexts can support of an answer's figures, dates and times:
    their values, with what a date implies."""

    def __init__(self, contexts: Sequence[str]) -> None:
        self.values: set[str] = set()
        self._magnitudes: list[tuple[float, bool]] | None = None
        for ctx in contexts:
            self.values |= _passage_values(ctx)

    def supports_value(self, anchor: Anchor) -> bool:
        return any(k in self.values for k in anchor.keys)

    def supports_roughly(self, anchor: Anchor) -> bool:
        """A context figure of the same kind within APPROX_TOLERANCE of it."""
        target = magnitude(anchor.norm)
        if target is None or anchor.kind not in ("number", "money", "percent"):
            return False
        percent = anchor.norm.endswith("%")
        if self._magnitudes is None:
            self._magnitudes = [(m, k.endswith("%")) for k in self.values
                                if (m := magnitude(k)) is not None]
        return any(p == percent and abs(m - target) <= APPROX_TOLERANCE * abs(m)
                   for m, p in self._magnitudes)


@lru_cache(maxsize=1024)
def _passage_values(ctx: str) -> frozenset[str]:
    """One context's values, memoised per passage: passages recur across cases
    in every combination and order."""
    values: set[str] = set()
    temporal, numbers = scan_values(prepare_text(ctx), unique=True, names_too=True)
    for anchor in (*temporal, *numbers):
        for key in anchor.keys:
            values.update(implied_keys(key))
    for sentence in western_sentence_pieces(ctx):
        values.update(dates_by_year(sentence))
    return frozenset(values)


@lru_cache(maxsize=256)
def evidence_for(contexts: tuple[str, ...]) -> Evidence:
    """The contexts' Evidence, memoised: every bot answering a case shares it."""
    return Evidence(contexts)


@dataclass
class ContextIndex:
    """What the contexts (and the question) can support, per sentence."""

    lang: str
    sentences: list[dict] = field(default_factory=list)  # joined tokens, values, passage
    tokens: set[str] = field(default_factory=set)
    stems: set[str] = field(default_factory=set)
    joined: list[str] = field(default_factory=list)       # " tok tok " per context passage
    question_tokens: set[str] = field(default_factory=set)
    question_stems: set[str] = field(default_factory=set)
    lower: set[str] = field(default_factory=set)  # words a context writes in lower case
    question_lower: frozenset[str] = frozenset()
    initials: set[str] = field(default_factory=set)  # see acronyms_of
    caps: set[str] = field(default_factory=set)

    def has_words(self, words: Sequence[str]) -> bool:
        """The words appear adjacent, in order, in a context (or in the question);
        names without digits may also match word by word (inflections), and an
        acronym matches the words it abbreviates either way round."""
        needle = " " + " ".join(words) + " "
        if any(needle in j for j in self.joined):
            return True
        if all(w in self.question_tokens for w in words):
            return True
        if any(ch.isdigit() for w in words for ch in w):
            # a name with a figure ("SQLite 3.7.0"): both in one context sentence
            # ("version 3.7.0 ..., SQLite supports")
            return len(words) >= 2 and any(
                all(f" {w} " in s["joined"] for w in words) for s in self.sentences)
        if len(words) == 1 and (words[0] in self.initials or words[0] in self.caps):
            return True
        spelled = [w for w in words if w not in ACRONYM_GLUE]
        if len(spelled) >= 2 and "".join(w[0] for w in spelled) in self.caps:
            return True
        return all(self._fuzzy(w) for w in words)

    def _fuzzy(self, word: str) -> bool:
        if word in self.tokens or word in self.question_tokens:
            return True
        if len(word) < 5:
            return False
        prefix = word[:max(4, len(word) - 3)]
        return any(t.startswith(prefix) for t in self.tokens)


def build_index(contexts: Sequence[str], question: str) -> ContextIndex:
    """The contexts' index, in the language of their beginnings, with the question's words."""
    lang = detect_language(" ".join(c[:500] for c in contexts))
    index = ContextIndex(lang)
    for ctx in contexts:
        passage = _passage(ctx, lang)
        index.tokens.update(passage.tokens)
        index.joined.append(passage.joined)
        index.sentences += [{**sentence, "passage": len(index.joined) - 1}
                            for sentence in passage.sentences]
        index.stems.update(passage.stems)
        index.initials.update(passage.initials)
        index.caps.update(passage.caps)
        index.lower.update(passage.lower)
    return with_question(index, question)


@dataclass(frozen=True)
class _Passage:
    """One context's part of a ContextIndex (read-only: indexes share it)."""

    tokens: frozenset[str]
    joined: str
    sentences: tuple[dict, ...]
    stems: frozenset[str]
    initials: frozenset[str]
    caps: frozenset[str]
    lower: frozenset[str]


@lru_cache(maxsize=1024)
def _passage(ctx: str, lang: str) -> _Passage:
    """Memoised per passage: retrieved passages recur across cases in every
    combination and order, so a cache of whole context lists mostly misses."""
    stops = stop_words_for(lang)
    stem = stemmer_for(lang)
    toks = unelided_tokens(ctx)
    # the parts of a compound too: "al-Khwarizmi" supports "Khwarizmi", "Earth-bound" "Earth"
    parts = [p for t in toks if "-" in t for p in t.split("-") if p]
    sentences = []
    for sentence in split_sentences(ctx):
        stoks = tokenize(sentence)
        sentences.append({
            "joined": " " + " ".join(stoks) + " ",
            "values": value_keys(sentence),
        })
    initials, caps = acronyms_of(ctx)
    return _Passage(frozenset(toks).union(parts), " " + " ".join(toks) + " ", tuple(sentences),
                    frozenset(stem(t) for t in toks if t not in stops), frozenset(initials),
                    frozenset(caps), lower_case_words(ctx))


def lower_case_words(text: str) -> frozenset[str]:
    """The words the text writes in lower case: common words, not names
    ("currently", "total"), whatever a sentence's first letter makes of them."""
    return frozenset(unelided_tokens(" ".join(w for w in text.split() if w.islower())))


def with_question(index: ContextIndex, question: str) -> ContextIndex:
    """The index with the question's words (a shallow copy: the contexts' part,
    the costly one, is shared, so it can be cached without the question)."""
    stops = stop_words_for(index.lang)
    stem = stemmer_for(index.lang)
    qt = unelided_tokens(question or "")
    return replace(index, question_tokens=set(qt),
                   question_stems={stem(t) for t in qt if t not in stops},
                   question_lower=lower_case_words(question or ""))


@lru_cache(maxsize=256)
def context_index(contexts: tuple[str, ...]) -> ContextIndex:
    """The contexts' index, memoised without the question: every case with the
    same passages shares it (questions differ from case to case)."""
    return build_index(contexts, "")


def index_for(contexts: tuple[str, ...], question: str) -> ContextIndex:
    """The contexts' index with the question's words."""
    return with_question(context_index(contexts), question)
