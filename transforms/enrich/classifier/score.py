"""The `grounding_classifier` metric, SummaC-style, from a GroundingReading.

For each sentence, its support is the best P(supported) over every chunk of
every context (a sentence needs one passage that states it); the answer
scores its least supported sentence (one invented claim is enough to make an
answer ungrounded). Details list every checked sentence with its support,
the chunk that supports it best and, with a contradiction label, the highest
P(contradicted) over the chunks.
"""
from __future__ import annotations

from typing import Sequence

from schemas.records import MetricResult, Turn
from transforms.enrich.classifier.reading import ERROR, GROUNDING, SKIP, GroundingReading
from transforms.remote.budget import BUDGET_REACHED

from schemas.reasons import NO_CLASSIFIER  # noqa: F401 (the rules read it too)
SHOWN = 200  # characters of a sentence quoted in details


def best_support(support: Sequence[float]) -> tuple[float, int]:
    """(the highest support over the chunks, the first chunk that has it)."""
    best = max(range(len(support)), key=lambda i: (support[i], -i))
    return support[best], best


def least_supported(per_sentence: Sequence[float]) -> tuple[float, int]:
    """(the lowest sentence support, the first sentence that has it)."""
    worst = min(range(len(per_sentence)), key=lambda i: (per_sentence[i], i))
    return per_sentence[worst], worst


def grounding_classifier(reading: GroundingReading) -> MetricResult:
    """min over sentences of (max over chunks of P(supported))."""
    if not reading.sentences:
        return MetricResult.null("the answer has no sentence to check")
    if not reading.chunk_ids:
        return MetricResult.null("the contexts have no text to check against")
    capped = [v.error for row in reading.verdicts for v in row
              if v.error and v.error.startswith(BUDGET_REACHED)]
    if capped:  # a spend cap, not a failure: said as such
        return MetricResult.null(capped[0])
    failed = reading.failure()
    if failed:
        return MetricResult.null(failed)
    rows, supports = [], []
    for sentence, verdicts in zip(reading.sentences, reading.verdicts):
        support, best = best_support([v.support for v in verdicts])
        supports.append(support)
        row = {"sentence": sentence[:SHOWN], "support": round(support, 6),
               "best_chunk": reading.chunk_ids[best]}
        contradictions = [v.contradiction for v in verdicts if v.contradiction is not None]
        if contradictions:
            row["contradiction"] = round(max(contradictions), 6)
        rows.append(row)
    value, worst = least_supported(supports)
    details = {"sentences": rows, "least_supported": worst,
               "checked_sentences": len(rows), "chunks": len(reading.chunk_ids),
               "pairs": len(rows) * len(reading.chunk_ids)}
    if reading.total_sentences > len(rows):
        details["unchecked_sentences"] = reading.total_sentences - len(rows)
    if "contradiction" in rows[0]:  # sentences a passage contradicts more than any supports
        details["contradicted_sentences"] = [i for i, r in enumerate(rows)
                                             if r["contradiction"] > r["support"]]
    return MetricResult(value, details)


def score(turn: Turn, opts, side=None) -> MetricResult:
    """The metric for a Turn (null with the reason when there is no reading)."""
    if turn.features.get(SKIP):  # not asked for this row (decided offline)
        return MetricResult.null(turn.features[SKIP])
    reading = turn.features.get(GROUNDING)
    if reading is None:
        return MetricResult.null(turn.features.get(ERROR, NO_CLASSIFIER))
    return grounding_classifier(reading)
