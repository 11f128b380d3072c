"""Text normalisation and tokenisation shared by the bots and the metrics.

One definition of "a word" keeps the FAQ matcher, keyword recall, completeness
and lexical relevance consistent with each other.
"""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from importlib import resources

from nltk.stem import porter

_WHITESPACE = re.compile(r"\s+")
# A word: a run of letters/digits (any script), keeping inner apostrophes,
# hyphens, dots and commas between digits ("don't", "e-mail", "3.5", "10,000").
_WORD = re.compile(r"[^\W_]+(?:['’\-.,][^\W_]+)*", re.UNICODE)


def normalize(text: str) -> str:
    """Lower-case, trim and collapse whitespace (the exact-match normal form)."""
    return _WHITESPACE.sub(" ", text).strip().lower()


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens with light punctuation stripped, in order."""
    text = unicodedata.normalize("NFKC", text).lower().replace("’", "'")
    return _WORD.findall(text)


def token_set(text: str) -> frozenset[str]:
    return frozenset(tokenize(text))


@lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    """English stop words shipped with the package (one per line)."""
    data = resources.files("transforms").joinpath("data/stop_words_en.txt").read_text("utf-8")
    return frozenset(w.strip() for w in data.splitlines() if w.strip() and not w.startswith("#"))


def keywords(text: str) -> list[str]:
    """Content words: tokens that are not stop words, in order, unique."""
    stops = stop_words()
    seen: dict[str, None] = {}
    for tok in tokenize(text):
        if tok not in stops and tok not in seen:
            seen[tok] = None
    return list(seen)


# nltk's Porter stemmer (what rouge-score uses), memoised: stemming is hot.
porter_stem = lru_cache(maxsize=1 << 16)(porter.PorterStemmer().stem)


@lru_cache(maxsize=1 << 16)
def stem(token: str) -> str:
    """Porter stem of an ASCII word ("refunds" -> "refund"); other tokens as they are."""
    if 3 < len(token) <= 30 and token.isascii() and token.isalpha():
        return porter_stem(token)
    return token


def terms(text: str) -> list[str]:
    """Stemmed tokens: what relevance and completeness compare, so that a
    question about "refunds" is answered by a text about "refund"."""
    return [stem(t) for t in tokenize(text)]
