"""A run folder whose completion marker lists table files that are gone
(deleted, an incomplete copy or restore), cut short, replaced by files of
other rows, or whole in length and still ending as Parquet does but with a
damaged footer: every command that reads the run's rows says so in one line
and exits non-zero; none reads it as finished."""
from __future__ import annotations

import html
import http.client
import os
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.cli import run
from pipeline.viewer.server import start_in_thread
from tests.conftest import write_cases
from tests.pipeline_helpers import manifest, run_cli


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Runs a (whole), d (its marker lists results/ files that are gone) and
    t (the last of its two results/ files, one per bot, is cut short: an
    interrupted copy; a reader opens the first one whole) and r (the last one
    replaced by a whole file of one row: an overwrite, another copy restored).
    Each still ending with PAR1: f (every byte of the last results/ file's
    footer inverted), l (the last scores/ file's footer length pointing
    outside the file) and p (one byte of the last results/ file's footer
    changed so that it still reads, but places a column past the file's end)."""
    tmp = str(tmp_path_factory.mktemp("lost"))
    rows = [{"case_id": f"c{i}", "question": f"Question {i} about refunds?",
             "expected_answer": "Refunds take 30 days.",
             "answer": f"Refunds take {30 if i % 2 else i} days.",
             "label": "PASS" if i % 2 else "FAIL"} for i in range(6)]
    cases = write_cases(os.path.join(tmp, "cases.parquet"), rows)
    out = os.path.join(tmp, "out")
    config = os.path.join(tmp, "two_bots.yaml")
    with open(config, "w", encoding="utf-8") as fh:
        fh.write("bots:\n  - {name: recorded, type: precomputed}\n"
                 "  - {name: again, type: precomputed}\n")
    for run_id in ("a", "d", "t", "r", "f", "l", "p"):
        assert run_cli("--input", cases, "--output", out, "--run-id", run_id,
                       "--run-date", "2026-11-27", "--config", config) == 0
    for rel in manifest(out, "d")["files"]["results"]:
        os.remove(os.path.join(out, rel))
    listed = manifest(out, "t")["files"]["results"]
    assert len(listed) == 2
    with open(os.path.join(out, listed[-1]), "r+b") as fh:
        fh.truncate(100)
    replaced = os.path.join(out, manifest(out, "r")["files"]["results"][-1])
    pq.write_table(pq.read_table(replaced).slice(0, 1), replaced)
    for run_id, table, damage in (("f", "results", _inverted), ("l", "scores", _length_outside),
                                  ("p", "results", _column_outside)):
        path = os.path.join(out, manifest(out, run_id)["files"][table][-1])
        with open(path, "rb") as fh:
            data = bytearray(fh.read())
        damage(data, len(data) - 8 - int.from_bytes(data[-8:-4], "little"))
        assert data[-4:] == b"PAR1"
        with open(path, "wb") as fh:
            fh.write(data)
    return out


def _inverted(data: bytearray, footer: int) -> None:
    data[footer:-8] = bytes(b ^ 0xFF for b in data[footer:-8])


def _length_outside(data: bytearray, footer: int) -> None:
    data[-8:-4] = (4 * len(data)).to_bytes(4, "little")


def _column_outside(data: bytearray, footer: int) -> None:
    """The first byte of the footer whose change leaves a footer pyarrow reads,
    of the same rows, that places a column chunk past the end of the file."""
    rows = pq.ParquetFile(pa.BufferReader(bytes(data))).metadata.num_rows
    for at in range(footer, len(data) - 8):
        changed = bytearray(data)
        changed[at] ^= 0xFF
        try:
            meta = pq.ParquetFile(pa.BufferReader(bytes(changed))).metadata
            chunks = [meta.row_group(g).column(c) for g in range(meta.num_row_groups)
                      for c in range(meta.num_columns)]
        except (OSError, ValueError):
            continue
        if meta.num_rows == rows and any(
                c.data_page_offset + c.total_compressed_size > len(data) for c in chunks):
            data[at] ^= 0xFF
            return
    raise AssertionError("no such byte in the footer")


def _one_line(capsys) -> str:
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.startswith("evalbeam: error: ") and "\n" not in err and "Traceback" not in err, \
        captured
    return err


REPLACED = "its completion marker counts 12 results/ rows, its listed files hold 7"
FOOTER = "whose Parquet footer cannot be read ("
INVERTED = FOOTER + "Couldn't deserialize thrift"
OUTSIDE = FOOTER + "Parquet file size is"
COLUMN = FOOTER + "it places column"
DAMAGED = (("f", "results", INVERTED), ("l", "scores", OUTSIDE), ("p", "results", COLUMN))


def _names(run_id: str, table: str, why: str, text: str) -> bool:
    """Whether text says that the run's listed table file cannot be read, and why."""
    return re.search(rf"run '{run_id}': its completion marker lists the {table}/ file "
                     rf"[^ ]+\.parquet, {re.escape(why)}", text) is not None


@pytest.mark.parametrize("run_id, why", [("d", "missing"), ("t", "not a whole Parquet file"),
                                         ("r", REPLACED), ("f", INVERTED), ("l", OUTSIDE),
                                         ("p", COLUMN)])
@pytest.mark.parametrize("argv", [
    ["status", "--run-id", "{run}"],
    ["calibrate", "--run-id", "{run}"],
    ["compare", "--baseline", "a", "--candidate", "{run}"],
    ["compare", "--baseline", "{run}", "--candidate", "a"],
])
def test_every_command_refuses_a_run_whose_listed_tables_are_gone(folder, capsys, argv, run_id,
                                                                  why):
    """Before, for d: status said 'run d: finished ... counts reconcile' (exit 0)
    and compare 'cannot read the tables under DIR: IO Error: No files found
    that match the pattern ...' without naming the run. For t: calibrate and
    compare crashed with a traceback and exit 1 (pyarrow's 'Parquet magic
    bytes not found in footer', DuckDB's InvalidInputException 'No magic bytes
    found at end of file'), which cli.md documents for neither; status said
    'run t: finished' (exit 0). For r: status said finished (exit 0), and
    compare and calibrate read its 7 rows as the run's 12. For f and l every
    command crashed with a traceback and exit 1 (pyarrow's OSError "Couldn't
    deserialize thrift: ...", ArrowInvalid "Parquet file size is 1813 bytes,
    smaller than the size reported by footer's"); for p status said 'run p:
    finished' and calibrate printed its calibration (exit 0), and compare
    crashed on DuckDB's "Prefetch registered for bytes outside file"."""
    assert run([*(a.format(run=run_id) for a in argv), "--output", folder]) == 2
    err = _one_line(capsys)
    table = "scores/" if run_id == "l" else "results/"
    assert f"run {run_id!r}" in err and table in err and why in err, err


def test_the_viewer_says_so_for_such_a_run(folder):
    """Before: opening run d in the viewer failed with DuckDB's IOException
    (a 500 page) instead of the readers' RunUnreadable (a page that says why)."""
    from pipeline.viewer.data import Catalog
    from transforms.publish.completed import RunUnreadable
    catalog = Catalog(folder, prefetch=False)
    try:
        with pytest.raises(RunUnreadable, match="run 'd'.*results/.*missing"):
            catalog.run("d")
        with pytest.raises(RunUnreadable, match="run 't'.*results/.*not a whole Parquet file"):
            catalog.run("t")  # before: DuckDB's InvalidInputException, a 500 page
        with pytest.raises(RunUnreadable, match=f"run 'r': {REPLACED}"):
            catalog.run("r")  # before: its 7 rows as the run
        assert catalog.run("a").run.run_id == "a"
    finally:
        catalog.close()


def test_the_viewer_lists_a_run_with_a_damaged_footer_under_not_shown(folder):
    """Before: the runs list of a folder holding run f or l was a 500 page
    (pyarrow's OSError, ArrowInvalid from the check of the listed files), so
    no run of the folder could be opened from it; run f's page was a 500. The
    list now shows the readable run and says of each damaged one why, its run
    pages a 409 "This run cannot be read" naming the file."""
    server = start_in_thread(folder, 0)
    try:
        status, _, body = _get(server, "/")
        pages = {run_id: _get(server, f"/run/{run_id}") for run_id in ("f", "l", "p", "a")}
    finally:
        server.shutdown()
        server.server_close()
    assert status == 200, body[:500]
    assert re.findall(r'<a href="/run/([^"/]+)">', body) == ["a"]
    shown = html.unescape(re.search(r"<h2>Not shown</h2><ul>(.*?)</ul>", body).group(1))
    for run_id, table, why in DAMAGED:
        assert _names(run_id, table, why, shown), shown
        code, _, page = pages[run_id]
        assert code == 409 and "<h1>This run cannot be read</h1>" in page, (code, page[:500])
        assert _names(run_id, table, why, html.unescape(page)) and "Traceback" not in page
    assert pages["a"][0] == 200


def _get(server, path: str) -> tuple[int, dict, str]:
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=60)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read().decode("utf-8", "replace")
    finally:
        conn.close()


def test_the_python_api_says_so(folder):
    import evalbeam
    from transforms.publish.completed import RunUnreadable
    with pytest.raises(RunUnreadable, match="missing"):
        evalbeam.read_run(folder, "d").results()
    with pytest.raises(RunUnreadable, match="run 't': .* results/ file .*, which is not a whole Parquet file"):
        evalbeam.read_run(folder, "t").results()
    with pytest.raises(RunUnreadable, match=f"run 'r': {REPLACED}"):
        evalbeam.read_run(folder, "r").results()
    for run_id, table, why in DAMAGED:
        with pytest.raises(RunUnreadable) as raised:  # before: OSError, ArrowInvalid, and
            evalbeam.read_run(folder, run_id).table(table)  # for p pyarrow's own words
        assert _names(run_id, table, why, str(raised.value)), raised.value


def test_on_an_object_store_each_run_says_the_same(folder, capsys):
    """A listed file's end read once (tests/test_object_store_reads.py) still
    finds each damage on an object store (gs://, s3://, here the fake one of
    tests/fake_object_store.py), in the words it has locally: gone, cut short,
    replaced, a damaged footer, each in status and the Python API."""
    import evalbeam
    from tests.fake_object_store import ObjectStore
    from transforms.publish.completed import RunUnreadable
    with ObjectStore(folder) as store:
        for run_id, table in (("d", "results"), ("t", "results"), ("r", "results"),
                              ("f", "results"), ("l", "scores"), ("p", "results")):
            said = []
            for output in (folder, store.url):
                assert run(["status", "--output", output, "--run-id", run_id]) == 2
                err = _one_line(capsys)
                with pytest.raises(RunUnreadable) as raised:
                    evalbeam.read_run(output, run_id).table(table)
                said.append([text.replace(output, "OUT") for text in (err, str(raised.value))])
            assert said[0] == said[1] and f"run {run_id!r}" in said[1][1], said
        assert evalbeam.read_run(store.url, "a").results().num_rows == 12
