"""Writing systems: which script a text or a character is written in.

A metric compares words only within one script, and scripts without spaces
(Han, kana) are tokenised by character; both need to know the script.
"""
from __future__ import annotations

import re
from bisect import bisect_right

# A Han or kana character writes about a word, four or five Latin letters: a
# Chinese sentence full of code names ("在 JDK 21 里用 Executors.newVirtualThread…")
# has more Latin letters than characters, and is still Chinese.
CJK_LETTER_WEIGHT = 4


def script_of(text: str) -> str:
    """latin | cjk | hangul | arabic | hebrew | cyrillic | greek | one of
    BLOCK_SCRIPTS' scripts (devanagari, thai, georgian...) | other: the script
    of most letters (kana and Han count as cjk, CJK_LETTER_WEIGHT each)."""
    head = text[:2000]
    if head.isascii():  # the common case, without a loop: every ASCII letter is Latin
        return "latin" if _ASCII_LETTER.search(head) else "other"
    counts = letters_by_script(head)
    if "cjk" in counts:
        counts["cjk"] *= CJK_LETTER_WEIGHT
    if not counts:
        return "other"
    return max(counts, key=counts.get)


def letters_by_script(text: str) -> dict[str, int]:
    """How many letters of the text each script writes, in text order of first use."""
    counts: dict[str, int] = {}
    for ch in text:
        if ch.isalpha():
            script = char_script(ch)
            counts[script] = counts.get(script, 0) + 1
    return counts


_ASCII_LETTER = re.compile("[A-Za-z]")


def char_script(ch: str) -> str:
    """The script of one character (see `script_of`)."""
    o = ord(ch)
    if o < 0x250 or 0x1E00 <= o < 0x1F00:
        return "latin"
    if 0x3040 <= o < 0x3100 or 0x3400 <= o < 0xA000 or 0xF900 <= o < 0xFB00 \
            or 0x20000 <= o < 0x30000:
        return "cjk"
    if 0xAC00 <= o < 0xD7B0 or 0x1100 <= o < 0x1200:
        return "hangul"
    if 0x600 <= o < 0x700 or 0x750 <= o < 0x780 or 0xFB50 <= o < 0xFF00 and o < 0xFE00:
        return "arabic"
    if 0x590 <= o < 0x600:
        return "hebrew"
    if 0x400 <= o < 0x530:
        return "cyrillic"
    if 0x370 <= o < 0x400:
        return "greek"
    i = bisect_right(_BLOCK_STARTS, o) - 1
    if i >= 0 and o < BLOCK_SCRIPTS[i][1]:
        return BLOCK_SCRIPTS[i][2]
    return "other"


# Scripts that each write one main language, by Unicode block (start, end,
# script, language): before, their letters were "other" and a Hindi, Thai or
# Georgian text was detected as English, so a Hindi answer to an English
# reference was scored by BLEU as if both were English.
BLOCK_SCRIPTS: tuple[tuple[int, int, str, str], ...] = (
    (0x0530, 0x0590, "armenian", "hy"),
    (0x0900, 0x0980, "devanagari", "hi"),
    (0x0980, 0x0A00, "bengali", "bn"),
    (0x0A00, 0x0A80, "gurmukhi", "pa"),
    (0x0A80, 0x0B00, "gujarati", "gu"),
    (0x0B00, 0x0B80, "oriya", "or"),
    (0x0B80, 0x0C00, "tamil", "ta"),
    (0x0C00, 0x0C80, "telugu", "te"),
    (0x0C80, 0x0D00, "kannada", "kn"),
    (0x0D00, 0x0D80, "malayalam", "ml"),
    (0x0D80, 0x0E00, "sinhala", "si"),
    (0x0E00, 0x0E80, "thai", "th"),
    (0x0E80, 0x0F00, "lao", "lo"),
    (0x0F00, 0x1000, "tibetan", "bo"),
    (0x1000, 0x10A0, "myanmar", "my"),
    (0x10A0, 0x1100, "georgian", "ka"),
    (0x1200, 0x13A0, "ethiopic", "am"),
    (0x1780, 0x1800, "khmer", "km"),
    (0x1C90, 0x1CC0, "georgian", "ka"),
    (0x2D00, 0x2D30, "georgian", "ka"),
)
_BLOCK_STARTS = tuple(start for start, *_ in BLOCK_SCRIPTS)
SCRIPT_LANGUAGE = {script: lang for _, _, script, lang in BLOCK_SCRIPTS}


def other_scripts(text: str, at_least: int = 10) -> frozenset[str]:
    """The scripts other than Latin that the text writes at least `at_least`
    letters in: a Chinese answer full of code identifiers still has "cjk"."""
    head = text[:4000]
    if head.isascii():
        return frozenset()
    return frozenset(s for s, n in letters_by_script(head).items()
                     if n >= at_least and s not in ("latin", "other"))


def is_cjk_char(ch: str) -> bool:
    """Han and kana: scripts written without spaces between words."""
    o = ord(ch)
    return 0x3040 <= o < 0x3100 or 0x3400 <= o < 0xA000 or 0xF900 <= o < 0xFB00 \
        or 0x20000 <= o < 0x30000


# Scripts written without spaces between words that nothing installed segments
# (a Han or kana character is about a word; a Thai letter is not): Thai, Lao,
# Myanmar, Khmer. Their space-separated pieces are phrases, not words.
UNSPACED_SCRIPTS = ("thai", "lao", "myanmar", "khmer")
# their BLOCK_SCRIPTS ranges as a regex class body
UNSPACED_RANGES = "".join(f"{chr(start)}-{chr(end - 1)}" for start, end, script, _ in
                          BLOCK_SCRIPTS if script in UNSPACED_SCRIPTS)
_UNSEGMENTED = re.compile(f"[{UNSPACED_RANGES}]")
UNSEGMENTED = ("a text is written in Thai, Lao, Myanmar or Khmer (no spaces between words, "
               "and no word segmenter here): its words cannot be compared")


def unsegmented(*texts: str | None) -> bool:
    """A text is mostly (half its letters or more) in a script without spaces
    between words: word-overlap metrics would compare whole phrases and score a
    correct answer 0. One Thai name in an English text is not."""
    for text in texts:
        if not text or text.isascii():
            continue
        head = text[:4000]
        if _UNSEGMENTED.search(head):
            letters = [c for c in head if c.isalpha()]
            if 2 * sum(1 for c in letters if _UNSEGMENTED.match(c)) >= len(letters):
                return True
    return False

