"""Stemmers per language: what lets "refunds" meet "refund".

English keeps nltk's Porter stemmer (what rouge-score uses), other languages
nltk's Snowball stemmers, and Korean strips its particles (`korean_stem`).
"""
from __future__ import annotations

from functools import lru_cache

from transforms.text.nltk_stemmers import porter_stemmer_class, snowball_stemmer_class

# ISO code -> nltk Snowball stemmer name (English: Porter, as rouge-score)
SNOWBALL = {"ar": "arabic", "da": "danish", "nl": "dutch", "fi": "finnish", "fr": "french",
            "de": "german", "hu": "hungarian", "it": "italian", "nb": "norwegian",
            "pt": "portuguese", "ro": "romanian", "ru": "russian", "es": "spanish",
            "sv": "swedish"}

# nltk's Porter stemmer (what rouge-score uses), memoised: stemming is hot.
porter_stem = lru_cache(maxsize=1 << 16)(porter_stemmer_class()().stem)


@lru_cache(maxsize=1 << 16)
def stem(token: str) -> str:
    """Porter stem of an ASCII word ("refunds" -> "refund"); other tokens as they are."""
    if 3 < len(token) <= 30 and token.isascii() and token.isalpha():
        return porter_stem(token)
    return token


@lru_cache(maxsize=None)
def _snowball(lang: str):
    return snowball_stemmer_class()(SNOWBALL[lang])


def stemmer_for(lang: str):
    """A function token -> stem for the language (identity when none)."""
    if lang == "en":
        return stem
    if lang in SNOWBALL:
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
