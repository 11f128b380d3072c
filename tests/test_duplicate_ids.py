"""Duplicate case ids: found exactly, through a combine whose keys stay few."""
from __future__ import annotations

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from schemas.records import EvalCase
from transforms.read import duplicates
from transforms.read.duplicates import (BUCKETS, BucketIdsFn, FindDuplicateIds, bucket_of,
                                        pack_id, repeated_ids, unpack_ids)

ODD_IDS = ["", "a", "é-ü", "名前", "emoji-😀", "\udcff-lone-surrogate", "x" * 70_000, "a\nb"]


def test_ids_round_trip_through_the_packed_bytes_exactly():
    packed = bytearray()
    for cid in ODD_IDS:
        packed = pack_id(packed, cid)
    assert list(unpack_ids(bytes(packed))) == ODD_IDS


def test_repeated_ids_counts_only_ids_seen_more_than_once():
    packed = bytearray()
    for cid in ["b", "a", "b", "c", "b", "a", ""]:
        packed = pack_id(packed, cid)
    assert repeated_ids(packed) == [("a", 2), ("b", 3)]


def test_merged_accumulators_count_ids_from_different_bundles():
    fn = BucketIdsFn()
    one = fn.add_input(fn.add_input(fn.create_accumulator(), "k"), "only-here")
    two = fn.add_input(fn.create_accumulator(), "k")
    merged = fn.merge_accumulators([fn.compact(one), fn.compact(two), fn.create_accumulator()])
    assert fn.extract_output(merged) == [("k", 2)]


def test_bucket_is_stable_and_bounded():
    # crc32, not hash(): the same id lands in the same bucket in every process
    assert bucket_of("case-1") == bucket_of("case-1")
    ids = [f"case-{i}" for i in range(20_000)]
    buckets = {bucket_of(cid) for cid in ids}
    assert buckets <= set(range(BUCKETS)) and len(buckets) == BUCKETS


def _case(cid: str) -> EvalCase:
    return EvalCase(case_id=cid, question="q?", suite="s")


def test_pipeline_finds_every_repeated_id_and_no_other(monkeypatch):
    # few buckets, so that repeated and unique ids share buckets and bundles
    monkeypatch.setattr(duplicates, "BUCKETS", 3)
    ids = [f"c{i}" for i in range(500)] + ["c7", "c7", "c42", "名前", "名前"]
    with TestPipeline() as p:
        found = (p | beam.Create([_case(cid) for cid in ids]) | FindDuplicateIds())
        assert_that(found, equal_to([("c7", 3), ("c42", 2), ("名前", 2)]))


def test_the_shuffle_carries_one_key_per_bucket_not_one_per_id():
    """The memory property: the combine's keys are buckets (at most BUCKETS of them)."""
    keys = {duplicates._keyed(_case(f"id-{i}"))[0] for i in range(100_000)}
    assert len(keys) <= BUCKETS < 100_000
