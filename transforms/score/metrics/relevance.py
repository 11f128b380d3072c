"""Question-answer relevance without a model: TF-IDF cosine, Jaccard, completeness.

The IDF table is learnt from the corpus being evaluated (document frequencies
are accumulated by the pipeline and handed to every worker as a side input),
so rare, topical words weigh more than words every question shares.
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Iterable, Mapping

from schemas.records import MetricResult
from transforms.text.languages import detect_language
from transforms.text.scripts import UNSEGMENTED, unsegmented
from transforms.text.stemming import stemmer_for
from transforms.text.terms import keywords, terms
from transforms.text.tokens import document_frequencies

# How many keywords completeness lists in its details.
MAX_LISTED_KEYWORDS = 20


def document_terms(text: str) -> set[str]:
    """The distinct tokens of one document: what it adds to the document frequencies."""
    return set(terms(text))


class IdfTable:
    """Smoothed inverse document frequencies, idf(t) = ln((1 + N) / (1 + df(t))) + 1.

    scikit-learn's `smooth_idf` formula: as if one extra document contained
    every term, so no idf is infinite and an unseen term (df = 0) gets the
    largest weight, ln(1 + N) + 1. Only N and the integer document
    frequencies are stored (a plain dict), which keeps the side input small
    and cheap to pickle; idf values are computed on lookup.
    """

    __slots__ = ("n_docs", "df")

    def __init__(self, n_docs: int, df: dict[str, int]) -> None:
        self.n_docs = n_docs
        self.df = df

    @classmethod
    def from_document_frequencies(cls, df: Mapping[str, int], n_docs: int) -> "IdfTable":
        """Build from df counts (documents containing each term) over N documents."""
        n_docs = int(n_docs)
        if n_docs < 0:
            raise ValueError(f"n_docs must be >= 0, got {n_docs}")
        table: dict[str, int] = {}
        for term, count in df.items():
            count = int(count)
            if count < 0 or count > n_docs:
                raise ValueError(f"document frequency of {term!r} is {count}, outside [0, {n_docs}]")
            if count:
                table[term] = count
        return cls(n_docs, table)

    @classmethod
    def fit(cls, texts: Iterable[str]) -> "IdfTable":
        """Count document frequencies over `texts` (one document each); for tests and small runs."""
        df, n_docs = document_frequencies(document_terms(text) for text in texts)
        return cls(n_docs, dict(df))

    def idf(self, term: str) -> float:
        return math.log((1 + self.n_docs) / (1 + self.df.get(term, 0))) + 1.0

    def __len__(self) -> int:
        return len(self.df)

    def __getstate__(self) -> tuple[int, dict[str, int]]:
        return self.n_docs, self.df

    def __setstate__(self, state: tuple[int, dict[str, int]]) -> None:
        self.n_docs, self.df = state

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IdfTable) and (self.n_docs, self.df) == (other.n_docs, other.df)

    def __repr__(self) -> str:
        return f"IdfTable(n_docs={self.n_docs}, terms={len(self.df)})"


def _tfidf(counts: Counter[str], idf: IdfTable) -> dict[str, float]:
    """Raw term counts weighted by idf and L2-normalised (all idf >= 1, so norm > 0)."""
    weights = {t: c * idf.idf(t) for t, c in counts.items()}
    norm = math.sqrt(sum(w * w for w in weights.values()))
    return {t: w / norm for t, w in weights.items()}


def tfidf_cosine(q_counts: Counter[str], a_counts: Counter[str], idf: IdfTable) -> float:
    if not q_counts or not a_counts:
        return 0.0
    q_vec = _tfidf(q_counts, idf)
    a_vec = _tfidf(a_counts, idf)
    if len(a_vec) < len(q_vec):
        q_vec, a_vec = a_vec, q_vec
    dot = sum(w * a_vec.get(t, 0.0) for t, w in q_vec.items())
    return min(1.0, dot)  # rounding can push a self-similarity to 1 + 1e-16


def lexical_relevance(question: str, answer: str | None, idf: IdfTable) -> MetricResult:
    """(TF-IDF cosine + Jaccard) / 2 between the question's and the answer's tokens.

    Cosine rewards sharing the question's rare words; Jaccard penalises an
    answer that drowns them in unrelated text. Null when the question has no
    tokens; an empty answer is a real 0 ("not relevant").
    """
    if answer is None:
        return MetricResult.null("no answer")
    if unsegmented(question, answer):
        return MetricResult.null(UNSEGMENTED)
    lang = detect_language(question or "")
    q_tokens = terms(question or "", lang)
    if not q_tokens:
        return MetricResult.null("question has no tokens")
    a_tokens = terms(answer, lang)
    q_counts, a_counts = Counter(q_tokens), Counter(a_tokens)
    cosine = tfidf_cosine(q_counts, a_counts, idf)
    q_set, a_set = q_counts.keys(), a_counts.keys()
    jaccard = len(q_set & a_set) / len(q_set | a_set)
    return MetricResult((cosine + jaccard) / 2, {"cosine": cosine, "jaccard": jaccard})


def completeness(question: str, answer: str | None) -> MetricResult:
    """Share of the question's content words (keywords) that the answer mentions.

    A crude "did it address every part of the question" signal. Null when the
    question has no keywords (e.g. only stop words), since there is nothing to cover.
    """
    if answer is None:
        return MetricResult.null("no answer")
    if unsegmented(question, answer):
        return MetricResult.null(UNSEGMENTED)
    wanted = keywords(question or "")
    if not wanted:
        return MetricResult.null("question has no keywords")
    lang = detect_language(question)
    stem = stemmer_for(lang)
    got = set(terms(answer, lang))
    found = [k for k in wanted if stem(k) in got]
    missing = [k for k in wanted if stem(k) not in got]
    return MetricResult(
        len(found) / len(wanted),
        {"found": found[:MAX_LISTED_KEYWORDS], "missing": missing[:MAX_LISTED_KEYWORDS],
         "n_keywords": len(wanted)},
    )
