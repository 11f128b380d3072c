"""The `evalbeam` command line.

    evalbeam run --input PATH_OR_GLOB --output DIR [--config FILE.yaml]
                 [--run-id ID] [--run-date YYYY-MM-DD] [--detach] [--lease-ttl S]
                 [Beam options ...]
    evalbeam status --output DIR --run-id ID
    evalbeam calibrate --output DIR --run-id ID [--bot NAME ...]
    evalbeam compare --output DIR --baseline RUN[:BOT] --candidate RUN[:BOT]
                     [--config FILE.yaml]

This module parses the arguments and dispatches; the up-front checks that
turn them into a Plan live in `pipeline.plan`, so a bad invocation exits
non-zero with one clear line and writes nothing.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import textwrap
from typing import Sequence

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from pipeline.config import ConfigError
from pipeline.graph import build_pipeline
from pipeline.plan import (DASK_NAMES, DASK_RUNNER, DEFAULT_TTL_S, Plan, UsageError,
                           driven_from_here, make_plan, runner_is_local)
from schemas.cases import InputError
from schemas.tables import TABLES
from transforms.publish import lease as leases
from transforms.publish.commit import add_counters, clean_leftovers, committed_attempt
from transforms.publish.finalize import RunInfo
from transforms.publish.lease import LeaseHeld

EXIT_USAGE = 2
EXIT_NOT_RECONCILED = 3
EXIT_GATE_FAILED = 4


# What each command's exit code means: the --help epilogs and the docs'
# command-line reference are made from this table.
EXIT_CODES: dict[str, dict[int, str]] = {
    "run": {
        0: "the run finished (also when rows were dead-lettered: the summary line says how "
           "many), or it was started with --detach",
        1: "the pipeline itself failed (a traceback; the run's lease is marked failed, so "
           "`evalbeam status` says so at once)",
        EXIT_USAGE: "a bad invocation, config, input, output folder or FAQ file, or the run id "
                    "is being run by another process: one line `evalbeam: error: ...` on "
                    "stderr, and nothing written",
        EXIT_NOT_RECONCILED: "the run finished but its counts do not reconcile (a bug: see "
                             "runs/<run_id>/manifest.json)",
    },
    "status": {
        0: "finished",
        1: "failed: the attempt was marked failed, or its heartbeat is older than its ttl, or "
           "its local process is gone, and it wrote no completion marker",
        EXIT_USAGE: "no such run id under --output, a corrupt manifest (unless an attempt is "
                    "running), an invalid run id, an --output with glob characters or whose "
                    "filesystem is not installed, or a bad invocation",
        3: "finished, but the counts do not reconcile",
        5: "running",
    },
    "calibrate": {
        0: "calibrated: the summary and the suggested verdict rules are printed",
        EXIT_USAGE: "a run without a completed attempt (no manifest.json), a corrupt "
                    "manifest, a missing table, an unknown --bot, a run without labels, an "
                    "--output with glob characters, or a bad invocation: one line "
                    "`evalbeam: error: ...`",
    },
    "compare": {
        0: "compared, and no gate: rule failed",
        EXIT_USAGE: "a run without a completed attempt (no manifest.json), a corrupt "
                    "manifest, no case paired, an --output with glob characters, an unknown "
                    "bot, a bot on one side only, an invalid config, a gate "
                    "rule that matches nothing compared, or a bad invocation: one line "
                    "`evalbeam: error: ...`, nothing written",
        EXIT_GATE_FAILED: "a gate: rule of --config found a significant drop larger than it "
                          "allows, or its metric could not be compared (null on a side, or "
                          "computed by one run only); the output names the rule and why",
    },
}


def exit_codes_text(command: str) -> str:
    """The 'Exit codes:' block of a command's --help."""
    return "Exit codes:\n" + "\n".join(
        textwrap.fill(text, 76, initial_indent=f"  {code}  ", subsequent_indent="     ")
        for code, text in sorted(EXIT_CODES[command].items()))


def _command(sub, name: str, summary: str, description: str, notes: str = ""):
    """A subcommand whose --help says what it does, its options and its exit codes."""
    epilog = (textwrap.fill(notes, 78) + "\n\n" if notes else "") + exit_codes_text(name)
    return sub.add_parser(name, help=summary, description=textwrap.fill(description, 78),
                          epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter)


def _input_help() -> str:
    from transforms.read.formats import FORMAT_NAMES
    files = [n for f, n in FORMAT_NAMES.items() if f != "hf"]
    return (f"the cases: {', '.join(files[:-1])} or {files[-1]} files (a file, a folder: every "
            f"case file below it, or a glob), or a {FORMAT_NAMES['hf']}; a local path or any "
            "filesystem Beam knows (gs://, s3://, hdfs://). The format follows the file "
            "extension, or the config's input.format")


def _parser() -> argparse.ArgumentParser:
    from transforms.decide.presets import PRESETS
    from schemas.tables import MIN_DIFFERENCE
    from transforms.score.scoring import GROUPS
    parser = argparse.ArgumentParser(
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
        "multi_processing, --direct_num_workers, --project, --region, --temp_location); "
        "without --runner the run uses FnApiRunner in this process (nothing is downloaded).")
    run.add_argument("--input", required=True, metavar="PATH_OR_GLOB", help=_input_help())
    run.add_argument("--output", required=True, metavar="DIR",
                     help="the folder of the output tables (local, or a gs://, s3://, hdfs:// "
                          "URL); it must be writable, hold no glob characters (* ? [ ] { }) "
                          "and not lie inside the input folder")
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
    run.add_argument("--lease-ttl", type=float, default=DEFAULT_TTL_S, metavar="SECONDS",
                     help="seconds without a heartbeat after which another process may take "
                          f"over the run id (default {DEFAULT_TTL_S:g})")
    run.add_argument("--shared-filesystem", action="store_true",
                     help="the local paths given (input, output, the config's files) are on a "
                          "filesystem every worker mounts at the same place (NFS, a cluster "
                          "disk); without it a remote runner (Dask with a scheduler address, "
                          "Dataflow, Flink, Spark) refuses them")
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
                     help="the folder both runs wrote to (local or mounted)")
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
    return parser


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a number >= 0")
    return value


def _runner(value: str) -> str:
    """The runner a --runner value names (evalbeam's Dask runner for Beam's)."""
    return DASK_RUNNER if value.lower() in DASK_NAMES else value


def _beam_options(beam_args: Sequence[str]) -> PipelineOptions:
    args = list(beam_args)
    for i, arg in enumerate(args):
        if arg.startswith("--runner="):
            args[i] = "--runner=" + _runner(arg.partition("=")[2])
        elif arg == "--runner" and i + 1 < len(args):
            args[i + 1] = _runner(args[i + 1])
    if not any(a == "--runner" or a.startswith("--runner=") for a in args):
        args.append("--runner=FnApiRunner")  # local default: never downloads a runner binary
    return PipelineOptions(args)


def _usage_error(message: str) -> int:
    print(f"evalbeam: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def calibrate(args: argparse.Namespace) -> int:
    """`evalbeam calibrate`: exit 0 with the summary printed, 2 with one line."""
    from pipeline.postrun.calibrate import run_calibrate
    from pipeline.postrun.read import RunUnreadable
    try:
        print(run_calibrate(args.output, args.run_id, args.bot))
    except RunUnreadable as exc:
        return _usage_error(str(exc))
    return 0


def compare(args: argparse.Namespace, extra: Sequence[str]) -> int:
    """`evalbeam compare`: 0, EXIT_GATE_FAILED, or EXIT_USAGE with one line."""
    from pipeline.postrun.compare import CompareError, run_compare
    from pipeline.postrun.gate import GateError
    from pipeline.postrun.read import RunUnreadable
    if extra:
        print(f"evalbeam: error: unexpected argument {extra[0]!r}", file=sys.stderr)
        return EXIT_USAGE
    try:
        failed = run_compare(args)
    except (CompareError, ConfigError, GateError, RunUnreadable) as exc:
        print(f"evalbeam: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_GATE_FAILED if failed else 0


def runs_in_this_process(options: PipelineOptions) -> bool:
    """A local runner that runs the DoFns here, the report's Finalize among them
    (multi_processing runs them in worker processes)."""
    opts = options.get_all_options(retain_unknown_options=True)
    return runner_is_local(options) and opts.get("direct_running_mode") != "multi_processing"


def take_lease(info: RunInfo, runner_local: bool, adopt: bool) -> leases.Lease:
    """The run id's lease for this attempt (LeaseHeld when another attempt has
    it); a fresh attempt then removes what killed attempts left behind."""
    if adopt:  # the detached process of a launcher that took the lease for it
        held = leases.read_lease(info.output, info.run_id)
        if held is None or held.attempt != info.attempt:
            raise LeaseHeld(f"attempt {info.attempt} of run {info.run_id!r} no longer holds "
                            "its lease")
        return leases.update(info.output, held, pid=os.getpid())
    lease = leases.new_lease(info.run_id, info.attempt, info.lease_ttl_s, runner_local)
    lease, taken = leases.acquire(info.output, lease,
                                  lambda: committed_attempt(info.output, info.run_id))
    if taken:
        print(f"evalbeam: note: took over run id {info.run_id!r} from {taken}", file=sys.stderr)
    clean_leftovers(info.output, info.run_id, info.attempt, list(TABLES.values()))
    return lease


def run(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args, beam_args = _parser().parse_known_args(argv)
    if args.command == "compare":
        return compare(args, beam_args)
    unknown = [a for a in beam_args if args.command != "run" or not a.startswith("--")]
    if unknown:
        return _usage_error(f"unexpected argument {unknown[0]!r}")
    if args.command == "calibrate":
        return calibrate(args)
    if args.command == "status":
        from pipeline.postrun.status import print_status
        return print_status(args.output, args.run_id)
    options = _beam_options(beam_args)
    detach = args.detach or options.view_as(StandardOptions).no_wait_until_finish
    local = driven_from_here(options)
    try:
        plan = make_plan(args, options)
        lease = take_lease(plan.info, local, adopt=args.attempt is not None)
    except (ConfigError, InputError, UsageError, LeaseHeld) as exc:
        return _usage_error(str(exc))
    for note in plan.info.notes:  # said once, before the run (and kept in the manifest)
        print(f"evalbeam: note: {note}", file=sys.stderr)
    if detach and local and args.attempt is None:
        return _start_detached(argv, plan.info, lease)
    if runs_in_this_process(options):
        from transforms.publish import chart_engine
        chart_engine.start()  # the report's chart engine boots while the pipeline runs
    return _run_pipeline(plan, options, lease, detach)


def _start_detached(argv: list[str], info: RunInfo, lease: leases.Lease) -> int:
    """A local runner runs in this process: run the same command in a process
    of its own (new session, output to a log beside the manifest) and return."""
    import subprocess
    log = FileSystems.join(leases.run_dir(info.output, info.run_id), f"log.{info.attempt}.txt")
    if "://" in log:  # the process writes its output locally
        log = os.path.join(tempfile.gettempdir(), f"evalbeam-{info.run_id}-{info.attempt}.log")
    child = [a for a in argv if a not in ("--detach", "--no_wait_until_finish")] + [
        "--run-id", info.run_id, "--run-date", info.run_date, "--attempt", info.attempt]
    with open(log, "ab") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "pipeline", *child], stdout=fh,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    leases.update(info.output, lease, pid=proc.pid)
    _print_submitted(info, f"pid {proc.pid}, log {log}")
    return 0


def _print_submitted(info: RunInfo, where: str) -> None:
    print(f"run {info.run_id}: started (attempt {info.attempt}, {where})")
    print(f"check it with: evalbeam status --output {info.output} --run-id {info.run_id}")


def _run_pipeline(plan: Plan, options: PipelineOptions, lease: leases.Lease,
                  detach: bool) -> int:
    """Run (or, detached on a remote runner, submit) the pipeline; its Finalize
    step commits the attempt and releases the lease. A failure marks the lease
    failed, so `status` says so at once and the next run may take over."""
    info = plan.info
    beat = leases.Heartbeat.start(info.output, info.run_id, info.attempt, info.lease_ttl_s)
    try:
        p = beam.Pipeline(options=options)
        build_pipeline(p, plan)
        result = p.run()
        if detach:  # a remote job: its workers beat and its Finalize commits and releases
            _print_submitted(info, f"job {getattr(result, 'job_id', lambda: '?')()}")
            _beat_until_workers_start(info, result)
            return 0
        result.wait_until_finish()
    except BaseException as exc:
        from transforms.remote.scrub import scrubber_for
        scrubber = scrubber_for(info.endpoints)
        why = " ".join(scrubber.scrub(f"{type(exc).__name__}: {exc}").split())[:300]
        leases.mark_failed(info.output, lease, why)
        if isinstance(exc, Exception):
            print(f"evalbeam: error: run {info.run_id} (attempt {info.attempt}) failed: {why}; "
                  "a new run of the id takes over and cleans up", file=sys.stderr)
        raise
    finally:
        beat.stop()
    counters = beam_counters(result)
    if counters:
        add_counters(info.output, info.run_id, info.attempt, counters)
    return _print_outcome(info)


def _beat_until_workers_start(info: RunInfo, result) -> None:
    """The launcher's heartbeat covers the job's start-up: it beats until the
    workers do (or the job ends), then returns."""
    from apache_beam.runners.runner import PipelineState

    def ended() -> bool:
        try:
            return PipelineState.is_terminal(result.state)
        except Exception:  # the job service did not answer: ask again later
            return False
    print("waiting for the job's workers to start (until then this process keeps the run's "
          "lease alive)", flush=True)
    if leases.wait_for_workers(info.output, info.run_id, info.attempt, ended) == "timeout":
        print(f"evalbeam: note: no worker has started after {leases.STARTUP_WAIT_S:g} s; "
              f"the run's lease goes stale {info.lease_ttl_s:g} s from now unless one does",
              file=sys.stderr)


def beam_counters(result) -> dict[str, dict[str, int]]:
    """The job's Beam counters, {namespace: {name: value}} summed over steps
    (committed values where the runner has them); {} when it reports none."""
    try:
        found = result.metrics().query()["counters"]
    except Exception:  # a runner without metrics (Beam's DaskRunner raised here)
        return {}
    out: dict[str, dict[str, int]] = {}
    for c in found:
        value = c.committed if c.committed is not None else c.attempted
        ns = out.setdefault(c.key.metric.namespace, {})
        ns[c.key.metric.name] = ns.get(c.key.metric.name, 0) + int(value or 0)
    return {ns: dict(sorted(names.items())) for ns, names in sorted(out.items())}


def _print_outcome(info: RunInfo) -> int:
    from transforms.publish.completed import RunUnreadable, read_completed_run
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
    print(f"run {info.run_id}: {c['input_rows']} input rows, {c['valid_cases']} valid, "
          f"{c['invalid_rows']} invalid, {c['bot_errors']} bot errors "
          f"({c['errors_rows']} rows in errors/)")
    summary = done.files("summary")
    for bot in manifest["bots"]:
        print(f"  {bot}: " + _bot_line(summary, bot))
    print(f"tables:  {info.output}/{{results,scores,summary,errors,usage}}/run_date={info.run_date}")
    print(f"report:  {info.output}/runs/{info.run_id}/report.md (and report.html)")
    if not manifest["reconciliation"]["ok"]:
        print("evalbeam: error: the counts do not reconcile; see manifest.json", file=sys.stderr)
        return EXIT_NOT_RECONCILED
    return 0


def _bot_line(summary_files: Sequence[str], bot: str) -> str:
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
    for m in ("hallucination", "lexical_relevance", "completeness", "rougeL", "bleu"):
        if m in by and by[m]["mean"] is not None:
            parts.append(f"{m} {by[m]['mean']:.3f}")
    return " | ".join(parts)


def main(argv: Sequence[str] | None = None) -> None:
    """Console entry point.

    Leaves through os._exit once everything is written and flushed: native
    threads of gRPC/Arrow that Beam leaves behind can abort the interpreter's
    final teardown ("terminate called without an active exception"), which
    would turn a finished run into a crash exit code.
    """
    logging.getLogger("apache_beam").setLevel(logging.WARNING)
    code = run(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
