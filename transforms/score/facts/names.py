"""Names: people, organisations, products, places and codes ("Voyager 2",
"NASA", "utf8mb4"), found by capitalisation in scripts that have it and by
mixed letters and digits anywhere. A number glued to a name ("Ogoni 9",
"Java 21") belongs to the name, not to the figures. Also the words a name is
matched by (without elided articles or a possessive) and acronyms (the
"FTC" of "the Federal Trade Commission").
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from transforms.score.facts.quantity_words import QUANTITY_WORDS, THOUSANDS, YEAR_AFTER_NAME
from transforms.text.scripts import is_cjk_char
from transforms.text.tokens import tokenize

_WORD = re.compile(r"[^\W_]+(?:['’\-.][^\W_]+)*")
# languages written in a script without capitals
UNCASED_LANGUAGES = frozenset({"zh", "ja", "ko", "ar", "he", "fa", "th", "hi"})
# languages that capitalise every noun: a run of capitals may be a noun and a name
NOUNS_CAPITALISED = frozenset({"de", "lb"})
_CONNECTORS = frozenset({"of", "de", "du", "des", "del", "la", "le", "von", "van", "der", "den",
                         "da", "di", "y", "&", "and", "for", "on", "upon"})
# German capitalises every noun, so "Teil der Kämpfe", "Großvater des Kaisers"
# are noun phrases, not names: its genitive articles do not link name words
_GERMAN_GENITIVE = frozenset({"der", "des", "den"})


@dataclass(frozen=True)
class Entity:
    text: str
    words: tuple[str, ...]   # lower-case tokens
    start: int               # offsets in its sentence
    end: int


def is_strong_name_word(word: str, lang: str) -> bool:
    """An acronym, CamelCase word or code: a name on its own, in any language."""
    return _is_name_word(word, False, lang)[1]


def _is_name_word(word: str, first: bool, lang: str) -> tuple[bool, bool]:
    """(is part of a name, is a strong name on its own: code, acronym, CamelCase)."""
    head = word[0]
    if head.isdigit():
        return False, False  # "9am", "5m", "3.7-metre": figures with a unit
    if not word.isascii() and word.lower() == word.upper():
        return False, False  # a script without case (CJK, Arabic, Hebrew): no capitals to go by
    if word.isalpha():
        if word.islower():
            return False, False
        acronym = len(word) >= 2 and word.isupper()
        camel = not acronym and not word[1:].islower() and not word[1:].isupper()
        return head.isupper() or camel, acronym or camel
    letters = [c for c in word if c.isalpha()]
    if not letters:
        return False, False
    # a code starts with a letter ("utf8mb4", "H1N1", "COVID-19")
    code = head.isalpha() and any(c.isdigit() for c in word)
    acronym = len(letters) >= 2 and all(c.isupper() for c in letters)
    camel = any(c.isupper() for c in letters[1:]) and any(c.islower() for c in letters)
    return code or acronym or camel or head.isupper(), code or acronym or camel


# A Roman numeral: part of a name after one ("Mehmed II", "World War II"), never
# the start of one ("XII secolo", "XIX siècle" are centuries)
_ROMAN_NUMERAL = re.compile(r"[IVX]{2,5}")
# a fiscal year ("FY2023", "FY24"): a date, checked as one, not a code name
_FISCAL_YEAR = re.compile(r"FY['’]?(?:\d{2}|\d{4})")
# the characters of scripts.is_cjk_char, to test a whole sentence at once
_HAN_OR_KANA = re.compile("[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\U00020000-\U0002ffff]")


def _words(sentence: str) -> list[tuple[str, int, int]]:
    """(word, start, end) of a sentence's words. Han and kana are written without
    spaces, so a word glued to them is a word of its own: in "展望デッキは350m"
    or "使用Java21开发" the Latin and digit runs ("350m", "Java21") are words."""
    if not _HAN_OR_KANA.search(sentence):
        return [(m.group(), m.start(), m.end()) for m in _WORD.finditer(sentence)]
    words = []
    for m in _WORD.finditer(sentence):
        word, start = m.group(), m.start()
        if word.isascii() or not any(is_cjk_char(c) for c in word):
            words.append((word, start, m.end()))
            continue
        begin = 0
        for k in range(1, len(word) + 1):
            if k == len(word) or is_cjk_char(word[k]) != is_cjk_char(word[k - 1]):
                piece = word[begin:k].strip("'’-.")
                if piece:
                    offset = start + begin + word[begin:k].find(piece)
                    words.append((piece, offset, offset + len(piece)))
                begin = k
    return words


def extract_entities(sentence: str, lang: str, stops: frozenset[str],
                     months: frozenset[str] = frozenset()) -> list[Entity]:
    """Names in one sentence (see the module docstring)."""
    words = _words(sentence)
    entities: list[Entity] = []
    i = 0
    while i < len(words):
        word, start, end = words[i]
        is_name, strong = _is_name_word(word, i == 0, lang)
        if not is_name or word.lower() in months or _ROMAN_NUMERAL.fullmatch(word) \
                or _FISCAL_YEAR.fullmatch(word):
            i += 1
            continue
        run = [i]
        strong_any = strong
        j = i + 1
        while j < len(words):
            gap = sentence[words[j - 1][2]:words[j][1]]
            if gap.strip() not in ("", "-", "&") or words[j - 1][0].endswith(("'s", "’s")):
                break  # punctuation, or a possessive: "NASA's Spitzer" is two names
            w = words[j][0]
            name, st = _is_name_word(w, False, lang)
            if name and w.lower() not in months:
                run.append(j)
                strong_any = strong_any or st
                j += 1
                continue
            if (w.isdigit() or re.fullmatch(r"\d+(?:\.\d+)*", w)) and not YEAR_AFTER_NAME.fullmatch(w) \
                    and not (lang in NOUNS_CAPITALISED and not strong_any) \
                    and not THOUSANDS.match(sentence, words[j][2]) \
                    and not (w.isdigit() and int(w) <= 31 and j + 1 < len(words)
                             and words[j + 1][0].lower() in months):
                # (a day before a month is a date: "Köprü 30 Ekim 1973")
                # "Voyager 2", "Python 3.12" -- but "Tony Clunn 1987" is a name and a year,
                # in German "Jahr 800", "Rund 28" are a noun and a figure, and a figure
                # with a thousands separator is an amount ("Roughly 2,000 people")
                run.append(j)
                strong_any = True
                j += 1
                break
            if w.lower() in _CONNECTORS and j + 1 < len(words) and \
                    not (lang in NOUNS_CAPITALISED and w.lower() in _GERMAN_GENITIVE) and \
                    _is_name_word(words[j + 1][0], False, lang)[0] and \
                    sentence[words[j][2]:words[j + 1][1]].strip() == "":
                run.append(j)
                j += 1
                continue
            break
        # leading function words ("The", "Die", "Our") are not part of the name
        while run and (words[run[0]][0].lower() in stops or words[run[0]][0].lower()
                       in QUANTITY_WORDS) and not _is_name_word(words[run[0]][0], False, lang)[1]:
            run = run[1:]
        while run and words[run[-1]][0].lower() in _CONNECTORS:
            run = run[:-1]
        if run and not any(_is_name_word(words[k][0], False, lang)[0] for k in run):
            run = []  # only a figure is left ("About 40.5", "In 812"): a figure, not a name
        if run:
            names = [part for k in run if (part := _name_part(words[k][0]))
                     and part.lower() not in months]  # "mid-October" is a date
            single = len(run) == 1
            # a capital opening a sentence says nothing, unless the language has
            # no capitals: "Lumenfold 从不出售…" names Lumenfold
            at_start = run[0] == 0 and lang not in UNCASED_LANGUAGES
            keep = strong_any or not single or not at_start
            if lang in NOUNS_CAPITALISED and not strong_any and (single or at_start):
                keep = False  # German capitalises every noun (and "Lange Zeit" opens sentences)
            if sum(len(n) for n in names) < 3:
                keep = False  # "B", "US", "KB": too short to tell a name from an abbreviation
            if keep:
                s, e = words[run[0]][1], words[run[-1]][2]
                toks = tuple(t for n in names for t in unelided_tokens(n))
                if toks:
                    entities.append(Entity(sentence[s:e], toks, s, e))
        i = max(j, i + 1)
    return entities


# French and Italian elided articles and prepositions glued to a name ("l'AAH",
# "d'Europa", "dell'UE"): the name is what follows the apostrophe.
_ELISION = re.compile(r"^(?:l|d|qu|j|n|s|c|m|t|dell|all|nell|dall|sull|un)['’](?=\w)")
_POSSESSIVE = re.compile(r"(?<=\w)['’]s$")


def _name_part(word: str) -> str:
    """The name in a compound of a name and a common word, which is not part of
    it: "K-rich", "DCT-based", "Earth-bound", "intra-EU" -> "K", "DCT", "Earth", "EU"."""
    if "-" not in word:
        return word
    kept = [p for p in word.split("-") if not (p.isalpha() and p.islower())]
    # a code keeps its parts ("plugin-vue2"): the name must be a capitalised part
    return "-".join(kept) if any(p[:1].isupper() for p in kept) else word


def name_tokens(text: str) -> set[str]:
    """The words a name is matched by (see `unelided_tokens`)."""
    return set(unelided_tokens(text))


def unelided_tokens(text: str) -> list[str]:
    """`tokenize`, with elided articles cut off ("l'aah" -> "aah") and the
    possessive 's too ("ftc's" -> "ftc"), so that a name matches with or
    without them, in the answer and in the contexts alike ("The FTC's rule"
    supports "the FTC")."""
    return [_POSSESSIVE.sub("", _ELISION.sub("", t)) for t in tokenize(text)]


ACRONYM_GLUE = _CONNECTORS | {"the", "und", "et", "e"}


def acronyms_of(text: str) -> tuple[set[str], set[str]]:
    """(initials of the text's runs of capitalised words, its all-capital words),
    lowercased: "the Federal Trade Commission" gives "ftc", "National
    Aeronautics and Space Administration" gives "nasa" (linking words are
    skipped), so that an answer's "FTC" is found in contexts that spell it out,
    and an answer that spells out "ESA" in contexts that abbreviate it. A run
    is cut at its linking words into names ("European Union and the European
    Space Agency": "eu", "esa"); only whole names or several of them in a row
    count (and each without its first word, which may be capitalised only
    because it opens the sentence), at 2 to 6 letters: any two words in a row
    would match a two-letter acronym too easily."""
    initials: set[str] = set()
    caps: set[str] = set()
    run: list[str] = []

    def close() -> None:
        segments: list[list[str]] = [[]]  # capitalised words, split at linking words
        for w in run:
            if w.lower() in ACRONYM_GLUE:
                segments.append([])
            else:
                segments[-1].append(w[0].lower())
        segments = [seg for seg in segments if seg]
        for i in range(len(segments)):
            for j in range(i, len(segments)):
                letters = [c for seg in segments[i:j + 1] for c in seg]
                for part in (letters, letters[1:]):
                    if 2 <= len(part) <= 6:
                        initials.add("".join(part))
        run.clear()

    for m in _WORD.finditer(text):
        word = m.group()
        if word.isalpha() and word.isupper() and 2 <= len(word) <= 6:
            caps.add(word.lower())
        elif word.isalpha() and word.endswith("s") and word[:-1].isupper() and 3 <= len(word) <= 7:
            caps.add(word[:-1].lower())  # a plural: "IRAs"
        gap = text[m.start() - 1] if m.start() else " "
        if run and gap not in " -":
            close()
        if word[0].isupper() and word.isalpha() and not word.isupper():
            run.append(word)
        elif run and word.lower() in ACRONYM_GLUE:
            run.append(word)
        else:
            close()
    close()
    return initials, caps
