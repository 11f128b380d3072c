"""The `evalbeam` command line.

    evalbeam run --input PATH_OR_GLOB --output DIR [--config FILE.yaml]
                 [--run-id ID] [--run-date YYYY-MM-DD] [--detach] [--lease-ttl S]
                 [Beam options ...]
    evalbeam status --output DIR --run-id ID
    evalbeam calibrate --output DIR --run-id ID [--bot NAME ...]
    evalbeam compare --output DIR --baseline RUN[:BOT] --candidate RUN[:BOT]
                     [--config FILE.yaml] [--min-difference D]
    evalbeam view --output DIR [--port N]

This module parses the arguments and dispatches; the up-front checks that
turn them into a Plan live in `pipeline.plan`, so a bad invocation exits
non-zero with one clear line and writes nothing.
"""
from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import textwrap
from typing import Mapping, Sequence, TextIO

from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from pipeline.config import ConfigError
from pipeline.execute import (beam_flags, beam_options, print_submitted, run_log, run_pipeline,
                              say_before, stopped_before_start, stray_arguments, take_lease)
from pipeline.filesystems import (add_filesystem_options, check_command_line, filesystem_args,
                                  use_filesystems)
from pipeline.stopping import Terminated, exit_code, raising_on_stop, stop_on_signals
from transforms.text.wording import counted
from pipeline.plan import (DEFAULT_TTL_S, MAX_WORKERS_PER_CORE, NO_ANSWERING_BOT, UsageError,
                           check_path_flags, driven_from_here, make_plan)
from schemas.cases import InputError
from schemas.tables import CALL_ERROR_STAGES
from transforms.publish import lease as leases
from transforms.publish.commit import checkpoint
from transforms.publish.finalize import RunInfo
from transforms.publish.lease import LeaseHeld

EXIT_USAGE = 2
EXIT_NOT_RECONCILED = 3
EXIT_GATE_FAILED = 4
EXIT_NOTHING_EVALUATED = 6
EXIT_OUTPUT_UNWRITABLE = 74  # sysexits.h EX_IOERR: no state of a run uses it


def _unwritable(command: str, then: str) -> str:
    """What EXIT_OUTPUT_UNWRITABLE means for a command."""
    return (f"its output could not be written (stdout on a full disk, `> /dev/full`): one line "
            f"`evalbeam: error: {command} could not write its output: ...` on stderr; {then} "
            "(a reader that leaves, `| head -1`, is no error, and a stderr that cannot be "
            "written loses its lines, not the exit code)")


# What each command's exit code means: the --help epilogs and the docs'
# command-line reference are made from this table.
EXIT_SIGINT, EXIT_SIGTERM = exit_code(signal.SIGINT), exit_code(signal.SIGTERM)  # 130, 143
EXIT_CODES: dict[str, dict[int, str]] = {
    "run": {
        0: "the run finished (also when rows were dead-lettered: the summary line says how "
           "many), or it was started with --detach",
        1: "the pipeline itself failed (a traceback, or one line when a Dask job was lost "
           "with its scheduler; the run's lease is marked failed, so `evalbeam status` says "
           "so at once). When it had sent requests, a last line (and the lease's reason) says "
           "how many, per endpoint, with their tokens and cost: they are billed and in no "
           "usage/ table",
        EXIT_USAGE: "a bad invocation, config, input, output folder or FAQ file, a Dask "
                    "cluster whose workers lack an endpoint's key or the embedding model, or "
                    "the run id is being run by another process: one line `evalbeam: error: "
                    "...` on stderr, and nothing written",
        EXIT_NOT_RECONCILED: "the run finished but its counts do not reconcile (a bug: see "
                             "runs/<run_id>/manifest.json)",
        EXIT_NOTHING_EVALUATED: "the run finished but evaluated nothing: every input row "
                                "is invalid, or its bots were asked and none answered (every "
                                "answer an ERROR: an endpoint down, a revoked key); the "
                                "reasons are in errors/, one line `evalbeam: error: ...`; "
                                "--allow-empty makes it exit 0. An input with no "
                                "row at all is refused before the run (exit 2) unless "
                                "--allow-empty",
        EXIT_SIGINT: "stopped by SIGINT (Ctrl-C) during a local run: its worker processes are ended, "
             "its lease is marked failed (a new run of the id takes over), one line on stderr "
             "(and one more saying what it had sent, as for exit 1); during its commit the "
             "stop waits for the commit's end (at most 60 s) and the line says the run is "
             "complete; before the pipeline starts (planning, taking the lease) the lease is "
             "given up, nothing ran, and a new run of the id starts at once",
        EXIT_SIGTERM: "stopped by SIGTERM, the same way",
        EXIT_OUTPUT_UNWRITABLE: _unwritable("run", "the run went on and may be complete: "
                                                   "`evalbeam status` says"),
    },
    "status": {
        0: "finished",
        1: "failed: the attempt was marked failed, or its heartbeat is older than its ttl, or "
           "its local process is gone, and it wrote no completion marker",
        EXIT_USAGE: "no such run id under --output, a corrupt manifest (unless an attempt is "
                    "running), a manifest whose listed table files are missing or cut short "
                    "(not ending as Parquet does), an unreadable lease file and no manifest, "
                    "an invalid "
                    "run id, an empty --output or one with glob or control characters or whose "
                    "filesystem is not installed, or a bad invocation",
        3: "finished, but the counts do not reconcile",
        5: "running",
        EXIT_NOTHING_EVALUATED: "finished, but it evaluated nothing: every input row is "
                                "invalid, or no bot answered (every answer an ERROR), and "
                                "the run was not started with --allow-empty",
        EXIT_SIGTERM: "stopped by SIGTERM: one line `evalbeam: error: status stopped by SIGTERM`",
        EXIT_OUTPUT_UNWRITABLE: _unwritable("status", "the run's state is unknown"),
        EXIT_SIGINT: "stopped by SIGINT (Ctrl-C): one line `evalbeam: error: status stopped "
                     "by SIGINT (Ctrl-C)`",
    },
    "calibrate": {
        0: "calibrated: the summary and the suggested verdict rules are printed",
        EXIT_USAGE: "a run without a completed attempt (no manifest.json), a corrupt "
                    "manifest, a table file it lists missing or not Parquet (cut short), an "
                    "unknown --bot, a run without labels, an empty --output or one with "
                    "glob or control characters or that it cannot write in (a file where "
                    "calibration/ goes, a read-only folder or bucket: checked before the "
                    "work), or a bad "
                    "invocation: one line "
                    "`evalbeam: error: ...`, nothing written",
        EXIT_SIGINT: "stopped by SIGINT (Ctrl-C): one line `evalbeam: error: calibrate "
                     "stopped by SIGINT (Ctrl-C); ...`; calibration/ and calibration.md may "
                     "be incomplete: run it again",
        EXIT_SIGTERM: "stopped by SIGTERM, the same way (`... stopped by SIGTERM; ...`)",
        EXIT_OUTPUT_UNWRITABLE: _unwritable("calibrate", "calibration/ and calibration.md "
                                                         "were written"),
    },
    "compare": {
        0: "compared, and no gate: rule failed (a check that passed without seeing "
           "everything, a drop above max_drop too few pairs can show significant or baseline "
           "cases left out, is a `gate: WARN ...` line with the reason)",
        EXIT_USAGE: "a run without a completed attempt (no manifest.json), a corrupt "
                    "manifest, a table file it lists missing or not Parquet (cut short), no "
                    "case paired, the same run (or RUN:BOT) on both sides, an empty "
                    "--output or --config, an --output with glob or control characters or "
                    "that it cannot write in (a file where comparisons/ or the pages go, a "
                    "read-only folder or bucket: "
                    "checked before the work), an unknown "
                    "bot, a bot on one side only, an invalid config, a gate rule that matches nothing compared (or whose "
                    "bot: only the candidate has), or a bad invocation: one line "
                    "`evalbeam: error: ...`, nothing written",
        EXIT_GATE_FAILED: "a gate: rule of --config found a significant drop larger than it "
                          "allows, or its metric could not be compared (null on a side, "
                          "computed by one run only, or a baseline bot with no case paired); "
                          "the output names the rule and why",
        EXIT_SIGINT: "stopped by SIGINT (Ctrl-C), the gate undecided: one line `evalbeam: "
                     "error: compare stopped by SIGINT (Ctrl-C); ...`; the comparison's "
                     "table and pages may be incomplete: run it again",
        EXIT_SIGTERM: "stopped by SIGTERM, the same way (`... stopped by SIGTERM; ...`)",
        EXIT_OUTPUT_UNWRITABLE: _unwritable("compare", "the gate undecided (the "
                                                       "comparison's table and pages were "
                                                       "written)"),
    },
    "view": {
        0: "stopped with Ctrl-C",
        EXIT_USAGE: "an empty --output or one with glob or control characters, a local --output "
                    "that is not a folder, a URL --output whose "
                    "filesystem is not installed or cannot be read, a filesystem option it "
                    "needs is missing, or the port cannot be used (taken, or not a port "
                    "number): one line `evalbeam: error: ...`",
        EXIT_SIGINT: "stopped by SIGINT (Ctrl-C) before it served (while it opened "
                     "--output): one line `evalbeam: error: view stopped by SIGINT (Ctrl-C)`",
        EXIT_SIGTERM: "stopped by SIGTERM (`kill`, a service manager), before or while it "
                      "serves: one line `evalbeam: error: view stopped by SIGTERM`; it wrote "
                      "nothing",
        EXIT_OUTPUT_UNWRITABLE: _unwritable("view", "it served nothing (its address could "
                                                    "not be printed)"),
    },
}


def exit_codes_text(command: str) -> str:
    """The 'Exit codes:' block of a command's --help."""
    width = max(len(str(code)) for code in EXIT_CODES[command])
    return "Exit codes:\n" + "\n".join(
        textwrap.fill(text, 76, initial_indent=f"  {code:<{width}}  ",
                      subsequent_indent=" " * (width + 4))
        for code, text in sorted(EXIT_CODES[command].items()))


def _command(sub, name: str, summary: str, description: str, notes: str = ""):
    """A subcommand whose --help says what it does, its options and its exit codes."""
    epilog = (textwrap.fill(notes, 78) + "\n\n" if notes else "") + exit_codes_text(name)
    parser = sub.add_parser(name, help=summary, description=textwrap.fill(description, 78),
                            epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_filesystem_options(parser)  # every command reads or writes a run
    return parser


def _input_help() -> str:
    from transforms.read.formats import FORMAT_NAMES
    files = [n for f, n in FORMAT_NAMES.items() if f != "hf"]
    return (f"the cases: {', '.join(files[:-1])} or {files[-1]} files (a file, a folder: every "
            f"case file below it, or a glob), or a {FORMAT_NAMES['hf']}; a local path or any "
            "filesystem Beam knows (gs://, s3://, hdfs://). The format follows the file "
            "extension, or the config's input.format")


class _Parser(argparse.ArgumentParser):
    """argparse, whose refusals are one line `evalbeam: error: ...` (exit 2) as
    the exit-code texts promise, not its usage (up to 8 lines) and
    'evalbeam status: error: ...'; and whose refusal of a choice (the
    command) quotes the word only when it is short: `evalbeam $OPENAI_API_KEY`
    printed the key whole in "invalid choice: 'sk-...'"."""

    def _print_message(self, message: str, file=None) -> None:
        """argparse's, but a --help that stdout cannot take is said (exit 74):
        argparse drops the write's error and exits 0."""
        if message:
            (file or sys.stderr).write(message)

    def error(self, message: str):
        self.exit(EXIT_USAGE, f"evalbeam: error: {message} (see {self.prog} --help)\n")

    def _check_value(self, action: argparse.Action, value) -> None:
        from transforms.remote.scrub import shown
        if action.choices is not None and value not in action.choices:
            raise argparse.ArgumentError(
                action, f"invalid choice: {shown(value)} (choose from "
                        f"{', '.join(map(repr, action.choices))})")


def _parser() -> argparse.ArgumentParser:
    from transforms.decide.presets import PRESETS
    from schemas.tables import MIN_DIFFERENCE
    from transforms.score.scoring import GROUPS
    parser = _Parser(
        prog="evalbeam", description=__doc__.split("\n\n")[0],
        epilog="`evalbeam COMMAND --help` describes a command. Also: python -m pipeline ...")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = _command(
        sub, "run", "evaluate the cases in --input and write the tables under --output",
        "Evaluate the cases in --input: every configured bot answers every case, every metric "
        "scores every answer, the verdict rules decide, and the tables, the report and the "
        "run's manifest are written under --output. Flags win over the config file: --preset "
        "over verdict.preset and verdict.rules, --metrics over metrics.",
        "Any other --option is a Beam pipeline option (e.g. --runner, --direct_running_mode="
        "multi_processing, --direct_num_workers, --project, --region, --temp_location), its "
        "value after = or a space (--runner DataflowRunner); without --runner the run uses FnApiRunner in this process (nothing is downloaded). "
        "One that Beam does not declare and that is close to a flag above (--run_id, "
        "--metrcs=...) is a typo: exit 2, not an option Beam would keep and ignore. "
        "--direct_num_workers of a local run is 0 (Beam's one per CPU core) to "
        f"{MAX_WORKERS_PER_CORE} per CPU core; a negative or larger count is exit 2.")
    run.add_argument("--input", required=True, metavar="PATH_OR_GLOB", help=_input_help())
    run.add_argument("--output", required=True, metavar="DIR",
                     help="the folder of the output tables (local, or a gs://, s3://, hdfs:// "
                          "URL); it must be writable, hold no glob characters (* ? [ ] { }) "
                          "nor control characters (a newline, a tab) and not lie inside the "
                          "input folder")
    run.add_argument("--config", metavar="FILE.yaml",
                     help="the YAML config (default: the built-in defaults: the recorded "
                          "answers as the bot `recorded`, every metric the inputs allow, the "
                          "`default` verdict preset)")
    run.add_argument("--preset", metavar="NAME",
                     help="the verdict rule set for this run: "
                          f"{' | '.join(PRESETS)}; replaces the config's verdict.preset and "
                          "any verdict.rules it writes (verdict.otherwise is kept)")
    run.add_argument("--metrics", metavar="A,B,...",
                     help="the metrics to compute, comma-separated: metric names (built-in, "
                          "custom, rubrics) or groups "
                          f"({', '.join(GROUPS)}); replaces the config's metrics "
                          "(default: every metric the inputs allow)")
    run.add_argument("--run-id", metavar="ID",
                     help="1-128 letters, digits, '-', '_' (default: the UTC time and a random "
                          "suffix, YYYYmmddTHHMMSSZ-xxxx); a re-run with the same id replaces "
                          "that run's files, and no other run's")
    run.add_argument("--run-date", metavar="YYYY-MM-DD",
                     help="the run_date= partition of the tables (default: today, UTC)")
    run.add_argument("--detach", action="store_true",
                     help="start the run and return at once (exit 0), printing the run id; "
                          "follow it with evalbeam status")
    run.add_argument("--lease-ttl", type=_number, default=DEFAULT_TTL_S, metavar="SECONDS",
                     help="seconds without a heartbeat after which another process may take "
                          f"over the run id (default {DEFAULT_TTL_S:g})")
    run.add_argument("--shared-filesystem", action="store_true",
                     help="the local paths given (input, output, the config's files) are on a "
                          "filesystem every worker mounts at the same place (NFS, a cluster "
                          "disk); without it a remote runner (Dask with a scheduler address, "
                          "Dataflow, Flink, Spark) refuses them")
    run.add_argument("--allow-empty", action="store_true",
                     help="run (and exit 0) over an input that holds no case, or whose rows "
                          "are all invalid, or whose bots all fail to answer; without it the "
                          f"first is refused (exit {EXIT_USAGE}) and the others exit "
                          f"{EXIT_NOTHING_EVALUATED}")
    run.add_argument("--attempt", help=argparse.SUPPRESS)  # a detached launch's own process
    status = _command(
        sub, "status", "is a run running, finished or failed?",
        "Say whether a run is running, finished or failed, in one line with its owner, "
        "attempt, last heartbeat and counts, from the run id's lease and completion marker "
        "(runs/<run_id>/manifest.json): it works for a detached run and from any machine that "
        "sees --output.")
    status.add_argument("--output", required=True, metavar="DIR",
                        help="the run's output folder (or URL)")
    status.add_argument("--run-id", required=True, metavar="ID", help="the id of the run to look at")
    cal = _command(
        sub, "calibrate", "measure a finished run's metrics and verdicts against the labels "
        "of its answers",
        "Measure a finished run's metrics (AUC, pairwise accuracy, best threshold) and "
        "verdicts (accuracy, Cohen's kappa) against the labels of its answers (the input's "
        "`label` column); write calibration/ and runs/<run_id>/calibration.md, and print a "
        "suggested verdict: block.")
    cal.add_argument("--output", required=True, metavar="DIR",
                     help="the run's output folder (or URL)")
    cal.add_argument("--run-id", required=True, metavar="ID", help="the finished run's id")
    cal.add_argument("--bot", action="append", default=[], metavar="NAME",
                     help="a bot to calibrate (repeatable; default: the bots of type "
                          "precomputed, whose answers are the labelled ones)")
    cmp = _command(
        sub, "compare", "compare a candidate run (or bot) with a baseline; exit 4 when a "
        "gate: rule finds a significant drop",
        "Compare two runs in one output folder case by case (or two bots: RUN_ID:BOT on both "
        "sides): per bot, suite and metric the paired difference with its 95% interval, "
        "wins / ties / losses and a Holm-corrected paired test; write comparisons/ and the "
        "pages runs/<candidate>/compare/<baseline>.md and .html. With --config, its gate: "
        "rules decide the exit code.")
    cmp.add_argument("--output", required=True, metavar="DIR",
                     help="the folder both runs wrote to (local, or a gs://, s3://, hdfs:// "
                          "URL)")
    cmp.add_argument("--baseline", required=True, metavar="RUN_ID[:BOT]",
                     help="the baseline run, or RUN_ID:BOT for bot against bot")
    cmp.add_argument("--candidate", required=True, metavar="RUN_ID[:BOT]",
                     help="the candidate run, or RUN_ID:BOT")
    cmp.add_argument("--config", metavar="FILE.yaml",
                     help="a YAML config whose gate: rules apply (exit 4 when one fails)")
    cmp.add_argument("--min-difference", type=_non_negative, default=None, metavar="D",
                     help="minimum practical difference: a case whose value moved by at most D "
                          "is a tie (W/T/L) and a zero in the tests, and a metric changed only "
                          f"when its mean moved by more than D (default {MIN_DIFFERENCE:g}, "
                          "above the float noise of two runs of the same inputs)")
    from pipeline.viewer.server import DEFAULT_PORT
    view = _command(
        sub, "view", "browse the runs of an output folder in a local, read-only web viewer",
        "Serve a read-only web viewer on http://127.0.0.1:PORT/ over the runs of --output "
        "(each read through its completion marker): the runs; a case explorer per run with "
        "filters (bot, suite, verdict, a metric's value range, text in the case id, "
        "question, reference or answer) and pages of 50; a case page with the question, the "
        "contexts, the reference, every bot's answer and every metric with its details and "
        "why it is null; two runs' answers side by side. Only this machine can reach it; "
        "nothing is written and nothing is fetched from the internet.",
        "Open the printed address in a browser; Ctrl-C stops the viewer.")
    view.add_argument("--output", required=True, metavar="DIR",
                      help="the output folder whose runs to show (local, or a gs://, s3://, "
                          "hdfs:// URL)")
    view.add_argument("--port", type=_whole_number, default=DEFAULT_PORT, metavar="N",
                      help=f"the port on 127.0.0.1 (default {DEFAULT_PORT}; 0: any free port)")
    return parser


def _parsed(convert, what: str):
    """An argparse type: `convert`, whose refusal quotes the text only when it
    is short (argparse's own 'invalid int value: 'sk-...'' quoted a key typed
    into the wrong flag)."""
    from transforms.remote.scrub import shown

    def parse(text: str):
        try:
            return convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{shown(text)} is not {what}") from None
    parse.__name__ = what
    return parse


_whole_number = _parsed(int, "a whole number")
_number = _parsed(float, "a number")


def _non_negative(text: str) -> float:
    value = _number(text)
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a number >= 0")
    return value


def _usage_error(message: str) -> int:
    from transforms.remote.scrub import process_scrubber
    print(f"evalbeam: error: {process_scrubber().scrub(message)}", file=sys.stderr)
    return EXIT_USAGE


def calibrate(args: argparse.Namespace) -> int:
    """`evalbeam calibrate`: exit 0 with the summary printed, 2 with one line."""
    from pipeline.postrun.calibrate import run_calibrate
    from pipeline.postrun.read import RunUnreadable
    from transforms.publish.write import NotWritten
    try:
        print(run_calibrate(args.output, args.run_id, args.bot))
    except RunUnreadable as exc:
        return _usage_error(str(exc))
    except NotWritten as exc:
        return _not_written(exc)
    return 0


def _not_written(exc: Exception) -> int:
    """A post-run command's file not written (a full disk): one line, exit 74."""
    _usage_error(str(exc))
    return EXIT_OUTPUT_UNWRITABLE


def view(args: argparse.Namespace) -> int:
    """`evalbeam view`: serve until Ctrl-C (0), or EXIT_USAGE with one line."""
    from pipeline.viewer.server import serve
    from pipeline.viewer.data import run_ids
    from transforms.publish.completed import RunUnreadable, check_output
    try:
        output = check_output(args.output)
    except RunUnreadable as exc:
        return _usage_error(str(exc))
    if "://" not in output and not os.path.isdir(output):
        return _usage_error(f"--output {output} is not a folder")
    try:  # a URL: its filesystem answers (installed, given its options), before serving
        run_ids(output)
    except RunUnreadable as exc:
        return _usage_error(str(exc))
    if not 0 <= args.port <= 65535:
        return _usage_error(f"--port {args.port} is not a port number (0-65535)")
    try:
        return serve(output, args.port)
    except OSError as exc:
        return _usage_error(f"cannot serve on 127.0.0.1:{args.port}: {exc.strerror or exc}")


def _named(token: str) -> str:
    """An unexpected argument as an error names it: a flag without its value
    ('--api_key=…'), another token only when short (it may be a key)."""
    from transforms.remote.scrub import shown
    if token.startswith("--"):
        name, eq, _ = token.partition("=")
        return repr(name + ("=…" if eq else ""))
    return shown(token)


def _flags(parser: argparse.ArgumentParser, command: str) -> list[str]:
    """The flags a command of the parser declares."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return [flag for action in sub.choices[command]._actions for flag in action.option_strings
            if action.help != argparse.SUPPRESS]


def misspelt_flag(beam_args: Sequence[str], flags: Sequence[str]) -> str | None:
    """Why a flag `run` passes on to Beam is one of its own misspelt
    (`--run_id=x`, `--metrcs=bleu`, `--allow_empty`), or None. Beam keeps a
    flag it does not know as an option of its own (a warning in the log), so
    the run would go on without it: a random run id, every metric."""
    if not beam_args:  # no Beam import for the commands that pass none
        return None
    import difflib
    known = beam_flags()
    for arg in beam_args:
        name = arg.partition("=")[0]
        if not arg.startswith("--"):  # a value (stray ones are refused before)
            continue
        if name in known:
            continue
        close = difflib.get_close_matches(name.replace("_", "-"), flags, n=1, cutoff=0.8)
        if close:
            return f"unknown flag {name!r}: did you mean {close[0]}?"
    return None


def compare(args: argparse.Namespace, extra: Sequence[str]) -> int:
    """`evalbeam compare`: 0, EXIT_GATE_FAILED, or EXIT_USAGE with one line."""
    from pipeline.postrun.compare import CompareError, run_compare
    from pipeline.postrun.gate import GateError
    from pipeline.postrun.read import RunUnreadable
    from transforms.remote.scrub import remember_config_secrets
    if extra:
        return _usage_error(f"unexpected argument {_named(extra[0])}")
    remember_config_secrets(args.config)  # as run's: its errors are scrubbed of them
    from transforms.publish.write import NotWritten
    try:
        failed = run_compare(args)
    except (CompareError, ConfigError, GateError, RunUnreadable) as exc:
        return _usage_error(str(exc))
    except NotWritten as exc:
        return _not_written(exc)
    return EXIT_GATE_FAILED if failed else 0


def run(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:  # before parsing, so that no error message can echo a credential
        urls = check_command_line(argv)
    except UsageError as exc:
        return _usage_error(str(exc))
    args, beam_args = _parser().parse_known_args(argv)
    try:
        check_path_flags(args)
    except UsageError as exc:
        return _usage_error(str(exc))
    fs_args = filesystem_args(args)
    if args.command != "run":  # s3://, hdfs:// cannot be read without their options
        try:
            use_filesystems(PipelineOptions(fs_args), urls)
        except UsageError as exc:
            return _usage_error(str(exc))
    if args.command == "compare":
        return compare(args, beam_args)
    unknown = (stray_arguments(beam_args, beam_flags()) if args.command == "run" and beam_args
               else beam_args)
    if unknown:
        return _usage_error(f"unexpected argument {_named(unknown[0])}")
    misspelt = misspelt_flag(beam_args, _flags(_parser(), "run"))
    if misspelt:
        return _usage_error(misspelt)
    if args.command == "calibrate":
        return calibrate(args)
    if args.command == "view":
        return view(args)
    if args.command == "status":  # its exit code is the run's state
        from pipeline.postrun.status import print_status
        return print_status(args.output, args.run_id)
    from transforms.remote.scrub import remember_config_secrets
    remember_config_secrets(args.config)  # before anything it says can quote them
    planned: list[RunInfo] = []  # a stop before the pipeline gives up the lease it took
    with stop_on_signals(lambda name: stopped_before_start(planned[0] if planned else None,
                                                           name), workers=False):
        try:
            options = beam_options(beam_args + fs_args, urls)
            detach = args.detach or options.view_as(StandardOptions).no_wait_until_finish
            local = driven_from_here(options)
            plan = make_plan(args, options)
            planned.append(plan.info)
            checkpoint(plan.info.output, plan.info.run_id, plan.info.attempt, "planned")
            lease = take_lease(plan.info, local, adopt=args.attempt is not None)
            checkpoint(plan.info.output, plan.info.run_id, plan.info.attempt, "leased")
        except (ConfigError, InputError, UsageError, LeaseHeld) as exc:
            return _usage_error(str(exc))
        say_before(plan)
    if detach and local and args.attempt is None:
        return _start_detached(argv, plan.info, lease)
    outcome: list[int] = []  # printed within the run's signal handling: a stop says so
    try:
        run_pipeline(plan, options, lease, detach, signals=True,
                     then=lambda: outcome.append(_print_outcome(plan.info, args.allow_empty)))
    except Exception as exc:
        if getattr(exc, "one_line", False):  # run_pipeline's error line said it all
            return 1
        raise
    if detach:  # a remote job: its workers beat and its Finalize commits and releases
        return 0
    return outcome[0]


def _start_detached(argv: list[str], info: RunInfo, lease: leases.Lease) -> int:
    """A local runner runs in this process: run the same command in a process
    of its own (new session, output to a log beside the manifest) and return."""
    import subprocess
    log = run_log(info)
    child = [a for a in argv if a not in ("--detach", "--no_wait_until_finish")] + [
        "--run-id", info.run_id, "--run-date", info.run_date, "--attempt", info.attempt]
    with open(log, "ab") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "pipeline", *child], stdout=fh,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    leases.update(info.output, lease, pid=proc.pid)
    print_submitted(info, f"pid {proc.pid}, log {log}")
    return 0


def _print_outcome(info: RunInfo, allow_empty: bool = False) -> int:
    from transforms.publish.commit import checkpoint
    from transforms.publish.completed import RunUnreadable, read_completed_run
    from transforms.publish.report import (asking_bots, cap_lines, evaluated_nothing,
                                           outcome_notes)
    checkpoint(info.output, info.run_id, info.attempt, "outcome")
    try:  # the run as every reader sees it (works for gs://, s3:// outputs too)
        done = read_completed_run(info.output, info.run_id)
    except RunUnreadable as exc:
        done, why = None, str(exc)
    else:
        why = f"the marker names attempt {done.attempt}"
    if done is None or done.attempt != info.attempt:
        print(f"evalbeam: error: run {info.run_id} finished without its completion marker "
              f"({why})", file=sys.stderr)
        return 1
    manifest = done.manifest
    c = manifest["counts"]
    print(counts_line(info.run_id, c))
    summary = done.files("summary")
    shown = line_metrics(manifest.get("metrics", []))
    for bot in manifest["bots"]:
        print(f"  {bot}: " + (_bot_line(summary, bot, shown) or "no rows"))
    asking = asking_bots(manifest.get("config"))
    nothing = not allow_empty and evaluated_nothing(c, asking)
    for note in outcome_notes(c, asking):
        print(f"evalbeam: {'error: run ' + info.run_id if nothing else 'note'}: {note}",
              file=sys.stderr)
    reached = {n: cap for n, cap in manifest.get("spend_caps", {}).items() if cap["reached"]}
    for line in cap_lines(reached, markdown=False):  # null metrics that are no failure
        print(f"evalbeam: note: {line}", file=sys.stderr)
    answerless = next((n for n in info.notes if NO_ANSWERING_BOT in n), None)
    if answerless and c["bot_errors"]:
        answers = c["valid_cases"] * len(manifest["bots"])
        print(f"evalbeam: note: {c['bot_errors']} of {answers} answers "
              f"{'is an' if c['bot_errors'] == 1 else 'are'} ERROR: {answerless}",
              file=sys.stderr)
    print(f"tables:  {info.output}/{{results,scores,summary,errors,usage}}/run_date={info.run_date}")
    print(f"report:  {info.output}/runs/{info.run_id}/report.md (and report.html)")
    if not manifest["reconciliation"]["ok"]:
        print("evalbeam: error: the counts do not reconcile; see manifest.json", file=sys.stderr)
        return EXIT_NOT_RECONCILED
    return EXIT_NOTHING_EVALUATED if nothing else 0


def counts_line(run_id: str, c: Mapping[str, int]) -> str:
    """The run's counts in one line that adds up to its errors/ rows: repeated
    case ids and failed judge questions are named when there are any."""
    kinds = [counted(c["bot_errors"], "bot error")] + [
        counted(n, noun) for n, noun in
        ((c.get("duplicate_case_ids", 0), "repeated case id"),
         *((c.get(key, 0), noun) for key, noun in CALL_ERROR_STAGES.values())) if n]
    return (f"run {run_id}: {counted(c['input_rows'], 'input row')}, {c['valid_cases']:,} valid, "
            f"{c['invalid_rows']:,} invalid, {', '.join(kinds)} "
            f"({counted(c['errors_rows'], 'row')} in errors/)")



LINE_METRICS = ("hallucination", "lexical_relevance", "completeness", "rougeL", "bleu")


def line_metrics(run_metrics: Sequence[str]) -> list[str]:
    """The means a bot's line shows: a run of five metrics or fewer (chosen
    ones, such as `--metrics faithfulness,rouge`) shows them all; a larger
    one the usual five it has, else its first five, not verdicts alone."""
    if len(run_metrics) <= len(LINE_METRICS):
        return list(run_metrics)
    usual = [m for m in LINE_METRICS if m in run_metrics]
    return usual or list(run_metrics[:len(LINE_METRICS)])


def _bot_line(summary_files: Sequence[str], bot: str, metrics: Sequence[str]) -> str:
    import pyarrow.parquet as pq
    from schemas.tables import ALL_SUITES, VERDICT_METRIC
    rows = []
    for path in summary_files:
        with FileSystems.open(path) as fh:
            rows += pq.read_table(fh).to_pylist()
    by = {r["metric"]: r for r in rows if r["bot"] == bot and r["suite"] == ALL_SUITES}
    v = by.get(VERDICT_METRIC)
    parts = [] if v is None else [f"PASS {v['pass_count']}  WARN {v['warn_count']}  "
                                  f"FAIL {v['fail_count']}  ERROR {v['error_count']}"]
    for m in metrics:
        if m in by and by[m]["mean"] is not None:
            parts.append(f"{m} {by[m]['mean']:.3f}")
    return " | ".join(parts)


class OutputUnwritable(Exception):
    """stdout cannot be written for another reason than its reader leaving (a
    full disk, /dev/full). No OSError, which a command's own handlers of a
    file or a socket (view's 'cannot serve on ...') would take for theirs."""


def _output_lost(argv: Sequence[str], exc: OutputUnwritable) -> int:
    """stdout that cannot be written (a full disk, `> /dev/full`): one line on
    stderr and EXIT_OUTPUT_UNWRITABLE, for every command, not a traceback and
    1 (a failed run to a scheduler: status says 1 for failed), nor 0 with
    the output lost (--help: argparse drops a write error)."""
    command = argv[0] if argv and argv[0] in EXIT_CODES else "evalbeam"
    with contextlib.suppress(OSError):
        print(f"evalbeam: error: {command} could not write its output: {exc}", file=sys.stderr)
    return EXIT_OUTPUT_UNWRITABLE


class _ReaderMayLeave:
    """stdout and stderr for the console script: when their reader has gone
    (`evalbeam status ... | head -1`, `... 2>&1 | head -1`) what is left to
    print goes nowhere, without a traceback and without changing the
    command's exit code. stderr that cannot be written for another reason (a
    full disk, `2> /dev/full`) is the same: its notes and progress lines are
    lost, the command goes on (a run whose first note failed crashed with its
    lease taken). stdout that cannot be written raises OutputUnwritable: what
    the command was asked for is lost (main says so, exit 74)."""

    def __init__(self, stream, lost_is_fatal: bool) -> None:
        self._stream = stream
        self._fatal = lost_is_fatal

    def _gone(self) -> None:
        os.dup2(os.open(os.devnull, os.O_WRONLY), self._stream.fileno())

    def _lost(self, exc: OSError) -> None:
        if self._fatal and not isinstance(exc, BrokenPipeError):
            raise OutputUnwritable(f"{exc.strerror or exc} ({self._stream.name.strip('<>')})"
                                   ) from None
        self._gone()

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as exc:
            self._lost(exc)
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            self._lost(exc)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def _escaping(stream: TextIO) -> TextIO:
    """stdout that prints a letter its encoding lacks escaped ('my runs/\\xe9t\\xe9'),
    as stderr does: a path named in UTF-8 under PYTHONIOENCODING=ascii or a
    Latin-1 locale crashed status (exit 1, 'failed') and a finished run."""
    with contextlib.suppress(AttributeError, ValueError):  # no TextIOWrapper (a test's)
        stream.reconfigure(errors="backslashreplace")
    return stream


def _print_crash() -> int:
    """The traceback of a run that crashed, without the endpoints' secrets: an
    exception from a worker can quote a request (a URL with credentials, an
    echoed header), and Python would print it as it is. Exit code 1."""
    import traceback
    from transforms.remote.scrub import process_scrubber
    with contextlib.suppress(OutputUnwritable):
        sys.stdout.flush()
    print(process_scrubber().scrub(traceback.format_exc()), file=sys.stderr, end="")
    return 1


WROTE_PART = {"compare": "; the comparison's table and pages may be incomplete: run it again",
              "calibrate": "; calibration/ and calibration.md may be incomplete: run it again"}


def _stopped(argv: Sequence[str], signum: int) -> int:
    """Ctrl-C (SIGINT) or SIGTERM (`kill`, a scheduler) in a command that reads
    a finished run (compare takes minutes over a million cases): one line, not
    Python's traceback of DuckDB's or pyarrow's internals (SIGTERM: nothing
    at all); exit 130 or 143. `run` stops in one line on its own
    (stopping.py): a KeyboardInterrupt of it that reaches here is a fault,
    shown with its traceback, scrubbed."""
    command = argv[0] if argv else ""
    if command not in EXIT_CODES or command == "run":
        return _print_crash() and exit_code(signum)
    with contextlib.suppress(OutputUnwritable):
        sys.stdout.flush()
    name = "SIGINT (Ctrl-C)" if signum == signal.SIGINT else signal.Signals(signum).name
    print(f"evalbeam: error: {command} stopped by {name}{WROTE_PART.get(command, '')}",
          file=sys.stderr)
    return exit_code(signum)


def main(argv: Sequence[str] | None = None) -> None:
    """Console entry point.

    Leaves through os._exit once everything is written and flushed: native
    threads of gRPC/Arrow that Beam leaves behind can abort the interpreter's
    final teardown ("terminate called without an active exception"), which
    would turn a finished run into a crash exit code.
    """
    logging.getLogger("apache_beam").setLevel(logging.WARNING)
    sys.stdout = _ReaderMayLeave(_escaping(sys.stdout), lost_is_fatal=True)
    sys.stderr = _ReaderMayLeave(sys.stderr, lost_is_fatal=False)
    from transforms.remote.scrub import release_streams, scrub_std_streams
    scrub_std_streams()  # what is printed from here on (a custom metric's print, too)
    argv = list(sys.argv[1:] if argv is None else argv)
    try:  # SIGTERM as Ctrl-C; `run` handles both itself (stopping.stop_on_signals)
        with raising_on_stop() if argv[:1] != ["run"] else contextlib.nullcontext():
            code = run(argv)
        sys.stdout.flush()  # what the buffer holds is written now, or said to be lost
    except OutputUnwritable as exc:
        code = _output_lost(argv, exc)
    except KeyboardInterrupt:
        code = _stopped(argv, signal.SIGINT)
    except Terminated:
        code = _stopped(argv, signal.SIGTERM)
    except SystemExit:  # argparse's --help or usage error: its text may still be buffered
        try:
            sys.stdout.flush()
        except OutputUnwritable as exc:  # else Python's own flush at exit: exit 120
            code = _output_lost(argv, exc)
        else:
            raise
    except BaseException:  # exit 1 with the traceback, as Python would, but scrubbed
        code = _print_crash()  # (a worker's BaseException, re-raised here, too)
    release_streams()  # a held tail too, a possible beginning of a key masked
    logging.shutdown()
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
