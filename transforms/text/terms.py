"""A text's content words and stemmed terms, in its language: what relevance,
completeness and keyword metrics compare."""
from __future__ import annotations

from transforms.text.languages import detect_language
from transforms.text.stemming import stemmer_for
from transforms.text.stopwords import stop_words_for
from transforms.text.tokens import shared_memo, tokenize


def keywords(text: str) -> list[str]:
    """Content words: tokens that are not stop words of the text's language
    (English: evalbeam's list; others: the `stop-words` package), in order, unique."""
    stops = stop_words_for(detect_language(text))
    seen: dict[str, None] = {}
    for tok in tokenize(text):
        if tok not in stops and tok not in seen:
            seen[tok] = None
    return list(seen)


def terms(text: str, lang: str | None = None) -> list[str]:
    """Stemmed tokens: what relevance and completeness compare, so that a
    question about "refunds" is answered by a text about "refund". The stemmer
    is the text's language's (Porter for English, Snowball for others)."""
    lang = lang or detect_language(text)
    shared = shared_memo()
    if shared is None:
        return _stems(text, lang)
    key = (text, lang)  # tokens are keyed by the text alone
    stems = shared.get(key)
    if stems is None:
        stems = shared[key] = _stems(text, lang)
    return list(stems)


def _stems(text: str, lang: str) -> list[str]:
    stemmer = stemmer_for(lang)
    return [stemmer(t) for t in tokenize(text)]


# Answer words that make no claim a passage could state: a bare "yes" or "no"
# answers the question, and word overlap cannot check it (stop words aside).
POLAR_WORDS = frozenset({"yes", "yeah", "yep", "yup", "nope", "ja", "nein", "oui", "non",
                         "sí", "si", "sim", "não", "nee"})

NO_CONTENT = ("the answer has no content word to look for in the contexts (only stop words, "
              "or a bare yes or no)")


def content_stems(tokens: list[str], lang: str) -> list[str]:
    """The stems of the tokens that could carry a claim: neither stop words of the
    language nor polar words. What the grounding metrics look for in the contexts."""
    stops, stem = stop_words_for(lang), stemmer_for(lang)
    return [stem(t) for t in tokens if t not in stops and t not in POLAR_WORDS]
