"""What the classifier stage attaches to a Turn for the metric to read."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the classifier's HTTP client stays out of runs without it
    from transforms.enrich.classifier.api import PairVerdict

GROUNDING = "classifier:grounding"  # feature: a GroundingReading
ERROR = "classifier:error"          # feature: why the turn could not be read at all
SKIP = "classifier:skip"            # feature: why the classifier was not asked (cascade)


@dataclass(slots=True)
class GroundingReading:
    """Every checked sentence against every chunk of the contexts."""
    sentences: tuple[str, ...]
    total_sentences: int
    chunk_ids: tuple[str, ...]
    verdicts: list[list[PairVerdict]]  # [sentence][chunk]

    def failure(self) -> str | None:
        """Why some pairs were not classified (the first reason), or None; a
        spend cap's refusal is not a failure (the manifest says the cap was hit)."""
        from transforms.remote.budget import BUDGET_REACHED
        failed = [v.error for row in self.verdicts for v in row
                  if v.error and not v.error.startswith(BUDGET_REACHED)]
        if not failed:
            return None
        pairs = len(self.sentences) * len(self.chunk_ids)
        return f"{len(failed)} of {pairs} pairs not classified: {failed[0]}"[:500]


def classifier_failure(features) -> str | None:
    """Why a turn's classifier reading is missing or incomplete, or None."""
    if features.get(ERROR):
        return features[ERROR]
    reading = features.get(GROUNDING)
    return reading.failure() if reading is not None else None
