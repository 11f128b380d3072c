"""Duplicate case ids, found in memory that stays small at any input size.

Counting ids with Count.PerElement would hold every id in a pre-combine table
(Beam allows a million keys per worker for counts) and again in the shuffle.
Instead the main stage only collects 8-byte hashes of the ids (a numpy array
per worker, 8 MB per million rows); the hashes seen more than once go to a
cheap second pass over the input's ids, which counts the real ids exactly, so
a hash collision can never report a false duplicate.
"""
from __future__ import annotations

import hashlib
from array import array
from typing import Iterable, Mapping

import apache_beam as beam
import numpy as np

from transforms.read.cases import Shard, read_valid_cases


def id_hash(case_id: str) -> int:
    """A stable 64-bit hash (Python's hash() is salted per process)."""
    return int.from_bytes(hashlib.blake2b(case_id.encode("utf-8"), digest_size=8).digest(),
                          "little")


class RepeatedHashesFn(beam.CombineFn):
    """64-bit id hashes -> the set of hashes seen more than once."""

    def create_accumulator(self):
        return array("Q")

    def add_input(self, acc: array, h: int) -> array:
        acc.append(h)
        return acc

    def merge_accumulators(self, accs: Iterable[array]) -> array:
        out = array("Q")
        for acc in accs:
            out.extend(acc)
        return out

    def compact(self, acc: array) -> array:
        return acc

    def extract_output(self, acc: array) -> frozenset[int]:
        values, counts = np.unique(np.frombuffer(acc, dtype=np.uint64), return_counts=True)
        return frozenset(int(v) for v in values[counts > 1])


def ids_with_repeated_hash(shard: Shard, columns: Mapping[str, str],
                           repeated: frozenset[int]) -> Iterable[str]:
    """The case ids of a shard's valid rows whose hash was seen more than once."""
    if not repeated:
        return
    for case in read_valid_cases(shard, columns):
        if id_hash(case.case_id) in repeated:
            yield case.case_id


class FindDuplicateIds(beam.PTransform):
    """cases -> (case_id, count) for every id that occurs more than once."""

    def __init__(self, shards: list[Shard], columns: Mapping[str, str]):
        super().__init__()
        self._shards, self._columns = shards, dict(columns)

    def expand(self, cases):
        repeated = (cases | "IdHashes" >> beam.Map(lambda c: id_hash(c.case_id))
                    | "RepeatedHashes" >> beam.CombineGlobally(RepeatedHashesFn()))
        return (cases.pipeline
                | "IdShards" >> beam.Create(self._shards, reshuffle=len(self._shards) > 1)
                | "CandidateIds" >> beam.FlatMap(ids_with_repeated_hash, self._columns,
                                                 beam.pvalue.AsSingleton(repeated))
                | "CountIds" >> beam.combiners.Count.PerElement()
                | "Repeated" >> beam.Filter(lambda kv: kv[1] > 1))
