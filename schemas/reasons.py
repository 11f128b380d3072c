"""Null reasons that say a metric was not asked for a row (no judge or classifier
configured, outside the judge's sample), shared by the stages that write them and
the verdict rules that read them. Plain strings at the bottom of the import graph:
the rules are imported by `evalbeam run --help`, which must not import the judge."""
from __future__ import annotations

NO_JUDGE = "no judge configured"
NO_CLASSIFIER = "no classifier configured"
NOT_SAMPLED = "not sampled"
NOT_ASKED = frozenset({NO_JUDGE, NO_CLASSIFIER, NOT_SAMPLED})
