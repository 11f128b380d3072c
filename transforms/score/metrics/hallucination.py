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
   and questions assert nothing and give no claims. Nor does a claim none of
   whose words the contexts or the question use ("the underlying idea is
   really quite straightforward"): chatter about something else, which the
   drift gate below weighs, not a statement about the subject to check.
   (A name or figure in it is still checked on its own.)
4. in an answer in another language than its contexts, only the figures,
   dates, times and names: its words cannot match theirs (null when it
   states none of them).

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
from typing import Callable, Iterable, Sequence

from schemas.records import MetricResult
from transforms.score.metrics.grounding import (APPROXIMATE_WORDS, QUANTITY_WORDS, THOUSANDS,
                                               YEAR_AFTER_NAME, is_strong_name_word)
from transforms.lang import (detect_language, is_negated, language_near, negation_cues,
                            other_language, script_of, stemmer_for, stop_words_for,
                            stop_words_of)
from transforms.text import normalize_digits
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
    negated: bool = False  # "is not contagious": supported only by a negated statement

    @property
    def text(self) -> str:
        return " ".join((*self.subject, self.verb, *(("not",) if self.negated else ()), *self.obj))


# --- dates and times ------------------------------------------------------

_MONTHS = {
    "jan": 1, "january": 1, "feb": 2, "february": 2, "mar": 3, "march": 3,
    "apr": 4, "april": 4, "may": 5, "jun": 6, "june": 6, "jul": 7, "july": 7,
    "aug": 8, "august": 8, "sep": 9, "sept": 9, "september": 9, "oct": 10,
    "october": 10, "nov": 11, "november": 11, "dec": 12, "december": 12,
}
# Month names of other languages, matched only in a text of that language
# ("mars" is March in French and a planet in English; "Mai" is May in German).
_FOREIGN_MONTHS: dict[str, dict[str, int]] = {
    "de": {"januar": 1, "jänner": 1, "februar": 2, "märz": 3, "maerz": 3, "april": 4, "mai": 5,
           "juni": 6, "juli": 7, "august": 8, "september": 9, "oktober": 10, "november": 11,
           "dezember": 12},
    "fr": {"janvier": 1, "février": 2, "fevrier": 2, "mars": 3, "avril": 4, "mai": 5, "juin": 6,
           "juillet": 7, "août": 8, "aout": 8, "septembre": 9, "octobre": 10, "novembre": 11,
           "décembre": 12, "decembre": 12},
    "es": {"enero": 1, "febrero": 2, "marzo": 3, "abril": 4, "mayo": 5, "junio": 6, "julio": 7,
           "agosto": 8, "septiembre": 9, "setiembre": 9, "octubre": 10, "noviembre": 11,
           "diciembre": 12},
    "it": {"gennaio": 1, "febbraio": 2, "marzo": 3, "aprile": 4, "maggio": 5, "giugno": 6,
           "luglio": 7, "agosto": 8, "settembre": 9, "ottobre": 10, "novembre": 11, "dicembre": 12},
    "pt": {"janeiro": 1, "fevereiro": 2, "março": 3, "abril": 4, "maio": 5, "junho": 6,
           "julho": 7, "agosto": 8, "setembro": 9, "outubro": 10, "novembro": 11, "dezembro": 12},
    "nl": {"januari": 1, "februari": 2, "maart": 3, "april": 4, "mei": 5, "juni": 6, "juli": 7,
           "augustus": 8, "september": 9, "oktober": 10, "november": 11, "december": 12},
    # Slavic months inflect: nominative, genitive ("15 мая 1935") and locative ("в мае")
    "ru": {"январь": 1, "января": 1, "январе": 1, "февраль": 2, "февраля": 2, "феврале": 2,
           "март": 3, "марта": 3, "марте": 3, "апрель": 4, "апреля": 4, "апреле": 4, "май": 5,
           "мая": 5, "мае": 5, "июнь": 6, "июня": 6, "июне": 6, "июль": 7, "июля": 7, "июле": 7,
           "август": 8, "августа": 8, "августе": 8, "сентябрь": 9, "сентября": 9, "сентябре": 9,
           "октябрь": 10, "октября": 10, "октябре": 10, "ноябрь": 11, "ноября": 11, "ноябре": 11,
           "декабрь": 12, "декабря": 12, "декабре": 12},
    "uk": {"січень": 1, "січня": 1, "січні": 1, "лютий": 2, "лютого": 2, "лютому": 2,
           "березень": 3, "березня": 3, "березні": 3, "квітень": 4, "квітня": 4, "квітні": 4,
           "травень": 5, "травня": 5, "травні": 5, "червень": 6, "червня": 6, "червні": 6,
           "липень": 7, "липня": 7, "липні": 7, "серпень": 8, "серпня": 8, "серпні": 8,
           "вересень": 9, "вересня": 9, "вересні": 9, "жовтень": 10, "жовтня": 10, "жовтні": 10,
           "листопад": 11, "листопада": 11, "листопаді": 11, "грудень": 12, "грудня": 12,
           "грудні": 12},
    "pl": {"styczeń": 1, "stycznia": 1, "styczniu": 1, "luty": 2, "lutego": 2, "lutym": 2,
           "marzec": 3, "marca": 3, "marcu": 3, "kwiecień": 4, "kwietnia": 4, "kwietniu": 4,
           "maj": 5, "maja": 5, "maju": 5, "czerwiec": 6, "czerwca": 6, "czerwcu": 6,
           "lipiec": 7, "lipca": 7, "lipcu": 7, "sierpień": 8, "sierpnia": 8, "sierpniu": 8,
           "wrzesień": 9, "września": 9, "wrześniu": 9, "październik": 10, "października": 10,
           "październiku": 10, "listopad": 11, "listopada": 11, "listopadzie": 11,
           "grudzień": 12, "grudnia": 12, "grudniu": 12},
    "cs": {"leden": 1, "ledna": 1, "lednu": 1, "únor": 2, "února": 2, "únoru": 2, "březen": 3,
           "března": 3, "březnu": 3, "duben": 4, "dubna": 4, "dubnu": 4, "květen": 5, "května": 5,
           "květnu": 5, "červen": 6, "června": 6, "červnu": 6, "červenec": 7, "července": 7,
           "červenci": 7, "srpen": 8, "srpna": 8, "srpnu": 8, "září": 9, "říjen": 10, "října": 10,
           "říjnu": 10, "listopad": 11, "listopadu": 11, "prosinec": 12, "prosince": 12,
           "prosinci": 12},
    "sv": {"januari": 1, "februari": 2, "mars": 3, "april": 4, "maj": 5, "juni": 6, "juli": 7,
           "augusti": 8, "september": 9, "oktober": 10, "november": 11, "december": 12},
    "da": {"januar": 1, "februar": 2, "marts": 3, "april": 4, "maj": 5, "juni": 6, "juli": 7,
           "august": 8, "september": 9, "oktober": 10, "november": 11, "december": 12},
    "nb": {"januar": 1, "februar": 2, "mars": 3, "april": 4, "mai": 5, "juni": 6, "juli": 7,
           "august": 8, "september": 9, "oktober": 10, "november": 11, "desember": 12},
    "ro": {"ianuarie": 1, "februarie": 2, "martie": 3, "aprilie": 4, "mai": 5, "iunie": 6,
           "iulie": 7, "august": 8, "septembrie": 9, "octombrie": 10, "noiembrie": 11,
           "decembrie": 12},
    "tr": {"ocak": 1, "şubat": 2, "mart": 3, "nisan": 4, "mayıs": 5, "haziran": 6, "temmuz": 7,
           "ağustos": 8, "eylül": 9, "ekim": 10, "kasım": 11, "aralık": 12},
    "ar": {"يناير": 1, "كانون الثاني": 1, "فبراير": 2, "شباط": 2, "مارس": 3, "آذار": 3,
           "أبريل": 4, "إبريل": 4, "ابريل": 4, "نيسان": 4, "مايو": 5, "أيار": 5, "يونيو": 6,
           "حزيران": 6, "يوليو": 7, "تموز": 7, "أغسطس": 8, "اغسطس": 8, "آب": 8, "سبتمبر": 9,
           "أيلول": 9, "أكتوبر": 10, "اكتوبر": 10, "تشرين الأول": 10, "نوفمبر": 11,
           "تشرين الثاني": 11, "ديسمبر": 12, "كانون الأول": 12},
}
_ALL_MONTHS = {**_MONTHS, **{k: v for table in _FOREIGN_MONTHS.values() for k, v in table.items()}}
# "May" only capitalised: lower-case "may" is the modal verb.
_MON_NAMES = (r"(?i:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|june?|july?|"
              r"aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)|May|MAY")
_MON_TAIL = r"(?:\.(?!\d))?(?![^\W\d_])"
_MON = "(?P<mon>" + _MON_NAMES + ")" + _MON_TAIL
# A day: "3", "3rd", "1er" (French), "30." (German, before a month name)
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th|er|\.(?=\s))?(?![^\W_])"
_YEAR = r"(?P<year>\d{4})(?!\d)"


def _counted_dates(family: str, year: str, month: str,
                   day: str) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """Full date, month-year and month-day of a script that writes a counter
    word after each part (年 月 日, 년 월 일)."""
    y, mo, d = r"(?P<year>\d{4})\s?", r"(?P<month>\d{1,2})\s?", r"(?P<day>\d{1,2})\s?"
    return ((family, re.compile(rf"(?<!\d){y}{year}\s?{mo}{month}\s?{d}{day}")),
            (f"{family}_my", re.compile(rf"(?<!\d){y}{year}\s?{mo}{month}(?!\s?\d)")),
            (f"{family}_md", re.compile(rf"(?<![\d{year}]){mo}{month}\s?{d}{day}")))


def _date_patterns(mon: str) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """The date patterns around a month-name pattern `mon`."""
    return (
        # 2024-03-03, 2024/03/03, 2024.03.03
        ("ymd", re.compile(r"(?<![\w.\-/])(?P<year>\d{4})([-/.])(?P<month>\d{1,2})\2(?P<day>\d{1,2})(?![\d]|[.\-/]\d)")),
        # March 3, 2024 / Mar 3rd 2024 (a weekday before it is simply left out)
        ("mdy", re.compile(rf"(?<![^\W_]){mon}\s+{_DAY},?\s+{_YEAR}")),
        # 3 March 2024 / 3rd of March, 2024 / 30. August 2023 / 12 de mayo de 1998
        ("dmy", re.compile(rf"(?<![^\W_]){_DAY}\s+(?:of\s+|de\s+)?{mon},?\s+(?:de\s+|del\s+)?{_YEAR}")),
        # 03/04/2024, 3.4.2024: day and month order is ambiguous
        ("numeric", re.compile(r"(?<![\w.\-/])(?P<a>\d{1,2})([-/.])(?P<b>\d{1,2})\2(?P<year>\d{4})(?![\d]|[.\-/]\d)")),
        # 平成24年5月22日, 令和元年: a Japanese era year, with or without month and day
        ("cjk_era", re.compile(r"(?P<era>令和|平成|昭和|大正|明治)\s?(?P<eyear>元|\d{1,2})\s?年"
                               r"(?:\s?(?P<month>\d{1,2})\s?月(?:\s?(?P<day>\d{1,2})\s?日)?)?")),
        # 2024年3月3日, 2024年3月, 3月3日 / 3月3号 (no year: "2019年)10月1日")
        *_counted_dates("cjk", "年", "月", "[日号]"),
        # 2024년 3월 3일, 2024년 3월, 3월 3일 (Korean)
        *_counted_dates("ko", "년", "월", "일"),
        # ngày 27 tháng 5 năm 1937, tháng 5 năm 1937, 27 tháng 5 (Vietnamese)
        ("vi", re.compile(r"(?<!\d)(?P<day>\d{1,2})\s+tháng\s+(?P<month>\d{1,2}),?\s+năm\s+"
                          r"(?P<year>\d{4})(?!\d)")),
        ("vi_my", re.compile(r"(?i:tháng)\s+(?P<month>\d{1,2}),?\s+năm\s+(?P<year>\d{4})(?!\d)")),
        ("vi_md", re.compile(r"(?<!\d)(?P<day>\d{1,2})\s+tháng\s+(?P<month>\d{1,2})(?!\d)")),
        # FY2023, FY 2024, FY24: a fiscal year, named by the year it ends in
        ("fy", re.compile(r"(?<![^\W_])FY\s?['’]?(?P<year>\d{4}|\d{2})(?![^\W_])")),
        # March 2024 / mayo de 1998
        ("my", re.compile(rf"(?<![^\W_]){mon},?\s+(?:of\s+|de\s+|del\s+)?{_YEAR}")),
        # March 3 / 3 March (no year)
        ("md", re.compile(rf"(?<![^\W_]){mon}\s+{_DAY}")),
        ("dm", re.compile(rf"(?<![^\W_]){_DAY}\s+(?:of\s+|de\s+)?{mon}")),
    )


_DATE_PATTERNS = _date_patterns(_MON)


@lru_cache(maxsize=None)
def _language_dates(lang: str) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """English patterns plus the language's own month names (case-insensitive)."""
    names = _FOREIGN_MONTHS.get(lang)
    if not names:
        return _DATE_PATTERNS
    alt = "|".join(sorted((re.escape(n) for n in names), key=len, reverse=True))
    mon = "(?P<mon>(?i:" + alt + ")|" + _MON_NAMES + ")" + _MON_TAIL
    return _date_patterns(mon)


# in 2021, since 1999: a bare year is only a date after a time preposition.
# Found as 4-digit candidates, then the preceding word is checked (much
# faster than trying the prepositions at every position of a long text).
# a season or fiscal year written with the second year's last two digits
_YEAR_RANGE = re.compile(r"(?<![\d.,])(?P<first>(?:1[89]|20)\d\d)[-–/](?P<second>\d\d)(?![\d\w])")
_YEAR_CANDIDATE = re.compile(r"(?<![\d.,])(?:1[89]|20|21)\d\d(?![\w]|[.,]\d)")
_YEAR_CUE = re.compile(r"(?i)(?<![^\W_])(?:in|since|by|from|until|till|before|after|during|"
                       r"of|year|early|late|mid|circa|around|im|jahr|seit|bis|vor|nach|ab|"
                       r"en|dès|depuis|année|desde|hasta|año|nel|dal|anno|em|عام|سنة|منذ)\s+$")
_DECADE = re.compile(r"(?<![\d.,])(?P<decade>(?:1[5-9]|20)\d0)['’]?s(?![^\W_])")
# "the '90s": a decade of the 1900s ("'20s" could be 1920 or 2020: not read)
_SHORT_DECADE = re.compile(r"(?<![\w'’])['’](?P<decade>[3-9]0)s(?![^\W_])")
_CENTURY = re.compile(r"(?i)(?<![\d.,])(?P<century>[1-9]|[12]\d)(?:st|nd|rd|th|\.)[\s-]*"
                      r"(?:century|jahrhunderts?)(?![^\W_])(?!\s*(?:BCE?|B\.C|v\.\s*Chr))")


# A century in Roman numerals, as Romance and Slavic languages write it: "XII
# secolo", "XIXe siècle", "siglo XX", "XX века" (looked for in those languages only)
_ROMAN_CENTURY = re.compile(
    r"(?<![^\W_])(?P<roman>[IVX]{1,5})(?:e|ème|er|\.)?\s+"
    r"(?i:secolo|siècle|siecle|secolul|века|веке|век|століття|wieku|wiek|století)(?![^\W_])")
# the numeral after the word: only Spanish, Portuguese and Italian write it so
# (a case-insensitive word list is slow to look for in every text)
_ROMAN_CENTURY_AFTER = re.compile(
    r"(?<![^\W_])(?i:siglo|século|seculo|secolo)\s+(?P<roman>[IVX]{1,5})(?![^\W_])")
_CENTURY_AFTER_LANGUAGES = frozenset({"es", "pt", "it"})
_CENTURY_BEFORE_LANGUAGES = frozenset({"it", "fr", "ro", "ru", "uk", "pl", "cs"})
_ROMAN_DIGITS = {"I": 1, "V": 5, "X": 10}


def _roman(numeral: str) -> int | None:
    """The value of a Roman numeral up to XXX, None when it is not well-formed."""
    if not numeral or any(c not in _ROMAN_DIGITS for c in numeral):
        return None
    values = [_ROMAN_DIGITS[c] for c in numeral]
    total = sum(-v if k + 1 < len(values) and v < values[k + 1] else v
                for k, v in enumerate(values))
    return total if 1 <= total <= 30 and _to_roman(total) == numeral else None


def _to_roman(n: int) -> str:
    out = ""
    for value, digits in ((10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")):
        while n >= value:
            out, n = out + digits, n - value
    return out


def _period(m: re.Match[str]) -> tuple[str, int, int] | None:
    """(norm, first year, number of years) of a decade or century."""
    if m.re is _DECADE or m.re is _SHORT_DECADE:
        first = int(m["decade"]) + (1900 if m.re is _SHORT_DECADE else 0)
        return f"{first}s", first, 10
    if m.re is _ROMAN_CENTURY or m.re is _ROMAN_CENTURY_AFTER:
        century = _roman(m["roman"])
        if century is None:
            return None
    else:
        century = int(m["century"])
    return f"C{century}", (century - 1) * 100, 100


_NEEDS_MONTH = frozenset({"mdy", "dmy", "my", "md", "dm"})

_TIME_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # 9am, 9 a.m., 9:30 PM
    ("12h", re.compile(r"(?<![\w:.])(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s?(?P<ap>[aApP])(?:\.\s?[mM]\.?|\s?[mM])(?![^\W_])")),
    # 09:00, 21:15:00
    ("24h", re.compile(r"(?<![\w:.])(?P<h>\d{1,2}):(?P<m>\d{2})(?::\d{2})?(?![\d:])")),
)
# Clock times with an hour word: 午前7時30分 (ja), 下午6点半 (zh), 오후 10시 (ko),
# 7.30 Uhr (de), 18h30 (fr). A morning / afternoon word fixes the half of the
# day; without one an hour up to 11 is read both ways ("7時" is 07:00 or 19:00).
# Not a duration: 時間, 小时 and 시간 are hours counted, not the time of day.
_CJK_HALF_DAY = (r"(?:(?P<am>午前|上午|早上|早晨|清晨|凌晨|오전)|(?P<pm>午後|下午|晚上|傍晚|夜間|오후)"
                 r"|(?P<noon>中午|正午))?\s?")
_CJK_MINUTES = r"(?:\s?(?P<m>\d{1,2})\s?(?:分(?!钟|鐘|間)|분)|(?P<half>半|반))?"
_LANGUAGE_TIMES: dict[str, tuple[tuple[str, re.Pattern[str]], ...]] = {
    "ja": (("hour", re.compile(_CJK_HALF_DAY + r"(?P<h>\d{1,2})\s?時(?!間)" + _CJK_MINUTES)),),
    "zh": (("hour", re.compile(_CJK_HALF_DAY + r"(?P<h>\d{1,2})\s?(?:点(?!钟头)|點|时(?!间)|時(?!間))"
                               + _CJK_MINUTES)),),
    "ko": (("hour", re.compile(_CJK_HALF_DAY + r"(?P<h>\d{1,2})\s?시(?!간)" + _CJK_MINUTES)),),
    "de": (("hour", re.compile(r"(?<![\w.,])(?P<h>\d{1,2})(?:[.:](?P<m>\d{2}))?\s?Uhr(?![^\W_])")),),
    # "18h", "9 h 30"; "48 h" is a duration (no such hour), and a bare "2 h"
    # may be one too, so it keeps the plain number among its readings.
    "fr": (("hour_or_count", re.compile(r"(?<![\w.,])(?P<h>\d{1,2})\s?h(?:\s?(?P<m>\d{2}))?(?![^\W_])")),),
}


# "alle 14.30", "в 14.30": where a decimal point is a comma, hours and minutes
# joined by a dot are a time of day; the figure 14.30 stays a reading of it
_DOTTED_TIME = ("24h_or_number", re.compile(
    r"(?<![\w.,])(?P<h>[01]?\d|2[0-3])\.(?P<m>[0-5]\d)(?![\d%€$£¥]|[.,]\d|\s?[%€$£¥])"))


def _time_patterns(lang: str) -> tuple[tuple[str, re.Pattern[str]], ...]:
    return _LANGUAGE_TIMES.get(lang, ()) + _TIME_PATTERNS + (
        (_DOTTED_TIME,) if lang in DECIMAL_COMMA else ())


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
    month = _ALL_MONTHS[g["mon"].lower()] if g.get("mon") else (
        int(g["month"]) if g.get("month") else None)
    if kind == "numeric":
        year, a, b = int(g["year"]), int(g["a"]), int(g["b"])
        readings = [(a, b), (b, a)] if a != b else [(a, b)]  # (month, day)
        isos = tuple(f"{year:04d}-{mo:02d}-{d:02d}" for mo, d in readings if _valid_date(year, mo, d))
        return (isos[0], isos) if isos else None
    day = int(g["day"]) if g.get("day") else None
    if kind in ("md", "dm") or kind.endswith("_md"):  # a month-day without a year
        if not _valid_date(2000, month, day):  # 2000 is a leap year: Feb 29 is fine
            return None
        norm = f"--{month:02d}-{day:02d}"
        return norm, (norm,)
    if kind == "cjk_era":
        year = _ERAS[g["era"]] + (0 if g["eyear"] == "元" else int(g["eyear"]) - 1)
    elif kind == "fy":
        year = int(g["year"]) + (2000 if len(g["year"]) == 2 else 0)
    else:
        year = int(g["year"])
    return _calendar_date(year, month, day)


# The first year of each Japanese era: 平成24年 is 1989 + 24 - 1 = 2012, 元年 its first year
_ERAS = {"明治": 1868, "大正": 1912, "昭和": 1926, "平成": 1989, "令和": 2019}


def _calendar_date(year: int, month: int | None,
                   day: int | None) -> tuple[str, tuple[str, ...]] | None:
    """A year, month-year or full date in ISO form, None when there is no such date."""
    if month is None:
        norm = str(year)
    elif day is None:
        if not 1 <= month <= 12:
            return None
        norm = f"{year:04d}-{month:02d}"
    elif _valid_date(year, month, day):
        norm = f"{year:04d}-{month:02d}-{day:02d}"
    else:
        return None
    return norm, (norm,)


def _implied(key: str) -> tuple[str, ...]:
    """What a date in a context also attests: a full date its month-year, year
    and month-day; a month-year its year. Other values only themselves."""
    if len(key) == 10 and key[4] == "-" and key[7] == "-":
        return key, key[:7], key[:4], "--" + key[5:]
    if len(key) == 7 and key[4] == "-":
        return key, key[:4]
    return (key,)


def _time_from_match(kind: str, m: re.Match[str]) -> tuple[str, ...] | None:
    """The readings ("HH:MM") of a time of day, the likeliest first."""
    hour, minute = int(m["h"]), int(m["m"] or 0)
    if minute > 59:
        return None
    if kind == "12h":
        if not 1 <= hour <= 12:
            return None
        return (f"{hour % 12 + (12 if m['ap'].lower() == 'p' else 0):02d}:{minute:02d}",)
    if hour > 23:
        return None
    if kind == "24h":
        return (f"{hour:02d}:{minute:02d}",)
    if kind == "24h_or_number":
        return f"{hour:02d}:{minute:02d}", _fmt(Decimal(f"{hour}.{m['m']}"))
    # an hour word: 時, 点, 시, Uhr, h
    groups = m.groupdict()
    minute = 30 if groups.get("half") else minute
    if groups.get("am") or groups.get("pm") or groups.get("noon"):
        if hour > 12:
            return None
        if groups.get("pm") or (groups.get("noon") and hour < 12):
            hour = hour % 12 + 12
        elif groups.get("am"):
            hour %= 12
        return (f"{hour:02d}:{minute:02d}",)
    readings = [f"{hour:02d}:{minute:02d}"]
    if 1 <= hour <= 11:
        readings.append(f"{hour + 12:02d}:{minute:02d}")
    if kind == "hour_or_count" and m["m"] is None:
        readings.append(str(hour))  # French "2 h" may count hours
    return tuple(readings)


# --- numbers --------------------------------------------------------------

_NUMBER = re.compile(
    # Not glued to a Latin word ("iPhone15") or inside a longer figure; CJK
    # text has no spaces, so a preceding ideograph is fine ("价格是100元").
    r"(?<![A-Za-z\d.,])"
    r"(?P<cur>(?:USD|EUR|GBP|CHF|US\$|A\$|C\$|[$€£¥₹])\s?)?"
    # 1,500.50 | 1.500,50 | 1 500 (thin or no-break space) | 3,5 | 10000
    r"(?P<num>\d{1,3}(?:(?P<sep>[,.\u00a0\u202f])\d{3}(?:(?P=sep)\d{3})*)(?![\d])(?:[.,]\d+)?"
    r"|\d+(?:[.,]\d+)?)"
    r"(?![.,]?\d)"
    r"(?:\s?(?P<mword>(?i:thousand|million|billion|trillion|tausend|millionen|million|mio|"
    r"milliarden|milliarde|mrd|mille|millions|milliards|milliard|mil\s+millones|millones|millón|"
    r"mil|milioni|milione|miliardi|miliardo|milhões|milhão|bilhões|bilhão|miljoen|miljard|"
    r"тыс\.|тысячи|тысяч|тысяча|млн|миллионов|миллиона|миллион|млрд|миллиардов|миллиарда|"
    r"миллиард|трлн|tys\.|mln|mld|milionów|miliony|milion|miliardów|miliardy|miliard)"
    r"|ألفاً|ألفا|ألف|آلاف|مليوناً|مليونا|مليون|ملايين|ملياراً|مليارا|مليار|مليارات)(?![^\W_])"
    r"|(?P<cjkmult>[万亿千])"
    r"|(?P<mabbr>k|K|M|MM|mn|bn|B|m|b|tn)(?![^\W_]))?"
    # "100-percent", "100-процентной", "100-prozentige": an adjective of a percentage
    r"(?:(?:\s?|-)(?P<pct>%|(?i:per\s?cent|pct|prozent(?:ig\w*)?|pour\s?cent|por\s?ciento|"
    r"por\s?cento|per\s?cento|процент\w*|procent\w*)(?![^\W_])))?"
)
# French and others group thousands with a plain space ("22 950 €").
_SPACED_NUMBER = re.compile(r"(?<![\d.,])\d{1,3}(?: \d{3})+(?![\d])")
# Languages whose style guides group thousands with a space ("7 000 000 пассажиров")
SPACE_GROUPING = frozenset({"fr", "ru", "uk", "pl", "cs", "sk", "bg", "sv", "nb", "da", "fi",
                            "hu", "et"})
_MULTIPLIERS = {
    "thousand": 10**3, "k": 10**3, "million": 10**6, "m": 10**6, "mm": 10**6, "mn": 10**6,
    "billion": 10**9, "b": 10**9, "bn": 10**9, "trillion": 10**12, "tn": 10**12,
    "tausend": 10**3, "mille": 10**3, "mil": 10**3, "ألف": 10**3, "آلاف": 10**3,
    "millionen": 10**6, "mio": 10**6, "millions": 10**6, "millones": 10**6, "millón": 10**6,
    "milioni": 10**6, "milione": 10**6, "milhões": 10**6, "milhão": 10**6, "miljoen": 10**6,
    "مليون": 10**6, "ملايين": 10**6, "ألفاً": 10**3, "ألفا": 10**3, "مليوناً": 10**6,
    "مليونا": 10**6, "ملياراً": 10**9, "مليارا": 10**9,  # the accusative: "نحو 18 ألفاً"
    "milliarden": 10**9, "milliarde": 10**9, "mrd": 10**9, "milliards": 10**9,
    "milliard": 10**9, "mil millones": 10**9, "miliardi": 10**9, "miliardo": 10**9,
    "bilhões": 10**9, "bilhão": 10**9, "miljard": 10**9, "مليار": 10**9, "مليارات": 10**9,
    "千": 10**3, "万": 10**4, "亿": 10**8,
    "тыс.": 10**3, "тысячи": 10**3, "тысяч": 10**3, "тысяча": 10**3, "млн": 10**6,
    "миллионов": 10**6, "миллиона": 10**6, "миллион": 10**6, "млрд": 10**9,
    "миллиардов": 10**9, "миллиарда": 10**9, "миллиард": 10**9, "трлн": 10**12,
    "tys.": 10**3, "mln": 10**6, "mld": 10**9, "milionów": 10**6, "miliony": 10**6,
    "milion": 10**6, "miliardów": 10**9, "miliardy": 10**9, "miliard": 10**9,
}
# Languages that write a decimal comma ("3,5 %", "1.500,50 €").
DECIMAL_COMMA = frozenset({"de", "fr", "es", "it", "pt", "nl", "ru", "uk", "pl", "cs", "sv",
                           "da", "nb", "fi", "ro", "tr", "id", "bg", "el", "hu"})
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


# A small spelled count that refers back ("the two sides", "both three") or
# announces the answer's own list ("Two reasons: ...") counts the answer's
# words, not the world: it is not a fact a source has to state.
_BACK_REFERENCE = re.compile(r"(?i)(?<![^\W_])(?:the|these|those|both|all|its|their|our|his|her|"
                             r"my|your|which|whose)\s+$")
_OWN_LIST = re.compile(r"(?:\s+[^\W\d_][\w'’-]*){1,3}\s*:\s*(?:\n|[-•*–]\s|\d{1,2}[.)]\s)")
_LIST_START = re.compile(r"(?:^|[.!?:\n])\s*$")


def _counts_own_words(text: str, m: re.Match[str]) -> bool:
    """`m` (a spelled number without scale) refers back or heads the answer's list."""
    if m["scales"] or m["pct"] or m["tens"] or text.startswith(("-", "‑"), m.end()):
        return False  # "the two-day trip": a measure
    start = m.start()
    if _BACK_REFERENCE.search(text, max(0, start - 8), start):
        return True
    return bool(_LIST_START.search(text, max(0, start - 4), start)) and \
        _OWN_LIST.match(text, m.end()) is not None


def _fmt(value: Decimal) -> str:
    """Canonical decimal string: no exponent, no trailing zeros ("1500000", "0.5")."""
    return format(value.normalize(), "f")


def _plain_digits(raw: str, decimal_comma: bool) -> str:
    """A written figure as a plain decimal string, by the text's convention.

    A separator followed by exactly three digits groups thousands in the
    text's convention ("1,500" in English, "1.500" in German); any other
    single separator is the decimal point ("3,5" and "3.5" are 3.5 anywhere)."""
    if raw.isdigit():
        return raw
    raw = raw.replace("\u00a0", "").replace("\u202f", "").replace(" ", "")
    seps = [c for c in raw if c in ".,"]
    if not seps:
        return raw
    thousands, decimal = (".", ",") if decimal_comma else (",", ".")
    if len(set(seps)) == 2:  # both kinds: the last one is the decimal point
        last = max(raw.rfind("."), raw.rfind(","))
        return raw[:last].replace(",", "").replace(".", "") + "." + raw[last + 1:]
    sep = seps[0]
    groups = raw.split(sep)
    if len(groups) > 2 or (sep == thousands and all(len(g) == 3 for g in groups[1:])):
        return raw.replace(sep, "")
    return raw.replace(sep, ".")


def _number_from_match(m: re.Match[str], decimal_comma: bool = False) -> tuple[str, str] | None:
    """(kind, norm) of a digit-number match."""
    digits = _plain_digits(m["num"], decimal_comma)
    if len(digits) > _MAX_DIGITS:
        return None
    mult = m["mword"] or m["mabbr"] or m["cjkmult"]
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
            value *= _MULTIPLIERS[" ".join(mult.lower().split())]
    if m["pct"]:
        return "percent", _fmt(value) + "%"
    return ("money" if m["cur"] else "number"), _fmt(value)


# Chinese and Japanese measure words and units after a figure: a quantity
_CJK_MEASURE = re.compile(r"\s?[天日个個年月周週元秒分时時次人倍岁歲号號位条條件台家名张張本页頁篇节節米克升度円]")
_NAME_BEFORE = re.compile(r"(?<![\w.])([^\W\d_][\w'’-]*) $")


def _names_it(text: str, m: re.Match[str], stops: frozenset[str], lang: str = "en") -> bool:
    """A bare figure right after a capitalised word that is neither a function
    word nor a month belongs to that name ("Voyager 2", "Windows 11"); not a
    year ("Tony Clunn 1987") nor an amount ("Roughly 2,000"), and in German,
    where every noun is capitalised, only after an acronym or CamelCase word
    ("Jahr 800" is a noun and a figure)."""
    start = m.start()
    if start < 2 or text[start - 1] != " " or not text[start - 2].isalpha():
        return False
    if YEAR_AFTER_NAME.fullmatch(m.group()) or THOUSANDS.search(m.group()):
        return False
    if m["cur"] or m["mword"] or m["mabbr"] or m["cjkmult"] or m["pct"]:
        return False
    if _CJK_MEASURE.match(text, m.end()):
        return False  # "Premier 30 天": thirty days of Premier, not a product "Premier 30"
    before = _NAME_BEFORE.search(text, max(0, m.start() - 40), m.start())
    if before is None:
        return False
    word = before.group(1)
    if lang in ("de", "lb") and not is_strong_name_word(word, lang):
        return False
    return word[0].isupper() and word.lower() not in stops and \
        word.lower() not in QUANTITY_WORDS and word.lower().rstrip(".") not in _ALL_MONTHS


# Units a quantity is said in, -> (dimension, size in its base unit): "two years"
# states the "24 months" of a context, "2,700 metres" its "2.7 km", "1,500 MB"
# its "1.5 GB". A figure with a unit gets its base-unit reading as a key too.
_MEASURES: dict[str, tuple[str, str]] = {
    **dict.fromkeys(("year", "years", "yr", "yrs", "jahr", "jahre", "jahren", "an", "ans",
                     "année", "années", "año", "años", "anno", "anni", "ano", "anos"), ("month", "12")),
    **dict.fromkeys(("month", "months", "monat", "monate", "monaten", "mois", "mes", "meses",
                     "mese", "mesi"), ("month", "1")),
    **dict.fromkeys(("week", "weeks", "wk", "wks", "woche", "wochen", "semaine", "semaines",
                     "semana", "semanas", "settimana", "settimane"), ("day", "7")),
    **dict.fromkeys(("day", "days", "tag", "tage", "tagen", "jour", "jours", "día", "días",
                     "giorno", "giorni", "dia", "dias"), ("day", "1")),
    **dict.fromkeys(("hour", "hours", "hr", "hrs", "stunde", "stunden", "heure", "heures",
                     "hora", "horas", "ora", "ore"), ("second", "3600")),
    **dict.fromkeys(("minute", "minutes", "min", "mins", "minuten", "minuto", "minutos",
                     "minuti"), ("second", "60")),
    **dict.fromkeys(("second", "seconds", "sec", "secs", "sekunden", "secondes", "segundos",
                     "secondi"), ("second", "1")),
    **dict.fromkeys(("km", "kilometre", "kilometres", "kilometer", "kilometers", "kilómetros",
                     "chilometri"), ("metre", "1000")),
    **dict.fromkeys(("m", "metre", "metres", "meter", "meters", "metros", "metri", "mètres"),
                    ("metre", "1")),
    **dict.fromkeys(("cm", "centimetre", "centimetres", "centimeter", "centimeters"), ("metre", "0.01")),
    **dict.fromkeys(("mm", "millimetre", "millimetres", "millimeter", "millimeters"), ("metre", "0.001")),
    **dict.fromkeys(("kg", "kilogram", "kilograms", "kilogramme", "kilogrammes", "kilo", "kilos"),
                    ("gram", "1000")),
    **dict.fromkeys(("g", "gram", "grams", "gramme", "grammes", "gramm"), ("gram", "1")),
    **dict.fromkeys(("mg", "milligram", "milligrams", "milligramme", "milligrammes"), ("gram", "0.001")),
    **dict.fromkeys(("tb", "terabyte", "terabytes"), ("byte", "1000000000000")),
    **dict.fromkeys(("gb", "gigabyte", "gigabytes"), ("byte", "1000000000")),
    **dict.fromkeys(("mb", "megabyte", "megabytes"), ("byte", "1000000")),
    **dict.fromkeys(("kb", "kilobyte", "kilobytes"), ("byte", "1000")),
    **dict.fromkeys(("l", "litre", "litres", "liter", "liters", "litros", "litri"), ("litre", "1")),
    **dict.fromkeys(("ml", "millilitre", "millilitres", "milliliter", "milliliters"), ("litre", "0.001")),
}
_UNIT_AFTER = re.compile(r"[ \u00a0-]?([^\W\d_]+)")


def _measure_keys(text: str, end: int, norm: str) -> tuple[str, ...]:
    """The base-unit reading of a figure followed by a unit word ("month:24")."""
    m = _UNIT_AFTER.match(text, end)
    if m is None:
        return ()
    unit = _MEASURES.get(m.group(1).lower())
    if unit is None:
        return ()
    dimension, size = unit
    try:
        return (f"{dimension}:{_fmt(Decimal(norm) * Decimal(size))}",)
    except InvalidOperation:
        return ()


def _spaced_from_match(m: re.Match[str]) -> tuple[str, str] | None:
    return "number", str(int(m.group().replace(" ", "")))


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


_DIGIT = re.compile(r"\d")


def _prepare(text: str) -> str:
    """NFKC so that full-width digits and symbols read like ASCII ones, and
    Arabic-Indic digits as ASCII digits (same length: offsets stay valid). The
    full-width comma is punctuation, never a thousands separator: it is kept
    apart ("=168，168 小时" is 168 twice, not 168168)."""
    return normalize_digits(unicodedata.normalize("NFKC", text.replace("，", "、")))


@lru_cache(maxsize=None)
def _month_word(lang: str) -> re.Pattern[str]:
    names = "|".join(sorted((re.escape(n) for n in _FOREIGN_MONTHS.get(lang, {})),
                            key=len, reverse=True))
    english = _MON.replace("(?P<mon>", "(?:")
    return re.compile(english + (rf"|(?i:{names})" if names else ""))


def _scan(text: str, unique: bool = False, lang: str | None = None, names_too: bool = False,
          answer: bool = False) -> tuple[list[Anchor], list[Anchor]]:
    """(dates and times, numbers) of an already NFKC-normalised text, in text order.

    Dates claim their characters first, then times and list markers, so the
    digits inside them are not read again as numbers. With `unique`, only the
    first number of each value is returned (all the metric needs; it keeps a
    megabyte of figures cheap). Offsets refer to the NFKC text. `lang` (detected
    when None) chooses the month names and the decimal separator. With
    `names_too`, a figure inside a name ("JDK 17") is a number as well: what
    evidence needs (a context naming "JDK 17" attests a later bare "17").
    With `answer`, the text is an answer, whose facts are checked: a spelled
    count of its own words ("the two sides", "Two reasons:") is not one. A
    source keeps it: "the three ships" in a context supports "three ships".
    """
    lang = lang or detect_language(text)
    spans = _Spans(len(text))
    temporal: list[Anchor] = []
    # Every date, year, time and digit-number pattern needs a digit (\d, as
    # they spell it): a text without one can only hold spelled-out numbers.
    has_digit = _DIGIT.search(text) is not None
    has_month = has_digit and _month_word(lang).search(text) is not None
    # the marker words of the date families, looked for once per text
    markers = {"cjk": "年" in text or "月" in text, "ko": "월" in text, "vi": "tháng" in text,
               "fy": "FY" in text} if has_digit else {}
    # (and 元年, "the first year" of a Japanese era, which is written without one)
    for kind, pattern in _language_dates(lang) if has_digit or "元年" in text else ():
        # a family's patterns ("cjk", "cjk_my", ...) need its marker word
        if (kind in _NEEDS_MONTH and not has_month) or not markers.get(kind.partition("_")[0], True):
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
    periods = ((_DECADE, _SHORT_DECADE, _CENTURY) if has_digit else ()) + (
        (_ROMAN_CENTURY,) if lang in _CENTURY_BEFORE_LANGUAGES else ()) + (
        (_ROMAN_CENTURY_AFTER,) if lang in _CENTURY_AFTER_LANGUAGES else ())
    for pattern in periods:
        for m in pattern.finditer(text):
            start, end = m.span()
            period = _period(m)
            if period is not None and spans.free(start, end):
                # "the 1950s": any year of the decade states it
                spans.take(start, end)
                norm, first, count = period
                years = tuple(str(first + i) for i in range(count)) if answer else ()
                temporal.append(Anchor("date", m.group(), norm, start, end, (norm, *years)))
    for m in _YEAR_CANDIDATE.finditer(text) if has_digit else ():
        start, end = m.span()
        if spans.free(start, end) and _YEAR_CUE.search(text, max(0, start - 12), start):
            spans.take(start, end)
            temporal.append(Anchor("date", m.group(), m.group(), start, end, (m.group(),)))
    for m in _YEAR_RANGE.finditer(text) if has_digit else ():
        first, second = int(m["first"]), int(m["second"])
        if (first + 1) % 100 == second and spans.free(*m.span("second")):
            spans.take(*m.span("second"))  # "2023-24": the year 2024, not the number 24
            year = str(first + 1)
            temporal.append(Anchor("date", m.group(), year, m.start("second"), m.end(), (year,)))
    for kind, pattern in _time_patterns(lang) if has_digit else ():
        for m in pattern.finditer(text):
            start, end = m.span()
            if not spans.free(start, end):
                continue
            readings = _time_from_match(kind, m)
            if readings is None:
                continue
            spans.take(start, end)
            temporal.append(Anchor("time", m.group(), readings[0], start, end, readings))
    for m in _LIST_MARKER.finditer(text):
        spans.take(*m.span())
    # Numbers come last and cannot overlap each other (digits vs. words), so
    # they only check the spans, never claim them.
    numbers: list[Anchor] = []
    seen: set[tuple[str, ...]] = set()
    parsed_cache: dict[str, tuple[str, str] | None] = {}
    decimal_comma = lang in DECIMAL_COMMA
    stops = stop_words_of("en", lang)  # English is evalbeam's own list, as stop_words()
    number_patterns = [(_NUMBER, lambda m: _number_from_match(m, decimal_comma)),
                       (_SPELLED, _spelled_from_match)]
    if not has_digit:
        del number_patterns[0]
    elif lang in SPACE_GROUPING:  # "22 950 €": a plain space groups thousands
        number_patterns.insert(0, (_SPACED_NUMBER, _spaced_from_match))
    for pattern, parse in number_patterns:
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
            if pattern is _NUMBER and not names_too and _names_it(text, m, stops, lang):
                continue  # "Voyager 2", "Ogoni 9", "Python 3.12": part of a name
            if answer and pattern is _SPELLED and _counts_own_words(text, m):
                continue  # "the two sides", "Two reasons:"
            if pattern is _SPACED_NUMBER:  # its digit groups are not numbers of their own
                spans.take(start, end)
            keys = (norm, *_measure_keys(text, end, norm)) if kind == "number" else (norm,)
            if unique:
                if keys in seen:
                    continue
                seen.add(keys)
            numbers.append(Anchor(kind, raw, norm, start, end, keys))
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
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
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
        if tok in stops or tok in verbs or tok in _ALL_MONTHS or _is_number_token(tok):
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
    for sentence in _SENTENCE_END.split(text):
        claims.extend(_sentence_claims(sentence, lang))
    return claims


# --------------------------------------------------------------------------
# Evidence
# --------------------------------------------------------------------------


class _Evidence:
    """What the contexts can support: normalised values and stem positions."""

    def __init__(self, contexts: Sequence[str]) -> None:
        self.values: set[str] = set()
        self._magnitudes: list[tuple[float, bool]] | None = None
        # per context sentence: stem -> positions, negated?, positions of passive markers
        self.sentences: list[tuple[dict[str, list[int]], bool, list[int]]] = []
        for ctx in contexts:
            values, sentences = _passage_evidence(ctx)
            self.values |= values
            self.sentences += sentences

    def supports_value(self, anchor: Anchor) -> bool:
        return any(k in self.values for k in anchor.keys)

    def supports_roughly(self, anchor: Anchor) -> bool:
        """A context figure of the same kind within APPROX_TOLERANCE of it."""
        target = _magnitude(anchor.norm)
        if target is None or anchor.kind not in ("number", "money", "percent"):
            return False
        percent = anchor.norm.endswith("%")
        if self._magnitudes is None:
            self._magnitudes = [(m, k.endswith("%")) for k in self.values
                                if (m := _magnitude(k)) is not None]
        return any(p == percent and abs(m - target) <= APPROX_TOLERANCE * abs(m)
                   for m, p in self._magnitudes)

    def supports_claim(self, claim: Claim, window: int) -> bool:
        """A context sentence with the same polarity holds a subject word and,
        after it within `window` tokens, an object word (or before it, with a
        passive "by" between: "B was defeated by A")."""
        subj = {_stem(t) for t in claim.subject}
        obj = {_stem(t) for t in claim.obj}
        for index, negated, passive in self.sentences:
            if negated != claim.negated:
                continue
            s_pos = sorted(p for s in subj for p in index.get(s, ()))
            if not s_pos:
                continue
            o_pos = sorted(p for o in obj for p in index.get(o, ()))
            if o_pos and _ordered_near(s_pos, o_pos, window, passive):
                return True
        return False


# "about 50 €" is what a source's 49,50 € says, rounded: a figure the answer
# marks as approximate is supported by a context figure within 5% of it.
APPROX_TOLERANCE = 0.05
_APPROXIMATE_PHRASES = ("ca.", "près de", "alrededor de", "cerca de", "intorno a", "حوالي", "نحو",
                        "قرابة")
_APPROXIMATELY = re.compile(
    r"(?i)(?:(?<![^\W_])(?:" + "|".join(sorted(APPROXIMATE_WORDS)) + r")\.?"
    r"|(?<![^\W_])(?:" + "|".join(map(re.escape, _APPROXIMATE_PHRASES)) + ")"
    r"|[~≈]|约|大约|大概)\s*(?:[$€£¥]\s?)?$")


def _approximate(text: str, anchor: Anchor) -> bool:
    return _APPROXIMATELY.search(text, max(0, anchor.start - 25), anchor.start) is not None


def _magnitude(key: str) -> float | None:
    try:
        return float(key[:-1] if key.endswith("%") else key)
    except ValueError:
        return None


def _dates_by_year(sentence: str) -> set[str]:
    """Full dates a sentence states by giving the year once: "opened on 3 March
    2008 and admitted patients on 17 March of the same year" attests 2008-03-17."""
    keys = _sentence_value_keys(sentence)
    days = [k[1:] for k in keys if len(k) == 7 and k.startswith("--")]   # "-03-17"
    years = [k for k in keys if len(k) == 4 and k.isdigit()]
    return {y + d for y in years for d in days} if days and years else set()


_PASSIVE_MARKERS = frozenset({"by", "von", "par", "por", "da"})


@lru_cache(maxsize=1024)
def _passage_evidence(ctx: str) -> tuple[frozenset[str], tuple]:
    """One context's values and sentence indexes (read-only), memoised per
    passage: passages recur across cases in every combination and order."""
    values: set[str] = set()
    temporal, numbers = _scan(_prepare(ctx), unique=True, names_too=True)
    for anchor in (*temporal, *numbers):
        for key in anchor.keys:
            values.update(_implied(key))
    lang = detect_language(ctx)
    sentences = []
    for sentence in _SENTENCE_END.split(ctx):
        values.update(_dates_by_year(sentence))
        index: dict[str, list[int]] = {}
        tokens = tokenize(sentence)
        for pos, tok in enumerate(tokens):
            index.setdefault(_stem(tok), []).append(pos)
        passive = [p for p, t in enumerate(tokens) if t in _PASSIVE_MARKERS]
        sentences.append((index, is_negated(sentence, tokens, lang), passive))
    return frozenset(values), tuple(sentences)


def _ordered_near(a: list[int], b: list[int], window: int, passive: list[int]) -> bool:
    """Some x in a precedes some y in b by at most `window` tokens, or follows
    it with a passive marker between them."""
    for x in a:
        i = bisect_left(b, x - window)
        while i < len(b) and b[i] <= x + window:
            y = b[i]
            if y > x or (y < x and any(y < p < x for p in passive)):
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


# What `unsupported_facts` counts: figures, dates and names absent from the
# contexts, the checks precise enough to flag on their own (pairings,
# negations and list items are noisier: they weigh in `hallucination` only).
FACT_KINDS = frozenset({"number", "money", "percent", "date", "time", "entity"})


@lru_cache(maxsize=256)
def _context_index(contexts: tuple[str, ...]):
    """The contexts' index, memoised without the question: every case with the
    same passages shares it (questions differ from case to case)."""
    from transforms.score.metrics.grounding import build_index
    return build_index(contexts, "", _sentence_value_keys)


def _index_for(contexts: tuple[str, ...], question: str):
    from transforms.score.metrics.grounding import with_question
    return with_question(_context_index(contexts), question)


def _sentence_value_keys(sentence: str, lang: str | None = None) -> set[str]:
    temporal, numbers = _scan(_prepare(sentence), unique=True, lang=lang)
    keys: set[str] = set()
    for anchor in (*temporal, *numbers):
        for key in anchor.keys:
            keys.update(_implied(key))
    return keys


def _sentence_values(sentence: str, lang: str | None = None) -> list[Anchor]:
    temporal, numbers = _scan(_prepare(sentence), unique=True, lang=lang, answer=True)
    return sorted((*temporal, *numbers), key=lambda a: a.start)


class _ReferenceFacts:
    """What the expected answers state, scanned only when an unsupported fact
    needs it (most rows have none: no scan of the references on the hot path)."""

    def __init__(self, references: Sequence[str]):
        self._refs = [r for r in references or () if r and r.strip()]
        self._keys: set[str] | None = None
        self._words: set[str] | None = None

    def value(self, keys: Iterable[str]) -> bool:
        if not self._refs:
            return False
        if self._keys is None:
            self._keys = set().union(*map(_sentence_value_keys, self._refs))
        return any(k in self._keys for k in keys)

    def name(self, text: str) -> bool:
        """Every word of the name is in an expected answer."""
        if not self._refs:
            return False
        from transforms.score.metrics.grounding import name_tokens
        if self._words is None:
            self._words = set().union(*map(name_tokens, self._refs))
        return all(t in self._words for t in name_tokens(text))


def hallucination(answer: str | None, contexts: Sequence[str] | None,
                  window: int = DEFAULT_WINDOW, question: str | None = None,
                  references: Sequence[str] = ()) -> MetricResult:
    """Hallucination risk in [0, 1]: max(unsupported anchor share, topic-drift penalty).

    Null when there are no contexts to check against ("no contexts") or the
    answer is empty ("empty answer"). See the module docstring for the rules.
    `details["n_unsupported_facts"]` counts the unsupported figures, dates and
    names that the expected answers (`references`) do not state either: what
    the `unsupported_facts` metric reports. The score itself is measured
    against the contexts (and the question) only: a fact the contexts lack is
    a hallucination risk of the answer however true it is, while a reviewer
    who wrote the expected answer would not call that fact invented.
    """
    from transforms.score.metrics.grounding import check_answer, month_words, unique_checks
    usable = [c for c in (contexts or ()) if c and c.strip()]
    if not usable:
        return MetricResult.null("no contexts")
    if answer is None or not answer.strip():
        return MetricResult.null("empty answer")

    evidence = _evidence_for(tuple(usable))
    index = _index_for(tuple(usable), question or "")
    sources = _joined(tuple(usable))
    prepared = _prepare(answer)
    # read in the contexts' language unless the answer clearly is in another one
    temporal, numbers = _scan(prepared, unique=True, answer=True,
                              lang=language_near(answer, index.lang))
    values = _dedupe_values((*temporal, *numbers))
    # An answer in another language than its contexts ("ja" to "en" passages)
    # cannot be checked word by word: only its figures, dates and names are.
    other = other_language(answer, sources)
    claims = [] if other else _dedupe_claims(extract_claims(answer))
    sources_script = script_of(sources) if other else None

    found: list[dict] = []
    unsupported: list[dict] = []

    def record(kind: str, text: str, norm: str, ok: bool, note: str = "") -> None:
        row = {"kind": kind, "text": text, "normalized": norm, "supported": ok}
        if note:
            row["note"] = note
        found.append(row)
        if not ok:
            unsupported.append(row)

    asked = _sentence_value_keys(question) if question else set()
    stated = _ReferenceFacts(references)
    for a in values:
        in_contexts = evidence.supports_value(a)
        rounded = not in_contexts and _approximate(prepared, a) and evidence.supports_roughly(a)
        in_question = not (in_contexts or rounded) and any(k in asked for k in a.keys)
        record(a.kind, a.text, a.norm, in_contexts or rounded or in_question,
               "stated in the question" if in_question else
               "a rounded context figure" if rounded else "")
        if not (in_contexts or in_question) and stated.value(a.keys):
            found[-1]["in_expected_answer"] = True
    claims = [c for c in claims if _topical(c, index)]
    for c in claims:
        norm = f"{'+'.join(c.subject)}|{c.verb}|{'+'.join(c.obj)}"
        record("claim", c.text, norm, evidence.supports_claim(c, window))
    checks = unique_checks(check_answer(answer, index, _sentence_values, month_words()))
    for check in checks:
        if other and (check.kind != "entity" or script_of(check.text) != sources_script):
            continue  # words and names of another script cannot match the contexts'
        if check.kind != "sentence":
            record(check.kind, check.text, check.text.lower(), check.supported, check.note)
            if check.kind == "entity" and not check.supported and stated.name(check.text):
                found[-1]["in_expected_answer"] = True
    if other:
        if not found:
            return MetricResult.null(f"the answer is in {other[0]}, the contexts in {other[1]}: "
                                     "it states no figure, date or name to check")
    elif not found:
        # An answer without figures, names or claims is judged sentence by sentence:
        # an off-topic answer is no longer capped at the drift penalty.
        for check in checks:
            if check.kind == "sentence":
                record(check.kind, check.text, check.text.lower(), check.supported, check.note)

    n_anchors = len(found)
    s_claims = len(unsupported) / n_anchors if n_anchors else 0.0
    overlap = None if other else ngram_overlap(answer, usable)
    p_drift = DRIFT_PENALTY if overlap is not None and overlap < DRIFT_THRESHOLD else 0.0
    facts = [r for r in unsupported if r["kind"] in FACT_KINDS and not r.get("in_expected_answer")]
    details = {
        "anchors": found[:MAX_LISTED],
        "unsupported": unsupported[:MAX_LISTED],
        "n_anchors": n_anchors,
        "n_unsupported": len(unsupported),
        "n_unsupported_facts": len(facts),
        "overlap": overlap,
        "p_drift": p_drift,
        "s_claims": s_claims,
    }
    if not n_anchors:
        details["note"] = "no anchors"
    if other:
        details["compared"] = (f"figures, dates and names only (the answer is in {other[0]}, "
                               f"the contexts in {other[1]})")
    return MetricResult(max(s_claims, p_drift), details)


def _topical(claim: Claim, index) -> bool:
    """Some word of the claim is one the contexts or the question use."""
    stem = stemmer_for(index.lang)
    return any((s := stem(t)) in index.stems or s in index.question_stems
               for t in (*claim.subject, *claim.obj))


@lru_cache(maxsize=256)
def _joined(contexts: tuple[str, ...]) -> str:
    return "\n".join(contexts)


def unsupported_facts(result: MetricResult) -> MetricResult:
    """The count of the answer's facts that neither the contexts nor an expected
    answer support, from a hallucination result (a count, lower is better; null
    when it is null)."""
    if result.value is None:
        return MetricResult.null(result.error or "not computed")
    facts = [r for r in result.details.get("unsupported", ())
             if r["kind"] in FACT_KINDS and not r.get("in_expected_answer")]
    return MetricResult(float(result.details.get("n_unsupported_facts", 0)),
                        {"facts": facts[:MAX_LISTED]})
