"""Issue 22 items 4, 9, 17, 18: every command that reads a run reads it through
its completion marker (runs/<run_id>/manifest.json and the files it lists).

A re-run of run id `k` is made to die in Finalize just before its commit, as
a kill there would: its 15 cases' files are moved into the tables, its
reports staged, and no marker names it. Every reader must still see the
committed attempt's 10 cases (20 rows over two bots), and a run id that
never committed must be refused with exit 2."""
from __future__ import annotations

import html
import http.client
import json
import os
import shutil

import duckdb
import pytest

from pipeline.cli import run
from pipeline.postrun.calibrate import calibrate
from schemas.tables import RESULTS
from tests.conftest import write_cases
from tests.pipeline_helpers import manifest, run_cli
from transforms.publish import finalize
from transforms.publish.trends import load_history

CONFIG = ("bots:\n  - {name: recorded, type: precomputed}\n  - {name: echo, type: precomputed}\n"
          "metrics: [exact_match, bleu, rougeL]\n")
DATE = "2026-11-21"


class KilledBeforeCommit(RuntimeError):
    pass


def _cases(folder: str, n: int, name: str) -> str:
    rows = [{"case_id": f"c{i}", "question": f"Question {i} about refunds?",
             "expected_answer": "Refunds take 30 days.",
             "answer": f"Refunds take {30 if i % 2 else i} days.",
             "label": "PASS" if i % 2 else "FAIL"} for i in range(n)]
    return write_cases(os.path.join(folder, f"{name}.parquet"), rows)


def _run(folder: str, out: str, cases: str, run_id: str, date: str = DATE) -> int:
    cfg = os.path.join(folder, "c.yaml")
    with open(cfg, "w") as fh:
        fh.write(CONFIG)
    return run_cli("--input", cases, "--output", out, "--config", cfg, "--run-id", run_id,
                   "--run-date", date)


def _die_at_commit(monkeypatch):
    """Finalize stops where a kill before the commit would stop it."""
    real = finalize.checkpoint

    def checkpoint(output, run_id, attempt, step):
        if step == "commit":
            raise KilledBeforeCommit(f"attempt {attempt} killed before its commit")
        real(output, run_id, attempt, step)
    monkeypatch.setattr(finalize, "checkpoint", checkpoint)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """base (10 cases), k (10 cases committed, a 15-case re-run killed before its
    commit) and never (killed before its first commit), in one output folder."""
    tmp = str(tmp_path_factory.mktemp("marker"))
    out = os.path.join(tmp, "out")
    ten, fifteen = _cases(tmp, 10, "ten"), _cases(tmp, 15, "fifteen")
    assert _run(tmp, out, ten, "base", "2026-11-20") == 0
    assert _run(tmp, out, ten, "k") == 0
    with pytest.MonkeyPatch.context() as mp:
        _die_at_commit(mp)
        for run_id in ("k", "never"):
            with pytest.raises(Exception, match="killed before its commit"):
                _run(tmp, out, fifteen, run_id)
    return out


def _glob_rows(out: str, run_id: str) -> int:
    return duckdb.connect().execute(
        f"select count(*) from read_parquet('{out}/results/**/*.parquet', "
        "hive_partitioning=true) where run_id = ?", [run_id]).fetchone()[0]


def test_the_killed_attempt_is_in_the_tables_but_not_committed(folder):
    assert _glob_rows(folder, "k") == 20 + 30   # what a glob reader would count
    assert manifest(folder, "k")["tables"]["results"] == 20
    assert not os.path.exists(os.path.join(folder, "runs", "never", "manifest.json"))
    assert _glob_rows(folder, "never") == 30


def test_read_completed_run_lists_only_the_committed_files(folder):
    from transforms.publish.completed import NoCompletedAttempt, read_completed_run
    run_k = read_completed_run(folder, "k")
    assert run_k.attempt == manifest(folder, "k")["attempt"]
    assert all(f".{run_k.attempt}." in p for p in run_k.files("results"))
    assert run_k.read(RESULTS, ["case_id"]).num_rows == 20
    with pytest.raises(NoCompletedAttempt, match="run never has no completed attempt"):
        read_completed_run(folder, "never")


def test_compare_pairs_the_committed_attempt(folder, capsys):
    capsys.readouterr()
    assert run(["compare", "--output", folder, "--baseline", "base", "--candidate", "k"]) == 0
    said = capsys.readouterr().out
    assert "20 paired cases over 2 bots; 0 only in baseline, 0 only in candidate, " \
           "0 with a repeated case id" in said, said


def test_compare_refuses_a_run_that_never_committed(folder, capsys):
    capsys.readouterr()
    for args in (["--baseline", "base", "--candidate", "never"],
                 ["--baseline", "never", "--candidate", "base"]):
        assert run(["compare", "--output", folder, *args]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("evalbeam: error: run never has no completed attempt") \
            and "\n" not in err, err
    assert not os.path.exists(os.path.join(folder, "runs", "never", "compare"))
    rows = duckdb.connect().execute(
        f"select count(*) from read_parquet('{folder}/comparisons/**/*.parquet', "
        "hive_partitioning=true) where run_id = 'never'").fetchone()[0]
    assert rows == 0


def test_calibrate_counts_the_committed_labels(folder, capsys):
    result = calibrate(folder, "k")
    verdict = {r["bot"]: r for r in result.rows if r["metric"] == "verdict"}
    assert {b: r["n"] for b, r in verdict.items()} == {"recorded": 10, "echo": 10}
    assert run(["calibrate", "--output", folder, "--run-id", "never"]) == 2
    assert "run never has no completed attempt" in capsys.readouterr().err


def test_report_html_is_the_committed_attempts(folder):
    page = open(os.path.join(folder, "runs", "k", "report.html"), encoding="utf-8").read()
    assert "10 rows, 10 valid" in page and "results/ (20 rows)" in page
    assert "15 rows" not in page
    report = open(os.path.join(folder, "runs", "k", "report.md"), encoding="utf-8").read()
    input_line = next(line for line in report.splitlines() if line.startswith("Input:"))
    assert "10 rows, 10 valid" in input_line and "15 rows" not in input_line
    assert not os.path.exists(os.path.join(folder, "runs", "never", "report.html"))


def test_trends_read_other_runs_through_their_markers(folder):
    current = [{"run_id": "now", "bot": "recorded", "suite": "*", "metric": "bleu",
                "mean": 0.5, "ci_low": 0.4, "ci_high": 0.6}]
    points = load_history(folder, "now", DATE, current)
    by_run: dict[str, list[dict]] = {}
    for p in points:
        by_run.setdefault(p["run_id"], []).append(p)
    assert set(by_run) == {"now", "base", "k"}  # `never` has no completed attempt
    m = manifest(folder, "k")
    summary = duckdb.connect().execute(
        "select bot, mean from read_parquet(?) where metric = 'bleu' and suite = '*'",
        [[os.path.join(folder, p) for p in m["files"]["summary"]]]).fetchall()
    committed = dict(summary)
    assert sorted((p["bot"], p["mean"]) for p in by_run["k"]) == sorted(committed.items())


# ---- foreign, tampered and corrupt markers (items 9 and 18), run ids (17) ----

def _copy(folder: str, tmp_path) -> str:
    out = str(tmp_path / "out")
    shutil.copytree(folder, out)
    return out


CORRUPT = {
    "not json": b"{bad",
    "a list": b"[1,2]",
    "binary": bytes(range(256)) * 4,
    "truncated": b'{"run_id": "k", "attempt": "',
    "counts is text": None,     # the real manifest with counts: "x"
    "foreign file": None,       # the real manifest listing ../../etc/passwd
    "deep": b"[" * 100_000 + b"]" * 100_000,
}


def _tamper(out: str, kind: str) -> None:
    path = os.path.join(out, "runs", "k", "manifest.json")
    data = CORRUPT[kind]
    if data is None:
        m = json.load(open(path))
        if kind == "counts is text":
            m["counts"] = "x"
        else:
            m["files"]["results"].append("../../etc/passwd")
        data = json.dumps(m).encode()
    with open(path, "wb") as fh:
        fh.write(data)


@pytest.mark.parametrize("kind", list(CORRUPT))
def test_a_corrupt_manifest_is_one_line_and_exit_2_everywhere(folder, tmp_path, capsys, kind):
    out = _copy(folder, tmp_path)
    _tamper(out, kind)
    for argv in (["status", "--output", out, "--run-id", "k"],
                 ["calibrate", "--output", out, "--run-id", "k"],
                 ["compare", "--output", out, "--baseline", "base", "--candidate", "k"]):
        capsys.readouterr()
        assert run(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith("evalbeam: error: run k: corrupt manifest") and "\n" not in err, \
            (argv, err)


def test_read_completed_run_names_the_corruption(folder, tmp_path):
    from transforms.publish.completed import CorruptManifest, read_completed_run
    out = _copy(folder, tmp_path)
    for kind, why in (("not json", "not JSON"), ("a list", "not an object"),
                      ("binary", "not UTF-8"), ("counts is text", "'counts'"),
                      ("foreign file", "'../../etc/passwd'"), ("deep", "nested too deeply")):
        _tamper(out, kind)
        with pytest.raises(CorruptManifest, match=f"run k: corrupt manifest .*{why}"):
            read_completed_run(out, "k")
        shutil.copy(os.path.join(folder, "runs", "k", "manifest.json"),
                    os.path.join(out, "runs", "k", "manifest.json"))


def _said_of_marker(capsys, out: str, data: bytes, why: str, command: str) -> None:
    """Run k's marker holding `data`: the command (exit 2) and schemas.ddl's
    warning both say "corrupt manifest PATH: <why>; "."""
    from schemas.ddl import main as ddl
    path = os.path.join(out, "runs", "k", "manifest.json")
    with open(path, "wb") as fh:
        fh.write(data)
    said = f"corrupt manifest {path}: {why}; "
    capsys.readouterr()
    assert run([command, "--output", out, "--run-id", "k"]) == 2
    assert said in capsys.readouterr().err, data
    assert ddl(["duckdb", out]) == 0
    assert said in capsys.readouterr().err, data


def test_a_marker_that_is_no_object_is_named_in_json_words(folder, tmp_path, capsys):
    """A marker holding `null` was "a JSON NoneType, not an object" in every
    command's line and in schemas.ddl's warning (and `42`, `"text"`, `[...]`,
    `true` int, str, list, bool): Python's names, not JSON's."""
    out = _copy(folder, tmp_path)
    for data, kind in (("null", "null"), ("42", "number"), ('"text"', "string"),
                       ("[1]", "array"), ("true", "boolean")):
        _said_of_marker(capsys, out, data.encode(), f"a JSON {kind}, not an object", "status")


@pytest.mark.parametrize("key, value, why", [
    ("finished_at", 5, "'finished_at' is not a JSON string"),
    ("finished_at", None, "'finished_at' is not a JSON string"),
    ("head_to_head", "x", "'head_to_head' is not a JSON array"),
    ("head_to_head", [1], "'head_to_head' is not a list of objects")])
def test_a_marker_with_a_field_of_the_wrong_type_is_corrupt_not_a_traceback(
        folder, tmp_path, key, value, why):
    """finished_at not a text made the viewer's runs list a 500 (TypeError: '<'
    not supported between 'str' and 'int', sorting the runs by it), and
    head_to_head not a list of objects made read_run(...).head_to_head() a
    ValueError traceback; every reader read the marker as a good one."""
    import evalbeam
    from pipeline.viewer.server import start_in_thread
    from transforms.publish.completed import CorruptManifest
    out = _copy(folder, tmp_path)
    path = os.path.join(out, "runs", "k", "manifest.json")
    m = json.load(open(path))
    m[key] = value
    with open(path, "w") as fh:
        json.dump(m, fh)
    with pytest.raises(CorruptManifest, match=f"run k: corrupt manifest .*: {why}; "):
        evalbeam.read_run(out, "k")
    server = start_in_thread(out, 0)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=60)
        conn.request("GET", "/")
        resp = conn.getresponse()
        body = html.unescape(resp.read().decode("utf-8"))
    finally:
        server.shutdown()
        server.server_close()
    assert resp.status == 200 and why in body and 'href="/run/base"' in body


@pytest.mark.parametrize("key", ["attempt", "run_date", "file"])
def test_a_marker_field_ending_in_a_newline_is_corrupt(folder, tmp_path, key):
    """An attempt id, a run date or a listed file's name ending in a newline
    passed the manifest's checks ('$' matches before a last newline): status
    printed "finished (attempt 3f2a9c1b0d4e" and the rest of its line below."""
    from transforms.publish.completed import CorruptManifest, read_completed_run
    out = _copy(folder, tmp_path)
    path = os.path.join(out, "runs", "k", "manifest.json")
    m = json.load(open(path))
    if key == "file":
        results = m["files"]["results"]
        results[0] = results[0][:-len(".parquet")] + "\n.parquet"
    else:
        m[key] += "\n"
        m["files"] = {}  # (the files carry the attempt id)
    with open(path, "w") as fh:
        json.dump(m, fh)
    with pytest.raises(CorruptManifest, match="^run k: corrupt manifest ") as caught:
        read_completed_run(out, "k")
    assert "\n" not in str(caught.value)


def test_compare_reads_a_marker_whose_verdict_rules_are_no_list(folder, tmp_path, capsys):
    """A candidate marker whose config said verdict rules: 5 made `evalbeam
    compare` a TypeError traceback (object of type 'int' has no len()) while
    it wrote the note on differing rules; the note is left out instead, as for
    a marker without its config."""
    out = _copy(folder, tmp_path)
    path = os.path.join(out, "runs", "k", "manifest.json")
    m = json.load(open(path))
    m["config"]["verdict"]["rules"] = 5
    with open(path, "w") as fh:
        json.dump(m, fh)
    capsys.readouterr()
    assert run(["compare", "--output", out, "--baseline", "base", "--candidate", "k"]) == 0
    assert "20 paired cases over 2 bots" in capsys.readouterr().out


def test_a_marker_naming_a_long_run_id_is_one_short_line(folder, tmp_path):
    """A marker whose run_id held 100,000 characters (a tampered or garbled
    file) made a corrupt-manifest line of 100,000 characters, naming it whole."""
    from transforms.publish.completed import CorruptManifest, read_completed_run
    out = _copy(folder, tmp_path)
    path = os.path.join(out, "runs", "k", "manifest.json")
    m = json.load(open(path))
    m["run_id"] = "x" * 100_000
    with open(path, "w") as fh:
        json.dump(m, fh)
    with pytest.raises(CorruptManifest, match=f"it names run '{'x' * 130}'; ") as caught:
        read_completed_run(out, "k")
    assert len(str(caught.value)) < len(path) + 300


def test_an_empty_marker_is_said_to_be_empty(folder, tmp_path, capsys):
    """A 0-byte marker (a write cut off at its start) was "not JSON (Expecting
    value: line 1 column 1 (char 0))" in every command and in schemas.ddl's
    warning: the parser's words for an empty file."""
    out = _copy(folder, tmp_path)
    for data in (b"", b" \n"):
        _said_of_marker(capsys, out, data, "empty", "calibrate")


def test_status_of_a_corrupt_manifest_says_corrupt_not_unknown(folder, tmp_path, capsys):
    out = _copy(folder, tmp_path)
    _tamper(out, "not json")
    capsys.readouterr()
    assert run(["status", "--output", out, "--run-id", "k"]) == 2
    err = capsys.readouterr().err
    assert "corrupt manifest" in err and "no lease, no manifest" not in err


def test_status_of_a_url_without_its_filesystem_is_one_line(capsys):
    for argv in (["status", "--output", "gs://no-such-bucket/out", "--run-id", "k"],
                 ["calibrate", "--output", "gs://no-such-bucket/out", "--run-id", "k"]):
        capsys.readouterr()
        assert run(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("evalbeam: error: cannot read gs://no-such-bucket/out") \
            and "apache-beam[gcp]" in err and "\n" not in err, err


@pytest.mark.parametrize("run_id", ["../../other/runs/k", "a/b", "", "a.b", "x" * 129, "k\n"])
def test_run_ids_are_validated_by_every_reader(folder, tmp_path, capsys, run_id):
    """`status --run-id ../../other/runs/x` must not report another folder's run."""
    out = str(tmp_path / "mine")
    os.makedirs(os.path.join(out, "runs"))
    # another folder's finished run, reachable by a relative path
    shutil.copytree(folder, str(tmp_path / "other"))
    for argv in (["status", "--output", out, "--run-id", run_id],
                 ["calibrate", "--output", out, "--run-id", run_id]):
        capsys.readouterr()
        assert run(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert "must be 1-128 letters, digits" in err and "\n" not in err, err


def test_status_names_the_report_under_the_folder_it_was_given(folder, tmp_path, capsys):
    """A folder copied or restored elsewhere (a CI cache, a mounted bucket):
    status points at the report in the folder it read, not where the run wrote."""
    out = _copy(folder, tmp_path)
    capsys.readouterr()
    assert run(["status", "--output", out, "--run-id", "base"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert f"  report:   {out}/runs/base/report.md" in lines, lines


def test_a_run_that_evaluated_nothing_is_refused_saying_so(folder, tmp_path, capsys):
    """Every input row invalid: the run finished with no results/ files, which
    is not a damaged run; compare and calibrate say what happened (exit 2)."""
    out = _copy(folder, tmp_path)
    bad = write_cases(str(tmp_path / "bad.parquet"),
                      [{"case_id": "a", "question": None, "label": "PASS"},
                       {"case_id": "b", "question": "", "label": "FAIL"}])
    assert _run(str(tmp_path), out, bad, "none") == 6  # it evaluated nothing
    said = ("run 'none' has no results/ rows: it evaluated nothing (none of its 2 input rows "
            "is a valid case; the reasons are in errors/)")
    for argv in (["calibrate", "--output", out, "--run-id", "none"],
                 ["compare", "--output", out, "--baseline", "base", "--candidate", "none"],
                 ["compare", "--output", out, "--baseline", "none", "--candidate", "base"]):
        capsys.readouterr()
        assert run(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err == f"evalbeam: error: {said}", (argv, err)


@pytest.mark.parametrize("command", ["status", "calibrate"])
def test_a_reader_that_stops_early_changes_no_exit_code(folder, tmp_path, command):
    """`evalbeam status ... | head -1` in a scheduler: stdout's reader is gone
    before the command prints. No traceback, and the command's own exit code
    (not 1, which status uses for a failed run)."""
    import subprocess
    import sys
    from tests.conftest import ROOT
    out = _copy(folder, tmp_path)
    env = {**os.environ, "PYTHONPATH": ROOT}
    proc = subprocess.Popen([sys.executable, "-m", "pipeline", command, "--output", out,
                             "--run-id", "base"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader leaves before anything is printed
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err, err


@pytest.mark.parametrize("run_id,code", [("base", 0), ("nope", 2)])
def test_a_reader_of_both_streams_that_stops_early_changes_no_exit_code(folder, tmp_path,
                                                                         run_id, code):
    """`evalbeam status ... 2>&1 | head -1`: stderr goes to the same reader,
    and what is printed there after it left (the error line of an unknown run
    id) turned exit 2 (or 0) into 1, Python's own traceback of the
    BrokenPipeError lost in the closed pipe."""
    import subprocess
    import sys
    from tests.conftest import ROOT
    out = _copy(folder, tmp_path)
    read, write = os.pipe()
    os.close(read)  # the reader left before anything is printed
    try:
        proc = subprocess.run([sys.executable, "-m", "pipeline", "status", "--output", out,
                               "--run-id", run_id], cwd=ROOT, stdout=write, stderr=write,
                              env={**os.environ, "PYTHONPATH": ROOT}, timeout=120)
    finally:
        os.close(write)
    assert proc.returncode == code


def test_a_new_attempt_removes_the_comparisons_it_was_part_of(tmp_path, capsys):
    """Comparisons of run a (as candidate and as baseline) describe an attempt
    the re-run replaced: gone with their pages; others stay."""
    out = str(tmp_path / "out")
    cases = write_cases(str(tmp_path / "c.parquet"), [
        {"case_id": f"c{i}", "question": f"q{i}", "answer": f"a{i}", "expected_answer": f"a{i}"}
        for i in range(6)])
    for run_id in ("a", "b", "c"):
        assert run_cli("--input", cases, "--output", out, "--run-id", run_id,
                       "--metrics", "exact_match") == 0
    for baseline, candidate in (("a", "b"), ("b", "a"), ("b", "c")):
        assert run(["compare", "--output", out, "--baseline", baseline,
                    "--candidate", candidate]) == 0
    tables = os.path.join(out, "comparisons")

    def written():
        return sorted(name for _, _, names in os.walk(tables) for name in names) + sorted(
            os.path.relpath(os.path.join(d, n), out) for d, _, names in
            os.walk(os.path.join(out, "runs")) for n in names if "compare" in d)
    assert len(written()) == 3 + 6
    assert run_cli("--input", cases, "--output", out, "--run-id", "a",
                   "--metrics", "exact_match") == 0
    assert written() == ["part-c.b.parquet", "runs/c/compare/b.html", "runs/c/compare/b.md"]


def _immutable(path: str, on: bool) -> bool:
    """chattr +i (-i): a folder that even root cannot write in, as on a
    read-only mount; False where the filesystem or the user cannot."""
    import subprocess
    return subprocess.run(["chattr", "+i" if on else "-i", path],
                          capture_output=True).returncode == 0


@pytest.mark.parametrize("argv,in_the_way", [
    (["compare", "--baseline", "base", "--candidate", "k"], "runs/k/compare"),
    (["compare", "--baseline", "base", "--candidate", "k"], "comparisons"),
    (["calibrate", "--run-id", "base"], "calibration"),
    (["compare", "--baseline", "base", "--candidate", "k"], None),
    (["calibrate", "--run-id", "base"], None),
])
def test_an_output_folder_the_command_cannot_write_in_is_one_line(folder, tmp_path, capsys,
                                                                   argv, in_the_way):
    """compare and calibrate write under --output (comparisons/ and the pages,
    calibration/ and calibration.md): a file where their folder goes, or an
    output folder they may not write in (a read-only mount), was a traceback
    of os.makedirs (PermissionError, FileExistsError) and exit 1. Now one line
    naming the folder, exit 2, and nothing written."""
    out = _copy(folder, tmp_path)
    for written in ("comparisons", "calibration", "runs/k/compare"):  # by earlier tests
        shutil.rmtree(os.path.join(out, written), ignore_errors=True)
    if in_the_way:
        with open(os.path.join(out, in_the_way), "w") as fh:
            fh.write("not a folder")
        said = f"{os.path.join(out, in_the_way)} is a file, not a folder"
    else:
        said = f"cannot write in {out} (Operation not permitted)"
        if not _immutable(out, True):
            pytest.skip("chattr +i is not available here")
    before = sorted(os.walk(out))
    capsys.readouterr()
    try:
        code = run([argv[0], "--output", out, *argv[1:]])
    finally:
        if not in_the_way:
            _immutable(out, False)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err == f"evalbeam: error: --output {out}: {said}\n"
    assert sorted(os.walk(out)) == before  # nothing written


CTRL_C_CHILD = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # a shell's `&` leaves it ignored
from pipeline import cli
import {module} as where
real = where.{name}
def ctrl_c(*args):  # Ctrl-C as the command reaches this step
    os.kill(os.getpid(), signal.SIGINT)
    return real(*args)
where.{name} = ctrl_c
cli.main(sys.argv[1:])
"""


@pytest.mark.parametrize("argv,module,name", [
    (["compare", "--baseline", "base", "--candidate", "k"], "pipeline.postrun.compare",
     "write_comparison"),
    (["calibrate", "--run-id", "base"], "pipeline.postrun.calibrate", "write_calibration"),
    (["status", "--run-id", "base"], "pipeline.postrun.status", "run_status"),
])
def test_ctrl_c_stops_a_command_in_one_line(folder, tmp_path, argv, module, name):
    """Ctrl-C during compare (82 s over a million cases), calibrate or status
    printed Python's KeyboardInterrupt traceback (30 lines of DuckDB, pyarrow
    or Beam internals) and exited 130, a code their --help did not list. Now
    one line that says what was stopped, and 130 is documented."""
    import subprocess
    import sys
    from tests.conftest import ROOT
    out = _copy(folder, tmp_path)
    proc = subprocess.run([sys.executable, "-c", CTRL_C_CHILD.format(module=module, name=name),
                           argv[0], "--output", out, *argv[1:]], cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": ROOT}, timeout=120)
    err = [line for line in proc.stderr.splitlines() if "apitools" not in line]
    assert proc.returncode == 130, proc.stderr
    assert len(err) == 1 and err[0].startswith(f"evalbeam: error: {argv[0]} stopped by "
                                               "SIGINT (Ctrl-C)"), proc.stderr
    from pipeline.cli import EXIT_CODES
    assert 130 in EXIT_CODES[argv[0]]


@pytest.mark.parametrize("argv", [
    ["status", "--run-id", "base"],
    ["calibrate", "--run-id", "base"],
    ["compare", "--baseline", "base", "--candidate", "k"],
    ["view"],
])
def test_an_empty_output_is_refused_and_the_root_is_not_the_current_folder(
        folder, tmp_path, capsys, monkeypatch, argv):
    """`--output "$OUT"` with OUT unset: `evalbeam run` refuses it ('--output is
    empty'), but status read the current folder's runs (exit 0 for a run of
    another folder), compare and calibrate read / (and compare wrote its pages
    under the current folder), view served /. And `--output /` was read as the
    current folder by status. Now '' is one line, exit 2, and / is /."""
    monkeypatch.setattr("pipeline.viewer.server.serve", lambda output, port: 0)
    out = _copy(folder, tmp_path)
    monkeypatch.chdir(out)  # the current folder holds runs of its own
    before = sorted(os.walk(out))
    capsys.readouterr()
    assert run([argv[0], "--output", "", *argv[1:]]) == 2
    assert capsys.readouterr().err == "evalbeam: error: --output is empty\n"
    if argv[0] != "view":
        assert run([argv[0], "--output", "/", *argv[1:]]) == 2
        assert " under / " in capsys.readouterr().err
    assert sorted(os.walk(out)) == before


def test_status_that_cannot_write_its_output_says_so_with_its_own_exit_code(folder, tmp_path):
    """`evalbeam status ... > /dev/full` (stdout on a full disk) printed a
    traceback of OSError and exited 1, which status uses for a failed run: a
    scheduler took a finished run for failed. One line on stderr, exit 74."""
    import subprocess
    import sys
    from pipeline.cli import EXIT_CODES
    from tests.conftest import ROOT
    out = _copy(folder, tmp_path)
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "pipeline", "status", "--output", out,
                               "--run-id", "base"], cwd=ROOT, stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=120,
                              env={**os.environ, "PYTHONPATH": ROOT})
    assert proc.returncode == 74, proc.stderr
    assert proc.stderr == ("evalbeam: error: status could not write its output: "
                           "No space left on device (stdout)\n"), proc.stderr
    assert "/dev/full" in EXIT_CODES["status"][74]  # in --help and the CLI reference
