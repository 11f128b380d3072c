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
