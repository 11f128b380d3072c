"""hallucination: how much of the answer its contexts do not support.

    hallucination = 1 − overlap × (1 − S_facts)

- overlap: the share of the answer's distinct content n-grams that occur in
  the contexts (`ngram_overlap`: content words stemmed in the contexts'
  language, and pairs of adjacent ones): how much of its wording they hold;
- S_facts: the share of the answer's facts that the contexts do not state
  (0 when it states none). Facts are its figures, amounts, percentages,
  dates and times, compared by value ("10k" = "10,000", "March 3, 2024" =
  "2024-03-03"), and its names (their words adjacent and in order in a
  context), found by the facts layer (`transforms.score.facts`). A figure the
  question states is supported; so is one marked approximate ("about 50 €")
  by a context figure within 5%.

An answer in another language than its contexts shares no words with them:
its hallucination is S_facts over its figures, dates and names (names in the
contexts' script), and null when it states none.

Each part earns its place on the public benchmark (validation/public/),
measured by `python bench/ablate_grounding.py` (VALIDITY.md): subject-verb-
object claims, figure-name pairings, polarity flips, list items, per-sentence
support and a fixed 0.2 drift penalty were measured there and dropped, as
they did not raise the sets' AUC.

Regex-and-set based and linear in the text length: a megabyte answer is
scored in about a second.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Iterable, Sequence

from schemas.records import MetricResult, is_blank
from transforms.score.facts.names import name_tokens
from transforms.score.facts.support import checked_facts
from transforms.score.facts.values import value_keys
from transforms.text.languages import detect_language, other_language
from transforms.text.scripts import UNSEGMENTED, unsegmented
from transforms.text.terms import NO_CONTENT, content_stems
from transforms.text.tokens import tokenize

# Facts listed in the details: enough to see what went wrong, bounded so a
# huge answer does not produce a huge output row.
MAX_LISTED = 50


def _ngrams(stems: list[str]) -> set:
    return set(stems) | set(zip(stems, stems[1:]))


def ngram_overlap(answer: str, contexts: Sequence[str]) -> float | None:
    """Share of the answer's distinct content n-grams that occur in the contexts.

    Content words are `tokenize` tokens minus the stop words of the contexts'
    language, stemmed in it (Porter for English); the n-grams are the unigrams
    and the bigrams of adjacent content words (stop words removed first, so
    "price of the plan" gives ("price", "plan")). With A the answer's set of
    distinct unigrams and bigrams and C that of the contexts joined by
    newlines: overlap = |A ∩ C| / |A|. None when the answer has no content words
    (only stop words, or a bare yes or no).
    """
    lang, context_grams = _context_grams(tuple(contexts))
    answer_grams = _ngrams(content_stems(tokenize(answer), lang))
    if not answer_grams:
        return None
    return len(answer_grams & context_grams) / len(answer_grams)


@lru_cache(maxsize=256)
def _context_grams(contexts: tuple[str, ...]) -> tuple[str, frozenset]:
    """The contexts' language (of their beginnings, as their index reads them)
    and n-grams, memoised: every bot answering a case shares them."""
    lang = detect_language(" ".join(c[:500] for c in contexts))
    return lang, frozenset(_ngrams(content_stems(tokenize("\n".join(contexts)), lang)))


class _ReferenceFacts:
    """What the expected answers state, scanned only when an unsupported fact
    needs it (most rows have none: no scan of the references on the hot path)."""

    def __init__(self, references: Sequence[str]):
        self._refs = [r for r in references or () if not is_blank(r)]
        self._keys: set[str] | None = None
        self._words: set[str] | None = None

    def value(self, keys: Iterable[str]) -> bool:
        if not self._refs:
            return False
        if self._keys is None:
            self._keys = set().union(*map(value_keys, self._refs))
        return any(k in self._keys for k in keys)

    def name(self, text: str) -> bool:
        """Every word of the name is in an expected answer."""
        if not self._refs:
            return False
        if self._words is None:
            self._words = set().union(*map(name_tokens, self._refs))
        return all(t in self._words for t in name_tokens(text))


def answer_facts(answer: str, contexts: Sequence[str], question: str = "",
                 references: Sequence[str] = (), other: tuple[str, str] | None = None
                 ) -> list[dict]:
    """The answer's figures, dates, times and names, each with whether the
    contexts (or, for a figure, the question) support it; `in_expected_answer`
    marks an unsupported one that an expected answer states."""
    stated = _ReferenceFacts(references)
    facts = []
    for checked, keys in checked_facts(answer, tuple(contexts), question, other):
        row = dict(checked)
        if not row["supported"] and (stated.name(row["text"]) if keys is None
                                     else stated.value(keys)):
            row["in_expected_answer"] = True
        facts.append(row)
    return facts


def hallucination(answer: str | None, contexts: Sequence[str] | None,
                  question: str | None = None, references: Sequence[str] = ()) -> MetricResult:
    """Hallucination risk in [0, 1]: 1 − overlap × (1 − S_facts) (module docstring).

    Null when there are no contexts to check against ("no contexts"), the
    answer is empty ("empty answer") or it has nothing to look for: no
    content word (only stop words, or a bare yes or no, as `groundedness`)
    and no figure, date or name. `details["n_unsupported_facts"]` counts
    the unsupported figures, dates and names that the expected answers
    (`references`) do not state either: what the `unsupported_facts` metric
    reports. The score itself is measured against the contexts (and the
    question) only: a fact the contexts lack is a hallucination risk of the
    answer however true it is.
    """
    usable = [c for c in (contexts or ()) if not is_blank(c)]
    if not usable:
        return MetricResult.null("no contexts")
    if is_blank(answer):
        return MetricResult.null("empty answer")
    no_words = unsegmented(answer, _joined(tuple(usable)))
    other = None if no_words else other_language(answer, _joined(tuple(usable)))
    facts = answer_facts(answer, usable, question or "", references, other)
    unsupported = [f for f in facts if not f["supported"]]
    s_facts = len(unsupported) / len(facts) if facts else 0.0
    overlap = None if other or no_words else ngram_overlap(answer, usable)
    details = {
        "anchors": facts[:MAX_LISTED],
        "unsupported": unsupported[:MAX_LISTED],
        "n_anchors": len(facts),
        "n_unsupported": len(unsupported),
        "n_unsupported_facts": sum(1 for f in unsupported if not f.get("in_expected_answer")),
        "overlap": overlap,
        "s_facts": s_facts,
    }
    if no_words:  # Thai: its words cannot be compared, its figures and dates can
        if not facts:
            return MetricResult.null(UNSEGMENTED)
        details["compared"] = f"figures, dates and names only ({UNSEGMENTED})"
        return MetricResult(s_facts, details)
    if other:
        if not facts:
            return MetricResult.null(f"the answer is in {other[0]}, the contexts in {other[1]}: "
                                     "it states no figure, date or name to check")
        details["compared"] = (f"figures, dates and names only (the answer is in {other[0]}, "
                               f"the contexts in {other[1]})")
        return MetricResult(s_facts, details)
    if not facts:
        if overlap is None:  # nothing a passage could state: no guess either way
            return MetricResult.null(NO_CONTENT)
        details["note"] = "no figures, dates or names"
    # facts without content words ("$5"): the facts alone decide
    return MetricResult(1.0 - (1.0 if overlap is None else overlap) * (1.0 - s_facts), details)


@lru_cache(maxsize=256)
def _joined(contexts: tuple[str, ...]) -> str:
    return "\n".join(contexts)


def unsupported_facts(result: MetricResult) -> MetricResult:
    """The count of the answer's facts that neither the contexts nor an expected
    answer support, from a hallucination result (a count, lower is better; null
    when it is null)."""
    if result.value is None:
        return MetricResult.null(result.error or "not computed")
    facts = [r for r in result.details.get("unsupported", ()) if not r.get("in_expected_answer")]
    return MetricResult(float(result.details.get("n_unsupported_facts", 0)),
                        {"facts": facts[:MAX_LISTED]})
