"""Input case contract: canonical columns, column mapping and row validation.

A row either becomes an `EvalCase` or a `RowProblem` with the reason; nothing
is dropped silently.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Mapping

import pyarrow as pa

from schemas.records import EvalCase

REQUIRED_COLUMNS = ("question",)
OPTIONAL_COLUMNS = ("case_id", "expected_answer", "contexts", "answer", "suite", "tags", "label")
# Columns that make up a row's content for its derived id (`label` is a
# reviewer's judgement of the answer, not part of the case: adding labels to a
# file must not change its case ids).
ID_COLUMNS = ("question", "expected_answer", "contexts", "answer", "suite", "tags")
LABEL_VERDICTS = ("PASS", "WARN", "FAIL")
CANONICAL_COLUMNS = REQUIRED_COLUMNS + OPTIONAL_COLUMNS

# Common exports map without configuration (Ragas' names).
RAGAS_COLUMNS = {"user_input": "question", "response": "answer", "reference": "expected_answer",
                 "retrieved_contexts": "contexts"}


# Key of a raw row whose values could not be decoded: (error_type, message).
# Set by the reader (invalid UTF-8, an unreadable data page); such a row is a
# RowProblem like any other invalid row, so a bad byte never stops the run.
UNREADABLE = "__evalbeam_unreadable__"


class InputError(ValueError):
    """A problem with the input as a whole: the run must not start."""


@dataclass(frozen=True, slots=True)
class RowProblem:
    """A row that cannot be evaluated, with where it came from and why."""

    source: str
    case_id: str | None
    error_type: str
    message: str


def source_columns(mapping: Mapping[str, str]) -> dict[str, str]:
    """Canonical column -> column name in the files (identity unless mapped)."""
    unknown = sorted(set(mapping) - set(CANONICAL_COLUMNS))
    if unknown:
        raise InputError(f"input.columns maps unknown column(s) {unknown}; "
                         f"known: {list(CANONICAL_COLUMNS)}")
    return {col: mapping.get(col, col) for col in CANONICAL_COLUMNS}


def check_file_schema(schema: pa.Schema, columns: Mapping[str, str], path: str) -> None:
    """Raise InputError when a required column is missing after mapping."""
    names = set(schema.names)
    for col in REQUIRED_COLUMNS:
        src = columns[col]
        if src not in names:
            hint = f" (mapped from '{src}')" if src != col else ""
            raise InputError(f"{path}: missing required column '{col}'{hint}; "
                             f"columns present: {sorted(names)}")


def derive_case_id(row: Mapping[str, Any]) -> str:
    """Stable id from the row's content, so re-runs give the same ids."""
    payload = json.dumps({k: row.get(k) for k in ID_COLUMNS},
                         sort_keys=True, ensure_ascii=False, default=str)
    return "h-" + hashlib.sha1(payload.encode("utf-8")).hexdigest()[:16]


def _optional_text(value: Any, name: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    raise TypeError(f"{name} must be a string, got {type(value).__name__}")


def _string_list(value: Any, name: str) -> list[str] | None:
    """A list of strings; a JSON array in a string column is accepted too."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            raise TypeError(f"{name} must be a list of strings, got a plain string") from None
        value = parsed
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{name} must be a list of strings, got {type(value).__name__}")
    bad = [type(v).__name__ for v in value if not isinstance(v, str)]
    if bad:
        raise TypeError(f"{name} must be a list of strings, found element(s) of type {bad[0]}")
    return list(value)


def parse_label(value: Any) -> str | None:
    """A reviewer's label: a verdict name (PASS, WARN, FAIL; any case) or a
    number in [0, 1] (1 = fully acceptable). Returned normalised as text
    ("PASS", "0.75") so one string column holds both kinds."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise TypeError("label must be a verdict name or a number in [0, 1], got bool")
    if isinstance(value, str):
        text = value.strip()
        if text.upper() in LABEL_VERDICTS:
            return text.upper()
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"label {value[:40]!r} is not PASS, WARN, FAIL or a number "
                             "in [0, 1]") from None
    if not isinstance(value, (int, float)):
        raise TypeError(f"label must be a verdict name or a number in [0, 1], got "
                        f"{type(value).__name__}")
    number = float(value)
    if not 0.0 <= number <= 1.0:  # also rejects NaN
        raise ValueError(f"label {value!r} is outside [0, 1]")
    return repr(number)


def to_case(raw: Mapping[str, Any], columns: Mapping[str, str], source: str) -> EvalCase | RowProblem:
    """Validate one input row (already read as a dict of source columns)."""
    row = {col: raw.get(src) for col, src in columns.items()}
    given_id = row.get("case_id")
    case_id = None if given_id is None else str(given_id)
    if UNREADABLE in raw:
        error_type, message = raw[UNREADABLE]
        derived = derive_case_id(row) if any(v is not None for v in row.values()) else None
        return RowProblem(source, case_id or derived, error_type, message)
    try:
        question = row["question"]
        if question is None:
            raise ValueError("question is null")
        if not isinstance(question, str):
            raise TypeError(f"question must be a string, got {type(question).__name__}")
        if not question.strip():
            raise ValueError("question is empty")
        case = EvalCase(
            case_id=case_id or derive_case_id(row),
            question=question,
            expected_answer=_optional_text(row.get("expected_answer"), "expected_answer"),
            contexts=_string_list(row.get("contexts"), "contexts"),
            answer=_optional_text(row.get("answer"), "answer"),
            suite=_optional_text(row.get("suite"), "suite"),
            tags=_string_list(row.get("tags"), "tags") or [],
            label=parse_label(row.get("label")),
            source=source,
        )
    except (TypeError, ValueError) as exc:
        kind = "wrong_type" if isinstance(exc, TypeError) else "invalid_value"
        return RowProblem(source, case_id or derive_case_id(row), kind, str(exc))
    return case
