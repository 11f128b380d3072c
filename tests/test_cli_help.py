"""Every `--help` is complete and true: each subcommand says what it does,
lists every option the parser accepts with a meaning, and its exit codes are
the ones the command returns; `run --help` names every input format; the
generated command-line reference holds all of it; and no command line in the
docs or the README uses an option the parser does not accept."""
from __future__ import annotations

import argparse

import glob
import os
import re
import shlex

import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from pipeline import cli
from pipeline.postrun import status
from pipeline.reference import cli_reference, options, subcommands
from tests.conftest import ROOT
from transforms.read.formats import FORMAT_NAMES, FORMATS

PARSER = cli._parser()
COMMANDS = subcommands(PARSER)


def test_every_command_has_a_summary_a_description_and_exit_codes():
    assert set(COMMANDS) == set(cli.EXIT_CODES)
    for name, (summary, sub) in COMMANDS.items():
        assert summary and sub.description and len(sub.description) > len(summary), name
        assert summary.split()[0] in PARSER.format_help()


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_lists_every_option_with_a_meaning_and_every_exit_code(name):
    _, sub = COMMANDS[name]
    text = sub.format_help()
    for action in options(sub):
        assert action.help and len(action.help) > 10, action.option_strings
        assert all(o in text for o in action.option_strings), action.option_strings
    listed = dict(re.findall(r"^  (\d+) +(\S.*)$", text.split("Exit codes:")[1], re.M))
    assert sorted(map(int, listed)) == sorted(cli.EXIT_CODES[name])


def test_exit_codes_are_the_codes_the_commands_return():
    lost = cli.EXIT_OUTPUT_UNWRITABLE  # every command: stdout it cannot write
    assert set(cli.EXIT_CODES["status"]) == set(status.EXIT.values()) | {
        cli.EXIT_SIGINT, cli.EXIT_SIGTERM, lost}
    assert cli.EXIT_CODES["compare"].keys() == {0, cli.EXIT_USAGE, cli.EXIT_GATE_FAILED,
                                                cli.EXIT_SIGINT, cli.EXIT_SIGTERM, lost}
    assert cli.EXIT_CODES["run"].keys() == {0, 1, cli.EXIT_USAGE, cli.EXIT_NOT_RECONCILED,
                                            cli.EXIT_NOTHING_EVALUATED, cli.EXIT_SIGINT,
                                            cli.EXIT_SIGTERM, lost}
    assert (cli.EXIT_SIGINT, cli.EXIT_SIGTERM) == (130, 143)
    for name in ("calibrate", "view"):
        assert cli.EXIT_CODES[name].keys() == {0, cli.EXIT_USAGE, cli.EXIT_SIGINT,
                                               cli.EXIT_SIGTERM, lost}


def test_run_help_names_every_input_format_and_the_flags_precedence():
    text = " ".join(COMMANDS["run"][1].format_help().split())
    assert set(FORMAT_NAMES) == set(FORMATS)
    assert all(" ".join(name.split()) in text for name in FORMAT_NAMES.values())
    assert "Flags win over the config file" in text and "FnApiRunner" in text


def test_the_reference_holds_every_command_option_and_exit_code():
    page = cli_reference()
    for name, (_, sub) in COMMANDS.items():
        section = page.split(f"## evalbeam {name}\n")[1].split("\n## ")[0]
        assert all(f"`{o}`" in section for a in options(sub) for o in a.option_strings)
        assert all(f"| {code} |" in section for code in cli.EXIT_CODES[name])


def _doc_command_lines() -> list[tuple[str, str]]:
    """(file, command line) for every `evalbeam COMMAND ...` in the docs and README,
    with continuation lines joined."""
    found = []
    for path in [os.path.join(ROOT, "README.md"), *glob.glob(os.path.join(ROOT, "docs", "**",
                                                                          "*.md"), recursive=True)]:
        with open(path, encoding="utf-8") as fh:
            text = fh.read().replace("\\\n", " ")
        for match in re.finditer(r"evalbeam (run|status|calibrate|compare|view)( [^`\n|]*)", text):
            found.append((os.path.relpath(path, ROOT), match.group(0)))
    return found


def test_the_docs_use_only_options_the_parser_accepts():
    beam = set(PipelineOptions([]).get_all_options())
    # Beam's --dask_* options (the dask extra), whose dests differ from their flags
    from apache_beam.runners.dask.dask_runner import DaskOptions
    dask = argparse.ArgumentParser()
    DaskOptions._add_argparse_args(dask)
    beam |= {o[2:] for a in dask._actions for o in a.option_strings}
    lines = _doc_command_lines()
    assert len(lines) > 20
    for where, line in lines:
        words = shlex.split(line.replace("[", " ").replace("]", " ").replace("…", ""),
                            posix=False)
        _, sub = COMMANDS[words[1]]
        accepted = {o for a in sub._actions for o in a.option_strings}
        for word in words[2:]:
            flag = word.split("=")[0]
            if flag.startswith("--"):
                assert flag in accepted or (words[1] == "run" and flag[2:] in beam), \
                    f"{where}: {line}: {flag}"


@pytest.mark.parametrize("argv,said", [
    ([], "the following arguments are required: COMMAND (see evalbeam --help)"),
    (["stat"], "argument COMMAND: invalid choice: 'stat'"),
    (["status", "--output", "out"], "the following arguments are required: --run-id "
                                    "(see evalbeam status --help)"),
    (["compare", "--output", "out", "--baseline", "a"], "required: --candidate"),
    (["view", "--output", "out", "--port", "http"], "argument --port: 'http' is not a whole "
                                                    "number (see evalbeam view --help)"),
    (["calibrate", "--run-id", "r"], "required: --output"),
    (["run", "--output", "out"], "required: --input"),
])
def test_a_bad_invocation_is_one_line(capsys, argv, said):
    """The exit-code texts promise one line `evalbeam: error: ...` for a bad
    invocation; argparse's own refusals (a required flag missing, a value of
    the wrong type, no or an unknown command) printed its usage first (up to 8
    lines of every filesystem flag) and 'evalbeam status: error: ...'."""
    from pipeline.cli import run
    with pytest.raises(SystemExit) as exited:
        run(argv)
    assert exited.value.code == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("evalbeam: error: ") and err.count("\n") == 1, err
    assert said in err, err
