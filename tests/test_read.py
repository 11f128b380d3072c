import os

import pyarrow as pa
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from schemas.cases import InputError, RowProblem, derive_case_id, source_columns, to_case
from schemas.records import EvalCase
from transforms.read import cases as read_mod
from transforms.read.cases import ReadCases, list_input_files, plan_shards, read_shard_rows
from tests.conftest import SAMPLE_ROWS, write_cases

COLS = source_columns({})


def test_to_case_validates_rows():
    ok = to_case({"question": "Hi?", "contexts": ["a", "b"]}, COLS, "f#0")
    assert isinstance(ok, EvalCase) and ok.contexts == ["a", "b"] and ok.case_id.startswith("h-")
    one = to_case({"question": "Hi?", "contexts": "just text"}, COLS, "f#0")  # one passage
    assert one.contexts == ["just text"]
    assert one.case_id == to_case({"question": "Hi?", "contexts": ["just text"]}, COLS, "f#0").case_id
    for raw, kind, words in [
        ({"question": None}, "invalid_value", "question is null"),
        ({"question": "   "}, "invalid_value", "question is empty"),
        ({"question": 42}, "wrong_type", "question must be a string, got int"),
        ({"question": "q", "contexts": "[just text"}, "wrong_type", "list of strings"),
        ({"question": "q", "contexts": 7}, "wrong_type", "list of strings, got int"),
        ({"question": "q", "contexts": ["a", 3]}, "wrong_type", "element(s) of type int"),
        ({"question": "q", "expected_answer": 3.5}, "wrong_type", "expected_answer must be"),
    ]:
        problem = to_case(raw, COLS, "f#1")
        assert isinstance(problem, RowProblem), raw
        assert problem.error_type == kind and words in problem.message
        assert problem.source == "f#1" and problem.case_id


def test_json_array_contexts_are_accepted():
    case = to_case({"question": "q", "contexts": '["a", "b"]'}, COLS, "f#0")
    assert case.contexts == ["a", "b"]


def test_derived_case_id_is_stable_and_content_based():
    a = derive_case_id({"question": "q", "answer": "x"})
    assert a == derive_case_id({"answer": "x", "question": "q"})
    # the case's inputs make the id, never the answer (issue 22 item 6)
    assert a == derive_case_id({"question": "q", "answer": "y"})
    assert a != derive_case_id({"question": "q2", "answer": "x"})
    assert a != derive_case_id({"question": "q", "contexts": ["c"]})


def test_missing_required_column_after_mapping(tmp_path):
    path = write_cases(str(tmp_path / "c.parquet"), [{"prompt": "hi"}])
    with pytest.raises(InputError, match="missing required column 'question'"):
        plan_shards(path, COLS)
    mapped = source_columns({"question": "user_input"})
    with pytest.raises(InputError, match="mapped from 'user_input'"):
        plan_shards(path, mapped)


def test_inputs_folder_glob_and_unreadable(tmp_path):
    (tmp_path / "d").mkdir()
    write_cases(str(tmp_path / "d" / "a.parquet"), [{"question": "a"}])
    write_cases(str(tmp_path / "d" / "b.parquet"), [{"question": "b"}])
    assert len(list_input_files(str(tmp_path / "d"))) == 2
    assert len(list_input_files(str(tmp_path / "d" / "*.parquet"))) == 2
    with pytest.raises(InputError, match="no input files match"):
        list_input_files(str(tmp_path / "nothing*.parquet"))
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"")
    with pytest.raises(InputError, match="cannot read .* as Parquet"):
        plan_shards(str(junk), COLS)


def test_shards_cover_every_row_exactly_once(tmp_path, monkeypatch):
    monkeypatch.setattr(read_mod, "SHARD_ROWS", 7)
    rows = [{"question": f"q{i}"} for i in range(50)]
    path = write_cases(str(tmp_path / "c.parquet"), rows, row_group_size=20)
    shards = plan_shards(path, COLS)
    assert len(shards) == 8  # row groups of 20, 20, 10 cut into slices of 7: 3 + 3 + 2
    seen = [src for s in shards for src, _ in read_shard_rows(s, COLS)]
    assert seen == [f"{path}#{i}" for i in range(50)]
    got = [raw["question"] for s in shards for _, raw in read_shard_rows(s, COLS)]
    assert got == [r["question"] for r in rows]


def test_read_cases_stage_splits_valid_and_problems(tmp_path):
    rows = SAMPLE_ROWS + [{"case_id": "bad", "question": "", "expected_answer": None,
                           "contexts": None, "answer": None, "suite": None, "tags": None}]
    path = write_cases(str(tmp_path / "c.parquet"), rows)
    with TestPipeline(runner="FnApiRunner") as p:
        out = p | ReadCases(plan_shards(path, COLS), COLS)
        assert_that(out.cases | "ids" >> __import__("apache_beam").Map(lambda c: c.case_id),
                    equal_to(["c1", "c2", "c3", "c4"]), label="valid")
        assert_that(out.problems | "why" >> __import__("apache_beam").Map(
            lambda p: (p.case_id, p.message)), equal_to([("bad", "question is empty")]),
            label="problems")


def test_wrong_column_type_becomes_row_errors(tmp_path):
    schema = pa.schema([("question", pa.int64()), ("answer", pa.string())])
    path = write_cases(str(tmp_path / "c.parquet"), [{"question": 1, "answer": "a"}], schema)
    (src, raw), = list(read_shard_rows(plan_shards(path, COLS)[0], COLS))
    problem = to_case(raw, COLS, src)
    assert isinstance(problem, RowProblem) and "got int" in problem.message


def test_a_folder_without_case_files_says_how_to_read_it(tmp_path):
    """A folder of JSON Lines named .txt with input.format: jsonl was 'no input
    files match d', though the folder is full of files and the docs say
    input.format covers 'JSON Lines named .txt': a folder is read by extension."""
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_text('{"question": "a"}\n', "utf-8")
    folder = str(tmp_path / "d")
    for fmt in ("jsonl", None):
        with pytest.raises(InputError) as caught:
            list_input_files(folder, fmt)
        said = str(caught.value)
        assert said.startswith(f"no case files in the folder {folder}: a folder is read by "
                               "its files' extensions (")
        assert f"give a glob such as {os.path.join(folder, '*.txt')}" in said
    assert list_input_files(os.path.join(folder, "*.txt"), "jsonl") == [
        os.path.join(folder, "a.txt")]
