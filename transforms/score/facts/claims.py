"""Claims: assertive subject-verb-object statements ("The Pro plan includes
SSO"), the facts of an answer that are neither figures nor names. Hedged
sentences ("may", "probably") and questions assert nothing."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from transforms.score.facts.dates import ALL_MONTHS
from transforms.score.facts.sentences import western_sentence_pieces
from transforms.text.languages import detect_language
from transforms.text.negation import negation_cues
from transforms.text.stopwords import stop_words, stop_words_for
from transforms.text.tokens import tokenize

@dataclass(frozen=True, slots=True)
class Claim:
    """An assertive subject-verb-object triple; words are lower-case tokens."""

    subject: tuple[str, ...]
    verb: str
    obj: tuple[str, ...]
    sentence: str
    negated: bool = False  # "is not contagious": supported only by a negated statement

    @property
    def text(self) -> str:
        return " ".join((*self.subject, self.verb, *(("not",) if self.negated else ()), *self.obj))


ASSERTIVE_VERBS: frozenset[str] = frozenset("""
    is are was were costs cost includes include included released launched
    offers offered supports supported requires required takes took ships shipped
    has have had provides provided charges charged covers covered allows allowed
    lasts lasted contains contained became becomes gives gave equals weighs
    guarantees guaranteed features expires expired renews renewed accepts accepted
    stars starred plays played leads led founded won beat defeated built designed wrote
    discovered invented developed acquired bought sold created signed directed produced
    owns owned treats treated causes caused replaced succeeded married hosts hosted opened
    closed joined orbits crossed reached measures measured holds held protects prevents
    reduces increases lowers raises uses used runs ran sets limits limited
""".split())
# The same role in other languages (only used for a text in that language).
FOREIGN_VERBS: dict[str, frozenset[str]] = {
    "de": frozenset("ist sind war waren hat haben hatte hatten wurde wurden kostet kosteten "
                    "enthält umfasst bietet beträgt betrug liegt lag gilt galt".split()),
    "fr": frozenset("est sont était étaient fut a ont avait coûte coûtait comprend contient "
                    "offre permet dure atteint mesure".split()),
    "es": frozenset("es son era eran fue fueron tiene tienen tenía cuesta incluye contiene "
                    "ofrece permite dura alcanza mide".split()),
}

# Hedges: the sentence states a possibility, not a fact. Lower-case "may"
# only, as capitalised "May" is usually the month.
_HEDGE = re.compile(
    r"(?<![^\W_])(?:(?i:might|could|possibly|perhaps|maybe|likely|unlikely|probably|"
    r"suggests?|suggested|seems?|seemed|appears?|appeared)|may)(?![^\W_])"
)
# Subjects do not reach across a comma, colon or semicolon ("Yes, it is ..."),
# except the thousands separator of a figure.
_CLAUSE_BREAK = re.compile(r"[;:]|,(?!\d)")
_CONJUNCTIONS = frozenset({"and", "or", "but", "while", "whereas"})
_PHRASE_SPAN = 5  # tokens looked at on each side of the verb
_PHRASE_WORDS = 3  # content words kept on each side


def _is_number_token(tok: str) -> bool:
    return not any(ch.isalpha() for ch in tok)


def _phrase(tokens: list[str], indices: Iterable[int], stop_at: frozenset[str] = frozenset(),
            stops: frozenset[str] | None = None, verbs: frozenset[str] = ASSERTIVE_VERBS
            ) -> list[str]:
    """Content words among tokens[indices]: no stop words, verbs or bare numbers.

    Numbers and month names are left to the number and date anchors so that a
    wrong price or date is judged once, by value, not also as a claim.
    Walking stops at a `stop_at` token.
    """
    stops = stop_words() if stops is None else stops
    words: list[str] = []
    for i in indices:
        tok = tokens[i]
        if tok in stop_at:
            break
        if tok in stops or tok in verbs or tok in ALL_MONTHS or _is_number_token(tok):
            continue
        words.append(tok)
        if len(words) == _PHRASE_WORDS:
            break
    return words


def _sentence_claims(sentence: str, lang: str = "en") -> list[Claim]:
    stripped = sentence.strip()
    if not stripped or stripped.endswith("?") or _HEDGE.search(stripped):
        return []
    verbs = ASSERTIVE_VERBS if lang == "en" else FOREIGN_VERBS.get(lang)
    if not verbs:
        return []
    stops = stop_words_for(lang)
    cues = negation_cues(lang)
    claims: list[Claim] = []
    for clause in _CLAUSE_BREAK.split(stripped):
        tokens = tokenize(clause)
        for i, tok in enumerate(tokens):
            if tok not in verbs:
                continue
            subject = tuple(reversed(_phrase(tokens, range(i - 1, max(-1, i - 1 - _PHRASE_SPAN), -1),
                                             _CONJUNCTIONS, stops, verbs)))
            if not subject and claims:
                # "The plan costs $20, and includes SSO": the next verb shares the subject.
                subject = claims[-1].subject
            end = min(len(tokens), i + 1 + _PHRASE_SPAN)
            obj = _phrase(tokens, range(i + 1, end), stops=stops, verbs=verbs)
            if subject and obj:
                # "is not necessarily a good idea": the negation is part of the claim
                negated = any(t in cues for t in tokens[max(0, i - 2):end])
                claims.append(Claim(subject, tok, tuple(obj), stripped[:200], negated))
    return claims


def extract_claims(text: str) -> list[Claim]:
    """Assertive subject-verb-object claims, one per fact-asserting verb with both sides.

    Heuristic: split into sentences, skip questions and hedged sentences, and
    for each verb of ASSERTIVE_VERBS take up to three content words among the
    five tokens before it in its clause (subject; a verb without one shares
    the previous claim's subject) and the five tokens after it (object).
    """
    lang = detect_language(text)
    claims: list[Claim] = []
    for sentence in western_sentence_pieces(text):
        claims.extend(_sentence_claims(sentence, lang))
    return claims
