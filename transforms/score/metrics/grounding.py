"""Anchors beyond numbers and dates, for the claim-based hallucination metric.

Each function reduces an answer to checkable statements and checks each
against an index of the contexts, in any language:

- entities: names of people, organisations, products, places, and codes
  ("Voyager 2", "NASA", "utf8mb4"), found by capitalisation in scripts that
  have it and by mixed letters and digits anywhere. A number glued to a name
  ("Ogoni 9", "Java 21") belongs to the name, not to the number anchors.
- bindings: a figure or date and the name it is said of ("Voyager 2 ... on
  25 August 2012"). Both may appear in the contexts while the pairing is wrong
  (swapped roles); the pairing is unsupported when the contexts state the
  figure next to another name the answer also uses, and never next to this one.
- negations: an answer sentence that restates a context sentence with the
  opposite polarity ("is contagious" / "is not contagious").
- list items: each item of an enumeration ("A, B, C and D", bullet lists).
- sentences: an answer sentence whose content words are mostly absent from
  the contexts (and the question) says something the contexts do not; this
  is what makes an off-topic answer without figures score high.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Callable, Iterable, Sequence

from transforms.lang import (detect_language, is_cjk_char, is_negated, language_near,
                            stemmer_for, stop_words_for, stop_words_of)
from transforms.text import tokenize

SENTENCE_SUPPORT = 0.5   # share of a sentence's content words the contexts must hold
NEGATION_MATCH = 0.6     # share of content words shared with the context sentence compared
MIN_SENTENCE_WORDS = 3   # shorter sentences are not judged as a whole
MAX_ITEM_WORDS = 8
MAX_SENTENCES = 1000     # sentences of one answer checked (figures are checked in all)
_SENTENCE_END = re.compile(r"(?<=[.!?؟])\s+|(?<=[。！？；])\s*|\n+")
_WORD = re.compile(r"[^\W_]+(?:['’\-.][^\W_]+)*")
# languages written in a script without capitals
UNCASED_LANGUAGES = frozenset({"zh", "ja", "ko", "ar", "he", "fa", "th", "hi"})
# languages that capitalise every noun: a run of capitals may be a noun and a name
_NOUNS_CAPITALISED = frozenset({"de", "lb"})
_CONNECTORS = frozenset({"of", "de", "du", "des", "del", "la", "le", "von", "van", "der", "den",
                         "da", "di", "y", "&", "and", "for", "on", "upon"})
# a figure after a name that is a year, not part of the name ("Tony Clunn 1987")
YEAR_AFTER_NAME = re.compile(r"(?:1[0-9]|20)\d\d")
# a thousands separator after a figure's first digits: an amount ("2,000"), not
# the number of a name ("Voyager 2"); used by the number anchors too
THOUSANDS = re.compile(r"[,\u202f\u00a0 ']\d{3}(?!\d)")
# words that mark a figure as approximate ("about 50 €", "environ 50 €")
APPROXIMATE_WORDS = frozenset({
    "about", "around", "roughly", "approximately", "approx", "nearly", "almost", "some",
    "circa", "environ", "presque", "etwa", "rund", "ungefähr", "knapp", "unos", "unas",
    "aproximadamente", "casi", "quasi"})
# words that qualify an amount ("Roughly 2 cm", "Rund 28 Jahre"): never part of a
# name, even when capitalised at the start of a sentence
QUANTITY_WORDS = APPROXIMATE_WORDS | {"exactly", "over", "under", "only", "just", "fast", "über",
                                      "près", "cerca"}
# German capitalises every noun, so "Teil der Kämpfe", "Großvater des Kaisers"
# are noun phrases, not names: its genitive articles do not link name words
_GERMAN_GENITIVE = frozenset({"der", "des", "den"})
_ITEM_SPLIT = re.compile(r"\s*[,;、،]\s*")
_LAST_ITEM = re.compile(r"\s+(?:and|or|und|oder|et|ou|y|o|e|ed|en|و)\s+|\s*[和及或]\s*")
_BULLET = re.compile(r"^\s*(?:[-*•·–]|\d{1,2}[.)])\s+(.*\S)\s*$", re.M)


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


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
# the characters of lang.is_cjk_char, to test a whole sentence at once
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
                    and not (lang in _NOUNS_CAPITALISED and not strong_any) \
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
                    not (lang in _NOUNS_CAPITALISED and w.lower() in _GERMAN_GENITIVE) and \
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
        if run:
            names = [part for k in run if (part := _name_part(words[k][0]))
                     and part.lower() not in months]  # "mid-October" is a date
            single = len(run) == 1
            # a capital opening a sentence says nothing, unless the language has
            # no capitals: "Lumenfold 从不出售…" names Lumenfold
            at_start = run[0] == 0 and lang not in UNCASED_LANGUAGES
            keep = strong_any or not single or not at_start
            if lang in _NOUNS_CAPITALISED and not strong_any and (single or at_start):
                keep = False  # German capitalises every noun (and "Lange Zeit" opens sentences)
            if sum(len(n) for n in names) < 3:
                keep = False  # "B", "US", "KB": too short to tell a name from an abbreviation
            if keep:
                s, e = words[run[0]][1], words[run[-1]][2]
                toks = tuple(t for n in names for t in _unelided(n))
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
    """The words a name is matched by (see `_unelided`)."""
    return set(_unelided(text))


def _unelided(text: str) -> list[str]:
    """`tokenize`, with elided articles cut off ("l'aah" -> "aah") and the
    possessive 's too ("ftc's" -> "ftc"), so that a name matches with or
    without them, in the answer and in the contexts alike ("The FTC's rule"
    supports "the FTC")."""
    return [_POSSESSIVE.sub("", _ELISION.sub("", t)) for t in tokenize(text)]


_ACRONYM_GLUE = _CONNECTORS | {"the", "und", "et", "e"}


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
            if w.lower() in _ACRONYM_GLUE:
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
        elif run and word.lower() in _ACRONYM_GLUE:
            run.append(word)
        else:
            close()
    close()
    return initials, caps


@dataclass
class ContextIndex:
    """What the contexts (and the question) can support, per sentence."""

    lang: str
    sentences: list[dict] = field(default_factory=list)  # tokens, text, values, negated, entities
    tokens: set[str] = field(default_factory=set)
    stems: set[str] = field(default_factory=set)
    joined: list[str] = field(default_factory=list)       # " tok tok " per context passage
    question_tokens: set[str] = field(default_factory=set)
    question_stems: set[str] = field(default_factory=set)
    initials: set[str] = field(default_factory=set)  # see acronyms_of
    caps: set[str] = field(default_factory=set)

    def has_words(self, words: Sequence[str]) -> bool:
        """The words appear adjacent, in order, in a context (or in the question);
        names without digits may also match word by word (inflections), and an
        acronym matches the words it abbreviates either way round."""
        needle = " " + " ".join(words) + " "
        if any(needle in j for j in self.joined):
            return True
        if all(w in self.question_tokens for w in words):
            return True
        if any(ch.isdigit() for w in words for ch in w):
            # a name with a figure ("SQLite 3.7.0"): both in one context sentence
            # ("version 3.7.0 ..., SQLite supports")
            return len(words) >= 2 and any(
                all(f" {w} " in s["joined"] for w in words) for s in self.sentences)
        if len(words) == 1 and (words[0] in self.initials or words[0] in self.caps):
            return True
        spelled = [w for w in words if w not in _ACRONYM_GLUE]
        if len(spelled) >= 2 and "".join(w[0] for w in spelled) in self.caps:
            return True
        return all(self._fuzzy(w) for w in words)

    def _fuzzy(self, word: str) -> bool:
        if word in self.tokens or word in self.question_tokens:
            return True
        if len(word) < 5:
            return False
        prefix = word[:max(4, len(word) - 3)]
        return any(t.startswith(prefix) for t in self.tokens)


def build_index(contexts: Sequence[str], question: str, value_keys: Callable[[str], set[str]],
                ) -> ContextIndex:
    lang = detect_language(" ".join(c[:500] for c in contexts))
    index = ContextIndex(lang)
    for ctx in contexts:
        passage = _passage(ctx, lang, value_keys)
        index.tokens.update(passage.tokens)
        index.joined.append(passage.joined)
        index.sentences += [{**sentence, "passage": len(index.joined) - 1}
                            for sentence in passage.sentences]
        index.stems.update(passage.stems)
        index.initials.update(passage.initials)
        index.caps.update(passage.caps)
    return with_question(index, question)


@dataclass(frozen=True)
class _Passage:
    """One context's part of a ContextIndex (read-only: indexes share it)."""

    tokens: frozenset[str]
    joined: str
    sentences: tuple[dict, ...]
    stems: frozenset[str]
    initials: frozenset[str]
    caps: frozenset[str]


@lru_cache(maxsize=1024)
def _passage(ctx: str, lang: str, value_keys: Callable[[str], set[str]]) -> _Passage:
    """Memoised per passage: retrieved passages recur across cases in every
    combination and order, so a cache of whole context lists mostly misses."""
    stops = stop_words_for(lang)
    stem = stemmer_for(lang)
    toks = _unelided(ctx)
    # the parts of a compound too: "al-Khwarizmi" supports "Khwarizmi", "Earth-bound" "Earth"
    parts = [p for t in toks if "-" in t for p in t.split("-") if p]
    sentences = []
    for sentence in split_sentences(ctx):
        stoks = tokenize(sentence)
        sentences.append({
            "joined": " " + " ".join(stoks) + " ",
            "stems": {stem(t) for t in stoks if t not in stops},
            "values": value_keys(sentence),
            "negated": is_negated(sentence, stoks, lang),
        })
    initials, caps = acronyms_of(ctx)
    return _Passage(frozenset(toks).union(parts), " " + " ".join(toks) + " ", tuple(sentences),
                    frozenset(stem(t) for t in toks if t not in stops), frozenset(initials),
                    frozenset(caps))


def with_question(index: ContextIndex, question: str) -> ContextIndex:
    """The index with the question's words (a shallow copy: the contexts' part,
    the costly one, is shared, so it can be cached without the question)."""
    stops = stop_words_for(index.lang)
    stem = stemmer_for(index.lang)
    qt = _unelided(question or "")
    return replace(index, question_tokens=set(qt),
                   question_stems={stem(t) for t in qt if t not in stops})


@dataclass(frozen=True)
class Check:
    kind: str
    text: str
    supported: bool
    note: str = ""


def check_answer(answer: str, index: ContextIndex, values_of: Callable[[str], list],
                 months: frozenset[str]) -> list[Check]:
    """Entities, bindings, negations, list items and sentences of the answer."""
    lang = language_near(answer, index.lang)
    stops = stop_words_of(lang, index.lang)
    stem = stemmer_for(index.lang)
    checks: list[Check] = []
    seen_entities: dict[tuple, bool] = {}
    answer_entities: dict[tuple, None] = {}  # in the answer's order: the details are reproducible
    sentences = split_sentences(answer)[:MAX_SENTENCES]
    per_sentence = []
    for sentence in sentences:
        ents = extract_entities(sentence, lang, stops, months)
        per_sentence.append(ents)
        answer_entities.update(dict.fromkeys(e.words for e in ents))
    for sentence, ents in zip(sentences, per_sentence):
        for e in ents:
            if e.words not in seen_entities:
                ok = index.has_words(e.words) or (
                    lang in _NOUNS_CAPITALISED and _has_name_after_noun(e.words, index)) or \
                    _opening_word_and_figure(e, index, values_of, lang)
                seen_entities[e.words] = ok
                checks.append(Check("entity", e.text, ok))
        checks += _bindings(sentence, ents, seen_entities, answer_entities, index,
                            lambda text: values_of(text, lang))
        stoks = tokenize(sentence)
        content = {stem(t) for t in stoks if t not in stops and not t.isdigit()}
        if len(content) >= MIN_SENTENCE_WORDS:
            found = content & (index.stems | index.question_stems)
            share = len(found) / len(content)
            checks.append(Check("sentence", sentence[:120], share >= SENTENCE_SUPPORT,
                                f"{share:.2f} of its words in the contexts"))
            neg = _negation_flip(sentence, stoks, content, lang, index)
            if neg is not None:
                checks.append(neg)
    checks += _list_items(answer, index, stops, stem)
    return checks


def _opening_word_and_figure(e: Entity, index: ContextIndex, values_of, lang: str) -> bool:
    """A capital opening a sentence and a figure read as one name ("Expect 5–7
    days", "Tingginya 132 meter"): when the contexts never use that word, it
    names nothing, and the figure is checked alone. A word they use keeps the
    pair a name ("Voyager 2 crossed …"), so its figure's pairing is checked."""
    parts = e.text.split(None, 1)
    if e.start != 0 or len(e.words) != 2 or not e.words[1][:1].isdigit() or len(parts) != 2:
        return False  # ("Model-3" is one word: a name)
    opener, figure = parts
    if e.words[0] in index.tokens or e.words[0] in index.question_tokens or \
            is_strong_name_word(opener, lang):
        return False
    keys = {k for a in values_of(figure, lang) for k in a.keys}
    return bool(keys) and any(keys & s["values"] for s in index.sentences)


def _has_name_after_noun(words: tuple[str, ...], index: ContextIndex) -> bool:
    """In German a common noun before a name is capitalised like it and joins its
    run ("Kantone Thurgau", "Tuchregion Flandern"): the name after it is checked."""
    return any(index.has_words(words[k:]) for k in range(1, len(words)))


def _bindings(sentence: str, ents: list[Entity], supported: dict, answer_entities: dict,
              index: ContextIndex, values_of) -> list[Check]:
    out = []
    if not ents:
        return out
    for value in values_of(sentence):
        before = [e for e in ents if e.end <= value.start and supported.get(e.words)]
        if not before:
            continue
        entity = before[-1]
        keys = set(value.keys)
        holding = [s for s in index.sentences if keys & s["values"]]
        if not holding:
            continue  # the value itself is unsupported: counted once, as a value
        needle = " " + " ".join(entity.words) + " "
        if any(needle in s["joined"] for s in holding):
            continue
        rivals = [w for w in answer_entities if w != entity.words and _is_real_name(w) and
                  any(" " + " ".join(w) + " " in s["joined"] for s in holding)]
        if rivals:
            out.append(Check("binding", f"{entity.text} … {value.text}", False,
                             f"the contexts state {value.text} of {' '.join(rivals[0])}"))
        else:
            out.append(Check("binding", f"{entity.text} … {value.text}", True))
    return out


def _is_real_name(words: tuple[str, ...]) -> bool:
    """A rival name is a name, not a stray letter, unit or figure ("a", "k", "8")."""
    return sum(1 for w in words for c in w if c.isalpha()) >= 3


def _negation_flip(sentence: str, stoks: list[str], content: set[str], lang: str,
                   index: ContextIndex) -> Check | None:
    best, best_share = None, 0.0
    for s in index.sentences:
        share = len(content & s["stems"]) / len(content)
        if share > best_share:
            best, best_share = s, share
    if best is None or best_share < NEGATION_MATCH:
        return None
    negated = is_negated(sentence, stoks, lang)
    if negated == best["negated"]:
        return Check("negation", " ".join(stoks[:20]), True)
    return Check("negation", " ".join(stoks[:20]), False,
                 "the closest context sentence states the opposite polarity")


# a part of a sentence that opens with a relative or subordinating word is a
# clause, not an item of an enumeration
_CLAUSE_OPENER = re.compile(
    r"(?i)(?:which|who|whom|whose|where|whereas|while|although|because|qui|dont|où|"
    r"quien|quienes|donde|cuyo|cuya|welche[rsnm]?|wobei|weil|obwohl)(?![^\W_])")


def list_items(answer: str) -> list[str]:
    """Items of bullet lists and of inline enumerations of three or more."""
    items: list[str] = []
    for m in _BULLET.finditer(answer):
        text = m.group(1)
        if len(text.split()) <= MAX_ITEM_WORDS:
            items.append(text.rstrip(".;,"))
    for sentence in split_sentences(_BULLET.sub("", answer)):
        body = sentence.split(":", 1)[1] if ":" in sentence else sentence
        parts = _ITEM_SPLIT.split(body.strip().rstrip(".!?。"))
        # "the practical effect, which is usually simple and sensible": from a
        # relative or subordinate clause on, the parts are no items
        clause = next((k for k, p in enumerate(parts) if k and _CLAUSE_OPENER.match(p.strip())), None)
        parts = parts[:clause]
        if len(parts) < 2:
            continue
        last = _LAST_ITEM.split(parts[-1])
        if len(last) < 2:
            continue
        parts = parts[:-1] + last
        if len(parts) < 3:
            continue
        # the first item often carries the sentence's start: keep its last words
        parts[0] = " ".join(parts[0].split()[-3:])
        if all(0 < len(p.split()) <= MAX_ITEM_WORDS for p in parts) or _cjk_items(parts):
            items += [p for p in parts if p]
    return items


def _cjk_items(parts: list[str]) -> bool:
    return all(0 < len(p) <= 12 and not re.search(r"\s", p) for p in parts)


def _list_items(answer: str, index: ContextIndex, stops, stem) -> list[Check]:
    checks = []
    for item in list_items(answer):
        toks = tokenize(item)
        content = [stem(t) for t in toks if t not in stops]
        if not content:
            continue
        found = sum(1 for c in content if c in index.stems or c in index.question_stems)
        ok = found / len(content) >= 0.5
        checks.append(Check("list_item", item[:80], ok))
    return checks


@lru_cache(maxsize=None)
def month_words() -> frozenset[str]:
    from transforms.score.metrics.hallucination import _ALL_MONTHS
    return frozenset(_ALL_MONTHS)


def unique_checks(checks: Iterable[Check]) -> list[Check]:
    seen, out = set(), []
    for c in checks:
        key = (c.kind, c.text.lower())
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out
