"""Shared fixtures: small case files written with pyarrow, Beam options."""
from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "support")


def write_cases(path: str, rows: list[dict], schema: pa.Schema | None = None,
                row_group_size: int | None = None) -> str:
    table = pa.Table.from_pylist(rows, schema=schema)
    pq.write_table(table, path, row_group_size=row_group_size)
    return path


@pytest.fixture
def in_memory_options() -> PipelineOptions:
    return PipelineOptions(["--runner=FnApiRunner"])


SAMPLE_ROWS = [
    {"case_id": "c1", "question": "How long is the refund window?",
     "expected_answer": "Refunds are accepted within 30 days of delivery.",
     "contexts": ["Refunds are accepted within 30 days of delivery for unused items."],
     "answer": "Refunds are accepted within 30 days of delivery.", "suite": "returns",
     "tags": ["quality:exact"]},
    {"case_id": "c2", "question": "What does the Pro plan cost per month?",
     "expected_answer": "The Pro plan costs $12 per month.",
     "contexts": ["The Pro plan costs $12 per month, billed monthly."],
     "answer": "The Pro plan costs $99 per month and includes a free phone.", "suite": "billing",
     "tags": []},
    {"case_id": "c3", "question": "Can I change my email address?",
     "expected_answer": None, "contexts": None,
     "answer": "Yes, please open Settings and choose Email. Happy to help!", "suite": "accounts",
     "tags": []},
    {"case_id": "c4", "question": "Do you ship to Canada?",
     "expected_answer": "Yes, we ship to Canada in 5 to 7 business days.",
     "contexts": ["We ship to Canada and Mexico; delivery takes 5 to 7 business days."],
     "answer": None, "suite": "shipping", "tags": []},
]

FAQ_ROWS = [
    {"question": "How long do I have to request a refund?",
     "answer": "Refunds are accepted within 30 days of delivery."},
    {"question": "How much is the Pro plan?", "answer": "The Pro plan costs $12 per month."},
    {"question": "Which countries do you ship to?",
     "answer": "We ship to the US, Canada and Mexico."},
]


@pytest.fixture(scope="module", autouse=True)
def _one_chromium_per_module():
    """The module's browser tests share a Chromium process (each `with
    Browser()` block still has a fresh browser context of its own)."""
    from tests import browser
    with browser.shared():
        yield
