"""The Python API: evalbeam.evaluate() on a DataFrame, a pyarrow Table, a
Hugging Face Dataset and a path runs the same pipeline as `evalbeam run`
(same tables), read_run() reads a run through its completion marker, and
evalbeam.metric declares a custom metric."""
from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import evalbeam
from pipeline.config import ConfigError
from schemas.cases import InputError
from tests.conftest import FAQ_ROWS, ROOT, SAMPLE_ROWS, write_cases
from tests.pipeline_helpers import manifest, read_rows, run_cli

CHEAP = ["exact_match", "keyword_recall", "rougeL", "hallucination", "completeness"]


@evalbeam.metric(needs=["answer", "expected_answer"], options={"unit": "chars"})
def length_gap(sample, unit):
    """|len(answer) - len(reference)| / len(reference), in characters."""
    ref = sample["expected_answer"]
    return abs(len(sample["answer"]) - len(ref)) / len(ref), {"unit": unit}


def _config(tmp_path) -> dict:
    faq = write_cases(str(tmp_path / "faq.parquet"), FAQ_ROWS)
    return {"bots": [{"name": "faq", "type": "faq_match", "faq": faq},
                     {"name": "recorded", "type": "precomputed"}],
            "metrics": CHEAP}


def _comparable(rows: list[dict]) -> list[tuple]:
    """Rows without what differs between two runs (run id, timings, paths)."""
    drop = {"run_id", "latency_ms", "bot_details", "run_date"}
    return sorted(tuple((k, str(v)) for k, v in sorted(r.items()) if k not in drop)
                  for r in rows if r.get("metric") != "latency_ms")


def test_evaluate_a_dataframe_gives_the_tables_of_evalbeam_run(tmp_path):
    import pandas as pd
    df = pd.DataFrame(SAMPLE_ROWS)
    cfg = _config(tmp_path)
    result = evalbeam.evaluate(df, config=cfg, output=tmp_path / "api", run_id="api",
                               run_date="2026-11-21",
                               metrics=[*CHEAP, length_gap], progress=False)
    assert isinstance(result, evalbeam.Result) and result.run_id == "api"
    assert result.manifest["input"] == "pandas.DataFrame (4 rows, in memory)"
    assert result.bots == ["faq", "recorded"] and "length_gap" in result.metrics
    assert os.path.isfile(result.report_path) and result.report_path.endswith("report.html")
    assert not glob.glob(os.path.join(tmp_path, "evalbeam-cases-*"))

    # the same rows through the command line give the same tables
    cases = write_cases(str(tmp_path / "cases.parquet"), SAMPLE_ROWS)
    yaml_cfg = tmp_path / "c.yaml"
    yaml_cfg.write_text(f"bots:\n  - {{name: faq, type: faq_match, faq: {cfg['bots'][0]['faq']}}}\n"
                        "  - {name: recorded, type: precomputed}\n"
                        f"metrics: [{', '.join(CHEAP)}]\n")
    cli_out = str(tmp_path / "cli")
    assert run_cli("--input", cases, "--output", cli_out, "--config", str(yaml_cfg),
                   "--run-id", "cli", "--run-date", "2026-11-21") == 0
    api_scores = [r for r in result.scores().to_pylist() if r["metric"] != "length_gap"]
    assert _comparable(api_scores) == _comparable(read_rows(cli_out, "scores"))
    assert _comparable(result.results().to_pylist()) == _comparable(read_rows(cli_out, "results"))

    frame = result.to_pandas()  # one row per case × bot, a column per metric
    assert len(frame) == 8 and {"case_id", "bot", "answer", "verdict", *CHEAP,
                                "length_gap"} <= set(frame.columns)
    c1 = frame[(frame.case_id == "c1") & (frame.bot == "recorded")].iloc[0]
    assert c1["exact_match"] == 1.0 and c1["length_gap"] == 0.0
    assert pd.isna(frame[(frame.case_id == "c3") & (frame.bot == "recorded")]
                   .iloc[0]["length_gap"])  # no reference: null, not 0
    summary = result.summary()
    assert isinstance(summary, pa.Table) and set(summary["suite"].to_pylist()) == {"*"}
    verdicts = [r for r in summary.to_pylist() if r["metric"] == "verdict"]
    assert sorted(r["bot"] for r in verdicts) == ["faq", "recorded"]
    assert sum(r["pass_count"] + r["warn_count"] + r["fail_count"] + r["error_count"]
               for r in verdicts) == 8
    gap = next(r for r in result.scores().to_pylist()
               if r["metric"] == "length_gap" and r["case_id"] == "c2" and r["bot"] == "recorded")
    assert gap["details"] == '{"unit": "chars"}' and gap["value"] > 0
    assert "evalbeam run api (2026-11-21): 4 cases × 2 bots" in repr(result)
    assert "<b>evalbeam run api</b>" in result._repr_html_()


def test_evaluate_an_arrow_table_and_a_hf_dataset(tmp_path):
    datasets = pytest.importorskip("datasets")
    rows = [dict(r, case_id=f"{r['case_id']}-{i}") for i in range(3) for r in SAMPLE_ROWS]
    ds = datasets.Dataset.from_list(rows).select(range(2, 10))  # 8 rows, through indices
    result = evalbeam.evaluate(ds, progress=False, metrics=CHEAP)
    try:
        assert result.output.startswith(os.path.join(os.path.realpath("/tmp"), "")) or \
            "evalbeam-" in result.output  # a temporary folder, kept
        assert result.manifest["input"] == "datasets.Dataset (8 rows, in memory)"
        ids = sorted(r["case_id"] for r in result.results().to_pylist())
        assert ids == sorted(r["case_id"] for r in rows[2:10])
        assert result.counts["valid_cases"] + result.counts["invalid_rows"] == 8
    finally:
        shutil.rmtree(result.output, ignore_errors=True)

    table = pa.Table.from_pylist(SAMPLE_ROWS)
    arrow = evalbeam.evaluate(table, output=str(tmp_path / "arrow"), progress=False,
                              metrics=["exact_match"])
    assert arrow.manifest["input"] == "pyarrow.Table (4 rows, in memory)"
    assert arrow.counts["valid_cases"] == 4 and arrow.metrics == ["exact_match"]


def test_read_run_reads_only_what_the_completion_marker_lists(tmp_path):
    out = str(tmp_path / "out")
    cases = write_cases(str(tmp_path / "cases.parquet"), SAMPLE_ROWS)
    first = evalbeam.evaluate(cases, output=out, run_id="r", progress=False,
                              metrics=["exact_match"])
    assert first.manifest["input"] == cases
    again = evalbeam.read_run(out, "r")
    assert again.results().num_rows == 4 == first.results().num_rows
    # a stray file named like the run's (a killed attempt's, another tool's copy)
    stray = glob.glob(os.path.join(out, "results", "**", "part-r.*.parquet"), recursive=True)[0]
    shutil.copy(stray, stray.replace("part-r.", "part-r.ffffffffffff."))
    assert evalbeam.read_run(out, "r").results().num_rows == 4
    with pytest.raises(ValueError, match="run nope has no completed attempt"):
        evalbeam.read_run(out, "nope")


def test_bad_calls_raise_one_clear_error_and_write_nothing(tmp_path, monkeypatch):
    out = tmp_path / "out"
    with pytest.raises(ConfigError, match="unknown key 'botz'"):
        evalbeam.evaluate(SAMPLE_ROWS, config={"botz": []}, output=out)
    with pytest.raises(TypeError, match="unexpected keyword argument 'run_dat'"):
        evalbeam.evaluate(SAMPLE_ROWS, output=out, run_dat="2026-01-01")
    with pytest.raises(InputError, match="cases must be a pandas or polars DataFrame.*got "
                                         "builtins.int"):
        evalbeam.evaluate(42, output=out)
    with pytest.raises(InputError, match="required column"):
        evalbeam.evaluate([{"prompt": "hi"}], output=out)
    with pytest.raises(ConfigError, match="unknown metric 'blue'"):
        evalbeam.evaluate(SAMPLE_ROWS, output=out, metrics=["blue"])
    assert not out.exists()
    monkeypatch.setitem(sys.modules, "pandas", None)  # pandas is optional
    result = evalbeam.evaluate(SAMPLE_ROWS, output=out, metrics=["exact_match"],
                               progress=False)
    assert result.summary().num_rows > 0
    with pytest.raises(ImportError, match="pip install pandas"):
        result.to_pandas()


def test_a_bad_keyword_value_is_named_as_the_keyword_not_the_flag(tmp_path):
    """evaluate(run_id="nightly run") said "--run-id 'nightly run' must be ...",
    a flag the notebook never passed (and read_run(out, None) "--run-id None");
    now the keyword, as it was given."""
    for keyword, value, said in [
            ("run_id", "nightly run", "run_id='nightly run' must be 1-128 letters"),
            ("run_date", "2026-13-01", "run_date='2026-13-01' is not a date YYYY-MM-DD"),
            ("preset", "strict", "preset='strict' is not a verdict preset"),
            ("lease_ttl", -1, "lease_ttl=-1 must be a positive number of seconds")]:
        with pytest.raises(ValueError) as raised:
            evalbeam.evaluate(SAMPLE_ROWS, output=tmp_path / "out", **{keyword: value})
        assert str(raised.value).startswith(said), raised.value
    with pytest.raises(ValueError, match=r"^read_run\(\): run_id None must be 1-128 letters"):
        evalbeam.read_run(tmp_path / "out", None)
    assert not (tmp_path / "out").exists()


def test_python_values_of_keywords_are_taken_or_refused_in_one_line(tmp_path):
    """run_date=date.today() and run_id=42 raised a bare "TypeError: expected
    string or bytes-like object, got 'datetime.date'" from the planner's
    regex, and allow_empty="no" was taken as True. A date (or a datetime) is
    now its YYYY-MM-DD; a run id or run date that is not text, and an
    allow_empty or progress that is not a bool, is a UsageError naming it."""
    import datetime as dt
    result = evalbeam.evaluate(SAMPLE_ROWS[:1], output=tmp_path / "out", progress=False,
                               run_date=dt.date(2026, 1, 2), metrics=["exact_match"])
    assert result.manifest["run_date"] == "2026-01-02"
    assert glob.glob(str(tmp_path / "out" / "results" / "run_date=2026-01-02" / "*"))
    for keyword, value, said in [
            ("run_id", 42, "run_id=42 must be 1-128 letters, digits, '-' or '_'"),
            ("run_date", 20260102, "run_date=20260102 is not a date YYYY-MM-DD"),
            ("allow_empty", "no", "allow_empty must be True or False, got 'no'"),
            ("progress", "no", "progress must be True or False, got 'no'")]:
        with pytest.raises(ValueError) as raised:
            evalbeam.evaluate(SAMPLE_ROWS, output=tmp_path / "refused", **{keyword: value})
        assert str(raised.value) == said
    assert not (tmp_path / "refused").exists()


def test_custom_metrics_run_besides_a_chosen_list_of_metrics(tmp_path):
    """custom_metrics=[fn] is documented as added to the metrics that would
    run, but with a config that lists its `metrics:` (or with metrics=[...])
    the function was registered and never run: no column, no score, nothing
    said. It now runs besides the list."""
    cfg = {"bots": [{"name": "recorded", "type": "precomputed"}], "metrics": ["exact_match"]}
    for out, options in [("config", {}), ("keyword", {"metrics": ["answer_length"]})]:
        result = evalbeam.evaluate(SAMPLE_ROWS[:2], cfg, output=tmp_path / out, progress=False,
                                   custom_metrics=[length_gap], **options)
        assert result.metrics == [options.get("metrics", ["exact_match"])[0], "length_gap"]
        assert result.to_pandas().set_index("case_id")["length_gap"].to_dict()["c1"] == 0.0


def test_a_function_in_both_metrics_and_custom_metrics_is_one_metric(tmp_path):
    """evaluate(cases, metrics=[length_gap], custom_metrics=[length_gap]) (a
    notebook's list of metrics and its list of extras sharing one) raised
    "metric 'length_gap' is defined twice (a built-in metric, a custom metric or
    a rubric)": it is one function, so one metric. Two functions of one name
    still clash."""
    result = evalbeam.evaluate(SAMPLE_ROWS[:2], output=tmp_path / "out", progress=False,
                               metrics=["exact_match", length_gap], custom_metrics=[length_gap])
    assert result.metrics == ["exact_match", "length_gap"]
    assert result.to_pandas().set_index("case_id")["length_gap"].to_dict()["c1"] == 0.0
    other = evalbeam.metric(name="length_gap")(lambda sample: 1.0)
    with pytest.raises(ValueError, match="'length_gap' is defined twice"):
        evalbeam.evaluate(SAMPLE_ROWS[:2], output=tmp_path / "refused", progress=False,
                          metrics=[length_gap], custom_metrics=[other])
    assert not (tmp_path / "refused").exists()


@evalbeam.metric
def answer_words(sample):
    """Declared bare, as a decorator is often written: the defaults."""
    return float(len(sample["answer"].split()))


@evalbeam.metric(needs="expected_answer")
def reference_words(sample):
    return float(len(sample["expected_answer"].split()))


def test_a_metric_declared_without_parentheses_or_with_one_need_as_text_runs(tmp_path):
    """@evalbeam.metric without parentheses replaced the function by the
    decorator's inner `mark`: the run scored a metric named 'mark', null on
    every row ("'function' object is not iterable"). needs="expected_answer"
    was read letter by letter ("unknown need 'e'"). The bare decorator
    declares the defaults (needs the answer), a text is one need."""
    result = evalbeam.evaluate(SAMPLE_ROWS[:2], output=tmp_path / "out", progress=False,
                               metrics=[answer_words, reference_words])
    assert result.metrics == ["answer_words", "reference_words"]
    scores = result.scores().to_pylist()
    assert [s["error"] for s in scores] == [None] * 4
    by_case = result.to_pandas().set_index("case_id")
    assert by_case.loc["c1", "answer_words"] == len(SAMPLE_ROWS[0]["answer"].split())
    assert by_case.loc["c1", "reference_words"] == len(
        SAMPLE_ROWS[0]["expected_answer"].split())


def _verdicts_and_scores(result) -> tuple[list, list]:
    """What two runs of the same cases must agree on."""
    results = sorted((r["case_id"], r["suite"], r["expected_answer"], r["verdict"])
                     for r in result.results().to_pylist())
    scores = sorted((s["case_id"], s["metric"], s["value"], s["error"])
                    for s in result.scores().to_pylist())
    return results, scores


def test_a_frames_records_evaluate_as_the_frame_does(tmp_path):
    """df.to_dict("records") (a list of dicts) holds pandas' missing values:
    a row with NaN for its reference was an errors/ row ("expected_answer must
    be a string or a list of strings, got float") while the frame evaluated
    it; one pd.NA, or a Timestamp column beside a mistyped cell, refused the
    whole call ("cases cannot be read as a table ... nor as JSON (Object of
    type NAType is not JSON serializable)"). NaN, pd.NA and NaT are missing
    values, as in the frame; a date is its ISO text."""
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(SAMPLE_ROWS[:3])
    frame.loc[1, "expected_answer"] = float("nan")
    frame["suite"] = frame["suite"].astype("string")
    frame.loc[0, "suite"] = pd.NA
    frame["asked_at"] = pd.Timestamp("2026-11-25 10:00")
    frame.loc[2, "asked_at"] = pd.NaT
    records = frame.to_dict("records")
    assert records[1]["expected_answer"] != records[1]["expected_answer"]  # NaN
    run = {"output": tmp_path / "out", "progress": False, "metrics": CHEAP}
    expected = _verdicts_and_scores(evalbeam.evaluate(frame, run_id="frame", **run))
    assert expected[0][1][:3] == ("c2", "billing", None)
    from_records = evalbeam.evaluate(records, run_id="records", **run)
    assert from_records.counts["valid_cases"] == 3
    assert _verdicts_and_scores(from_records) == expected
    # a question Arrow cannot type: JSON Lines, the mistyped row an errors/ row
    mistyped = evalbeam.evaluate(records + [{**records[0], "case_id": "c9", "question": 5}],
                                 run_id="mistyped", **run)
    assert (mistyped.counts["valid_cases"], mistyped.counts["invalid_rows"]) == (3, 1)
    assert _verdicts_and_scores(mistyped) == expected
    assert mistyped.errors().to_pylist()[0]["case_id"] == "c9"


def test_a_config_given_as_yaml_text_is_read_as_the_file_would_be(tmp_path):
    """config="metrics: [rougeL]" (the YAML pasted into a notebook cell) was
    taken for a file's path: "cannot read config metrics: [rougeL]: No such
    file or directory". A str that spans lines, or that is no file and reads
    as a mapping, is the YAML itself; its problems are named as the config
    text's; the variables it names are scrubbed as a file's are."""
    text = "bots:\n  - {name: recorded, type: precomputed}\nmetrics: [exact_match]\n"
    result = evalbeam.evaluate(SAMPLE_ROWS[:2], text, output=tmp_path / "out", progress=False)
    assert (result.bots, result.metrics) == (["recorded"], ["exact_match"])
    one_line = evalbeam.evaluate(SAMPLE_ROWS[:2], "metrics: [exact_match, keyword_recall]",
                                 output=tmp_path / "out", progress=False)
    assert one_line.metrics == ["exact_match", "keyword_recall"]
    with pytest.raises(ConfigError) as bad:
        evalbeam.evaluate(SAMPLE_ROWS[:2], "metrics: [rougeL\n", output=tmp_path / "bad")
    assert str(bad.value).startswith("config text is not valid YAML at line 2")
    with pytest.raises(ConfigError, match="^unknown key 'metric'"):
        evalbeam.evaluate(SAMPLE_ROWS[:2], "metric: [rougeL]", output=tmp_path / "bad")
    assert not (tmp_path / "bad").exists()
    from transforms.remote.scrub import process_scrubber, remember_config_secrets
    env = {"EB_TEXT_KEY": "tk-" + "Hq83Vn"}
    remember_config_secrets("endpoints:\n  llm: {base_url: 'http://127.0.0.1:9', "
                            "api_key_env: EB_TEXT_KEY}\n", env)
    assert process_scrubber().scrub(f"key {env['EB_TEXT_KEY']}") == "key <redacted>"


def test_a_frames_whole_number_ids_stay_whole_when_one_is_missing(tmp_path):
    """pandas makes an int column float when one value is missing: a frame
    whose case ids were 1, None, 3 was evaluated as cases '1.0' and '3.0',
    ids the user never wrote (and that no later run with all ids given
    matches). Whole numbers are read as they were written; 1.5 stays '1.5';
    the row without an id gets a derived one, in both ways a frame is read
    (Parquet, and JSON Lines when a cell is mistyped)."""
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(SAMPLE_ROWS[:3]).assign(case_id=[1, None, 3])
    assert frame["case_id"].dtype == float
    mistyped = pd.concat([frame, pd.DataFrame([{"case_id": 1.5, "question": 5}])],
                         ignore_index=True)
    for name, cases, ids in (("frame", frame, ["1", "3"]), ("mistyped", mistyped, ["1", "3"])):
        result = evalbeam.evaluate(cases, output=tmp_path / "out", run_id=name,
                                   metrics=["exact_match"], progress=False)
        given = sorted(i for i in result.results()["case_id"].to_pylist()
                       if not i.startswith("h-"))
        assert given == ids, name
        assert result.counts["valid_cases"] == 3
    assert [e["case_id"] for e in result.errors().to_pylist()] == ["1.5"]


def test_a_run_id_another_run_holds_is_one_documented_error(tmp_path):
    """evaluate() of a run id that another thread (or process, or notebook)
    was running raised transforms.publish.lease.LeaseHeld, a RuntimeError
    the Python API neither named nor exported: a script could catch it only
    as any RuntimeError. It is evalbeam.LeaseHeld, raised before anything is
    written; the run holding the id goes on and commits."""
    import threading
    import time
    out, marker = tmp_path / "out", str(tmp_path / "started")

    @evalbeam.metric(options={"marker": marker})
    def slow_start(sample, marker):
        """Says it has started (a file), then takes a while: a run still going."""
        open(marker, "w").close()
        time.sleep(2)
        return 1.0

    held = {}
    running = threading.Thread(target=lambda: held.setdefault("result", evalbeam.evaluate(
        SAMPLE_ROWS[:2], output=out, run_id="shared", metrics=[slow_start], progress=False)),
        daemon=True)
    running.start()
    deadline = time.monotonic() + 120
    while not os.path.exists(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    with pytest.raises(evalbeam.LeaseHeld) as refused:
        evalbeam.evaluate(SAMPLE_ROWS[:2], output=out, run_id="shared", metrics=["exact_match"],
                          progress=False)
    assert isinstance(refused.value, RuntimeError)
    assert str(refused.value).startswith("run id 'shared' is being run by ")
    running.join(timeout=120)
    assert held["result"].metrics == ["slow_start"] and held["result"].counts["valid_cases"] == 2


def test_paths_under_the_home_folder_are_read_and_written_there(tmp_path, monkeypatch):
    """output="~/evals" in a notebook wrote the run into a folder named '~'
    in the working folder (a shell expands ~, Python does not; pandas'
    to_parquet and read_parquet do), and read_run("~/evals", ...) looked
    there too; "~/cases.parquet" as cases or "~/config.yaml" as config were
    not found. Each is under the home folder, as the user meant."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir(), work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    write_cases(str(home / "cases.parquet"), SAMPLE_ROWS[:2])
    (home / "config.yaml").write_text("metrics: [exact_match]\n")
    result = evalbeam.evaluate("~/cases.parquet", "~/config.yaml", output="~/evals",
                               run_id="home", progress=False)
    assert result.metrics == ["exact_match"] and result.counts["valid_cases"] == 2
    assert (home / "evals" / "runs" / "home" / "manifest.json").exists()
    assert os.listdir(work) == []
    assert evalbeam.read_run("~/evals", "home").counts == result.counts


def test_a_metric_without_a_name_of_its_own_is_refused_saying_how_to_name_it(tmp_path):
    """metrics=[lambda sample: ...] (or a functools.partial) was refused as
    "custom metric <function <lambda> at 0x...> must be a metric name ...,
    got '<lambda>'", not saying how a function gets a name. The line ends with
    the way: evalbeam.metric(name=...), which then runs."""
    import functools
    for fn in (lambda sample: 1.0, functools.partial(lambda sample, k: k, k=1.0)):
        with pytest.raises(ConfigError) as refused:
            evalbeam.evaluate(SAMPLE_ROWS[:2], output=tmp_path / "out", metrics=[fn])
        assert str(refused.value).endswith(
            '; name it: evalbeam.metric(name="my_metric")(function), or def a function of '
            "that name"), str(refused.value)
    assert not (tmp_path / "out").exists()
    named = evalbeam.metric(name="one")(lambda sample: 1.0)
    result = evalbeam.evaluate(SAMPLE_ROWS[:2], output=tmp_path / "out", metrics=[named],
                               progress=False)
    assert result.to_pandas()["one"].tolist() == [1.0, 1.0]


def test_a_summary_of_a_suite_the_run_does_not_have_says_so(tmp_path):
    """result.summary(suite="biling") (a typo) returned an empty table, read as
    "no scores" in a notebook; now a ValueError naming the run's suites. A
    suite that is there gives its rows."""
    result = evalbeam.evaluate(SAMPLE_ROWS[:2], output=tmp_path / "out", progress=False,
                               metrics=["exact_match"])
    assert set(result.summary(suite="billing")["suite"].to_pylist()) == {"billing"}
    with pytest.raises(ValueError) as raised:
        result.summary(suite="biling")
    assert str(raised.value) == (f"run {result.run_id} has no suite 'biling'; its suites: "
                                 "'*', 'billing', 'returns' ('*': all together, None: every row)")


def test_import_is_cheap_and_the_names_are_there():
    code = ("import sys, evalbeam; assert 'apache_beam' not in sys.modules; "
            "print(sorted(evalbeam.__all__)); evalbeam.metric; print(callable(evalbeam.evaluate)); "
            "import evalbeam.api; assert evalbeam.NothingEvaluated is evalbeam.api.NothingEvaluated; "
            "assert evalbeam.RunFailed is evalbeam.api.RunFailed")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == [
        "['LeaseHeld', 'NothingEvaluated', 'Result', 'RunFailed', 'evaluate', 'metric', "
        "'read_run']", "True"]
    assert out.stderr == ""  # evalbeam.evaluate loaded the API's modules (and Beam) quietly


def test_importing_the_api_prints_no_beam_warning():
    """Beam warns through the root logger on import that its optional GCP
    clients are absent; a notebook that imported evalbeam.api or
    evalbeam.result first saw the line (the CLI's filter came too late)."""
    for module in ("evalbeam.result", "evalbeam.api"):
        out = subprocess.run([sys.executable, "-c", f"import {module}"], cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and "apitools" not in out.stderr, out.stderr


def test_written_cases_file_is_parquet_and_removed(tmp_path):
    from evalbeam.api import cases_path
    path, label, staging = cases_path([{"question": "q", "answer": "a"}])
    try:
        assert pq.read_table(path).to_pylist() == [{"question": "q", "answer": "a"}]
        assert label == "list of dicts (1 row, in memory)"
    finally:
        shutil.rmtree(staging)
    assert cases_path("x.parquet") == ("x.parquet", None, None)


def test_a_second_config_with_its_own_module_of_the_same_name_is_used(tmp_path):
    """Two configs in two folders, each beside its own `shared_name_metric.py`:
    evaluate() in one process used the first folder's module for both (Python's
    module cache), and an edited module was not read again."""
    def folder(name: str, value: float):
        where = tmp_path / name
        where.mkdir(exist_ok=True)
        (where / "shared_name_metric.py").write_text(
            f"def score(sample):\n    return {value!r}\n", "utf-8")
        (where / "c.yaml").write_text(
            "bots: [{name: recorded, type: precomputed}]\nmetrics: [mine]\n"
            "custom_metrics:\n  - {name: mine, function: 'shared_name_metric:score'}\n",
            "utf-8")
        return where / "c.yaml"

    def values(config) -> set:
        result = evalbeam.evaluate(SAMPLE_ROWS[:2], config=str(config), progress=False,
                                   output=tmp_path / f"out{len(seen)}", run_id="r")
        seen.append(config)
        return {r["value"] for r in result.scores().to_pylist() if r["metric"] == "mine"}

    seen: list = []
    first, second = folder("a", 0.25), folder("b", 0.75)
    assert values(first) == {0.25}
    assert values(second) == {0.75}
    folder("a", 0.5)  # edited in place (another length, so no stale bytecode either)
    assert values(first) == {0.5}


def test_cases_arrow_cannot_type_are_row_errors_not_a_crash(tmp_path):
    """A question that is a number in one row and text in the next (a list of
    dicts, a DataFrame) or a lone surrogate made evaluate() raise pyarrow's
    ArrowTypeError / a UnicodeEncodeError; such rows are errors/ rows, as in a file."""
    import pandas as pd
    rows = [{"case_id": "ok", "question": "q?", "answer": "a"},
            {"case_id": "int", "question": 5, "answer": "b"},
            {"case_id": "sur", "question": "bad \ud800", "answer": "c"}]
    for i, cases in enumerate([rows, pd.DataFrame(rows[:2] + [{"case_id": "nan",
                                                               "question": "n?",
                                                               "answer": float("nan")}])]):
        out = tmp_path / f"out{i}"
        result = evalbeam.evaluate(cases, output=out, run_id="r", metrics=["exact_match"],
                                   progress=False, run_date="2024-01-01")
        m = manifest(str(out), "r")
        assert m["counts"]["input_rows"] == 3 and m["reconciliation"]["ok"]
        errors = {(e["case_id"], e["error_type"]) for e in read_rows(str(out), "errors")}
        assert ("int", "wrong_type") in errors
        assert ("sur", "invalid_encoding") in errors if i == 0 else ("nan", "bot_error") in errors
        assert result is not None


def test_evaluate_runs_in_an_ipython_kernel(tmp_path, monkeypatch):
    """In Jupyter (an IPython kernel) Beam takes the pipeline for Interactive
    Beam's: applying a transform imported apache_beam.dataframe, which fails on
    pandas 3 (AttributeError: type object 'DataFrame' has no attribute 'first'),
    so every evaluate() in a notebook failed; and the pipeline's temporary
    folder was left for Interactive Beam to remove."""
    import tempfile
    import types
    shell = types.SimpleNamespace(config={"IPKernelApp": {}}, execution_count=3)
    fake = types.ModuleType("IPython")
    fake.get_ipython = lambda: shell
    monkeypatch.setitem(sys.modules, "IPython", fake)
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    result = evalbeam.evaluate(SAMPLE_ROWS, output=tmp_path / "out", metrics=["exact_match"],
                               progress=False)
    assert result.results().num_rows == 4
    assert os.listdir(temp) == []  # neither the staged cases nor Beam's temporary folder


def test_a_refused_call_leaves_no_temporary_output_folder(tmp_path, monkeypatch):
    """Without output=, evaluate() made its temporary output folder before the
    up-front checks, so every refused call left an empty evalbeam-* folder."""
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    for bad in [dict(cases=42), dict(cases=SAMPLE_ROWS, metrics=["blue"]),
                dict(cases=[{"prompt": "hi"}]), dict(cases=SAMPLE_ROWS, run_id="../x")]:
        with pytest.raises(ValueError):
            evalbeam.evaluate(**bad)
    assert os.listdir(tmp_path) == []


def test_a_bad_beam_option_is_one_clear_error(tmp_path, capsys):
    """A Beam option's bad value ended the notebook's cell with SystemExit 2
    after Beam's whole usage text."""
    from pipeline.plan import UsageError
    with pytest.raises(UsageError, match="direct_num_workers: invalid int value: 'abc'"):
        evalbeam.evaluate(SAMPLE_ROWS, output=tmp_path / "out", direct_num_workers="abc")
    assert "usage:" not in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_refusals_name_in_memory_cases_as_given_not_their_staged_file(tmp_path):
    """A missing column of in-memory cases was reported against the temporary
    file they were staged in (removed since); with a remote runner they were
    '--input /tmp/evalbeam-cases-.../cases.parquet is a path on this machine
    ... add --shared-filesystem', a flag evaluate() does not take."""
    from pipeline.plan import UsageError
    with pytest.raises(InputError) as caught:
        evalbeam.evaluate([{"prompt": "hi"}], output=tmp_path / "out")
    assert str(caught.value).startswith("list of dicts (1 row, in memory): missing required "
                                        "column 'question'")
    with pytest.raises(UsageError) as caught:
        evalbeam.evaluate(SAMPLE_ROWS, output="gs://bucket/evals", runner="DataflowRunner")
    assert "evalbeam-cases-" not in str(caught.value)
    assert str(caught.value).startswith("cases in memory (list of dicts (4 rows, in memory)) "
                                        "cannot be read by the workers of a remote runner")
    assert not (tmp_path / "out").exists()


def test_to_pandas_does_not_give_one_case_ids_scores_to_its_duplicate(tmp_path):
    """Two rows with one case id are both evaluated (a duplicate_case_id
    warning); to_pandas() gave both rows the first one's scores (exact_match
    1.0 for an answer 'y' without a reference). Their metric columns are left
    empty (scores() has both) and a warning says so."""
    rows = SAMPLE_ROWS[:1] + [{"case_id": "c1", "question": "again?", "answer": "y"}]
    result = evalbeam.evaluate(rows, output=tmp_path / "out", metrics=["exact_match"],
                               progress=False)
    with pytest.warns(UserWarning, match="case id c1 occurs 2 times"):
        frame = result.to_pandas()
    assert len(frame) == 2 and frame["exact_match"].isna().all()
    values = sorted(str(r["value"]) for r in result.scores().to_pylist())
    assert values == ["1.0", "None"]


def test_a_run_that_evaluated_nothing_reads_as_empty_tables(tmp_path):
    """Every row invalid (an answer column of numbers) or an empty frame:
    evaluate() returned, the summary and errors/ read, but to_pandas(),
    results() and scores() raised RunUnreadable ('it evaluated nothing'),
    so a notebook cell filtering the frame failed instead of finding no rows."""
    import pandas as pd
    numbers = pd.DataFrame([{"question": "q1", "answer": 42}, {"question": "q2", "answer": 7}])
    for i, cases in enumerate([numbers, pd.DataFrame(columns=["question", "answer"])]):
        result = evalbeam.evaluate(cases, output=tmp_path / f"out{i}", metrics=["exact_match"],
                                   progress=False, allow_empty=True)
        assert result.counts["valid_cases"] == 0
        frame = result.to_pandas()
        assert len(frame) == 0 and {"case_id", "bot", "verdict", "run_date"} <= set(frame.columns)
        assert result.results().num_rows == 0 and result.scores().num_rows == 0
        assert {"metric", "value", "bot"} <= set(result.scores().column_names)
        assert result.errors().num_rows == len(cases)


def test_evaluate_refuses_an_empty_input_and_raises_when_nothing_was_evaluated(tmp_path):
    """As `evalbeam run` (exit 2, exit 6): a script's nightly evaluate() over an
    empty frame returned a Result of nothing, so the job looked green. An
    empty input is an InputError before anything is written; rows that are all
    invalid raise NothingEvaluated (a ValueError) holding the Result, whose
    errors() say why; allow_empty=True returns as before."""
    import pandas as pd
    from evalbeam.api import NothingEvaluated
    from schemas.cases import InputError
    with pytest.raises(InputError, match=r"^pandas\.DataFrame holds no cases \(0 rows\).*"
                                         r"allow_empty=True"):
        evalbeam.evaluate(pd.DataFrame(columns=["question", "answer"]), output=tmp_path / "e",
                          progress=False)
    assert not (tmp_path / "e").exists()
    numbers = pd.DataFrame([{"question": "q1", "answer": 42}, {"question": "q2", "answer": 7}])
    with pytest.raises(NothingEvaluated, match="none of the input's 2 rows is a valid case"
                       ) as caught:
        evalbeam.evaluate(numbers, output=tmp_path / "n", run_id="n", progress=False)
    assert isinstance(caught.value, ValueError) and caught.value.result.errors().num_rows == 2


def test_a_frame_read_from_parquet_with_a_mistyped_cell_is_not_refused_whole(tmp_path):
    """pandas reads Parquet list columns as numpy arrays; a question that is a
    number in one row sends the frame to JSON Lines, where json could not
    write an ndarray, so evaluate() refused every row ('Object of type ndarray
    is not JSON serializable') instead of making that one row an errors/ row."""
    import numpy as np
    import pandas as pd
    frame = pd.DataFrame({"case_id": ["ok", "int"], "question": ["q?", 5], "answer": ["a", "b"],
                          "contexts": [np.array(["passage one", "passage two"]),
                                       np.array(["passage three"])]})
    result = evalbeam.evaluate(frame, output=tmp_path / "out", metrics=["exact_match"],
                               progress=False)
    assert result.counts["input_rows"] == 2 and result.counts["valid_cases"] == 1
    errors = {(e["case_id"], e["error_type"]) for e in result.errors().to_pylist()}
    assert ("int", "wrong_type") in errors
    assert result.results().to_pylist()[0]["contexts"] == ["passage one", "passage two"]


def test_a_result_whose_run_id_was_run_again_says_so(tmp_path):
    """A notebook re-runs a cell with the same output and run id while it
    still holds the first Result: the re-run replaced that attempt's files,
    and the first Result's to_pandas() said only 'cannot read its results/
    files: <a path that is gone>'. It now says the run was run again and how
    to read the new attempt."""
    rows = SAMPLE_ROWS[:2]
    first = evalbeam.evaluate(rows, output=tmp_path / "out", run_id="dev",
                              metrics=["exact_match"], progress=False)
    second = evalbeam.evaluate(rows[:1], output=tmp_path / "out", run_id="dev",
                               metrics=["exact_match"], progress=False)
    assert len(second.to_pandas()) == 1
    with pytest.raises(ValueError) as caught:
        first.to_pandas()
    said = str(caught.value)
    assert said.startswith("run 'dev' was run again after this Result was read (attempt "
                           f"{first.manifest['attempt']} replaced by "
                           f"{second.manifest['attempt']})"), said
    assert f"evalbeam.read_run({str(tmp_path / 'out')!r}, 'dev')" in said


def test_the_notebook_view_of_a_result_whose_run_was_run_again_says_so(tmp_path):
    """The text view of a Result whose run id was run again since said
    '(summary unreadable: run 'dev' was run again ...)'; the notebook's view
    (_repr_html_) raised that error, so Jupyter showed its traceback above
    the text. It shows the run's line and the same note, never raising."""
    rows = SAMPLE_ROWS[:2]
    first = evalbeam.evaluate(rows, output=tmp_path / "out", run_id="dev",
                              metrics=["exact_match"], progress=False)
    evalbeam.evaluate(rows, output=tmp_path / "out", run_id="dev", metrics=["exact_match"],
                      progress=False)
    shown = first._repr_html_()
    assert shown.startswith("<p><b>evalbeam run dev</b>")
    assert "<p>(summary unreadable: run &#x27;dev&#x27; was run again after this Result " in shown
    assert "(summary unreadable: run 'dev' was run again" in repr(first)


def test_a_result_indexed_by_metric_as_ragas_result_is_says_where_the_scores_are(tmp_path):
    """Ragas' result["faithfulness"] gives a metric's scores; on a Result it
    said only "'Result' object is not subscriptable". It now names where they
    are (the column of to_pandas(), the means of summary()), and that column
    holds them; a Result is still no sequence."""
    result = evalbeam.evaluate(SAMPLE_ROWS[:2], output=tmp_path / "out",
                               metrics=["exact_match"], progress=False)
    # a bot's name sent the reader to to_pandas()['recorded'], a KeyError; a key
    # that is neither was called a metric
    for key, said in (
            ("exact_match", "a Result is not indexed by metric as Ragas' result is: "
                            "result.to_pandas()['exact_match'] has the metric's value per case "
                            "and bot, result.summary() its mean per bot"),
            ("recorded", "a Result is not indexed by bot: 'recorded' is a bot of this run; its "
                         "rows are result.to_pandas() where bot == 'recorded', its means "
                         "result.summary() where bot == 'recorded'"),
            ("faithfulness", "a Result is not indexed, and this run has no metric "
                             "'faithfulness': its metrics are exact_match; its bots recorded")):
        with pytest.raises(TypeError) as refused:
            result[key]
        assert str(refused.value) == said, key
    assert sorted(result.to_pandas()["exact_match"]) == [0.0, 1.0]
    assert "recorded" not in result.to_pandas().columns
    with pytest.raises(TypeError, match="'Result' object is not iterable"):
        list(result)

def test_a_run_without_metrics_reads_as_an_empty_scores_table(tmp_path):
    """evaluate(cases, metrics=[]) (verdicts only, or a filtered list that
    kept no name) finished, but its Result's to_pandas() and scores() raised
    "run ... has no scores/ files": a run with no scores row writes no
    scores/ file. Its scores table is empty, with its columns, and
    to_pandas() is the results rows."""
    result = evalbeam.evaluate(SAMPLE_ROWS[:2], output=tmp_path / "out", metrics=[],
                               progress=False)
    assert result.counts["scores_rows"] == 0
    assert result.scores().num_rows == 0 and "metric" in result.scores().column_names
    frame = result.to_pandas()
    assert sorted(frame["case_id"]) == ["c1", "c2"] and set(frame["verdict"]) == {"WARN"}


def test_the_notebook_view_counts_invalid_rows_as_the_text_does(tmp_path):
    """A notebook shows _repr_html_: it said '0 cases × 1 bots.' for a frame
    whose two rows were both invalid, where the text repr says '0 cases ×
    1 bot, 2 invalid rows'."""
    rows = [{"question": "q1", "answer": 42}, {"question": "q2", "answer": 7}]
    result = evalbeam.evaluate(rows, output=tmp_path / "out", metrics=["exact_match"],
                               progress=False, allow_empty=True)
    said = "0 cases × 1 bot, 2 invalid rows"
    assert f"{said};" in repr(result) and f"{said}." in result._repr_html_()
    # one of each was '1 cases × 1 bot, 1 invalid rows'
    one = evalbeam.evaluate([{"question": "q1", "answer": "a"}, {"question": "q2", "answer": 7}],
                            output=tmp_path / "one", metrics=["exact_match"], progress=False)
    assert "1 case × 1 bot, 1 invalid row;" in repr(one)


def test_to_pandas_keeps_the_results_columns_and_suffixes_a_metric_of_the_same_name(tmp_path):
    """latency_ms is a metric and a results/ column, so every default run's
    to_pandas() had latency_ms_x and latency_ms_y and no latency_ms; a custom
    metric named like a column (label) did the same, and one named bot raised
    'cannot insert bot, already exists'."""
    label = evalbeam.metric(needs=["answer"], name="label")(lambda sample: 0.25)
    bot = evalbeam.metric(needs=["answer"], name="bot")(lambda sample: 0.5)
    result = evalbeam.evaluate(SAMPLE_ROWS[:2], output=tmp_path / "out",
                               metrics=["latency_ms", "exact_match", label, bot], progress=False)
    frame = result.to_pandas()
    columns = list(frame.columns)
    assert not [c for c in columns if c.endswith(("_x", "_y"))], columns
    assert {"latency_ms", "label", "bot", "exact_match", "latency_ms_metric", "label_metric",
            "bot_metric"} <= set(columns), columns
    assert list(frame["bot"]) == ["recorded", "recorded"]
    assert list(frame["label_metric"]) == [0.25, 0.25] and list(frame["bot_metric"]) == [0.5, 0.5]


def test_the_notebook_view_shows_the_chosen_metrics_when_it_has_none_of_its_headline(tmp_path):
    """A run of metrics outside the view's headline (hallucination,
    completeness, answer_relevance, rougeL, faithfulness, answer_correctness),
    e.g. exact_match and keyword_recall, showed verdict counts and no mean."""
    result = evalbeam.evaluate(SAMPLE_ROWS[:2], output=tmp_path / "out",
                               metrics=["exact_match", "keyword_recall"], progress=False)
    line = repr(result).splitlines()[1]
    assert "| exact_match " in line and "| keyword_recall " in line, line
    assert "<th>exact_match</th>" in result._repr_html_()


def test_a_frame_with_a_repeated_column_name_is_one_input_error(tmp_path):
    """Two columns named answer (a join or a concat in the notebook): pyarrow's
    bare ValueError ('Duplicate column names found: [...]') escaped instead of
    the InputError the guide promises, naming the frame and the column."""
    import pandas as pd
    frame = pd.DataFrame([["q1", "a", "b"]], columns=["question", "answer", "answer"])
    with pytest.raises(InputError) as caught:
        evalbeam.evaluate(frame, output=tmp_path / "out", progress=False)
    assert str(caught.value) == ("pandas.DataFrame (1 row, in memory): the column name "
                                 "'answer' occurs 2 times; every column needs its own name")
    assert not (tmp_path / "out").exists()


def test_a_frame_indexed_by_case_id_keeps_its_ids(tmp_path):
    """df.set_index('case_id') is a notebook habit: the index was dropped
    when the frame was staged, so every row silently got a derived h-... id
    instead of its own (and an index named question read as a missing
    column). Named index levels are columns; an unnamed index is not."""
    import pandas as pd
    frame = pd.DataFrame(SAMPLE_ROWS[:2]).set_index("case_id")
    result = evalbeam.evaluate(frame, output=tmp_path / "out", metrics=["exact_match"],
                               progress=False)
    assert sorted(r["case_id"] for r in result.results().to_pylist()) == ["c1", "c2"]
    mixed = pd.DataFrame([{"case_id": "x1", "question": "q?", "answer": 5},
                          {"case_id": "x2", "question": "q?", "answer": "a"}])
    result = evalbeam.evaluate(mixed.set_index("case_id"), output=tmp_path / "mixed",
                               metrics=["exact_match"], progress=False)  # JSON Lines path
    assert [r["case_id"] for r in result.results().to_pylist()] == ["x2"]
    assert [r["case_id"] for r in result.errors().to_pylist()] == ["x1"]
    plain = pd.DataFrame(SAMPLE_ROWS[:2]).drop(columns="case_id").iloc[[1, 0]]
    result = evalbeam.evaluate(plain, output=tmp_path / "plain", metrics=["exact_match"],
                               progress=False)
    assert all(r["case_id"].startswith("h-") for r in result.results().to_pylist())


def test_a_frame_indexed_by_a_column_it_kept_is_read(tmp_path):
    """df.set_index("case_id", drop=False) (the ids both as the index and as a
    column, for df.loc[id] in the notebook) was refused: "the column name
    'case_id' occurs 2 times". The level that repeats its column is that
    column; one whose values differ from the column is still refused."""
    import pandas as pd
    frame = pd.DataFrame(SAMPLE_ROWS[:2]).set_index(["suite", "case_id"], drop=False)
    result = evalbeam.evaluate(frame.iloc[[1, 0]], output=tmp_path / "out",
                               metrics=["exact_match"], progress=False)
    rows = {r["case_id"]: r for r in result.results().to_pylist()}
    assert {k: r["suite"] for k, r in rows.items()} == {"c1": "returns", "c2": "billing"}
    assert result.to_pandas().set_index("case_id")["exact_match"].to_dict() == {
        "c1": 1.0, "c2": 0.0}
    differs = frame.assign(case_id=["x1", "x2"])
    with pytest.raises(InputError, match="the column name 'case_id' occurs 2 times"):
        evalbeam.evaluate(differs, output=tmp_path / "differs")


def test_a_column_only_later_dicts_have_is_read(tmp_path):
    """A list of dicts whose first row lacks a key the others have (contexts
    only where there were any, a case_id only on some rows): every row's keys
    are columns. Before, pyarrow took the first row's keys alone, and the other
    rows' contexts were silently dropped."""
    rows = [{"question": "Who wrote it?", "answer": "Ann."},
            {"question": "When?", "answer": "In 1990.", "contexts": ["It was written in 1990."],
             "case_id": "when"}]
    result = evalbeam.evaluate(rows, output=tmp_path / "out", metrics=["exact_match"],
                               progress=False)
    got = {r["question"]: r for r in result.results().to_pylist()}
    assert got["When?"]["contexts"] == ["It was written in 1990."]
    assert got["When?"]["case_id"] == "when" and got["Who wrote it?"]["contexts"] is None


class EvaluationDataset:
    """What evalbeam reads of a Ragas EvaluationDataset (ragas is not installed
    here): its module and name, and `to_list()` as Ragas 0.4 gives it (checked by
    hand against ragas 0.4.3: SingleTurnSample fields; a MultiTurnSample's
    user_input as [{content, type}])."""
    __module__ = "ragas.dataset_schema"

    def __init__(self, rows):
        self._rows = rows

    def to_list(self):
        return [dict(r) for r in self._rows]


class DeepEvalCase:
    """A DeepEval test case or golden as evalbeam reads it (deepeval is not
    installed here): a pydantic model's `model_dump()`, with the fields DeepEval
    4.3 gives (checked by hand against deepeval 4.3.1) and a few it carries
    that evalbeam does not read."""

    def __init__(self, **fields):
        self._fields = {"context": None, "tools_called": None, "token_cost": None,
                        "comments": "checked by hand", **fields}

    def model_dump(self):
        return dict(self._fields)

    def __getattr__(self, name):  # a pydantic model's fields are attributes too
        try:
            return self.__dict__["_fields"][name]
        except KeyError:
            raise AttributeError(name) from None


class DeepEvalDataset:
    """deepeval.dataset.dataset.EvaluationDataset's shape: goldens and test_cases."""
    __module__ = "deepeval.dataset.dataset"

    def __init__(self, goldens=(), test_cases=()):
        self.goldens, self.test_cases = list(goldens), list(test_cases)


DeepEvalDataset.__name__ = "EvaluationDataset"


def test_a_deepeval_evaluation_dataset_is_read_with_the_deepeval_preset(tmp_path):
    """evaluate(dataset) as DeepEval's evaluate takes it: its test cases (a
    conversation's last assistant turn as its recorded answer, `name` as the
    case id), or its goldens when it has none. Before, it was refused ("cases
    must be a pandas DataFrame, ...")."""
    cases = [DeepEvalCase(name="refund", input="How long is the refund window?",
                          actual_output="Refunds are accepted within 30 days.",
                          expected_output="Refunds are accepted within 30 days.",
                          retrieval_context=["Refunds are accepted within 30 days."]),
             DeepEvalCase(name="plus", scenario="pricing", turns=[
                 {"role": "user", "content": "Hi, I'm on the Plus plan.", "metadata": None},
                 {"role": "assistant", "content": "Great, how can I help?", "metadata": None},
                 {"role": "user", "content": "What does it cost?", "metadata": None},
                 {"role": "assistant", "content": "Plus costs $10 a month.", "metadata": None}])]
    goldens = [DeepEvalCase(name="unanswered", input="Is there a free plan?",
                            actual_output=None, expected_output="No.")]
    result = evalbeam.evaluate(DeepEvalDataset(goldens, cases), output=tmp_path / "cases",
                               progress=False)
    rows = sorted(result.to_pandas().to_dict("records"), key=lambda r: r["case_id"])
    assert [(r["case_id"], r["question"], r["answer"]) for r in rows] == [
        ("plus", "What does it cost?", "Plus costs $10 a month."),
        ("refund", "How long is the refund window?", "Refunds are accepted within 30 days.")]
    assert result.manifest["input"] == "deepeval.EvaluationDataset (2 rows, in memory)"
    assert result.manifest["reconciliation"]["ok"]
    result = evalbeam.evaluate(DeepEvalDataset(goldens), output=tmp_path / "goldens",
                               metrics=["exact_match"], progress=False)
    (row,) = result.results().to_pylist()  # the goldens: no recorded answer, so ERROR
    assert (row["case_id"], row["expected_answer"], row["verdict"], row["error"]) == (
        "unanswered", "No.", "ERROR", "no recorded answer in the 'actual_output' column")
    assert result.manifest["input"] == "deepeval.EvaluationDataset (1 row, in memory)"


def test_deepeval_scenarios_turn_contexts_metadata_and_images(tmp_path):
    """deepeval 4.3.1's own model_dump()s (tests/fixtures/deepeval/make.py): a
    ConversationalGolden with only a scenario left a row of nothing (a run of
    them was refused: 'missing required column question'); the turns'
    retrieval_context, the metadata and the tags were dropped; an MLLMImage was
    evaluated as its placeholder text. Now: an errors/ row for the scenario and
    for the image, every passage the assistant retrieved as contexts (a
    RetrievedContextData as its context), tags and metadata as tags."""
    import json

    class Retrieved:  # deepeval's RetrievedContextData: context and source
        context, source = "Plus costs $10 per month.", "pricing.md"

    dumps = json.load(open(os.path.join(ROOT, "tests", "fixtures", "deepeval",
                                        "model_dumps.json")))
    cases = [DeepEvalCase(**dumps[name]) for name in
             ("conversational_test_case", "multimodal_test_case", "llm_test_case")]
    cases[2]._fields["retrieval_context"] = [Retrieved(), "Plans: Free, Plus."]
    result = evalbeam.evaluate(DeepEvalDataset(test_cases=cases), output=tmp_path / "cases",
                               metrics=["exact_match"], progress=False)
    got = {r["case_id"]: r for r in result.results().to_pylist()}
    assert got["refund-chat"]["contexts"] == [
        "Lamps carry a two-year warranty.", "policy.md: Refunds are accepted within 30 days "
        "of delivery."]  # the dump's text of a RetrievedContextData
    assert got["refund-chat"]["tags"] == ["chat", "channel:web"]
    assert got["free-plan"]["tags"] == ["pricing", "priority:1", "source:pricing.md"]
    assert got["free-plan"]["contexts"] == ["Plus costs $10 per month.", "Plans: Free, Plus."]
    (error,) = result.errors().to_pylist()
    assert (error["case_id"], error["error_type"]) == ("photo", "invalid_value")
    # where it came from as the user knows it, not a temporary file removed since
    assert error["source"] == "deepeval.EvaluationDataset#1"
    assert "holds an image (DeepEval's [DEEPEVAL:IMAGE:" in error["message"]
    assert result.manifest["reconciliation"]["ok"]
    goldens = [DeepEvalCase(**dumps["scenario_golden"]), DeepEvalCase(**dumps["golden"])]
    result = evalbeam.evaluate(DeepEvalDataset(goldens), output=tmp_path / "goldens",
                               metrics=["exact_match"], progress=False)
    (error,) = [e for e in result.errors().to_pylist() if e["stage"] == "read"]
    assert error["case_id"] == "scenario-only"
    assert error["message"].startswith("a ConversationalGolden with a scenario and no turns")
    (row,) = result.results().to_pylist()
    assert row["tags"] == ["tier:plus", "langs:en", "langs:fr"]


def test_a_deepeval_conversations_scenario_turn_metadata_and_sources_are_tags(tmp_path):
    """evaluate(dataset) of DeepEval objects: a ConversationalGolden's scenario
    and expected_outcome beside its turns, a Turn's metadata and the source of
    a RetrievedContextData (the case's or a turn's) were dropped without a
    word. They reach results/ as key:value tags; the passages are the
    contexts."""
    class Retrieved:  # deepeval's RetrievedContextData: context and source
        def __init__(self, context, source):
            self.context, self.source = context, source

    class Turn:  # deepeval's Turn: role, content, retrieval_context, metadata
        def __init__(self, role, content, retrieval_context=None, metadata=None):
            self.role, self.content = role, content
            self.retrieval_context, self.metadata = retrieval_context, metadata

    chat = DeepEvalCase(
        name="late-refund", scenario="A refund 40 days after delivery.",
        expected_outcome="A polite refusal.", turns=[
            Turn("user", "Can I still return my lamp?", metadata={"channel": "web"}),
            Turn("assistant", "Returns are accepted within 30 days.", retrieval_context=[
                Retrieved("Refunds are accepted within 30 days.", "policy.md")]),
            Turn("user", "It arrived 40 days ago.")])
    golden = DeepEvalCase(name="plus", input="What does Plus cost?", retrieval_context=[
        Retrieved("Plus costs $10 per month.", "pricing.md"), "Plans renew monthly."])
    result = evalbeam.evaluate(DeepEvalDataset([chat, golden]), output=tmp_path / "out",
                               metrics=["exact_match"], progress=False)
    got = {r["case_id"]: r for r in result.results().to_pylist()}
    assert got["late-refund"]["tags"] == [
        "scenario:A refund 40 days after delivery.", "expected_outcome:A polite refusal.",
        "channel:web", "source:policy.md"]
    assert got["late-refund"]["contexts"] == ["Refunds are accepted within 30 days."]
    assert got["plus"]["tags"] == ["source:pricing.md"]
    assert got["plus"]["contexts"] == ["Plus costs $10 per month.", "Plans renew monthly."]
    assert result.manifest["reconciliation"]["ok"]


def test_a_deepeval_chatbot_role_is_the_conversations_system_turn(tmp_path):
    """RoleAdherenceMetric reads a ConversationalTestCase's chatbot_role; it was
    dropped, so evalbeam's role_adherence (the guide's equivalent) found no
    role. It is the conversation's system turn, as role_adherence reads it."""
    import json
    dumps = json.load(open(os.path.join(ROOT, "tests", "fixtures", "deepeval",
                                        "model_dumps.json")))
    case = DeepEvalCase(**dict(dumps["conversational_test_case"],
                               chatbot_role="a polite support agent for Lumenfold"))
    result = evalbeam.evaluate(DeepEvalDataset(test_cases=[case]), output=tmp_path / "out",
                               metrics=["exact_match"], progress=False)
    (row,) = result.results().to_pylist()
    assert json.loads(row["messages"])[0] == {"role": "system",
                                              "content": "a polite support agent for Lumenfold"}


def test_an_empty_tool_dataset_is_named_as_the_user_knows_it(tmp_path):
    """An EvaluationDataset with no test case and no golden (a filter that
    kept nothing) was refused as 'cases is an empty list'."""
    for dataset, name in ((DeepEvalDataset(), "deepeval.EvaluationDataset"),
                          (EvaluationDataset([]), "ragas.EvaluationDataset")):
        with pytest.raises(InputError, match=f"^{name} holds no cases \\(0 rows\\); "):
            evalbeam.evaluate(dataset, output=tmp_path / "out", progress=False)
    with pytest.raises(InputError, match=r"^cases is an empty list \(0 rows\); "):
        evalbeam.evaluate([], output=tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()


def test_in_memory_cases_without_rows_are_refused_naming_allow_empty(tmp_path):
    """An empty list was refused as 'cases is an empty list (0 rows)', the fix
    (allow_empty=True) unsaid; a DataFrame with columns and no row (a filter
    that kept nothing) said 'pandas.DataFrame (0 rows, in memory) holds no
    cases (0 rows); ... pass --allow-empty (evaluate(..., allow_empty=True))',
    a command line flag first. Each says, once, the keyword; an empty dict of
    columns runs with it as an empty list does."""
    pd = pytest.importorskip("pandas")
    fix = "; to run over an empty input anyway pass allow_empty=True"
    kept_none = pd.DataFrame(SAMPLE_ROWS).query("suite == 'none'")
    for cases, said in (([], "cases is an empty list (0 rows)"),
                        (kept_none, "pandas.DataFrame holds no cases (0 rows)"),
                        ({}, "dict of columns holds no cases (0 rows)")):
        with pytest.raises(InputError) as refused:
            evalbeam.evaluate(cases, output=tmp_path / "out", progress=False)
        assert str(refused.value) == said + fix
    assert not (tmp_path / "out").exists()
    result = evalbeam.evaluate({}, output=tmp_path / "out", allow_empty=True,
                               metrics=["exact_match"], progress=False)
    assert result.counts["input_rows"] == 0 and result.results().num_rows == 0


def test_allow_empty_runs_an_empty_list_as_it_runs_an_empty_frame(tmp_path):
    """The guide says allow_empty=True accepts an empty input; an empty
    DataFrame ran, an empty list (a filter that kept nothing) still raised
    'cases is an empty list'. It runs: no rows, a committed run."""
    for cases, name in (([], "list"), (DeepEvalDataset(), "deepeval")):
        result = evalbeam.evaluate(cases, output=tmp_path / name, allow_empty=True,
                                   metrics=["exact_match"], progress=False)
        assert result.counts["input_rows"] == 0 and result.results().num_rows == 0
        assert (tmp_path / name / "runs" / result.run_id / "manifest.json").exists()


def test_a_ragas_evaluation_dataset_is_read_with_the_ragas_preset(tmp_path):
    """evaluate(dataset) as Ragas' evaluate takes it: the samples in Ragas'
    columns, a multi-turn sample's last AI reply as its recorded answer. Before,
    it was refused ("cases must be a pandas DataFrame, ...")."""
    dataset = EvaluationDataset([
        {"user_input": "How long is the refund window?",
         "retrieved_contexts": ["Refunds are accepted within 30 days."],
         "response": "Refunds are accepted within 30 days.",
         "reference": "Refunds are accepted within 30 days."},
        {"user_input": [{"content": "Hi, I'm on the Plus plan.", "type": "human"},
                        {"content": "Great, how can I help?", "type": "ai"},
                        {"content": "What does it cost?", "type": "human"},
                        {"content": "Plus costs $10 a month.", "type": "ai"}],
         "reference": "Plus costs $10 a month."}])
    result = evalbeam.evaluate(dataset, output=tmp_path / "out", progress=False)
    rows = sorted(result.to_pandas().to_dict("records"), key=lambda r: r["question"])
    assert [(r["question"], r["answer"], r["verdict"] != "ERROR") for r in rows] == [
        ("How long is the refund window?", "Refunds are accepted within 30 days.", True),
        ("What does it cost?", "Plus costs $10 a month.", True)]
    assert result.manifest["input"] == "ragas.EvaluationDataset (2 rows, in memory)"
    assert result.manifest["reconciliation"]["ok"]


def test_a_dataframe_in_ragas_columns_is_read_with_the_ragas_preset(tmp_path):
    """A Ragas dataset's to_pandas() (the shape a Ragas user keeps in a notebook
    or a CSV) was refused ("missing required column 'question'; ... set
    input.preset: ragas"), while the same rows as an EvaluationDataset ran. In
    memory, columns that are one tool's and no 'question' are read with its
    preset, said in a note; the reference and contexts are read (not only the
    question and answer)."""
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({
        "user_input": ["Who wrote Hamlet?", "When did the war end?"],
        "response": ["William Shakespeare wrote Hamlet.", "It ended in 1946."],
        "retrieved_contexts": [["Hamlet is a tragedy by William Shakespeare."],
                               ["The war ended in 1945."]],
        "reference": ["William Shakespeare", "1945"]})
    result = evalbeam.evaluate(frame, output=tmp_path / "out", progress=False,
                               metrics=["exact_match", "reference_coverage", "groundedness"])
    rows = sorted(result.to_pandas().to_dict("records"), key=lambda r: r["question"])
    assert [(r["question"], r["expected_answer"], list(r["contexts"])) for r in rows] == [
        ("When did the war end?", "1945", ["The war ended in 1945."]),
        ("Who wrote Hamlet?", "William Shakespeare",
         ["Hamlet is a tragedy by William Shakespeare."])]
    assert [r["reference_coverage"] for r in rows] == [0.0, 1.0]
    note = ("the columns user_input, reference, response, retrieved_contexts are the 'ragas' "
            "preset's and there is no 'question' column: read with input.preset: ragas "
            "(pass config={'input': {'preset': 'ragas'}} to say so)")
    assert note in result.manifest["notes"]
    assert result.manifest["config"]["input"]["preset"] == "ragas"
    # the same columns beside evalbeam's own 'question': read as they are, with the hint
    both = frame.assign(question=frame["user_input"], answer=frame["response"])
    plain = evalbeam.evaluate(both, output=tmp_path / "plain", progress=False,
                              metrics=["exact_match"])
    assert not any("there is no 'question' column" in n for n in plain.manifest["notes"])
    assert any("look like the 'ragas' preset's" in n for n in plain.manifest["notes"])
    # a list of dicts in DeepEval's columns, and a mapping of one's own left alone
    cases = [{"input": "Who wrote Hamlet?", "actual_output": "Shakespeare",
              "expected_output": "Shakespeare"}]
    deep = evalbeam.evaluate(cases, output=tmp_path / "deep", progress=False,
                             metrics=["exact_match"])
    assert deep.to_pandas()["exact_match"].tolist() == [1.0]
    assert deep.manifest["config"]["input"]["preset"] == "deepeval"
    with pytest.raises(InputError, match="missing required column 'question'"):
        evalbeam.evaluate(cases, output=tmp_path / "mapped",
                          config={"input": {"columns": {"answer": "actual_output"}}})


class LLMTestCase(DeepEvalCase):
    """A DeepEval LLMTestCase as evalbeam tells it: its module and class name."""
    __module__ = "deepeval.test_case.llm_test_case"


class ConversationalTestCase(LLMTestCase):
    __module__ = "deepeval.test_case.conversational_test_case"


class Turn:
    """A DeepEval Turn: attributes, one evalbeam does not read (user_id)."""

    def __init__(self, role, content, user_id=None):
        self.role, self.content, self.user_id = role, content, user_id
        self.retrieval_context = self.metadata = None


class SingleTurnSample:
    """A Ragas SingleTurnSample: its to_dict() gives the fields with a value."""
    __module__ = "ragas.dataset_schema"

    def __init__(self, **fields):
        self._fields = fields

    def to_dict(self):
        return {k: v for k, v in self._fields.items() if v is not None}


RAGAS_TAIL = (", which evalbeam does not read (see guides/migrating-ragas.md"
              "#fields-evalbeam-does-not-read)")
DEEPEVAL_TAIL = (", which evalbeam does not read (see guides/migrating-deepeval.md"
                 "#fields-evalbeam-does-not-read)")


def _unread_notes(result) -> list[str]:
    return [n for n in result.manifest["notes"] if "which evalbeam does not read" in n]


def test_values_in_fields_of_deepeval_objects_evalbeam_does_not_read_are_noted(tmp_path, capsys):
    """A DeepEval dataset's comments, context or a turn's user_id were dropped
    before the run read its cases, without the note a file of the same cases
    gets ("1 of 2 rows has DeepEval `comments`, which evalbeam does not
    read ..."); now the same note, from the same tally, once per field."""
    cases = [DeepEvalCase(name="refund", input="Refund window?", actual_output="30 days.",
                          expected_output="30 days.", context=["Refunds: 30 days."]),
             DeepEvalCase(name="chat", comments=None, turns=[
                 Turn("user", "What does Plus cost?", user_id="u-17"),
                 Turn("assistant", "$10 a month.")])]
    result = evalbeam.evaluate(DeepEvalDataset(test_cases=cases), output=tmp_path / "ds",
                               metrics=["exact_match"], progress=False)
    notes = ["1 of 2 rows has DeepEval `context`" + DEEPEVAL_TAIL,
             "1 of 2 rows has DeepEval `comments`" + DEEPEVAL_TAIL,
             "1 of 2 rows has DeepEval `user_id` in a turn" + DEEPEVAL_TAIL]
    assert _unread_notes(result) == notes
    assert ["evalbeam: note: " + n for n in notes] == [
        line for line in capsys.readouterr().err.splitlines() if "does not read" in line]
    assert sorted(result.to_pandas()["case_id"]) == ["chat", "refund"]


def test_a_list_of_deepeval_or_ragas_cases_is_read_as_their_dataset(tmp_path):
    """evaluate([LLMTestCase(...), ...]) as deepeval.evaluate(test_cases=...)
    takes them, or a list of Ragas samples, was refused with "cases must be
    ..., got builtins.list"; now read with the tool's preset, named as given,
    and their unread fields noted."""
    cases = [LLMTestCase(name="refund", input="Refund window?", actual_output="30 days.",
                         expected_output="30 days.", tools_called=[{"name": "lookup"}]),
             ConversationalTestCase(name="chat", turns=[Turn("user", "Plus?"),
                                                        Turn("assistant", "$10.")])]
    result = evalbeam.evaluate(cases, output=tmp_path / "de", metrics=["exact_match"],
                               progress=False)
    assert result.manifest["input"] == ("list of deepeval.LLMTestCase and "
                                        "deepeval.ConversationalTestCase (2 rows, in memory)")
    assert sorted(result.to_pandas()["case_id"]) == ["chat", "refund"]
    assert _unread_notes(result) == [
        "2 of 2 rows have DeepEval `comments`" + DEEPEVAL_TAIL,
        "1 of 2 rows has DeepEval `tools_called`" + DEEPEVAL_TAIL]
    samples = [SingleTurnSample(user_input="Refund window?", response="30 days.",
                                reference="30 days.", rubrics={"score1": "wrong"},
                                reference_contexts=["Refunds: 30 days."]),
               SingleTurnSample(user_input="Free plan?", response="No.", reference="No.")]
    result = evalbeam.evaluate(samples, output=tmp_path / "ragas", metrics=["exact_match"],
                               progress=False)
    assert result.manifest["input"] == "list of ragas.SingleTurnSample (2 rows, in memory)"
    assert sorted(result.to_pandas()["question"]) == ["Free plan?", "Refund window?"]
    assert _unread_notes(result) == ["1 of 2 rows has Ragas `reference_contexts`" + RAGAS_TAIL,
                                     "1 of 2 rows has Ragas `rubrics`" + RAGAS_TAIL]


def test_a_streamed_hf_dataset_and_a_deque_of_dicts_are_read_as_their_rows(tmp_path):
    """A Hugging Face dataset loaded with streaming=True (an IterableDataset:
    rows one at a time, no Arrow table) and a collections.deque of dicts were
    refused ("cases must be ...; got datasets.IterableDataset") though each
    holds the rows a generator does. They are read as the rows they give."""
    from collections import deque
    datasets = pytest.importorskip("datasets")
    rows = SAMPLE_ROWS[:2]
    streamed = datasets.Dataset.from_list(rows).to_iterable_dataset()
    for cases, name in [(streamed, "datasets.IterableDataset of dicts"),
                        (deque(rows), "collections.deque of dicts")]:
        result = evalbeam.evaluate(cases, output=tmp_path / "out", progress=False,
                                   metrics=["exact_match"])
        assert result.manifest["input"] == f"{name} (2 rows, in memory)"
        assert result.to_pandas().set_index("case_id")["exact_match"].to_dict() == {
            "c1": 1.0, "c2": 0.0}


def test_tuples_generators_arrays_and_dicts_of_columns_are_read_or_refused_in_one_line(
        tmp_path):
    """A tuple, a generator or a numpy array of dicts, a dict of column lists
    (as pandas.DataFrame takes it) and an Arrow stream (a polars DataFrame's
    interface) were refused with "cases must be ..., got builtins.tuple"; [{}]
    said "(0 rows)". Now the first are read as the rows they hold, named as
    given, and what cannot be cases says why in one line, naming what can."""
    import numpy as np
    rows = SAMPLE_ROWS[:2]
    columns = {k: [r.get(k) for r in rows] for k in rows[0]}
    table = pa.Table.from_pylist(rows)
    for cases, name in [
            (tuple(rows), "tuple of dicts"), ((r for r in rows), "generator of dicts"),
            (np.array(rows), "numpy.ndarray of dicts"), (columns, "dict of columns"),
            (pa.RecordBatchReader.from_batches(table.schema, table.to_batches()),
             "pyarrow.RecordBatchReader")]:
        result = evalbeam.evaluate(cases, output=tmp_path / name.split()[0], progress=False,
                                   metrics=["exact_match"])
        assert result.manifest["input"] == f"{name} (2 rows, in memory)"
        assert sorted(result.to_pandas()["case_id"]) == ["c1", "c2"]
        assert result.to_pandas().set_index("case_id")["exact_match"].to_dict() == {
            "c1": 1.0, "c2": 0.0}
    refused = [
        ([{}], r"^list of dicts \(1 row, in memory\): missing required column 'question'"),
        (rows[0], r"^cases is a dict whose 'case_id' is not a list: a dict is read as columns"),
        ({"question": ["a", "b"], "answer": ["x"]},
         r"^cases is a dict of columns of different lengths \('question' has 2, 'answer' has 1\)"),
        ({}, r"^dict of columns holds no cases \(0 rows\); .* pass allow_empty=True$"),
        (iter([]), r"^iterator holds no cases \(0 rows\); .* pass allow_empty=True$"),
        (np.array([["q", "a"]]), r"^cases is a 2-D numpy array, which has no column names"),
        (None, r"^cases must be a pandas or polars DataFrame, .*, a dict of column lists, or a "
               r"path; got None$"),
        (["q1", "q2"], r"; got a list whose item 0 is builtins.str$")]
    for cases, said in refused:
        with pytest.raises(InputError, match=said):
            evalbeam.evaluate(cases, output=tmp_path / "refused")
    assert not (tmp_path / "refused").exists()


HOOKS_SCRIPT = r'''
import io, logging, os, sys, threading, warnings
import evalbeam
from tests.conftest import SAMPLE_ROWS

KEY = os.environ["EB_API_HOOK_KEY"]
hooks = lambda: (sys.stdout, sys.stderr, logging.getLogRecordFactory(), warnings.showwarning,
                 os._exit)
before = hooks()


@evalbeam.metric(needs=["answer"])
def noisy(sample):
    print("metric prints", os.environ["EB_API_HOOK_KEY"])
    logging.getLogger("user").warning("metric logs %s", os.environ["EB_API_HOOK_KEY"])
    return 1.0


cfg = {"endpoints": {"llm": {"base_url": "http://127.0.0.1:9", "api_key_env": "EB_API_HOOK_KEY"}},
       "bots": [{"name": "recorded", "type": "precomputed"}]}
evalbeam.evaluate(SAMPLE_ROWS, cfg, output=sys.argv[1], metrics=["exact_match", noisy],
                  progress=False)
print("restored after a call:", hooks() == before)
try:
    evalbeam.evaluate(SAMPLE_ROWS, cfg, output=sys.argv[1], run_id="bad id")
except ValueError:
    pass
print("restored after a raise:", hooks() == before)
print("after the call", KEY)
logging.getLogger("user").warning("after the call %s", KEY)
from transforms.remote.scrub import scrubbing_during
mine = io.StringIO()
with scrubbing_during():
    with scrubbing_during():  # nested
        print("inner", KEY)
    print("outer", KEY)
    sys.stdout = mine  # the user's own stream during the call: it stays
print("mine stays:", sys.stdout is mine, file=sys.stderr)
sys.stdout = before[0]
entered, leave = threading.Event(), threading.Event()

def call():
    with scrubbing_during():
        entered.set()
        leave.wait()

t = threading.Thread(target=call)
t.start()
entered.wait()
with scrubbing_during():
    pass
print("overlapping", KEY)  # the thread's call is under way
leave.set()
t.join()
print("restored after overlapping calls:", hooks()[2:] == before[2:], sys.stdout is before[0])
'''


def test_evaluate_leaves_the_process_as_it_found_it(tmp_path):
    """Once evaluate() had seen a secret, sys.stdout and sys.stderr stayed
    wrapped and every log record and warning of the user's process (a
    notebook's) went through the scrubber for good. Now what is printed and
    logged during the call is scrubbed, and the streams and hooks are put
    back when it returns or raises (nested and overlapping calls too; a
    stream the user set meanwhile stays)."""
    key = "hk-" + "Zq81Lw"  # a plain key, shorter than a token
    proc = subprocess.run([sys.executable, "-c", HOOKS_SCRIPT, str(tmp_path / "out")], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "EB_API_HOOK_KEY": key, "PYTHONPATH": ROOT})
    out, err = proc.stdout, proc.stderr
    assert "restored after a call: True" in out and "restored after a raise: True" in out, out
    assert proc.returncode == 0, err[-3000:]
    assert "metric prints <redacted>" in out and "metric logs <redacted>" in err, out + err
    assert f"after the call {key}" in out and f"after the call {key}" in err, out + err
    assert "inner <redacted>" in out and "outer <redacted>" in out, out
    assert "mine stays: True" in err and "overlapping <redacted>" in out, out + err
    assert "restored after overlapping calls: True True" in out, out
    assert out.count(key) == 1 and err.count(key) == 1, out + err


class Crash(BaseException):
    """Not an Exception, so not a row's error: the run's end, as a worker's crash."""


@evalbeam.metric(needs=["answer"])
def crash_after_answers(sample):
    raise Crash("the metric broke the run")


def test_a_run_that_failed_after_sending_requests_raises_run_failed_saying_what(tmp_path,
                                                                              monkeypatch):
    """Before: `evalbeam run` said in a second line what a failed run had sent
    (billed, in no usage/ table), but the exception evaluate() raised said
    only why it failed. Its message now ends with that line, scrubbed (the
    endpoint's key is configured, never quoted), and its class stays; it is
    an evalbeam.RunFailed too, whose fields say the run, why in one line and
    what it was billed for (before: a bare Crash, none of them)."""
    import pickle

    from tests.fake_server import FakeOpenAI, ServerConfig
    from tests.test_request_journal import KEY, _chat_run
    import yaml
    monkeypatch.setenv("JOURNAL_KEY", KEY)
    with FakeOpenAI(ServerConfig(), api_key=KEY) as server:
        cases, cfg = _chat_run(tmp_path, server.openai_base_url)
        config = yaml.safe_load(open(cfg, encoding="utf-8"))
        with pytest.raises(Crash) as raised:
            evalbeam.evaluate(cases, config, output=str(tmp_path / "out"), run_id="f",
                              metrics=["exact_match", crash_after_answers], progress=False)
        sent = server.stats()["total"]
    said = str(raised.value)
    assert sent > 0 and said.startswith("the metric broke the run"), said
    assert (f"; before it failed it sent {sent} requests (llm: {sent} requests, " in said
            and said.endswith("), billed and in no usage/ table")), said
    assert KEY not in said
    failed = raised.value
    assert isinstance(failed, evalbeam.RunFailed)
    assert (failed.run_id, failed.output, failed.signal) == ("f", str(tmp_path / "out"), None)
    assert failed.reason == ("Crash: the metric broke the run "
                             "[while running 'Score/Score[crash_after_answers]']")
    assert _lease(str(tmp_path / "out"), "f")["attempt"] == failed.attempt
    spent = failed.billed
    assert (spent.calls, spent.requests) == (sent, sent) and spent.tokens > 0
    assert spent.cost > 0 and spent.by_endpoint["llm"]["requests"] == sent
    assert f"{spent.tokens:,} tokens, cost {spent.cost:.4g})" in said
    again = pickle.loads(pickle.dumps(failed))  # joblib, multiprocessing
    assert isinstance(again, Crash) and isinstance(again, evalbeam.RunFailed)
    assert (str(again), again.reason, again.billed) == (said, failed.reason, spent)


def test_reading_a_run_that_failed_says_why(tmp_path):
    """read_run() of a run id whose run raised RunFailed said only "has no
    completed attempt ... (no runs/f/manifest.json; see evalbeam status)": a
    notebook that caught the failure and read the run back learnt nothing.
    Now it says what the lease says (the attempt, failed, its reason)."""
    out = str(tmp_path / "out")
    with pytest.raises(Crash) as raised:
        evalbeam.evaluate(SAMPLE_ROWS[:1], output=out, run_id="f",
                          metrics=["exact_match", crash_after_answers], progress=False)
    failed = raised.value
    with pytest.raises(ValueError) as unread:
        evalbeam.read_run(out, "f")
    assert str(unread.value) == (
        f"run f has no completed attempt under {out} (no runs/f/manifest.json; attempt "
        f"{failed.attempt} failed: {failed.reason}; see evalbeam status)")


def _lease(output: str, run_id: str) -> dict:
    """The run's lease as `evalbeam status` reads it."""
    import dataclasses

    from transforms.publish.lease import read_lease
    return dataclasses.asdict(read_lease(output, run_id))


CRASH_MODULE = """
import evalbeam


class Crash(BaseException):
    pass


@evalbeam.metric(needs=["answer"])
def crash(sample):
    raise Crash("the metric broke the run")
"""


def test_a_worker_process_failure_is_a_run_failed_runtime_error(tmp_path, monkeypatch):
    """A multi-process run whose custom metric ends it raised a RuntimeError
    holding the worker's whole traceback, the one line `evalbeam run` prints
    nowhere in it. It is still a RuntimeError (an `except RuntimeError`
    catches it) and a RunFailed: reason is that line, billed None (it sent no
    request), and the lease says the same."""
    (tmp_path / "crashing.py").write_text(CRASH_MODULE, "utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), ROOT]))
    from crashing import crash
    out = str(tmp_path / "out")
    with pytest.raises(RuntimeError) as raised:
        evalbeam.evaluate(SAMPLE_ROWS[:2], output=out, run_id="w", metrics=[crash],
                          progress=False, direct_running_mode="multi_processing",
                          direct_num_workers=2)
    failed = raised.value
    assert isinstance(failed, evalbeam.RunFailed) and "Traceback" in str(failed)
    assert failed.reason.startswith("crashing.Crash: the metric broke the run"), failed.reason
    assert "\n" not in failed.reason and len(failed.reason) <= 300
    assert (failed.run_id, failed.output, failed.billed, failed.signal) == ("w", out, None, None)
    lease = _lease(out, "w")
    assert (lease["attempt"], lease["state"]) == (failed.attempt, "failed")
    assert lease["reason"] == failed.reason


SIGINT_SCRIPT = r"""
import os, signal, sys, time
import evalbeam

# Ctrl-C's KeyboardInterrupt, as in a terminal or a notebook: a process started
# in the background (CI's) inherits SIGINT ignored, and Python keeps it so
signal.signal(signal.SIGINT, signal.default_int_handler)


@evalbeam.metric(needs=["answer"])
def ctrl_c(sample):
    os.kill(os.getpid(), signal.SIGINT)  # as Ctrl-C in the terminal or a notebook's stop
    time.sleep(2)
    return 1.0


try:
    evalbeam.evaluate([{"question": "Q?", "answer": "A"}], output=sys.argv[1], run_id="c",
                      metrics=[ctrl_c], progress=False)
except KeyboardInterrupt as failed:
    print("RunFailed:", isinstance(failed, evalbeam.RunFailed))
    print("fields:", failed.run_id, failed.reason, failed.signal, failed.billed)
"""


def test_a_run_stopped_by_ctrl_c_is_a_run_failed_keyboard_interrupt(tmp_path):
    """Ctrl-C during evaluate() raised a bare KeyboardInterrupt and the lease
    said "KeyboardInterrupt: "; now it is a RunFailed too (an `except
    KeyboardInterrupt` still catches it), signal "SIGINT", reason "stopped by
    SIGINT", as the lease says. Beam logged the step it interrupted with its
    traceback before the run's line ("failed: stopped by SIGINT"); now the
    line alone, as for SIGTERM."""
    out = str(tmp_path / "out")
    proc = subprocess.run([sys.executable, "-c", SIGINT_SCRIPT, out], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": ROOT},  # as CI starts it:
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "RunFailed: True" in proc.stdout, proc.stdout + proc.stderr[-3000:]
    assert "fields: c stopped by SIGINT SIGINT None" in proc.stdout, proc.stdout
    lease = _lease(out, "c")
    assert (lease["state"], lease["reason"]) == ("failed", "stopped by SIGINT")
    # one line, not Beam's log of the step it interrupted with its traceback
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert (f"evalbeam: error: run c (attempt {lease['attempt']}) stopped by SIGINT; a new run "
            "of the id takes over and cleans up") in proc.stderr.splitlines(), proc.stderr


SIGTERM_SCRIPT = r"""
import os, signal, sys, yaml
import evalbeam


@evalbeam.metric(needs=["answer"])
def sigterm(sample):  # after the chat bot's answers: as a job scheduler's stop
    os.kill(os.getpid(), signal.SIGTERM)
    return 1.0


cases, config, out = sys.argv[1:]
try:
    evalbeam.evaluate(cases, yaml.safe_load(open(config)), output=out, run_id="t",
                      metrics=["exact_match", sigterm], progress=False)
except evalbeam.RunFailed as failed:
    print("SystemExit:", isinstance(failed, SystemExit), failed.code)
    print("fields:", failed.run_id, failed.reason, failed.signal, failed.billed.requests)
    print("SIGTERM's handler back:", signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)
    raise  # uncaught: the script ends as SIGTERM ends it, 143
"""


def test_a_run_stopped_by_sigterm_is_a_run_failed_and_its_lease_says_so(tmp_path, monkeypatch):
    """SIGTERM (a job scheduler stopping the script) during evaluate() ended
    the process at once: no exception to catch, nothing said, the lease left
    "running" (a re-run refused until it went stale) and what the run had
    sent untold. Now it is a RunFailed (a SystemExit of 143: uncaught, the
    script ends as the signal ends it), signal "SIGTERM", reason "stopped by
    SIGTERM" as the lease says, billed filled, the one line `evalbeam run`
    prints on stderr, and SIGTERM's handler put back."""
    from tests.fake_server import FakeOpenAI, ServerConfig
    from tests.test_request_journal import KEY, _chat_run
    monkeypatch.setenv("JOURNAL_KEY", KEY)
    out = str(tmp_path / "out")
    with FakeOpenAI(ServerConfig(), api_key=KEY) as server:
        cases, cfg = _chat_run(tmp_path, server.openai_base_url)
        proc = subprocess.run([sys.executable, "-c", SIGTERM_SCRIPT, cases, cfg, out], cwd=ROOT,
                              capture_output=True, text=True, timeout=300,
                              env={**os.environ, "PYTHONPATH": ROOT})
        sent = server.stats()["total"]
    assert proc.returncode == 143, proc.stdout + proc.stderr[-3000:]
    assert proc.stdout.splitlines() == [
        "SystemExit: True 143", f"fields: t stopped by SIGTERM SIGTERM {sent}",
        "SIGTERM's handler back: True"], proc.stdout + proc.stderr[-3000:]
    lease = _lease(out, "t")
    assert lease["state"] == "failed" and lease["reason"].startswith("stopped by SIGTERM; ")
    said = [line for line in proc.stderr.splitlines() if "SIGTERM" in line]
    assert said[0] == (f"evalbeam: error: run t (attempt {lease['attempt']}) stopped by SIGTERM; "
                       "a new run of the id takes over and cleans up"), proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and KEY not in proc.stderr, proc.stderr[-3000:]


PLANNING_SIGTERM_SCRIPT = r"""
import os, signal, sys, tempfile
import evalbeam
from tests.conftest import SAMPLE_ROWS

# its module is imported while the run is planned: a scheduler's stop then
cfg = {"metrics": ["mine"], "custom_metrics": [{"name": "mine", "function": "stops:score"}]}
try:
    evalbeam.evaluate(SAMPLE_ROWS, cfg, progress=False)
except SystemExit as stopped:
    print("SystemExit:", stopped.code, isinstance(stopped, evalbeam.RunFailed))
    print("left:", os.listdir(tempfile.gettempdir()))
    raise
"""


def test_sigterm_while_a_run_is_planned_leaves_nothing_and_says_so(tmp_path):
    """SIGTERM while evaluate() planned the run (staging a DataFrame, importing
    a custom metric's module) ended the process at once and left the staged
    cases and the temporary output folder behind, nothing said. Now the
    call cleans up, prints `evalbeam run`'s line and raises SystemExit(143)
    (no run started: no RunFailed)."""
    (tmp_path / "stops.py").write_text(
        "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n\n\n"
        "def score(sample):\n    return 1.0\n", "utf-8")
    temp = tmp_path / "tmp"
    temp.mkdir()
    proc = subprocess.run([sys.executable, "-c", PLANNING_SIGTERM_SCRIPT], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": ROOT, "TMPDIR": str(temp)})
    assert proc.returncode == 143, proc.stdout + proc.stderr[-3000:]
    assert proc.stdout.splitlines() == ["SystemExit: 143 False", "left: []"], proc.stdout
    assert proc.stderr.splitlines()[-1] == ("evalbeam: error: stopped by SIGTERM while planning "
                                            "the run; nothing was written"), proc.stderr
    assert not os.listdir(temp)
