"""Issue 9, items 8 and 9: what can be checked before the run is refused with
one line and exit 2 (nothing written); a row's problem is a dead-letter row."""
from __future__ import annotations

import os
import textwrap

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.config import MAX_CONCURRENCY, ConfigError, load_config
from tests.conftest import SAMPLE_ROWS, write_cases
from schemas.cases import source_columns
from tests.pipeline_helpers import manifest, read_rows, run_cli
from transforms.read.cases import list_input_files, plan_shards

_EP = "endpoints:\n  llm:\n    base_url: http://127.0.0.1:1/v1\n"


def _fails_cleanly(capsys, *args) -> str:
    code = run_cli(*args)
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert err.startswith("evalbeam: error: ") and "\n" not in err and "Traceback" not in err
    return err


@pytest.mark.parametrize("text, words", [
    (_EP + "    headers: 5\n", "endpoints.llm.headers must be a mapping"),
    (_EP + "    headers: {X-Key: [1, 2]}\n", "endpoints.llm.headers must be a mapping"),
    ("metric_options:\n  politeness: {markers: 5}\n", "metric_options.politeness.markers must be"),
    ("metric_options:\n  hallucination: {window: -3}\n",
     "metric_options.hallucination.window must be an integer >= 1"),
    (_EP + "    requests_per_second: .nan\n", "requests_per_second must be a finite number"),
    (_EP + "    requests_per_second: .inf\n", "requests_per_second must be a finite number"),
    (_EP + "    max_attempts: true\n", "max_attempts must be an integer"),
    ("verdict:\n  rules:\n    - {metric: bleu, above: .nan, verdict: FAIL}\n",
     "verdict.rules[0].above must be a finite number"),
    ("verdict:\n  rules:\n    - {metric: bleu, below: '0.5', verdict: FAIL}\n",
     "verdict.rules[0].below must be a number, got '0.5'"),
    (_EP + "    backoff_initial_s: 10\n    backoff_max_s: 1\n",
     "backoff_initial_s (10) must not exceed backoff_max_s (1)"),
    (_EP + "    max_concurrency: 100000\n",
     f"max_concurrency must be an integer between 1 and {MAX_CONCURRENCY}"),
    (_EP + "    max_reply_bytes: 10\n", "max_reply_bytes must be an integer >= 1024"),
    (_EP + "    circuit_failures: -1\n", "circuit_failures must be an integer >= 0"),
    ("bots:\n  - {name: a, type: precomputed}\nbots:\n  - {name: b, type: precomputed}\n",
     "duplicate key 'bots' at line 3 (first at line 1)"),
    ("bots:\n  - {name: a, type: precomputed, name: b}\n", "duplicate key 'name'"),
    ("bots:\n  - {name: " + "b" * 300 + ", type: precomputed}\n", "bots[0].name must be 1-64"),
    # values of the wrong type that crashed with a traceback (exit 1), one even mid-run
    ("input: {preset: [ragas]}\n", "input.preset must be one of"),
    ("verdict: {preset: [seed]}\n", "verdict.preset must be one of"),
    ("bots:\n  - {name: a, type: faq_match, faq: 5}\n", "bots[0].faq must be a text"),
    ("bots:\n  - {name: a, type: [chat]}\n", "bots[0].type must be one of"),
    ("bots:\n  - {name: a, type: precomputed, options: [1]}\n",
     "bots[0].options must be a mapping"),
    (_EP + "    api_key_env: 5\n", "endpoints.llm.api_key_env must be an environment variable"),
    (_EP + "    api_version: [1]\n", "endpoints.llm.api_version must be a text"),
    ("endpoints:\n  '': {base_url: 'http://127.0.0.1:1/v1'}\n",
     "an endpoint's name must be a non-empty text"),
    # option values that gave values outside [0, 1] or divided by zero on every row
    (_EP + "judge: {endpoint: llm, model: m}\nmetrics: [answer_correctness]\n"
     "metric_options: {answer_correctness: {factual_weight: -1, similarity_weight: 2}}\n",
     "factual_weight and similarity_weight must be >= 0 and not both 0"),
    (_EP + "judge: {endpoint: llm, model: m}\nmetrics: [answer_correctness]\n"
     "metric_options: {answer_correctness: {factual_weight: 0, similarity_weight: 0}}\n",
     "factual_weight and similarity_weight must be >= 0 and not both 0"),
    (_EP + "judge: {endpoint: llm, model: m}\nmetrics: [judge_relevance]\n"
     "metric_options: {judge_relevance: {scale: [1, .inf]}}\n",
     "metric_options.judge_relevance.scale must be [low, high], finite numbers"),
    (_EP + "judge:\n  endpoint: llm\n  model: m\n"
     "  rubrics: {tone: {criteria: polite, scale: [1, .inf]}}\n",
     "judge.rubrics.tone.scale must be [low, high], finite numbers"),
    # a misspelt key says what was meant; a key at the wrong level, where it goes
    ("metircs: [bleu]\n", "unknown key 'metircs'; did you mean 'metrics'?"),
    (_EP + "judge: {endpoint: llm, model: m, max_cals: 5}\n",
     "unknown key 'judge.max_cals'; did you mean 'max_calls'?"),
    ("embeddings: {provider: local, precison: int8}\n",
     "unknown key 'embeddings.precison'; did you mean 'precision'?"),
    ("verdict:\n  preset: seed\n  rules:\n    - {metirc: bleu, above: 0.5, verdict: FAIL}\n",
     "unknown key 'verdict.rules[0].metirc'; did you mean 'metric'?"),
    (_EP + "bots:\n  - {name: a, type: chat, endpont: llm, model: m}\n",
     "unknown key 'bots[0].endpont'; did you mean 'endpoint'?"),
    (_EP + "judge: {endpoint: llm, model: m}\nmax_calls: 5\n",
     "unknown key 'max_calls'; it is a key of judge (allowed here:"),
    # an option of a metric this run leaves out was not checked at all
    ("metrics: [bleu]\nmetric_options:\n  rouge: {use_stemer: true}\n",
     "unknown option metric_options.rouge.use_stemer"),
    # a number written with an exponent was text to YAML 1.1 ("got '2e5'")
    (_EP + "    requests_per_second: 1e400\n", "requests_per_second must be a finite number"),
    # YAML's own errors gave the line only: now the column and what the parser found
    ("bots:\n\t- {name: a, type: precomputed}\n", "is not valid YAML at line 2, column 1: "
     "found character '\\t' that cannot start any token (indent with spaces)"),
    ("metrics: [bleu, rouge\n", "is not valid YAML at line 2, column 1: expected ',' or ']'"),
    # api_key_env written as a reference, as headers take it, said "not a key"
    (_EP + "    api_key_env: ${OPENAI_API_KEY}\n",
     "endpoints.llm.api_key_env takes the variable's name alone: write "
     "api_key_env: OPENAI_API_KEY (without $ or ${})"),
    (_EP + "    api_key_env: $OPENAI_API_KEY\n", "write api_key_env: OPENAI_API_KEY"),
    # input.columns values YAML reads as numbers or booleans: in a list, the
    # candidate was read as its text ('3', 'True', '1.5') or never found, unsaid
    ("input: {columns: {question: 3}}\n",
     "input.columns.question must be a column name (text), got 3 (YAML reads an "
     "unquoted number as a number: quote the name, '3')"),
    ("input: {columns: {question: [3]}}\n", "input.columns.question[0] must be a column "
     "name (text), got 3 (YAML reads an unquoted number as a number: quote the name, '3')"),
    ("input: {columns: {question: [yes, question]}}\n", "input.columns.question[0] must "
     "be a column name (text), got True (YAML reads an unquoted yes/no/on/off/true/false "
     "as a boolean: quote the text)"),
    ("input: {columns: {contexts: [1.5]}}\n", "input.columns.contexts[0] must be a column "
     "name (text), got 1.5"),
    ("input: {columns: {question: []}}\n",
     "input.columns.question must be a column name (text), got a list of 0 items"),
    ("input: {columns: {answer: ''}}\n",
     "input.columns.answer must be a column name (text), got ''"),
    # a header's $VAR (no braces) was sent as it is: every call refused (401)
    (_EP + "    headers: {Authorization: Bearer $OPENAI_API_KEY}\n",
     "endpoints.llm.headers.Authorization sends $OPENAI_API_KEY as it is: write "
     "${OPENAI_API_KEY} to read the variable"),
    (_EP + "    headers: {X-Key: $ASSISTANT_KEY}\n", "write ${ASSISTANT_KEY}"),
    (_EP + "    headers: {X-Key: $sk_live_abcdefABCDEF1234567890xyz}\n",
     "endpoints.llm.headers.X-Key sends a $ and a name as they are: write ${NAME}"),
    (_EP + "    api_key_env: ${sk_live_abcdefABCDEF1234567890xyz}\n",
     "endpoints.llm.api_key_env must be an environment variable's NAME, not a key"),
    # `name: no` was "got 'False'", the user having written no
    ("bots:\n  - {name: no, type: precomputed}\n", "bots[0].name must be 1-64 letters, digits, "
     "'-' or '_', got 'False' (YAML reads an unquoted yes/no/on/off/true/false as a boolean: "
     "quote the text)"),
    (_EP + "bots:\n  - {name: a, type: chat, endpoint: llm, model: m, system_prompt: off}\n",
     "bots[0].system_prompt must be a text, got False (YAML reads an unquoted"),
    # a negative price passed: usage/ and the max_cost tally would count a negative cost
    (_EP + "    price_per_million: {input: 0.15, output: -0.6}\n",
     "endpoints.llm.price_per_million.output must be >= 0, got -0.6"),
    # a negative temperature passed, and every judge call was refused with a 400
    (_EP + "judge: {endpoint: llm, model: m, temperature: -1}\n",
     "judge.temperature must be >= 0, got -1"),
    (_EP + "judge: {endpoint: llm, model: m, safety: {temperature: -0.5}}\n",
     "judge.safety.temperature must be >= 0, got -0.5"),
])
def test_bad_config_values_are_one_line_errors(tmp_path, capsys, text, words):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    cases = write_cases(str(tmp_path / "c.parquet"), SAMPLE_ROWS)
    out = str(tmp_path / "out")
    err = _fails_cleanly(capsys, "--input", cases, "--output", out, "--config", str(path))
    assert words in err
    assert not os.path.exists(out)


@pytest.mark.parametrize("text, words", [
    # 10**9 safety votes built a billion judge requests per row before sending
    # one (no request in 90 s, memory climbing); 10**9 attempts retried a down
    # endpoint for ever: each was a run that never ended, not an error
    ("  llm: {base_url: 'http://x/v1'}\njudge: {endpoint: llm, model: m, safety: {votes: "
     "1000000000}}\n", "judge.safety.votes must be an integer between 1 and 100, "
     "got 1000000000"),
    ("  llm: {base_url: 'http://x/v1', max_attempts: 1000000000}\n",
     "endpoints.llm.max_attempts must be an integer between 1 and 100, got 1000000000"),
])
def test_counts_that_would_never_end_a_run_are_bounded(tmp_path, text, words):
    path = tmp_path / "c.yaml"
    path.write_text("endpoints:\n" + text)
    with pytest.raises(ConfigError) as err:
        load_config(str(path))
    assert str(err.value) == words
    path.write_text("endpoints:\n" + text.replace("1000000000", "100"))
    load_config(str(path))  # the bound itself is allowed


def test_good_header_and_option_values_still_load(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(textwrap.dedent("""
        endpoints:
          llm: {base_url: 'http://x/v1', headers: {X-Key: abc, X-Num: 5}, max_concurrency: 512}
        metric_options:
          politeness: {markers: [please]}
          hallucination: {window: 3}
        judge: {endpoint: llm, model: m, max_cost: 1.5e1, temperature: 0}
        """).replace("headers:", "tokens_per_minute: 2e5, requests_per_second: -.5E+1, "
                     "price_per_million: {input: 1.5e-1, output: 6E-1}, headers:"))
    with pytest.raises(ConfigError, match=r"requests_per_second must be > 0, got -5\.0"):
        load_config(str(path))  # exponent numbers, YAML 1.2's, are numbers
    path.write_text(path.read_text().replace("-.5E+1", "1_0e0"))
    cfg = load_config(str(path))
    llm = cfg.endpoints["llm"]
    assert (llm.tokens_per_minute, llm.requests_per_second) == (200000.0, 10.0)
    assert llm.price_per_million == {"input": 0.15, "output": 0.6}
    assert cfg.judge.max_cost == 15.0
    assert cfg.endpoints["llm"].headers == {"X-Key": "abc", "X-Num": 5}
    assert cfg.metric_options["hallucination"]["window"] == 3


@pytest.mark.parametrize("args, words", [
    (("--run-id", ""), "--run-id ''"),
    (("--run-date", "20240101"), "not a date YYYY-MM-DD"),
    (("--run-date", "2024-W01-1"), "not a date YYYY-MM-DD"),
    (("--run-date", "2024-02-30"), "not a date YYYY-MM-DD"),
])
def test_run_id_and_date_are_checked_up_front(tmp_path, capsys, args, words):
    cases = write_cases(str(tmp_path / "c.parquet"), SAMPLE_ROWS)
    out = str(tmp_path / "out")
    assert words in _fails_cleanly(capsys, "--input", cases, "--output", out, *args)
    assert not os.path.exists(out)


def test_output_problems_are_refused_before_the_run(tmp_path, capsys):
    inputs = tmp_path / "in"
    inputs.mkdir()
    cases = write_cases(str(inputs / "c.parquet"), SAMPLE_ROWS)
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    assert "exists and is not a folder" in _fails_cleanly(
        capsys, "--input", cases, "--output", str(a_file))
    assert "is a file, not a folder" in _fails_cleanly(
        capsys, "--input", cases, "--output", str(a_file / "sub"))
    assert "cannot write in /proc" in _fails_cleanly(
        capsys, "--input", cases, "--output", "/proc/evalbeam-out")
    assert "glob character(s) []" in _fails_cleanly(
        capsys, "--input", cases, "--output", str(tmp_path / "out" / "g[1]"))
    assert "inside the input folder" in _fails_cleanly(
        capsys, "--input", str(inputs), "--output", str(inputs / "out"))
    assert not os.path.exists(inputs / "out") and not os.path.exists(tmp_path / "out")
    # a glob that would reach into the output folder's tables
    out = tmp_path / "o"
    os.makedirs(out / "results")
    write_cases(str(out / "results" / "part-r.x.parquet"), SAMPLE_ROWS)
    assert "is inside --output" in _fails_cleanly(
        capsys, "--input", str(tmp_path / "**" / "*.parquet"), "--output", str(out))


def test_input_file_named_like_a_glob_is_read(tmp_path):
    """It was "no input files match" (the name was read as a pattern)."""
    cases = write_cases(str(tmp_path / "b[1].parquet"), SAMPLE_ROWS)
    write_cases(str(tmp_path / "b1.parquet"), SAMPLE_ROWS)  # what the pattern would match
    assert list_input_files(cases) == [cases]
    assert sum(s.stop - s.start for s in plan_shards(cases, source_columns({}))) == \
        len(SAMPLE_ROWS)


def test_invalid_utf8_in_a_string_column_is_a_read_error_row(tmp_path):
    """Issue 9 item 2: one row's bytes are not UTF-8; the run goes on."""
    # pyarrow checks UTF-8 when it builds a string array: view invalid bytes as strings
    raw = pa.array([b"How long is the refund window?", b"caf\xe9 \xff?",
                    b"Do you ship to Canada?"], pa.binary())
    table = pa.table({"case_id": ["u1", "u2", "u3"], "question": raw.view(pa.string()),
                      "answer": ["30 days.", "Yes.", "Yes, to Canada."]})
    path = str(tmp_path / "bad_utf8.parquet")
    pq.write_table(table, path)
    out = str(tmp_path / "out")
    assert run_cli("--input", path, "--output", out, "--run-id", "u") == 0
    m = manifest(out, "u")
    assert m["reconciliation"]["ok"]
    assert (m["counts"]["valid_cases"], m["counts"]["invalid_rows"]) == (2, 1)
    errors = [e for e in read_rows(out, "errors") if e["stage"] == "read"]
    assert [(e["case_id"], e["error_type"]) for e in errors] == [("u2", "invalid_utf8")]
    assert "question" in errors[0]["message"] and errors[0]["source"].endswith("#1")


def _corrupt_middle_page(path: str) -> None:
    """Overwrite bytes in the middle of the second row group's data."""
    meta = pq.ParquetFile(path).metadata
    col = meta.row_group(1).column(1)  # question
    start = col.data_page_offset
    with open(path, "r+b") as fh:
        fh.seek(start + 8)
        fh.write(b"\xde\xad\xbe\xef" * 16)


def test_corrupt_data_page_becomes_dead_letter_rows(tmp_path):
    rows = [{"case_id": f"p{i}", "question": f"Question number {i} about refunds?",
             "answer": f"Answer {i}."} for i in range(30)]
    path = write_cases(str(tmp_path / "corrupt.parquet"), rows, row_group_size=10)
    _corrupt_middle_page(path)
    out = str(tmp_path / "out")
    assert run_cli("--input", path, "--output", out, "--run-id", "p") == 0
    m = manifest(out, "p")
    assert m["reconciliation"]["ok"], m["reconciliation"]
    assert m["counts"]["input_rows"] == 30 and m["counts"]["invalid_rows"] >= 1
    errors = [e for e in read_rows(out, "errors") if e["error_type"] == "unreadable_rows"]
    assert len(errors) == m["counts"]["invalid_rows"]
    assert all(e["source"].startswith(path + "#") for e in errors)


REMOTE = ["--runner=dask", "--dask_client_address=tcp://127.0.0.1:1"]  # refused before connecting


@pytest.mark.parametrize("runner", [REMOTE, ["--runner=DataflowRunner"]])
def test_a_remote_runner_refuses_paths_its_workers_cannot_reach(tmp_path, capsys, monkeypatch,
                                                                runner):
    """Issue 24: a relative input became 'No such file' rows on the workers (they
    run in another folder); now it, and any path on this machine, is one line."""
    write_cases(str(tmp_path / "c.parquet"), SAMPLE_ROWS)
    monkeypatch.chdir(tmp_path)
    err = _fails_cleanly(capsys, "--input", "c.parquet", "--output", "gs://bucket/out", *runner)
    assert "--input c.parquet is a relative path" in err and "--shared-filesystem" in err
    err = _fails_cleanly(capsys, "--input", "gs://bucket/c.parquet", "--output",
                         str(tmp_path / "out"), *runner)
    assert f"--output {tmp_path / 'out'} is a path on this machine" in err
    faq = tmp_path / "faq.parquet"
    pq.write_table(pa.table({"question": ["q"], "answer": ["a"]}), faq)
    (tmp_path / "c.yaml").write_text("bots:\n  - {name: f, type: faq_match, faq: faq.parquet}\n")
    err = _fails_cleanly(capsys, "--input", "gs://bucket/c.parquet", "--output", "gs://b/o",
                         "--config", str(tmp_path / "c.yaml"), *runner)
    assert f"bot 'f': faq {faq} is a path on this machine" in err
    assert not os.path.exists(tmp_path / "out")


def test_shared_filesystem_paths_are_made_absolute_for_the_workers(tmp_path, monkeypatch):
    from pipeline.plan import worker_path
    monkeypatch.chdir(tmp_path)
    assert worker_path("c.parquet", "--input", True, True) == str(tmp_path / "c.parquet")
    assert worker_path("c.parquet", "--input", False, False) == "c.parquet"  # local runner
    assert worker_path("s3://b/c.parquet", "--input", True, False) == "s3://b/c.parquet"


def test_an_unreachable_dask_scheduler_is_one_line(tmp_path, capsys):
    """A port nothing listens on took the whole --dask_connection_timeout (30 s
    by default) to be said, as distributed retries a refused connect: the
    refusal is now one line at once, whatever the timeout."""
    import time
    cases = write_cases(str(tmp_path / "c.parquet"), SAMPLE_ROWS)
    started = time.monotonic()
    err = _fails_cleanly(capsys, "--input", cases, "--output", str(tmp_path / "out"),
                         *REMOTE, "--shared-filesystem", "--dask_connection_timeout=60")
    assert time.monotonic() - started < 30  # 1.5 s of retries, not 60 s
    assert err == ("evalbeam: error: cannot reach the Dask scheduler tcp://127.0.0.1:1: "
                   "connection refused (nothing listens on port 1 of 127.0.0.1: is the "
                   "scheduler started, with this address?)")
    assert not os.path.exists(tmp_path / "out")


@pytest.mark.parametrize("value", ["0", "-5", "soon", "inf"])
def test_a_bad_dask_no_worker_timeout_is_one_line(tmp_path, capsys, value):
    cases = write_cases(str(tmp_path / "c.parquet"), SAMPLE_ROWS)
    err = _fails_cleanly(capsys, "--input", cases, "--output", str(tmp_path / "out"),
                         "--runner=dask", f"--dask_no_worker_timeout={value}")
    assert err == ("evalbeam: error: --dask_no_worker_timeout must be a number of seconds "
                   f"above 0, got '{value}'")
    assert not os.path.exists(tmp_path / "out")


def test_a_missing_dask_scheduler_file_is_named(tmp_path, capsys):
    """distributed waits for a scheduler file to appear, and the check's timeout
    said 'no answer as a Dask scheduler ... (is it the dashboard's port?)'."""
    cases = write_cases(str(tmp_path / "c.parquet"), SAMPLE_ROWS)
    missing = str(tmp_path / "scheduler.json")
    err = _fails_cleanly(capsys, "--input", cases, "--output", str(tmp_path / "out"),
                         "--runner=dask", f"--dask_scheduler_file={missing}",
                         "--shared-filesystem", "--dask_connection_timeout=1")
    assert err == (f"evalbeam: error: cannot reach the Dask scheduler: no scheduler file "
                   f"{missing} appeared within 1 s")
    assert not os.path.exists(tmp_path / "out")


def test_a_port_that_never_answers_as_a_dask_scheduler_is_one_line(tmp_path, capsys):
    """A listener that accepts and says nothing (the dashboard's port, any HTTP
    server): distributed's timeout does not bound its handshake, so the run hung."""
    import socket
    import threading
    cases = write_cases(str(tmp_path / "c.parquet"), SAMPLE_ROWS)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        said: list[str] = []
        check = threading.Thread(target=lambda: said.append(_fails_cleanly(
            capsys, "--input", cases, "--output", str(tmp_path / "out"), "--runner=dask",
            f"--dask_client_address=tcp://127.0.0.1:{port}", "--shared-filesystem",
            "--dask_connection_timeout=2")), daemon=True)
        check.start()
        check.join(60)
        assert not check.is_alive(), "the run hung on a port that never answers"
    assert said, "the check failed (see above)"
    err = said[0]
    assert f"cannot reach the Dask scheduler tcp://127.0.0.1:{port}: no answer" in err
    assert not os.path.exists(tmp_path / "out")


@pytest.mark.parametrize("template, missing", [
    ("Answer briefly.\n{question}\n", "{knowledge}"),   # the knowledge would be dropped
    ("Knowledge:\n{knowledge}\n", "{question}"),
])
def test_a_full_context_template_needs_both_placeholders(tmp_path, capsys, template, missing):
    (tmp_path / "k.md").write_text("Refunds are accepted within 30 days.")
    (tmp_path / "t.txt").write_text(template)
    path = tmp_path / "c.yaml"
    path.write_text(_EP + "bots:\n  - {name: gpt, type: full_context, endpoint: llm, model: m, "
                    "knowledge: k.md, prompt_template: t.txt}\n")
    cases = write_cases(str(tmp_path / "c.parquet"), SAMPLE_ROWS)
    out = str(tmp_path / "out")
    err = _fails_cleanly(capsys, "--input", cases, "--output", out, "--config", str(path))
    assert f"has no {missing} placeholder" in err and not os.path.exists(out)


def test_a_config_that_is_not_utf8_is_one_line_naming_its_line(tmp_path, capsys):
    """A config saved as Latin-1 crashed with a UnicodeDecodeError traceback."""
    path = tmp_path / "c.yaml"
    path.write_bytes("metrics: [bleu]\nbots:\n  - {name: caf\xe9, type: precomputed}\n"
                     .encode("latin-1"))
    cases = write_cases(str(tmp_path / "c.parquet"), SAMPLE_ROWS)
    out = str(tmp_path / "out")
    err = _fails_cleanly(capsys, "--input", cases, "--output", out, "--config", str(path))
    assert f"config {path} is not UTF-8 text: byte 0xe9 at line 3" in err
    assert not os.path.exists(out)


_HTTP_BOT = ("bots:\n  - name: a\n    type: http\n    endpoint: llm\n"
             "    options: {answer_path: a, body: {q: '{question}', k: '${QA_SECRET}'}}\n")
_CHAT_BOT = "bots:\n  - {name: a, type: chat, endpoint: llm, model: m}\n"


@pytest.mark.parametrize("text, where", [
    (_EP + "    api_key_env: QA_SECRET\n" + _CHAT_BOT, "endpoints.llm.api_key_env"),
    (_EP + "    headers: {X-Api-Key: '${QA_SECRET}'}\n" + _CHAT_BOT,
     "endpoints.llm.headers.X-Api-Key"),
    (_EP + _HTTP_BOT, "bots.a.options.body.k"),
])
@pytest.mark.parametrize("value, said", [(None, "is not set"), ("", "is empty"),
                                         ("  ", "is empty")])
def test_an_unset_or_empty_secret_variable_is_refused_up_front(tmp_path, capsys, monkeypatch,
                                                               text, where, value, said):
    """An empty ${VAR} in a header or body was sent as it is (every call refused);
    an empty api_key_env was said to be "not set"."""
    if value is None:
        monkeypatch.delenv("QA_SECRET", raising=False)
    else:
        monkeypatch.setenv("QA_SECRET", value)
    path = tmp_path / "c.yaml"
    path.write_text(text)
    cases = write_cases(str(tmp_path / "c.parquet"), SAMPLE_ROWS)
    out = str(tmp_path / "out")
    err = _fails_cleanly(capsys, "--input", cases, "--output", out, "--config", str(path),
                         "--metrics", "bleu")
    assert f"environment variable QA_SECRET ({where}) {said}" in err
    assert not os.path.exists(out)


@pytest.mark.parametrize("text, noted", [("", True), ("# to do: the judge\n\n", True),
                                         ("verdict: {preset: default}\n", True),
                                         ("metrics: [bleu]\n", False)])
def test_a_config_that_sets_nothing_is_noted(tmp_path, capsys, text, noted):
    """An empty config file (saved before it was written, or comments only) ran
    every default and said nothing, so the user believed their settings were
    in use. The run still goes ahead with the defaults, and a note says so; a
    config that sets something gets no note."""
    path = tmp_path / "c.yaml"
    path.write_text(text)
    cases = write_cases(str(tmp_path / "c.parquet"), SAMPLE_ROWS)
    assert run_cli("--input", cases, "--output", str(tmp_path / "out"), "--config", str(path),
                   "--metrics", "bleu", "--run-id", "r") == 0
    err = capsys.readouterr().err
    said = f"config {path} sets nothing the defaults do not"
    assert (f"evalbeam: note: {said}" in err) == noted, err
    assert (said in " ".join(manifest(str(tmp_path / "out"), "r").get("notes", []))) == noted
