"""`evalbeam run --preset NAME --metrics a,b`: the flags win over the config
file (--preset over verdict.preset and written verdict.rules, --metrics over
metrics), bad values are one-line errors before anything runs, and the
manifest records the config as it ran."""
from __future__ import annotations

import argparse

import pytest

from pipeline.config import ConfigError
from pipeline.plan import UsageError, make_plan
from tests.conftest import SAMPLE_ROWS, write_cases
from tests.pipeline_helpers import manifest, read_rows, run_sample
from transforms.decide.presets import PRESETS

CONFIG = """embeddings: {provider: hashing}
metrics: [exact_match, hallucination, lexical_relevance, completeness]
verdict:
  preset: default
  rules:
    - {metric: exact_match, below: 1, verdict: FAIL}
  otherwise: WARN
"""


def plan(tmp_path, config: str = CONFIG, **flags):
    cases = write_cases(str(tmp_path / "c.parquet"), SAMPLE_ROWS)
    (tmp_path / "c.yaml").write_text(config)
    args = argparse.Namespace(config=str(tmp_path / "c.yaml"), input=cases,
                              output=str(tmp_path / "out"), run_id="f", run_date=None,
                              preset=None, metrics=None)
    for key, value in flags.items():
        setattr(args, key, value)
    return make_plan(args)


def test_without_flags_the_config_decides(tmp_path):
    p = plan(tmp_path)
    assert [r.metric for r in p.config.verdict.rules] == ["exact_match"]
    assert p.info.metrics == ("exact_match", "lexical_relevance", "completeness",
                              "hallucination", "unsupported_facts")


def test_preset_replaces_the_configs_written_rules_and_says_so(tmp_path):
    p = plan(tmp_path, preset="seed")
    assert p.config.verdict.rules == PRESETS["seed"] and p.config.verdict.preset == "seed"
    assert p.config.verdict.otherwise == "WARN"  # kept
    assert any("--preset seed replaces the 1 verdict.rules" in n for n in p.info.notes)
    assert p.info.config["verdict"]["preset"] == "seed"


def test_metrics_replaces_the_configs_metrics_and_drops_the_presets_other_rules(tmp_path):
    p = plan(tmp_path, preset="seed", metrics="bleu, rouge")
    assert p.info.metrics == ("bleu", "rouge1", "rouge2", "rougeL")
    assert p.config.verdict.rules == ()  # the seed rules' metrics are not computed
    assert p.info.config["metrics"] == ["bleu", "rouge"]


def test_a_written_rule_must_name_a_metric_of_the_flags(tmp_path):
    with pytest.raises(ConfigError, match=r"verdict.rules\[0\].metric 'exact_match' is not a "
                                          "metric of this run"):
        plan(tmp_path, metrics="bleu")


@pytest.mark.parametrize("flags,error,message", [
    ({"preset": "ragas"}, UsageError, "--preset 'ragas' is not a verdict preset (one of "
                                      "default, seed); an input column preset is the "
                                      "config's input.preset"),
    ({"metrics": "bleu,,rouge"}, UsageError, "--metrics 'bleu,,rouge' must be metric names "
                                             "separated by commas"),
    ({"metrics": "bleu,nope"}, ConfigError, "--metrics: unknown metric 'nope'"),
])
def test_bad_flags_are_one_line_errors(tmp_path, flags, error, message):
    with pytest.raises(error) as info:
        plan(tmp_path, **flags)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_the_flags_on_the_command_line(tmp_path, capsys):
    code, out = run_sample(tmp_path, CONFIG, "flags")
    code_flags = __import__("pipeline.cli", fromlist=["run"]).run(
        ["run", "--input", str(tmp_path / "c.parquet"), "--output", out, "--config",
         str(tmp_path / "c.yaml"), "--run-id", "flagged", "--preset", "seed",
         "--metrics", "hallucination,lexical_relevance,completeness"])
    assert (code, code_flags) == (0, 0)
    assert "--preset seed replaces the 1 verdict.rules of the config" in capsys.readouterr().err
    ran = manifest(out, "flagged")
    assert ran["metrics"] == ["lexical_relevance", "completeness", "hallucination",
                              "unsupported_facts"]
    assert ran["config"]["verdict"]["preset"] == "seed"
    reasons = {(r["run_id"], r["case_id"]): r["verdict_reason"]
               for r in read_rows(out, "results")}
    assert reasons["flags", "c2"].startswith("exact_match")  # the config's own rule
    seed = tuple(r.metric for r in PRESETS["seed"]) + ("no rule matched", "bot failed")
    flagged = [why for (run_id, _), why in reasons.items() if run_id == "flagged"]
    assert len(flagged) == len(SAMPLE_ROWS) and all(w.startswith(seed) for w in flagged)


@pytest.mark.parametrize("named,written", [
    ("rouge1", {"rouge1", "rouge2", "rougeL"}), ("rougeL", {"rouge1", "rouge2", "rougeL"}),
    ("unsupported_facts", {"hallucination", "unsupported_facts"}), ("bleu", {"bleu"})])
def test_metrics_computed_together_come_together_as_the_reference_says(named, written):
    from transforms.score.scoring import select_scorers
    chosen = select_scorers((named,), {})
    assert {m for scorer, _ in chosen for m in scorer.metrics} == written


def test_the_bot_line_shows_the_chosen_metrics_when_it_has_none_of_its_usual_five(tmp_path,
                                                                                   capsys):
    """A run of metrics outside the line's usual five (hallucination,
    lexical_relevance, completeness, rougeL, bleu), as the DeepEval and
    promptfoo guides configure, printed verdict counts and no mean at all."""
    config = "embeddings: {provider: hashing}\nmetrics: [exact_match, keyword_recall]\n"
    code, _ = run_sample(tmp_path, config, "chosen")
    assert code == 0
    line = next(l for l in capsys.readouterr().out.splitlines() if l.startswith("  recorded: "))
    assert "| exact_match 0." in line and "| keyword_recall 0." in line, line


def test_the_bot_line_shows_every_chosen_metric_when_they_are_five_or_fewer(tmp_path, capsys):
    """The Ragas guide's `--metrics faithfulness,rouge` printed `rougeL 0.648`
    alone: one of the usual five was there, so the metric asked for first
    (faithfulness) had no mean on the line. A run of five metrics or fewer
    shows them all."""
    config = "embeddings: {provider: hashing}\nmetrics: [exact_match, rouge]\n"
    code, _ = run_sample(tmp_path, config, "chosen")
    assert code == 0
    line = next(l for l in capsys.readouterr().out.splitlines() if l.startswith("  recorded: "))
    assert [part.split()[0] for part in line.split(" | ")[1:]] == [
        "exact_match", "rouge1", "rouge2", "rougeL"], line


@pytest.mark.parametrize("flag, meant", [
    ("--run_id=nightly", "--run-id"), ("--metrcs=bleu", "--metrics"),
    ("--allow_empty", "--allow-empty"), ("--detatch", "--detach")])
def test_a_misspelt_flag_of_run_is_an_error_not_a_beam_option(tmp_path, capsys, flag, meant):
    """Beam keeps a flag it does not know as an option of its own, so a typo of
    one of run's flags ran without it (a random run id, every metric)."""
    from pipeline.cli import run
    cases = write_cases(str(tmp_path / "c.parquet"), SAMPLE_ROWS)
    out = tmp_path / "out"
    assert run(["run", "--input", cases, "--output", str(out), flag]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"evalbeam: error: unknown flag {flag.partition('=')[0]!r}: did you mean {meant}?")
    assert not out.exists()


def test_beams_own_flags_pass_on_to_beam(tmp_path):
    """Beam's flags, even those near one of run's (--runner, --region), are not typos."""
    from pipeline.cli import _flags, _parser, misspelt_flag
    assert misspelt_flag(["--runner=FnApiRunner", "--direct_num_workers=2", "--region=eu",
                          "--direct_running_mode=multi_processing", "--project=p"],
                         _flags(_parser(), "run")) is None


def test_beams_flags_written_with_a_space_run_and_a_stray_word_is_refused(tmp_path, capsys):
    """Dataflow's guides write `--runner DataflowRunner --project p`: a Beam
    flag's value after a space was refused as "unexpected argument a text of
    11 characters (not shown)". A word that follows no Beam flag taking a
    value still is."""
    from pipeline.cli import run
    from tests.pipeline_helpers import read_table
    cases = write_cases(str(tmp_path / "c.parquet"), SAMPLE_ROWS)
    out = str(tmp_path / "out")
    assert run(["run", "--input", cases, "--output", out, "--run-id", "s", "--metrics", "bleu",
                "--runner", "FnApiRunner", "--direct_num_workers", "1"]) == 0
    assert read_table(out, "results").num_rows == len(SAMPLE_ROWS)
    capsys.readouterr()
    for stray in (["--direct_num_workers", "1", "nightly"], ["--save_main_session", "x"]):
        assert run(["run", "--input", cases, "--output", str(tmp_path / "o2"), *stray]) == 2
        assert capsys.readouterr().err.strip().splitlines()[-1] == (
            f"evalbeam: error: unexpected argument {stray[-1]!r}")


@pytest.mark.parametrize("workers", ["-1", "10000"])
def test_a_worker_count_that_is_no_count_is_one_line_before_anything_runs(tmp_path, capsys,
                                                                         workers):
    """Before: --direct_num_workers=-1 crashed inside Beam's runner (IndexError,
    exit 1, after the lease was taken) and 10000 started worker processes until
    the run was killed; the bound is 4 per core."""
    import os
    from pipeline.cli import run
    cases = write_cases(str(tmp_path / "c.parquet"), SAMPLE_ROWS)
    out = tmp_path / "out"
    cores = os.cpu_count()
    assert run(["run", "--input", cases, "--output", str(out), "--metrics", "bleu",
                "--direct_running_mode=multi_processing", f"--direct_num_workers={workers}"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"evalbeam: error: --direct_num_workers {workers} must be 0 (one per CPU core) to "
        f"{4 * cores} (4 per CPU core; {cores} here)"]
    assert not out.exists()


def test_zero_workers_shares_the_endpoints_limits_among_one_per_core():
    """--direct_num_workers=0 is Beam's 'one worker per CPU core'; the limit
    share counted it as 1 worker, so each of the cores' workers took an
    endpoint's whole requests_per_second."""
    import os
    from pipeline.execute import beam_options
    from pipeline.plan import worker_count
    options = beam_options(["--direct_running_mode=multi_processing", "--direct_num_workers=0"])
    assert worker_count(options) == os.cpu_count()


def test_an_embedder_worker_count_that_is_no_count_is_the_default(tmp_path):
    """Before: EVALBEAM_EMBED_WORKERS=abc failed the run at its first embedding
    (ValueError: invalid literal for int(), exit 1), after its work began and
    with the lease marked failed; a text that is no count is now the default,
    as EVALBEAM_PROGRESS_S's is. The bundled example, whose metrics embed."""
    from tests.conftest import ROOT
    from tests.pipeline_helpers import manifest, run_cli_subprocess
    out = str(tmp_path / "out")
    proc = run_cli_subprocess("--input", f"{ROOT}/examples/support/cases.parquet", "--output",
                              out, "--run-id", "e", env={"EVALBEAM_EMBED_WORKERS": "abc"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert manifest(out, "e")["counts"]["valid_cases"] == 258


@pytest.mark.parametrize("command,flag,value,escaped", [
    ("run", "--output", "o\nx", r"'\n'"),
    ("run", "--input", "c\r.parquet", r"'\r'"),
    ("run", "--config", "c\x1b[2J.yaml", r"'\x1b'"),
    ("status", "--output", "o\tx", r"'\t'"),
    ("view", "--output", "o\u2028x", r"'\u2028'"),
    ("compare", "--output", "o\nx", r"'\n'"),
])
def test_a_control_character_in_a_path_flag_is_one_line_before_anything_runs(
        tmp_path, capsys, command, flag, value, escaped):
    from pipeline.cli import run
    cases = write_cases(str(tmp_path / "c.parquet"), SAMPLE_ROWS)
    (tmp_path / "c.yaml").write_text(CONFIG)
    given = {"--input": cases, "--output": str(tmp_path / "out"),
             "--config": str(tmp_path / "c.yaml")}
    given[flag] = str(tmp_path / value)
    argv = {"run": ["--input", given["--input"], "--config", given["--config"]],
            "status": ["--run-id", "r"], "view": [],
            "compare": ["--baseline", "a", "--candidate", "b"]}[command]
    code = run([command, *argv, "--output", given["--output"]]
               + (["--run-id", "r"] if command == "run" else []))
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"evalbeam: error: {flag} ") and f"control character {escaped}" in err
    assert not any(p.name.startswith(("o", "out")) for p in tmp_path.iterdir())


@pytest.mark.parametrize("command,flag", [("run", "--config"), ("run", "--input"),
                                          ("run", "--output"), ("compare", "--config")])
def test_an_empty_path_flag_is_named_as_empty(tmp_path, capsys, command, flag):
    from pipeline.cli import run
    cases = write_cases(str(tmp_path / "c.parquet"), SAMPLE_ROWS)
    (tmp_path / "c.yaml").write_text(CONFIG)
    given = {"--input": cases, "--output": str(tmp_path / "out"),
             "--config": str(tmp_path / "c.yaml"), flag: ""}
    argv = (["--input", given["--input"], "--run-id", "r"] if command == "run"
            else ["--baseline", "a", "--candidate", "b"])
    code = run([command, *argv, "--output", given["--output"], "--config", given["--config"]])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"evalbeam: error: {flag} is empty") and \
        err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()
