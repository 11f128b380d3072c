"""Coverage metrics: does the answer state what it should?

Length-robust by construction (recall, not precision or overlap ratios), so
a long correct answer is not penalised for saying more, and language-aware
(stop words and stemmer of the text's language, CJK by character, figures
and dates compared by value: "1,5 Millionen" = "1.5 million" = "1500000").

- reference_coverage(answer, reference): the share of the reference's content
  words (stems) and figures/dates that the answer states (a figure or date found
  by value brings the words it is written with: "15.05.1935" states "15 мая 1935"). A wrong number,
  date or name drops a reference fact; an evasive, restating or partly
  relevant answer states few of them.
- key_fact_recall(question, answer, contexts): the same without a reference.
  The context sentences that best match the question stand in for it: the
  answer's coverage of the new words (not already in the question) of the
  best-covered of those sentences. Restating the question covers nothing new;
  answering another aspect covers other sentences.
"""
from __future__ import annotations

from typing import Sequence

from schemas.records import MetricResult, is_blank
from transforms.score.facts.sentences import split_sentences
from transforms.score.facts.values import prepare_text, scan_values, value_keys
from transforms.text.languages import detect_language, language_near, other_language
from transforms.text.scripts import UNSEGMENTED, unsegmented
from transforms.text.stemming import stemmer_for
from transforms.text.stopwords import stop_words_for
from transforms.text.tokens import tokenize

VALUE_WEIGHT = 2.0   # a figure or date of the reference counts as much as two words
KEY_SENTENCES = 3    # context sentences standing in for the reference
MAX_LISTED = 20


def _content(text: str, lang: str) -> set[str]:
    stops, stem = stop_words_for(lang), stemmer_for(lang)
    return {stem(t) for t in tokenize(text) if t not in stops}


def _values(text: str, lang: str | None = None) -> set[str]:
    """Normal forms of the text's figures and dates (with what a date implies)."""
    return value_keys(text, lang)


def reference_coverage(answer: str | None, reference: str | None) -> MetricResult:
    if answer is None:
        return MetricResult.null("no answer")
    if is_blank(reference):
        return MetricResult.null("no expected_answer")
    lang = detect_language(reference)
    prepared = prepare_text(reference)
    temporal, numbers = scan_values(prepared, unique=True)
    anchors = (*temporal, *numbers)
    ref_values = {a.norm: a.keys for a in anchors}
    if unsegmented(answer, reference):  # words cannot be matched; figures and dates can
        return _values_only(answer, ref_values, UNSEGMENTED)
    other = other_language(answer, reference)
    if other is not None:
        return _values_only(answer, ref_values, f"the answer is in {other[0]}, the expected "
                                                f"answer in {other[1]}")
    wanted = _content(reference, lang)
    if not wanted and not ref_values:
        return MetricResult.null("reference has no content words")
    got = _content(answer, lang)
    got_values = _values(answer, language_near(answer, lang)) if ref_values else set()
    found_values = [norm for norm, keys in ref_values.items() if set(keys) & got_values]
    # the words a found figure or date is written with are found with it: an answer
    # saying "15.05.1935" states the "15 мая 1935" of the reference, words and all
    found_words = (wanted & got) | (wanted & _words_of(prepared, anchors, set(found_values), lang))
    total = len(wanted) + VALUE_WEIGHT * len(ref_values)
    score = (len(found_words) + VALUE_WEIGHT * len(found_values)) / total
    return MetricResult(score, {
        "words": len(wanted), "words_found": len(found_words),
        "values": sorted(ref_values)[:MAX_LISTED], "values_found": sorted(found_values)[:MAX_LISTED],
        "missing": sorted(wanted - found_words)[:MAX_LISTED]})


def _words_of(text: str, anchors, norms: set[str], lang: str) -> set[str]:
    """The content words (stems) of the anchors of `text` whose value is in `norms`."""
    return set().union(*(_content(text[a.start:a.end], lang) for a in anchors if a.norm in norms))


def _values_only(answer: str, ref_values: dict, why: str) -> MetricResult:
    """Coverage of the reference's figures and dates alone: across languages,
    words cannot be matched, but "30 días" states the "30 days" of the reference."""
    if not ref_values:
        return MetricResult.null(f"{why}: no figures or dates to compare")
    got = _values(answer)
    if not got:  # nothing comparable was said: unknown, not 0
        return MetricResult.null(f"{why}: the answer states no figure or date to compare")
    found = [norm for norm, keys in ref_values.items() if set(keys) & got]
    return MetricResult(len(found) / len(ref_values), {
        "compared": f"figures and dates only ({why})",
        "values": sorted(ref_values)[:MAX_LISTED], "values_found": sorted(found)[:MAX_LISTED]})


def key_fact_recall(question: str, answer: str | None,
                    contexts: Sequence[str] | None) -> MetricResult:
    if answer is None:
        return MetricResult.null("no answer")
    usable = [c for c in (contexts or ()) if not is_blank(c)]
    if not usable:
        return MetricResult.null("no contexts")
    if unsegmented(question, answer, *usable):
        return MetricResult.null(UNSEGMENTED)
    lang = language_near(question, detect_language(usable[0])) if question \
        else detect_language(usable[0])
    asked = _content(question or "", lang)
    if not asked:
        return MetricResult.null("question has no content words")
    ranked = []
    for ctx in usable:
        for sentence in split_sentences(ctx):
            words = _content(sentence, lang)
            new = words - asked
            hits = len(words & asked)
            if hits and new:
                ranked.append((hits / len(asked), sentence, new))
    if not ranked:
        return MetricResult.null("no context sentence matches the question")
    ranked.sort(key=lambda r: -r[0])
    got = _content(answer, lang)
    best = max(((len(new & got) / len(new), match, sentence)
                for match, sentence, new in ranked[:KEY_SENTENCES]), key=lambda r: r[0])
    return MetricResult(best[0], {"key_sentence": best[2][:200],
                                  "question_match": round(best[1], 3)})


def novelty(question: str, answer: str) -> float | None:
    """Share of the answer's content words that are not the question's own
    (None when the answer has none): near 0 for an answer restating the question."""
    lang = detect_language(question or answer)
    said = _content(answer, lang)
    if not said:
        return None
    return len(said - _content(question or "", lang)) / len(said)
