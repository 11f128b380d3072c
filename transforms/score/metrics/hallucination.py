"""Claim-based hallucination: are the answer's checkable statements in the contexts?

The answer is reduced to *anchors*, the parts of it that can be checked
against the retrieved contexts without a model:

1. numbers (quantities, prices, percentages), normalised so that "10k",
   "10,000", "$10,000" and "10000" are one value and "5%", "5 percent" and
   "5 per cent" another; small spelled-out numbers ("three", "twenty-five",
   "two million") count too;
2. dates normalised to ISO ("March 3, 2024" = "3 March 2024" = "2024-03-03"
   = "Mar 3rd, 2024"), month-years ("2024-03"), years after a preposition
   ("in 2021") and times of day ("9am" = "09:00"); the digits of a date or
   time are not counted again as numbers;
3. assertive claims: subject-verb-object triples around a fact-asserting verb
   ("The Pro plan includes SSO"), where subject and object are the content
   words next to the verb. Hedged sentences ("may", "might", "probably"...)
   and questions assert nothing and give no claims.

A number or date is supported when the same normal form occurs in any context
(contexts are normalised the same way; a full date in a context also supports
its month-year, its year and its month-day). A claim is supported when some
subject word and some object word (Porter stems) occur within `window` tokens
of each other in one context.

    S_claims = unsupported anchors / anchors   (0 when there are none)

A topic-drift gate catches answers that are about something else entirely
(and so may hold no anchors at all): with `overlap` the share of the answer's
distinct content n-grams found in the contexts (see `ngram_overlap`),
P_drift = 0.2 when overlap < 0.2, else 0.

    hallucination = max(S_claims, P_drift)

Everything is regex-and-set based, linear in the text length, so a megabyte
answer is scored in about a second.
"""
from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Iterable, Sequence

from schemas.records import MetricResult
from transforms.text import stem as _stem
from transforms.text import stop_words, tokenize

DEFAULT_WINDOW = 12
DRIFT_THRESHOLD = 0.2
DRIFT_PENALTY = 0.2
# Anchors listed in the details: enough to see what went wrong, bounded so a
# huge answer does not produce a huge output row.
MAX_LISTED = 50

# --------------------------------------------------------------------------
# Anchors
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Anchor:
    """A number, date or time found in a text.

    `norm` is the canonical form ("10000", "5%", "2024-03-03", "09:00");
    `keys` are all its possible readings (an ambiguous "03/04/2024" has two:
    the 4th of March and the 3rd of April), each a normal form.
    """

    kind: str  # number | money | percent | date | time
    text: str
    norm: str
    start: int  # offsets in the NFKC-normalised text
    end: int
    keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Claim:
    """An assertive subject-verb-object triple; words are lower-case tokens."""

    subject: tuple[str, ...]
    verb: str
    obj: tuple[str, ...]
    sentence: str

    @property
    def text(self) -> str:
        return " ".join((*self.subject, self.verb, *self.obj))


# --- dates and times ------------------------------------------------------

_MONTHS = {
    "jan": 1, "january": 1, "feb": 2, "february": 2, "mar": 3, "march": 3,
    "apr": 4, "april": 4, "may": 5, "jun": 6, "june": 6, "jul": 7, "july": 7,
    "aug": 8, "august": 8, "sep": 9, "sept": 9, "september": 9, "oct": 10,
    "october": 10, "nov": 11, "november": 11, "dec": 12, "december": 12,
}
# "May" only capitalised: lower-case "may" is the modal verb.
_MON = (r"(?P<mon>(?i:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|june?|july?|"
        r"aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)|May|MAY)"
        r"(?:\.(?!\d))?(?![^\W\d_])")
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?(?![^\W_])"
_YEAR = r"(?P<year>\d{4})(?!\d)"

_DATE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # 2024-03-03, 2024/03/03, 2024.03.03
    ("ymd", re.compile(r"(?<![\w.\-/])(?P<year>\d{4})([-/.])(?P<month>\d{1,2})\2(?P<day>\d{1,2})(?![\d]|[.\-/]\d)")),
    # March 3, 2024 / Mar 3rd 2024 (a weekday before it is simply left out)
    ("mdy", re.compile(rf"(?<![^\W_]){_MON}\s+{_DAY},?\s+{_YEAR}")),
    # 3 March 2024 / 3rd of March, 2024
    ("dmy", re.compile(rf"(?<![^\W_]){_DAY}\s+(?:of\s+)?{_MON},?\s+{_YEAR}")),
    # 03/04/2024, 3.4.2024: day and month order is ambiguous
    ("numeric", re.compile(r"(?<![\w.\-/])(?P<a>\d{1,2})([-/.])(?P<b>\d{1,2})\2(?P<year>\d{4})(?![\d]|[.\-/]\d)")),
    # 2024年3月3日
    ("cjk", re.compile(r"(?<!\d)(?P<year>\d{4})\s?年\s?(?P<month>\d{1,2})\s?月\s?(?P<day>\d{1,2})\s?[日号]")),
    # March 2024
    ("my", re.compile(rf"(?<![^\W_]){_MON},?\s+(?:of\s+)?{_YEAR}")),
    # March 3 / 3 March (no year)
    ("md", re.compile(rf"(?<![^\W_]){_MON}\s+{_DAY}")),
    ("dm", re.compile(rf"(?<![^\W_]){_DAY}\s+(?:of\s+)?{_MON}")),
)

# in 2021, since 1999: a bare year is only a date after a time preposition.
# Found as 4-digit candidates, then the preceding word is checked (much
# faster than trying the prepositions at every position of a long text).
_YEAR_CANDIDATE = re.compile(r"(?<![\d.,])(?:1[89]|20|21)\d\d(?![\w]|[.,]\d)")
_YEAR_CUE = re.compile(r"(?i)(?<![^\W_])(?:in|since|by|from|until|till|before|after|during|"
                       r"of|year|early|late|mid|circa|around)\s+$")
# Patterns that need a month name are skipped when the text has none.
_MONTH_WORD = re.compile(_MON.replace("(?P<mon>", "(?:"))
_NEEDS_MONTH = frozenset({"mdy", "dmy", "my", "md", "dm"})

_TIME_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # 9am, 9 a.m., 9:30 PM
    ("12h", re.compile(r"(?<![\w:.])(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s?(?P<ap>[aApP])(?:\.\s?[mM]\.?|\s?[mM])(?![^\W_])")),
    # 09:00, 21:15:00
    ("24h", re.compile(r"(?<![\w:.])(?P<h>\d{1,2}):(?P<m>\d{2})(?::\d{2})?(?![\d:])")),
)

# "1." or "a)" opening a line is a list marker, not a quantity.
_LIST_MARKER = re.compile(r"(?m)^[ \t]*(?:\d{1,2}|[A-Za-z])[.)](?=\s)")


def _valid_date(year: int, month: int, day: int) -> bool:
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return False
    if day <= 28:
        return True
    days_in_month = (31, 29 if (year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)) else 28,
                     31, 30, 31, 30, 31, 31, 30, 31, 30, 31)[month - 1]
    return day <= days_in_month


def _date_from_match(kind: str, m: re.Match[str]) -> tuple[str, tuple[str, ...]] | None:
    """(norm, readings) of a date match, or None when it is not a valid date.

    `readings` are what the text can mean: one ISO form, or two for an
    ambiguous numeric date such as 03/04/2024 (US reading first).
    """
    g = m.groupdict()
    month = _MONTHS[g["mon"].lower()] if g.get("mon") else None
    if kind in ("ymd", "mdy", "dmy", "cjk"):
        year, day = int(g["year"]), int(g["day"])
        month = month if month is not None else int(g["month"])
        if not _valid_date(year, month, day):
            return None
        norm = f"{year:04d}-{month:02d}-{day:02d}"
        return norm, (norm,)
    if kind == "numeric":
        year, a, b = int(g["year"]), int(g["a"]), int(g["b"])
        readings = [(a, b), (b, a)] if a != b else [(a, b)]  # (month, day)
        isos = tuple(f"{year:04d}-{mo:02d}-{d:02d}" for mo, d in readings if _valid_date(year, mo, d))
        return (isos[0], isos) if isos else None
    if kind == "my":
        norm = f"{int(g['year']):04d}-{month:02d}"
        return norm, (norm,)
    # "md" / "dm": a month-day without a year
    day = int(g["day"])
    if not _valid_date(2000, month, day):  # 2000 is a leap year: Feb 29 is fine
        return None
    norm = f"--{month:02d}-{day:02d}"
    return norm, (norm,)


def _implied(key: str) -> tuple[str, ...]:
    """What a date in a context also attests: a full date its month-year, year
    and month-day; a month-year its year. Other values only themselves."""
    if len(key) == 10 and key[4] == "-" and key[7] == "-":
        return key, key[:7], key[:4], "--" + key[5:]
    if len(key) == 7 and key[4] == "-":
        return key, key[:4]
    return (key,)


def _time_from_match(kind: str, m: re.Match[str]) -> str | None:
    hour, minute = int(m["h"]), int(m["m"] or 0)
    if minute > 59:
        return None
    if kind == "12h":
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if m["ap"].lower() == "p" else 0)
    elif hour > 23:
        return None
    return f"{hour:02d}:{minute:02d}"


# --- numbers --------------------------------------------------------------

_NUMBER = re.compile(
    # Not glued to a Latin word ("iPhone15") or inside a longer figure; CJK
    # text has no spaces, so a preceding ideograph is fine ("价格是100元").
    r"(?<![A-Za-z\d.,])"
    r"(?P<cur>(?:USD|EUR|GBP|CHF|US\$|A\$|C\$|[$€£¥₹])\s?)?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?![.,]?\d)"
    r"(?:\s?(?P<mword>(?i:thousand|million|billion|trillion))(?![^\W_])"
    r"|(?P<mabbr>k|K|M|MM|mn|bn|B|m|b|tn)(?![^\W_]))?"
    r"(?:\s?(?P<pct>%|(?i:per\s?cent|pct)(?![^\W_])))?"
)
_MULTIPLIERS = {
    "thousand": 10**3, "k": 10**3, "million": 10**6, "m": 10**6, "mm": 10**6, "mn": 10**6,
    "billion": 10**9, "b": 10**9, "bn": 10**9, "trillion": 10**12, "tn": 10**12,
}
_MAX_DIGITS = 40  # longer digit runs are identifiers or noise, not quantities

_UNITS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
          "seven": 7, "eight": 8, "nine": 9}
_TEENS = {"ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
          "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
         "seventy": 70, "eighty": 80, "ninety": 90}
_SCALES = {"hundred": 100, "thousand": 10**3, "million": 10**6, "billion": 10**9}
_SPELLED = re.compile(
    r"(?i)(?<![^\W_])(?:"
    rf"(?P<tens>{'|'.join(_TENS)})(?:[-\s](?P<tu>{'|'.join(u for u in _UNITS if u != 'zero')}))?"
    rf"|(?P<small>{'|'.join(u for u in (*_TEENS, *_UNITS) if u != 'one')})"
    r"|(?P<a>an?|one)"
    r")(?P<scales>(?:\s+(?:hundred|thousand|million|billion))*)"
    r"(?:\s?(?P<pct>%|per\s?cent))?(?![^\W_])"
)


def _fmt(value: Decimal) -> str:
    """Canonical decimal string: no exponent, no trailing zeros ("1500000", "0.5")."""
    return format(value.normalize(), "f")


def _number_from_match(m: re.Match[str]) -> tuple[str, str] | None:
    """(kind, norm) of a digit-number match."""
    digits = m["num"].replace(",", "")
    if len(digits) > _MAX_DIGITS:
        return None
    mult = m["mword"] or m["mabbr"]
    if digits.isdecimal() and not (mult or m["pct"]):  # the common case: a plain integer
        return ("money" if m["cur"] else "number"), str(int(digits))
    try:
        value = Decimal(digits)
    except InvalidOperation:
        return None
    if mult:
        # Lower-case m/b after a bare number are units (5m, 3b); with a
        # currency sign they are millions/billions ($1.5m).
        if mult in ("m", "b") and not m["cur"]:
            mult = None
        if mult:
            value *= _MULTIPLIERS[mult.lower()]
    if m["pct"]:
        return "percent", _fmt(value) + "%"
    return ("money" if m["cur"] else "number"), _fmt(value)


def _spelled_from_match(m: re.Match[str]) -> tuple[str, str] | None:
    """(kind, norm) of a spelled-out number, or None for a lone "a"/"one"."""
    scales = m["scales"].split()
    if m["tens"]:
        value = _TENS[m["tens"].lower()] + (_UNITS[m["tu"].lower()] if m["tu"] else 0)
    elif m["small"]:
        word = m["small"].lower()
        value = _UNITS.get(word, _TEENS.get(word, 0))
    else:  # "a hundred", "one million", "one percent"; a lone "a"/"one" is a pronoun
        if not scales and not (m["pct"] and m["a"].lower() == "one"):
            return None
        value = 1
    for scale in scales:
        value *= _SCALES[scale.lower()]
    if m["pct"]:
        return "percent", f"{value}%"
    return "number", str(value)


# --- scanning -------------------------------------------------------------


class _Spans:
    """Characters already claimed by an anchor, so that nothing is counted twice."""

    def __init__(self, length: int) -> None:
        self._taken = bytearray(length)

    def free(self, start: int, end: int) -> bool:
        return self._taken.find(1, start, end) == -1

    def take(self, start: int, end: int) -> None:
        self._taken[start:end] = b"\x01" * (end - start)


def _prepare(text: str) -> str:
    """NFKC so that full-width digits and symbols read like ASCII ones."""
    return unicodedata.normalize("NFKC", text)


def _scan(text: str, unique: bool = False) -> tuple[list[Anchor], list[Anchor]]:
    """(dates and times, numbers) of an already NFKC-normalised text, in text order.

    Dates claim their characters first, then times and list markers, so the
    digits inside them are not read again as numbers. With `unique`, only the
    first number of each value is returned (all the metric needs; it keeps a
    megabyte of figures cheap). Offsets refer to the NFKC text.
    """
    spans = _Spans(len(text))
    temporal: list[Anchor] = []
    has_month = _MONTH_WORD.search(text) is not None
    for kind, pattern in _DATE_PATTERNS:
        if (kind in _NEEDS_MONTH and not has_month) or (kind == "cjk" and "年" not in text):
            continue
        for m in pattern.finditer(text):
            start, end = m.span()
            if not spans.free(start, end):
                continue
            parsed = _date_from_match(kind, m)
            if parsed is None:
                continue
            spans.take(start, end)
            norm, keys = parsed
            temporal.append(Anchor("date", m.group(), norm, start, end, keys))
    for m in _YEAR_CANDIDATE.finditer(text):
        start, end = m.span()
        if spans.free(start, end) and _YEAR_CUE.search(text, max(0, start - 12), start):
            spans.take(start, end)
            temporal.append(Anchor("date", m.group(), m.group(), start, end, (m.group(),)))
    for kind, pattern in _TIME_PATTERNS:
        for m in pattern.finditer(text):
            start, end = m.span()
            if not spans.free(start, end):
                continue
            norm = _time_from_match(kind, m)
            if norm is None:
                continue
            spans.take(start, end)
            temporal.append(Anchor("time", m.group(), norm, start, end, (norm,)))
    for m in _LIST_MARKER.finditer(text):
        spans.take(*m.span())
    # Numbers come last and cannot overlap each other (digits vs. words), so
    # they only check the spans, never claim them.
    numbers: list[Anchor] = []
    seen: set[str] = set()
    parsed_cache: dict[str, tuple[str, str] | None] = {}
    for pattern, parse in ((_NUMBER, _number_from_match), (_SPELLED, _spelled_from_match)):
        for m in pattern.finditer(text):
            start, end = m.span()
            if not spans.free(start, end):
                continue
            raw = m.group()
            if raw in parsed_cache:
                parsed = parsed_cache[raw]
            else:
                parsed = parsed_cache[raw] = parse(m)
            if parsed is None:
                continue
            kind, norm = parsed
            if unique:
                if norm in seen:
                    continue
                seen.add(norm)
            numbers.append(Anchor(kind, raw, norm, start, end, (norm,)))
    temporal.sort(key=lambda a: a.start)
    numbers.sort(key=lambda a: a.start)
    return temporal, numbers


def extract_dates(text: str) -> list[Anchor]:
    """Dates (ISO norms; "--MM-DD" without a year, "YYYY-MM", "YYYY") and times ("HH:MM")."""
    return _scan(_prepare(text))[0]


def extract_numbers(text: str) -> list[Anchor]:
    """Numbers, amounts and percentages, excluding the digits of dates, times and list markers."""
    return _scan(_prepare(text))[1]


# --- claims ---------------------------------------------------------------

ASSERTIVE_VERBS: frozenset[str] = frozenset("""
    is are was were costs cost includes include included released launched
    offers offered supports supported requires required takes took ships shipped
    has have had provides provided charges charged covers covered allows allowed
    lasts lasted contains contained became becomes gives gave equals weighs
    guarantees guaranteed features expires expired renews renewed accepts accepted
""".split())

# Hedges: the sentence states a possibility, not a fact. Lower-case "may"
# only, as capitalised "May" is usually the month.
_HEDGE = re.compile(
    r"(?<![^\W_])(?:(?i:might|could|possibly|perhaps|maybe|likely|unlikely|probably|"
    r"suggests?|suggested|seems?|seemed|appears?|appeared)|may)(?![^\W_])"
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
# Subjects do not reach across a comma, colon or semicolon ("Yes, it is ..."),
# except the thousands separator of a figure.
_CLAUSE_BREAK = re.compile(r"[;:]|,(?!\d)")
_CONJUNCTIONS = frozenset({"and", "or", "but", "while", "whereas"})
_PHRASE_SPAN = 5  # tokens looked at on each side of the verb
_PHRASE_WORDS = 3  # content words kept on each side


def _is_number_token(tok: str) -> bool:
    return not any(ch.isalpha() for ch in tok)


def _phrase(tokens: list[str], indices: Iterable[int], stop_at: frozenset[str] = frozenset()) -> list[str]:
    """Content words among tokens[indices]: no stop words, verbs or bare numbers.

    Numbers and month names are left to the number and date anchors so that a
    wrong price or date is judged once, by value, not also as a claim.
    Walking stops at a `stop_at` token.
    """
    stops = stop_words()
    words: list[str] = []
    for i in indices:
        tok = tokens[i]
        if tok in stop_at:
            break
        if tok in stops or tok in ASSERTIVE_VERBS or tok in _MONTHS or _is_number_token(tok):
            continue
        words.append(tok)
        if len(words) == _PHRASE_WORDS:
            break
    return words


def _sentence_claims(sentence: str) -> list[Claim]:
    stripped = sentence.strip()
    if not stripped or stripped.endswith("?") or _HEDGE.search(stripped):
        return []
    claims: list[Claim] = []
    for clause in _CLAUSE_BREAK.split(stripped):
        tokens = tokenize(clause)
        for i, tok in enumerate(tokens):
            if tok not in ASSERTIVE_VERBS:
                continue
            subject = tuple(reversed(_phrase(tokens, range(i - 1, max(-1, i - 1 - _PHRASE_SPAN), -1),
                                             _CONJUNCTIONS)))
            if not subject and claims:
                # "The plan costs $20, and includes SSO": the next verb shares the subject.
                subject = claims[-1].subject
            obj = _phrase(tokens, range(i + 1, min(len(tokens), i + 1 + _PHRASE_SPAN)))
            if subject and obj:
                claims.append(Claim(subject, tok, tuple(obj), stripped[:200]))
    return claims


def extract_claims(text: str) -> list[Claim]:
    """Assertive subject-verb-object claims, one per fact-asserting verb with both sides.

    Heuristic: split into sentences, skip questions and hedged sentences, and
    for each verb of ASSERTIVE_VERBS take up to three content words among the
    five tokens before it in its clause (subject; a verb without one shares
    the previous claim's subject) and the five tokens after it (object).
    """
    claims: list[Claim] = []
    for sentence in _SENTENCE_END.split(text):
        claims.extend(_sentence_claims(sentence))
    return claims


# --------------------------------------------------------------------------
# Evidence
# --------------------------------------------------------------------------


class _Evidence:
    """What the contexts can support: normalised values and stem positions."""

    def __init__(self, contexts: Sequence[str]) -> None:
        self.values: set[str] = set()
        self.positions: list[dict[str, list[int]]] = []
        for ctx in contexts:
            temporal, numbers = _scan(_prepare(ctx), unique=True)
            for anchor in (*temporal, *numbers):
                for key in anchor.keys:
                    self.values.update(_implied(key))
            index: dict[str, list[int]] = {}
            for pos, tok in enumerate(tokenize(ctx)):
                index.setdefault(_stem(tok), []).append(pos)
            self.positions.append(index)

    def supports_value(self, anchor: Anchor) -> bool:
        return any(k in self.values for k in anchor.keys)

    def supports_claim(self, claim: Claim, window: int) -> bool:
        subj = {_stem(t) for t in claim.subject}
        obj = {_stem(t) for t in claim.obj}
        for index in self.positions:
            s_pos = sorted(p for s in subj for p in index.get(s, ()))
            if not s_pos:
                continue
            o_pos = sorted(p for o in obj for p in index.get(o, ()))
            if o_pos and _near(s_pos, o_pos, window):
                return True
        return False


def _near(a: list[int], b: list[int], window: int) -> bool:
    """Whether some x in a and y in b (sorted) are distinct positions at most `window` apart."""
    for x in a:
        i = bisect_left(b, x - window)
        while i < len(b) and b[i] <= x + window:
            if b[i] != x:
                return True
            i += 1
    return False


def _content_stems(text: str) -> list[str]:
    stops = stop_words()
    return [_stem(t) for t in tokenize(text) if t not in stops]


def _ngrams(stems: list[str]) -> set:
    return set(stems) | set(zip(stems, stems[1:]))


def ngram_overlap(answer: str, contexts: Sequence[str]) -> float | None:
    """Share of the answer's distinct content n-grams that occur in the contexts.

    Content words are `tokenize` tokens minus stop words, Porter-stemmed; the
    n-grams are the unigrams and the bigrams of adjacent content words (stop
    words removed first, so "price of the plan" gives ("price", "plan")).
    With A the answer's set of distinct unigrams and bigrams and C that of the
    contexts joined by newlines: overlap = |A ∩ C| / |A|. None when the answer
    has no content words (nothing to compare, so no drift can be measured).
    """
    answer_grams = _ngrams(_content_stems(answer))
    if not answer_grams:
        return None
    context_grams = _context_grams(tuple(contexts))
    return len(answer_grams & context_grams) / len(answer_grams)


@lru_cache(maxsize=256)
def _context_grams(contexts: tuple[str, ...]) -> frozenset:
    """The contexts' n-grams, memoised: every bot answering a case (and cases
    that retrieved the same passages) share them."""
    return frozenset(_ngrams(_content_stems("\n".join(contexts))))


@lru_cache(maxsize=256)
def _evidence_for(contexts: tuple[str, ...]) -> "_Evidence":
    return _Evidence(contexts)


# --------------------------------------------------------------------------
# The metric
# --------------------------------------------------------------------------


def _dedupe_values(anchors: Iterable[Anchor]) -> list[Anchor]:
    """One anchor per value ("$12,000" and "12k" are one): repeating a figure
    does not make it weigh more."""
    seen: dict[str, Anchor] = {}
    for a in anchors:
        seen.setdefault(a.norm, a)
    return list(seen.values())


def _dedupe_claims(claims: Iterable[Claim]) -> list[Claim]:
    seen: dict[tuple, Claim] = {}
    for c in claims:
        key = (frozenset(map(_stem, c.subject)), _stem(c.verb), frozenset(map(_stem, c.obj)))
        seen.setdefault(key, c)
    return list(seen.values())


def hallucination(answer: str | None, contexts: Sequence[str] | None,
                  window: int = DEFAULT_WINDOW) -> MetricResult:
    """Hallucination risk in [0, 1]: max(unsupported anchor share, topic-drift penalty).

    Null when there are no contexts to check against ("no contexts") or the
    answer is empty ("empty answer"). See the module docstring for the rules.
    """
    usable = [c for c in (contexts or ()) if c and c.strip()]
    if not usable:
        return MetricResult.null("no contexts")
    if answer is None or not answer.strip():
        return MetricResult.null("empty answer")

    evidence = _evidence_for(tuple(usable))
    temporal, numbers = _scan(_prepare(answer), unique=True)
    values = _dedupe_values((*temporal, *numbers))
    claims = _dedupe_claims(extract_claims(answer))

    found: list[dict] = []
    unsupported: list[dict] = []
    for a in values:
        ok = evidence.supports_value(a)
        row = {"kind": a.kind, "text": a.text, "normalized": a.norm, "supported": ok}
        found.append(row)
        if not ok:
            unsupported.append(row)
    for c in claims:
        ok = evidence.supports_claim(c, window)
        norm = f"{'+'.join(c.subject)}|{c.verb}|{'+'.join(c.obj)}"
        row = {"kind": "claim", "text": c.text, "normalized": norm, "supported": ok}
        found.append(row)
        if not ok:
            unsupported.append(row)

    n_anchors = len(found)
    s_claims = len(unsupported) / n_anchors if n_anchors else 0.0
    overlap = ngram_overlap(answer, usable)
    p_drift = DRIFT_PENALTY if overlap is not None and overlap < DRIFT_THRESHOLD else 0.0
    details = {
        "anchors": found[:MAX_LISTED],
        "unsupported": unsupported[:MAX_LISTED],
        "n_anchors": n_anchors,
        "n_unsupported": len(unsupported),
        "overlap": overlap,
        "p_drift": p_drift,
        "s_claims": s_claims,
    }
    if not n_anchors:
        details["note"] = "no anchors"
    return MetricResult(max(s_claims, p_drift), details)
