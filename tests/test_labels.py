"""The optional `label` column: parsed strictly, copied to results/, never part of the id."""
from __future__ import annotations

import math

import pytest

from schemas.cases import RowProblem, derive_case_id, parse_label, source_columns, to_case


@pytest.mark.parametrize("raw, want", [
    ("PASS", "PASS"), ("fail", "FAIL"), (" Warn ", "WARN"), (1, "1.0"), (0, "0.0"),
    (0.75, "0.75"), ("0.5", "0.5"), (None, None)])
def test_labels_are_verdicts_or_numbers_in_unit_interval(raw, want):
    assert parse_label(raw) == want


@pytest.mark.parametrize("raw", ["good", "1.5", -0.1, math.nan, True, [1]])
def test_bad_labels_are_row_problems_not_crashes(raw):
    columns = source_columns({})
    result = to_case({"question": "q?", "label": raw}, columns, "f#0")
    assert isinstance(result, RowProblem)
    assert "label" in result.message


def test_label_does_not_change_the_derived_case_id():
    columns = source_columns({})
    plain = to_case({"question": "q?", "answer": "a"}, columns, "f#0")
    labelled = to_case({"question": "q?", "answer": "a", "label": "PASS"}, columns, "f#0")
    assert plain.case_id == labelled.case_id == derive_case_id({"question": "q?", "answer": "a"})
    assert labelled.label == "PASS" and plain.label is None
