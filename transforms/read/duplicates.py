"""Duplicate case ids, through a keyed combine of the cases already read.

Each id is counted where its case is read (the runner's combiner lifting
counts per id within a bundle), then the counts of one id meet on the worker
that owns its key: no worker holds all ids, and the input is not read again.
Only ids counted more than once come out.
"""
from __future__ import annotations

import apache_beam as beam


def _one(case) -> tuple[str, int]:
    return case.case_id, 1


def _repeated(id_count: tuple[str, int]) -> bool:
    return id_count[1] > 1


class FindDuplicateIds(beam.PTransform):
    """cases -> (case_id, count) for every id that occurs more than once."""

    def expand(self, cases):
        return (cases
                | "IdOnes" >> beam.Map(_one)
                | "CountIds" >> beam.CombinePerKey(sum)
                | "Repeated" >> beam.Filter(_repeated))
