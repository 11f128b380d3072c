"""Text normalisation and tokenisation shared by the bots and the metrics.

One definition of "a word" keeps the FAQ matcher, keyword recall, completeness
and lexical relevance consistent with each other.
"""
from __future__ import annotations

import re
import unicodedata
from collections import Counter
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from importlib import resources
from typing import Iterable, Iterator, Mapping

from transforms.lang import detect_language, is_cjk_char, stemmer_for, stop_words_for
from transforms.stemmers import porter_stemmer_class

_WHITESPACE = re.compile(r"\s+")
# A word: a run of letters/digits (any script), keeping inner apostrophes,
# hyphens, dots and commas between digits ("don't", "e-mail", "3.5", "10,000").
_WORD = re.compile(r"[^\W_]+(?:['’\-.,][^\W_]+)*", re.UNICODE)


def normalize(text: str) -> str:
    """Lower-case, trim and collapse whitespace (the exact-match normal form)."""
    return _WHITESPACE.sub(" ", text).strip().lower()


# Arabic-Indic and Persian digits (and Arabic separators) read as ASCII ones:
# NFKC leaves them alone, but "١٨٨٩" and "1889" are the same year.
_DIGITS = {**{0x660 + i: str(i) for i in range(10)}, **{0x6F0 + i: str(i) for i in range(10)},
           0x66B: ".", 0x66C: ",", 0x66A: "%"}


_WIDE = re.compile("[\u3040-\U0003ffff]")


def normalize_digits(text: str) -> str:
    return text.translate(_DIGITS)


# The texts of the row being scored -> their tokens and terms, while the
# pipeline's Score stage scores one row (`shared_texts`); None elsewhere.
_SHARED: ContextVar[dict | None] = ContextVar("evalbeam_shared_texts", default=None)


@contextmanager
def shared_texts() -> Iterator[None]:
    """Within the block, `tokenize` and `terms` compute each text once and hand
    out copies: the metrics of one row (an answer is tokenised by half a dozen
    of them) share the work. Outside a block nothing is remembered, so a metric
    called on its own computes as before; the values are the same either way."""
    token = _SHARED.set({})
    try:
        yield
    finally:
        _SHARED.reset(token)


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens with light punctuation stripped, in order.

    Han and kana are written without spaces, so each of their characters is a
    token (as sacrebleu's and rouge's CJK handling does); other scripts split on
    spaces and punctuation. Arabic-Indic digits read as ASCII digits."""
    shared = _SHARED.get()
    if shared is None:
        return _tokenize(text)
    tokens = shared.get(text)
    if tokens is None:
        tokens = shared[text] = _tokenize(text)
    return list(tokens)  # a copy: a caller may change its list


def _tokenize(text: str) -> list[str]:
    text = normalize_digits(unicodedata.normalize("NFKC", text)).lower().replace("’", "'")
    tokens = _WORD.findall(text)
    if _WIDE.search(text):
        tokens = [piece for tok in tokens for piece in _split_cjk(tok)]
    return tokens


def _split_cjk(token: str) -> list[str]:
    if not any(is_cjk_char(ch) for ch in token):
        return [token]
    pieces, run = [], []
    for ch in token:
        if is_cjk_char(ch):
            if run:
                pieces.append("".join(run))
                run = []
            pieces.append(ch)
        else:
            run.append(ch)
    if run:
        pieces.append("".join(run))
    # a separator between a Latin run and a Han character is punctuation, not part
    # of the word: "java 17，发布" (full-width comma, NFKC ",") gives "17", not "17,"
    return [q for q in (p.strip("'-.,") for p in pieces) if q]


tokenize_plain = tokenize


def token_set(text: str) -> frozenset[str]:
    return frozenset(tokenize(text))


@lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    """English stop words shipped with the package (one per line)."""
    data = resources.files("transforms").joinpath("data/stop_words_en.txt").read_text("utf-8")
    return frozenset(w.strip() for w in data.splitlines() if w.strip() and not w.startswith("#"))


def keywords(text: str) -> list[str]:
    """Content words: tokens that are not stop words of the text's language
    (English: evalbeam's list; others: the `stop-words` package), in order, unique."""
    stops = stop_words_for(detect_language(text))
    seen: dict[str, None] = {}
    for tok in tokenize(text):
        if tok not in stops and tok not in seen:
            seen[tok] = None
    return list(seen)


# nltk's Porter stemmer (what rouge-score uses), memoised: stemming is hot.
porter_stem = lru_cache(maxsize=1 << 16)(porter_stemmer_class()().stem)


@lru_cache(maxsize=1 << 16)
def stem(token: str) -> str:
    """Porter stem of an ASCII word ("refunds" -> "refund"); other tokens as they are."""
    if 3 < len(token) <= 30 and token.isascii() and token.isalpha():
        return porter_stem(token)
    return token


def terms(text: str, lang: str | None = None) -> list[str]:
    """Stemmed tokens: what relevance and completeness compare, so that a
    question about "refunds" is answered by a text about "refund". The stemmer
    is the text's language's (Porter for English, Snowball for others)."""
    lang = lang or detect_language(text)
    shared = _SHARED.get()
    if shared is None:
        return _stems(text, lang)
    key = (text, lang)  # tokens are keyed by the text alone
    stems = shared.get(key)
    if stems is None:
        stems = shared[key] = _stems(text, lang)
    return list(stems)


def _stems(text: str, lang: str) -> list[str]:
    stemmer = stemmer_for(lang)
    return [stemmer(t) for t in tokenize(text)]


def document_frequencies(documents: Iterable[Iterable[str]]) -> tuple[Counter, int]:
    """(how many documents contain each term, how many documents): what both
    idfs (lexical relevance's and BERTScore's) are computed from."""
    df: Counter = Counter()
    n = 0
    for document in documents:
        n += 1
        df.update(set(document))
    return df, n


@lru_cache(maxsize=64)
def _placeholder_pattern(names: frozenset[str]) -> re.Pattern:
    return re.compile(r"\{(" + "|".join(sorted(map(re.escape, names))) + r")\}")


def fill_placeholders(template: str, values: Mapping[str, str],
                      known: Iterable[str] | None = None) -> str:
    """Replace each {name} by values[name] in one pass, so a value that itself
    contains "{question}" stays literal; other braces (JSON in a prompt) are left
    alone. A name in `known` without a value is an error."""
    pattern = _placeholder_pattern(frozenset(values if known is None else known))

    def sub(m: re.Match) -> str:
        if m.group(1) not in values:
            raise KeyError(f"template placeholder {{{m.group(1)}}} has no value here")
        return values[m.group(1)]
    return pattern.sub(sub, template)
