"""Bad input: a clear one-line error and nothing written, or error rows and nothing lost."""
from __future__ import annotations

import json
import os
import shutil

import pyarrow as pa
import pytest

from tests.conftest import ROOT, SAMPLE_ROWS, write_cases
from pipeline.cli import run
from tests.pipeline_helpers import manifest, read_rows, run_cli


def _fails_cleanly(capsys, out, *args):
    code = run_cli(*args, "--output", out)
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.startswith("evalbeam: error: ") and "\n" not in err and "Traceback" not in err
    assert not os.path.exists(out), "nothing may be written"
    return err


def test_missing_column_bad_config_and_unreadable_input(tmp_path, capsys):
    out = str(tmp_path / "out")
    no_q = write_cases(str(tmp_path / "noq.parquet"), [{"prompt": "x"}])
    assert "missing required column 'question'" in _fails_cleanly(capsys, out, "--input", no_q)
    good = write_cases(str(tmp_path / "ok.parquet"), SAMPLE_ROWS)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("metrics: [bleu, blue]\n")
    assert "unknown metric 'blue'" in _fails_cleanly(capsys, out, "--input", good,
                                                       "--config", str(cfg))
    cfg.write_text("verdict:\n  rules:\n    - {metric: halucination, above: 0.5, verdict: FAIL}\n")
    assert "'halucination' is not a metric of this run" in _fails_cleanly(
        capsys, out, "--input", good, "--config", str(cfg))
    cfg.write_text("metrics: [bleu]\nverdict:\n  rules:\n"
                   "    - {metric: completeness, below: 0.5, verdict: WARN}\n")
    assert "is not a metric of this run" in _fails_cleanly(capsys, out, "--input", good,
                                                           "--config", str(cfg))
    cfg.write_text("bots:\n  - {name: f, type: faq_match, faq: missing.csv}\n")
    assert "FAQ file not found" in _fails_cleanly(capsys, out, "--input", good,
                                                  "--config", str(cfg))
    junk = tmp_path / "junk.parquet"
    junk.write_text("this is not parquet")
    assert "cannot read" in _fails_cleanly(capsys, out, "--input", str(junk))
    assert "no input files" in _fails_cleanly(capsys, out, "--input", str(tmp_path / "x*.pq"))
    assert "--run-id" in _fails_cleanly(capsys, out, "--input", good, "--run-id", "a/b")


def test_an_input_with_no_rows_is_refused_unless_allowed(tmp_path, capsys):
    """A nightly job whose upstream wrote an empty file exited 0 with a note
    only, so it looked green. It is refused before the run (exit 2, one line,
    nothing written); --allow-empty runs it as before, with the note."""
    schema = pa.schema([("question", pa.string()), ("answer", pa.string())])
    path = write_cases(str(tmp_path / "empty.parquet"), [], schema)
    out = str(tmp_path / "out")
    err = _fails_cleanly(capsys, out, "--input", path, "--run-id", "e")
    assert f"{path} holds no cases (0 rows)" in err and "--allow-empty" in err
    assert run_cli("--input", path, "--output", out, "--run-id", "e", "--allow-empty") == 0
    m = manifest(out, "e")
    assert m["counts"]["input_rows"] == 0 and m["reconciliation"]["ok"]
    said = "nothing was evaluated: the input has no rows"
    assert said in m["notes"]
    printed = capsys.readouterr()
    assert f"evalbeam: note: {said}" in printed.err and "recorded: no rows" in printed.out
    report = os.path.join(out, "runs", "e", "report")
    assert f"Note: {said}" in open(report + ".md", encoding="utf-8").read()
    assert f"Note: {said}" in open(report + ".html", encoding="utf-8").read()


@pytest.mark.parametrize("name, text", [("empty.jsonl", ""), ("blank.jsonl", "\n\n"),
                                        ("header.csv", "question,answer\n"), ("empty.csv", ""),
                                        ("none.json", "[]"), ("none.yaml", "[]\n"),
                                        ("promptfooconfig.yaml", "tests: []\n")])
def test_every_format_with_no_case_is_refused(tmp_path, capsys, name, text):
    (tmp_path / name).write_text(text)
    err = _fails_cleanly(capsys, str(tmp_path / "out"), "--input", str(tmp_path / name))
    assert "holds no cases (0 rows)" in err


@pytest.mark.parametrize("ext", ["csv", "jsonl"])
def test_a_0_byte_file_in_a_folder_is_0_rows_in_every_text_format(tmp_path, ext):
    """A folder of CSV parts with one 0-byte part (an export that wrote nothing)
    stopped the whole run ("empty CSV file (no header)"), where an empty JSON
    Lines part counts as 0 rows: both now run the other parts' cases."""
    folder = tmp_path / "parts"
    folder.mkdir()
    rows = [{"question": f"q{i}", "answer": f"a{i}", "case_id": f"c{i}"} for i in range(3)]
    if ext == "csv":
        text = "question,answer,case_id\n" + "".join(f"q{i},a{i},c{i}\n" for i in range(3))
    else:
        text = "".join(json.dumps(r) + "\n" for r in rows)
    (folder / f"a.{ext}").write_text(text)
    (folder / f"b.{ext}").write_bytes(b"")
    out = str(tmp_path / "out")
    assert run_cli("--input", str(folder), "--output", out, "--run-id", "p",
                   "--metrics", "answer_length") == 0
    assert sorted(r["case_id"] for r in read_rows(out, "results")) == ["c0", "c1", "c2"]
    m = manifest(out, "p")
    assert m["counts"]["input_rows"] == 3 and m["reconciliation"]["ok"]


def test_a_file_of_invalid_rows_only_exits_6_unless_allowed(tmp_path, capsys):
    """Every row invalid: the run finishes and writes errors/ (the reasons),
    but exits 6 with one line, so a nightly job does not look green."""
    path = write_cases(str(tmp_path / "bad.parquet"), [{"case_id": "a", "question": None},
                                                        {"case_id": "b", "question": ""}])
    out = str(tmp_path / "out")
    assert run_cli("--input", path, "--output", out, "--run-id", "i") == 6
    m = manifest(out, "i")
    assert (m["counts"]["invalid_rows"], m["counts"]["valid_cases"]) == (2, 0)
    said = ("nothing was evaluated: none of the input's 2 rows is a valid case "
            "(the reasons are in errors/)")
    err = capsys.readouterr().err
    assert said in m["notes"] and f"evalbeam: error: run i: {said}" in err
    assert len(read_rows(out, "errors")) == 2
    # a scheduler that follows a detached run with `evalbeam status` sees it too
    assert run(["status", "--output", out, "--run-id", "i"]) == 6
    assert "it evaluated nothing" in capsys.readouterr().out
    assert run_cli("--input", path, "--output", out, "--run-id", "i", "--allow-empty") == 0
    assert f"evalbeam: note: {said}" in capsys.readouterr().err
    assert manifest(out, "i")["allow_empty"] is True
    assert run(["status", "--output", out, "--run-id", "i"]) == 0


def test_a_run_whose_bots_never_answered_exits_6_unless_allowed(tmp_path, capsys, monkeypatch):
    """The bots' endpoint down all night (here a closed port): every answer was
    an ERROR, and the run exited 0 saying no word of it beyond its counts, so a
    nightly job looked green. It evaluated nothing: it now exits 6 with one
    line, as an input of invalid rows does, `evalbeam status` too, and the
    manifest's notes (so the report) say why; --allow-empty makes it a note
    and exit 0, and evaluate() raises NothingEvaluated unless allow_empty=True.
    A run of recorded answers without answers keeps its own note, and one bot
    that answers is enough for none."""
    import socket
    import evalbeam
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("DOWN_KEY", "sk-test-down")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"endpoints:\n  llm: {{base_url: 'http://127.0.0.1:{port}/v1', "
                   "api_key_env: DOWN_KEY, max_attempts: 1}\n"
                   "bots:\n  - {name: chat, type: chat, endpoint: llm, model: m}\n")
    path = write_cases(str(tmp_path / "c.parquet"), SAMPLE_ROWS[:3])
    out = str(tmp_path / "out")
    args = ("--input", path, "--output", out, "--config", str(cfg), "--metrics", "exact_match")
    assert run_cli(*args, "--run-id", "down") == 6
    said = ("no bot answered: all 3 answers are ERROR, so no metric was computed (the reasons "
            "are in errors/)")
    err = capsys.readouterr().err
    assert f"evalbeam: error: run down: {said}" in err and said in manifest(out, "down")["notes"]
    report = open(os.path.join(out, "runs", "down", "report.md"), encoding="utf-8").read()
    assert said in report
    assert sum(e["stage"] == "bot" for e in read_rows(out, "errors")) == 3
    assert run(["status", "--output", out, "--run-id", "down"]) == 6
    assert "it evaluated nothing: no bot answered" in capsys.readouterr().out
    assert run_cli(*args, "--run-id", "down", "--allow-empty") == 0
    assert f"evalbeam: note: {said}" in capsys.readouterr().err
    assert run(["status", "--output", out, "--run-id", "down"]) == 0
    with pytest.raises(evalbeam.NothingEvaluated, match="no bot answered: all 3 answers"):
        evalbeam.evaluate(path, config=str(cfg), output=out, run_id="api",
                          metrics=["exact_match"])
    one = write_cases(str(tmp_path / "one.parquet"), SAMPLE_ROWS[:1])
    assert run_cli("--input", one, "--output", out, "--config", str(cfg), "--run-id", "one",
                   "--metrics", "exact_match") == 6
    assert "no bot answered: the 1 answer is an ERROR" in capsys.readouterr().err
    # one bot answering is enough: the other bot's errors are in the counts only
    cfg.write_text(cfg.read_text() + "  - {name: recorded, type: precomputed}\n")
    assert run_cli(*args, "--run-id", "half") == 0
    assert "no bot answered" not in capsys.readouterr().err
    assert run(["status", "--output", out, "--run-id", "half"]) == 0


def test_the_summary_line_accounts_for_every_row_in_errors(tmp_path, capsys):
    """errors/ also holds repeated case ids (and failed judge questions): the
    line named only invalid rows and bot errors, so 1 + 0 did not make 2."""
    rows = [SAMPLE_ROWS[0], SAMPLE_ROWS[0], dict(SAMPLE_ROWS[1], question=None), SAMPLE_ROWS[2]]
    path = write_cases(str(tmp_path / "dup.parquet"), rows)
    out = str(tmp_path / "out")
    assert run_cli("--input", path, "--output", out, "--run-id", "d") == 0
    assert manifest(out, "d")["counts"]["errors_rows"] == 2
    assert ("run d: 4 input rows, 3 valid, 1 invalid, 0 bot errors, 1 repeated case id "
            "(2 rows in errors/)") in capsys.readouterr().out


def test_the_summary_line_counts_one_of_a_kind_in_the_singular():
    """'run s: 1 input rows, 1 valid, 0 invalid, 1 bot errors (1 rows in errors/)'."""
    from pipeline.cli import counts_line
    one = {"input_rows": 1, "valid_cases": 1, "invalid_rows": 0, "bot_errors": 1,
           "errors_rows": 1}
    assert counts_line("s", one) == (
        "run s: 1 input row, 1 valid, 0 invalid, 1 bot error (1 row in errors/)")


def test_a_run_with_valid_cases_has_no_such_note(tmp_path):
    path = write_cases(str(tmp_path / "ok.parquet"), SAMPLE_ROWS)
    out = str(tmp_path / "out")
    assert run_cli("--input", path, "--output", out, "--run-id", "ok") == 0
    assert not any(n.startswith("nothing was evaluated") for n in manifest(out, "ok")["notes"])


def test_wrong_types_nulls_binary_and_odd_text_lose_nothing(tmp_path):
    schema = pa.schema([("case_id", pa.string()), ("question", pa.binary()),
                        ("answer", pa.string())])
    binary = write_cases(str(tmp_path / "a.parquet"),
                         [{"case_id": "b1", "question": b"\xff\xfe caf\xe9", "answer": "x"}],
                         schema)
    odd = [
        {"case_id": "rtl", "question": "ما هي مدة الاسترداد؟",
         "answer": "\u202bيمكنك استرداد المبلغ خلال 30 يومًا\u202c", "expected_answer": "30 يومًا"},
        {"case_id": "mojibake", "question": "CafÃ© refund Ã©tÃ©?\u200b\x00",
         "answer": "Ã©tÃ© refunds â€” 30 days", "expected_answer": "Refunds take 30 days."},
        {"case_id": "huge", "question": "Tell me everything about refunds",
         "answer": "refund policy details " * 50_000, "expected_answer": "Refunds in 30 days."},
        {"case_id": "nulls", "question": "Is there a fee?", "answer": None,
         "expected_answer": None},
    ]
    write_cases(str(tmp_path / "b.parquet"), odd)
    out = str(tmp_path / "out")
    assert run_cli("--input", str(tmp_path / "*.parquet"), "--output", out, "--run-id", "o") == 0
    m = manifest(out, "o")
    assert m["counts"]["input_rows"] == 5 and m["counts"]["invalid_rows"] == 1
    assert m["reconciliation"]["ok"]
    errors = read_rows(out, "errors")
    assert {(e["case_id"], e["error_type"]) for e in errors} == {
        ("b1", "wrong_type"), ("nulls", "bot_error")}
    results = {r["case_id"]: r for r in read_rows(out, "results")}
    assert len(results["huge"]["answer"]) == len("refund policy details " * 50_000)
    assert results["rtl"]["answer"].startswith("\u202b")
    assert results["nulls"]["verdict"] == "ERROR"
    assert {r["verdict"] for r in results.values()} <= {"PASS", "WARN", "FAIL", "ERROR"}


@pytest.mark.parametrize("header,called", [("question;answer", "';'"),
                                           ("question\tanswer", "tabs")])
def test_a_csv_with_another_separator_is_told_so(tmp_path, capsys, header, called):
    path = tmp_path / "cases.csv"
    path.write_text(f"{header}\nq1{header[8]}a1\n", encoding="utf-8")
    err = _fails_cleanly(capsys, str(tmp_path / "out"), "--input", str(path))
    assert "missing required column 'question'" in err
    assert f"the header looks separated by {called}" in err


@pytest.mark.parametrize("name", ["cases.csv", "cases.jsonl"])
@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32"])
def test_a_utf16_or_utf32_text_file_is_named_as_such(tmp_path, capsys, name, encoding):
    """Excel's 'Unicode text' and Windows PowerShell's Out-File write UTF-16. Such a
    CSV was refused as 'missing required column' listing NUL-riddled column names,
    and such a JSON Lines file as 'none of its first 2 lines is a JSON object'."""
    path = tmp_path / name
    text = ("question,answer\nhi,there\n" if name.endswith(".csv")
            else '{"question": "hi"}\n{"question": "there"}\n')
    path.write_bytes(text.encode(encoding))
    err = _fails_cleanly(capsys, str(tmp_path / "out"), "--input", str(path))
    assert f"is {encoding.split('-')[0].upper()}-{encoding.split('-')[1]} text" in err
    assert "\\x00" not in err and "UTF-8" in err


def test_a_column_the_run_reads_twice_is_refused(tmp_path, capsys):
    """A header naming `question` twice (a spreadsheet's copied column) used to run
    on whichever of the two the reader kept (the last), without a word."""
    out = str(tmp_path / "out")
    csv_path = tmp_path / "cases.csv"
    csv_path.write_text("question,answer,question\nfirst?,a,second?\n", encoding="utf-8")
    err = _fails_cleanly(capsys, out, "--input", str(csv_path))
    assert "column 'question' appears 2 times" in err
    table = pa.table([pa.array(["first?"]), pa.array(["a"]), pa.array(["second?"])],
                     names=["question", "answer", "question"])
    pq_path = str(tmp_path / "cases.parquet")
    import pyarrow.parquet as pq
    pq.write_table(table, pq_path)
    assert "column 'question' appears 2 times" in _fails_cleanly(capsys, out, "--input", pq_path)
    # a column the run does not read may repeat
    csv_path.write_text("question,note,note\nfirst?,x,y\n", encoding="utf-8")
    assert run_cli("--input", str(csv_path), "--output", out, "--run-id", "n") == 0
    assert manifest(out, "n")["counts"]["valid_cases"] == 1


@pytest.mark.parametrize("flag,said", [
    ("--direct_num_workers=abc", "--direct_num_workers: invalid int value: 'abc'"),
    ("--direct_running_mode=bogus", "--direct_running_mode: invalid choice: 'bogus'"),
    ("--runner=FnApiRuner", "--runner 'FnApiRuner' is not a Beam runner"),
])
def test_a_bad_beam_option_is_one_line_and_writes_nothing(tmp_path, capsys, flag, said):
    """A bad Beam option value printed Beam's whole usage (134 lines, as
    '__main__.py'); a misspelt runner ran into a traceback (exit 1) after the
    run id's lease was written, or, without --shared-filesystem, was told its
    local paths cannot be reached by a remote runner's workers."""
    good = write_cases(str(tmp_path / "ok.parquet"), SAMPLE_ROWS)
    for extra in ([], ["--shared-filesystem"]):
        err = _fails_cleanly(capsys, str(tmp_path / "out"), "--input", good, flag, *extra)
        assert said in err and "usage:" not in err


@pytest.mark.parametrize("name,make,said", [
    ("cases.csv", "parquet", "is a Parquet file, not CSV text"),
    ("cases.csv", "zip", "is a zip archive (an Excel workbook? save it as CSV UTF-8), not CSV text"),
    ("cases.jsonl", "gzip", "is gzip-compressed (name it cases.jsonl.gz), not JSON Lines text"),
])
def test_a_binary_file_named_as_text_is_named_as_such(tmp_path, capsys, name, make, said):
    """An Excel workbook or a Parquet file named .csv (or read with input.format:
    csv), or a gzip file without .gz, was refused with a 'missing required column'
    whose 'columns present' were a screenful of the file's bytes."""
    import gzip
    import zipfile
    path = tmp_path / name
    if make == "parquet":
        write_cases(str(path), SAMPLE_ROWS)
    elif make == "zip":
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("xl/workbook.xml", "<workbook/>")
    else:
        path.write_bytes(gzip.compress(b'{"question": "hi"}\n'))
    err = _fails_cleanly(capsys, str(tmp_path / "out"), "--input", str(path))
    assert err == f"evalbeam: error: {path} {said}"


def test_the_runs_options_reach_the_filesystems_the_plan_reads(monkeypatch, tmp_path, capsys):
    """`--input s3://bucket/cases/` (docs/guides/runners.md, dask.md) was refused
    before every run with 'Must provide one of client or options': the plan lists
    and opens the input before Beam's Pipeline hands the filesystems their options,
    and s3:// (like hdfs://) cannot be used without them."""
    from apache_beam.io.filesystems import FileSystems
    from apache_beam.io.localfilesystem import LocalFileSystem
    from pipeline.execute import beam_options

    made_with = []

    class NeedsOptions(LocalFileSystem):
        @classmethod
        def scheme(cls):
            return "needsoptions"

        def __init__(self, pipeline_options):
            if pipeline_options is None:
                raise ValueError("Must provide one of client or options")
            made_with.append(pipeline_options)
            super().__init__(pipeline_options)

    monkeypatch.setattr(FileSystems, "_pipeline_options", None)  # as in a fresh process
    options = beam_options(["--s3_region_name=eu-west-1"])
    FileSystems.get_filesystem("needsoptions://bucket/cases.jsonl")
    assert made_with[-1].get_all_options(retain_unknown_options=True)[
        "s3_region_name"] == "eu-west-1"
    assert made_with[-1] is options
    try:
        import boto3  # noqa: F401
    except ImportError:  # without boto3, Beam now says what is missing
        monkeypatch.setattr(FileSystems, "_pipeline_options", None)
        err = _fails_cleanly(capsys, str(tmp_path / "out"), "--input", "s3://bucket/cases/")
        assert "Missing boto3 requirement" in err and "Must provide" not in err
        monkeypatch.setattr(FileSystems, "_pipeline_options", None)
        from pipeline.cli import run
        assert run(["status", "--output", "s3://bucket/evals", "--run-id", "r"]) == 2
        err = capsys.readouterr().err
        assert "Missing boto3 requirement" in err and "Must provide" not in err


@pytest.mark.parametrize("text", ['[{"question": "a?"}, {"question": "b?"}]\n',
                                  '[\n  {"question": "a?"},\n  {"question": "b?"}\n]\n'])
def test_a_json_array_named_jsonl_is_told_to_be_json(tmp_path, capsys, text):
    """A JSON array of cases saved as .jsonl: on one line it was 'none of its first
    1 lines is a JSON object'; pretty-printed it ran, as 4 input rows of which 3
    were invalid_json and 1 a case (the second case read, the first lost)."""
    path = tmp_path / "cases.jsonl"
    path.write_text(text, "utf-8")
    err = _fails_cleanly(capsys, str(tmp_path / "out"), "--input", str(path))
    assert err == (f"evalbeam: error: {path} holds a JSON array of cases, not JSON Lines (one "
                   "object per line): name it .json, or set input.format: json")
    (tmp_path / "cases.json").write_text(text, "utf-8")  # as it says: read whole, 2 cases
    assert run_cli("--input", str(tmp_path / "cases.json"), "--output", str(tmp_path / "o"),
                   "--run-id", "a") == 0
    assert manifest(str(tmp_path / "o"), "a")["counts"]["valid_cases"] == 2


@pytest.mark.parametrize("text", ['{"question": "a?"}\n{"question": "b?"}\n',
                                  '{"question": "a?"}\n'])
def test_json_lines_named_json_is_told_to_be_jsonl(tmp_path, capsys, text):
    """JSON Lines saved as .json, as Hugging Face datasets' to_json, Spark's
    write.json and pandas' to_json(lines=True) write it: two lines said 'cannot
    read X as JSON: Extra data: line 2 column 1 (char 19)', one line 'must be an
    array of objects, got a JSON object', neither what to do."""
    path = tmp_path / "cases.json"
    path.write_text(text, "utf-8")
    err = _fails_cleanly(capsys, str(tmp_path / "out"), "--input", str(path))
    assert err == (f"evalbeam: error: {path} holds JSON Lines (one object per line), not a "
                   "JSON array of cases: name it .jsonl, or set input.format: jsonl")
    config = tmp_path / "c.yaml"  # as it says: every line a case
    config.write_text("input: {format: jsonl}\n")
    assert run_cli("--input", str(path), "--output", str(tmp_path / "o"), "--config",
                   str(config), "--run-id", "a") == 0
    assert manifest(str(tmp_path / "o"), "a")["counts"]["valid_cases"] == text.count("\n")


def test_a_one_line_object_holding_the_cases_is_not_called_json_lines(tmp_path, capsys):
    """{"cases": [{...}, ...]} on one line (an export that wraps its list) was
    told it 'holds JSON Lines': it holds one object, whose list of objects is
    the cases; a case's own lists hold texts."""
    path = tmp_path / "cases.json"
    path.write_text('{"cases": [{"question": "a?"}, {"question": "b?"}]}\n', "utf-8")
    err = _fails_cleanly(capsys, str(tmp_path / "out"), "--input", str(path))
    assert err == (f"evalbeam: error: {path}: a JSON input must be an array of objects (one "
                   "per case), got a JSON object")


def test_an_arrow_ipc_file_is_told_apart_from_a_stream(tmp_path, capsys):
    """An Arrow IPC *file* (pyarrow.ipc.new_file, Feather v2) named .arrow was
    'cannot read X as an Arrow stream: Expected to read 1330795073 metadata bytes,
    but only read 662': .arrow inputs are the IPC streams save_to_disk writes."""
    import pyarrow.ipc as ipc
    table = pa.table({"question": ["a?", "b?"]})
    path = tmp_path / "cases.arrow"
    with ipc.new_file(str(path), table.schema) as writer:
        writer.write_table(table)
    err = _fails_cleanly(capsys, str(tmp_path / "out"), "--input", str(path))
    assert err == (f"evalbeam: error: {path} is an Arrow IPC file; .arrow inputs are read as "
                   "the IPC streams Dataset.save_to_disk writes: write the cases as Parquet "
                   "(pyarrow.parquet.write_table) or as a stream (pyarrow.ipc.new_stream)")


@pytest.mark.parametrize("data", [b"", b"\xff\xff\xff\xff\x00\x00\x00\x00"])
def test_an_empty_arrow_file_of_a_dataset_folder_is_one_line(tmp_path, capsys, data):
    """A Hugging Face dataset whose data-*.arrow is 0 bytes (a copy or a disk
    that filled up) or only the stream's end marker stopped the run with a
    StopIteration traceback (exit 1)."""
    from examples.formats.make_formats import write_hf_dataset
    folder = tmp_path / "ds"
    write_hf_dataset(folder, pa.table({"question": ["a?", "b?"]}))
    [path] = folder.glob("data-*.arrow")
    path.write_bytes(data)
    err = _fails_cleanly(capsys, str(tmp_path / "out"), "--input", str(folder))
    assert err == (f"evalbeam: error: cannot read {path} as an Arrow stream: it holds no "
                   "schema (empty, or cut short)")


def test_a_csv_quote_never_closed_is_an_error_row_not_a_cell(tmp_path):
    """A quote left open in b's last cell made the rest of the file that cell: b
    was a valid case whose reference held c's and d's lines, and c and d were
    gone without a word (an open quote in another cell said only "the record
    has 3 fields, the header 4")."""
    path = tmp_path / "cases.csv"
    path.write_text('case_id,question,answer,expected_answer\na,q1,a1,e1\n'
                    'b,q2,a2,"e2 never closed\nc,q3,a3,e3\nd,q4,a4,e4\n', encoding="utf-8")
    out = str(tmp_path / "out")
    assert run_cli("--input", str(path), "--output", out, "--run-id", "q") == 0
    assert [r["case_id"] for r in read_rows(out, "results")] == ["a"]
    (error,) = read_rows(out, "errors")
    assert (error["error_type"], error["source"]) == ("invalid_csv", f"{path}#1")
    assert error["message"].startswith("a quoted field in this record is never closed, so the "
                                       "rest of the file (2 lines) was read into it")
    m = manifest(out, "q")
    assert (m["counts"]["input_rows"], m["counts"]["invalid_rows"]) == (2, 1)
    assert m["reconciliation"]["ok"]


def test_a_column_spelt_otherwise_is_named_not_left_out(tmp_path, capsys):
    """`Expected Answer` and `Contexts` (a spreadsheet's headers) were not read and
    nothing said so: the run went on without references or passages, and a
    `QUESTION` header was refused without a word about the spelling."""
    path = tmp_path / "cases.csv"
    path.write_text('question,Expected Answer,Contexts\nHow long do refunds take?,30 days,'
                    '"[""Refunds take 30 days.""]"\n', encoding="utf-8")
    out = str(tmp_path / "out")
    assert run_cli("--input", str(path), "--output", out, "--run-id", "s") == 0
    said = ("the column 'Expected Answer' is not read (names are matched exactly; the run "
            "reads 'expected_answer'): rename it, or set input.columns: "
            "{expected_answer: Expected Answer}")
    assert said in capsys.readouterr().err
    assert said in manifest(out, "s")["notes"]
    assert any("the column 'Contexts' is not read" in n for n in manifest(out, "s")["notes"])
    (row,) = read_rows(out, "results")
    assert row["expected_answer"] is None and row["contexts"] is None  # as the note says
    path.write_text("QUESTION,answer\nhi,there\n", encoding="utf-8")
    err = _fails_cleanly(capsys, str(tmp_path / "out2"), "--input", str(path))
    assert "missing required column 'question'" in err
    assert "the column 'QUESTION' is not read (names are matched exactly" in err
    cfg = tmp_path / "c.yaml"
    cfg.write_text("input: {columns: {question: QUESTION}}\n", encoding="utf-8")
    mapped = str(tmp_path / "mapped")
    assert run_cli("--input", str(path), "--output", mapped, "--run-id", "m",
                   "--config", str(cfg)) == 0
    assert [r["question"] for r in read_rows(mapped, "results")] == ["hi"]


def test_a_folders_files_that_are_not_read_are_named(tmp_path, capsys):
    """A folder of cases with one saved as .tsv (and one whose name starts with
    '_') ran on the others alone and said nothing of the rows left behind."""
    folder = tmp_path / "cases"
    folder.mkdir()
    write_cases(str(folder / "a.parquet"), SAMPLE_ROWS[:2])
    (folder / "b.tsv").write_text("question\tanswer\nhi\tthere\n", encoding="utf-8")
    (folder / "_c.jsonl").write_text('{"question": "hi"}\n', encoding="utf-8")
    for quiet in ("_SUCCESS", ".DS_Store", "_metadata"):  # Spark's, macOS's, Dask's
        (folder / quiet).write_bytes(b"")
    out = str(tmp_path / "out")
    assert run_cli("--input", str(folder), "--output", out, "--run-id", "f") == 0
    said = (f"2 files in the input folder are not read (a folder is read by its files' "
            f"extensions, and skips names that start with '.' or '_'): {folder / '_c.jsonl'}, "
            f"{folder / 'b.tsv'}")
    assert said in capsys.readouterr().err
    assert said in manifest(out, "f")["notes"]
    assert len(read_rows(out, "results")) == 2


def test_a_lone_carriage_return_costs_its_row_not_the_run(tmp_path, capsys, monkeypatch):
    """A bare CR in one unquoted cell (text pasted from an old Mac tool) stopped
    the whole run: "cannot read ... as CSV near byte 24: new-line character seen
    in unquoted field - do you need to open the file in universal-newline
    mode?". A file whose lines all end in a CR (Excel for Mac's "CSV
    (Macintosh)") is refused saying so."""
    from transforms.read import cases as read_mod
    monkeypatch.setattr(read_mod, "SHARD_ROWS", 2)  # the rows after it in other shards
    path = tmp_path / "cases.csv"
    path.write_bytes(b"case_id,question,answer\na,q0,x\nb,q1\rpasted,x\nc,q2,x\nd,q3,x\ne,q4,x\n")
    out = str(tmp_path / "out")
    assert run_cli("--input", str(path), "--output", out, "--run-id", "r") == 0
    assert sorted(r["case_id"] for r in read_rows(out, "results")) == ["a", "c", "d", "e"]
    (error,) = read_rows(out, "errors")
    assert (error["error_type"], error["source"], error["message"]) == (
        "invalid_csv", f"{path}#1", "an unquoted cell holds a carriage return (CR) without a "
        "line feed: a cell with a line break must be quoted")
    m = manifest(out, "r")
    assert (m["counts"]["input_rows"], m["counts"]["invalid_rows"]) == (5, 1)
    assert m["reconciliation"]["ok"]
    path.write_bytes(b"case_id,question\ra,q0\rb,q1\r")
    capsys.readouterr()
    err = _fails_cleanly(capsys, str(tmp_path / "out2"), "--input", str(path))
    assert 'its header ends in a carriage return (CR) without a line feed' in err


@pytest.mark.parametrize("name,header,line", [
    ("cases.jsonl.gz", "", '{{"case_id": "c{i}", "question": "q{i}", "answer": "a"}}\n'),
    ("cases.csv.gz", "case_id,question,answer\n", "c{i},q{i},a\n")])
def test_a_truncated_gzip_file_is_refused_not_cut_short(tmp_path, capsys, name, header, line):
    """A .gz file cut short (an interrupted download) ran on the rows before the
    cut, its last half-row an invalid_json row, and the rest were gone without
    a word (the counts reconciled over what was read)."""
    import gzip
    text = header + "".join(line.format(i=i) for i in range(500))
    packed = gzip.compress(text.encode())
    path = tmp_path / name
    path.write_bytes(packed[:len(packed) // 2])
    err = _fails_cleanly(capsys, str(tmp_path / "out"), "--input", str(path))
    assert err.endswith(f"{path} as {'JSONL' if 'jsonl' in name else 'CSV'}: the file is "
                        "truncated: its gzip stream ends early")
    path.write_bytes(packed + gzip.compress(line.format(i=500).encode()))  # two members: `cat`
    out = str(tmp_path / "whole")
    assert run_cli("--input", str(path), "--output", out, "--run-id", "g") == 0
    assert manifest(out, "g")["counts"]["valid_cases"] == 501


def test_a_json_line_that_is_no_object_is_named_in_json_words(tmp_path):
    """A line `null` was dead-lettered as "the line is a JSON NoneType, not an
    object" (and `42`, `"text"`, `[...]` as int, str, list): Python's names."""
    path = tmp_path / "cases.jsonl"
    path.write_text('{"question": "q", "answer": "a"}\nnull\n42\n"text"\n[1]\ntrue\n',
                    encoding="utf-8")
    out = str(tmp_path / "out")
    assert run_cli("--input", str(path), "--output", out, "--run-id", "j") == 0
    said = {e["source"].rsplit("#")[1]: e["message"] for e in read_rows(out, "errors")}
    assert said == {str(i): f"the line is a JSON {kind}, not an object" for i, kind in
                    enumerate(["null", "number", "string", "array", "boolean"], start=1)}
    assert manifest(out, "j")["reconciliation"]["ok"]


@pytest.mark.parametrize("first", ["sep=,", "sep=;"])
def test_excels_sep_line_is_named(tmp_path, capsys, first):
    """A CSV saved for Excel with a `sep=,` line above its header was refused as
    "missing required column 'question'; columns present: ['', 'sep=']" (and
    `sep=;` was told its header looked separated by ';')."""
    path = tmp_path / "cases.csv"
    path.write_text(f"{first}\nquestion,answer\nq1,a1\n", encoding="utf-8")
    err = _fails_cleanly(capsys, str(tmp_path / "out"), "--input", str(path))
    assert err.endswith("(the first line is Excel's 'sep=' line, not the header: delete it, "
                        "so that the header is the first line)")


def test_a_json_line_giving_a_read_key_twice_is_an_error_row(tmp_path):
    """`{"question": "first?", "question": "second?"}` ran on the second question
    and dropped the first without a word (a CSV header naming `question` twice
    is refused); a key the run does not read may repeat."""
    path = tmp_path / "cases.jsonl"
    path.write_text('{"case_id": "a", "question": "first?", "question": "second?", '
                    '"answer": "x"}\n{"case_id": "b", "question": "q", "answer": "x", '
                    '"note": 1, "note": 2}\n', encoding="utf-8")
    out = str(tmp_path / "out")
    assert run_cli("--input", str(path), "--output", out, "--run-id", "k") == 0
    assert [r["case_id"] for r in read_rows(out, "results")] == ["b"]
    (error,) = read_rows(out, "errors")
    assert (error["source"], error["error_type"], error["message"]) == (
        f"{path}#0", "invalid_json",
        "the key 'question' appears 2 times in the line, and only one can be read: keep one")
    assert manifest(out, "k")["reconciliation"]["ok"]


def test_a_reference_of_another_type_is_told_both_shapes_it_may_take(tmp_path):
    """expected_answer may be a string or a list of strings, but `42`, `true`
    or an object was dead-lettered as 'expected_answer must be a list of
    strings, got int': a user fixing the row was sent to wrap one reference in
    a list. Every such row is an errors/ row and the counts reconcile."""
    path = tmp_path / "cases.jsonl"
    values = {"int": 42, "float": 3.5, "bool": True, "obj": {"text": "30 days"}}
    path.write_text("".join(json.dumps({"case_id": k, "question": "How long?", "answer": "30 days",
                                        "expected_answer": v}) + "\n"
                            for k, v in values.items())
                    + json.dumps({"case_id": "ok", "question": "How long?", "answer": "30 days",
                                  "expected_answer": "30 days"}) + "\n", encoding="utf-8")
    out = str(tmp_path / "out")
    assert run_cli("--input", str(path), "--output", out, "--run-id", "t") == 0
    said = {e["case_id"]: e["message"] for e in read_rows(out, "errors")}
    assert said == {k: f"expected_answer must be a string or a list of strings, got {kind}"
                    for k, kind in [("int", "int"), ("float", "float"), ("bool", "bool"),
                                    ("obj", "dict")]}
    assert [r["case_id"] for r in read_rows(out, "results")] == ["ok"]
    assert manifest(out, "t")["reconciliation"]["ok"]


def test_a_null_inside_a_list_is_named_null(tmp_path):
    """`"contexts": [null, "..."]` (a passage the retriever lost) was dead-lettered
    as 'contexts must be a list of strings, found element(s) of type NoneType':
    Python's name for JSON's null. The row is still an errors/ row."""
    path = tmp_path / "cases.jsonl"
    rows = [{"case_id": "ctx", "question": "q", "answer": "a", "contexts": [None, "30 days"]},
            {"case_id": "ref", "question": "q", "answer": "a", "expected_answer": ["x", None]},
            {"case_id": "ok", "question": "q", "answer": "a"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = str(tmp_path / "out")
    assert run_cli("--input", str(path), "--output", out, "--run-id", "n") == 0
    said = {e["case_id"]: e["message"] for e in read_rows(out, "errors")}
    assert said == {"ctx": "contexts must be a list of strings, found element(s) of type null",
                    "ref": "expected_answer must be a list of strings, found element(s) of "
                           "type null"}
    assert manifest(out, "n")["reconciliation"]["ok"]


@pytest.mark.parametrize("rule, message", [
    ("{metric: exact_match, below: 70, verdict: FAIL}",
     "verdict.rules[0].below 70 is outside exact_match's range [0, 1]: the rule would match "
     "every row with a value (a share is written 0.7, not 70)"),
    ("{metric: bleu, above: 1.5, verdict: FAIL}",
     "verdict.rules[0].above 1.5 is outside bleu's range [0, 1]: the rule would match no row"),
])
def test_a_rule_threshold_outside_the_metrics_range_is_one_line(tmp_path, capsys, rule, message):
    """`below: 70` (a percentage) on exact_match FAILed every row of the run,
    and `above: 1.5` never matched, without a word; a metric's own unit (a
    count, characters) or a custom metric's takes any threshold."""
    good = write_cases(str(tmp_path / "ok.parquet"), SAMPLE_ROWS)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"metrics: [exact_match, bleu]\nverdict:\n  rules:\n    - {rule}\n")
    assert message in _fails_cleanly(capsys, str(tmp_path / "out"), "--input", good,
                                     "--config", str(cfg))
    from pipeline.config import parse_config
    from pipeline.plan import applicable_rules
    within = parse_config({"verdict": {"rules": [
        {"metric": "exact_match", "below": 1, "verdict": "FAIL"},
        {"metric": "answer_length", "above": 2000, "verdict": "WARN"},
        {"metric": "mine", "above": 7, "verdict": "WARN"}]}})
    assert applicable_rules(within, ("exact_match", "answer_length", "mine")) is within


@pytest.mark.parametrize("nested", [False, True])
def test_a_hf_dataset_folder_without_state_json_says_state_json_is_missing(tmp_path, capsys,
                                                                           nested):
    """A save_to_disk folder copied without its state.json was read as a folder of
    files, and refused with "dataset_info.json: a JSON input must be an array of
    objects": a file the user never meant as cases. The error names state.json."""
    folder = tmp_path / "inputs" / "ds"
    shutil.copytree(os.path.join(ROOT, "tests", "fixtures", "hf_save_to_disk", "test"), folder)
    os.remove(folder / "state.json")
    given = folder.parent if nested else folder
    err = _fails_cleanly(capsys, str(tmp_path / "out"), "--input", str(given))
    assert f"{folder} holds a Hugging Face dataset's dataset_info.json" in err
    assert "no state.json" in err and "must be an array" not in err
