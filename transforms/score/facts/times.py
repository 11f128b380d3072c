"""Times of day in many languages, normalised to "HH:MM": "9am" = "09:00",
"9:30 PM" = "21:30", "午前7時30分" = "07:30", "18h30", "7.30 Uhr", "alle 14.30"."""
from __future__ import annotations

import re
from decimal import Decimal

from transforms.score.facts.anchors import Anchor, Spans, claim_matches, decimal_text
from transforms.score.facts.numbers import DECIMAL_COMMA

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
        return f"{hour:02d}:{minute:02d}", decimal_text(Decimal(f"{hour}.{m['m']}"))
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


def scan_times(text: str, lang: str, spans: Spans) -> list[Anchor]:
    """Times of day not inside an anchor already found, each claiming its characters."""
    return claim_matches(text, _time_patterns(lang), spans, "time", _time_reading)


def _time_reading(kind: str, m: re.Match[str]) -> tuple[str, tuple[str, ...]] | None:
    readings = _time_from_match(kind, m)
    return None if readings is None else (readings[0], readings)
