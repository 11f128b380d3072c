"""Judge a sample: `judge.sample: {per_suite: N, seed: S}`.

The sample is of cases, stratified by suite: in every suite, the N cases
whose seeded hash of the case id is smallest (all of a suite with N or fewer
cases). The hash makes it a uniform random sample without replacement that
does not depend on the order, the sharding or the runner, so a re-run with
the same seed and inputs judges the same rows (and finds their answers in the
call cache). Every bot is judged on the same cases, so bots compare pair by
pair. Rows outside the sample carry null judge metrics with NOT_SAMPLED, and
their summaries are estimates with intervals that account for the sampling
(transforms/stats/intervals.py).
"""
from __future__ import annotations

import hashlib

import apache_beam as beam

from schemas.reasons import NOT_SAMPLED  # noqa: F401 (read by the rules too)

# feature: the row's case is outside the sample. Set on every such row, also on
# one whose judge metrics are null for another reason (decided offline by the
# cascade, a failed bot): the summary leaves it out of the sample's missing.
OUTSIDE_SAMPLE = "judge:outside_sample"


def sample_rank(seed: int, case_id: str) -> int:
    """The case's place in the seeded random order (smaller: sampled first)."""
    digest = hashlib.sha256(f"{seed}\x00{case_id}".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


class SampleCases(beam.PTransform):
    """EvalCases -> the case ids of the sample (per_suite per suite)."""

    def __init__(self, per_suite: int, seed: int):
        super().__init__()
        self._n, self._seed = per_suite, seed

    def expand(self, cases):
        seed = self._seed
        return (cases
                | "RankInSuite" >> beam.Map(
                    lambda c: (c.suite or "", (sample_rank(seed, c.case_id), c.case_id)))
                | "DistinctIds" >> beam.Distinct()  # a repeated case id is one case
                | "SmallestPerSuite" >> beam.combiners.Top.SmallestPerKey(self._n)
                | "SampledIds" >> beam.FlatMap(lambda kv: [cid for _, cid in kv[1]]))
