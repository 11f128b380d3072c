"""The snippets a new user copies from the pages they read first (README,
Getting started, the Python API, warehouse, CI gate, Ragas and watching-runs
guides) work as written: the Python and DuckDB SQL blocks run against a real
run of the bundled example (its first cases, so the test stays short), and
every `evalbeam ...` command line of the docs parses with the CLI's own
parser, its Beam flags included. A renamed column, Result attribute or flag
fails here with the page and line of the snippet."""
from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import re
import shlex
import shutil

import pyarrow.parquet as pq
import pytest

from pipeline.cli import _parser, run
from pipeline.execute import beam_flags
from tests.conftest import EXAMPLE, ROOT
from tests.test_docs import _doc_pages, code_blocks

PAGES = ("README.md", "docs/getting-started.md", "docs/guides/python-api.md",
         "docs/guides/warehouse.md", "docs/guides/ci-gate.md",
         "docs/guides/migrating-ragas.md", "docs/guides/watching-runs.md")
CASES = 24  # of the example's 258: enough for two bots, suites and a comparison
NEEDS_RAGAS = "a Ragas EvaluationDataset"  # blocks that start from the user's own dataset


def _blocks(languages: tuple[str, ...]) -> list[tuple[str, str]]:
    """(page:line, body) of the covered pages' blocks in `languages`."""
    found = []
    for page in PAGES:
        with open(os.path.join(ROOT, page), encoding="utf-8") as fh:
            found += [(f"{page}:{line}", body) for line, body in code_blocks(fh.read(), languages)]
    return found


def _duckdb_sql(body: str) -> bool:
    """A block DuckDB runs (the BigQuery, Athena and Spark DDL is for those engines)."""
    return not re.search(r"EXTERNAL TABLE|USING parquet", body)


@pytest.fixture(scope="module")
def example(tmp_path_factory) -> str:
    """A folder holding what Getting started leaves: out/example with the runs
    `example` and `example-2` of the bundled example and their comparison, and
    the cases.jsonl and faq.parquet the Python API guide reads."""
    folder = tmp_path_factory.mktemp("doc-snippets")
    cases = str(folder / "cases.parquet")
    table = pq.read_table(os.path.join(EXAMPLE, "cases.parquet")).slice(0, CASES)
    pq.write_table(table, cases)
    with open(folder / "cases.jsonl", "w", encoding="utf-8") as fh:  # the Python API's
        fh.writelines(json.dumps(row) + "\n" for row in table.to_pylist())
    shutil.copy(os.path.join(EXAMPLE, "faq.parquet"), folder / "faq.parquet")
    printed = io.StringIO()
    with contextlib.chdir(folder), contextlib.redirect_stdout(printed):
        for run_id in ("example", "example-2"):
            assert run(["run", "--input", cases, "--output", "out/example", "--run-id", run_id,
                        "--config", os.path.join(EXAMPLE, "config.yaml")]) == 0
        assert run(["compare", "--output", "out/example", "--baseline", "example",
                    "--candidate", "example-2"]) == 0
    (folder / "printed.txt").write_text(printed.getvalue(), "utf-8")
    return str(folder)


def shown_as(shown: str) -> re.Pattern:
    """A pattern of the output a page shows: its `…` stands for anything, its
    figures and dates for any others."""
    pattern = re.sub(r"\d+(?:\\\.\d+)?", r"\\d+(?:\\.\\d+)?", re.escape(shown))
    return re.compile(pattern.replace("…", ".*").replace("YYYY\\-MM\\-DD", r"\d{4}-\d\d-\d\d"))


def test_getting_started_shows_what_the_example_prints(example):
    """Its summary of the bundled example's run, line by line (the figures are
    the full example's; this run has its first cases)."""
    with open(os.path.join(ROOT, "docs", "getting-started.md"), encoding="utf-8") as fh:
        (_, shown), = [b for b in code_blocks(fh.read(), ("",)) if b[1].startswith("run example:")]
    printed = open(os.path.join(example, "printed.txt"), encoding="utf-8").read().splitlines()
    first = printed[:len(shown.splitlines())]
    assert [bool(shown_as(line).fullmatch(got)) for line, got in zip(shown.splitlines(), first)
            ] == [True] * len(shown.splitlines()), "\n".join(first)


def _for_the_example(body: str, example: str) -> str:
    """A snippet's placeholders made the example's: its folders (out/, evals/)
    and run ids (main, pr-42, RUN_ID)."""
    out = os.path.join(example, "out", "example")
    body = re.sub(r"'(?:out/example|out|evals)/", f"'{out}/", body)
    for name, run_id in (("pr-42", "example-2"), ("main", "example"), ("RUN_ID", "example")):
        body = body.replace(f"'{name}'", f"'{run_id}'")
    return body


def test_the_covered_pages_have_snippets_of_every_kind():
    assert len([b for b in _blocks(("sql",)) if _duckdb_sql(b[1])]) >= 4
    assert len(_blocks(("python",))) >= 7


@pytest.mark.parametrize("page", [p for p in PAGES if any(
    b[0].startswith(p + ":") for b in _blocks(("sql",)) if _duckdb_sql(b[1]))])
def test_every_duckdb_snippet_runs_on_the_example_tables(example, page):
    """A page's blocks in order, in one DuckDB session (the warehouse guide's
    query reads the views its previous block made); the views over
    calibration/, which the example never writes, fail as the guide says."""
    import duckdb
    con = duckdb.connect()
    for where, body in [b for b in _blocks(("sql",)) if b[0].startswith(page + ":")]:
        if not _duckdb_sql(body):
            continue
        for statement in [s for s in _for_the_example(body, example).split(";") if s.strip()]:
            if "/calibration/" in statement:
                with pytest.raises(duckdb.IOException, match="No files found"):
                    con.sql(statement)
                continue
            try:
                rows = con.sql(statement)  # a query's relation is lazy: fetch it
                rows.fetchall() if rows is not None else None
            except duckdb.Error as exc:
                pytest.fail(f"{where}: {str(exc).splitlines()[0]}")


def _python_snippets(page: str) -> list[tuple[str, str]]:
    return [b for b in _blocks(("python",)) if b[0].startswith(page + ":")]


def test_the_python_api_guide_runs_from_top_to_bottom(example, monkeypatch):
    """The blocks of python-api.md in order, in one namespace, as in a notebook:
    evaluate, the Result's methods, a config with options, a custom metric and
    read_run. Its first block's printed result is the one the page shows."""
    monkeypatch.chdir(example)
    with open(os.path.join(ROOT, "docs", "guides", "python-api.md"), encoding="utf-8") as fh:
        page = fh.read()
    (_, shown), = [b for b in code_blocks(page, ("text",)) if "<evalbeam run" in b[1]]
    scope: dict = {}
    snippets = _python_snippets("docs/guides/python-api.md")
    assert len(snippets) >= 5
    for where, body in snippets:
        try:
            exec(compile(body, where, "exec"), scope)
        except Exception as exc:  # the snippet's own error, named by its page and line
            pytest.fail(f"{where}: {type(exc).__name__}: {exc}")
        if "result" in scope and "printed" not in scope:
            scope["printed"] = repr(scope["result"])
    assert scope["printed"].splitlines()[1] == shown.splitlines()[-1]
    assert os.path.exists(scope["result"].report_md_path)


def test_the_ragas_guide_reads_the_scores_in_ragas_layout(example):
    """Its DuckDB-into-pandas block runs; the blocks that start from a Ragas
    dataset (not installed here) at least parse."""
    snippets = _python_snippets("docs/guides/migrating-ragas.md")
    assert len(snippets) == 3
    for where, body in snippets:
        if "duckdb" not in body:
            ast.parse(body, where)
            continue
        scope: dict = {}
        exec(compile(_for_the_example(body, example), where, "exec"), scope)
        assert scope["wide"].shape == (2 * CASES, scope["scores"]["metric"].nunique())


COMMAND = re.compile(r"^(?:\$ )?(?:\.venv/bin/)?evalbeam (?=run|status|compare|calibrate|view)")


def command_lines(text: str) -> list[tuple[int, str]]:
    """(line, command) of the `evalbeam COMMAND ...` lines of a page's shell,
    text and YAML (a CI step) blocks, continuation lines joined."""
    found = []
    for line, body in code_blocks(text, ("bash", "sh", "console", "text", "", "yaml")):
        rows = body.splitlines()
        for i, row in enumerate(rows):
            row = re.sub(r"^(?:- )?(?:run: )?", "", row.strip())
            if not COMMAND.match(row):
                continue
            for more in rows[i + 1:]:
                if not row.endswith("\\"):
                    break
                row = row[:-1] + " " + more.strip()
            found.append((line + 1 + i, COMMAND.sub("", row)))
    return found


def _beam_flags() -> set[str]:
    """Every flag of Beam's pipeline options (the Dask runner's included)."""
    import apache_beam.runners.dask.dask_runner  # noqa: F401 (registers DaskOptions)
    return beam_flags()


def command_problem(command: str, known: set[str]) -> str | None:
    """Why a documented command line would not parse (None: it does). A
    synopsis's [--flag VALUE] and a CI expression ${{ ... }} are placeholders."""
    command = re.sub(r"\$\{\{[^}]*\}\}", "X", re.sub(r"\[(--[^\]]*)\]", r"\1", command))
    argv = shlex.split(command, comments=True)
    try:
        with contextlib.redirect_stderr(io.StringIO()):  # argparse's usage text
            args, extra = _parser().parse_known_args(argv)
    except SystemExit:
        return "the parser refuses it"
    for arg in extra:
        if args.command != "run" or arg.partition("=")[0] not in known:
            return f"unknown argument {arg!r}"
    return None


def test_every_command_line_of_the_docs_parses():
    beam_flags, checked, problems = _beam_flags(), 0, []
    for path in _doc_pages():
        with open(path, encoding="utf-8") as fh:
            for line, command in command_lines(fh.read()):
                checked += 1
                if "--min-difference D" in command:  # the synopsis of compare
                    command = command.replace("--min-difference D", "--min-difference 0.01")
                problem = command_problem(command, beam_flags)
                if problem:
                    problems.append(f"{os.path.relpath(path, ROOT)}:{line}: {problem}")
    assert checked >= 30
    assert problems == []


@pytest.mark.parametrize("command, problem", [
    ("run --input c.jsonl --output out --metrcs=bleu", "unknown argument '--metrcs=bleu'"),
    ("run --input c.jsonl --output out --run_id=x", "unknown argument '--run_id=x'"),
    ("compare --output out --baseline a", "the parser refuses it"),
    ("status --output out --run-id r --verbose", "unknown argument '--verbose'"),
    ("run --input c.jsonl --output out --runner=dask --dask_client_address=tcp://h:1", None),
])
def test_the_command_check_finds_a_misspelt_flag(command, problem):
    assert command_problem(command, _beam_flags()) == problem
