"""Running a planned evaluation: take the run id's lease, run (or submit)
the pipeline while its progress is watched, and read its completion marker.
Shared by the command line (`evalbeam run`) and the Python API
(`evalbeam.evaluate`), so both run the same pipeline the same way.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import sys
import tempfile
import threading
from typing import Callable, Sequence

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from pipeline.filesystems import use_filesystems
from pipeline.graph import build_pipeline
from pipeline.plan import (DASK_NAMES, DASK_RUNNER, Plan, UsageError, check_direct_workers,
                           driven_from_here, runner_is_local)
from pipeline.stopping import Terminated, stop_on_signals
from pipeline.watch import Watch
from schemas.tables import TABLES
from transforms.publish import lease as leases
from transforms.publish.commit import (add_counters, attempt_temp_dirs, checkpoint,
                                       clean_leftovers, committed_attempt, wait_for_commit)
from transforms.publish.finalize import RunInfo
from transforms.publish.write import temp_dir
from transforms.publish.lease import LeaseHeld
from transforms.remote.journal import Billed


def _runner(value: str) -> str:
    """The runner a --runner value names (evalbeam's Dask runner for Beam's)."""
    return DASK_RUNNER if value.lower() in DASK_NAMES else value


def beam_flags() -> dict[str, bool]:
    """Every flag Beam's pipeline options declare (its own parser, as Beam builds
    it to read the options), each with whether it takes a value: a flag of
    evalbeam's own misspelt is not taken for one of Beam's, and the word after
    `--runner` (written with a space, as Dataflow's guides do) is its value."""
    flags: dict[str, bool] = {}
    PipelineOptions([]).get_all_options(add_extra_args_fn=lambda parser: flags.update(
        (flag, action.nargs != 0) for action in parser._actions
        for flag in action.option_strings))
    return flags


def stray_arguments(beam_args: Sequence[str], flags: dict[str, bool]) -> list[str]:
    """The arguments left over for Beam that are neither a flag nor the value of
    the Beam flag before them (`--runner FnApiRunner`, `--project p`)."""
    return [arg for i, arg in enumerate(beam_args) if not arg.startswith("--")
            and not (i and flags.get(beam_args[i - 1], False))]


def known_runner(name: str) -> bool:
    """Would Beam find a runner by this name (its lookup: case-insensitive, with or
    without 'Runner'; or a class path, which only importing can check)?"""
    try:
        from apache_beam.runners.runner import _RUNNER_MAP  # private: may move
    except ImportError:
        return True  # cannot tell here: Beam says so when the run starts
    return "." in name or name.lower() in _RUNNER_MAP or name.lower() + "runner" in _RUNNER_MAP


def beam_options(beam_args: Sequence[str],
                 urls: Sequence[tuple[str, str]] = ()) -> PipelineOptions:
    """Beam's options from the command line's other flags (the FnApiRunner
    unless a runner is named). A bad value or an unknown runner is a UsageError
    in one line: Beam's parser would print its whole usage and exit, and a
    misspelt runner would fail only once the run had started. `urls`, the
    (flag, URL) pairs of the paths the run uses, are checked for the options
    their filesystem needs (pipeline.filesystems)."""
    args = list(beam_args)
    for i, arg in enumerate(args):
        if arg.startswith("--runner="):
            args[i] = "--runner=" + _runner(arg.partition("=")[2])
        elif arg == "--runner" and i + 1 < len(args):
            args[i + 1] = _runner(args[i + 1])
    if not any(a == "--runner" or a.startswith("--runner=") for a in args):
        args.append("--runner=FnApiRunner")  # local default: never downloads a runner binary
    options = PipelineOptions(args)
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said):
            runner = options.get_all_options(retain_unknown_options=True)["runner"]
    except SystemExit:
        lines = said.getvalue().strip().splitlines() or ["error: invalid Beam option"]
        why = lines[-1].partition("error: ")[2] or lines[-1]
        from transforms.remote.scrub import MIN_RUN, shown
        why = re.sub(r"(invalid [\w ]+ value|invalid choice): '([^']*)'",  # a key in the
                     lambda m: f"{m[1]}: " + (repr(m[2]) if len(m[2]) <= MIN_RUN  # wrong flag
                                              else shown(m[2])), why)
        raise UsageError(f"Beam option: {why}") from None
    if not known_runner(runner):
        raise UsageError(f"--runner {runner!r} is not a Beam runner (one of "
                         f"{', '.join(StandardOptions.KNOWN_RUNNER_NAMES)}, dask, or a runner "
                         "class's full path)")
    check_direct_workers(options)
    # The plan lists and opens the input before beam.Pipeline() would do this, and
    # s3:// and hdfs:// cannot be used without their options (region, host, ...).
    use_filesystems(options, urls)
    return options


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
    lease = leases.new_lease(info.run_id, info.attempt, info.lease_ttl_s, runner_local,
                             planned_rows=info.planned_rows, bots=len(info.bots))
    lease, taken = leases.acquire(info.output, lease,
                                  lambda: committed_attempt(info.output, info.run_id))
    if taken:
        print(f"evalbeam: note: took over run id {info.run_id!r} from {taken}", file=sys.stderr)
    clean_leftovers(info.output, info.run_id, info.attempt, list(TABLES.values()))
    return lease


def stopped_before_start(info: RunInfo | None, name: str) -> str:
    """A stop (SIGTERM, Ctrl-C) while `evalbeam run` planned or took the lease:
    nothing ran, so the lease this attempt holds is given up (not left running
    until its TTL, refusing a re-run) with its temporary folder; the line said."""
    if info is None:
        return f"evalbeam: error: stopped by {name} while planning the run; nothing was written"
    leases.release(info.output, info.run_id, info.attempt)  # when it holds it
    leases.delete_quietly([temp_dir(info.output, info.run_id, info.attempt)])
    return (f"evalbeam: error: run {info.run_id} (attempt {info.attempt}) stopped by {name} "
            "before its pipeline started; nothing ran and a new run of the id starts at once")


def say_before(plan: Plan) -> None:
    """What a run says before it starts (on stderr): its notes (kept in the
    manifest too) and the limits of every endpoint it calls."""
    for note in plan.info.notes:
        print(f"evalbeam: note: {note}", file=sys.stderr)
    for line in plan.limits:
        print(f"evalbeam: {line}", file=sys.stderr)


def preload_local_model(plan: Plan) -> threading.Thread | None:
    """Loads the local MiniLM (the embedder make_embedder picks for provider
    `local` and a non-multilingual model; with `precision: int8`, its int8
    variant) on a thread while this one builds the graph, for a run that embeds
    in this process. About 40% of the load (file reads, array copies) runs
    without the GIL, on the other core of a quiet machine; the DoFn's
    get_local_minilm() then finds it loaded (or waits for it). A load that fails
    here fails again, and is reported, in the DoFn."""
    from transforms.enrich.features import MULTILINGUAL_MODELS
    emb = plan.config.embeddings
    if (emb.provider != "local" or emb.model in MULTILINGUAL_MODELS
            or not any(s.features for s, _ in plan.scorers)):
        return None

    def load():
        if emb.precision == "int8":
            from transforms.enrich.embeddings.int8_minilm import get_int8_minilm as get
        else:
            from transforms.enrich.embeddings.local_minilm import get_local_minilm as get
        try:
            get()
        except Exception:  # noqa: BLE001 - the DoFn's own load says why
            pass
    thread = threading.Thread(target=load, name="evalbeam-preload", daemon=True)
    thread.start()
    return thread


def run_log(info: RunInfo) -> str:
    """The local file a run's process output goes to (a --detach run's, the
    worker processes' of a Beam that evalbeam cannot put in their own process
    groups): beside the manifest, or in the temporary folder when the output
    is an object store."""
    log = FileSystems.join(leases.run_dir(info.output, info.run_id), f"log.{info.attempt}.txt")
    if "://" in log:  # the process writes its output locally
        log = os.path.join(tempfile.gettempdir(), f"evalbeam-{info.run_id}-{info.attempt}.log")
    return log


def print_submitted(info: RunInfo, where: str) -> None:
    print(f"run {info.run_id}: started (attempt {info.attempt}, {where})")
    # quoted, so that it can be pasted into a shell whatever the folder's name
    command = shlex.join(["evalbeam", "status", "--output", info.output, "--run-id", info.run_id])
    print(f"check it with: {command}")


def run_pipeline(plan: Plan, options: PipelineOptions, lease: leases.Lease,
                 detach: bool = False, watch: bool = True, signals: bool = False,
                 then: Callable[[], object] | None = None):
    """Run (or, detached on a remote runner, submit) the pipeline; its Finalize
    step commits the attempt and releases the lease. A failure marks the lease
    failed (and says so in one line), so `status` says so at once and the next
    run may take over. signals (the command line): SIGTERM or SIGINT during a
    local run ends its worker processes, marks the lease failed (or, once the
    attempt is committed, says so) and exits (pipeline/stopping.py); during
    the commit's critical section it waits for its end. then: what follows a
    finished run under the same signal handling (the command line's outcome
    lines). Returns Beam's PipelineResult."""
    info = plan.info
    beat = leases.Heartbeat.start(info.output, info.run_id, info.attempt, info.lease_ttl_s)
    watching: Watch | None = None

    def stop_beating() -> None:  # once: the heartbeat is shared with this process's DoFns
        if not beating.is_set():
            beating.set()
            beat.stop()
    beating = threading.Event()

    def stopped(name: str) -> str:
        stop_beating()
        if committed_attempt(info.output, info.run_id) == info.attempt:
            # what its Finalize may not have done yet (a section cut short by its time limit)
            leases.delete_quietly(attempt_temp_dirs(info.output, info.run_id))
            leases.release(info.output, info.run_id, info.attempt)
            return (f"evalbeam: run {info.run_id} (attempt {info.attempt}) stopped by {name} "
                    "after its commit: it is complete (tables, report and manifest; evalbeam "
                    "status says finished)")
        billed = billed_text(info)
        leases.mark_failed(info.output, lease, f"stopped by {name}" + billed)
        ended = ("its worker processes were ended" if runner_is_local(options) else
                 "its Dask job was cancelled (a task a worker is running ends first)")
        return (f"evalbeam: error: run {info.run_id} (attempt {info.attempt}) stopped by {name}; "
                f"{ended}; a new run of the id takes over and cleans up"
                + (f"\nevalbeam: error: run {info.run_id}{billed}" if billed else ""))
    # the Dask runner's job is this process's too: its client leaving cancels it
    on_signals = (stop_on_signals(stopped, lambda s: wait_for_commit(info.output, info.run_id,
                                                                     info.attempt, s),
                                  workers=runner_is_local(options), worker_log=run_log(info))
                  if signals and not detach and driven_from_here(options)
                  else contextlib.nullcontext())
    # from the start (the chart engine and the model take seconds to load) to the
    # end: a stop after the commit says the run is complete
    with on_signals:
        try:
            checkpoint(info.output, info.run_id, info.attempt, "starting")
            if runs_in_this_process(options):  # a larger run's chart engine boots meanwhile
                from transforms.publish import chart_engine
                chart_engine.start_for_run(info.planned_rows * max(1, len(info.bots)))
                preload_local_model(plan)
            watching = Watch(info).start() if watch and not detach else None  # p.run() runs it
            with _not_interactive():
                p = beam.Pipeline(options=options)
                build_pipeline(p, plan)
                result = p.run()
            if detach:  # a remote job: its workers beat and its Finalize commits and releases
                print_submitted(info, f"job {getattr(result, 'job_id', lambda: '?')()}")
                _beat_until_workers_start(info, result)
                return result
            result.wait_until_finish()
        except BaseException as exc:
            why, billed = failure_reason(info, exc), billed_text(info)
            leases.mark_failed(info.output, lease, why + billed)
            if not isinstance(exc, (KeyboardInterrupt, SystemExit)):  # a metric's Crash too
                said = why if stopped_by(exc) else f"failed: {why}"  # an API run's SIGTERM
                print(f"evalbeam: error: run {info.run_id} (attempt {info.attempt}) {said}; "
                      "a new run of the id takes over and cleans up", file=sys.stderr)
                if billed:
                    print(f"evalbeam: error: run {info.run_id}{billed}", file=sys.stderr)
            raise
        finally:
            if watching is not None:
                watching.stop()
            stop_beating()
        counters = beam_counters(result)
        if counters:
            checkpoint(info.output, info.run_id, info.attempt, "counters")
            add_counters(info.output, info.run_id, info.attempt, counters)
        if then is not None:
            then()
    return result


def run_spend(info: RunInfo) -> Billed | None:
    """What the attempt's request journal says it sent (None: nothing): what a
    failed attempt, which never commits a usage/ table, was billed for."""
    from transforms.remote.journal import billed
    from transforms.remote.runtime import flush_journals
    flush_journals()  # this process's batched events, if it ran the DoFns
    return billed(info.journal, info.prices)


def billed_text(info: RunInfo, spent: Billed | None = None) -> str:
    """'; before it failed it sent N requests (per endpoint: tokens, cost) ...',
    scrubbed ('' when it sent none), of `spent` or else of the journal."""
    from transforms.remote.scrub import scrubber_for
    spent = spent or run_spend(info)
    return (f"; {scrubber_for(info.endpoints, info.secret_texts).scrub(spent.line())}"
            if spent else "")


def stopped_by(exc: BaseException) -> str | None:
    """"SIGINT" when Ctrl-C ended the run: a KeyboardInterrupt (what SIGINT
    raises in a process that does not handle it: a Python API call), or one
    Beam re-raised as the RuntimeError of the step it interrupted; "SIGTERM"
    for the Terminated an API call's SIGTERM raises (stopping.raising_on_stop)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return "SIGINT"
        if isinstance(exc, Terminated):
            return "SIGTERM"
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def failure_reason(info: RunInfo, exc: BaseException) -> str:
    """Why a run failed, in the one line its error and its lease say (scrubbed,
    at most 300 characters)."""
    signal_name = stopped_by(exc)
    if signal_name:
        return f"stopped by {signal_name}"
    from transforms.remote.scrub import scrubber_for
    scrubber = scrubber_for(info.endpoints, info.secret_texts)
    return " ".join(scrubber.scrub(failure_text(exc)).split())[:300]


def failure_text(exc: BaseException) -> str:
    """What a failed run says in one line. A worker's failure reaches here as a
    message holding the worker's whole traceback, whose first 300 characters
    are its outermost frames: the exception that ended it, its last line, is
    what says why, so it comes first."""
    text = f"{type(exc).__name__}: {exc}"
    if "Traceback (most recent call last)" not in text:
        return text
    raised = raised_line(text)
    first = next(line.strip() for line in text.splitlines() if line.strip())
    return f"{raised} (from: {first})" if raised and raised != first else text


def raised_line(traceback_text: str) -> str | None:
    """The line of the exception that ended a formatted traceback, whatever its
    class is called ("Boom: ... [while running 'Score/ScoreAll']", as Beam
    tags a DoFn's exception): the first line at the margin after its last
    frame (frames and their source lines are indented)."""
    lines = traceback_text.splitlines()
    last_frame = max((i for i, line in enumerate(lines) if line.startswith("  File ")),
                     default=None)
    if last_frame is None:
        return None
    return next((line.strip() for line in lines[last_frame + 1:]
                 if line.strip() and not line[:1].isspace()), None)


@contextlib.contextmanager
def _not_interactive():
    """Beam as in a script while evalbeam builds and runs its pipeline. In an
    IPython kernel (Jupyter) Beam takes every pipeline for Interactive Beam's:
    applying a transform imports apache_beam.dataframe (which fails on pandas 3:
    'DataFrame' has no attribute 'first') and the pipeline's temporary folder is
    left for Interactive Beam to remove. evalbeam.evaluate() uses neither."""
    import apache_beam.pipeline as beam_pipeline
    from apache_beam.utils import interactive_utils
    saved = beam_pipeline.is_in_ipython, interactive_utils.is_in_ipython
    beam_pipeline.is_in_ipython = interactive_utils.is_in_ipython = lambda: False
    try:
        yield
    finally:
        beam_pipeline.is_in_ipython, interactive_utils.is_in_ipython = saved


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
