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
from typing import Iterable, Iterator

from transforms.text.scripts import is_cjk_char

_WHITESPACE = re.compile(r"\s+")


# A word: a run of letters/digits (any script), keeping inner apostrophes,
# hyphens, dots and commas between digits ("don't", "e-mail", "3.5", "10,000").
_WORD = re.compile(r"[^\W_]+(?:['’\-.,][^\W_]+)*", re.UNICODE)

# Where Unicode has combining marks: below U+1E950, and the variation selectors.
_MARK_PLANES = (range(0x300, 0x1E950), range(0xE0100, 0xE01F0))


@lru_cache(maxsize=1)
def _word_with_marks() -> re.Pattern:
    """_WORD whose letters carry their combining marks (Unicode M*), which re's
    \\w leaves out: Devanagari, Bengali, Tamil or Thai write vowel signs and
    viramas with them ("दिल्ली" is द ि ल ् ल ी, six code points, one word), Arabic
    and Hebrew their vowel points. Built on the first non-ASCII text (~0.1 s);
    an ASCII text has no mark and keeps _WORD."""
    marks = [o for plane in _MARK_PLANES for o in plane if unicodedata.category(chr(o))[0] == "M"]
    ranges = []
    for o in marks:
        if ranges and ranges[-1][1] == o - 1:
            ranges[-1][1] = o
        else:
            ranges.append([o, o])
    cls = "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges)
    letters = rf"[^\W_](?:[^\W_]|[{cls}])*"
    return re.compile(rf"{letters}(?:['’\-.,]{letters})*")


def normalize(text: str) -> str:
    """Case-fold, trim and collapse whitespace (the exact-match normal form), in
    Unicode's compatibility composition (NFKC): "café" typed as one code point or
    as "e" and a combining accent is one text, and so are full-width "ＡＢＣ１２３"
    (a Chinese or Japanese keyboard's) and "ABC123", half-width "ｶﾀｶﾅ" and
    "カタカナ", "ﬁ" and "fi"; "STRASSE" and "Straße" fold alike (casefold);
    Arabic-Indic digits read as ASCII ones ("١٨٨٩" is 1889), as in `tokenize`."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return normalize_digits(_WHITESPACE.sub(" ", unicodedata.normalize("NFKC", folded)).strip())


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


def shared_memo() -> dict | None:
    """The memo of the `shared_texts` block being run (None outside one): what
    `terms` keeps its stems in, beside the tokens."""
    return _SHARED.get()


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
    tokens = (_WORD if text.isascii() else _word_with_marks()).findall(text)
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


def token_set(text: str) -> frozenset[str]:
    return frozenset(tokenize(text))


def document_frequencies(documents: Iterable[Iterable[str]]) -> tuple[Counter, int]:
    """(how many documents contain each term, how many documents): what both
    idfs (lexical relevance's and BERTScore's) are computed from."""
    df: Counter = Counter()
    n = 0
    for document in documents:
        n += 1
        df.update(set(document))
    return df, n
