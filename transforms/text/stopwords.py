"""Stop words per language: the function words a metric leaves out.

English is evalbeam's own list (transforms/data/stop_words_en.txt), so English
scores do not move; other languages come from the maintained `stop-words`
package, Modern Greek from `stopwordsiso` (stop-words has Ancient Greek).
"""
from __future__ import annotations

from functools import lru_cache
from importlib import resources


@lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    """English stop words shipped with the package (one per line)."""
    data = resources.files("transforms").joinpath("data/stop_words_en.txt").read_text("utf-8")
    return frozenset(w.strip() for w in data.splitlines() if w.strip() and not w.startswith("#"))


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
        return stop_words()
    return _package_stop_words(lang)


@lru_cache(maxsize=None)
def stop_words_of(*langs: str) -> frozenset[str]:
    """The union of several languages' stop words, built once per combination
    (hot paths ask for it per sentence)."""
    return frozenset().union(*(stop_words_for(lang) for lang in langs))


def broad_english_words() -> frozenset[str]:
    """The stop-words package's English list (1,333 words, with common content
    words such as "take" and "come"): a word in it may well be English, so it
    is no evidence that a sentence is in another language."""
    return _package_stop_words("en")
