"""Languages and scripts: what a metric needs to treat non-English text fairly.

- `script_of`: the dominant writing system of a text (Latin, CJK, Arabic, ...).
- `detect_language`: an ISO 639-1 code, from the script and, for alphabetic
  scripts, a vote of stop words (the function words of a language are its most
  frequent and most distinctive tokens, so a handful of them decides even a
  short question). No model is loaded, so it costs microseconds per text.
- `stop_words_for`: stop words per language from the maintained `stop-words`
  package (Modern Greek from `stopwordsiso`: stop-words has Ancient Greek);
  English keeps evalbeam's own list (so English scores do not move).
- `stem_for`: Snowball stemmers (nltk) per language; English keeps Porter;
  Korean strips its particles (`korean_stem`).
- `NEGATION_CUES`: words that flip a statement's polarity, per language.
"""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# Languages the stop-word vote chooses between (alphabetic scripts).
VOTING_LANGUAGES = ("en", "de", "fr", "es", "it", "pt", "nl", "sv", "da", "nb", "fi", "pl",
                    "cs", "ro", "hu", "tr", "id", "ru", "uk", "bg", "el")
# ISO code -> nltk Snowball stemmer name (English: Porter, as rouge-score)
_SNOWBALL = {"ar": "arabic", "da": "danish", "nl": "dutch", "fi": "finnish", "fr": "french",
             "de": "german", "hu": "hungarian", "it": "italian", "nb": "norwegian",
             "pt": "portuguese", "ro": "romanian", "ru": "russian", "es": "spanish",
             "sv": "swedish"}

NEGATION_CUES: dict[str, frozenset[str]] = {
    "en": frozenset("not no never none nobody nothing neither nor cannot can't won't isn't "
                    "aren't wasn't weren't doesn't don't didn't hasn't haven't hadn't "
                    "shouldn't wouldn't couldn't mustn't without unable".split()),
    "de": frozenset("nicht kein keine keinen keinem keiner keines nie niemals ohne weder "
                    "nirgends nichts".split()),
    "fr": frozenset("ne n' pas jamais aucun aucune sans ni nullement".split()),
    "es": frozenset("no nunca jamás ningún ninguna ninguno sin tampoco ni".split()),
    "it": frozenset("non mai nessun nessuna nessuno senza né".split()),
    "pt": frozenset("não nunca jamais nenhum nenhuma sem nem".split()),
    "nl": frozenset("niet geen nooit zonder noch".split()),
    "ar": frozenset("لا لم لن ليس ليست ليسوا غير بدون دون ما".split()),
}
# Scripts without spaces: negation is a substring of the sentence, and only
# multi-character cues are safe (不 alone is also in 不同, "different").
NEGATION_SUBSTRINGS: dict[str, tuple[str, ...]] = {
    "zh": ("没有", "不是", "不会", "不能", "不可", "无法", "并非", "不再", "禁止", "从未", "不需要",
           "不支持", "不允许", "不得", "未能", "不包括", "不属于", "不适用", "没"),
    "ja": ("ない", "ません", "なかった", "できない", "禁止"),
}


# A cue followed by one of these widens or bounds a statement instead of denying
# it: "not only", "not counting", "no matter"; and before a figure, "no more than
# 2,400 mg", "nicht mehr als 3", "pas plus de 5", "no más de 4" (a limit, which
# the source may state as "up to 2,400 mg" or "a maximum of").
_WIDENING = frozenset("only counting including matter nur seulement solo sólo".split())
_BOUND = frozenset("more less fewer later earlier sooner greater higher lower mehr weniger "
                   "später früher plus moins más menos".split())


def _denies(tokens: list[str], i: int) -> bool:
    after = tokens[i + 1:i + 4]
    if not after:
        return True
    if after[0] in _WIDENING:
        return False
    return not (after[0] in _BOUND and any(_is_figure(t) for t in after[1:]))


def _is_figure(token: str) -> bool:
    return token[:1].isdigit() or token in _SMALL_NUMBERS


_SMALL_NUMBERS = frozenset("one two three four five six seven eight nine ten twelve twenty "
                           "hundred thousand".split())


def is_negated(text: str, tokens: list[str], lang: str) -> bool:
    """Whether a sentence carries a negation cue of its language that denies
    something (not a limit such as "no more than 3")."""
    subs = NEGATION_SUBSTRINGS.get(lang)
    if subs is not None:
        return any(s in text for s in subs)
    cues = negation_cues(lang)
    return any(t in cues and _denies(tokens, i) for i, t in enumerate(tokens))


# A Han or kana character writes about a word, four or five Latin letters: a
# Chinese sentence full of code names ("在 JDK 21 里用 Executors.newVirtualThread…")
# has more Latin letters than characters, and is still Chinese.
CJK_LETTER_WEIGHT = 4


def script_of(text: str) -> str:
    """latin | cjk | hangul | arabic | hebrew | cyrillic | greek | other: the
    script of most letters (kana and Han count as cjk, CJK_LETTER_WEIGHT each)."""
    head = text[:2000]
    if head.isascii():  # the common case, without a loop: every ASCII letter is Latin
        return "latin" if _ASCII_LETTER.search(head) else "other"
    counts = _letters_by_script(head)
    if "cjk" in counts:
        counts["cjk"] *= CJK_LETTER_WEIGHT
    if not counts:
        return "other"
    return max(counts, key=counts.get)


def _letters_by_script(text: str) -> dict[str, int]:
    """How many letters of the text each script writes, in text order of first use."""
    counts: dict[str, int] = {}
    for ch in text:
        if ch.isalpha():
            script = _char_script(ch)
            counts[script] = counts.get(script, 0) + 1
    return counts


_ASCII_LETTER = re.compile("[A-Za-z]")


def _char_script(ch: str) -> str:
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
    return "other"


def other_scripts(text: str, at_least: int = 10) -> frozenset[str]:
    """The scripts other than Latin that the text writes at least `at_least`
    letters in: a Chinese answer full of code identifiers still has "cjk"."""
    head = text[:4000]
    if head.isascii():
        return frozenset()
    return frozenset(s for s, n in _letters_by_script(head).items()
                     if n >= at_least and s not in ("latin", "other"))


def is_cjk_char(ch: str) -> bool:
    """Han and kana: scripts written without spaces between words."""
    o = ord(ch)
    return 0x3040 <= o < 0x3100 or 0x3400 <= o < 0xA000 or 0xF900 <= o < 0xFB00 \
        or 0x20000 <= o < 0x30000


@lru_cache(maxsize=None)
def _package_stop_words(lang: str) -> frozenset[str]:
    if lang in _FROM_STOPWORDS_ISO:
        return _stopwords_iso(lang)
    try:
        from stop_words import get_stop_words
        return frozenset(w.lower() for w in get_stop_words(lang))
    except Exception:  # a language the package does not have
        return frozenset()


# stop-words' Greek list is Ancient Greek (polytonic "καί", "τῶν"): Modern Greek's
# comes from stopwordsiso, which writes most words without their accent
_FROM_STOPWORDS_ISO = frozenset({"el"})
_GREEK_ACCENTED = dict(zip("αεηιουω", "άέήίόύώ"))


def _stopwords_iso(lang: str) -> frozenset[str]:
    """stopwordsiso's list, with each unaccented Greek word also in every form
    with one accent ("μεταξυ" -> "μεταξύ"): text is written with them."""
    import stopwordsiso
    words = {w.lower() for w in stopwordsiso.stopwords(lang)}
    accented = {w[:i] + _GREEK_ACCENTED[c] + w[i + 1:] for w in words
                if not any(ch in w for ch in _GREEK_ACCENTED.values())
                for i, c in enumerate(w) if c in _GREEK_ACCENTED}
    return frozenset(words | accented)


@lru_cache(maxsize=None)
def stop_words_for(lang: str) -> frozenset[str]:
    """The language's stop words; English is evalbeam's own list (unchanged)."""
    if lang == "en":
        from transforms.text import stop_words
        return stop_words()
    return _package_stop_words(lang)


@lru_cache(maxsize=None)
def stop_words_of(*langs: str) -> frozenset[str]:
    """The union of several languages' stop words, built once per combination
    (hot paths ask for it per sentence)."""
    return frozenset().union(*(stop_words_for(lang) for lang in langs))


@lru_cache(maxsize=None)
def _voters() -> tuple[tuple[str, frozenset[str]], ...]:
    """English votes with evalbeam's own list: the package's English list has
    1,300 words, foreign ones among them ("de", "al", "y", "o", "plus"), and
    won the vote on Spanish and German sentences."""
    return tuple((lang, stop_words_for(lang)) for lang in VOTING_LANGUAGES)


@lru_cache(maxsize=None)
def _ballots() -> dict[str, tuple[int, ...]]:
    """Stop word -> the indices in _voters() of the languages it belongs to, so
    that a text's tokens are looked up once, not once per language."""
    ballots: dict[str, list[int]] = {}
    for i, (_, words) in enumerate(_voters()):
        for word in words:
            ballots.setdefault(word, []).append(i)
    return {word: tuple(ids) for word, ids in ballots.items()}


def stop_word_hits(tokens: list[str]) -> list[int]:
    """Per language of _voters(), how many of the tokens are its stop words."""
    hits = [0] * len(VOTING_LANGUAGES)
    ballots = _ballots()
    for token in tokens:
        for i in ballots.get(token, ()):
            hits[i] += 1
    return hits


_CYRILLIC_VOTERS = frozenset({"ru", "uk", "bg"})


@lru_cache(maxsize=4096)
def _votes(text: str) -> dict[str, int]:
    """Per voting language (in VOTING_LANGUAGES order), its stop words among the
    text's first 2,000 characters' tokens: what detect_language and
    language_near decide on."""
    from transforms.text import tokenize_plain
    return dict(zip(VOTING_LANGUAGES, stop_word_hits(tokenize_plain(text[:2000]))))


@lru_cache(maxsize=4096)
def detect_language(text: str) -> str:
    """ISO 639-1 code of the text's language; "en" when nothing says otherwise."""
    script = script_of(text)
    if script == "cjk":
        return "ja" if any(0x3040 <= ord(c) < 0x3100 for c in text[:2000]) else "zh"
    if script in ("hangul", "arabic", "hebrew", "greek"):
        return {"hangul": "ko", "arabic": "ar", "hebrew": "he", "greek": "el"}[script]
    votes = _votes(text)
    best, best_hits = "en", 0
    for lang, hits in votes.items():
        if script == "cyrillic" and lang not in _CYRILLIC_VOTERS:
            continue
        if hits > best_hits:
            best, best_hits = lang, hits
    if best_hits == 0 and script == "latin":
        return _by_letters(text[:2000], _OWN_LETTERS) or "en"
    if best != "en":
        if votes["en"] >= best_hits:  # English's hits; ties go to English
            return "en"
        tied = [lang for lang, hits in votes.items() if hits == best_hits]
        if len(tied) > 1 and script == "latin":  # "za" is Polish and Czech
            return _by_letters(text[:2000], tied) or best
    return best


# Letters only one voting language writes: they decide a Latin text that holds
# no stop word of any list ("Köprü 30 Ekim 1973 tarihinde trafiğe açıldı.")
_OWN_LETTERS = {"tr": "ğış", "pl": "łąęśźżń", "cs": "řůě", "ro": "ășțş", "hu": "őű", "de": "ß",
                "es": "ñ", "pt": "ãõ", "fr": "œ", "da": "æø"}


def _by_letters(text: str, among) -> str | None:
    """The language among `among` whose own letters the text uses most, if any."""
    lowered = text.lower()
    counts = {lang: sum(lowered.count(c) for c in _OWN_LETTERS[lang])
              for lang in among if lang in _OWN_LETTERS}
    best = max(counts, key=counts.get, default=None)
    return best if best is not None and counts[best] else None


@lru_cache(maxsize=None)
def _snowball(lang: str):
    from transforms.stemmers import snowball_stemmer_class
    return snowball_stemmer_class()(_SNOWBALL[lang])


def stemmer_for(lang: str):
    """A function token -> stem for the language (identity when none)."""
    if lang == "en":
        from transforms.text import stem
        return stem
    if lang in _SNOWBALL:
        snow = _snowball(lang)
        return _memo_stem(lang, snow)
    if lang == "ko":
        return korean_stem
    return _identity


# Korean writes particles and the copula onto the word ("남산서울타워의",
# "1980년에", "236.7미터이며"); no Snowball stemmer exists for it. Stripping the
# common ones (longest first), keeping two syllables of a Hangul word, lets
# "1980년부터" meet "1980년에". Verb endings are left as they are.
_KOREAN_PARTICLES = tuple(sorted((
    "입니다", "이었습니다", "였습니다", "이며", "이고", "이다", "이라는", "라는", "에서는", "에서도",
    "에서", "에게", "께서", "까지", "부터", "처럼", "보다", "으로는", "으로", "로는", "에는", "에도",
    "와는", "과는", "이나", "은", "는", "이", "가", "을", "를", "에", "의", "로", "와", "과", "도",
    "만", "나"), key=len, reverse=True))


@lru_cache(maxsize=1 << 15)
def korean_stem(token: str) -> str:
    if not token or not ("\uac00" <= token[-1] <= "\ud7a3"):
        return token
    for particle in _KOREAN_PARTICLES:
        if token.endswith(particle):
            rest = token[:-len(particle)]
            hangul = sum(1 for c in rest if "\uac00" <= c <= "\ud7a3")
            if hangul >= 2 or (rest and not ("\uac00" <= rest[0] <= "\ud7a3")):
                return rest  # "1980년에" -> "1980년", "타워의" -> "타워"; "높이" stays
    return token


def _identity(token: str) -> str:
    return token


@lru_cache(maxsize=None)
def _memo_stem(lang: str, snow):
    @lru_cache(maxsize=1 << 15)
    def stem(token: str) -> str:
        if len(token) <= 3 or not token.isalpha():
            return token
        return snow.stem(token)
    return stem


def negation_cues(lang: str) -> frozenset[str]:
    return NEGATION_CUES.get(lang, NEGATION_CUES["en"])


def strip_accents(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


MIN_TOKENS_FOR_LANGUAGE = 8  # a shorter Latin-script text's stop-word vote is not trusted


@lru_cache(maxsize=1024)
def _language_profile(text: str) -> tuple[str, str, frozenset[str]]:
    """(language, main script, other non-Latin scripts), memoised: a case's
    contexts are profiled once however many answers they check."""
    return detect_language(text), script_of(text), other_scripts(text)


def _enough_words(text: str) -> bool:
    from transforms.text import tokenize
    return len(tokenize(text[:400])) >= MIN_TOKENS_FOR_LANGUAGE


MIN_LANGUAGE_VOTES = 2  # stop words a language needs in a text to be told apart


def _votes_apart(text: str, lang: str, other: str) -> bool:
    """The text's own stop words say `lang` and not `other`: at least
    MIN_LANGUAGE_VOTES of them, and twice as many as `other` gets. A short
    answer ("Köprü 30 Ekim 1973 tarihinde trafiğe açıldı.") may hold no stop
    word of any list; its vote then says nothing, not "English"."""
    votes = _votes(text)
    mine = votes.get(lang, 0)
    return mine >= MIN_LANGUAGE_VOTES and mine >= 2 * votes.get(other, 0)


def language_near(text: str, sources_lang: str) -> str:
    """The text's language, read as the language of the texts it is compared
    with (`sources_lang`) when both are voted on in one script and the text's own
    vote does not clearly say otherwise: a short Turkish or Indonesian answer to
    Turkish or Indonesian contexts is read with their month names and decimal
    comma, not as English or Spanish on the strength of one stop word."""
    own = detect_language(text)
    if own == sources_lang or own not in VOTING_LANGUAGES or sources_lang not in VOTING_LANGUAGES:
        return own
    if (own in _CYRILLIC_VOTERS) != (sources_lang in _CYRILLIC_VOTERS):
        return own  # another script
    return own if _votes_apart(text, own, sources_lang) else sources_lang


def other_language(answer: str, reference: str) -> tuple[str, str] | None:
    """(answer's language, reference's) when they differ: written in different
    scripts (a Russian, Chinese or Hebrew answer to an English reference), or
    both in the Latin script and long enough for the stop-word
    vote to tell (a Spanish answer to an English reference)."""
    a_lang, a_main, a_other = _language_profile(answer)
    r_lang, r_main, r_other = _language_profile(reference)
    if a_other != r_other:
        return a_lang, r_lang
    if not a_other and a_main != r_main and "other" not in (a_main, r_main):
        return a_lang, r_lang  # "我们不知道。" is too short for other_scripts alone
    if a_main == r_main == "latin" and not a_other and a_lang != r_lang \
            and _enough_words(answer) and _enough_words(reference) \
            and _votes_apart(answer, a_lang, r_lang) and _votes_apart(reference, r_lang, a_lang):
        return a_lang, r_lang
    return None
