"""The command line's standard streams, when they cannot be written: stdout
on a full disk (`> /dev/full`) is one line on stderr and exit 74 for every
command, as status did alone; stderr on a full disk loses its lines and
changes nothing else. Real commands in child processes, over real runs."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT, write_cases
from tests.pipeline_helpers import manifest, run_cli

CONFIG = "bots:\n  - {name: recorded, type: precomputed}\nmetrics: [exact_match, bleu]\n"


@pytest.fixture(scope="module")
def labelled(tmp_path_factory) -> tuple[str, str]:
    """Two labelled runs a and b in one output folder; and their cases."""
    tmp = tmp_path_factory.mktemp("streams")
    rows = [{"case_id": f"c{i}", "question": f"Question {i} about refunds?",
             "expected_answer": "Refunds take 30 days.",
             "answer": f"Refunds take {30 if i % 2 else i} days.",
             "label": "PASS" if i % 2 else "FAIL"} for i in range(8)]
    cases = write_cases(str(tmp / "cases.parquet"), rows)
    (tmp / "c.yaml").write_text(CONFIG)
    out = str(tmp / "out")
    for run_id in ("a", "b"):
        assert run_cli("--input", cases, "--output", out, "--config", str(tmp / "c.yaml"),
                       "--run-id", run_id) == 0
    return out, cases


def _evalbeam(*args: str, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
              unbuffered: bool = False, env: dict[str, str] | None = None
              ) -> subprocess.CompletedProcess:
    """The command as a shell runs it: stdout to a file is block-buffered
    unless PYTHONUNBUFFERED is set (a developer's environment may set it)."""
    base = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        base["PYTHONUNBUFFERED"] = "1"
    return subprocess.run([sys.executable, "-m", "pipeline", *args], cwd=ROOT, stdout=stdout,
                          stderr=stderr, text=True, timeout=300,
                          env={**base, "PYTHONPATH": ROOT, **(env or {})})


def _to_full_stdout(*args: str, unbuffered: bool = False) -> subprocess.CompletedProcess:
    with open("/dev/full", "w") as full:
        return _evalbeam(*args, stdout=full, unbuffered=unbuffered)


@pytest.mark.parametrize("args", [
    ["--help"], ["view", "--help"], ["compare", "--help"],
    ["compare", "--output", "{out}", "--baseline", "a", "--candidate", "b"],
    ["calibrate", "--output", "{out}", "--run-id", "b"],
    ["view", "--output", "{out}", "--port", "0"],
])
def test_every_command_whose_stdout_is_full_says_so_with_exit_74(labelled, args):
    """Before: compare (and run) printed a traceback of OutputUnwritable and
    exited 1; --help exited 0 with its text lost (argparse drops the error);
    view's address was lost the same way."""
    out, _ = labelled
    proc = _to_full_stdout(*[a.replace("{out}", out) for a in args])
    command = args[0] if not args[0].startswith("-") else "evalbeam"
    assert (proc.returncode, proc.stderr) == (74, f"evalbeam: error: {command} could not write "
                                                  "its output: No space left on device "
                                                  "(stdout)\n")


@pytest.mark.parametrize("unbuffered", [False, True])
@pytest.mark.parametrize("args", [["--help"], ["compare", "--help"]])
def test_help_to_a_full_stdout_is_exit_74_buffered_or_not(args, unbuffered):
    """Before, with stdout block-buffered (no PYTHONUNBUFFERED: a shell's, CI's
    `env -i`): argparse's help went into the buffer, its SystemExit(0) left
    main, and Python's own flush at exit failed: 'Exception ignored in:
    ScrubbedStream ... OutputUnwritable' and exit 120."""
    proc = _to_full_stdout(*args, unbuffered=unbuffered)
    command = args[0] if not args[0].startswith("-") else "evalbeam"
    assert (proc.returncode, proc.stderr) == (74, f"evalbeam: error: {command} could not write "
                                                  "its output: No space left on device "
                                                  "(stdout)\n")


def test_a_run_whose_stdout_is_full_is_complete_and_exits_74(labelled, tmp_path):
    """Before: the committed run's summary lines raised a traceback, exit 1: a
    scheduler took the complete run for a failed one."""
    out, cases = labelled
    proc = _to_full_stdout("run", "--input", cases, "--output", out, "--run-id", "full")
    assert proc.returncode == 74, proc.stderr
    assert proc.stderr.splitlines()[-1] == ("evalbeam: error: run could not write its "
                                            "output: No space left on device (stdout)")
    assert "Traceback" not in proc.stderr
    assert manifest(out, "full")["counts"]["valid_cases"] == 8
    assert _evalbeam("status", "--output", out, "--run-id", "full").returncode == 0


def test_a_run_whose_stderr_is_full_runs_and_says_its_outcome(labelled):
    """Before: the run's first note on stderr raised, with the run id's lease
    taken: exit 1, no run, the lease left 'running' until its process was
    found gone."""
    out, cases = labelled
    with open("/dev/full", "w") as full:
        proc = _evalbeam("run", "--input", cases, "--output", out, "--run-id", "quiet",
                         stderr=full)
    assert proc.returncode == 0
    assert proc.stdout.startswith("run quiet: 8 input rows, 8 valid")
    status = _evalbeam("status", "--output", out, "--run-id", "quiet")
    assert status.returncode == 0 and "finished" in status.stdout


def test_an_error_on_a_full_stderr_keeps_its_exit_code(labelled):
    """The line is lost, the exit code is the error's (2), not 74: stdout is the
    command's output, stderr only says why."""
    out, _ = labelled
    with open("/dev/full", "w") as full:
        proc = _evalbeam("status", "--output", out, "--run-id", "nope", stderr=full)
    assert proc.returncode == 2


def test_sigterm_stops_the_viewer_in_one_line_with_exit_143(labelled):
    """Before: SIGTERM (`kill`, a service manager) ended view, status, compare
    and calibrate with Python's default: exit 143 and not a word, nor in
    --help or the reference; Ctrl-C said one line."""
    import signal
    out, _ = labelled
    proc = subprocess.Popen([sys.executable, "-m", "pipeline", "view", "--output", out,
                             "--port", "0"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": ROOT})
    try:
        assert proc.stdout.readline().startswith("evalbeam view: http://127.0.0.1:")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert (proc.returncode, err) == (143, "evalbeam: error: view stopped by SIGTERM\n")


def test_a_path_stdout_cannot_encode_is_printed_escaped_not_a_crash(tmp_path):
    """`--output "my runs/été"` with a stdout whose encoding lacks é (a cron job's
    PYTHONIOENCODING=ascii, a Latin-1 locale and a Japanese folder name): status
    crashed at its report: line with a traceback and exit 1 ("failed"), and a
    finished run exited 1 at its tables: line. The letter is printed escaped."""
    rows = [{"case_id": f"c{i}", "question": f"Question {i}?", "expected_answer": "Yes.",
             "answer": "Yes."} for i in range(3)]
    cases = write_cases(str(tmp_path / "cäses.parquet"), rows)
    (tmp_path / "cönfig.yaml").write_text(CONFIG)
    out = str(tmp_path / "my runs" / "été")
    shown = out.replace("é", "\\xe9")
    ascii_out = {"PYTHONIOENCODING": "ascii"}
    for run_id in ("a", "b"):
        ran = _evalbeam("run", "--input", cases, "--output", out, "--config",
                        str(tmp_path / "cönfig.yaml"), "--run-id", run_id, env=ascii_out)
        assert ran.returncode == 0, ran.stderr[-2000:]
    assert f"report:  {shown}/runs/b/report.md" in ran.stdout
    status = _evalbeam("status", "--output", out, "--run-id", "a", env=ascii_out)
    assert status.returncode == 0 and f"{shown}/runs/a/report.md" in status.stdout, status.stderr
    compared = _evalbeam("compare", "--output", out, "--baseline", "a", "--candidate", "b",
                         env=ascii_out)
    assert compared.returncode == 0 and f"{shown}/runs/b/compare/a.md" in compared.stdout, \
        compared.stderr[-2000:]
    assert "Traceback" not in ran.stderr + status.stderr + compared.stderr
