"""Dates in many languages, normalised to ISO: "March 3, 2024" = "3 March
2024" = "2024-03-03" = "2024年3月3日" = "3 марта 2024"; month-years ("2024-03"),
month-days ("--03-03"), years after a time word ("in 2021"), season years
("2023-24"), decades ("the 1990s") and centuries ("XIXe siècle", "C19").
"""
from __future__ import annotations

import re
from functools import lru_cache

from transforms.score.facts.anchors import Anchor, Spans, claim_matches

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
ALL_MONTHS = {**_MONTHS, **{k: v for table in _FOREIGN_MONTHS.values() for k, v in table.items()}}
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
    month = ALL_MONTHS[g["mon"].lower()] if g.get("mon") else (
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


def implied_keys(key: str) -> tuple[str, ...]:
    """What a date in a context also attests: a full date its month-year, year
    and month-day; a month-year its year. Other values only themselves."""
    if len(key) == 10 and key[4] == "-" and key[7] == "-":
        return key, key[:7], key[:4], "--" + key[5:]
    if len(key) == 7 and key[4] == "-":
        return key, key[:4]
    return (key,)


@lru_cache(maxsize=None)
def _month_word(lang: str) -> re.Pattern[str]:
    names = "|".join(sorted((re.escape(n) for n in _FOREIGN_MONTHS.get(lang, {})),
                            key=len, reverse=True))
    english = _MON.replace("(?P<mon>", "(?:")
    return re.compile(english + (rf"|(?i:{names})" if names else ""))


# Every month name any language here writes ("May" lower-cased too): words that
# are no part of a name ("mid-October", "30 Ekim 1973")
MONTH_WORDS = frozenset(ALL_MONTHS)


def scan_dates(text: str, lang: str, spans: Spans, has_digit: bool,
               answer: bool) -> list[Anchor]:
    """Dates, then decades and centuries, then bare years after a time word,
    then season years, each claiming its characters in `spans` (so a year
    inside a date is not read again). `has_digit`: the text holds a digit,
    which every pattern but 元年 and a Roman century needs. With `answer`, a
    decade or century also reads as each of its years."""
    found = _full_dates(text, lang, spans, has_digit)
    found += _periods(text, lang, spans, has_digit, answer)
    if has_digit:
        found += _bare_years(text, spans)
        found += _season_years(text, spans)
    return found


def _full_dates(text: str, lang: str, spans: Spans, has_digit: bool) -> list[Anchor]:
    has_month = has_digit and _month_word(lang).search(text) is not None
    # the marker words of the date families, looked for once per text
    markers = {"cjk": "年" in text or "月" in text, "ko": "월" in text, "vi": "tháng" in text,
               "fy": "FY" in text} if has_digit else {}
    # (and 元年, "the first year" of a Japanese era, which is written without one)
    patterns = _language_dates(lang) if has_digit or "元年" in text else ()
    # a family's patterns ("cjk", "cjk_my", ...) need its marker word
    wanted = [(kind, pattern) for kind, pattern in patterns
              if not (kind in _NEEDS_MONTH and not has_month)
              and markers.get(kind.partition("_")[0], True)]
    return claim_matches(text, wanted, spans, "date", _date_from_match)


def _periods(text: str, lang: str, spans: Spans, has_digit: bool, answer: bool) -> list[Anchor]:
    found = []
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
                found.append(Anchor("date", m.group(), norm, start, end, (norm, *years)))
    return found


def _bare_years(text: str, spans: Spans) -> list[Anchor]:
    found = []
    for m in _YEAR_CANDIDATE.finditer(text):
        start, end = m.span()
        if spans.free(start, end) and _YEAR_CUE.search(text, max(0, start - 12), start):
            spans.take(start, end)
            found.append(Anchor("date", m.group(), m.group(), start, end, (m.group(),)))
    return found


def _season_years(text: str, spans: Spans) -> list[Anchor]:
    found = []
    for m in _YEAR_RANGE.finditer(text):
        first, second = int(m["first"]), int(m["second"])
        if (first + 1) % 100 == second and spans.free(*m.span("second")):
            spans.take(*m.span("second"))  # "2023-24": the year 2024, not the number 24
            year = str(first + 1)
            found.append(Anchor("date", m.group(), year, m.start("second"), m.end(), (year,)))
    return found
