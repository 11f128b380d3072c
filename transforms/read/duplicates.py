"""Duplicate case ids, through a keyed combine of the cases already read.

The ids are spread over a fixed number of buckets by a stable hash, and each
bucket's ids travel as one compact byte string (length-prefixed UTF-8), not as
one keyed element per id. Why: a `CombinePerKey(sum)` per id made every id a
key, and Beam keeps up to 1,000,000 keys of a `sum` combine per worker before
it flushes, and the FnApiRunner's shuffle holds each key as a Python object in
the runner process; at 1 M cases that was the growth of BENCHMARKS.md §1. Here
a worker holds one byte string per bucket, a shuffle moves about 4 bytes more
than the ids themselves, and only one bucket's ids are ever decoded at once.
No worker holds all ids on a cluster (the buckets are keys), and the input is
not read again. Only ids counted more than once come out.
"""
from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Iterable, Iterator

import apache_beam as beam

BUCKETS = 1024
_LENGTH_BYTES = 4


def _utf8(case_id: str) -> bytes:
    """The id's bytes; surrogatepass so that any str round-trips exactly."""
    return case_id.encode("utf-8", "surrogatepass")


def bucket_of(case_id: str) -> int:
    """A stable bucket (the same in every worker process, unlike hash())."""
    return zlib.crc32(_utf8(case_id)) % BUCKETS


def _keyed(case) -> tuple[int, str]:
    return bucket_of(case.case_id), case.case_id


def pack_id(packed: bytearray, case_id: str) -> bytearray:
    """Append one id to a bucket's byte string: 4-byte length, then UTF-8."""
    raw = _utf8(case_id)
    packed += len(raw).to_bytes(_LENGTH_BYTES, "little")
    packed += raw
    return packed


def unpack_ids(packed: bytes | bytearray) -> Iterator[str]:
    """The ids of a byte string written by pack_id, in order."""
    view, at = memoryview(packed), 0
    while at < len(view):
        size = int.from_bytes(view[at:at + _LENGTH_BYTES], "little")
        at += _LENGTH_BYTES
        yield bytes(view[at:at + size]).decode("utf-8", "surrogatepass")
        at += size


def repeated_ids(packed: bytes | bytearray) -> list[tuple[str, int]]:
    """(id, count) for every id that occurs more than once, sorted by id."""
    counts = Counter(unpack_ids(packed))
    return sorted((cid, n) for cid, n in counts.items() if n > 1)


class BucketIdsFn(beam.CombineFn):
    """One bucket's ids as one growing byte string; extracts the repeated ones."""

    def create_accumulator(self) -> bytearray:
        return bytearray()

    def add_input(self, packed: bytearray, case_id: str) -> bytearray:
        return pack_id(packed, case_id)

    def merge_accumulators(self, accumulators: Iterable[bytearray]) -> bytearray:
        merged = bytearray()
        for packed in accumulators:
            merged += packed
        return merged

    def compact(self, packed: bytearray) -> bytes:
        return bytes(packed)

    def extract_output(self, packed: bytearray) -> list[tuple[str, int]]:
        return repeated_ids(packed)


class FindDuplicateIds(beam.PTransform):
    """cases -> (case_id, count) for every id that occurs more than once."""

    def expand(self, cases):
        return (cases
                | "IdBuckets" >> beam.Map(_keyed)
                | "CountIds" >> beam.CombinePerKey(BucketIdsFn())
                | "Repeated" >> beam.FlatMap(lambda bucket_ids: bucket_ids[1]))
