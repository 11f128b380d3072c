"""Issue 22 item 1: one deeply nested JSON value in one input value gave a
RecursionError traceback, exit 1 and nothing written (in JSONL, `.json`, a
CSV cell, a JSON array inside a string cell; also after 120 normal rows,
where the planner's sample misses it). Item 14: a Latin-1 CSV row's errors/
row had case_id None although its case_id cell was valid.

One run reads a folder holding every such file; each bad value costs its own
row only (an errors/ row with its case id), the other rows are scored."""
from __future__ import annotations

import csv
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from schemas.cases import InputError
from tests.pipeline_helpers import manifest, read_rows, run_cli
from transforms.read.cases import plan_shards, read_shard_rows
from transforms.read.formats import load_json_records

DEEP = "[" * 100_000 + "]" * 100_000          # far beyond Python's parser
PARSED_BUT_DEEP = "[" * 900 + "]" * 900       # json.loads takes it; pickle does not
CONFIG = "bots:\n  - {name: recorded, type: precomputed}\nmetrics: [exact_match]\n"


def _row(case_id: str) -> dict:
    return {"case_id": case_id, "question": f"What is {case_id}?", "answer": "An answer.",
            "expected_answer": "An answer."}


def _jsonl(path, rows_before: int, bad_lines: list[str]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(rows_before):
            fh.write(json.dumps(_row(f"{path.stem}-{i}")) + "\n")
        for line in bad_lines:
            fh.write(line + "\n")
        fh.write(json.dumps(_row(f"{path.stem}-after")) + "\n")


@pytest.fixture(scope="module")
def deep_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("deep")
    cases = tmp / "cases"
    cases.mkdir()
    # the repro, after 120 normal rows (the planner samples 100)
    _jsonl(cases / "late.jsonl", 120, [
        '{"question":"q","contexts":' + DEEP + '}',
        '{"case_id":"late-deep","question":"q","contexts":' + DEEP + ',"answer":"a"}',
        '{"case_id":"late-900","question":"q","contexts":' + PARSED_BUT_DEEP + '}',
        '{"case_id":"late-meta","question":"q","answer":"a","metadata":' + DEEP + '}'])
    # in the planner's sample: the first line
    _jsonl(cases / "early.jsonl", 0, ['{"case_id":"early-deep","question":' + DEEP + '}'])
    # a .json array: one record with a deep field, one record that is deep as a whole
    records = [json.dumps(_row("json-0")),
               '{"case_id":"json-deep","question":"q","messages":' + DEEP + '}', DEEP,
               json.dumps(_row("json-1"))]
    (cases / "array.json").write_text("[" + ",\n".join(records) + "]", "utf-8")
    # a CSV cell, and (item 14) a Latin-1 row whose case_id cell is fine
    with open(cases / "cells.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["case_id", "question", "contexts", "answer"])
        w.writerow(["csv-0", "What is csv-0?", '["A passage."]', "An answer."])
        w.writerow(["csv-deep", "q", DEEP, "a"])
    with open(cases / "cells.csv", "ab") as fh:
        fh.write(b"c5,Caf\xe9 ou th\xe9?,,Oui\n")
    # a JSON array inside a Parquet string cell
    pq.write_table(pa.table({"case_id": ["pq-0", "pq-deep"], "question": ["What is pq-0?", "q"],
                             "contexts": ['["A passage."]', DEEP]}),
                   str(cases / "cells.parquet"))
    cfg = tmp / "c.yaml"
    cfg.write_text(CONFIG)
    out = str(tmp / "out")
    code = run_cli("--input", str(cases), "--output", out, "--config", str(cfg),
                   "--run-id", "deep")
    return code, out


def test_the_run_finishes_and_every_row_is_accounted_for(deep_run):
    code, out = deep_run
    assert code == 0
    m = manifest(out, "deep")
    assert m["reconciliation"]["ok"], m["reconciliation"]
    # late 120 + 4 bad + 1; early 1 + 1; array 4; csv 3; parquet 2
    assert m["counts"]["input_rows"] == 125 + 2 + 4 + 3 + 2


def test_each_deep_value_is_an_errors_row_of_its_case(deep_run):
    _, out = deep_run
    errors = {r["case_id"]: r for r in read_rows(out, "errors") if r["stage"] == "read"}
    for case_id, words in (("late-deep", "contexts"), ("late-900", "contexts"),
                           ("early-deep", "question"), ("json-deep", "messages"),
                           ("csv-deep", "contexts"), ("pq-deep", "contexts")):
        assert case_id in errors, (case_id, sorted(errors))
        assert words in errors[case_id]["message"], errors[case_id]
    repro = [r for r in errors.values() if r["source"].endswith("late.jsonl#120")]
    assert len(repro) == 1 and repro[0]["case_id"].startswith("h-")  # derived, from its inputs
    whole = [r for r in errors.values() if r["source"].endswith("array.json#2")]
    assert len(whole) == 1 and "is a JSON array, not an object" in whole[0]["message"]


def test_the_other_rows_are_scored(deep_run):
    _, out = deep_run
    scored = {r["case_id"] for r in read_rows(out, "results")}
    for case_id in ("late-0", "late-119", "late-after", "late-meta", "early-after", "json-0",
                    "json-1", "csv-0", "pq-0"):
        assert case_id in scored, case_id
    assert len(scored) == 120 + 2 + 1 + 2 + 1 + 1  # an unread deep column costs nothing


def test_a_latin1_csv_row_keeps_its_case_id(deep_run):
    """Item 14."""
    _, out = deep_run
    bad = [r for r in read_rows(out, "errors") if r["error_type"] == "invalid_encoding"]
    assert [r["case_id"] for r in bad] == ["c5"]
    assert "'question' is not valid UTF-8" in bad[0]["message"]


def test_json_records_loads_takes_apart_only_what_is_too_deep():
    from transforms.read import json_records
    obj = json_records.loads('{"a": 1, "deep": ' + DEEP + ', "b": ["x", {"c": null}]}')
    assert obj["a"] == 1 and obj["b"] == ["x", {"c": None}]
    assert type(obj["deep"]).__name__ == "TooDeep"
    assert json_records.loads('{"a": [1, 2]}') == {"a": [1, 2]}
    with pytest.raises(ValueError):
        json_records.loads('{"a": ' + DEEP[:-1] + "}")  # unbalanced: not JSON


def test_a_json_file_that_is_deep_as_a_whole_is_one_record_or_one_clear_error(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text(DEEP, "utf-8")  # an array holding one (deep, not an object) record
    assert len(load_json_records(str(path))) == 1
    path.write_text('{"cases": ' + DEEP + "}", "utf-8")
    with pytest.raises(InputError, match="must be an array of objects"):
        load_json_records(str(path))


def test_planning_and_reading_a_deep_first_line_do_not_raise(tmp_path):
    path = tmp_path / "first.jsonl"
    _jsonl(path, 0, ['{"question":' + DEEP + '}'])
    cols = {c: c for c in ("question", "case_id", "contexts", "answer", "expected_answer",
                           "suite", "tags", "label", "messages")}
    (shard,) = plan_shards(str(path), cols)
    assert len(list(read_shard_rows(shard, cols))) == 2


def test_a_latin1_csv_row_becomes_a_problem_with_its_case_id(tmp_path):
    """Item 14, without a pipeline: the row's readable cells stay, its case_id among them."""
    from schemas.cases import RowProblem, to_case
    path = tmp_path / "latin1.csv"
    path.write_bytes(b"case_id,question\nc4,Fine?\nc5,Caf\xe9 ou th\xe9?\n")
    cols = {c: c for c in ("question", "case_id", "contexts", "answer", "expected_answer",
                           "suite", "tags", "label", "messages")}
    (shard,) = plan_shards(str(path), cols)
    got = [raw if isinstance(raw, RowProblem) else to_case(raw, cols, src)
           for src, raw in read_shard_rows(shard, cols)]
    assert got[0].case_id == "c4" and not isinstance(got[0], RowProblem)
    assert isinstance(got[1], RowProblem) and got[1].case_id == "c5"
    assert got[1].error_type == "invalid_encoding"
