"""Claim-based hallucination: are the answer's checkable statements in the contexts?

The answer is reduced to *anchors*, the parts of it that can be checked
against the retrieved contexts without a model:

1. numbers (quantities, prices, percentages), normalised so that "10k",
   "10,000", "$10,000" and "10000" are one value and "5%", "5 percent" and
   "5 per cent" another; small spelled-out numbers ("three", "twenty-five",
   "two million") count too;
2. dates normalised to ISO ("March 3, 2024" = "3 March 2024" = "2024-03-03"
   = "Mar 3rd, 2024"), month-years ("2024-03"), years after a preposition
   ("in 2021") and times of day ("9am" = "09:00"); the digits of a date or
   time are not counted again as numbers;
3. assertive claims: subject-verb-object triples around a fact-asserting verb
   ("The Pro plan includes SSO"), where subject and object are the content
   words next to the verb. Hedged sentences ("may", "might", "probably"...)
   and questions assert nothing and give no claims. Nor does a claim none of
   whose words the contexts or the question use ("the underlying idea is
   really quite straightforward"): chatter about something else, which the
   drift gate below weighs, not a statement about the subject to check.
   (A name or figure in it is still checked on its own.)
4. in an answer in another language than its contexts, only the figures,
   dates, times and names: its words cannot match theirs (null when it
   states none of them).

A number or date is supported when the same normal form occurs in any context
(contexts are normalised the same way; a full date in a context also supports
its month-year, its year and its month-day). A claim is supported when some
subject word and some object word (Porter stems) occur within `window` tokens
of each other in one context.

    S_claims = unsupported anchors / anchors   (0 when there are none)

A topic-drift gate catches answers that are about something else entirely
(and so may hold no anchors at all): with `overlap` the share of the answer's
distinct content n-grams found in the contexts (see `ngram_overlap`),
P_drift = 0.2 when overlap < 0.2, else 0.

    hallucination = max(S_claims, P_drift)

Everything is regex-and-set based, linear in the text length, so a megabyte
answer is scored in about a second.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Iterable, Sequence

from schemas.records import MetricResult
from transforms.score.facts.anchors import Anchor
from transforms.score.facts.claims import Claim, extract_claims
from transforms.score.facts.evidence import evidence_for, index_for
from transforms.score.facts.names import name_tokens
from transforms.score.facts.numbers import is_approximate
from transforms.score.facts.values import prepare_text, scan_values, value_keys
from transforms.score.metrics.grounding import check_answer, unique_checks
from transforms.text.languages import language_near, other_language
from transforms.text.scripts import script_of
from transforms.text.stemming import stem as _stem
from transforms.text.stemming import stemmer_for
from transforms.text.stopwords import stop_words
from transforms.text.tokens import tokenize

DEFAULT_WINDOW = 12
DRIFT_THRESHOLD = 0.2
DRIFT_PENALTY = 0.2
# Anchors listed in the details: enough to see what went wrong, bounded so a
# huge answer does not produce a huge output row.
MAX_LISTED = 50


def _content_stems(text: str) -> list[str]:
    stops = stop_words()
    return [_stem(t) for t in tokenize(text) if t not in stops]


def _ngrams(stems: list[str]) -> set:
    return set(stems) | set(zip(stems, stems[1:]))


def ngram_overlap(answer: str, contexts: Sequence[str]) -> float | None:
    """Share of the answer's distinct content n-grams that occur in the contexts.

    Content words are `tokenize` tokens minus stop words, Porter-stemmed; the
    n-grams are the unigrams and the bigrams of adjacent content words (stop
    words removed first, so "price of the plan" gives ("price", "plan")).
    With A the answer's set of distinct unigrams and bigrams and C that of the
    contexts joined by newlines: overlap = |A ∩ C| / |A|. None when the answer
    has no content words (nothing to compare, so no drift can be measured).
    """
    answer_grams = _ngrams(_content_stems(answer))
    if not answer_grams:
        return None
    context_grams = _context_grams(tuple(contexts))
    return len(answer_grams & context_grams) / len(answer_grams)


@lru_cache(maxsize=256)
def _context_grams(contexts: tuple[str, ...]) -> frozenset:
    """The contexts' n-grams, memoised: every bot answering a case (and cases
    that retrieved the same passages) share them."""
    return frozenset(_ngrams(_content_stems("\n".join(contexts))))


def _dedupe_values(anchors: Iterable[Anchor]) -> list[Anchor]:
    """One anchor per value ("$12,000" and "12k" are one): repeating a figure
    does not make it weigh more."""
    seen: dict[str, Anchor] = {}
    for a in anchors:
        seen.setdefault(a.norm, a)
    return list(seen.values())


def _dedupe_claims(claims: Iterable[Claim]) -> list[Claim]:
    seen: dict[tuple, Claim] = {}
    for c in claims:
        key = (frozenset(map(_stem, c.subject)), _stem(c.verb), frozenset(map(_stem, c.obj)))
        seen.setdefault(key, c)
    return list(seen.values())


# What `unsupported_facts` counts: figures, dates and names absent from the
# contexts, the checks precise enough to flag on their own (pairings,
# negations and list items are noisier: they weigh in `hallucination` only).
FACT_KINDS = frozenset({"number", "money", "percent", "date", "time", "entity"})


class _ReferenceFacts:
    """What the expected answers state, scanned only when an unsupported fact
    needs it (most rows have none: no scan of the references on the hot path)."""

    def __init__(self, references: Sequence[str]):
        self._refs = [r for r in references or () if r and r.strip()]
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


def hallucination(answer: str | None, contexts: Sequence[str] | None,
                  window: int = DEFAULT_WINDOW, question: str | None = None,
                  references: Sequence[str] = ()) -> MetricResult:
    """Hallucination risk in [0, 1]: max(unsupported anchor share, topic-drift penalty).

    Null when there are no contexts to check against ("no contexts") or the
    answer is empty ("empty answer"). See the module docstring for the rules.
    `details["n_unsupported_facts"]` counts the unsupported figures, dates and
    names that the expected answers (`references`) do not state either: what
    the `unsupported_facts` metric reports. The score itself is measured
    against the contexts (and the question) only: a fact the contexts lack is
    a hallucination risk of the answer however true it is, while a reviewer
    who wrote the expected answer would not call that fact invented.
    """
    usable = [c for c in (contexts or ()) if c and c.strip()]
    if not usable:
        return MetricResult.null("no contexts")
    if answer is None or not answer.strip():
        return MetricResult.null("empty answer")

    evidence = evidence_for(tuple(usable))
    index = index_for(tuple(usable), question or "")
    sources = _joined(tuple(usable))
    prepared = prepare_text(answer)
    # read in the contexts' language unless the answer clearly is in another one
    temporal, numbers = scan_values(prepared, unique=True, answer=True,
                              lang=language_near(answer, index.lang))
    values = _dedupe_values((*temporal, *numbers))
    # An answer in another language than its contexts ("ja" to "en" passages)
    # cannot be checked word by word: only its figures, dates and names are.
    other = other_language(answer, sources)
    claims = [] if other else _dedupe_claims(extract_claims(answer))
    sources_script = script_of(sources) if other else None

    found: list[dict] = []
    unsupported: list[dict] = []

    def record(kind: str, text: str, norm: str, ok: bool, note: str = "") -> None:
        row = {"kind": kind, "text": text, "normalized": norm, "supported": ok}
        if note:
            row["note"] = note
        found.append(row)
        if not ok:
            unsupported.append(row)

    asked = value_keys(question) if question else set()
    stated = _ReferenceFacts(references)
    for a in values:
        in_contexts = evidence.supports_value(a)
        rounded = not in_contexts and is_approximate(prepared, a) and evidence.supports_roughly(a)
        in_question = not (in_contexts or rounded) and any(k in asked for k in a.keys)
        record(a.kind, a.text, a.norm, in_contexts or rounded or in_question,
               "stated in the question" if in_question else
               "a rounded context figure" if rounded else "")
        if not (in_contexts or in_question) and stated.value(a.keys):
            found[-1]["in_expected_answer"] = True
    claims = [c for c in claims if _topical(c, index)]
    for c in claims:
        norm = f"{'+'.join(c.subject)}|{c.verb}|{'+'.join(c.obj)}"
        record("claim", c.text, norm, evidence.supports_claim(c, window))
    checks = unique_checks(check_answer(answer, index))
    for check in checks:
        if other and (check.kind != "entity" or script_of(check.text) != sources_script):
            continue  # words and names of another script cannot match the contexts'
        if check.kind != "sentence":
            record(check.kind, check.text, check.text.lower(), check.supported, check.note)
            if check.kind == "entity" and not check.supported and stated.name(check.text):
                found[-1]["in_expected_answer"] = True
    if other:
        if not found:
            return MetricResult.null(f"the answer is in {other[0]}, the contexts in {other[1]}: "
                                     "it states no figure, date or name to check")
    elif not found:
        # An answer without figures, names or claims is judged sentence by sentence:
        # an off-topic answer is no longer capped at the drift penalty.
        for check in checks:
            if check.kind == "sentence":
                record(check.kind, check.text, check.text.lower(), check.supported, check.note)

    n_anchors = len(found)
    s_claims = len(unsupported) / n_anchors if n_anchors else 0.0
    overlap = None if other else ngram_overlap(answer, usable)
    p_drift = DRIFT_PENALTY if overlap is not None and overlap < DRIFT_THRESHOLD else 0.0
    facts = [r for r in unsupported if r["kind"] in FACT_KINDS and not r.get("in_expected_answer")]
    details = {
        "anchors": found[:MAX_LISTED],
        "unsupported": unsupported[:MAX_LISTED],
        "n_anchors": n_anchors,
        "n_unsupported": len(unsupported),
        "n_unsupported_facts": len(facts),
        "overlap": overlap,
        "p_drift": p_drift,
        "s_claims": s_claims,
    }
    if not n_anchors:
        details["note"] = "no anchors"
    if other:
        details["compared"] = (f"figures, dates and names only (the answer is in {other[0]}, "
                               f"the contexts in {other[1]})")
    return MetricResult(max(s_claims, p_drift), details)


def _topical(claim: Claim, index) -> bool:
    """Some word of the claim is one the contexts or the question use."""
    stem = stemmer_for(index.lang)
    return any((s := stem(t)) in index.stems or s in index.question_stems
               for t in (*claim.subject, *claim.obj))


@lru_cache(maxsize=256)
def _joined(contexts: tuple[str, ...]) -> str:
    return "\n".join(contexts)


def unsupported_facts(result: MetricResult) -> MetricResult:
    """The count of the answer's facts that neither the contexts nor an expected
    answer support, from a hallucination result (a count, lower is better; null
    when it is null)."""
    if result.value is None:
        return MetricResult.null(result.error or "not computed")
    facts = [r for r in result.details.get("unsupported", ())
             if r["kind"] in FACT_KINDS and not r.get("in_expected_answer")]
    return MetricResult(float(result.details.get("n_unsupported_facts", 0)),
                        {"facts": facts[:MAX_LISTED]})
