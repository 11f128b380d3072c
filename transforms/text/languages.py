"""A text's language: what a metric needs to treat non-English text fairly.

`detect_language` gives an ISO 639-1 code, from the script and, for alphabetic
scripts, a vote of stop words (the function words of a language are its most
frequent and most distinctive tokens, so a handful of them decides even a
short question). No model is loaded, so it costs microseconds per text.
`language_near` and `other_language` say whether two texts compared with each
other are in different languages.
"""
from __future__ import annotations

import re
from functools import lru_cache

from transforms.text.scripts import SCRIPT_LANGUAGE, other_scripts, script_of
from transforms.text.stopwords import broad_english_words, stop_words_for
from transforms.text.tokens import tokenize

# Languages the stop-word vote chooses between (alphabetic scripts).
VOTING_LANGUAGES = ("en", "de", "fr", "es", "it", "pt", "nl", "sv", "da", "nb", "fi", "pl",
                    "cs", "ro", "hu", "tr", "id", "ru", "uk", "bg", "el")


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
    return dict(zip(VOTING_LANGUAGES, stop_word_hits(tokenize(text[:2000]))))


# Scripts that decide the language alone (no vote)
_ONE_LANGUAGE = {"hangul": "ko", "arabic": "ar", "hebrew": "he", "greek": "el", **SCRIPT_LANGUAGE}


@lru_cache(maxsize=4096)
def detect_language(text: str) -> str:
    """ISO 639-1 code of the text's language; "en" when nothing says otherwise."""
    script = script_of(text)
    if script == "cjk":
        return "ja" if any(0x3040 <= ord(c) < 0x3100 for c in text[:2000]) else "zh"
    if script in _ONE_LANGUAGE:
        return _ONE_LANGUAGE[script]
    votes = _votes(text)
    best, best_hits = "en", 0
    for lang, hits in votes.items():
        if script == "cyrillic" and lang not in _CYRILLIC_VOTERS:
            continue
        if hits > best_hits:
            best, best_hits = lang, hits
    if best_hits == 0 and script == "latin":
        return _by_letters(text[:2000], _OWN_LETTERS) or "en"
    if best_hits == 0 and script == "cyrillic":  # no stop word: still not English
        return "uk" if any(c in _UKRAINIAN_LETTERS for c in text[:2000].lower()) else "ru"
    if best != "en" and best_hits == 1 and script == "latin" and _english_looking_vote(text, best):
        return "en"
    if best != "en":
        if votes["en"] >= best_hits:  # English's hits; ties go to English
            return "en"
        tied = [lang for lang, hits in votes.items() if hits == best_hits]
        if len(tied) > 1 and script == "latin":  # "za" is Polish and Czech
            return _by_letters(text[:2000], tied) or best
    return best


def _english_looking_vote(text: str, lang: str) -> bool:
    """A plain ASCII sentence of three words or more whose one stop word of
    `lang` is also an English word (in the stop-words package's broad English
    list): the Czech "take" of "Refunds take 5-7 business days.", the Italian
    "come" of "Come back tomorrow." That is no evidence against English, the
    common case; the German "die" of "Die Garantie gilt 24 Monate." is."""
    head = text[:2000]
    if not head.isascii():
        return False
    tokens = tokenize(head)
    if sum(1 for t in tokens if t.isalpha()) < 3:
        return False
    theirs, english = stop_words_for(lang), broad_english_words()
    return all(t in english for t in tokens if t in theirs)


# Letters only one voting language writes: they decide a Latin text that holds
# no stop word of any list ("Köprü 30 Ekim 1973 tarihinde trafiğe açıldı.")
_OWN_LETTERS = {"tr": "ğış", "pl": "łąęśźżń", "cs": "řůě", "ro": "ășțş", "hu": "őű", "de": "ß",
                "es": "ñ", "pt": "ãõ", "fr": "œ", "da": "æø"}


# letters Ukrainian writes and Russian and Bulgarian do not
_UKRAINIAN_LETTERS = frozenset("іїєґ")


def _by_letters(text: str, among) -> str | None:
    """The language among `among` whose own letters the text uses most, if any."""
    lowered = text.lower()
    counts = {lang: sum(lowered.count(c) for c in _OWN_LETTERS[lang])
              for lang in among if lang in _OWN_LETTERS}
    best = max(counts, key=counts.get, default=None)
    return best if best is not None and counts[best] else None


MIN_TOKENS_FOR_LANGUAGE = 8  # a shorter Latin-script text's stop-word vote is not trusted


@lru_cache(maxsize=1024)
def _language_profile(text: str) -> tuple[str, str, frozenset[str]]:
    """(language, main script, other non-Latin scripts), memoised: a case's
    contexts are profiled once however many answers they check."""
    return detect_language(text), script_of(text), other_scripts(text)


def _enough_words(text: str) -> bool:
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
    vote to tell (a Spanish answer to an English reference), or a short answer
    with strong evidence of its language (`_short_and_foreign`). Two texts that
    `detect_language` reads as one language never differ: its majority script
    and words decide, so an English text quoting "Пётр Ильич Чайковский" or
    "Αλέξανδρος ο Μέγας" stays English, and the pair is never (en, en)."""
    a_lang, a_main, a_other = _language_profile(answer)
    r_lang, r_main, r_other = _language_profile(reference)
    if a_lang == r_lang:
        return None
    if a_other != r_other:
        return a_lang, r_lang
    if not a_other and a_main != r_main and "other" not in (a_main, r_main):
        return a_lang, r_lang  # "我们不知道。" is too short for other_scripts alone
    if a_main == r_main == "latin" and not a_other and a_lang != r_lang \
            and _enough_words(reference) and _votes_apart(reference, r_lang, a_lang) \
            and (_votes_apart(answer, a_lang, r_lang) if _enough_words(answer)
                 else _short_and_foreign(answer, a_lang, r_lang, reference)):
        return a_lang, r_lang
    return None


# A word in lower case with a letter English writes only in loanwords ("eröffnet",
# "abrió", "été"): evidence of another language, like one of its stop words.
_ACCENTED = frozenset("àáâãäåçèéêëìíîïñòóôõöøùúûüýÿßăąćčďęěğıłńňőœřśşšţťůűźżžș")


def _short_and_foreign(answer: str, lang: str, other: str, reference: str) -> bool:
    """A text too short for the plain vote ("Ja, das stimmt.", "Se abrió en
    1973.") is in `lang`, not in the reference's `other`, only on strong
    evidence: no stop word of `other` at all, and at least MIN_LANGUAGE_VOTES
    words of `lang` -- its stop words, and one lower-case word with an accented
    letter -- that the reference does not use and that are no part of a name
    (the "de" of "La Casa de Papel", "von der" of "Ursula von der Leyen" sit
    between capitalised words), one of them longer than two letters. A name, a figure, "yes" or a
    quoted title gives no such evidence: the answer is then not told apart.
    A short answer read as English never is: its function words ("was",
    "in") are other languages' too, and contexts of names and figures (a
    track list) vote for anything; an English answer is the common case."""
    words = [m.group() for m in _WORD.finditer(answer[:400])]
    if lang == "en" or _votes(answer).get(other, 0) or len(words) > MIN_TOKENS_FOR_LANGUAGE:
        return False
    mine = stop_words_for(lang)
    known = set(tokenize(reference[:20000]))
    evidence, accented, longer = 0, False, False
    for i, word in enumerate(words):
        low = word.lower()
        if low in known or _in_name(words, i, mine):
            continue
        if low in mine:
            evidence += 1
            longer = longer or len(low) > 2
        elif not accented and word.islower() and any(c in _ACCENTED for c in low):
            accented = longer = True
            evidence += 1
    # two-letter function words alone ("et al.", "per se") are Latin in English too
    return evidence >= MIN_LANGUAGE_VOTES and longer


_WORD = re.compile(r"[^\W_]+(?:['’\-.,][^\W_]+)*")  # figures too: no name runs through one


def _in_name(words: list[str], i: int, particles: frozenset[str]) -> bool:
    """The word is capitalised (past the first), or one of the lower-case
    particles between two capitalised words ("de la" in "Rue de la Paix", "von
    der" in "Ursula von der Leyen"). (A sentence's first word may be a stop
    word opening a title, "La Casa de Papel": one word is too little evidence.)"""
    if i and words[i][:1].isupper():
        return True
    left, right = i - 1, i + 1
    while left >= 0 and words[left].lower() in particles and not words[left][:1].isupper():
        left -= 1
    while right < len(words) and words[right].lower() in particles and not words[right][:1].isupper():
        right += 1
    return left >= 0 and right < len(words) and words[left][:1].isupper() \
        and words[right][:1].isupper()
