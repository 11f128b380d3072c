"""Surface-level metrics: exact match, keyword recall, length and politeness.

Cheap, deterministic descriptors of an answer. Words are the shared
`transforms.text` tokens so that these scores agree with completeness and
lexical relevance on what "a word" is.
"""
from __future__ import annotations

import re
from functools import lru_cache

from schemas.records import MetricResult, is_blank
from transforms.text.scripts import UNSEGMENTED, unsegmented
from transforms.text.tokens import normalize, token_set, tokenize

# How many missing tokens keyword_recall lists in its details: enough to debug
# a case, small enough not to bloat the output table.
MAX_LISTED_MISSING = 20

DEFAULT_POLITENESS_MARKERS: tuple[str, ...] = ("please", "sorry", "happy to help", "can help")

# Distinct markers needed for a politeness of 1.0.
_POLITENESS_SATURATION = 2


def exact_match(answer: str | None, expected: str | None) -> MetricResult:
    """1.0 when answer and expected agree after `normalize`, else 0.0.

    Null when there is no expected answer: matching "nothing" says nothing.
    """
    if answer is None:
        return MetricResult.null("no answer")
    if expected is None:
        return MetricResult.null("no expected answer")
    if is_blank(expected):
        return MetricResult.null("empty expected answer")
    norm_expected = normalize(expected)
    return MetricResult(1.0 if normalize(answer) == norm_expected else 0.0)


def keyword_recall(answer: str | None, expected: str | None) -> MetricResult:
    """Share of the expected answer's distinct tokens that the answer contains.

    |E ∩ G| / |E| over token sets (E: expected, G: generated). Null when the
    expected answer has no tokens, since recall over an empty set is undefined.
    """
    if answer is None:
        return MetricResult.null("no answer")
    if expected is None:
        return MetricResult.null("no expected answer")
    if unsegmented(answer, expected):
        return MetricResult.null(UNSEGMENTED)
    wanted = token_set(expected)
    if not wanted:
        return MetricResult.null("expected answer has no tokens")
    got = token_set(answer)
    matched = wanted & got
    missing = sorted(wanted - got)
    return MetricResult(
        len(matched) / len(wanted),
        {
            "matched": len(matched),
            "missing": len(missing),
            "missing_tokens": missing[:MAX_LISTED_MISSING],
        },
    )


def characters(text: str) -> int:
    """User-perceived characters (Unicode extended grapheme clusters, `regex`'s
    \\X; `regex` comes with sacrebleu): a family emoji "👨‍👩‍👧‍👦" is 7 code points
    and one character, Devanagari "क्षि" 4 and one, "é" typed as e + accent 2
    and one, a flag two regional indicators and one."""
    if text.isascii() and "\r\n" not in text:
        return len(text)  # every ASCII code point is a character, but CR LF is one
    import regex  # loaded on the first text that needs it
    return len(regex.findall(r"\X", text))


def answer_length(answer: str | None) -> MetricResult:
    """Length of the answer in characters as a reader counts them (`characters`),
    not code points (a descriptor, not a [0, 1] score)."""
    if answer is None:
        return MetricResult.null("no answer")
    chars = characters(answer)
    return MetricResult(float(chars), {"tokens": len(tokenize(answer)), "chars": chars,
                                       "code_points": len(answer)})


@lru_cache(maxsize=32)
def _marker_patterns(markers: tuple[str, ...]) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """One compiled whole-word pattern per marker; phrases allow any whitespace."""
    patterns = []
    for marker in markers:
        words = marker.split()
        if not words:
            continue
        body = r"\s+".join(re.escape(w) for w in words)
        patterns.append((marker, re.compile(rf"(?<!\w){body}(?!\w)", re.IGNORECASE)))
    return tuple(patterns)


def politeness(answer: str | None,
               markers: tuple[str, ...] | list[str] = DEFAULT_POLITENESS_MARKERS) -> MetricResult:
    """Distinct politeness markers found, divided by 2 and clipped to 1.

    Markers match case-insensitively on word boundaries, so "please" does not
    fire inside "displeased" and "happy to help" must appear as a phrase.
    """
    if answer is None:
        return MetricResult.null("no answer")
    found = [m for m, pat in _marker_patterns(tuple(markers)) if pat.search(answer)]
    return MetricResult(min(1.0, len(found) / _POLITENESS_SATURATION), {"markers": found})
