"""Input formats: JSON Lines, CSV and Hugging Face datasets read like Parquet:
same shards model, same dead-lettering, same reconciliation, same scores."""
from __future__ import annotations

import gzip
import json
import sys

import pyarrow as pa
import pytest

from schemas.cases import InputError, RowProblem, source_columns
from tests.conftest import ROOT, write_cases
from tests.pipeline_helpers import manifest, read_rows, run_cli
from transforms.read import cases as read_mod
from transforms.read.cases import plan_shards, read_shard_rows, read_valid_cases

sys.path.insert(0, f"{ROOT}/examples/formats")
from make_formats import write_csv, write_hf_dataset, write_jsonl  # noqa: E402

COLS = source_columns({})
CASE_SCHEMA = pa.schema([
    ("question", pa.string()), ("expected_answer", pa.list_(pa.string())),
    ("contexts", pa.list_(pa.string())), ("answer", pa.string()), ("suite", pa.string()),
    ("tags", pa.list_(pa.string())),
    ("messages", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
])


def corpus(n: int = 200) -> list[dict]:
    """n cases: quoted newlines, commas and quotes, non-ASCII, nulls, several
    references, conversations; no derived id depends on the format."""
    topics = ["refund", "shipping", "the Pro plan", "passwords", "the Hub", "storage"]
    rows = []
    for i in range(n):
        topic = topics[i % len(topics)]
        ref = f"For {topic}, the answer is {i % 7} days, \"as stated\", in policy {i}."
        rows.append({
            "question": f"How long for {topic}? (case {i})" + ("\nsecond line" if i % 9 == 0 else ""),
            "expected_answer": None if i % 23 == 0 else
            ([ref, f"It takes {i % 7} days for {topic}."] if i % 5 == 0 else [ref]),
            "contexts": None if i % 17 == 0 else [f"Policy {i}: {topic} takes {i % 7} days.",
                                                   "Unrelated, with a comma; and ünïcödé 日本"],
            "answer": f"It takes {i % 7 + (i % 3 == 0)} days for {topic}, per policy {i}.",
            "suite": ["billing", "shipping", None][i % 3],
            "tags": [f"t{i % 4}"],
            "messages": [{"role": "user", "content": f"Hello, about {topic}"},
                         {"role": "assistant", "content": "Sure, what would you like to know?"}]
            if i % 11 == 0 else None,
        })
    return rows


def _json_rows(rows: list[dict]) -> list[dict]:
    """JSONL and CSV: one reference as a string, several as a list; nulls left out."""
    out = []
    for r in rows:
        r = {k: v for k, v in r.items() if v is not None}
        if "expected_answer" in r and len(r["expected_answer"]) == 1:
            r["expected_answer"] = r["expected_answer"][0]
        out.append(r)
    return out


def write_all(tmp_path, rows: list[dict]) -> dict[str, str]:
    table = pa.Table.from_pylist(rows, schema=CASE_SCHEMA)
    return {
        "parquet": write_cases(str(tmp_path / "cases.parquet"), rows, CASE_SCHEMA,
                               row_group_size=120),
        "jsonl": write_jsonl(tmp_path / "cases.jsonl", _json_rows(rows)),
        "csv": write_csv(tmp_path / "cases.csv", _json_rows(rows)),
        "hf": write_hf_dataset(tmp_path / "cases_hf", table),
    }


def test_shards_cover_every_record_in_order(tmp_path, monkeypatch):
    monkeypatch.setattr(read_mod, "SHARD_ROWS", 30)
    rows = corpus(100)
    for fmt, path in write_all(tmp_path, rows).items():
        shards = plan_shards(path, COLS)
        assert len(shards) >= 4, fmt  # split: the shards spread over workers
        assert sum(s.stop - s.start for s in shards) == 100, fmt
        read = [(src, raw) for s in shards for src, raw in read_shard_rows(s, COLS)]
        assert [src.rsplit("#", 1)[1] for src, _ in read] == [str(i) for i in range(100)], fmt
        assert [raw["question"] for _, raw in read] == [r["question"] for r in rows], fmt
        ids = [c.case_id for s in shards for c in read_valid_cases(s, COLS)]
        assert len(ids) == 100 and len(set(ids)) == 100, fmt
        if fmt == "parquet":
            want = ids
        assert ids == want, f"{fmt}: derived case ids differ from Parquet's"


def test_csv_quoted_newlines_never_split_a_record(tmp_path, monkeypatch):
    monkeypatch.setattr(read_mod, "SHARD_ROWS", 1)
    rows = [{"question": f"line one\nline two {i}", "contexts": [f"a\nb,\"c\" {i}"]}
            for i in range(5)]
    path = write_csv(tmp_path / "q.csv", rows)
    shards = plan_shards(path, COLS)
    assert len(shards) == 5
    got = [c for s in shards for c in read_valid_cases(s, COLS)]
    assert [c.question for c in got] == [r["question"] for r in rows]
    assert [c.contexts for c in got] == [r["contexts"] for r in rows]


def test_bad_records_are_dead_lettered(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"question": "fine?"}\n\nnot json\n[1, 2]\n{"question": "caf\xe9"}\n'
                     b'{"question": 42}\n{"question": "q", "messages": [{"role": "robot"}]}\n')
    (shard,) = plan_shards(str(path), COLS)
    got = [(src, raw) for src, raw in read_shard_rows(shard, COLS)]
    assert [src.rsplit("#", 1)[1] for src, _ in got] == ["0", "1", "2", "3", "4", "5"]
    kinds = [raw.error_type for _, raw in got if isinstance(raw, RowProblem)]
    assert kinds == ["invalid_json", "invalid_json", "invalid_encoding"]
    csv_path = tmp_path / "bad.csv"
    csv_path.write_text('question,answer\nok?,yes\nonly one field\n', "utf-8")
    (shard,) = plan_shards(str(csv_path), COLS)
    problems = [raw for _, raw in read_shard_rows(shard, COLS) if isinstance(raw, RowProblem)]
    assert [p.error_type for p in problems] == ["invalid_csv"]


def test_gzip_jsonl_is_one_shard(tmp_path, monkeypatch):
    monkeypatch.setattr(read_mod, "SHARD_ROWS", 2)
    path = tmp_path / "c.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for i in range(5):
            fh.write(json.dumps({"question": f"q{i}"}) + "\n")
    (shard,) = plan_shards(str(path), COLS)
    assert [c.question for c in read_valid_cases(shard, COLS)] == [f"q{i}" for i in range(5)]


def test_whole_input_errors_before_the_run(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"prompt": "hi"}\n', "utf-8")
    with pytest.raises(InputError, match="missing required column 'question'"):
        plan_shards(str(tmp_path / "a.jsonl"), COLS)
    (tmp_path / "a.csv").write_text("prompt\nhi\n", "utf-8")
    with pytest.raises(InputError, match="missing required column 'question'"):
        plan_shards(str(tmp_path / "a.csv"), COLS)
    (tmp_path / "a.txt").write_text('{"question": "hi"}\n', "utf-8")
    with pytest.raises(InputError, match="unknown input format"):
        plan_shards(str(tmp_path / "a.txt"), COLS)
    assert len(plan_shards(str(tmp_path / "a.txt"), COLS, "jsonl")) == 1  # input.format
    (tmp_path / "b.jsonl").write_bytes(b"\x89PNG\r\n\x1a\nnot json at all\n")
    with pytest.raises(InputError, match="none of its first 3 lines is a JSON object"):
        plan_shards(str(tmp_path / "b.jsonl"), COLS)
    (tmp_path / "e.csv").write_text("", "utf-8")  # 0 rows, as an empty .jsonl
    assert plan_shards(str(tmp_path / "e.csv"), COLS) == []


def test_hf_dataset_dict_folder_reads_every_split(tmp_path):
    for split in ("train", "test"):
        write_hf_dataset(tmp_path / "dd" / split,
                         pa.table({"question": [f"{split} {i}" for i in range(3)]}))
    (tmp_path / "dd" / "dataset_dict.json").write_text('{"splits": ["train", "test"]}')
    shards = plan_shards(str(tmp_path / "dd"), COLS)
    got = [c.question for s in shards for c in read_valid_cases(s, COLS)]
    assert got == [f"train {i}" for i in range(3)] + [f"test {i}" for i in range(3)]
    only = plan_shards(str(tmp_path / "dd" / "test"), COLS)  # one split
    assert [c.question for c in read_valid_cases(only[0], COLS)][0] == "test 0"


def _scores(output: str) -> list[tuple]:
    return sorted((r["bot"], r["case_id"], r["metric"], r["value"], r["details"], r["error"])
                  for r in read_rows(output, "scores"))


def test_same_cases_in_every_format_give_identical_scores(tmp_path, monkeypatch):
    """The same 200 cases as Parquet, JSONL, CSV and an HF dataset: identical
    scores tables (and results), every row accounted for, split into shards."""
    monkeypatch.setattr(read_mod, "SHARD_ROWS", 64)
    files = write_all(tmp_path, corpus(200))
    config = tmp_path / "config.yaml"
    config.write_text("metrics: [exact_match, keyword_recall, bleu, rouge, lexical_relevance,"
                      " completeness, hallucination, answer_similarity]\n"
                      "embeddings: {provider: hashing}\n", "utf-8")
    tables = {}
    for fmt, path in files.items():
        out = str(tmp_path / f"out_{fmt}")
        assert run_cli("--input", path, "--output", out, "--config", str(config),
                       "--run-id", fmt, "--run-date", "2024-05-01") == 0
        m = manifest(out, fmt)
        assert m["reconciliation"]["ok"], m["reconciliation"]
        assert m["counts"]["input_rows"] == m["counts"]["valid_cases"] == 200
        tables[fmt] = _scores(out)
        results = sorted((r["case_id"], r["expected_answer"], r["references"], r["messages"],
                          r["answer"]) for r in read_rows(out, "results"))
        if fmt == "parquet":
            want_results = results
        assert results == want_results, fmt
    assert len(tables["parquet"]) == 200 * 11  # hallucination also gives unsupported_facts
    for fmt in ("jsonl", "csv", "hf"):
        assert tables[fmt] == tables["parquet"], fmt
    several = [r for r in tables["parquet"] if r[2] == "bleu" and r[4] and '"nrefs:2' in r[4]]
    assert several  # multi-reference rows were scored as such


def test_real_save_to_disk_output(monkeypatch):
    """A DatasetDict written by `datasets` 5.2.0's save_to_disk (tests/fixtures;
    the train split in two Arrow shards): every split, shard and row, list
    references and messages as given."""
    monkeypatch.setattr(read_mod, "SHARD_ROWS", 7)
    folder = f"{ROOT}/tests/fixtures/hf_save_to_disk"
    shards = plan_shards(folder, COLS)
    cases = [c for s in shards for c in read_valid_cases(s, COLS)]
    assert [c.case_id for c in cases] == [f"c{i}" for i in range(30)]
    assert cases[3].references == ["ref 3", "alt 3"] and cases[3].expected_answer == "ref 3"
    assert cases[3].messages == [{"role": "user", "content": "hi 3"},
                                 {"role": "assistant", "content": "hello"}]
    assert cases[4].references is None and cases[4].messages is None  # [] is no conversation
    assert {s.path.rsplit("/", 1)[1] for s in shards} == {"data-00000-of-00002.arrow",
                                                          "data-00001-of-00002.arrow",
                                                          "data-00000-of-00001.arrow"}


@pytest.mark.parametrize("where,names", [
    ("state", ["../outside.arrow"]), ("state", ["/etc/passwd"]),
    ("state", ["sub/data.arrow"]), ("state", [".."]), ("dict", ["../elsewhere"]),
    ("dict", ["/tmp"])])
def test_a_dataset_folder_cannot_name_files_outside_itself(tmp_path, capsys, where, names):
    """Issue 22 item 11: `_data_files: [{"filename": "../base.jsonl"}]` was
    followed, and so were absolute paths: refused up front, exit 2."""
    import shutil
    from pipeline.cli import run
    folder = tmp_path / "ds"
    shutil.copytree(f"{ROOT}/tests/fixtures/hf_save_to_disk", folder)
    shutil.copy(folder / "train" / "data-00000-of-00002.arrow", tmp_path / "outside.arrow")
    if where == "state":
        state = json.loads((folder / "train" / "state.json").read_text())
        state["_data_files"] = [{"filename": n} for n in names]
        (folder / "train" / "state.json").write_text(json.dumps(state))
    else:
        (folder / "dataset_dict.json").write_text(json.dumps({"splits": names}))
    out = tmp_path / "out"
    capsys.readouterr()
    assert run(["run", "--input", str(folder), "--output", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "not a file of the dataset's own folder; refused" in err and "\n" not in err, err
    assert not out.exists()


def test_lone_surrogate_escapes_cost_their_row_only(tmp_path):
    r"""JSON may spell a lone UTF-16 surrogate (`"\ud800"`); Python parses it to
    a str that is not text (it cannot be encoded as UTF-8). It used to crash the
    run (hashing the derived case id, or encoding the answer downstream); now
    its row is an invalid_encoding error row naming the column, in every
    format that parses JSON (JSON Lines, a .json array, a CSV cell)."""
    jsonl = tmp_path / "s.jsonl"
    jsonl.write_text('{"question": "fine?"}\n{"question": "q", "answer": "bad \\udc80"}\n'
                     '{"case_id": "m", "question": "q2", "messages": '
                     '[{"role": "user", "content": "\\ud83d"}]}\n', "utf-8")
    array = tmp_path / "s.json"
    array.write_text('[{"question": "fine?"}, {"question": "bad \\ud800 q"}]', "utf-8")
    cells = tmp_path / "s.csv"
    cells.write_text('question,contexts\nfine?,\nq,"[""bad \\ud800""]"\n', "utf-8")
    for path, bad in [(jsonl, ["answer", "messages"]), (array, ["question"]),
                      (cells, ["contexts"])]:
        got = [raw if isinstance(raw, RowProblem) else read_mod.to_case(raw, COLS, src)
               for s in plan_shards(str(path), COLS) for src, raw in read_shard_rows(s, COLS)]
        assert got[0].question == "fine?", path
        problems = got[1:]
        assert [p.error_type for p in problems] == ["invalid_encoding"] * len(bad), path
        assert [p.message.split("'")[1] for p in problems] == bad, path
        for p in problems:  # a case id from the row's readable columns (none: null)
            assert p.case_id is None or p.case_id.encode("utf-8")
        if path == jsonl:
            assert problems[0].case_id.startswith("h-") and problems[1].case_id == "m"


def test_jsonl_with_a_byte_order_mark_loses_no_record(tmp_path):
    """Notepad and Windows PowerShell write UTF-8 with a byte-order mark; the
    first record of such a JSON Lines file used to be an invalid_json row (and a
    file of one record was refused: 'none of its first 1 lines is a JSON object')."""
    bom = "\ufeff"
    one = tmp_path / "one.jsonl"
    one.write_text(bom + '{"question": "only?"}\n', "utf-8")
    (shard,) = plan_shards(str(one), COLS)
    assert [c.question for c in read_valid_cases(shard, COLS)] == ["only?"]
    # files joined with `cat`: every part starts with its own mark
    joined = tmp_path / "joined.jsonl"
    joined.write_text(bom + '{"question": "a?"}\n' + bom + '{"question": "b?"}\r\n\n', "utf-8")
    (shard,) = plan_shards(str(joined), COLS)
    got = list(read_shard_rows(shard, COLS))
    assert [raw["question"] for _, raw in got] == ["a?", "b?"]


def test_a_csv_with_a_byte_order_mark_and_a_quoted_header_is_read(tmp_path):
    """Excel's "CSV UTF-8" starts with a byte-order mark, and R's write.csv and
    pandas' QUOTE_ALL quote the header: the mark made the first name's quotes
    part of it, so the file was refused with "missing required column
    'question'; columns present: ['"question"', 'answer']"."""
    path = tmp_path / "cases.csv"
    path.write_bytes(b'\xef\xbb\xbf"question","answer"\r\n"a, b?","x"\r\n"c?","y"\r\n')
    (shard,) = plan_shards(str(path), COLS)
    assert [(c.question, c.answer) for c in read_valid_cases(shard, COLS)] == [
        ("a, b?", "x"), ("c?", "y")]


def test_a_glob_reads_the_folders_it_matches_as_folders(tmp_path):
    """`--input 'data/*'` matched only files (Beam's match lists files): a Hugging
    Face dataset folder or a folder of case files beside them was passed over
    without a word, so its rows were never read (30 of 31 in the finding)."""
    rows = _json_rows(corpus(12))
    write_jsonl(tmp_path / "a.jsonl", rows[:2])
    write_hf_dataset(tmp_path / "ds", pa.Table.from_pylist(corpus(12)[2:7], schema=CASE_SCHEMA))
    (tmp_path / "parts").mkdir()
    write_jsonl(tmp_path / "parts" / "p.jsonl", rows[7:])
    shards = plan_shards(str(tmp_path / "*"), COLS)
    got = [c.question for s in shards for c in read_valid_cases(s, COLS)]
    assert sorted(got) == sorted(r["question"] for r in corpus(12))
    assert len(read_mod.list_input_files(str(tmp_path / "*"))) == 3  # each file once
    (tmp_path / "logs").mkdir()  # a matched folder without case files adds nothing
    (tmp_path / "logs" / "run.log").write_text("not a case\n", "utf-8")
    assert len(read_mod.list_input_files(str(tmp_path / "*"))) == 3
    (tmp_path / "_temporary").mkdir()  # skipped as a folder's walk skips it (Spark's)
    write_jsonl(tmp_path / "_temporary" / "part.jsonl", rows[:2])
    assert len(read_mod.list_input_files(str(tmp_path / "*"))) == 3


def test_a_plain_passage_in_a_contexts_cell_is_one_passage(tmp_path):
    """A CSV cell holding one passage as it is ("The tower is in Paris.") was an
    errors/ row ("contexts must be a list of strings, got a plain string: write
    it as a JSON array"), although nothing else could be meant and the promptfoo
    preset reads `vars.context` so. It is one passage now, with the id of the
    same case written as a JSON array, in CSV and JSON Lines alike; a cell that
    opens with '[' but is no list is still refused, and so are plain tags (which
    could be one tag or several)."""
    path = tmp_path / "cases.csv"
    path.write_text('question,answer,contexts,tags\n'
                    '"Where is it?","Paris.","The tower is in Paris.",\n'
                    '"Where was it?","Paris.","[""The tower is in Paris.""]",\n'
                    '"And then?","Yes.",,"smoke"\n'
                    '"Broken?","No.","[""not closed",\n'
                    '"Ok?","Ok.","[""It is ok.""]",\n', encoding="utf-8")
    out = str(tmp_path / "out")
    assert run_cli("--input", str(path), "--output", out, "--run-id", "r",
                   "--metrics", "exact_match,groundedness") == 0
    errors = {e["source"].rsplit("/", 1)[-1]: e["message"] for e in read_rows(out, "errors")}
    assert errors == {
        "cases.csv#2": 'tags must be a list of strings, got a plain string: write it as a JSON '
                       'array, ["first", "second"] (one item: ["its text"])',
        "cases.csv#3": 'contexts must be a list of strings, got a plain string: write it as a '
                       'JSON array, ["first", "second"] (one item: ["its text"])'}
    results = read_rows(out, "results")
    assert sorted((r["question"], list(r["contexts"])) for r in results) == [
        ("Ok?", ["It is ok."]), ("Where is it?", ["The tower is in Paris."]),
        ("Where was it?", ["The tower is in Paris."])]
    scores = [s for s in read_rows(out, "scores") if s["metric"] == "groundedness"]
    assert len(scores) == 3 and all(s["value"] is not None for s in scores)
    assert manifest(out, "r")["counts"]["input_rows"] == 5
    # the JSON array's case as a JSON Lines string: one passage, the same derived id
    jsonl = tmp_path / "cases.jsonl"
    jsonl.write_text(json.dumps({"question": "Where was it?", "answer": "Paris.",
                                 "contexts": "The tower is in Paris."}) + "\n", encoding="utf-8")
    assert run_cli("--input", str(jsonl), "--output", out, "--run-id", "j",
                   "--metrics", "exact_match") == 0
    [row] = [r for r in read_rows(out, "results") if r["run_id"] == "j"]
    assert list(row["contexts"]) == ["The tower is in Paris."]
    assert row["case_id"] == next(r["case_id"] for r in results if r["question"] == "Where was it?")
