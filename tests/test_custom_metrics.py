"""Custom metrics: a function named in the config (or an entry point) is its
own Score[name]; its exceptions make that row null with the error; a bad
reference stops the run before it starts."""
from __future__ import annotations

import json
import math
import os
import sys
import textwrap

import numpy as np
import pytest

from pipeline.cli import _parser, run
from pipeline.plan import make_plan
from schemas.records import EvalCase, MetricResult, Turn
from tests.conftest import write_cases
from tests.pipeline_helpers import manifest, read_rows, run_cli, run_cli_subprocess
from transforms.score.custom import CustomCompute, to_result

MODULE = textwrap.dedent('''
    """A user's metrics module, next to the config (not installed anywhere)."""

    def _words(text):
        return set(text.lower().split())

    def overlap(sample, minimum=0):
        """Share of the reference's words in the answer; raises on case ids ending in 3."""
        if sample["case_id"].endswith("3"):
            raise RuntimeError("deliberate failure for " + sample["case_id"])
        ref = _words(sample["expected_answer"])
        score = len(ref & _words(sample["answer"])) / len(ref)
        return score if score >= minimum else (0.0, {"below": minimum})

    def says_nothing(sample):
        return None
''')


def _write_run(tmp_path, n=20):
    (tmp_path / "my_metrics.py").write_text(MODULE, "utf-8")
    rows = [{"case_id": f"c{i:02d}", "question": f"Question {i}?",
             "expected_answer": f"the answer is {i}", "answer": f"answer is {i} indeed"}
            for i in range(n)]
    cases = write_cases(str(tmp_path / "cases.parquet"), rows)
    config = tmp_path / "config.yaml"
    config.write_text(textwrap.dedent("""
        metrics: [exact_match, overlap, nothing]
        custom_metrics:
          - {name: overlap, function: "my_metrics:overlap",
             needs: [answer, expected_answer], options: {minimum: 0.1}}
          - {name: nothing, function: "my_metrics:says_nothing", lower_is_better: true}
    """), "utf-8")
    return cases, str(config)


def _check_outputs(out: str, run_id: str, n: int) -> None:
    m = manifest(out, run_id)
    assert m["reconciliation"]["ok"], m["reconciliation"]
    assert m["counts"]["scores_rows"] == n * 3
    scores = {(r["case_id"], r["metric"]): r for r in read_rows(out, "scores")}
    for i in range(n):
        row = scores[(f"c{i:02d}", "overlap")]
        if i % 10 == 3:
            assert row["value"] is None
            assert row["error"] == (f"custom metric overlap failed: RuntimeError: deliberate "
                                    f"failure for c{i:02d}")
        else:
            assert row["error"] is None and row["value"] == pytest.approx(0.75)
        nothing = scores[(f"c{i:02d}", "nothing")]
        assert nothing["value"] is None and nothing["error"] == "custom metric returned no value"
    summary = {r["metric"]: r for r in read_rows(out, "summary") if r["suite"] == "*"}
    assert (summary["overlap"]["missing"], summary["overlap"]["count"]) == (n // 10, n - n // 10)
    assert summary["nothing"]["higher_is_better"] is False


def test_custom_metric_errors_are_row_nulls_in_memory(tmp_path):
    cases, config = _write_run(tmp_path)
    out = str(tmp_path / "out")
    assert run_cli("--input", cases, "--output", out, "--config", config, "--run-id", "mem") == 0
    _check_outputs(out, "mem", 20)


@pytest.mark.slow
def test_custom_metric_ships_to_worker_processes(tmp_path):
    """Multi-processing: the workers cannot import my_metrics (it is not on their
    path); the function travels with the job, pickled by value."""
    cases, config = _write_run(tmp_path)
    out = str(tmp_path / "out")
    proc = run_cli_subprocess("--input", cases, "--output", out, "--config", config,
                              "--run-id", "mp", workers=2)
    assert proc.returncode == 0, proc.stderr[-3000:]
    _check_outputs(out, "mp", 20)


def _refused(tmp_path, capsys, cases: str, entries: str) -> str:
    """A run whose config's custom_metrics are `entries` (YAML flow items): it exits
    2 with one line `evalbeam: error: ...` (returned) and writes nothing."""
    (tmp_path / "c.yaml").write_text(f"custom_metrics: [{entries}]\n", "utf-8")
    out = tmp_path / "o"
    assert run_cli("--input", cases, "--output", str(out), "--config",
                   str(tmp_path / "c.yaml")) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("evalbeam: error: ") and "\n" not in err, err
    assert not out.exists()  # nothing written
    return err


@pytest.mark.parametrize("function, message", [
    ("no_such_module:fn", "custom_metrics[0] (mine): cannot import module 'no_such_module'"),
    ("my_metrics:missing", "custom_metrics[0] (mine): module 'my_metrics' has no function "
                           "'missing'"),
    ("just_a_name", "custom_metrics[0].function must be 'package.module:function'"),
])
def test_bad_reference_is_one_line_before_the_run(tmp_path, capsys, function, message):
    cases, _ = _write_run(tmp_path, 2)
    assert message in _refused(tmp_path, capsys, cases, f'{{name: mine, function: "{function}"}}')


def test_name_clash_and_unknown_need(tmp_path, capsys):
    cases, _ = _write_run(tmp_path, 2)
    for body, message in [
        ('custom_metrics: [{name: bleu, function: "my_metrics:overlap"}]', "defined twice"),
        ('custom_metrics: [{name: x, function: "my_metrics:overlap", needs: [vibes]}]',
         "unknown 'vibes'"),
    ]:
        (tmp_path / "c.yaml").write_text(body + "\n", "utf-8")
        assert run_cli("--input", cases, "--output", str(tmp_path / "o"), "--config",
                       str(tmp_path / "c.yaml")) == 2
        assert message in capsys.readouterr().err


@pytest.mark.parametrize("name", ["verdict", "pass_rate"])
def test_a_metric_named_as_the_verdict_rows_is_one_line_before_the_run(tmp_path, capsys, name):
    """summary/ keeps the verdict counts under metric 'verdict', compare and
    the trends call the pass rate 'pass_rate': a custom metric named 'verdict'
    ran, then the run failed at Publish/Finalize with KeyError 'pass_count'
    (a traceback, the attempt failed); 'pass_rate' was taken silently."""
    cases, _ = _write_run(tmp_path, 2)
    err = _refused(tmp_path, capsys, cases, f'{{name: {name}, function: "my_metrics:overlap"}}')
    assert err == (f"evalbeam: error: metric {name!r} is a name evalbeam keeps for the verdict "
                   "counts and the pass rate (verdict, pass_rate); choose another name"), err


def test_options_the_function_does_not_take_are_one_line_before_the_run(tmp_path, capsys):
    """An option the function does not accept made every row null with a TypeError."""
    cases, _ = _write_run(tmp_path, 2)
    for entry, message in [
        ('{name: x, function: "my_metrics:overlap", options: {minimum: 0.1, maximum: 1}}',
         "unexpected keyword argument 'maximum'"),
        ('{name: x, function: "my_metrics:says_nothing", options: {minimum: 0.1}}',
         "unexpected keyword argument 'minimum'"),
    ]:
        err = _refused(tmp_path, capsys, cases, entry)
        assert err.startswith("evalbeam: error: custom_metrics[0] (x): ") and message in err


def test_return_values():
    assert to_result(0.5) == MetricResult(0.5)
    assert to_result(True).value == 1.0
    assert to_result((0.25, {"n": 3})) == MetricResult(0.25, {"n": 3})
    assert to_result({"value": None, "error": "too short"}) == MetricResult.null("too short")
    assert to_result(math.nan).error == "custom metric returned nan"
    assert "returned str" in to_result("high").error
    turn = Turn(EvalCase("c1", "q?", "ref"), "bot", "ans")
    failing = CustomCompute("m", lambda sample, **o: 1 / 0)
    assert failing(turn, {})["m"].error == "custom metric m failed: ZeroDivisionError: division by zero"


def test_entry_point_metric(tmp_path, monkeypatch):
    """A package publishing `evalbeam.metrics` entry points: available by name."""
    (tmp_path / "plugin_metrics.py").write_text(textwrap.dedent('''
        from transforms.score.custom import metric

        @metric(needs=["answer"], lower_is_better=True)
        def shouting(sample):
            letters = [c for c in sample["answer"] if c.isalpha()]
            return sum(c.isupper() for c in letters) / len(letters) if letters else None
    '''), "utf-8")
    dist = tmp_path / "plugin_metrics-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: plugin-metrics\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[evalbeam.metrics]\nshouting = plugin_metrics:shouting\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    cases = write_cases(str(tmp_path / "cases.parquet"),
                        [{"case_id": "a", "question": "q?", "answer": "HELLO there"}])
    (tmp_path / "c.yaml").write_text("metrics: [answer_length, shouting]\n", "utf-8")
    out = str(tmp_path / "out")
    args = ["--input", cases, "--output", out, "--config", str(tmp_path / "c.yaml")]
    plan = make_plan(_parser().parse_args(["run", *args]))
    assert [s.name for s, _ in plan.scorers] == ["answer_length", "shouting"]
    assert "shouting" in plan.info.lower_is_better
    assert run_cli(*args, "--run-id", "ep") == 0
    (row,) = [r for r in read_rows(out, "scores") if r["metric"] == "shouting"]
    assert row["value"] == pytest.approx(0.5)
    sys.modules.pop("plugin_metrics", None)


def _plugin(tmp_path, monkeypatch, module: str, body: str, entry: str) -> None:
    """An installed-looking package publishing `entry` under evalbeam.metrics."""
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(body), "utf-8")
    dist = tmp_path / f"{module}-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[evalbeam.metrics]\n{entry}\n")
    monkeypatch.syspath_prepend(str(tmp_path))


def _own_metrics_run(tmp_path, module: str, body: str, entries: str, n: int,
                     run_id: str) -> str:
    """A run over n cases c0.. of `module` (written from `body` beside the config)
    with the config's `entries` (YAML lines under custom_metrics:, each metric
    also in metrics: with answer_length); it exits 0; the output folder."""
    (tmp_path / f"{module}.py").write_text(body, "utf-8")
    cases = write_cases(str(tmp_path / "cases.parquet"),
                        [{"case_id": f"c{i}", "question": "q?", "answer": "a"} for i in range(n)])
    names = [line.split("name: ")[1].split(",")[0] for line in entries.splitlines()]
    (tmp_path / "c.yaml").write_text(f"metrics: [answer_length, {', '.join(names)}]\n"
                                     f"custom_metrics:\n{entries}", "utf-8")
    out = str(tmp_path / "out")
    assert run_cli("--input", cases, "--output", out, "--config", str(tmp_path / "c.yaml"),
                   "--run-id", run_id) == 0
    sys.modules.pop(module, None)
    return out


def test_a_metric_calling_sys_exit_costs_its_rows_not_the_run(tmp_path):
    """Issue 22 item 15: SystemExit is not an Exception; it ended the run with exit 1."""
    out = _own_metrics_run(tmp_path, "quitter", "import sys\n\ndef quit_now(sample):\n"
                           "    sys.exit(3)\n",
                           '  - {name: quitter, function: "quitter:quit_now"}\n', 3, "quit")
    rows = [r for r in read_rows(out, "scores") if r["metric"] == "quitter"]
    assert len(rows) == 3
    assert all(r["value"] is None and r["error"] == "custom metric quitter failed: SystemExit: 3"
               for r in rows)
    assert manifest(out, "quit")["reconciliation"]["ok"]


def test_a_plugin_exiting_at_import_is_one_line_naming_it(tmp_path, monkeypatch, capsys):
    """Item 15: a plugin whose module calls sys.exit() at import ended the run
    with exit 1 even when `metrics:` named only built-ins."""
    _plugin(tmp_path, monkeypatch, "exiting_plugin", "import sys\nsys.exit(1)\n",
            "exiter = exiting_plugin:fn")
    cases = write_cases(str(tmp_path / "cases.parquet"), [{"question": "q?", "answer": "a"}])
    (tmp_path / "c.yaml").write_text("metrics: [answer_length]\n")
    out = tmp_path / "out"
    assert run_cli("--input", cases, "--output", str(out), "--config",
                   str(tmp_path / "c.yaml")) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "exiter = exiting_plugin:fn" in err and "SystemExit" in err
    assert not out.exists()
    sys.modules.pop("exiting_plugin", None)


@pytest.mark.parametrize("name", ["Weird-Name.with.dots/and/slash", "_private", "9lives",
                                  "x" * 65, "naïve"])
def test_an_entry_point_metric_name_is_held_to_the_config_rule(tmp_path, monkeypatch, capsys,
                                                              name):
    """Item 19: entry-point names went into scores.metric unchecked."""
    _plugin(tmp_path, monkeypatch, "oddly_named", "def fn(sample):\n    return 1.0\n",
            f"{name} = oddly_named:fn")
    cases = write_cases(str(tmp_path / "cases.parquet"), [{"question": "q?", "answer": "a"}])
    out = tmp_path / "out"
    assert run_cli("--input", cases, "--output", str(out)) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "is not a metric name" in err and name[:80] in err
    assert not out.exists()
    sys.modules.pop("oddly_named", None)


def test_config_metric_names_have_the_same_rule(tmp_path, capsys):
    """The config's custom metric and rubric names: the same rule, the same bound."""
    cases, _ = _write_run(tmp_path, 2)
    for name in ["x" * 65, "naïve", "a-b"]:
        (tmp_path / "c.yaml").write_text(
            f'custom_metrics: [{{name: "{name}", function: "my_metrics:overlap"}}]\n', "utf-8")
        assert run_cli("--input", cases, "--output", str(tmp_path / "o"), "--config",
                       str(tmp_path / "c.yaml")) == 2
        assert "must be a metric name (letters, digits and '_', starting with a letter, " \
               "at most 64)" in capsys.readouterr().err


def _one_metric_row(tmp_path, module: str, body: str) -> dict:
    """The scores/ row of a one-case run whose only metric is `module:fn`, the
    function `def fn(sample):` with this body (the run must end 0 and reconcile)."""
    (tmp_path / f"{module}.py").write_text(f"def fn(sample):\n    {body}\n", "utf-8")
    cases = write_cases(str(tmp_path / "cases.parquet"), [{"case_id": "a", "question": "q?",
                                                           "answer": "a"}])
    (tmp_path / "c.yaml").write_text(f'metrics: [{module}]\ncustom_metrics:\n'
                                     f'  - {{name: {module}, function: "{module}:fn"}}\n')
    out = str(tmp_path / "out")
    try:
        assert run_cli("--input", cases, "--output", out, "--config", str(tmp_path / "c.yaml"),
                       "--run-id", module) == 0
    finally:
        sys.modules.pop(module, None)
    assert manifest(out, module)["reconciliation"]["ok"]
    (row,) = read_rows(out, "scores")
    return row


def test_nan_in_metric_details_is_written_as_valid_json(tmp_path):
    """Item 16: {"n": NaN} went into scores.details, which is not JSON."""
    row = _one_metric_row(tmp_path, "nan_details", "return 0.5, {'n': float('nan'), "
                          "'deep': [1.0, float('-inf')], 'ok': 2.5}")

    def no_constants(word):
        raise AssertionError(f"{word} is not JSON")
    details = json.loads(row["details"], parse_constant=no_constants)
    assert details == {"n": None, "deep": [1.0, None], "ok": 2.5} and row["value"] == 0.5


def test_lone_surrogates_a_metric_returns_cost_nothing_but_the_characters(tmp_path):
    """A custom metric whose details, error or exception held a lone surrogate
    (half an emoji cut from a string) ended the whole run with a traceback:
    UnicodeEncodeError [while running 'Publish/ScoreRows']."""
    (tmp_path / "halves.py").write_text(
        "def in_details(sample):\n    return 0.5, {'cut': 'ab\\ud83d', '\\udc00key': 1}\n"
        "def in_error(sample):\n    return {'value': None, 'error': 'bad \\ud800'}\n"
        "def in_exception(sample):\n    raise ValueError('no \\udfff')\n", "utf-8")
    cases = write_cases(str(tmp_path / "cases.parquet"), [{"case_id": "a", "question": "q?",
                                                           "answer": "a"}])
    (tmp_path / "c.yaml").write_text(
        "metrics: [in_details, in_error, in_exception]\ncustom_metrics:\n"
        '  - {name: in_details, function: "halves:in_details"}\n'
        '  - {name: in_error, function: "halves:in_error"}\n'
        '  - {name: in_exception, function: "halves:in_exception"}\n')
    out = str(tmp_path / "out")
    assert run_cli("--input", cases, "--output", out, "--config", str(tmp_path / "c.yaml"),
                   "--run-id", "half") == 0
    rows = {r["metric"]: r for r in read_rows(out, "scores")}
    assert json.loads(rows["in_details"]["details"]) == {"cut": "ab\ufffd", "\ufffdkey": 1}
    assert rows["in_details"]["value"] == 0.5
    assert rows["in_error"]["error"] == "bad \ufffd"
    assert rows["in_exception"]["error"] == ("custom metric in_exception failed: "
                                             "ValueError: no \ufffd")
    assert manifest(out, "half")["reconciliation"]["ok"]
    sys.modules.pop("halves", None)


def test_details_the_run_cannot_pickle_or_sort_are_written_as_text(tmp_path):
    """A metric whose details held a generator (or a lambda, an open file) ended
    the run with a traceback, "TypeError: cannot pickle 'generator' object
    [while running 'Score/Score[odd_details]']", and details with both int and text
    keys with "'<' not supported between instances of 'str' and 'int' [while
    running 'Publish/ScoreRows']". Such a value is written as its text (as
    scores.details wrote a set already), a key as JSON writes it."""
    row = _one_metric_row(tmp_path, "odd_details", "return 0.5, {'gen': (c for c in 'ab'), "
                          "'fn': lambda: 1, 1: 'one', 'two': 2, None: [{'set': {3}}]}")
    details = json.loads(row["details"])
    assert row["value"] == 0.5 and row["error"] is None
    assert details["gen"].startswith("<generator object") and "lambda" in details["fn"]
    assert (details["1"], details["two"], details["null"]) == ("one", 2, [{"set": "{3}"}])


@pytest.mark.parametrize("out", [(0.5, None), (0.5, [1, 2]), {"value": 0.5, "details": [1, 2]},
                                 {"value": 0.5, "details": "why"}])
def test_details_that_are_not_a_dict_are_named_as_such(out):
    """(0.5, None) was 'custom metric returned tuple, expected a number, None,
    (value, details) ...' (it is a (value, details)), and {"value": 0.5,
    "details": [1, 2]} 'metric failed: TypeError: cannot convert dictionary
    update sequence element #0 to a sequence'."""
    result = to_result(out)
    assert result.value is None
    assert result.error == (f"custom metric returned details of type "
                            f"{type(out[1] if isinstance(out, tuple) else out['details']).__name__}"
                            ", expected a dict")


WORDS = textwrap.dedent('''
    def words(sample):
        return float(len(sample["answer"].split()))
''')


def _direction_run(tmp_path, run_id: str, padding: str, direction_lines: str) -> tuple:
    (tmp_path / "word_metrics.py").write_text(WORDS, "utf-8")
    rows = [{"case_id": f"c{i:02d}", "question": f"Question {i}?",
             "answer": f"answer {i}" + padding * (i % 3 + 1)} for i in range(30)]
    cases = write_cases(str(tmp_path / f"{run_id}.parquet"), rows)
    config = tmp_path / "dir.yaml"
    config.write_text("metrics: [words, fewer, more, legacy]\ncustom_metrics:\n" + direction_lines,
                      "utf-8")
    out = str(tmp_path / "out")
    args = ["--input", cases, "--output", out, "--config", str(config)]
    assert run_cli(*args, "--run-id", run_id) == 0
    return out, args


DIRECTIONS = ('  - {name: words, function: "word_metrics:words", direction: none}\n'
              '  - {name: fewer, function: "word_metrics:words", direction: lower}\n'
              '  - {name: more, function: "word_metrics:words", direction: higher}\n'
              '  - {name: legacy, function: "word_metrics:words", lower_is_better: true}\n')


def test_direction_none_makes_a_custom_metric_direction_free(tmp_path, capsys):
    """`direction: none` flows where answer_length's does: summary/'s
    higher_is_better is null, compare calls a move "changed" (never better or
    worse) and a gate bounds it either way; lower and lower_is_better: true agree."""
    out, args = _direction_run(tmp_path, "short", "", DIRECTIONS)
    plan = make_plan(_parser().parse_args(["run", *args]))
    assert "words" in plan.info.no_direction and "words" not in plan.info.lower_is_better
    assert {"fewer", "legacy"} <= plan.info.lower_is_better
    summary = {r["metric"]: r["higher_is_better"] for r in read_rows(out, "summary")
               if r["suite"] == "*"}
    assert (summary["words"], summary["fewer"], summary["more"], summary["legacy"]) == (
        None, False, True, False)
    _direction_run(tmp_path, "long", " and then some more words", DIRECTIONS)
    (tmp_path / "gate.yaml").write_text("gate: [{metric: words, max_drop: 1}]\n", "utf-8")
    capsys.readouterr()
    assert run(["compare", "--output", out, "--baseline", "short", "--candidate", "long",
                "--config", str(tmp_path / "gate.yaml")]) == 4  # longer: a change, and too big
    printed = capsys.readouterr().out
    assert "changed (no direction): words" in printed
    assert "gate: FAILED gate[0] {metric: words, max_drop: 1}" in printed and "change " in printed
    rows = {r["metric"]: r for r in read_rows(out, "comparisons") if r["suite"] == "*"}
    assert rows["words"]["higher_is_better"] is None and rows["words"]["wins"] is None
    assert rows["fewer"]["higher_is_better"] is False and rows["more"]["losses"] == 0


@pytest.mark.parametrize("entry, message", [
    ("direction: up", "custom_metrics[0].direction must be higher, lower or none, got 'up'"),
    ("direction: [none]", "custom_metrics[0].direction must be higher, lower or none"),
    ("direction: None", "custom_metrics[0].direction must be higher, lower or none, got 'None'"),
    ("direction: null", "custom_metrics[0].direction is null: write higher, lower or none"),
    ("direction: ~", "custom_metrics[0].direction is null: write higher, lower or none"),
    ("direction: higher, lower_is_better: true",
     "custom_metrics[0].lower_is_better: true contradicts direction: higher"),
    ("lower_is_better: 1", "custom_metrics[0].lower_is_better must be true or false"),
])
def test_a_bad_direction_is_one_line_before_the_run(tmp_path, capsys, entry, message):
    cases, _ = _write_run(tmp_path, 2)
    assert message in _refused(tmp_path, capsys, cases,
                               f'{{name: mine, function: "my_metrics:overlap", {entry}}}')


def test_the_decorator_takes_a_direction():
    from transforms.score.custom import ATTRIBUTE, CustomMetricError, metric

    @metric(direction="none")
    def length(sample):
        return 1.0

    assert getattr(length, ATTRIBUTE)["direction"] == "none"
    assert getattr(metric(lower_is_better=True)(lambda s: 0.0), ATTRIBUTE)["direction"] == "lower"
    with pytest.raises(CustomMetricError, match="direction must be higher, lower or none"):
        metric(direction="sideways")


def test_evaluate_passes_the_declared_direction_on():
    """evalbeam.evaluate()'s functions: @evalbeam.metric(direction=...) reaches the scorer."""
    from evalbeam.api import custom_metric
    from transforms.score.custom import config_scorers, metric

    def scorer(fn):
        (s,) = config_scorers([custom_metric(fn)], None)
        return s.no_direction, s.lower_is_better

    assert scorer(metric(direction="none", name="free")(lambda s: 0.0)) == ({"free"}, set())
    assert scorer(metric(lower_is_better=True, name="low")(lambda s: 0.0)) == (set(), {"low"})
    assert scorer(metric(name="high")(lambda s: 0.0)) == (set(), set())


NOISY_METRICS = '''import logging, os, sys, warnings


def noisy(sample):
    key = os.environ["EB_SCORE_ONLY_KEY"]
    print("printed", key)
    sys.stderr.write("wrote " + key + "\\n")
    logging.getLogger("distributed.worker").warning("logged %s", key)
    warnings.warn("warned " + key)
    return 1.0
'''

SCORING_WORKER = r'''
import sys
import apache_beam as beam
from apache_beam.internal import pickler
from apache_beam.testing.test_pipeline import TestPipeline
with open(sys.argv[1], "rb") as fh:
    fn, turns = pickler.loads(fh.read())
with TestPipeline(runner="FnApiRunner") as p:
    p | beam.Create(turns) | beam.ParDo(fn)
'''


def test_a_worker_that_only_scores_scrubs_what_a_custom_metric_says(tmp_path, monkeypatch):
    """A Dask worker scrubbed its prints, logs and warnings only once it had
    built a scrubber (answering or writing a bundle): one given nothing but a
    custom metric's Score step (the scheduler places each step's task) logged
    the key the metric printed, logged and warned as it came. The step builds
    the run's scrubber at setup; here a fresh process runs it alone, as such a
    worker does."""
    import subprocess
    import apache_beam as beam
    from apache_beam.internal import pickler
    from pipeline.graph import Score
    from tests.conftest import ROOT
    from tests.pipeline_helpers import leaks
    key = "sk-score-only-" + "Wq93Lm"
    monkeypatch.setenv("EB_SCORE_ONLY_KEY", key)
    (tmp_path / "noisy_metrics.py").write_text(NOISY_METRICS)
    (tmp_path / "c.yaml").write_text(
        "endpoints:\n  llm: {base_url: 'http://127.0.0.1:9', api_key_env: EB_SCORE_ONLY_KEY}\n"
        "metrics: [noisy]\ncustom_metrics:\n  - {name: noisy, function: 'noisy_metrics:noisy'}\n")
    cases = write_cases(str(tmp_path / "cases.parquet"),
                        [{"case_id": "a", "question": "q?", "answer": "x"}])
    plan = make_plan(_parser().parse_args(["run", "--input", cases, "--output",
                                           str(tmp_path / "out"), "--config",
                                           str(tmp_path / "c.yaml")]))
    p = beam.Pipeline()
    _ = p | beam.Create([]) | Score(plan)
    steps = []

    class Steps(beam.pipeline.PipelineVisitor):
        def visit_transform(self, node):
            if node.full_label.endswith("Score[noisy]"):
                steps.append(node.transform.fn)

    p.visit(Steps())
    turns = [Turn(EvalCase("a", "q?", answer="x"), "recorded", "x")]
    (tmp_path / "step.pkl").write_bytes(pickler.dumps((steps[0], turns)))
    proc = subprocess.run([sys.executable, "-c", SCORING_WORKER, str(tmp_path / "step.pkl")],
                          cwd=str(tmp_path), capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": f"{ROOT}:{tmp_path}"})
    said = proc.stdout + proc.stderr
    assert proc.returncode == 0, said[-3000:]
    assert "printed <redacted>" in said and "logged <redacted>" in said, said[-3000:]
    assert "warned <redacted>" in said and "wrote <redacted>" in said, said[-3000:]
    assert leaks(said, key) == [], said[-3000:]


@pytest.mark.parametrize("out, kind", [(np.array([0.1, 0.2]), "ndarray"),
                                       ({"value": np.array([1, 2])}, "ndarray"),
                                       (10 ** 400, "int")])
def test_a_value_that_is_no_single_number_is_named_as_such(out, kind):
    """A metric returning a numpy array of several values (or an int too large
    for a float) was 'metric failed: TypeError: only 0-dimensional arrays can be
    converted to Python scalars': the error named neither the custom metric nor
    what it returned, as a NaN or a text is named."""
    result = to_result(out)
    assert result.value is None
    assert result.error.startswith(f"custom metric returned {kind} ("), result.error
    assert result.error.endswith("expected a number, None, (value, details) or a dict with "
                                 "'value'")


def test_a_dict_without_value_is_named_not_taken_for_no_value():
    """{"score": 0.8, "reason": ...} (the shape other tools' metrics return) was
    null with 'custom metric returned no value', as if the metric had returned
    None: the 0.8 was dropped and the reason said nothing of why."""
    result = to_result({"score": 0.8, "reason": "good"})
    assert result.value is None
    assert result.error == ("custom metric returned dict without 'value' (keys: reason, "
                            "score), expected a number, None, (value, details) or a dict "
                            "with 'value'")
    assert to_result({"value": None}).error == "custom metric returned no value"
    assert to_result({"error": "too short"}).error == "too short"


HANGING = '''import time


def hangs_on_c1(sample):
    """A call that never comes back on one odd case (a network call without timeout)."""
    if sample["case_id"] == "c1":
        time.sleep(30)
    return 0.5
'''


def test_a_metric_that_hangs_is_null_past_its_time_limit_and_the_run_goes_on(tmp_path, caplog):
    """A custom metric had no time limit: one call that never returned held the
    run until it was stopped, with no sign of which case. Now the row is null
    naming the metric and its limit, and the other rows and counts are whole."""
    import time
    started = time.monotonic()
    out = _own_metrics_run(tmp_path, "hanging", HANGING, '  - {name: hang, function: '
                           '"hanging:hangs_on_c1", timeout_s: 0.5}\n', 4, "hang")
    assert time.monotonic() - started < 20
    rows = {r["case_id"]: r for r in read_rows(out, "scores") if r["metric"] == "hang"}
    assert rows["c1"]["value"] is None
    assert rows["c1"]["error"] == "custom metric hang timed out after 0.5 s (timeout_s)"
    assert all(rows[c]["value"] == 0.5 and rows[c]["error"] is None for c in ("c0", "c2", "c3"))
    m = manifest(out, "hang")
    assert m["reconciliation"]["ok"] and m["counts"]["scores_rows"] == 8
    assert m["config"]["custom_metrics"][0]["timeout_s"] == 0.5
    said = [r.getMessage() for r in caplog.records if "timed out" in r.getMessage()]
    assert said == ["evalbeam: custom metric hang timed out after 0.5 s (timeout_s) on case c1 "
                    "(bot recorded); the call goes on in the background, and the next rows "
                    "past the limit are null in scores/ without a line here"]


def test_calls_past_the_limit_do_not_pile_up_threads_from_the_python_api(tmp_path, caplog):
    """A service that never answers: every call times out. Once MAX_OVERDUE calls
    are still running, the others are null at once, not one time limit each;
    when the late calls return, their threads end."""
    import threading
    import time

    import evalbeam
    from transforms.score.custom import MAX_OVERDUE
    answered = tmp_path / "answered"  # a file, not an Event: the function travels by value

    @evalbeam.metric(timeout_s=0.2, options={"flag": str(answered)})
    def never_answers(sample, flag):
        started = time.monotonic()
        while not os.path.exists(flag) and time.monotonic() - started < 30:
            time.sleep(0.05)
        return 1.0

    n = 12
    cases = [{"case_id": f"c{i:02d}", "question": "q?", "answer": "a"} for i in range(n)]
    before = set(threading.enumerate())
    try:
        result = evalbeam.evaluate(cases, output=str(tmp_path / "out"), run_id="api",
                                   metrics=["answer_length", never_answers])
    finally:
        answered.touch()
    errors = sorted(r["error"] for r in result.scores().to_pylist()
                    if r["metric"] == "never_answers")
    assert len(errors) == n
    timed_out = "custom metric never_answers timed out after 0.2 s (timeout_s)"
    assert errors.count(timed_out) == MAX_OVERDUE
    assert set(errors) - {timed_out} == {
        f"custom metric never_answers not called: {MAX_OVERDUE} earlier calls are still "
        "running past its 0.2 s limit in this worker (timeout_s)"}
    assert result.counts["results_rows"] == n
    assert len([r for r in caplog.records if "timed out" in r.getMessage()]) == 1  # the first

    assert not _callers_left(before)  # the late calls returned: their threads ended


def _callers_left(before: set) -> list:
    """The metric caller threads started since `before` still alive, given the
    garbage collector and a few seconds to end them."""
    import gc
    import threading
    import time
    deadline = time.monotonic() + 10
    while True:
        gc.collect()
        left = [t for t in threading.enumerate()
                if t.name == "evalbeam-custom-metric" and t not in before]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def test_a_finished_run_leaves_no_caller_thread_behind(tmp_path):
    """A notebook calling evaluate() again and again, or a long-lived worker,
    would keep one idle thread per custom metric and run."""
    import threading

    import evalbeam

    @evalbeam.metric(timeout_s=5)
    def quick(sample):
        return 1.0

    before = set(threading.enumerate())
    for run_id in ("one", "two"):
        result = evalbeam.evaluate([{"question": "q?", "answer": "a"}] * 3, run_id=run_id,
                                   output=str(tmp_path / "out"), metrics=[quick])
        assert [r["value"] for r in result.scores().to_pylist()] == [1.0] * 3
    del result
    assert not _callers_left(before)


@pytest.mark.parametrize("value, shown", [("0", "0"), ("-1", "-1"), ('"60"', "'60'"),
                                          ("true", "True"), (".nan", "nan"), ("null", "None")])
def test_a_bad_time_limit_is_one_line_before_the_run(tmp_path, capsys, value, shown):
    cases, _ = _write_run(tmp_path, 2)
    assert (f"custom_metrics[0].timeout_s must be a number of seconds > 0, got {shown}"
            in _refused(tmp_path, capsys, cases,
                        f'{{name: mine, function: "my_metrics:overlap", timeout_s: {value}}}'))


def test_the_decorator_takes_a_time_limit():
    from transforms.score.custom import ATTRIBUTE, DEFAULT_TIMEOUT_S, CustomMetricError, metric
    assert getattr(metric()(lambda s: 0.0), ATTRIBUTE)["timeout_s"] == DEFAULT_TIMEOUT_S
    assert getattr(metric(timeout_s=5)(lambda s: 0.0), ATTRIBUTE)["timeout_s"] == 5.0
    with pytest.raises(CustomMetricError, match="timeout_s must be a number of seconds > 0"):
        metric(timeout_s=0)


UNPICKLABLE = '''import sqlite3

DB = sqlite3.connect(":memory:")  # made when the module is imported: cannot travel


def from_db(sample):
    return float(DB.execute("select 1").fetchone()[0])
'''
SHIPPING = ("cannot be shipped to the workers: cannot pickle 'sqlite3.Connection' object; make "
            "such an object (a connection, a lock, a client) inside the function, on its first "
            "call, not outside it")


def test_a_metric_that_cannot_be_pickled_is_one_line_before_the_run(tmp_path, capsys):
    """A function holding a connection made at import failed the run as it was
    built: exit 1, a 60-line traceback of Beam's, the output folder and a lease
    already written."""
    cases, _ = _write_run(tmp_path, 2)
    (tmp_path / "db_metrics.py").write_text(UNPICKLABLE, "utf-8")
    err = _refused(tmp_path, capsys, cases, '{name: db, function: "db_metrics:from_db"}')
    assert err == f"evalbeam: error: custom_metrics[0] (db): {SHIPPING}"
    sys.modules.pop("db_metrics", None)


def test_a_notebook_function_that_cannot_be_pickled_is_refused_by_evaluate(tmp_path):
    import sqlite3

    import evalbeam
    from pipeline.config import ConfigError
    db = sqlite3.connect(":memory:")

    def from_db(sample):
        return float(db.execute("select 1").fetchone()[0])

    out = tmp_path / "out"
    with pytest.raises(ConfigError) as caught:
        evalbeam.evaluate([{"question": "q?", "answer": "a"}], output=str(out),
                          custom_metrics=[from_db])
    assert str(caught.value) == f"custom_metrics[0] (from_db): {SHIPPING}"
    assert not out.exists()


BULKY = '''def bulky(sample):
    """A document per row in the details, and a whole log as its error on c1."""
    if sample["case_id"] == "c1":
        return {"value": None, "error": "e" * 5000}
    return 0.5, {"document": "x" * 200_000, "n": 1}
'''


def test_huge_details_or_error_are_left_out_and_the_value_kept(tmp_path):
    """Details of 200,000 characters went whole into every scores/ row (a metric
    returning the retrieved documents made the table gigabytes), and a 5000-
    character error of the metric's own was written whole (an exception's was cut)."""
    from transforms.score.custom import MAX_DETAILS_CHARS, MAX_ERROR_CHARS
    out = _own_metrics_run(tmp_path, "bulky_metrics", BULKY,
                           '  - {name: bulky, function: "bulky_metrics:bulky"}\n', 3, "bulky")
    rows = {r["case_id"]: r for r in read_rows(out, "scores") if r["metric"] == "bulky"}
    for case in ("c0", "c2"):
        assert rows[case]["value"] == 0.5 and rows[case]["error"] is None
        assert json.loads(rows[case]["details"]) == {"details_left_out": (
            f"200024 characters of JSON, over the {MAX_DETAILS_CHARS} a row keeps")}
    assert rows["c1"]["value"] is None and rows["c1"]["error"] == "e" * MAX_ERROR_CHARS
    assert manifest(out, "bulky")["reconciliation"]["ok"]


ODD = '''class Weird(Exception):
    def __str__(self):
        return self.detail  # never set: str() of it raises AttributeError


class NoFloat:
    def __float__(self):
        raise RuntimeError("no float here")


def weird(sample):
    raise Weird()


def no_float(sample):
    return NoFloat()


def cycle(sample):
    details = {}
    details["self"] = details
    return 0.5, details
'''


def test_a_value_or_exception_that_breaks_on_reading_names_the_metric(tmp_path):
    """An exception whose str() fails, or a value whose __float__ raises, was
    recorded as `metric failed: AttributeError: 'Weird' object has no attribute
    'detail'` (the inner failure, not the metric's)."""
    entries = "".join(f'  - {{name: {n}, function: "odd_metrics:{n}"}}\n'
                      for n in ("weird", "no_float", "cycle"))
    out = _own_metrics_run(tmp_path, "odd_metrics", ODD, entries, 2, "odd")
    errors = {r["metric"]: r["error"] for r in read_rows(out, "scores")
              if r["case_id"] == "c0" and r["metric"] != "answer_length"}
    assert errors.pop("cycle").startswith("custom metric cycle returned a value that cannot be "
                                          "read: RecursionError: maximum recursion depth")
    assert errors == {
        "weird": "custom metric weird failed: Weird: (its message cannot be shown: "
                 "AttributeError)",
        "no_float": "custom metric no_float returned a value that cannot be read: "
                    "RuntimeError: no float here"}


def test_a_module_raising_an_unprintable_exception_at_import_is_one_line(tmp_path, capsys):
    """The message of the import's failure could not be built: a traceback of
    the AttributeError, exit 1, instead of the one line."""
    cases, _ = _write_run(tmp_path, 2)
    (tmp_path / "odd_import.py").write_text(ODD + "\nraise Weird()\n", "utf-8")
    err = _refused(tmp_path, capsys, cases, '{name: m, function: "odd_import:weird"}')
    assert err == ("evalbeam: error: custom_metrics[0] (m): importing module 'odd_import' "
                   "failed: Weird: (its message cannot be shown: AttributeError)")


RANGED = '''def share(sample):
    """A 0..1 metric with a bug: 1.5 on case ids ending in 1, -0.2 on those in 2."""
    return {"1": 1.5, "2": -0.2}.get(sample["case_id"][-1], 0.5)
'''


def test_a_value_outside_the_declared_range_is_null_with_the_reason(tmp_path):
    """A 0..1 metric that returned 1.5 or -0.2 on some rows was taken as it
    came: its mean and every verdict rule on it were skewed without a word.
    value_range: [0, 1] makes such a row null with what came back."""
    (tmp_path / "ranged.py").write_text(RANGED, "utf-8")
    cases = write_cases(str(tmp_path / "c.parquet"),
                        [{"case_id": f"c{i}", "question": "q?", "answer": "a"} for i in range(10)])
    config = tmp_path / "config.yaml"
    config.write_text('metrics: [share, open]\ncustom_metrics:\n'
                      '  - {name: share, function: "ranged:share", value_range: [0, 1]}\n'
                      '  - {name: open, function: "ranged:share", value_range: [0, null]}\n')
    out = str(tmp_path / "out")
    assert run_cli("--input", cases, "--output", out, "--config", str(config),
                   "--run-id", "r") == 0
    scores = {(r["case_id"], r["metric"]): r for r in read_rows(out, "scores")}
    assert scores[("c1", "share")]["value"] is None
    assert scores[("c1", "share")]["error"] == ("custom metric share returned 1.5, outside its "
                                                "value_range [0, 1]")
    assert scores[("c2", "share")]["error"] == ("custom metric share returned -0.2, outside its "
                                                "value_range [0, 1]")
    assert scores[("c1", "open")]["value"] == 1.5  # no upper bound
    assert scores[("c2", "open")]["error"].endswith("outside its value_range [0, null]")
    assert all(scores[(f"c{i}", "share")]["value"] == 0.5 for i in (0, 3, 9))
    summary = {r["metric"]: r for r in read_rows(out, "summary") if r["suite"] == "*"}
    assert summary["share"]["mean"] == 0.5 and summary["share"]["missing"] == 2
    assert manifest(out, "r")["reconciliation"]["ok"]


@pytest.mark.parametrize("value", ["[1, 0]", "[0]", "[a, 1]", "0.5", "[.inf, 2]", "[true, 2]"])
def test_a_bad_value_range_is_one_line_before_the_run(tmp_path, capsys, value):
    cases, _ = _write_run(tmp_path, 2)
    assert "custom_metrics[0].value_range must be [low, high] (numbers, low < high; null for " \
        "an open side), got" in _refused(
            tmp_path, capsys, cases,
            f'{{name: mine, function: "my_metrics:overlap", value_range: {value}}}')


def test_the_decorator_and_evaluate_take_a_value_range(tmp_path):
    import evalbeam
    from transforms.score.custom import ATTRIBUTE, CustomMetricError, metric
    assert getattr(metric()(lambda s: 0.0), ATTRIBUTE)["value_range"] is None
    with pytest.raises(CustomMetricError, match="value_range must be"):
        metric(value_range=(2, 1))

    @evalbeam.metric(value_range=(0, 1))
    def doubled(sample):
        return 2 * len(sample["answer"]) / 10

    result = evalbeam.evaluate([{"question": "q?", "answer": a} for a in ("ab", "abcdefgh")],
                               run_id="vr", output=str(tmp_path / "out"), metrics=[doubled])
    got = sorted(((r["value"], r["error"]) for r in result.scores().to_pylist()),
                 key=lambda v: v[0] is None)
    assert got == [(0.4, None), (None, "custom metric doubled returned 1.6, outside its "
                                       "value_range [0, 1]")]
