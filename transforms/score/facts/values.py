"""A text's figures, dates and times, found in one pass in which each
character counts once: dates claim their characters first, then times and
list markers, so the digits inside them are not read again as numbers."""
from __future__ import annotations

import re
import unicodedata

from transforms.score.facts.anchors import Anchor, Spans
from transforms.score.facts.dates import implied_keys, scan_dates
from transforms.score.facts.numbers import scan_numbers
from transforms.score.facts.times import scan_times
from transforms.text.languages import detect_language
from transforms.text.tokens import normalize_digits

# "1." or "a)" opening a line is a list marker, not a quantity.
_LIST_MARKER = re.compile(r"(?m)^[ \t]*(?:\d{1,2}|[A-Za-z])[.)](?=\s)")
_DIGIT = re.compile(r"\d")


def prepare_text(text: str) -> str:
    """NFKC so that full-width digits and symbols read like ASCII ones, and
    Arabic-Indic digits as ASCII digits (same length: offsets stay valid). The
    full-width comma is punctuation, never a thousands separator: it is kept
    apart ("=168，168 小时" is 168 twice, not 168168)."""
    return normalize_digits(unicodedata.normalize("NFKC", text.replace("，", "、")))


def scan_values(text: str, unique: bool = False, lang: str | None = None,
                names_too: bool = False, answer: bool = False
                ) -> tuple[list[Anchor], list[Anchor]]:
    """(dates and times, numbers) of a `prepare_text`-ed text, in text order.

    With `unique`, only the first number of each value is returned (all the
    metric needs; it keeps a megabyte of figures cheap). Offsets refer to the
    prepared text. `lang` (detected when None) chooses the month names and the
    decimal separator. With `names_too`, a figure inside a name ("JDK 17") is a
    number as well: what evidence needs (a context naming "JDK 17" attests a
    later bare "17"). With `answer`, the text is an answer, whose facts are
    checked: a spelled count of its own words ("the two sides", "Two
    reasons:") is not one. A source keeps it: "the three ships" in a context
    supports "three ships".
    """
    lang = lang or detect_language(text)
    spans = Spans(len(text))
    # Every date, year, time and digit-number pattern needs a digit (\d, as
    # they spell it): a text without one can only hold spelled-out numbers.
    has_digit = _DIGIT.search(text) is not None
    temporal = scan_dates(text, lang, spans, has_digit, answer)
    if has_digit:
        temporal += scan_times(text, lang, spans)
    for m in _LIST_MARKER.finditer(text):
        spans.take(*m.span())
    numbers = scan_numbers(text, lang, spans, has_digit, unique, names_too, answer)
    temporal.sort(key=lambda a: a.start)
    return temporal, numbers


def extract_dates(text: str) -> list[Anchor]:
    """Dates (ISO norms; "--MM-DD" without a year, "YYYY-MM", "YYYY") and times ("HH:MM")."""
    return scan_values(prepare_text(text))[0]


def extract_numbers(text: str) -> list[Anchor]:
    """Numbers, amounts and percentages, excluding the digits of dates, times and list markers."""
    return scan_values(prepare_text(text))[1]


def value_keys(text: str, lang: str | None = None) -> set[str]:
    """Every normal form the text's figures, dates and times can be read as,
    with what a date implies (its month-year, year and month-day): what a
    source text attests."""
    temporal, numbers = scan_values(prepare_text(text), unique=True, lang=lang)
    keys: set[str] = set()
    for anchor in (*temporal, *numbers):
        for key in anchor.keys:
            keys.update(implied_keys(key))
    return keys


def value_anchors(text: str, lang: str | None = None) -> list[Anchor]:
    """The figures, dates and times an answer states, in text order."""
    temporal, numbers = scan_values(prepare_text(text), unique=True, lang=lang, answer=True)
    return sorted((*temporal, *numbers), key=lambda a: a.start)


def dates_by_year(sentence: str) -> set[str]:
    """Full dates a sentence states by giving the year once: "opened on 3 March
    2008 and admitted patients on 17 March of the same year" attests 2008-03-17."""
    keys = value_keys(sentence)
    days = [k[1:] for k in keys if len(k) == 7 and k.startswith("--")]   # "-03-17"
    years = [k for k in keys if len(k) == 4 and k.isdigit()]
    return {y + d for y in years for d in days} if days and years else set()
