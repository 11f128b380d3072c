"""Warehouse DDL (schemas/ddl.py): the DuckDB views read a real run's tables,
also beside a file of an older schema version; the docs show exactly what
the generator prints; and every Beam counter in the code is in the docs."""
from __future__ import annotations

import datetime
import glob
import json
import os
import re
import resource
import signal
import subprocess
import sys

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from schemas.ddl import ENGINES, all_ddl, main, table_ddl
from pipeline.cli import run
from schemas.tables import EVERY_TABLE, RESULTS, SCORES, USAGE
from tests.conftest import ROOT, SAMPLE_ROWS
from tests.test_docs import code_blocks
from tests.pipeline_helpers import (TABLE_NAMES, files_under, manifest, read_table, run_sample,
                                    write_marker)


def doc(page: str) -> str:
    with open(os.path.join(ROOT, "docs", page), encoding="utf-8") as fh:
        return fh.read()


def test_duckdb_views_read_every_table_and_older_files_by_column_name(tmp_path):
    """The run's five tables, and calibration/ and comparisons/ written after it
    by `evalbeam calibrate` and `evalbeam compare` (bot against bot)."""
    labels = ("PASS", "FAIL", "PASS", "WARN")
    rows = [dict(r, label=label) for r, label in zip(SAMPLE_ROWS, labels)]
    code, out = run_sample(tmp_path, "embeddings: {provider: hashing}\nbots: [{name: a, type: "
                           "precomputed}, {name: b, type: precomputed}]\n", "w", rows)
    assert code == 0
    assert run(["calibrate", "--output", out, "--run-id", "w"]) == 0
    assert run(["compare", "--output", out, "--baseline", "w:a", "--candidate", "w:b"]) == 0
    old = USAGE.schema.remove(USAGE.schema.get_field_index("shared_cache_hits"))  # schema 1
    folder = tmp_path / "out" / "usage" / "run_date=2000-01-01"
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([{"run_id": "old", "endpoint": "llm", "calls": 3}],
                                        schema=old), str(folder / "part-old.000000000000.0.parquet"))
    write_marker(out, "old", "2000-01-01")  # a committed run of schema 1
    con = duckdb.connect()
    con.execute(all_ddl("duckdb", out))
    counts = dict(manifest(out, "w")["tables"])
    for name in ("calibration", "comparisons"):  # what the commands wrote, read with pyarrow
        counts[name] = read_table(out, name).num_rows
    assert counts["calibration"] > 0 and counts["comparisons"] > 0
    assert set(counts) == set(EVERY_TABLE)
    for name, spec in EVERY_TABLE.items():
        columns = [row[0] for row in con.execute(f"DESCRIBE {name}").fetchall()]
        assert sorted(columns) == sorted(spec.schema.names + list(spec.partitions)), name
        [(n,)] = con.execute(f"SELECT count(*) FROM {name} WHERE run_id = 'w'").fetchall()
        assert n == counts[name], name
    assert con.execute("SELECT calls, shared_cache_hits, run_date FROM usage WHERE run_id = 'old'"
                       ).fetchall() == [(3, None, datetime.date(2000, 1, 1))]
    for name, spec in EVERY_TABLE.items():  # each file as the reference says, nothing a warehouse refuses
        paths = glob.glob(os.path.join(out, name, "**", "part-w.*.parquet"), recursive=True)
        assert paths, name
        for path in paths:
            written = pq.read_schema(path)
            assert written.remove_metadata().equals(spec.schema.remove_metadata()), path
            assert not [f.name for f in written if refused_by_warehouses(f.type)], path
            assert list_paths(path) == {f.name: f"{f.name}.list.element" for f in written
                                        if pa.types.is_list(f.type)}, path


def list_paths(path: str) -> dict[str, str]:
    """Each list column's leaf in the file's Parquet schema: the three-level LIST
    (`<name>.list.element`) is what BigQuery's enable_list_inference, Athena and
    Spark read as an array of strings; the legacy two-level form (`<name>.item`,
    or `<name>.array`) is not."""
    schema = pq.ParquetFile(path).schema
    leaves = [schema.column(i).path for i in range(len(schema))]
    return {p.split(".")[0]: p for p in leaves if "." in p}


def test_bigquery_reads_the_list_columns_as_arrays():
    """BigQuery's external table declared contexts ARRAY<STRING> without
    enable_list_inference, which reads a Parquet LIST as a STRUCT instead: the
    declared schema does not match the files. Tables with a list column get the
    option; the others do not need it."""
    for name, spec in EVERY_TABLE.items():
        ddl = table_ddl(spec, "bigquery", "gs://b/e")
        has_list = any(pa.types.is_list(f.type) for f in spec.schema)
        assert ("enable_list_inference = true" in ddl) == has_list, name
        assert ("ARRAY<STRING>" in ddl) == has_list, name
    assert "enable_list_inference" in table_ddl(RESULTS, "bigquery", "gs://b/e")


def refused_by_warehouses(t: pa.DataType) -> bool:
    """Types BigQuery, Athena, Spark or Snowflake reject or misread in Parquet:
    unsigned ints, nanosecond or zone-less timestamps, dictionaries, large
    strings or lists, structs and maps (a list of strings is ARRAY<STRING>)."""
    if pa.types.is_list(t):
        return not pa.types.is_string(t.value_type)
    return (pa.types.is_unsigned_integer(t) or pa.types.is_dictionary(t)
            or pa.types.is_large_string(t) or pa.types.is_large_list(t) or pa.types.is_struct(t)
            or pa.types.is_map(t) or (pa.types.is_timestamp(t) and (t.unit == "ns" or not t.tz)))


def test_duckdb_views_keep_bot_names_of_digits_as_text(tmp_path):
    """DuckDB guesses a Hive partition's type from the folder names: with every
    bot named by digits, bot= would read as BIGINT (the other tables' `bot`
    column is text, and a bot named 007 would read as 7)."""
    code, out = run_sample(tmp_path, "embeddings: {provider: hashing}\nbots: [{name: '1', type: "
                           "precomputed}, {name: '2024', type: precomputed}]\n", "d")
    assert code == 0
    con = duckdb.connect()
    for name in ("results", "scores", "summary"):
        con.execute(table_ddl(EVERY_TABLE[name], "duckdb", out))
    for name in ("results", "scores"):
        got = con.execute(f"SELECT DISTINCT typeof(bot), bot, typeof(run_date) FROM {name} "
                          "ORDER BY bot").fetchall()
        assert got == [("VARCHAR", "1", "DATE"), ("VARCHAR", "2024", "DATE")], name
    assert con.execute("SELECT count(*) FROM results JOIN summary USING (run_id, bot) "
                       "WHERE summary.metric = 'verdict'").fetchone()[0] > 0


@pytest.mark.parametrize("engine,location", [("bigquery", "gs://bucket/evals"),
                                             ("athena", "s3://bucket/evals"),
                                             ("spark", "s3a://bucket/evals")])
def test_the_docs_show_the_generated_statements(engine, location):
    assert table_ddl(SCORES, engine, location) in doc("guides/warehouse.md")


def test_the_docs_show_every_duckdb_view():
    views = all_ddl("duckdb", "out/example").split("\n\n")[1:]
    page = doc("guides/warehouse.md")
    assert len(views) == len(EVERY_TABLE) and all(v.strip() in page for v in views)


def test_the_command_prints_every_table(capsys):
    for engine in ENGINES:
        assert main([engine, "gs://b/e", "--dataset", "nightly"]) == 0
        text = capsys.readouterr().out
        assert all(f"/e/{name}" in text for name in EVERY_TABLE)
        assert engine == "duckdb" or "nightly.usage" in text


def test_every_beam_counter_in_the_code_is_in_the_docs():
    """Literal counters by namespace and name, computed names by namespace."""
    found = set()
    for folder, _, files in os.walk(os.path.join(ROOT, "transforms")):
        for f in files:
            if f.endswith(".py"):
                with open(os.path.join(folder, f), encoding="utf-8") as fh:
                    text = fh.read()
                found |= set(re.findall(r'Metrics\.counter\("([\w.]+)", ("[\w]+"|[^)]+)\)',
                                        text))
    from transforms.remote.usage import call_counters
    names = {(ns, name.strip('"')) for ns, name in found if name.startswith('"')}
    names |= {("evalbeam.remote", n) for n in call_counters()}
    computed = {ns for ns, name in found if not name.startswith('"')}
    section = doc("reference/counters.md")
    documented = {}  # namespace -> names in its rows
    for line in section.splitlines():
        if line.startswith("| `"):
            ns, listed = (c.strip() for c in line.split("|")[1:3])
            documented.setdefault(ns.strip("`"), set()).update(re.findall(r"`([^`]+)`", listed))
    assert len(names) >= 9  # 4 in transforms, 5 of the remote layer
    assert all(name in documented.get(ns, ()) for ns, name in names), names
    assert {"evalbeam.verdict", "evalbeam.metrics"} <= computed <= set(documented)


def test_the_duckdb_views_leave_out_a_killed_re_runs_rows(tmp_path):
    """A re-run killed after moving its files in leaves them beside the
    committed attempt's under the same run id: the guide's views read only
    the attempts the manifests name."""
    code, out = run_sample(tmp_path, "embeddings: {provider: hashing}\n", "k")
    assert code == 0
    marker = manifest(out, "k")
    [committed] = marker["files"]["results"]  # one bot: one file
    path = os.path.join(out, committed)
    killed = path.replace(f"part-k.{marker['attempt']}.", "part-k.ffffffffffff.")
    with open(path, "rb") as src, open(killed, "wb") as dst:
        dst.write(src.read())
    con = duckdb.connect()
    con.execute(table_ddl(RESULTS, "duckdb", out))
    glob = f"read_parquet('{out}/results/**/*.parquet', hive_partitioning = true)"
    [(everything,)] = con.execute(f"SELECT count(*) FROM {glob}").fetchall()
    [(rows,)] = con.execute("SELECT count(*) FROM results").fetchall()
    assert rows == marker["counts"]["results_rows"] and everything == 2 * rows


def test_duckdb_views_leave_out_runs_that_never_committed(tmp_path):
    """A nightly run killed after moving its files in, before its manifest,
    leaves them in the Hive folders until its run id runs again (for a new
    id each night: never). The guide's views count only committed attempts."""
    code, out = run_sample(tmp_path, "embeddings: {provider: hashing}\n", "ok")
    assert code == 0
    code, _ = run_sample(tmp_path, "embeddings: {provider: hashing}\n", "killed")
    assert code == 0
    os.remove(os.path.join(out, "runs", "killed", "manifest.json"))  # as a kill before step 4
    con = duckdb.connect()
    for name in TABLE_NAMES:
        con.execute(table_ddl(EVERY_TABLE[name], "duckdb", out))
    counts = manifest(out, "ok")["tables"]
    for name in TABLE_NAMES:
        assert read_table(out, name).num_rows == 2 * counts[name], name  # both runs' files are there
        got = dict(con.execute(f"SELECT run_id, count(*) FROM {name} GROUP BY ALL").fetchall())
        assert got == ({"ok": counts[name]} if counts[name] else {}), name
    assert sorted(r[0] for r in con.execute("DESCRIBE results").fetchall()) == sorted(
        RESULTS.schema.names + list(RESULTS.partitions))  # no `filename` column


def test_the_guides_pyarrow_recipe_reads_committed_runs_with_text_bots(tmp_path):
    """pyarrow.dataset over results/ reads a killed run's files and guesses
    bot=2024 as int32: the guide's recipe reads the manifests' files, bot as
    text and run_date as a date."""
    config = "embeddings: {provider: hashing}\nbots: [{name: '2024', type: precomputed}]\n"
    assert run_sample(tmp_path, config, "ok")[0] == 0
    code, out = run_sample(tmp_path, config, "killed")
    assert code == 0
    os.remove(os.path.join(out, "runs", "killed", "manifest.json"))  # as a kill before step 4
    [(_, block)] = [b for b in code_blocks(doc("guides/warehouse.md"), ("python",))]
    scope: dict = {}
    exec(block.replace('"out/example"', repr(out)), scope)
    results = scope["results"]
    assert results.schema.field("bot").type == pa.string()
    assert results.schema.field("run_date").type == pa.date32()
    assert sorted(set(results.column("run_id").to_pylist())) == ["ok"]
    assert results.num_rows == manifest(out, "ok")["tables"]["results"]


def test_a_corrupt_manifest_leaves_out_its_run_with_a_warning_not_every_view(tmp_path, capsys):
    """A nightly folder where one run's manifest is truncated, empty, not an
    object, not UTF-8 or without a file list: the views read the other runs
    (as `evalbeam status` and the viewer read them, that run being
    unreadable), and the command that prints them names the runs left out."""
    config = "embeddings: {provider: hashing}\n"
    bad = {"cut": None, "empty": b"", "array": b"[]\n", "utf16": "{}".encode("utf-16"),
           "other": None, "unlisted": None}
    for run_id in ("ok", *bad):
        code, out = run_sample(tmp_path, config, run_id)
        assert code == 0
    for run_id, data in bad.items():
        path = os.path.join(out, "runs", run_id, "manifest.json")
        with open(path, "rb") as fh:
            text = fh.read()
        if run_id == "cut":
            data = text[:len(text) // 2]  # a copy cut short
        elif run_id == "other":  # run ok's marker copied over
            data = open(os.path.join(out, "runs", "ok", "manifest.json"), "rb").read()
        elif run_id == "unlisted":  # no file list, as the commands refuse it
            data = json.dumps({k: v for k, v in json.loads(text).items() if k != "files"}
                              ).encode()
        with open(path, "wb") as fh:
            fh.write(data)
    capsys.readouterr()  # the runs' own lines
    assert main(["duckdb", out]) == 0
    printed = capsys.readouterr()
    con = duckdb.connect()
    for view in printed.out.split("\n\n")[1:len(TABLE_NAMES) + 1]:  # the run's five
        con.execute(view)
    counts = manifest(out, "ok")["tables"]
    for name in TABLE_NAMES:
        got = dict(con.execute(f"SELECT run_id, count(*) FROM {name} GROUP BY ALL").fetchall())
        assert got == ({"ok": counts[name]} if counts[name] else {}), name
    warned = printed.err.splitlines()
    assert len(warned) == len(bad), printed.err
    for run_id, line in zip(sorted(bad), warned):
        assert line.startswith(f"warning: run {run_id}: ") and "left out of the views" in line
    [(_, block)] = [b for b in code_blocks(doc("guides/warehouse.md"), ("python",))]
    scope: dict = {}
    exec(block.replace('"out/example"', repr(out)), scope)  # the guide's pyarrow recipe
    assert scope["results"].column("run_id").to_pylist() == ["ok"] * counts["results"]
    assert capsys.readouterr().out.count("its run is left out") == len(bad)


def test_the_guides_pyarrow_recipe_reads_beside_a_run_without_results(tmp_path, capsys):
    """A committed run none of whose rows was a valid case lists no results/
    files (its manifest's files have no 'results' key): the recipe stopped on
    a KeyError, so no run of the folder could be read."""
    config = "embeddings: {provider: hashing}\n"
    assert run_sample(tmp_path, config, "ok")[0] == 0
    _, out = run_sample(tmp_path, config, "none", [{"question": None}])
    assert "results" not in manifest(out, "none")["files"]
    capsys.readouterr()
    [(_, block)] = [b for b in code_blocks(doc("guides/warehouse.md"), ("python",))]
    scope: dict = {}
    exec(block.replace('"out/example"', repr(out)), scope)
    assert scope["results"].num_rows == manifest(out, "ok")["tables"]["results"]
    assert "warning" not in capsys.readouterr().out


def test_the_duckdb_views_read_the_listed_files_and_refuse_when_they_do_not_reconcile(tmp_path):
    """The views kept every file named with the committed attempt: a stray
    copy of one (`part-r.<attempt>.<x> (1).parquet`, a sync tool's) doubled its
    rows, and a listed file deleted or replaced after the commit read as fewer
    rows, silently. They now read exactly the files the manifest lists, and
    refuse in one line naming the run when those do not hold the rows it
    counts; a query of another table of the run still reads."""
    config = ("embeddings: {provider: hashing}\nbots: [{name: a, type: precomputed}, "
              "{name: b, type: precomputed}]\n")
    code, out = run_sample(tmp_path, config, "r")
    assert code == 0
    marker = manifest(out, "r")
    first, second = (os.path.join(out, p) for p in marker["files"]["results"])
    con = duckdb.connect()
    for name in TABLE_NAMES:
        con.execute(table_ddl(EVERY_TABLE[name], "duckdb", out))

    def count(name: str) -> int:
        return con.execute(f"SELECT count(*) FROM {name}").fetchone()[0]

    with open(first, "rb") as src, open(first[:-len(".parquet")] + " (1).parquet", "wb") as dst:
        dst.write(src.read())
    assert count("results") == marker["tables"]["results"] == 2 * len(SAMPLE_ROWS)
    os.remove(second)  # deleted after the commit
    with pytest.raises(duckdb.Error) as refused:
        count("results")
    line = str(refused.value)
    assert "\n" not in line and line.endswith(
        "run r: its completion marker lists 2 results/ files of 8 rows, but the folder holds 1 "
        "of them, of 4 rows (deleted, replaced or not copied?): run it again to replace them, "
        "or SET VARIABLE evalbeam_skip_damaged = true to read the other runs"), line
    with pytest.raises(duckdb.Error, match="run r: its completion marker"):
        con.execute("SELECT count(*) FROM results WHERE bot = 'a'").fetchall()
    assert count("scores") == marker["tables"]["scores"]
    [scores, _] = (os.path.join(out, p) for p in marker["files"]["scores"])
    fewer = pq.read_table(scores).slice(0, 1)  # replaced by a whole file of fewer rows
    pq.write_table(fewer, scores)
    with pytest.raises(duckdb.Error, match=r"lists 2 scores/ files of \d+ rows, but the "
                                           r"folder holds 2 of them, of \d+ rows"):
        count("scores")


def test_one_damaged_run_can_be_left_out_so_the_other_runs_stay_readable(tmp_path):
    """One run with a listed file deleted made every query of the view fail, so
    no run of the folder could be read until that one was run again. The views
    still refuse by default; SET VARIABLE evalbeam_skip_damaged = true reads
    the intact runs and leaves the damaged one out."""
    config = "embeddings: {provider: hashing}\n"
    code, out = run_sample(tmp_path, config, "good")
    assert code == 0
    code, out = run_sample(tmp_path, config, "bad")
    assert code == 0
    good, bad = manifest(out, "good"), manifest(out, "bad")
    for path in bad["files"]["results"]:
        os.remove(os.path.join(out, path))
    con = duckdb.connect()
    for name in TABLE_NAMES:
        con.execute(table_ddl(EVERY_TABLE[name], "duckdb", out))
    with pytest.raises(duckdb.Error, match="run bad: its completion marker lists"):
        con.execute("SELECT count(*) FROM results").fetchall()
    con.execute("SET VARIABLE evalbeam_skip_damaged = true")
    assert con.execute("SELECT run_id, count(*) FROM results GROUP BY run_id").fetchall() == [
        ("good", good["tables"]["results"])]
    assert con.execute("SELECT count(*) FROM scores WHERE run_id = 'bad'").fetchone()[0] == \
        bad["tables"]["scores"]  # its intact tables still read
    con.execute("SET VARIABLE evalbeam_skip_damaged = false")
    with pytest.raises(duckdb.Error, match="run bad"):
        con.execute("SELECT count(*) FROM results").fetchall()


def test_the_duckdb_views_read_a_run_in_a_folder_named_with_quotes_and_spaces(tmp_path, capsys):
    """`python -m schemas.ddl duckdb "runs/it's Q3"` printed the folder inside
    '…' as it was: every view was a Parser Error (`syntax error at or near
    "s"`). The folder is now a quoted literal; the views read the run."""
    folder = tmp_path / "it's a \"nightly\" run; --"
    folder.mkdir()
    code, out = run_sample(folder, "embeddings: {provider: hashing}\n", "q")
    assert code == 0
    capsys.readouterr()
    assert main(["duckdb", out]) == 0
    printed = capsys.readouterr()
    assert printed.err == ""
    con = duckdb.connect()
    con.execute(printed.out.split("\n\n", 1)[1].rsplit("\n\n", 2)[0])  # the run's five
    counts = manifest(out, "q")["tables"]
    for name in TABLE_NAMES:
        got = dict(con.execute(f"SELECT run_id, count(*) FROM {name} GROUP BY ALL").fetchall())
        assert got == ({"q": counts[name]} if counts[name] else {}), name


# Athena's DDL reserved words (its "Reserved keywords to escape in DDL statements")
# that are also column names of some table: results' `references`
ATHENA_DDL_RESERVED = {"references", "date", "time", "timestamp", "user", "values", "percent",
                       "range", "rows", "row", "order", "group", "table", "column",
                       "function", "map", "array", "current", "end", "interval", "local"}


@pytest.mark.parametrize("engine,location", [("athena", "s3://b/e"), ("spark", "s3a://b/e")])
def test_athena_and_spark_statements_quote_every_column(engine, location):
    """Athena's DDL refuses a reserved word as a bare column name: results'
    `references array<string>` was a syntax error, so results/ could not be
    created at all (Spark's parser, in ANSI mode, the same). Every column and
    partition is declared in backticks."""
    assert {n for spec in EVERY_TABLE.values() for n in spec.schema.names} & ATHENA_DDL_RESERVED
    for name, spec in EVERY_TABLE.items():
        ddl = table_ddl(spec, engine, location)
        declared = re.findall(r"^  (\S+) ", ddl, re.M)
        assert declared == [f"`{c}`" for c in spec.schema.names] + (
            [f"`{p}`" for p in spec.partitions] if engine == "spark" else []), name
        clause = re.search(r"PARTITIONED BY \((.*)\)", ddl).group(1)  # Athena's: name type
        assert [p.split()[0] for p in clause.split(", ")] == [f"`{p}`" for p in spec.partitions]


def test_the_guides_pyarrow_recipe_refuses_a_listed_file_that_lost_rows(tmp_path):
    """The recipe read the listed files as they were: one replaced after the
    commit by a whole file of fewer rows read as fewer rows, silently. It now
    checks the rows against the manifests' counts, as the DuckDB views do."""
    assert run_sample(tmp_path, "embeddings: {provider: hashing}\n", "r")[0] == 0
    out = str(tmp_path / "out")
    [listed] = manifest(out, "r")["files"]["results"]
    path = os.path.join(out, listed)
    pq.write_table(pq.read_table(path).slice(0, 1), path)
    [(_, block)] = [b for b in code_blocks(doc("guides/warehouse.md"), ("python",))]
    with pytest.raises(ValueError, match=r"^results/: the manifests count 4 rows, their files "
                                         r"hold 1$"):
        exec(block.replace('"out/example"', repr(out)), {})


def _file_size_limited(limit: int):
    """A child whose files cannot grow past `limit` bytes, as on a full disk:
    a write past it fails with EFBIG (SIGXFSZ ignored, so it is an OSError)."""
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_a_failed_compare_or_calibrate_leaves_the_tables_views_reading(tmp_path):
    """`evalbeam compare` and `evalbeam calibrate` wrote their table's file in
    place (compare after deleting the earlier one): a write that failed (a
    full disk, a kill) left a cut file part-….parquet in comparisons/ or
    calibration/, and every DuckDB view of that table then failed to be made
    or read (`No magic bytes found at end of file`), every earlier comparison
    with it. The file is written under _tmp/ and renamed into place: a failed
    write leaves the earlier file and nothing else, and says so in one line
    (it was a traceback)."""
    labels = ("PASS", "FAIL", "PASS", "WARN")
    rows = [dict(r, label=label) for r, label in zip(SAMPLE_ROWS, labels)]
    code, out = run_sample(tmp_path, "embeddings: {provider: hashing}\nbots: [{name: a, type: "
                           "precomputed}, {name: b, type: precomputed}]\n", "f", rows)
    assert code == 0
    commands = {"calibration": ["calibrate", "--output", out, "--run-id", "f"],
                "comparisons": ["compare", "--output", out, "--baseline", "f:a",
                                "--candidate", "f:b"]}
    before = {}
    for name, argv in commands.items():
        assert run(argv) == 0
        before[name] = sorted(files_under(os.path.join(out, name)))
    for name, argv in commands.items():
        failed = subprocess.run([sys.executable, "-m", "pipeline", *argv], cwd=ROOT,
                                capture_output=True, text=True, timeout=300,
                                preexec_fn=_file_size_limited(1024))
        # one line, exit 74 (EX_IOERR), where a traceback and exit 1 were
        assert failed.returncode == 74 and failed.stderr.count("\n") == 1, failed.stderr
        assert re.fullmatch(r"evalbeam: error: cannot write \S+/part-f\.\S+\.parquet: File too "
                            r"large; the earlier file, if any, is left as it was\n",
                            failed.stderr), failed.stderr
        assert sorted(files_under(os.path.join(out, name))) == before[name], name
        con = duckdb.connect()
        con.execute(table_ddl(EVERY_TABLE[name], "duckdb", out))
        assert con.execute(f"SELECT count(*) FROM {name}").fetchone()[0] == \
            read_table(out, name).num_rows > 0, name
    assert not [f for f in files_under(out) if f.startswith("_tmp")]


@pytest.mark.parametrize("engine,location", [("bigquery", "gs://b/Q3's \\evals"),
                                             ("athena", "s3://b/Q3's \\evals"),
                                             ("spark", "s3a://b/Q3's \\evals")])
def test_a_location_with_a_quote_is_one_string_literal(engine, location):
    """BigQuery's uris and prefix, Athena's and Spark's LOCATION printed the
    location inside '…' as it was: a folder named Q3's ended the string there
    and the rest was a syntax error. Their literals escape ' and \\ with a
    backslash (DuckDB's doubles the quote: tested on a real run above)."""
    ddl = table_ddl(SCORES, engine, location)
    literals = [re.sub(r"\\(.)", r"\1", t) for t in re.findall(r"'((?:[^'\\]|\\.)*)'", ddl)]
    paths = [t for t in literals if "://" in t]
    assert paths and all(p.startswith(f"{location}/scores") for p in paths), paths
    assert len(paths) == (2 if engine == "bigquery" else 1)
