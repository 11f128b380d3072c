"""Figures in many languages, normalised so that "10k", "10,000", "$10,000"
and "10000" are one value and "5%", "5 percent" and "5 Prozent" another:
thousands and decimal separators by the language's convention ("1.500,50"),
multipliers ("1,5 Millionen", "7 млн", "3万"), currencies, percentages and
small spelled-out numbers ("twenty-five", "two million"). A figure that is
part of a name ("Voyager 2") is not one; a figure marked approximate
("about 50 €") may be supported by a close one.
"""
from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from transforms.score.facts.anchors import Anchor, Spans, decimal_text
from transforms.score.facts.dates import ALL_MONTHS
from transforms.score.facts.names import is_strong_name_word
from transforms.score.facts.quantity_words import (APPROXIMATE_WORDS, QUANTITY_WORDS, THOUSANDS,
                                                   YEAR_AFTER_NAME)
from transforms.score.facts.units import measure_keys
from transforms.text.stopwords import stop_words_of

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
        return "percent", decimal_text(value) + "%"
    return ("money" if m["cur"] else "number"), decimal_text(value)


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
        word.lower() not in QUANTITY_WORDS and word.lower().rstrip(".") not in ALL_MONTHS



# Chinese and Japanese numerals written in characters ("五百万", "千四百万", "一九九八年"):
# a run starting with a digit character, 十, 百 or 千 (not 万 or 亿: "万一" is
# "in case"), read only with a multiplier in it or as a year ("一九九八年",
# "二〇二四"): a lone 一 is "a"/"one" in a hundred words ("一些", "统一",
# "一样"), "三三两两" is no figure, and "千万" alone is most often the adverb
# "by all means" ("千万不要"), so it is left out.
_HAN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "兩": 2, "三": 3, "四": 4, "五": 5,
               "六": 6, "七": 7, "八": 8, "九": 9}
_HAN_UNITS = {"十": 10, "百": 100, "千": 1000}
_HAN_GROUPS = {"万": 10**4, "萬": 10**4, "亿": 10**8, "億": 10**8}
_HAN_NUMBER = re.compile(f"[{''.join(_HAN_DIGITS)}{''.join(_HAN_UNITS)}][{''.join(_HAN_DIGITS)}"
                         f"{''.join(_HAN_UNITS)}{''.join(_HAN_GROUPS)}]*")
HAN_NUMERAL_LANGUAGES = frozenset({"zh", "ja"})


def _multiplied(run: str) -> bool:
    """The run holds a multiplier (十 百 千 万 亿): "五百万", not "一九九八"."""
    return any(c in _HAN_UNITS or c in _HAN_GROUPS for c in run)


def han_value(run: str) -> int:
    """The integer a run of numeral characters writes ("三千五百万" -> 35000000,
    "一百零五" -> 105, "一九九八" -> 1998 digit by digit)."""
    if not _multiplied(run):
        return int("".join(str(_HAN_DIGITS[c]) for c in run))
    total = section = digit = 0
    for c in run:
        if c in _HAN_DIGITS:
            digit = _HAN_DIGITS[c]
        elif c in _HAN_UNITS:
            section += (digit or 1) * _HAN_UNITS[c]
            digit = 0
        else:
            total += (section + digit) * _HAN_GROUPS[c]
            section = digit = 0
    return total + section + digit


def _han_from_match(m: re.Match[str]) -> tuple[str, str] | None:
    run = m.group()
    year = "〇" in run or m.string.startswith("年", m.end())
    if len(run) < 2 or not (_multiplied(run) or year) or run == "千万":
        return None
    return "number", str(han_value(run))


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


# "about 50 €" is what a source's 49,50 € says, rounded: a figure the answer
# marks as approximate is supported by a context figure within 5% of it.
APPROX_TOLERANCE = 0.05
_APPROXIMATE_PHRASES = ("ca.", "près de", "alrededor de", "cerca de", "intorno a", "حوالي", "نحو",
                        "قرابة")
_APPROXIMATELY = re.compile(
    r"(?i)(?:(?<![^\W_])(?:" + "|".join(sorted(APPROXIMATE_WORDS)) + r")\.?"
    r"|(?<![^\W_])(?:" + "|".join(map(re.escape, _APPROXIMATE_PHRASES)) + ")"
    r"|[~≈]|约|大约|大概)\s*(?:[$€£¥]\s?)?$")


def is_approximate(text: str, anchor: Anchor) -> bool:
    return _APPROXIMATELY.search(text, max(0, anchor.start - 25), anchor.start) is not None


def magnitude(key: str) -> float | None:
    try:
        return float(key[:-1] if key.endswith("%") else key)
    except ValueError:
        return None


def scan_numbers(text: str, lang: str, spans: Spans, has_digit: bool, unique: bool,
                 names_too: bool, answer: bool) -> list[Anchor]:
    """Figures outside the characters `spans` already gave to dates, times and
    list markers, in text order (see `values.scan_values` for the flags).
    Numbers come last and cannot overlap each other (digits vs. words), so
    they only check the spans, never claim them (but a space-grouped figure)."""
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
    if lang in HAN_NUMERAL_LANGUAGES:
        number_patterns.append((_HAN_NUMBER, _han_from_match))
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
            keys = (norm, *measure_keys(text, end, norm)) if kind == "number" else (norm,)
            if unique:
                if keys in seen:
                    continue
                seen.add(keys)
            numbers.append(Anchor(kind, raw, norm, start, end, keys))
    numbers.sort(key=lambda a: a.start)
    return numbers
